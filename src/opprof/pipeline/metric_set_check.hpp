#pragma once
// `opprof metrics`: a metric set as one chip collects it, checked against that chip's ncu catalog.
#include <string>
#include <vector>

#include "opprof/metrics/metric_set.hpp"

namespace opprof {

struct MetricSetCheck {
  MetricSet set;                        // the set for the chip
  bool catalog_known = false;           // a built-in ncu catalog exists for the chip
  std::vector<MetricProblem> problems;  // names the catalog rejects (none without a catalog)
};

// Loads the set (file "" for the built-in one) for the chip; with check, validates it against the chip's
// built-in catalog.
MetricSetCheck check_metric_set(const std::string& file, const std::string& chip, bool check);

}  // namespace opprof
