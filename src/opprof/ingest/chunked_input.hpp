#pragma once
// A sliding window over a large file, plain or gzip-compressed, read in fixed-size chunks. Streaming
// readers keep only what they still need: each refill discards the bytes before a position the caller
// names, so memory stays bounded by a few chunks plus the largest single item the caller holds on to
// (one trace event). The window is always followed by kPadding readable bytes, as simdjson requires of
// the documents it parses in place. Newlines are counted as bytes are discarded, so any position still
// in the window can be named by line and column for an error message.
//
// A plain file larger than one chunk is mapped (InputAccess::kMap): the window is a range of the mapping
// that grows by a chunk per refill, nothing is copied, and the pages before release_before()'s offset are
// dropped. Otherwise chunks are read (and gunzipped) ahead by a helper thread while the caller parses the
// previous ones, and the window moves to the next chunk without copying it: only the unfinished item at a
// chunk's end is carried over, into room kept free in front of the next chunk.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "opprof/util/error.hpp"

namespace opprof::detail {

class BlockReader;
struct Block;
class MappedFile;

// How ChunkedInput gets the bytes. Each falls back to the next where it cannot be used: a gzip file, a
// pipe or a file that fits one chunk is not mapped; a pipe is not read ahead.
enum class InputAccess {
  kMap,        // map the file; the window views the mapping (the bytes stay valid until release_before)
  kReadAhead,  // read chunks on a helper thread into buffers the window moves through
  kRead,       // read each chunk when the window needs it
};

class ChunkedInput {
 public:
  // Readable bytes after the valid data; at least SIMDJSON_PADDING (checked where simdjson is included).
  static constexpr std::size_t kPadding = 64;

  // Opens path (gzip is recognized by its magic bytes, or by a .gz name when the input cannot be
  // peeked at). Throws InputError when the file cannot be opened.
  ChunkedInput(std::string path, std::size_t chunk_bytes, InputAccess access = InputAccess::kMap);
  ~ChunkedInput();
  ChunkedInput(const ChunkedInput&) = delete;
  ChunkedInput& operator=(const ChunkedInput&) = delete;

  const char* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool eof() const { return eof_; }
  // Bytes that may be read from data() + i on: the valid bytes and the padding after them.
  std::size_t readable_from(std::size_t i) const { return size_ - i + kPadding; }

  // Discards the bytes before keep_from and appends the next chunk after the rest. Returns how far the
  // window moved: subtract it from every index the caller holds into data(). Sets eof() once the file
  // has no more bytes. Throws InputError on read or decompression errors.
  std::size_t refill(std::size_t keep_from);

  // Mapped: bytes before the window stay readable (at their old addresses) until released; the caller
  // releases what it no longer views, up to an absolute offset (clamped to the window's start), and the
  // process's copies of those pages are dropped. Other modes copy, so there this does nothing.
  bool mapped() const { return map_ != nullptr; }
  void release_before(std::uint64_t offset);

  std::uint64_t offset_of(std::size_t i) const { return base_ + i; }
  // Line and column (1-based, in bytes) and byte offset of data()[i]; i may equal size().
  InputPosition position_of(std::size_t i) const;

  const std::string& path() const { return path_; }
  bool gzipped() const { return gzipped_; }
  std::uint64_t bytes_read() const { return bytes_read_; }  // uncompressed, handed to the window so far
  std::uint64_t file_bytes() const { return file_bytes_; }  // on disk (compressed size for gzip)
  // Uncompressed size a gzip file announces in its trailer (its size modulo 2^32), 0 when unknown.
  std::uint64_t gzip_announced_bytes() const { return gzip_isize_; }

 private:
  void discard(std::size_t keep_from);

  void refill_mapped();

  std::string path_;
  std::unique_ptr<MappedFile> map_;  // kMap: the file; reader_ is null then
  std::size_t chunk_bytes_ = 0;
  bool drop_behind_ = false;  // mapped: also drop released pages from the page cache
  std::uint64_t released_ = 0;
  std::unique_ptr<BlockReader> reader_;
  Block* block_ = nullptr;  // the chunk the window lies in; null while it lies in overflow_
  std::unique_ptr<char[]> overflow_;  // for an item larger than the room in front of a chunk
  std::size_t overflow_capacity_ = 0;
  const char* data_ = nullptr;
  std::size_t size_ = 0;
  bool eof_ = false;
  bool gzipped_ = false;
  std::uint64_t base_ = 0;               // absolute offset of data()[0]
  std::uint64_t lines_before_ = 0;       // newlines in the discarded bytes
  std::uint64_t line_start_before_ = 0;  // absolute offset where the line holding data()[0] begins
  std::uint64_t bytes_read_ = 0;
  std::uint64_t file_bytes_ = 0;
  std::uint64_t gzip_isize_ = 0;
};

}  // namespace opprof::detail
