#include "opprof/util/atomic_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "opprof/util/error.hpp"

namespace opprof {

void fsync_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw OutputError(fmt_errno(fmt::format("cannot open {} to flush it", path)));
  if (::fsync(fd) != 0) {
    std::string msg = fmt_errno(fmt::format("cannot flush {} to disk", path));
    ::close(fd);
    throw OutputError(msg);
  }
  ::close(fd);
}

void fsync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

std::string parent_directory(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(fmt::format("{}.tmp-{}", path_, ::getpid())) {
  file_ = std::fopen(tmp_.c_str(), "wb");
  if (!file_) throw OutputError(fmt_errno(fmt::format("cannot write {}", tmp_)));
}

AtomicFile::~AtomicFile() {
  if (file_) std::fclose(file_);
  if (!committed_) (void)std::remove(tmp_.c_str());
}

void AtomicFile::write(std::string_view bytes) {
  if (!file_) throw OutputError(fmt::format("cannot write {}: already closed", tmp_));
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
    throw OutputError(fmt_errno(fmt::format("cannot write {}", tmp_)));
}

void AtomicFile::commit() {
  std::FILE* f = file_;
  file_ = nullptr;
  if (!f) throw OutputError(fmt::format("cannot write {}: already closed", tmp_));
  const bool flushed = std::fflush(f) == 0;
  const std::string flush_error = flushed ? "" : fmt_errno(fmt::format("cannot write {}", tmp_));
  if (std::fclose(f) != 0 || !flushed)
    throw OutputError(flushed ? fmt_errno(fmt::format("cannot close {}", tmp_)) : flush_error);
  fsync_file(tmp_);
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0)
    throw OutputError(fmt_errno(fmt::format("cannot rename {} to {}", tmp_, path_)));
  committed_ = true;
  fsync_directory(parent_directory(path_));
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  AtomicFile out(path);
  out.write(bytes);
  out.commit();
}

}  // namespace opprof
