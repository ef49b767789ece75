// The HTML report's data blob: everything the page shows, read from the profile database only.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>

#include "opprof/metrics/gpu_ceilings.hpp"
#include "opprof/report/html.hpp"
#include "opprof/report/job.hpp"
#include "opprof/report/json.hpp"
#include "opprof/report/json_writer.hpp"
#include "opprof/report/summary.hpp"
#include "opprof/store/sqlite.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

// Derived figures use -1 for unknown: written as null.
double known(double v) { return v < 0 ? std::numeric_limits<double>::quiet_NaN() : v; }

// The capture facts the page lists first, by meta key; absent keys are left out.
struct CaptureFact {
  const char* label;
  const char* key;
};
constexpr CaptureFact kCaptureFacts[] = {
    {"GPU", "timeline.device.0.name"},
    {"Chip", "chip"},
    {"Clocks locked", "clocks_locked"},
    {"Clocks locked (timeline)", "timeline.clocks_locked"},
    {"ncu clock control", "ncu.clock_control"},
    {"Metric set", "metric_set"},
    {"CUDA driver", "timeline.trace.cuda_driver_version"},
    {"CUDA runtime", "timeline.trace.cuda_runtime_version"},
    {"Timeline source", "timeline.source"},
    {"Trace", "inputs.trace"},
    {"ncu CSV", "inputs.ncu"},
    {"ncu rows", "ncu.rows"},
    {"Created", "created_at"},
    {"opprof", "opprof_version"},
};

void write_capture(JsonWriter& j, const std::map<std::string, std::string>& meta) {
  j.key("capture").begin_array();
  auto fact = [&](std::string_view label, const std::string& value) {
    j.begin_array().string(label).string(value).end_array();
  };
  for (const CaptureFact& f : kCaptureFacts)
    if (auto it = meta.find(f.key); it != meta.end()) fact(f.label, it->second);
  // The framework's version and layer dedup, under whatever keys the capture recorded them.
  for (const auto& [key, value] : meta)
    if (contains(key, "torch_version") || ends_with(key, "versions.torch") || starts_with(key, "dedup."))
      fact(key, value);
  j.end_array();
}

void write_coverage(JsonWriter& j, const Coverage& c) {
  j.key("coverage").begin_object();
  j.fields({{"kernel_time_ns", c.kernel_time_ns}, {"kernels", c.kernels}, {"attributed_ns", c.attributed_ns},
            {"module_attributed_ns", c.module_attributed_ns}, {"opaque_ns", c.opaque_ns}});
  j.key("paths").begin_array();
  for (std::size_t p = 0; p < kAttributionPathNames.size(); ++p)
    j.begin_object().key("name").string(kAttributionPathNames[p]).key("ns").integer(c.by_path_ns[p]).end_object();
  j.end_array();
  j.key("phases").begin_array();
  for (std::size_t p = 0; p < kPhaseNames.size(); ++p)
    j.begin_object().key("name").string(kPhaseNames[p]).key("ns").integer(c.by_phase_ns[p]).end_object();
  j.end_array();
  // The match's other counts are in the warnings and the match notes.
  j.key("ncu").begin_object().key("available").boolean(c.has_ncu);
  j.key("rows").unsigned_integer(c.ncu_rows).key("matched").unsigned_integer(c.ncu_matched).end_object();
  j.end_object();
}

// Per kernel name: launches and time, and the roofline figures of the launches ncu replayed (their FLOPs,
// DRAM bytes and replay duration summed, so that a name's point is its launches' combined work).
struct KernelLine {
  std::string name;
  std::string family;
  std::uint64_t kernels = 0;
  std::int64_t time_ns = 0;
  std::uint64_t counted_kernels = 0;
  double ncu_time_ns = -1, dram_read = -1, dram_write = -1;
  double flops_by_kind[4] = {-1, -1, -1, -1};  // indexed by FlopKind
};

void add_known(double& sum, double v) { sum = std::max(sum, 0.0) + v; }

