#include "opprof/report/json.hpp"

#include "opprof/report/job.hpp"
#include "opprof/report/json_writer.hpp"
#include "opprof/util/text.hpp"

namespace opprof {

void write_group_lines(JsonWriter& j, std::string_view key, const std::vector<GroupLine>& lines) {
  j.key(key).begin_array();
  for (const GroupLine& line : lines) {
    const GroupStats& g = line.stats;
    const BottleneckText why = split_bottleneck_why(g.bottleneck_why);
    std::vector<std::string> fused;
    for (std::string_view op : split(g.fused_ops, ','))
      if (!trim(op).empty()) fused.emplace_back(trim(op));
    j.begin_object();
    j.key("name").string(g.key).key("fused_ops").strings(fused);
    j.fields({{"kernels", g.kernels}, {"time_ns", g.time_ns}, {"time_pct", line.time_pct},
              {"counted_time_ns", g.counted_time_ns}});
    j.fields({{"bottleneck", JsonValue::or_null(g.bottleneck)}, {"bottleneck_why", JsonValue::or_null(g.bottleneck_why)},
              {"bottleneck_reason", JsonValue::or_null(why.reason)},
              {"bottleneck_advice", JsonValue::or_null(why.advice)}});
    j.fields({{"sm_pct", line.counters.sm_pct}, {"dram_pct", line.counters.dram_pct},
              {"tensor_pct", line.counters.tensor_pct}, {"occupancy_pct", line.counters.occupancy_pct}});
    // Derived figures use -1 for unknown.
    j.fields({{"dram_bytes", JsonValue::or_null(g.dram_bytes)}, {"dram_gbps", JsonValue::or_null(g.dram_bandwidth_gbps)},
              {"flops", JsonValue::or_null(g.flops)}, {"tensor_flops", JsonValue::or_null(g.tensor_flops)},
              {"fp32_flops", JsonValue::or_null(g.fp32_flops)}, {"gflops", JsonValue::or_null(g.gflops)},
              {"tensor_gflops", JsonValue::or_null(g.tensor_gflops)}, {"fp32_gflops", JsonValue::or_null(g.fp32_gflops)},
              {"arithmetic_intensity", JsonValue::or_null(g.arithmetic_intensity)}});
    j.end_object();
  }
  j.end_array();
}

namespace {

// A node and its children down to last_depth (0: all).
void write_module_node(JsonWriter& j, const ModuleNode& n, const Coverage& c, int last_depth) {
  j.begin_object();
  j.fields({{"name", n.name}, {"path", n.path}, {"depth", n.depth}});
  j.fields({{"inclusive_ns", n.inclusive_ns}, {"inclusive_pct", c.pct(n.inclusive_ns)}, {"self_ns", n.self_ns},
            {"self_pct", c.pct(n.self_ns)}, {"kernels", n.inclusive_kernels}, {"self_kernels", n.self_kernels}});
  j.fields({{"bottleneck", JsonValue::or_null(n.bottleneck)}, {"bottleneck_why", JsonValue::or_null(n.bottleneck_why)}});
  const bool deeper = last_depth == 0 || n.depth < last_depth;
  j.key("children").begin_array();
  if (deeper)
    for (const ModuleNode& child : n.children) write_module_node(j, child, c, last_depth);
  j.end_array();
  j.key("children_left_out").unsigned_integer(deeper ? 0 : n.children.size());
  j.end_object();
}

void write_module_tree(JsonWriter& j, const ReportSummary& s, const ReportOptions& o) {
  const ModuleTree& t = s.module_tree;
  const Coverage& c = s.coverage;
  j.key("module_tree").begin_object();
  j.fields({{"module_ns", t.module_ns}, {"module_pct", c.pct(t.module_ns)}, {"module_kernels", t.module_kernels}});
  j.fields({{"no_module_ns", t.no_module_ns}, {"no_module_pct", c.pct(t.no_module_ns)},
            {"no_module_kernels", t.no_module_kernels}});
  j.fields({{"nodes", t.nodes}, {"depth", o.depth}, {"prefix", JsonValue::or_null(o.module_prefix)}});
  j.key("roots").begin_array();
  if (o.module_prefix.empty()) {
    for (const ModuleNode& root : t.roots) write_module_node(j, root, c, o.depth);
  } else if (const ModuleNode* n = find_module(t, o.module_prefix)) {
    write_module_node(j, *n, c, o.depth > 0 ? n->depth + o.depth - 1 : 0);
  }
  j.end_array();
  j.end_object();
}

// A part of the kernel time as "<name>_ns" and its share of all kernel time as "<name>_pct".
void time_and_share(JsonWriter& j, const Coverage& c, std::string_view name, std::int64_t ns) {
  j.key(std::string(name) + "_ns").integer(ns);
  j.key(std::string(name) + "_pct").number(c.pct(ns));
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
  j.key("format").string("opprof-report");
  j.key("format_version").integer(kJsonReportFormatVersion);
  j.key("profile").string(s.path);
  j.key("schema_version").integer(s.schema_version);
  j.key("metadata").begin_object();
  for (const auto& [key, value] : s.metadata) j.key(key).typed(value);
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
    j.fields({{"family", u.family}, {"reason", u.reason}, {"kernels", u.kernels}, {"time_ns", u.time_ns},
              {"pct", c.pct(u.time_ns)}});
    j.end_object();
  }
  j.end_array();

