#include "opprof/ingest/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "opprof/util/error.hpp"

namespace opprof::detail {
namespace {
std::size_t page_bytes() {
  static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}
}  // namespace

MappedFile::MappedFile(const std::string& path, std::size_t padding) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw InputError(path, fmt_errno("cannot open"));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const std::string why = fmt_errno("cannot stat");
    ::close(fd_);
    throw InputError(path, why);
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ == 0 && padding == 0) return;
  const std::size_t page = page_bytes();
  reserved_ = (size_ + padding + page - 1) / page * page;
  // The padding: anonymous zero pages reserved with the file's, the file mapped over their start. Bytes
  // of the file's last page past its end read as zero too.
  void* base = ::mmap(nullptr, reserved_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    const std::string why = fmt_errno("cannot map");
    ::close(fd_);
    throw InputError(path, why);
  }
  if (size_ > 0 && ::mmap(base, size_, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd_, 0) == MAP_FAILED) {
    const std::string why = fmt_errno("cannot map");
    ::munmap(base, reserved_);
    ::close(fd_);
    throw InputError(path, why);
  }
  data_ = static_cast<const char*>(base);
  ::madvise(base, size_, MADV_SEQUENTIAL);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), reserved_);
  if (fd_ >= 0) ::close(fd_);
}

std::size_t MappedFile::drop_resident(std::size_t from, std::size_t to) const {
  const std::size_t page = page_bytes();
  from = (from + page - 1) / page * page;
  to = std::min(to, size_) / page * page;
  if (data_ == nullptr || from >= to) return from;
  ::madvise(const_cast<char*>(data_) + from, to - from, MADV_DONTNEED);
  return to;
}

std::size_t MappedFile::drop_cached(std::size_t from, std::size_t to) const {
  const std::size_t end = drop_resident(from, to);
  if (fd_ >= 0 && from < end)
    ::posix_fadvise(fd_, static_cast<off_t>(from), static_cast<off_t>(end - from), POSIX_FADV_DONTNEED);
  return end;
}

bool MappedFile::shrunk() const {
  struct stat st {};
  return fd_ >= 0 && ::fstat(fd_, &st) == 0 && static_cast<std::size_t>(st.st_size) < size_;
}

bool exceeds_page_cache_share(std::uint64_t bytes) {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return false;
  return bytes > static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 4;
}

}  // namespace opprof::detail
