#pragma once
// Interval indexes over a timeline's thread ranges, one set per (process, thread), shared by the
// attribution paths.
#include <cstdint>
#include <unordered_map>

#include "opprof/attribute/interval_index.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

struct ThreadRangeIndexes {
  struct PerThread {
    IntervalIndex ops;      // kOperator
    IntervalIndex modules;  // kModule
    IntervalIndex regions;  // kCompiledRegion
    IntervalIndex annotations;  // kAnnotation: a program's own NVTX ranges, its operators when it has no framework
  };
  struct Key {
    std::uint32_t pid;
    std::uint64_t tid;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept {
      return std::hash<std::uint64_t>{}(k.tid * 0x9E3779B97F4A7C15ull ^ k.pid);
    }
  };
  std::unordered_map<Key, PerThread, KeyHash> threads;

  const PerThread* find(std::uint32_t pid, std::uint64_t tid) const {
    auto it = threads.find({pid, tid});
    return it == threads.end() ? nullptr : &it->second;
  }
};

ThreadRangeIndexes build_thread_range_indexes(const Timeline& tl);

}  // namespace opprof