std::vector<KernelLine> kernel_lines(const ProfileReader& profile) {
  sqlite::Database& db = profile.database();
  std::vector<KernelLine> lines;
  std::unordered_map<std::int64_t, std::size_t> by_name_id;
  {
    // The family of a name is the same for all its launches (it derives from the name).
    sqlite::Statement q(db,
                        "SELECT k.name_id, n.name, min(a.family), count(*), sum(k.duration_ns) "
                        "FROM kernels k JOIN kernel_names n ON n.id = k.name_id "
                        "LEFT JOIN attribution a ON a.kernel_id = k.id "
                        "WHERE k.kind = 'kernel' GROUP BY k.name_id ORDER BY sum(k.duration_ns) DESC, n.name");
    while (q.next()) {
      KernelLine line;
      line.name = q.column_text(1);
      line.family = q.column_text(2);
      line.kernels = static_cast<std::uint64_t>(q.column_int(3));
      line.time_ns = q.column_int(4);
      by_name_id.emplace(q.column_int(0), lines.size());
      lines.push_back(std::move(line));
    }
  }
  {
    sqlite::Statement q(db,
                        "SELECT k.name_id, count(DISTINCT k.id) FROM kernel_metrics km "
                        "JOIN kernels k ON k.id = km.kernel_id WHERE k.kind = 'kernel' GROUP BY k.name_id");
    while (q.next())
      if (auto it = by_name_id.find(q.column_int(0)); it != by_name_id.end())
        lines[it->second].counted_kernels = static_cast<std::uint64_t>(q.column_int(1));
  }
  sqlite::Statement q(db,
                      "SELECT k.name_id, m.name, sum(km.value) FROM kernel_metrics km "
                      "JOIN kernels k ON k.id = km.kernel_id JOIN metrics m ON m.id = km.metric_id "
                      "WHERE k.kind = 'kernel' AND m.aggregate = 'sum' GROUP BY k.name_id, m.id");
  while (q.next()) {
    auto it = by_name_id.find(q.column_int(0));
    if (it == by_name_id.end()) continue;
    KernelLine& line = lines[it->second];
    const std::string metric = q.column_text(1);
    const double v = q.column_double(2);
    if (std::isnan(v)) continue;
    if (metric == "gpu__time_duration.sum") add_known(line.ncu_time_ns, v);
    else if (metric == "dram__bytes_read.sum") add_known(line.dram_read, v);
    else if (metric == "dram__bytes_write.sum") add_known(line.dram_write, v);
    else if (auto counter = flop_counter(metric))
      add_known(line.flops_by_kind[static_cast<int>(counter->first)], counter->second * v);
  }
  return lines;
}

void write_kernel_lines(JsonWriter& j, const std::vector<KernelLine>& lines) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  j.key("kernels").begin_array();
  for (const KernelLine& k : lines) {
    const double dram = k.dram_read >= 0 && k.dram_write >= 0 ? k.dram_read + k.dram_write : kNaN;
    double flops = -1;
    for (double f : k.flops_by_kind)
      if (f >= 0) add_known(flops, f);
    const double tensor = k.flops_by_kind[static_cast<int>(FlopKind::kTensor)];
    const double fp32 = k.flops_by_kind[static_cast<int>(FlopKind::kFp32)];
    // FLOP per ns = GFLOP/s.
    auto rate = [&](double f) { return f >= 0 && k.ncu_time_ns > 0 ? f / k.ncu_time_ns : kNaN; };
    j.begin_object();
    j.fields({{"name", k.name}, {"family", JsonValue::or_null(k.family)}, {"kernels", k.kernels},
              {"time_ns", k.time_ns}, {"counted_kernels", k.counted_kernels}});
    j.fields({{"ncu_time_ns", known(k.ncu_time_ns)}, {"dram_bytes", dram}, {"flops", known(flops)},
              {"tensor_flops", known(tensor)}, {"fp32_flops", known(fp32)}, {"gflops", rate(flops)},
              {"tensor_gflops", rate(tensor)}, {"fp32_gflops", rate(fp32)},
              {"arithmetic_intensity", flops >= 0 && dram > 0 ? flops / dram : kNaN}});
    j.end_object();
  }
  j.end_array();
}

