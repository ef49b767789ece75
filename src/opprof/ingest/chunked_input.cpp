#include "opprof/ingest/chunked_input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "opprof/ingest/json_scan.hpp"
#include "opprof/ingest/mapped_file.hpp"
#include "opprof/util/text.hpp"

namespace opprof::detail {
namespace {

// A read that failed. Raised where the bytes are read (possibly the read-ahead thread), turned into an
// InputError with a position where the window is.
struct ReadFailure {
  std::string message;
};

// The file's bytes in order, gunzipped when it is gzip.
class FileSource {
 public:
  explicit FileSource(const std::string& path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw InputError(path, fmt_errno("cannot open"));
    struct stat st {};
    if (::fstat(fd_, &st) == 0) {
      if (S_ISDIR(st.st_mode)) {
        ::close(fd_);
        throw InputError(path, "is a directory, not a trace file");
      }
      regular_ = S_ISREG(st.st_mode);
      if (regular_) file_bytes_ = static_cast<std::uint64_t>(st.st_size);
    }

    // Recognize gzip by content so a renamed file still reads; a pipe cannot be peeked at without
    // consuming it, so there the name decides.
    bool gzip = false;
    unsigned char magic[2];
    const ssize_t got = ::pread(fd_, magic, 2, 0);
    if (got == 2) {
      gzip = magic[0] == 0x1f && magic[1] == 0x8b;
    } else if (got < 0 && errno == ESPIPE) {
      gzip = ends_with(path, ".gz");
    } else if (got < 0) {
      const std::string why = fmt_errno("cannot read");
      ::close(fd_);
      throw InputError(path, why);
    }

    if (gzip) {
      if (regular_) gzip_isize_ = read_gzip_isize();
      gz_ = gzdopen(fd_, "rb");
      if (gz_ == nullptr) {
        ::close(fd_);
        throw InputError(path, "cannot open as a gzip file");
      }
      fd_ = -1;  // owned by zlib now
      gzbuffer(gz_, 1u << 18);
    } else if (regular_) {
      ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
      drop_behind_ = exceeds_page_cache_share(file_bytes_);
    }
  }
  ~FileSource() {
    if (gz_ != nullptr) gzclose(gz_);
    if (fd_ >= 0) ::close(fd_);
  }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;

  bool regular() const { return regular_; }
  bool gzipped() const { return gz_ != nullptr; }
  std::uint64_t file_bytes() const { return file_bytes_; }
  std::uint64_t gzip_isize() const { return gzip_isize_; }

  // Fills dst with n bytes, fewer only at the end of the input. Throws ReadFailure.
  std::size_t read(char* dst, std::size_t n) {
    std::size_t total = 0;
    while (total < n) {
      if (gz_ != nullptr) {
        const auto want = static_cast<unsigned>(std::min<std::size_t>(n - total, INT_MAX / 2));
        const int r = gzread(gz_, dst + total, want);
        int err = Z_OK;
        if (r < 0) throw ReadFailure{std::string("gzip: ") + gzerror(gz_, &err)};
        if (r == 0) {
          gzerror(gz_, &err);
          // Z_BUF_ERROR at the end: the input ended in the middle of a gzip stream.
          if (err == Z_BUF_ERROR)
            throw ReadFailure{
                "truncated gzip stream: the compressed file ends before its data does (was it still being "
                "written?)"};
          break;
        }
        total += static_cast<std::size_t>(r);
      } else {
        const ssize_t r = ::read(fd_, dst + total, n - total);
        if (r < 0) {
          if (errno == EINTR) continue;
          throw ReadFailure{fmt_errno("cannot read")};
        }
        if (r == 0) break;
        total += static_cast<std::size_t>(r);
        offset_ += static_cast<std::uint64_t>(r);
        if (drop_behind_ && offset_ - dropped_ >= kDropBehindBytes) {
          ::posix_fadvise(fd_, static_cast<off_t>(dropped_), static_cast<off_t>(offset_ - dropped_),
                          POSIX_FADV_DONTNEED);
          dropped_ = offset_;
        }
      }
    }
    return total;
  }

 private:
  std::uint64_t read_gzip_isize() const {
    // The last four bytes of a gzip member hold its uncompressed size modulo 2^32, little-endian.
    if (file_bytes_ < 18) return 0;
    unsigned char tail[4];
    if (::pread(fd_, tail, 4, static_cast<off_t>(file_bytes_ - 4)) != 4) return 0;
    return std::uint64_t{tail[0]} | std::uint64_t{tail[1]} << 8 | std::uint64_t{tail[2]} << 16 |
           std::uint64_t{tail[3]} << 24;
  }

  // A file too large to stay cached beside the timeline read from it (a 28.6 GB trace on a 24 GB machine:
  // about 40 s of system time in reclaim) is dropped from the page cache as it is read; smaller files stay
  // cached for the next run.
  static constexpr std::uint64_t kDropBehindBytes = std::uint64_t{64} << 20;

