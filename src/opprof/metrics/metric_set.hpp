#pragma once
// The curated ncu metric set: which counters pass B collects, how each aggregates over kernels, and why
// it is there. The default set is data/metrics_default.tsv (compiled in); a user's file replaces it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "opprof/util/enum_names.hpp"

namespace opprof {

enum class Aggregate : std::uint8_t {
  kSum = 0,           // counts and bytes: sum over kernels
  kWeightedMean = 1,  // rates, percentages, ratios: mean weighted by the row's weight (MetricSpec::weight)
  kMax = 2,           // launch configuration (registers, shared memory): the largest
};
inline constexpr std::array<const char*, 3> kAggregateNames = {"sum", "wmean", "max"};  // metric-set TSV, metrics table
static_assert(kAggregateNames.size() == static_cast<std::size_t>(Aggregate::kMax) + 1);
inline const char* to_string(Aggregate a) { return enum_name(kAggregateNames, a); }

struct MetricSpec {
  std::string name;      // full ncu metric name with its rollup ("dram__bytes_read.sum")
  Aggregate aggregate = Aggregate::kSum;
  std::string axis;      // bottleneck axis: time, compute, tensor, fp32, dram, l1, l2, occupancy, issue, launch, spill
  std::string arch;      // "*" for every architecture, else one chip ("gh100") this row is for
  std::string replaces;  // on that chip, the metric of the "*" set this row stands in for ("" for none)
  std::string reason;    // why the metric is in the set
  // The base unit ncu prints for it with --print-units base ("ns", "byte", "%", "inst", "sector"; "" where
  // ncu prints none, written "-" in the file). The ncu CSV's units row must say the same.
  std::string unit;
  // wmean only: what each kernel's value is weighted by, kDurationWeight (the kernel's timeline duration)
  // or the name of a sum metric of the set (the ratio's denominator: sectors for a hit rate,
  // instructions for a per-instruction figure). "" for sum and max.
  std::string weight;
  std::uint32_t line = 0;
};

// The weight of a wmean metric that stands for the kernel's timeline duration.
inline constexpr std::string_view kDurationWeight = "duration";

struct MetricSet {
  std::string source;  // file path, or "<built-in>"
  std::vector<MetricSpec> metrics;

  // The set for one chip: "*" rows, with rows for that chip replacing what they name.
  MetricSet for_chip(std::string_view chip) const;
  std::vector<std::string> names() const;
  const MetricSpec* find(std::string_view name) const;
};

// Parses a metric-set file (format version 2, tab-separated: name, aggregate, axis, arch, replaces, reason,
// unit, weight; '#' comments). Throws InputError with line and column on bad syntax, an unknown aggregate,
// a missing unit, or a wmean row whose weight is missing or names no sum metric of the set.
MetricSet parse_metric_set(std::string_view text, const std::string& source);
// "" or "default": the built-in default set; "quick" (one or two replay passes: duration, SM / DRAM / tensor
// throughput, occupancy) and "full" (the default set and the stall, cache and instruction-mix breakdowns):
// the other built-in sets; anything else is a metric-set file.
MetricSet load_metric_set(const std::string& path);
MetricSet default_metric_set();
// Throws InputError (at the set's first row) when no row of the set applies to the capture's chip ("" when
// the capture does not say): every row is for other chips, so every operator would end "unmeasured".
void require_rows_for_chip(const MetricSet& set, std::string_view chip);

// One chip's ncu metric catalog (`ncu --query-metrics --chip <chip> --csv`): base names and their types.
struct MetricCatalog {
  std::string chip;
  struct Entry {
    std::string base;
    std::string type;  // Counter, Ratio, Throughput
    std::string unit;
  };
  std::vector<Entry> entries;  // sorted by base
  const Entry* find(std::string_view base) const;
};
MetricCatalog parse_metric_catalog(std::string_view csv_text, const std::string& source, const std::string& chip);
// The built-in catalog for a chip ("gh100"), or an empty catalog when none is compiled in.
MetricCatalog builtin_metric_catalog(std::string_view chip);
// The ncu chip name for a GPU as torch/ncu name it ("NVIDIA H200" -> "gh100"), "" when unknown.
std::string chip_for_device(std::string_view device_name, int compute_major, int compute_minor);
// The chips chip_for_device can answer, each once, in order of compute capability.
std::vector<std::string> known_chips();
// The ncu chip of a capture's first GPU from a timeline's metadata ("device.0.name" with
// "device.0.compute_major/minor", or "device.0.cc" = "9.0"), "" when it does not say.
std::string chip_for_capture(const std::map<std::string, std::string>& timeline_metadata);

// One metric of a set that a chip's catalog does not accept, with the line of the set that names it.
struct MetricProblem {
  std::string source;  // the set's file path, or "<built-in>"
  std::uint32_t line = 0;
  std::string metric;
  std::string message;  // "unknown metric for gh100 (not in its ncu catalog)", ...
  std::string to_string() const;  // "<source>:<line>: <metric>: <message>"
};

// Problems with the set's names against a catalog: an unknown base name, a rollup suffix its type does not
// have, or a declared unit other than the catalog's. launch__* and device__attribute__* are always
// collectable (and not in the catalog, so their units are checked against the CSV only).
std::vector<MetricProblem> validate_metric_names(const MetricSet& set, const MetricCatalog& catalog);
// The base unit ncu prints for a full metric name whose base the catalog lists: "%" for .pct and
// pct_of_peak_* submetrics, the catalog's unit for a plain rollup, nullopt for other submetrics.
std::optional<std::string> catalog_unit(const MetricCatalog::Entry& entry, std::string_view full_name);

}  // namespace opprof
