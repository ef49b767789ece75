#include "opprof/dedup/propagation.hpp"

#include <algorithm>
#include <cmath>

namespace opprof {

PropagationResult propagate_counters(const DedupPlan& plan, KernelMetrics& km) {
  PropagationResult out;
  const std::size_t m = km.metrics.size();
  km.counters_from.assign(km.kernels, kNoIndex);
  for (std::size_t k = 0; k < plan.counters_from.size() && k < km.kernels; ++k) {
    const std::uint32_t r = plan.counters_from[k];
    if (r == kNoIndex) continue;
    bool any = false;
    for (std::size_t j = 0; j < m; ++j) any = any || !std::isnan(km.values[r * m + j]);
    if (!any) {
      ++out.without_source;
      continue;
    }
    std::copy_n(km.values.begin() + static_cast<std::ptrdiff_t>(r * m), m,
                km.values.begin() + static_cast<std::ptrdiff_t>(k * m));
    km.counters_from[k] = r;
    ++out.propagated;
  }
  return out;
}

std::vector<MetricDeviation> verify_deviation(const Timeline& tl, const DedupPlan& plan, const KernelMetrics& km) {
  std::vector<MetricDeviation> out;
  const std::size_t m = km.metrics.size();
  for (std::size_t j = 0; j < m; ++j) {
    if (km.metrics[j].aggregate == Aggregate::kMax) continue;
    std::vector<std::pair<double, double>> devs;  // (relative deviation, weight: the duplicate's duration)
    for (std::size_t k = 0; k < plan.verify_against.size() && k < km.kernels; ++k) {
      const std::uint32_t r = plan.verify_against[k];
      if (r == kNoIndex) continue;
      const double d = km.value(k, j), v = km.value(r, j);
      if (std::isnan(d) || std::isnan(v)) continue;
      const double rel = v != 0 ? std::abs(d - v) / std::abs(v) : (d == 0 ? 0.0 : 1.0);
      devs.emplace_back(rel, static_cast<double>(std::max<std::int64_t>(tl.kernels.duration_ns(k), 1)));
    }
    MetricDeviation md{km.metrics[j].name, devs.size(), 0, 0};
    if (!devs.empty()) {
      std::sort(devs.begin(), devs.end());
      double total = 0;
      for (const auto& [rel, w] : devs) total += w;
      double seen = 0;
      for (const auto& [rel, w] : devs) {
        seen += w;
        if (seen >= total / 2) {
          md.median_rel = rel;
          break;
        }
      }
      md.max_rel = devs.back().first;
    }
    out.push_back(std::move(md));
  }
  return out;
}

}  // namespace opprof
