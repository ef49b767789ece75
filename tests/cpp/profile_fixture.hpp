#pragma once
// A small, hand-built profile for the store and report tests: a Timeline, its attribution, ncu rows and
// their match, per-kernel counters, aggregates and coverage, with every figure chosen so that the
// expected percentages are easy to check by hand. Kernel time is 6000 ns:
//   k0 ampere_sgemm    2000 ns  correlation  aten::mm         h.0.mlp.c_fc    ncu row 0
//   k1 triton fused     500 ns  fusion       triton launcher  h.0.mlp.act     ncu row 2
//   k2 ampere_sgemm    2000 ns  correlation  aten::mm         h.0.mlp.c_proj  ncu row 1
//   k3 elementwise      200 ns  enclosure    aten::add        (no module)
//   k4 mystery_kernel   300 ns  unattributed
//   k5 memcpy           500 ns  (not a kernel: outside kernel time)
//   k6 cuDNN LSTM      1000 ns  correlation  aten::_cudnn_rnn (opaque: cuDNN RNN)
// ncu row 3 matches no kernel.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "opprof/attribute/attribution.hpp"
#include "opprof/ingest/ncu_csv.hpp"
#include "opprof/match/ncu_match.hpp"
#include "opprof/metrics/aggregate.hpp"
#include "opprof/store/profile_db.hpp"
#include "opprof/timeline/timeline.hpp"

namespace opprof::testing {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A fresh directory under the system's temp directory, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "opprof-test-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Names of the directory's entries, sorted.
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::filesystem::path path_;
};

