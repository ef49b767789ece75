#include "opprof/attribute/range_indexes.hpp"

namespace opprof {

ThreadRangeIndexes build_thread_range_indexes(const Timeline& tl) {
  ThreadRangeIndexes out;
  const RangeTable& r = tl.ranges;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (r.scope[i] != RangeScope::kThread) continue;
    auto id = static_cast<std::uint32_t>(i);
    switch (r.kind[i]) {
      case RangeKind::kOperator: out.threads[{r.pid[i], r.owner[i]}].ops.add(r.start_ns[i], r.end_ns[i], id); break;
      case RangeKind::kModule: out.threads[{r.pid[i], r.owner[i]}].modules.add(r.start_ns[i], r.end_ns[i], id); break;
      case RangeKind::kAnnotation:
        out.threads[{r.pid[i], r.owner[i]}].annotations.add(r.start_ns[i], r.end_ns[i], id);
        break;
      case RangeKind::kCompiledRegion:
        out.threads[{r.pid[i], r.owner[i]}].regions.add(r.start_ns[i], r.end_ns[i], id);
        break;
      default: break;
    }
  }
  for (auto& [key, t] : out.threads) {
    t.ops.build();
    t.modules.build();
    t.regions.build();
    t.annotations.build();
  }
  return out;
}

}  // namespace opprof