  int fd_ = -1;
  gzFile gz_ = nullptr;
  bool regular_ = false;
  bool drop_behind_ = false;
  std::uint64_t offset_ = 0;   // bytes read so far (plain files)
  std::uint64_t dropped_ = 0;  // of which dropped from the page cache
  std::uint64_t file_bytes_ = 0;
  std::uint64_t gzip_isize_ = 0;
};

// Room kept free in front of each chunk for the unfinished item carried over from the previous one.
// Trace events are well under this; a larger item goes through ChunkedInput's overflow buffer.
constexpr std::size_t kHeadroom = std::size_t{256} << 10;
// The smallest block a file that fits one chunk is read in: should it grow after its size was taken,
// the rest is read in blocks of this size, not byte by byte.
constexpr std::size_t kSmallestBlock = std::size_t{64} << 10;

}  // namespace

// One chunk of the file, with free room in front and padding behind.
struct Block {
  std::unique_ptr<char[]> storage;
  char* data = nullptr;  // storage + kHeadroom
  std::size_t size = 0;
  bool last = false;  // the file ends with this chunk
};

// Hands out the file's chunks in order. Threaded, a helper thread reads (and gunzips) up to a few chunks
// ahead of the one the caller works on; otherwise each chunk is read when asked for. Blocks are given
// back in the order they were handed out.
class BlockReader {
 public:
  BlockReader(std::unique_ptr<FileSource> source, std::size_t block_bytes, bool threaded)
      : source_(std::move(source)), block_bytes_(block_bytes), threaded_(threaded) {
    // The caller holds at most two blocks at a time (the window's and the next one while it moves);
    // threaded, two more are being read ahead.
    blocks_.resize(threaded ? 4 : 2);
    for (Block& b : blocks_) {
      b.storage.reset(new char[kHeadroom + block_bytes_ + ChunkedInput::kPadding]);
      b.data = b.storage.get() + kHeadroom;
    }
    if (threaded_) thread_ = std::thread([this] { run(); });
  }
  ~BlockReader() {
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
      }
      cv_.notify_all();
      thread_.join();
    }
  }
  BlockReader(const BlockReader&) = delete;
  BlockReader& operator=(const BlockReader&) = delete;

  const FileSource& source() const { return *source_; }

  // The next chunk; waits for it when it is still being read. Throws ReadFailure.
  Block* next() {
    if (!threaded_) {
      Block& b = blocks_[produced_ % blocks_.size()];
      fill(b);
      ++produced_;
      return &blocks_[handed_++ % blocks_.size()];
    }
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return produced_ > handed_ || error_ != nullptr; });
    if (produced_ == handed_) std::rethrow_exception(error_);  // the chunks read before the failure went first
    return &blocks_[handed_++ % blocks_.size()];
  }

  // Gives back the oldest block handed out, to be read into again.
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++released_;
    }
    if (threaded_) cv_.notify_all();
  }

 private:
  void fill(Block& b) {
    b.size = source_->read(b.data, block_bytes_);
    b.last = b.size < block_bytes_;
  }

  void run() {
    for (;;) {
      Block* b = nullptr;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return stop_ || produced_ - released_ < blocks_.size(); });
        if (stop_) return;
        b = &blocks_[produced_ % blocks_.size()];
      }
      try {
        fill(*b);  // outside the lock: the caller parses meanwhile
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex_);
        error_ = std::current_exception();
        cv_.notify_all();
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++produced_;
      }
      cv_.notify_all();
      if (b->last) return;
    }
  }

  std::unique_ptr<FileSource> source_;
  std::size_t block_bytes_;
  bool threaded_;
  std::vector<Block> blocks_;
  std::uint64_t produced_ = 0;  // blocks read
  std::uint64_t handed_ = 0;    // blocks given to the caller
  std::uint64_t released_ = 0;  // blocks given back
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

namespace {
// The window before the first refill: empty, with its padding.
char empty_window[ChunkedInput::kPadding + 1] = {};
}  // namespace

