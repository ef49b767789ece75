#pragma once
// Outputs that appear only complete: written under "<path>.tmp-<pid>" in the destination's directory and
// renamed over it at the end (atomic within one file system), so that a reader sees the old file or the
// whole new one, never a part. A failure, an exception or an interrupt (util/interrupt.hpp) removes the
// temporary; a process killed outright (SIGKILL, a crash) leaves it, and the next write of the same
// destination removes it (remove_stale_temporaries).
#include <string>

namespace opprof {

class AtomicFile {
 public:
  // Removes stale temporaries of destination and any leftover of this pid; creates nothing yet.
  explicit AtomicFile(std::string destination);
  ~AtomicFile();  // removes the temporary unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  const std::string& temporary() const { return temporary_; }
  const std::string& destination() const { return destination_; }
  // Flushes the temporary to the device, renames it over the destination and makes the rename durable.
  // Throws OutputError (and removes the temporary) when it cannot.
  void commit();

 private:
  std::string destination_;
  std::string temporary_;
  bool committed_ = false;
};

// Refuses, before any work, a destination an AtomicFile could not publish: an empty path, a directory, a
// missing or non-directory parent, a parent this user may not write. Throws InputError naming the path.
void check_output_file(const std::string& destination);

// Writes text to path through an AtomicFile. Throws OutputError.
void write_file_atomically(const std::string& path, const std::string& text);

// "<destination>.tmp-<pid>" of this process.
std::string temporary_name(const std::string& destination);

// Removes "<destination>.tmp-<pid>" files whose process no longer exists: only names of exactly that
// form beside this destination, only of dead pids (a live writer's temporary is left alone). Returns how
// many it removed.
std::size_t remove_stale_temporaries(const std::string& destination);

}  // namespace opprof