// SQL that edits a profile's interned text (schema version 5) as a user would: intern_sql(t) adds the
// string t to the strings table unless it is there; string_id_sql(t) is the expression of its id. t must
// not contain a quote.
inline std::string intern_sql(const std::string& text) {
  return "INSERT INTO strings (id, text) SELECT (SELECT COALESCE(max(id), -1) + 1 FROM strings), '" + text +
         "' WHERE NOT EXISTS (SELECT 1 FROM strings WHERE text = '" + text + "');";
}
inline std::string string_id_sql(const std::string& text) {
  return "(SELECT min(id) FROM strings WHERE text = '" + text + "')";
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct TestProfile {
  Timeline tl;
  AttributionTable attr;
  NcuTable ncu;
  NcuMatch match;
  KernelMetrics km;
  Aggregates agg;
  Coverage cov;
  std::map<std::string, std::string> metadata;

  ProfileInputs inputs(bool with_ncu = true) const {
    ProfileInputs in;
    in.timeline = &tl;
    in.attribution = &attr;
    in.aggregates = &agg;
    in.coverage = &cov;
    if (with_ncu) {
      in.kernel_metrics = &km;
      in.ncu = &ncu;
      in.match = &match;
    }
    in.metadata = metadata;
    return in;
  }

  // One attribution row; strings are interned here so that callers write plain text.
  void attribute(AttributionPath path, float confidence, std::uint32_t op_range, const char* op, const char* top_op,
                 const char* module, ModuleSource module_source, const char* family, const char* reason = "",
                 const char* opaque_backend = "", const char* fused_ops = "", const char* fx_nodes = "",
                 const char* handle = "", const char* source_line = "") {
    auto s = [&](const char* t) { return *t ? tl.strings.intern(t) : kNoString; };
    attr.path.push_back(path);
    attr.confidence.push_back(confidence);
    attr.op_range.push_back(op_range);
    attr.op.push_back(s(op));
    attr.top_op.push_back(s(top_op));
    attr.module.push_back(s(module));
    attr.module_source.push_back(module_source);
    attr.fused_ops.push_back(s(fused_ops));
    attr.fx_nodes.push_back(s(fx_nodes));
    attr.provenance_handle.push_back(s(handle));
    attr.source_line.push_back(s(source_line));
    attr.family.push_back(s(family));
    attr.reason.push_back(s(reason));
    attr.opaque.push_back(*opaque_backend ? 1 : 0);
    attr.opaque_backend.push_back(s(opaque_backend));
    attr.phase.push_back(path == AttributionPath::kNone && !*module ? Phase::kOther : Phase::kForward);
    attr.forward_op.push_back(kNoString);
  }
};

inline GroupStats group(const std::string& key, std::uint64_t kernels, std::int64_t time_ns, std::vector<double> metric,
                        double dram_gbps, const std::string& bottleneck, const std::string& fused_ops = "") {
  GroupStats g;
  g.key = key;
  g.fused_ops = fused_ops;
  g.kernels = kernels;
  g.time_ns = time_ns;
  g.time_share = static_cast<double>(time_ns) / 6000.0;
  g.metric = std::move(metric);
  bool counted = !g.metric.empty() && std::isfinite(g.metric[0]);
  g.counted_time_ns = counted ? time_ns : 0;
  g.dram_bandwidth_gbps = dram_gbps;
  g.dram_bytes = dram_gbps < 0 ? -1 : dram_gbps * 1000.0;
  g.flops = counted ? 1.0e6 : -1;
  g.arithmetic_intensity = counted && g.dram_bytes > 0 ? g.flops / g.dram_bytes : -1;
  g.bottleneck = bottleneck;
  g.bottleneck_why = bottleneck.empty() ? "" : "figures for " + key;
  return g;
}

inline void build_test_profile(TestProfile& p) {
  Timeline& tl = p.tl;
  auto& S = tl.strings;
  tl.metadata = {{"source", "kineto"}, {"device.0.name", "NVIDIA H200"}, {"clocks_locked", "false"}};
  p.metadata = {{"inputs.trace", "run/trace.json"}, {"created_at", "2025-01-02T03:04:05Z"}};

  StrId sgemm = S.intern("ampere_sgemm_128x64_nn");
  StrId sgemm_mangled = S.intern("_Z22ampere_sgemm_128x64_nnv");
  StrId triton = S.intern("triton_poi_fused_add_gelu_0");
  StrId elementwise = S.intern("void at::native::elementwise_kernel<128, 4>(int, \"add\")");
  StrId mystery = S.intern("mystery_kernel");
  StrId memcpy_name = S.intern("Memcpy HtoD (Pageable -> Device)");
  StrId lstm = S.intern("RNN_blockPersist_fp_LSTM");

  KernelTable& k = tl.kernels;
  auto add = [&](ActivityKind kind, StrId name, std::int64_t start, std::int64_t end) {
    std::size_t i = k.add(kind, name, 0, 7, start, end);
    k.pid[i] = 4242;
    if (kind == ActivityKind::kKernel) {
      k.grid[i] = {128, 2, 1};
      k.block[i] = {256, 1, 1};
      k.registers_per_thread[i] = 64;
      k.shared_mem_bytes[i] = 16384;
    }
    return i;
  };
  add(ActivityKind::kKernel, sgemm, 1000, 3000);         // k0
  add(ActivityKind::kKernel, triton, 3000, 3500);        // k1
  add(ActivityKind::kKernel, sgemm, 4000, 6000);         // k2
  add(ActivityKind::kKernel, elementwise, 6000, 6200);   // k3
  add(ActivityKind::kKernel, mystery, 7000, 7300);       // k4
  add(ActivityKind::kMemcpy, memcpy_name, 100, 600);     // k5
  add(ActivityKind::kKernel, lstm, 8000, 9000);          // k6
  k.mangled[0] = k.mangled[2] = sgemm_mangled;
  k.bytes[5] = 4096;
  k.correlation[0] = 11;
  k.correlation[2] = 12;
  k.correlation[6] = 13;
  k.external_id[0] = 501;
  k.graph_id[1] = 3;
  k.graph_node[1] = 9;

  StrId launch_api = S.intern("cudaLaunchKernel");
  tl.launches.add(launch_api, 4242, 77, 900, 950, 11);
  tl.launches.add(launch_api, 4242, 77, 3900, 3950, 12);
  tl.launches.add(launch_api, 4242, 77, 7900, 7950, 13);
  tl.launches.external_id[0] = 501;

  StrId cpu_op = S.intern("cpu_op");
  tl.ranges.add(RangeKind::kOperator, RangeScope::kThread, S.intern("aten::mm"), cpu_op, 4242, 77, 800, 1000);   // r0
  tl.ranges.add(RangeKind::kModule, RangeScope::kThread, S.intern("h.0.mlp.c_fc"), kNoString, 4242, 77, 700, 1100);
  tl.ranges.add(RangeKind::kOperator, RangeScope::kStream, S.intern("aten::add"), cpu_op, 4242, 7, 5900, 6300);  // r2
  tl.ranges.add(RangeKind::kOperator, RangeScope::kThread, S.intern("aten::_cudnn_rnn"), cpu_op, 4242, 77, 7800, 9100);
  tl.ranges.depth[0] = 1;
  tl.ranges.external_id[0] = 501;

  p.attribute(AttributionPath::kCorrelation, 1.0f, 0, "aten::mm", "aten::linear", "h.0.mlp.c_fc",
              ModuleSource::kThreadRange, "ampere_sgemm");
  p.attribute(AttributionPath::kFusion, 0.9f, kNoIndex, "triton_poi_fused_add_gelu_0", "", "h.0.mlp.act",
              ModuleSource::kFxProvenance, "triton_poi_fused_add_gelu", "", "", "aten::add, aten::gelu", "add, gelu",
              "triton_poi_fused_add_gelu_0:1", "model.py:12 in forward");
  p.attribute(AttributionPath::kCorrelation, 1.0f, kNoIndex, "aten::mm", "aten::linear", "h.0.mlp.c_proj",
              ModuleSource::kThreadRange, "ampere_sgemm");
  p.attribute(AttributionPath::kEnclosure, 0.75f, 2, "aten::add", "aten::add", "", ModuleSource::kNone,
              "at::native::elementwise_kernel");
  p.attribute(AttributionPath::kNone, 0.0f, kNoIndex, "", "", "", ModuleSource::kNone, "mystery_kernel",
              "no launch and no enclosing range");
  p.attribute(AttributionPath::kNone, 0.0f, kNoIndex, "", "", "", ModuleSource::kNone, "Memcpy HtoD",
              "memcpy without a launch");
  p.attribute(AttributionPath::kCorrelation, 1.0f, 3, "aten::_cudnn_rnn", "aten::lstm", "", ModuleSource::kNone,
              "RNN_blockPersist_fp_LSTM", "", "cuDNN RNN");

  // ncu: rows 0..2 match k0, k2, k1; row 3 matches nothing.
  NcuTable& ncu = p.ncu;
  ncu.path = "run/ncu.csv.gz";
  ncu.metric_names = {"gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                      "dram__throughput.avg.pct_of_peak_sustained_elapsed",
                      "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                      "sm__warps_active.avg.pct_of_peak_sustained_active"};
  ncu.metric_units = {"ns", "%", "%", "%", "%"};
  const char* ncu_names[] = {"ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn", "triton_poi_fused_add_gelu_0",
                             "unknown_kernel"};
  for (std::uint32_t r = 0; r < 4; ++r) {
    ncu.id.push_back(r + 1);
    ncu.pid.push_back(4242);
    ncu.kernel_name.push_back(ncu_names[r]);
    ncu.context.push_back(1);
    ncu.stream.push_back(7);
    ncu.device.push_back(0);
    ncu.grid.push_back({128, 2, 1});
    ncu.block.push_back({256, 1, 1});
    ncu.line.push_back(r + 2);
  }
  ncu.values = {1900, 40, 30, 0, 50,  //
                1950, 42, 32, 0, 52,  //
                480, 20, 85, 0, 70,   //
                10, 1, 1, 0, 10};

  NcuMatch& m = p.match;
  m.ncu_row_for_kernel = {0, 2, 1, kNoIndex, kNoIndex, kNoIndex, kNoIndex};
  m.kernel_for_ncu_row = {0, 2, 1, kNoIndex};
  m.launch_config_kernel_for_ncu_row = {kNoIndex, kNoIndex, kNoIndex, kNoIndex};
  m.matched = 3;
  m.unmatched_rows = {3};
  m.unmatched_kernels = {3, 4, 6};
  m.notes = {"ncu row 3 (unknown_kernel) has no timeline kernel of that identity"};

  KernelMetrics& km = p.km;
  auto spec = [](const char* name, Aggregate a, const char* axis) {
    MetricSpec s;
    s.name = name;
    s.aggregate = a;
    s.axis = axis;
    s.arch = "*";
    s.reason = std::string("why ") + name;
    return s;
  };
  km.metrics = {spec("gpu__time_duration.sum", Aggregate::kSum, "time"),
                spec("sm__throughput.avg.pct_of_peak_sustained_elapsed", Aggregate::kWeightedMean, "compute"),
                spec("dram__throughput.avg.pct_of_peak_sustained_elapsed", Aggregate::kWeightedMean, "dram"),
                spec("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                     Aggregate::kWeightedMean, "tensor"),
                spec("sm__warps_active.avg.pct_of_peak_sustained_active", Aggregate::kWeightedMean, "occupancy")};
  km.units = {"ns", "%", "%", "%", "%"};
  km.missing = {"lts__t_sector_hit_rate.pct"};
  km.kernels = k.size();
  km.values.assign(km.kernels * km.metrics.size(), kNaN);
  for (std::size_t kernel = 0; kernel < k.size(); ++kernel) {
    std::uint32_t row = m.ncu_row_for_kernel[kernel];
    if (row == kNoIndex) continue;
    for (std::size_t j = 0; j < km.metrics.size(); ++j) km.values[kernel * 5 + j] = ncu.value(row, j);
  }
  km.values[1 * 5 + 3] = kNaN;  // the Triton kernel's row lacks the tensor metric

  p.agg.operators = {group("aten::mm", 2, 4000, {3850, 41, 31, 0, 51}, 1200.5, "tensor pipe idle"),
                     group("aten::_cudnn_rnn", 1, 1000, {kNaN, kNaN, kNaN, kNaN, kNaN}, -1, ""),
                     group("triton_poi_fused_add_gelu_0", 1, 500, {480, 20, 85, kNaN, 70}, 2900, "dram bandwidth",
                           "aten::add, aten::gelu"),
                     group("aten::add", 1, 200, {}, -1, "")};
  p.agg.modules = {group("h.0.mlp.c_fc", 1, 2000, {1900, 40, 30, 0, 50}, 1100, "tensor pipe idle"),
                   group("h.0.mlp.c_proj", 1, 2000, {1950, 42, 32, 0, 52}, 1150, "tensor pipe idle"),
                   group("h.0.mlp.act", 1, 500, {480, 20, 85, kNaN, 70}, 2900, "dram bandwidth")};
  p.agg.families = {group("ampere_sgemm", 2, 4000, {3850, 41, 31, 0, 51}, 1200.5, "tensor pipe idle")};

  Coverage& c = p.cov;
  c.kernel_time_ns = 6000;
  c.kernels = 6;
  c.attributed_ns = 5700;
  c.module_attributed_ns = 4500;
  c.opaque_ns = 1000;
  c.by_path_ns[static_cast<int>(AttributionPath::kNone)] = 300;
  c.by_path_ns[static_cast<int>(AttributionPath::kCorrelation)] = 5000;
  c.by_path_ns[static_cast<int>(AttributionPath::kEnclosure)] = 200;
  c.by_path_ns[static_cast<int>(AttributionPath::kFusion)] = 500;
  c.unattributed = {{"mystery_kernel", "no launch and no enclosing range", 1, 300}};
  c.opaque_backends = {{"cuDNN RNN", 1000}};
  c.has_ncu = true;
  c.ncu_rows = 4;
  c.ncu_matched = 3;
  c.ncu_unmatched_rows = 1;
  c.ncu_unmatched_kernels = 3;
}

}  // namespace opprof::testing