ChunkedInput::ChunkedInput(std::string path, std::size_t chunk_bytes, InputAccess access) : path_(std::move(path)) {
  data_ = empty_window;
  chunk_bytes = std::max<std::size_t>(chunk_bytes, 1);
  auto source = std::make_unique<FileSource>(path_);
  gzipped_ = source->gzipped();
  file_bytes_ = source->file_bytes();
  gzip_isize_ = source->gzip_isize();
  // A plain file that fits one chunk is read in one block of its size (one more byte shows its end) and
  // without the helper thread: small inputs (a fuzzer's, a test's) cost no thread and no unused buffers.
  // A file that grows meanwhile is still read whole, in further blocks.
  const bool fits_one_chunk = !gzipped_ && source->regular() && file_bytes_ < chunk_bytes;
  if (fits_one_chunk) chunk_bytes = std::max(static_cast<std::size_t>(file_bytes_) + 1, std::min(chunk_bytes, kSmallestBlock));
  if (access == InputAccess::kMap && !gzipped_ && source->regular() && !fits_one_chunk) {
    source.reset();
    map_ = std::make_unique<MappedFile>(path_, kPadding);
    file_bytes_ = map_->size();
    chunk_bytes_ = chunk_bytes;
    drop_behind_ = exceeds_page_cache_share(file_bytes_);
    return;
  }
  const bool threaded = access != InputAccess::kRead && source->regular() && !fits_one_chunk;
  reader_ = std::make_unique<BlockReader>(std::move(source), chunk_bytes, threaded);
}

ChunkedInput::~ChunkedInput() = default;

void ChunkedInput::discard(std::size_t keep_from) {
  if (keep_from == 0) return;
  lines_before_ += count_newlines(data_, keep_from);
  if (const void* nl = ::memrchr(data_, '\n', keep_from))
    line_start_before_ = base_ + static_cast<std::uint64_t>(static_cast<const char*>(nl) - data_) + 1;
  data_ += keep_from;
  size_ -= keep_from;
  base_ += keep_from;
}

std::size_t ChunkedInput::refill(std::size_t keep_from) {
  keep_from = std::min(keep_from, size_);
  discard(keep_from);
  if (eof_) return keep_from;
  if (map_) {
    refill_mapped();
    return keep_from;
  }

  Block* next = nullptr;
  try {
    next = reader_->next();
  } catch (const ReadFailure& failure) {
    throw InputError(path_, failure.message, position_of(size_));
  }
  // Read before the block is given back: from then on the read-ahead thread may fill it again.
  const std::size_t chunk = next->size;
  bytes_read_ += chunk;
  eof_ = next->last;

  const std::size_t carry = size_;
  char* window = nullptr;
  if (carry <= kHeadroom) {
    // The usual case: the unfinished item moves in front of the next chunk, which is not copied.
    window = next->data - carry;
    std::memcpy(window, data_, carry);
    if (block_ != nullptr) reader_->release();
    block_ = next;
  } else {
    // An item larger than the headroom: the window continues in the overflow buffer.
    const std::size_t needed = carry + chunk;
    if (needed > overflow_capacity_) {
      const std::size_t capacity = std::max(needed, overflow_capacity_ * 2);
      std::unique_ptr<char[]> grown(new char[capacity + kPadding]);
      std::memcpy(grown.get(), data_, carry);
      overflow_ = std::move(grown);
      overflow_capacity_ = capacity;
    } else {
      std::memmove(overflow_.get(), data_, carry);
    }
    std::memcpy(overflow_.get() + carry, next->data, chunk);
    if (block_ != nullptr) reader_->release();
    reader_->release();  // next: its bytes are in the overflow buffer now
    block_ = nullptr;
    window = overflow_.get();
  }
  data_ = window;
  size_ = carry + chunk;
  // simdjson reads (but does not interpret) bytes past a document's end; keep them defined.
  std::memset(window + size_, ' ', kPadding);
  return keep_from;
}

void ChunkedInput::refill_mapped() {
  // A page past the end of a file that was cut short faults: stop with an error before reading there.
  if (map_->shrunk())
    throw InputError(path_, "the file was truncated while it was being read", position_of(size_));
  const std::uint64_t end = std::min<std::uint64_t>(file_bytes_, base_ + size_ + chunk_bytes_);
  data_ = map_->data() + base_;
  size_ = static_cast<std::size_t>(end - base_);
  bytes_read_ = end;
  eof_ = end == file_bytes_;
}

void ChunkedInput::release_before(std::uint64_t offset) {
  if (!map_) return;
  offset = std::min(offset, base_);
  if (offset <= released_) return;
  const auto from = static_cast<std::size_t>(released_), to = static_cast<std::size_t>(offset);
  // Whole pages are dropped: the one `to` lies in goes with the next release.
  released_ = drop_behind_ ? map_->drop_cached(from, to) : map_->drop_resident(from, to);
}

InputPosition ChunkedInput::position_of(std::size_t i) const {
  i = std::min(i, size_);
  InputPosition pos;
  pos.known = true;
  pos.byte_offset = base_ + i;
  pos.line = lines_before_ + count_newlines(data_, i) + 1;
  std::uint64_t line_start = line_start_before_;
  if (i > 0) {
    if (const void* nl = ::memrchr(data_, '\n', i))
      line_start = base_ + static_cast<std::uint64_t>(static_cast<const char*>(nl) - data_) + 1;
  }
  pos.column = base_ + i - line_start + 1;
  return pos;
}

}  // namespace opprof::detail
