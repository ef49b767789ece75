#include "opprof/report/json.hpp"

#include "opprof/report/job.hpp"
#include "opprof/report/json_writer.hpp"

namespace opprof {
namespace {

void write_groups(JsonWriter& j, std::string_view key, const std::vector<GroupLine>& lines) {
  j.key(key).begin_array();
  for (const GroupLine& line : lines) {
    const GroupStats& g = line.stats;
    j.begin_object();
    j.key("name").string(g.key);
    j.key("fused_ops").string_or_null(g.fused_ops);
    j.key("kernels").unsigned_integer(g.kernels);
    j.key("time_ns").integer(g.time_ns);
    j.key("time_pct").number(line.time_pct);
    j.key("counted_time_ns").integer(g.counted_time_ns);
    j.key("bottleneck").string_or_null(g.bottleneck);
    j.key("bottleneck_why").string_or_null(g.bottleneck_why);
    j.key("sm_pct").number(line.counters.sm_pct);
    j.key("dram_pct").number(line.counters.dram_pct);
    j.key("tensor_pct").number(line.counters.tensor_pct);
    j.key("occupancy_pct").number(line.counters.occupancy_pct);
    j.key("dram_bytes").number_or_null(g.dram_bytes);  // derived figures use -1 for unknown
    j.key("dram_gbps").number_or_null(g.dram_bandwidth_gbps);
    j.key("flops").number_or_null(g.flops);
    j.key("tensor_flops").number_or_null(g.tensor_flops);
    j.key("fp32_flops").number_or_null(g.fp32_flops);
    j.key("gflops").number_or_null(g.gflops);
    j.key("tensor_gflops").number_or_null(g.tensor_gflops);
    j.key("fp32_gflops").number_or_null(g.fp32_gflops);
    j.key("arithmetic_intensity").number_or_null(g.arithmetic_intensity);
    j.end_object();
  }
  j.end_array();
}

// A part of the kernel time as "<name>_ns" and its share of all kernel time as "<name>_pct".
void time_and_share(JsonWriter& j, const Coverage& c, std::string_view name, std::int64_t ns) {
  j.key(std::string(name) + "_ns").integer(ns);
  j.key(std::string(name) + "_pct").number(c.pct(ns));
}

void string_array(JsonWriter& j, std::string_view key, const std::vector<std::string>& items) {
  j.key(key).begin_array();
  for (const std::string& item : items) j.string(item);
  j.end_array();
}

}  // namespace

std::string render_json_report(const ProfileReader& profile, const ReportOptions& options) {
  const ReportSummary s = summarize_profile(profile, options);
  const Coverage& c = s.coverage;
  auto path_ns = [&](AttributionPath p) { return c.by_path_ns[static_cast<int>(p)]; };
  constexpr AttributionPath kPaths[] = {AttributionPath::kCorrelation, AttributionPath::kEnclosure,
                                        AttributionPath::kFusion, AttributionPath::kNone};
  JsonWriter j;
  j.begin_object();
  j.key("profile").string(s.path);
  j.key("schema_version").integer(s.schema_version);
  j.key("metadata").begin_object();
  for (const auto& [key, value] : s.metadata) j.key(key).string(value);
  j.end_object();

  j.key("kernel_time_ns").integer(c.kernel_time_ns);
  j.key("kernels").unsigned_integer(c.kernels);
  time_and_share(j, c, "attributed", c.attributed_ns);
  time_and_share(j, c, "module_attributed", c.module_attributed_ns);
  time_and_share(j, c, "opaque_backend", c.opaque_ns);
  j.key("by_path").begin_object();
  for (AttributionPath p : kPaths) j.key(to_string(p)).number(c.pct(path_ns(p)));
  j.end_object();
  j.key("by_path_ns").begin_object();
  for (AttributionPath p : kPaths) j.key(to_string(p)).integer(path_ns(p));
  j.end_object();
  constexpr Phase kPhaseOrder[] = {Phase::kForward, Phase::kBackward, Phase::kOptimizer, Phase::kOther,
                                   Phase::kCommunication};
  j.key("by_phase").begin_object();
  for (Phase p : kPhaseOrder) j.key(to_string(p)).number(c.pct(c.by_phase_ns[static_cast<int>(p)]));
  j.end_object();
  j.key("by_phase_ns").begin_object();
  for (Phase p : kPhaseOrder) j.key(to_string(p)).integer(c.by_phase_ns[static_cast<int>(p)]);
  j.end_object();

  j.key("opaque_backends").begin_array();
  for (const auto& [backend, ns] : c.opaque_backends)
    j.begin_object().key("backend").string(backend).key("time_ns").integer(ns).key("pct").number(c.pct(ns)).end_object();
  j.end_array();

  j.key("unattributed").begin_array();
  for (const UnattributedGroup& u : c.unattributed) {
    j.begin_object();
    j.key("family").string(u.family);
    j.key("reason").string(u.reason);
    j.key("kernels").unsigned_integer(u.kernels);
    j.key("time_ns").integer(u.time_ns);
    j.key("pct").number(c.pct(u.time_ns));
    j.end_object();
  }
  j.end_array();

  j.key("ncu").begin_object();
  j.key("available").boolean(c.has_ncu);
  j.key("rows").unsigned_integer(c.ncu_rows);
  j.key("matched").unsigned_integer(c.ncu_matched);
  j.key("unmatched_rows").unsigned_integer(c.ncu_unmatched_rows);
  j.key("unmatched_kernels").unsigned_integer(c.ncu_unmatched_kernels);
  j.key("grid_block_disagreements").unsigned_integer(c.ncu_grid_block_disagreements);
  j.key("launch_config_differs").unsigned_integer(c.ncu_launch_config_differs);
  j.key("strict_launch_config").boolean(c.ncu_strict_launch_config);
  j.key("identity");
  if (!c.has_ncu)
    j.null();
  else
    j.string(profile.meta("ncu.used_mangled_names") == "true" ? "mangled" : "base_name_grid_block");
  string_array(j, "missing_metrics", s.missing_metrics);
  string_array(j, "notes", s.match_notes);
  j.end_object();

  j.key("anomalies").begin_object();
  for (const ProfileAnomaly& a : s.anomalies) {
    j.key(a.kind).begin_object().key("count").unsigned_integer(a.count);
    string_array(j, "detail", a.details);
    j.end_object();
  }
  j.end_object();

  write_groups(j, "operators", s.operators);
  j.key("operator_count").unsigned_integer(s.operator_count);
  write_groups(j, "modules", s.modules);
  j.key("module_count").unsigned_integer(s.module_count);
  string_array(j, "warnings", s.warnings);
  j.key("job");
  write_job_json(j, profile);
  j.end_object();
  return j.str() + "\n";
}

}  // namespace opprof
