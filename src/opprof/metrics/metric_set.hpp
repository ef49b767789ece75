#pragma once
// The curated ncu metric set: which counters pass B collects, how each aggregates over kernels, and why
// it is there. The default set is data/metrics_default.tsv (compiled in); a user's file replaces it.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace opprof {

enum class Aggregate : std::uint8_t {
  kSum = 0,           // counts and bytes: sum over kernels
  kWeightedMean = 1,  // rates and percentages: mean weighted by each kernel's timeline duration
  kMax = 2,           // launch configuration (registers, shared memory): the largest
};
const char* to_string(Aggregate a);

struct MetricSpec {
  std::string name;      // full ncu metric name with its rollup ("dram__bytes_read.sum")
  Aggregate aggregate = Aggregate::kSum;
  std::string axis;      // bottleneck axis: time, compute, tensor, fp32, dram, l1, l2, occupancy, issue, launch, spill
  std::string arch;      // "*" for every architecture, else one chip ("gh100") this row is for
  std::string replaces;  // on that chip, the metric of the "*" set this row stands in for ("" for none)
  std::string reason;    // why the metric is in the set
  std::uint32_t line = 0;
};

struct MetricSet {
  std::string source;  // file path, or "<built-in>"
  std::vector<MetricSpec> metrics;

  // The set for one chip: "*" rows, with rows for that chip replacing what they name.
  MetricSet for_chip(std::string_view chip) const;
  std::vector<std::string> names() const;
  const MetricSpec* find(std::string_view name) const;
};

// Parses a metric-set file (tab-separated: name, aggregate, axis, arch, replaces, reason; '#' comments).
// Throws InputError with the line on bad syntax or an unknown aggregate.
MetricSet parse_metric_set(std::string_view text, const std::string& source);
MetricSet load_metric_set(const std::string& path);  // "" -> the built-in default
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

// Problems with the set's names against a catalog: an unknown base name, or a rollup suffix its type
// does not have. launch__* and device__attribute__* are always collectable.
std::vector<MetricProblem> validate_metric_names(const MetricSet& set, const MetricCatalog& catalog);

}  // namespace opprof
