#pragma once
// The outcome of `opprof optimize` as the Python driver writes it in optimize_report.json
// (python/opprof/optimize/report.py, as_json): read back whole for the HTML page (optimize_html.hpp).
// Python's None is std::nullopt here; every other field the driver always writes is required.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opprof {

// Profiled kernel time of a variant: the kernel durations of its in-process profile, per step.
struct OptimizeKernelTime {
  double ns_per_step = 0;
  double kernels_per_step = 0;
  double steps = 0;
  std::string database;
};

// Wall time per step: CUDA events (or perf_counter without a GPU), median of `steps` with the spread.
struct OptimizeWallTime {
  double median_ms = 0, p25_ms = 0, p75_ms = 0, min_ms = 0, max_ms = 0;
  double steps = 0;
  std::string clock;
};

struct OptimizeMeasured {
  std::optional<OptimizeKernelTime> kernel;  // none without a GPU
  OptimizeWallTime wall;
};

// Numerical agreement with the eager FP32 reference: outputs, and gradients for a training step.
struct OptimizeAgreement {
  double max_abs = 0, max_rel = 0;
  double tensors = 0;
  std::optional<double> grad_max_abs, grad_max_rel;
  std::string nonfinite;  // where a non-finite value appeared that the reference does not have
};

struct OptimizeFinding {
  std::string rule;
  std::optional<std::string> rewrite;  // none: a diagnosis with nothing to rewrite
  std::vector<std::string> evidence;
};

struct OptimizeTrial {
  std::string rewrite;
  std::vector<std::string> together_with;  // earlier rewrites retried with this one
  std::string tier, mechanism;
  std::string verdict;  // applied, rejected or skipped
  std::string reason;
  std::vector<std::string> changes;
  std::optional<OptimizeAgreement> numerics;  // none when it was not run
  std::optional<double> numerics_bound;
  std::optional<OptimizeMeasured> measured;  // none when it was not measured
  std::optional<double> kernel_speedup, wall_speedup;  // against the state before it
};

// A total speedup split into the numerics-preserving part and the precision factor; precision_share is
// the precision steps' fraction of log(total).
struct OptimizeSpeedupSplit {
  std::optional<double> total, exact_only, precision_factor, precision_share;
};

struct OptimizeReport {
  std::string workload, compile;
  bool train = false;
  std::optional<std::string> allow_precision;
  double tolerance = 0, exact_tolerance = 0;
  std::string evidence_profile;
  OptimizeMeasured baseline;
  OptimizeAgreement noise;  // the unrewritten compiled model against eager FP32
  std::vector<OptimizeFinding> findings;
  std::vector<OptimizeTrial> trials;
  std::vector<std::string> applied;
  OptimizeMeasured final, exact_only;
  OptimizeSpeedupSplit kernel_speedup, wall_speedup;
  std::string saved_code;  // the path of opprof_optimized.py; empty when none was saved
};

// Parses optimize_report.json's text. file names it in errors: InputError for malformed JSON and for a
// field that is missing or of the wrong type, naming the field ("trials[2].measured.wall.median_ms").
// Python's json module writes non-finite floats as NaN, Infinity and -Infinity (an FP16 rewrite that
// overflows leaves an infinite max_abs); they are read as those values.
OptimizeReport parse_optimize_report(std::string_view json, const std::string& file);
// Reads and parses the file. Throws InputError.
OptimizeReport read_optimize_report(const std::string& path);

}  // namespace opprof
