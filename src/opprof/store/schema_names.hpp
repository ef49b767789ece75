#pragma once
// How the profile database spells the engine's enumerations. These strings are part of the database's
// contract (docs/schema.md), so the store owns them instead of borrowing the engine's to_string
// functions, whose wording may change for messages without changing the schema.
#include <string_view>

#include "opprof/attribute/attribution.hpp"
#include "opprof/metrics/aggregate.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof::schema {

inline std::string_view activity_kind(ActivityKind k) {
  switch (k) {
    case ActivityKind::kKernel: return "kernel";
    case ActivityKind::kMemcpy: return "memcpy";
    case ActivityKind::kMemset: return "memset";
  }
  return "kernel";
}

inline std::string_view attribution_path(AttributionPath p) {
  switch (p) {
    case AttributionPath::kNone: return "none";
    case AttributionPath::kCorrelation: return "correlation";
    case AttributionPath::kEnclosure: return "enclosure";
    case AttributionPath::kFusion: return "fusion";
  }
  return "none";
}

inline std::string_view module_source(ModuleSource s) {
  switch (s) {
    case ModuleSource::kNone: return "none";
    case ModuleSource::kThreadRange: return "thread_range";
    case ModuleSource::kStreamRange: return "stream_range";
    case ModuleSource::kFxProvenance: return "fx_provenance";
    case ModuleSource::kForwardOp: return "forward_op";
    case ModuleSource::kOptimizerStep: return "optimizer_step";
  }
  return "none";
}

inline std::string_view phase(Phase p) {
  switch (p) {
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kOptimizer: return "optimizer";
    case Phase::kOther: return "other";
  }
  return "other";
}

inline std::string_view range_kind(RangeKind k) {
  switch (k) {
    case RangeKind::kOperator: return "operator";
    case RangeKind::kModule: return "module";
    case RangeKind::kAnnotation: return "annotation";
    case RangeKind::kCompiledRegion: return "compiled_region";
    case RangeKind::kCaptureWindow: return "capture_window";
    case RangeKind::kOther: return "other";
  }
  return "other";
}

inline std::string_view range_scope(RangeScope s) { return s == RangeScope::kStream ? "stream" : "thread"; }

// group_metrics.group_kind, and the table each kind's groups live in.
inline std::string_view group_kind(GroupBy g) {
  switch (g) {
    case GroupBy::kOperator: return "operator";
    case GroupBy::kModule: return "module";
    case GroupBy::kFamily: return "family";
  }
  return "operator";
}
inline std::string_view group_table(GroupBy g) {
  switch (g) {
    case GroupBy::kOperator: return "operators";
    case GroupBy::kModule: return "modules";
    case GroupBy::kFamily: return "kernel_families";
  }
  return "operators";
}

}  // namespace opprof::schema
