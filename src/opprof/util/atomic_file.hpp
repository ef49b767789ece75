#pragma once
// Outputs that appear only complete: written under "<path>.tmp-<pid>" in the destination's directory and
// renamed over it at the end (atomic within one file system), so that a reader sees the old file or the
// whole new one, never a part. A failure, an exception or an interrupt (util/interrupt.hpp) removes the
// temporary; a process killed outright (SIGKILL, a crash) leaves it, and the next write of the same
// destination removes it (remove_stale_temporaries).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace opprof {

// Flushes a file's data to the device; throws OutputError on failure, since the rename would then publish
// a file that may not survive a crash.
void fsync_file(const std::string& path);
// Makes a rename in dir durable. Best effort: some file systems refuse fsync on a directory, and by then
// the new file is already in place, so a failure must not turn a finished write into an error.
void fsync_directory(const std::string& dir);
// The directory of path for fsync_directory ("." for a bare file name).
std::string parent_directory(const std::string& path);

// One output written whole or not at all. Either stream bytes through write() (the temporary is opened on
// the first call), or let another writer (SQLite) create temporary() itself; then commit().
class AtomicFile {
 public:
  // Removes stale temporaries of destination and any leftover of this pid; creates nothing yet.
  explicit AtomicFile(std::string destination);
  ~AtomicFile();  // removes the temporary unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& temporary() const { return temporary_; }
  const std::string& destination() const { return destination_; }
  // Appends to the temporary; throws OutputError on a short write or after commit().
  void write(std::string_view bytes);
  // Queues the temporary's data for writing to the device and returns without waiting for the writes
  // (queuing them takes a while), so that commit()'s flush finds less left to write. Best effort: does
  // nothing where the file system cannot.
  void start_writeback() const;
  // Closes what write() opened, flushes the temporary to the device, renames it over the destination and
  // makes the rename durable. Throws OutputError (and removes the temporary) when it cannot.
  void commit();

 private:
  std::string destination_;
  std::string temporary_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

// Refuses, before any work, a destination an AtomicFile could not publish: an empty path, a directory, a
// missing or non-directory parent, a parent this user may not write. Throws InputError naming the path.
void check_output_file(const std::string& destination);

// Writes bytes to path through an AtomicFile. Throws OutputError.
void write_file_atomically(const std::string& path, std::string_view bytes);

// "<destination>.tmp-<pid>" of this process.
std::string temporary_name(const std::string& destination);

// What a destination's temporaries are: files (AtomicFile), or directories written whole and renamed into
// place (the Parquet export's).
enum class TemporaryKind : std::uint8_t { kFile, kDirectory };

// Removes "<destination>.tmp-<pid>" files (or directories, with everything in them) whose process no longer
// exists: only names of exactly that form beside this destination, only of dead pids (a live writer's
// temporary is left alone). Returns how many it removed.
std::size_t remove_stale_temporaries(const std::string& destination, TemporaryKind kind = TemporaryKind::kFile);

}  // namespace opprof