void write_ceilings(JsonWriter& j, const std::map<std::string, std::string>& meta) {
  j.key("ceilings");
  auto device = meta.find("timeline.device.0.name");
  std::optional<GpuCeilings> c;
  if (device != meta.end()) c = builtin_gpu_ceilings(trim(device->second));
  if (!c) {
    j.null();
    return;
  }
  j.begin_object();
  j.fields({{"device", c->device}, {"source", c->source}, {"dram_gbps", c->dram_gbps}, {"fp32_gflops", c->fp32_gflops},
            {"tf32_gflops", c->tf32_gflops}, {"bf16_gflops", c->bf16_gflops}, {"fp8_gflops", c->fp8_gflops}});
  j.end_object();
}

void write_module_node(JsonWriter& j, const ModuleNode& n) {
  j.begin_object();
  j.fields({{"name", n.name}, {"path", n.path}, {"self_ns", n.self_ns}, {"inclusive_ns", n.inclusive_ns},
            {"self_kernels", n.self_kernels}, {"inclusive_kernels", n.inclusive_kernels},
            {"bottleneck", JsonValue::or_null(n.bottleneck)}, {"bottleneck_why", JsonValue::or_null(n.bottleneck_why)}});
  j.key("children").begin_array();
  for (const ModuleNode& c : n.children) write_module_node(j, c);
  j.end_array();
  j.end_object();
}

void write_module_tree(JsonWriter& j, const ModuleTree& tree) {
  j.key("module_tree").begin_object();
  j.fields({{"module_ns", tree.module_ns}, {"no_module_ns", tree.no_module_ns},
            {"no_module_kernels", tree.no_module_kernels}});
  j.key("roots").begin_array();
  for (const ModuleNode& n : tree.roots) write_module_node(j, n);
  j.end_array();
  j.end_object();
}

void write_strings(JsonWriter& j, std::string_view key, const std::vector<std::string>& items) {
  j.key(key).begin_array();
  for (const std::string& s : items) j.string(s);
  j.end_array();
}

}  // namespace

std::string html_report_data(const ProfileReader& profile) {
  ReportOptions all;
  all.top = 0;
  const ReportSummary s = summarize_profile(profile, all);
  JsonWriter j(0);
  j.begin_object();
  j.key("profile").string(s.path);
  j.key("schema_version").integer(s.schema_version);
  j.key("opprof_version").string(OPPROF_VERSION);
  write_capture(j, s.metadata);
  j.key("metadata").begin_object();
  for (const auto& [key, value] : s.metadata) j.key(key).string(value);
  j.end_object();
  write_strings(j, "warnings", s.warnings);
  write_coverage(j, s.coverage);
  write_group_lines(j, "operators", s.operators);
  write_group_lines(j, "modules", s.modules);
  write_module_tree(j, s.module_tree);
  write_group_lines(j, "families", s.families);
  write_kernel_lines(j, kernel_lines(profile));
  write_ceilings(j, s.metadata);
  j.key("unattributed").begin_array();
  for (const UnattributedGroup& u : s.coverage.unattributed)
    j.begin_object()
        .key("family").string(u.family)
        .key("reason").string(u.reason)
        .key("kernels").unsigned_integer(u.kernels)
        .key("time_ns").integer(u.time_ns)
        .end_object();
  j.end_array();
  j.key("opaque").begin_array();
  for (const auto& [backend, ns] : s.coverage.opaque_backends)
    j.begin_object().key("backend").string(backend).key("time_ns").integer(ns).end_object();
  j.end_array();
  j.key("anomalies").begin_array();
  for (const ProfileAnomaly& a : s.anomalies) {
    j.begin_object().key("kind").string(a.kind).key("count").unsigned_integer(a.count);
    write_strings(j, "details", a.details);
    j.end_object();
  }
  j.end_array();
  write_strings(j, "match_notes", s.match_notes);
  j.key("job");
  write_job_json(j, profile);
  j.end_object();
  return j.str();
}

}  // namespace opprof
