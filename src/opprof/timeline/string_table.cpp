#include "opprof/timeline/string_table.hpp"

#include <algorithm>
#include <cstring>

namespace opprof {
namespace {
// Chunks start small and double up to kChunkBytes, so that a small timeline (a test's, a fuzzer's
// input) does not pay for a megabyte it never uses. They are not zeroed: only written bytes are read.
constexpr std::size_t kFirstChunkBytes = 4 << 10;
constexpr std::size_t kChunkBytes = 1 << 20;
}

StringTable::StringTable() {
  views_.emplace_back();
  index_.emplace(std::string_view(), kNoString);
}
StringTable::StringTable(StringTable&&) noexcept = default;
StringTable& StringTable::operator=(StringTable&&) noexcept = default;
StringTable::~StringTable() = default;

std::string_view StringTable::store(std::string_view text) {
  if (text.size() > kChunkBytes / 4) {  // large strings get a chunk of their own
    std::unique_ptr<char[]> chunk(new char[text.size()]);
    std::memcpy(chunk.get(), text.data(), text.size());
    std::string_view stored(chunk.get(), text.size());
    chunks_.insert(chunks_.begin(), std::move(chunk));  // keep the current small-string chunk last
    return stored;
  }
  if (chunks_.empty() || chunk_used_ + text.size() > chunk_size_) {
    // At least text.size(): a string of up to kChunkBytes / 4 always fits a new chunk.
    const std::size_t size =
        std::max(text.size(), chunk_size_ == 0 ? kFirstChunkBytes : std::min(2 * chunk_size_, kChunkBytes));
    chunks_.emplace_back(new char[size]);
    chunk_used_ = 0;
    chunk_size_ = size;
  }
  char* dst = chunks_.back().get() + chunk_used_;
  std::memcpy(dst, text.data(), text.size());
  chunk_used_ += text.size();
  return {dst, text.size()};
}

StrId StringTable::intern(std::string_view text) {
  if (auto it = index_.find(text); it != index_.end()) return it->second;
  std::string_view stored = store(text);
  bytes_ += text.size();
  auto id = static_cast<StrId>(views_.size());
  views_.push_back(stored);
  index_.emplace(stored, id);
  return id;
}

StrId StringTable::find(std::string_view text) const {
  auto it = index_.find(text);
  return it == index_.end() ? kNoString : it->second;
}

}  // namespace opprof
