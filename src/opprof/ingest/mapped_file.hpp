#pragma once
// A file mapped read-only, for readers that touch each byte once and let the OS page it in and out (the
// tracer log, and plain torch.profiler traces through ChunkedInput). The mapping can be followed by zeroed
// readable bytes, as simdjson requires of the documents it parses in place.
//
// Like any mapping, it assumes the file is not truncated while mapped: a page past a new end of file
// faults (SIGBUS). `shrunk()` lets a reader check before it reads further.
#include <cstddef>
#include <cstdint>
#include <string>

namespace opprof::detail {

class MappedFile {
 public:
  // Maps the whole file; `padding` readable zero bytes follow its last byte. Throws InputError when the
  // file cannot be opened or mapped.
  explicit MappedFile(const std::string& path, std::size_t padding = 0);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  std::size_t size() const { return size_; }

  // Drops the process's copy of the whole pages in [from, to) and returns where they end (`to` rounded
  // down to a page; `from` when none). They stay in the page cache and fault back in when read again: a
  // multi-GB file that stayed mapped whole while it is decoded would count in the peak memory beside what
  // was decoded from it.
  std::size_t drop_resident(std::size_t from, std::size_t to) const;
  // Also drops those pages from the page cache (a file larger than the cache would otherwise make the
  // kernel reclaim under pressure).
  std::size_t drop_cached(std::size_t from, std::size_t to) const;
  // The file is now shorter than when it was mapped.
  bool shrunk() const;

 private:
  int fd_ = -1;
  const char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t reserved_ = 0;  // bytes of address space mapped: the file's, then the padding's
};

// Whether a file of `bytes` is larger than a quarter of the machine's memory: it cannot stay cached beside
// the timeline read from it, and its pages are better dropped from the page cache once read.
bool exceeds_page_cache_share(std::uint64_t bytes);

}  // namespace opprof::detail
