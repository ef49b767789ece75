#include "opprof/ingest/chunked_input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "opprof/ingest/json_scan.hpp"
#include "opprof/util/text.hpp"

namespace opprof::detail {
namespace {
gzFile as_gz(void* p) { return static_cast<gzFile>(p); }

std::uint64_t read_gzip_isize(int fd, std::uint64_t file_bytes) {
  // The last four bytes of a gzip member hold its uncompressed size modulo 2^32, little-endian.
  if (file_bytes < 18) return 0;
  unsigned char tail[4];
  if (::pread(fd, tail, 4, static_cast<off_t>(file_bytes - 4)) != 4) return 0;
  return std::uint64_t{tail[0]} | std::uint64_t{tail[1]} << 8 | std::uint64_t{tail[2]} << 16 |
         std::uint64_t{tail[3]} << 24;
}
}  // namespace

ChunkedInput::ChunkedInput(std::string path, std::size_t chunk_bytes)
    : path_(std::move(path)), chunk_bytes_(std::max<std::size_t>(chunk_bytes, 1)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw InputError(path_, fmt_errno("cannot open"));
  struct stat st {};
  bool regular = false;
  if (::fstat(fd_, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      ::close(fd_);
      throw InputError(path_, "is a directory, not a trace file");
    }
    regular = S_ISREG(st.st_mode);
    if (regular) file_bytes_ = static_cast<std::uint64_t>(st.st_size);
  }

  // Recognize gzip by content so a renamed file still reads; a pipe cannot be peeked at without
  // consuming it, so there the name decides.
  bool gzip = false;
  unsigned char magic[2];
  const ssize_t got = ::pread(fd_, magic, 2, 0);
  if (got == 2) {
    gzip = magic[0] == 0x1f && magic[1] == 0x8b;
  } else if (got < 0 && errno == ESPIPE) {
    gzip = ends_with(path_, ".gz");
  } else if (got < 0) {
    const std::string why = fmt_errno("cannot read");
    ::close(fd_);
    throw InputError(path_, why);
  }

  if (gzip) {
    if (regular) gzip_isize_ = read_gzip_isize(fd_, file_bytes_);
    gzFile gz = gzdopen(fd_, "rb");
    if (gz == nullptr) {
      ::close(fd_);
      throw InputError(path_, "cannot open as a gzip file");
    }
    fd_ = -1;  // owned by zlib now
    gzbuffer(gz, 1u << 18);
    gz_ = gz;
  } else if (regular) {
    ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  }

  capacity_ = 2 * chunk_bytes_;
  buf_.reset(new char[capacity_ + kPadding]);
  std::memset(buf_.get(), ' ', kPadding);
}

ChunkedInput::~ChunkedInput() {
  if (gz_ != nullptr) gzclose(as_gz(gz_));
  if (fd_ >= 0) ::close(fd_);
}

void ChunkedInput::reserve_window(std::size_t needed) {
  if (needed <= capacity_) return;
  // Only an item larger than the window (a single huge event) gets here; doubling keeps that linear.
  const std::size_t new_capacity = std::max(capacity_ * 2, needed);
  std::unique_ptr<char[]> grown(new char[new_capacity + kPadding]);
  std::memcpy(grown.get(), buf_.get(), size_);
  buf_ = std::move(grown);
  capacity_ = new_capacity;
}

std::size_t ChunkedInput::read_source(char* dst, std::size_t n) {
  std::size_t total = 0;
  while (total < n) {
    if (gz_ != nullptr) {
      const auto want = static_cast<unsigned>(std::min<std::size_t>(n - total, INT_MAX / 2));
      const int r = gzread(as_gz(gz_), dst + total, want);
      int err = Z_OK;
      if (r < 0) {
        const char* msg = gzerror(as_gz(gz_), &err);
        throw InputError(path_, std::string("gzip: ") + msg, position_of(size_));
      }
      if (r == 0) {
        gzerror(as_gz(gz_), &err);
        // Z_BUF_ERROR at the end: the input ended in the middle of a gzip stream.
        if (err == Z_BUF_ERROR)
          throw InputError(path_,
                           "truncated gzip stream: the compressed file ends before its data does (was it still "
                           "being written?)",
                           position_of(size_));
        break;
      }
      total += static_cast<std::size_t>(r);
    } else {
      const ssize_t r = ::read(fd_, dst + total, n - total);
      if (r < 0) {
        if (errno == EINTR) continue;
        throw InputError(path_, fmt_errno("cannot read"), position_of(size_));
      }
      if (r == 0) break;
      total += static_cast<std::size_t>(r);
    }
  }
  return total;
}

std::size_t ChunkedInput::refill(std::size_t keep_from) {
  keep_from = std::min(keep_from, size_);
  if (keep_from > 0) {
    char* d = buf_.get();
    lines_before_ += count_newlines(d, keep_from);
    if (const void* nl = ::memrchr(d, '\n', keep_from))
      line_start_before_ = base_ + static_cast<std::uint64_t>(static_cast<const char*>(nl) - d) + 1;
    std::memmove(d, d + keep_from, size_ - keep_from);
    size_ -= keep_from;
    base_ += keep_from;
  }
  if (!eof_) {
    reserve_window(size_ + chunk_bytes_);
    const std::size_t got = read_source(buf_.get() + size_, chunk_bytes_);
    size_ += got;
    bytes_read_ += got;
    // read_source only returns short at the end of the input.
    if (got < chunk_bytes_) eof_ = true;
  }
  // simdjson reads (but does not interpret) bytes past a document's end; keep them defined.
  std::memset(buf_.get() + size_, ' ', kPadding);
  return keep_from;
}

InputPosition ChunkedInput::position_of(std::size_t i) const {
  i = std::min(i, size_);
  InputPosition pos;
  pos.known = true;
  pos.byte_offset = base_ + i;
  const char* d = buf_.get();
  pos.line = lines_before_ + count_newlines(d, i) + 1;
  std::uint64_t line_start = line_start_before_;
  if (i > 0) {
    if (const void* nl = ::memrchr(d, '\n', i))
      line_start = base_ + static_cast<std::uint64_t>(static_cast<const char*>(nl) - d) + 1;
  }
  pos.column = base_ + i - line_start + 1;
  return pos;
}

}  // namespace opprof::detail
