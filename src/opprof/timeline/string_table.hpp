#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace opprof {

// Index of an interned string. 0 is the empty string, which also stands for "unknown".
using StrId = std::uint32_t;
inline constexpr StrId kNoString = 0;

// A value for each string id, worked out on first use: what millions of rows ask of a few thousand texts (a
// kernel name's family, an operator's opaque backend), kept in a vector rather than a hash map. Ids beyond
// those sized for (strings interned since) grow it.
template <typename T>
class PerStringMemo {
 public:
  explicit PerStringMemo(std::size_t strings) : values_(strings) {}
  // The value for id, from compute() the first time.
  template <typename Compute>
  const T& get(StrId id, Compute&& compute) {
    if (id >= values_.size()) values_.resize(static_cast<std::size_t>(id) + 1);
    std::optional<T>& v = values_[id];
    if (!v) v = compute();
    return *v;
  }

 private:
  std::vector<std::optional<T>> values_;
};

// Interns strings: each distinct text is stored once, in stable arena chunks, and named by a dense id.
class StringTable {
 public:
  StringTable();
  StringTable(const StringTable&) = delete;
  StringTable& operator=(const StringTable&) = delete;
  StringTable(StringTable&&) noexcept;
  StringTable& operator=(StringTable&&) noexcept;
  ~StringTable();

  StrId intern(std::string_view text);
  // The id of text when it was interned before, else kNoString.
  StrId find(std::string_view text) const;
  std::string_view view(StrId id) const { return views_[id]; }
  std::size_t size() const { return views_.size(); }
  std::size_t bytes() const { return bytes_; }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::string_view store(std::string_view text);

  std::vector<std::unique_ptr<char[]>> chunks_;
  std::size_t chunk_used_ = 0;
  std::size_t chunk_size_ = 0;
  std::size_t bytes_ = 0;
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, StrId, Hash, std::equal_to<>> index_;
};

}  // namespace opprof
