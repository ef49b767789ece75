#include "opprof/util/atomic_file.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <filesystem>
#include <utility>

#include "opprof/util/error.hpp"
#include "opprof/util/interrupt.hpp"

namespace fs = std::filesystem;

namespace opprof {
namespace {

bool process_exists(long pid) {
  if (pid <= 0 || pid > 0x3FFFFFFF) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

void fsync_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw OutputError(fmt_errno(fmt::format("cannot open {} to flush it", path)));
  if (::fsync(fd) != 0) {
    const std::string msg = fmt_errno(fmt::format("cannot flush {} to disk", path));
    ::close(fd);
    throw OutputError(msg);
  }
  ::close(fd);
}

void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

std::string parent_directory(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

std::string temporary_name(const std::string& destination) {
  return fmt::format("{}.tmp-{}", destination, ::getpid());
}

std::size_t remove_stale_temporaries(const std::string& destination, TemporaryKind kind) {
  const fs::path dest(destination);
  const std::string prefix = dest.filename().string() + ".tmp-";
  std::size_t removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(parent_directory(destination), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string_view digits = std::string_view(name).substr(prefix.size());
    if (digits.size() > 10 || digits.find_first_not_of("0123456789") != std::string_view::npos) continue;
    const long pid = std::stol(std::string(digits));
    if (pid == ::getpid() || process_exists(pid)) continue;
    std::error_code rm;
    if (kind == TemporaryKind::kFile ? it->is_regular_file(rm) && fs::remove(it->path(), rm)
                                     : it->is_directory(rm) && fs::remove_all(it->path(), rm) > 0)
      ++removed;
  }
  return removed;
}

AtomicFile::AtomicFile(std::string destination)
    : destination_(std::move(destination)), temporary_(temporary_name(destination_)) {
  remove_stale_temporaries(destination_);
  // A file left by an earlier process with the same pid would otherwise be opened and appended to.
  (void)std::remove(temporary_.c_str());
  register_temporary(temporary_);
}

AtomicFile::~AtomicFile() {
  if (file_) std::fclose(file_);
  if (!committed_) (void)std::remove(temporary_.c_str());
  unregister_temporary(temporary_);
}

void AtomicFile::write(std::string_view bytes) {
  if (committed_) throw OutputError(fmt::format("cannot write {}: already committed", temporary_));
  if (!file_) {
    file_ = std::fopen(temporary_.c_str(), "wb");
    if (!file_) throw OutputError(fmt_errno(fmt::format("cannot write {}", temporary_)));
  }
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
    throw OutputError(fmt_errno(fmt::format("cannot write {}", temporary_)));
}

void AtomicFile::start_writeback() const {
  const int fd = ::open(temporary_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
  ::close(fd);
}

void AtomicFile::commit() {
  try {
    if (std::FILE* f = std::exchange(file_, nullptr)) {
      const bool flushed = std::fflush(f) == 0;
      const std::string flush_error = flushed ? "" : fmt_errno(fmt::format("cannot write {}", temporary_));
      if (std::fclose(f) != 0 || !flushed)
        throw OutputError(flushed ? fmt_errno(fmt::format("cannot close {}", temporary_)) : flush_error);
    }
    fsync_file(temporary_);
    if (std::rename(temporary_.c_str(), destination_.c_str()) != 0)
      throw OutputError(fmt_errno(fmt::format("cannot rename {} to {}", temporary_, destination_)));
  } catch (...) {
    (void)std::remove(temporary_.c_str());
    throw;
  }
  committed_ = true;
  fsync_directory(parent_directory(destination_));
}

void check_output_file(const std::string& destination) {
  if (destination.empty()) throw InputError("-o", "the output path is empty");
  std::error_code ec;
  if (fs::is_directory(destination, ec)) throw InputError(destination, "the output is a directory, not a file");
  const std::string dir = parent_directory(destination);
  if (!fs::exists(dir, ec)) throw InputError(destination, fmt::format("the output's directory {} does not exist", dir));
  if (!fs::is_directory(dir, ec)) throw InputError(destination, fmt::format("{} is not a directory", dir));
  // The temporary is created beside the destination and renamed over it: try that once now (access()
  // would say yes to root in a directory no file can be created in, /proc for one).
  const std::string probe = temporary_name(destination);
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno != EEXIST) throw InputError(destination, fmt_errno(fmt::format("cannot create files in {}", dir)));
  if (fd >= 0) {
    ::close(fd);
    (void)std::remove(probe.c_str());
  }
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
  AtomicFile file(path);
  file.write(bytes);
  file.commit();
}

}  // namespace opprof