  j.key("ncu").begin_object();
  j.fields({{"available", c.has_ncu}, {"rows", c.ncu_rows}, {"matched", c.ncu_matched},
            {"unmatched_rows", c.ncu_unmatched_rows}, {"unmatched_kernels", c.ncu_unmatched_kernels}});
  j.fields({{"grid_block_disagreements", c.ncu_grid_block_disagreements},
            {"launch_config_differs", c.ncu_launch_config_differs},
            {"strict_launch_config", c.ncu_strict_launch_config}});
  j.key("identity");
  if (!c.has_ncu)
    j.null();
  else
    j.string(profile.meta("ncu.used_mangled_names") == "true" ? "mangled" : "base_name_grid_block");
  j.key("missing_metrics").strings(s.missing_metrics);
  j.key("notes").strings(s.match_notes);
  j.end_object();

  j.key("anomalies").begin_object();
  for (const ProfileAnomaly& a : s.anomalies) {
    j.key(a.kind).begin_object().key("count").unsigned_integer(a.count);
    j.key("detail").strings(a.details);
    j.end_object();
  }
  j.end_object();

  const ProfileDedup d = profile.dedup();
  j.key("dedup").begin_object();
  j.key("active").boolean(d.active);
  if (d.active) {
    j.key("mode").string(d.mode);
    j.key("selection").string(d.selection);
    j.key("classes").unsigned_integer(d.classes);
    j.key("instances").unsigned_integer(d.instances);
    j.key("kernels").unsigned_integer(d.kernels);
    j.key("kernels_replayed").unsigned_integer(d.kernels_replayed);
    j.key("kernels_propagated").unsigned_integer(d.kernels_propagated);
    j.key("kernels_without_source").unsigned_integer(d.kernels_without_source);
    j.key("kernels_other_work").unsigned_integer(d.kernels_other_work);
    if (d.launch_count > 0) j.key("launch_count").integer(d.launch_count);
    j.key("instances_replayed_in_full").unsigned_integer(d.instances_in_full);
    j.key("differing_instances").begin_array();
    for (const auto& f : d.in_full)
      j.begin_object().key("instance").string(f.instance).key("class").string(f.class_type).key("why").string(f.reason).end_object();
    j.end_array();
    j.key("verify").integer(d.verify);
    j.key("verify_deviation").begin_array();
    for (const auto& v : d.verify_deviation)
      j.begin_object()
          .key("metric").string(v.metric)
          .key("pairs").unsigned_integer(v.pairs)
          .key("median_rel").number(v.median_rel)
          .key("max_rel").number(v.max_rel)
          .end_object();
    j.end_array();
    j.key("notes").strings(d.notes);
  }
  j.end_object();

  write_group_lines(j, "operators", s.operators);
  j.key("operator_count").unsigned_integer(s.operator_count);
  write_group_lines(j, "modules", s.modules);
  j.key("module_count").unsigned_integer(s.module_count);
  write_module_tree(j, s, options);
  write_group_lines(j, "families", s.families);
  j.key("family_count").unsigned_integer(s.family_count);
  write_group_lines(j, "source_lines", s.source_lines);
  j.key("source_line_count").unsigned_integer(s.source_line_count);
  write_group_lines(j, "phases", s.phases);
  j.key("warnings").strings(s.warnings);
  j.key("job");
  write_job_json(j, profile);
  j.end_object();
  return j.str() + "\n";
}

}  // namespace opprof
