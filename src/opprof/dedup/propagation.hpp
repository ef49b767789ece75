#pragma once
// After matching a deduplicated ncu CSV to a plan's replay set: counters propagated from representatives
// to duplicates (marked per kernel), and the deviation between the verify duplicates' own counters and
// their representatives'.
#include <cstdint>
#include <string>
#include <vector>

#include "opprof/dedup/dedup_plan.hpp"
#include "opprof/metrics/aggregate.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof {

struct PropagationResult {
  std::uint64_t propagated = 0;        // kernels that took a representative's counters
  std::uint64_t without_source = 0;    // duplicates whose representative kernel got no ncu row: left without
};

// Copies every duplicate's representative's values into km (a representative without counters leaves its
// duplicates without) and sets km.counters_from (kNoIndex for kernels with their own counters).
PropagationResult propagate_counters(const DedupPlan& plan, KernelMetrics& km);

struct MetricDeviation {
  std::string metric;
  std::size_t pairs = 0;          // verify kernels where both sides have the value
  double median_rel = 0;          // time-weighted median of |duplicate - representative| / |representative|
  double max_rel = 0;
};

// Per metric of km, over the plan's verify duplicates. Pairs where the representative's value is 0 count
// as 0 when the duplicate's is 0 too and as 1 (100 %) otherwise. Launch-configuration metrics (aggregate
// max) are equal by construction and left out.
std::vector<MetricDeviation> verify_deviation(const Timeline& tl, const DedupPlan& plan, const KernelMetrics& km);

}  // namespace opprof
