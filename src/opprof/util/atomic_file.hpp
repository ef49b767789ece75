#pragma once
// Files that appear whole or not at all: written under "<path>.tmp-<pid>" in the same directory, flushed,
// and renamed over path only when complete, so a reader never sees a partial report or profile and a
// failed write leaves path as it was.
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

class AtomicFile {
 public:
  // Opens the temporary file; throws OutputError when it cannot.
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Removes the temporary file unless commit() succeeded.
  ~AtomicFile();

  void write(std::string_view bytes);  // throws OutputError on a short write
  // Flushes, closes and renames the temporary file over path.
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string tmp_;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
};

// Writes bytes to path atomically.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace opprof
