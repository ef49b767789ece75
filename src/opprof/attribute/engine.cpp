#include "opprof/attribute/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "opprof/attribute/fusion.hpp"
#include "opprof/attribute/interval_index.hpp"
#include "opprof/attribute/kernel_family.hpp"
#include "opprof/attribute/phases.hpp"
#include "opprof/attribute/range_indexes.hpp"

namespace opprof {

void AttributionTable::resize(std::size_t n) {
  path.assign(n, AttributionPath::kNone);
  confidence.assign(n, 0.0f);
  op_range.assign(n, kNoIndex);
  op.assign(n, kNoString);
  top_op.assign(n, kNoString);
  module.assign(n, kNoString);
  module_source.assign(n, ModuleSource::kNone);
  fused_ops.assign(n, kNoString);
  fx_nodes.assign(n, kNoString);
  provenance_handle.assign(n, kNoString);
  source_line.assign(n, kNoString);
  family.assign(n, kNoString);
  reason.assign(n, kNoString);
  opaque.assign(n, 0);
  opaque_backend.assign(n, kNoString);
  phase.assign(n, Phase::kOther);
  forward_op.assign(n, kNoString);
}

namespace {

// Stream key: device and stream in one integer.
std::uint64_t stream_key(std::uint32_t device, std::uint64_t stream) { return (std::uint64_t{device} << 48) ^ stream; }

struct StreamIndexes {
  IntervalIndex ops;      // operator and annotation ranges on the stream
  bool has_operators = false;  // ops holds operator ranges, not only annotations
  IntervalIndex modules;  // module ranges on the stream, native or projected
  IntervalIndex regions;  // compiled regions on the stream: the coarsest fallback
};

// Reasons are few fixed texts so that unattributed kernels group by reason in reports.
constexpr std::string_view kReasonNoCorrelation = "the kernel carries no correlation id and no stream range encloses it";
constexpr std::string_view kReasonNoLaunch = "no launch record for its correlation id and no stream range encloses it";
constexpr std::string_view kReasonOutsideOps =
    "its launch is outside every operator range on the launching thread and no stream range encloses it";
constexpr std::string_view kReasonInCompiledCall =
    "launched by a compiled graph's call with no operator range around the launch (a CUDA graph replay): "
    "Inductor's debug directory (--inductor) names its kernels";

// Whether an annotation around a launch also encloses the compiled graph's call around it (region, null when
// none): then it says nothing about the kernel that the graph's call does not say better.
bool encloses_compiled_call(const IntervalIndex::Interval& annotation, const IntervalIndex::Interval* region) {
  return region && annotation.start <= region->start && region->end <= annotation.end;
}

}  // namespace

AttributionTable attribute_timeline(Timeline& tl, const InductorArtifacts* inductor, const AttributionOptions& opt,
                                    AttributionNotes* notes) {
  const KernelTable& k = tl.kernels;
  const RangeTable& r = tl.ranges;
  const LaunchTable& l = tl.launches;
  const std::size_t n = k.size();
  AttributionTable a;
  a.resize(n);

  // Per-thread interval indexes of operator, module and region ranges; per-stream ones of stream ranges.
  const ThreadRangeIndexes threads = build_thread_range_indexes(tl);
  std::unordered_map<std::uint64_t, StreamIndexes> streams;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (r.scope(i) != RangeScope::kStream) continue;
    auto id = static_cast<std::uint32_t>(i);
    StreamIndexes& s = streams[stream_key(r.device(i), r.owner(i))];
    switch (r.kind[i]) {
      case RangeKind::kOperator:
        s.has_operators = true;
        [[fallthrough]];
      case RangeKind::kAnnotation: s.ops.add(r.start_ns[i], r.end_ns[i], id); break;
      case RangeKind::kModule: s.modules.add(r.start_ns[i], r.end_ns[i], id); break;
      case RangeKind::kCompiledRegion: s.regions.add(r.start_ns[i], r.end_ns[i], id); break;
      default: break;
    }
  }

  // (correlation id, launch) by correlation id, the first launch of an id first: 16 bytes a launch, where
  // a hash map of ten million launches took 400 MB. Launches mostly come in correlation order already.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> launch_by_correlation;
  launch_by_correlation.reserve(l.size());
  for (std::size_t i = 0; i < l.size(); ++i)
    if (l.correlation[i] != kNoCorrelation) launch_by_correlation.emplace_back(l.correlation[i], static_cast<std::uint32_t>(i));
  const auto by_correlation = [](const auto& x, const auto& y) { return x.first < y.first; };
  if (!std::is_sorted(launch_by_correlation.begin(), launch_by_correlation.end(), by_correlation))
    std::stable_sort(launch_by_correlation.begin(), launch_by_correlation.end(), by_correlation);
  const auto launch_with = [&](std::uint64_t correlation) -> std::uint32_t {
    auto it = std::lower_bound(launch_by_correlation.begin(), launch_by_correlation.end(),
                               std::pair<std::uint64_t, std::uint32_t>{correlation, 0}, by_correlation);
    return it != launch_by_correlation.end() && it->first == correlation ? it->second : kNoIndex;
  };

  const StrId reason_no_corr = tl.strings.intern(kReasonNoCorrelation);
  const StrId reason_no_launch = tl.strings.intern(kReasonNoLaunch);
  const StrId reason_outside = tl.strings.intern(kReasonOutsideOps);
  const StrId reason_in_compiled_call = tl.strings.intern(kReasonInCompiledCall);

  std::vector<std::uint8_t>* on_path = notes ? &notes->operator_on_launch_path : nullptr;
  if (on_path) on_path->assign(r.size(), 0);

  // Path 1: correlation. Also remembers each kernel's thread module range for the projection below.
  std::vector<std::uint32_t> launch_of(n, kNoIndex);
  std::vector<std::uint32_t> thread_module_of(n, kNoIndex);
  PerStringMemo<StrId> backend_of_op(tl.strings.size());  // operator name -> its opaque backend, kNoString if none
  // The last kernel looked up by its launch, and that launch's correlation id.
  std::uint64_t previous_correlation = kNoCorrelation;
  std::size_t previous_kernel = 0;
  // What this path sets from the launch alone, from the kernel before of the same launch.
  auto copy_launch_attribution = [&](std::size_t from, std::size_t to) {
    a.path[to] = a.path[from];
    a.confidence[to] = a.confidence[from];
    a.op_range[to] = a.op_range[from];
    a.op[to] = a.op[from];
    a.top_op[to] = a.top_op[from];
    a.reason[to] = a.reason[from];
    a.opaque[to] = a.opaque[from];
    a.opaque_backend[to] = a.opaque_backend[from];
    a.module[to] = a.module[from];
    a.module_source[to] = a.module_source[from];
    thread_module_of[to] = thread_module_of[from];
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (k.correlation[i] == kNoCorrelation) {
      a.reason[i] = reason_no_corr;
      continue;
    }
    // A CUDA graph's kernels share one launch and follow each other in the table: the launch and the ranges
    // around it are looked up once (a reduce-overhead step replays a hundred kernels a launch).
    if (k.correlation[i] == previous_correlation) {
      launch_of[i] = launch_of[previous_kernel];
      copy_launch_attribution(previous_kernel, i);
      continue;
    }
    const std::uint32_t li = launch_with(k.correlation[i]);
    if (li == kNoIndex) {
      a.reason[i] = reason_no_launch;
      continue;
    }
    launch_of[i] = li;
    previous_correlation = k.correlation[i];
    previous_kernel = i;
    const ThreadRangeIndexes::PerThread* th = threads.find(l.pid[li], l.tid[li]);
    if (!th) {
      a.reason[i] = reason_outside;
      continue;
    }
    const std::int64_t t = l.cpu_start_ns[li];
    // One descent finds the innermost and outermost operator and marks every operator around the launch.
    const auto ops = th->ops.innermost_and_outermost(t, t, [&](const IntervalIndex::Interval& iv) {
      if (on_path) (*on_path)[iv.id] = 1;
      const StrId name = r.text[iv.id];
      const StrId backend = backend_of_op.get(name, [&] {
        std::string_view listed = opt.opaque.backend_of(tl.str(name));
        return listed.empty() ? kNoString : tl.strings.intern(listed);
      });
      if (backend == kNoString) return;
      a.opaque[i] = 1;
      a.opaque_backend[i] = backend;
    });
    if (ops.inner) {
      const auto* op = ops.inner;
      a.path[i] = AttributionPath::kCorrelation;
      a.confidence[i] = confidence::kOperatorAroundLaunch;
      a.op_range[i] = op->id;
      a.op[i] = r.text[op->id];
      a.top_op[i] = r.text[ops.outer->id];
    } else {
      // No framework operator around the launch: a program's own NVTX ranges (a CUDA C++ program,
      // a library's markers) name the work instead, unless they only enclose the compiled graph's call
      // that launched it (torch.profiler's ProfilerStep#N around a CUDA graph's replay): only the graph's
      // own calls, from Inductor's directory, name those kernels.
      const IntervalIndex::Interval* region = th->regions.innermost(t, t);
      if (const auto ann = th->annotations.innermost_and_outermost(t, t);
          ann.inner && !encloses_compiled_call(*ann.inner, region)) {
        a.path[i] = AttributionPath::kCorrelation;
        a.confidence[i] = confidence::kAnnotationAroundLaunch;
        a.op_range[i] = ann.inner->id;
        a.op[i] = r.text[ann.inner->id];
        a.top_op[i] = r.text[ann.outer->id];
        if (on_path) (*on_path)[ann.inner->id] = 1;
      } else {
        a.reason[i] = region ? reason_in_compiled_call : reason_outside;
      }
    }
    if (const auto* mod = th->modules.innermost(t, t)) {
      a.module[i] = r.text[mod->id];
      a.module_source[i] = ModuleSource::kThreadRange;
      thread_module_of[i] = mod->id;
    }
  }

  // Path 1 was the last to look launches up by correlation id.
  std::vector<std::pair<std::uint64_t, std::uint32_t>>().swap(launch_by_correlation);

  // Project thread module ranges onto the streams their kernels ran on: the GPU-side span of each
  // (module range, stream) pair becomes a stream range. A range's spans are a chain from span_of_range,
  // one link per stream (nearly always one): 4 bytes a range where a hash map of (range, stream) took
  // about 40 bytes a module range, 300 MB of a 10M-kernel trace.
  {
    struct Span {
      std::int64_t start, end;
      std::uint64_t stream;
      std::uint32_t range;
      std::uint32_t next;  // the range's span on another stream, kNoIndex at the chain's end
    };
    std::vector<std::uint32_t> span_of_range(r.size(), kNoIndex);
    std::vector<Span> spans;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t m = thread_module_of[i];
      if (m == kNoIndex) continue;
      const std::uint64_t sk = stream_key(k.device[i], k.stream[i]);
      std::uint32_t j = span_of_range[m];
      while (j != kNoIndex && spans[j].stream != sk) j = spans[j].next;
      if (j == kNoIndex) {
        spans.push_back({k.start_ns[i], k.end_ns[i], sk, m, span_of_range[m]});
        span_of_range[m] = static_cast<std::uint32_t>(spans.size() - 1);
      } else {
        spans[j].start = std::min(spans[j].start, k.start_ns[i]);
        spans[j].end = std::max(spans[j].end, k.end_ns[i]);
      }
    }
    std::vector<std::uint32_t>().swap(span_of_range);
    std::vector<std::uint32_t>().swap(thread_module_of);
    for (const Span& s : spans) streams[s.stream].modules.add(s.start, s.end, s.range);
  }
  for (auto& [key, s] : streams) {
    s.ops.build();
    s.modules.build();
    s.regions.build();
  }

  // Path 2: enclosure, for kernels correlation left without an operator or a module, and for kernels a
  // CUDA graph replayed: correlation leads those to the graph launch, while the ranges a tracer put on
  // their stream from the moment their node was captured name the operator that made them.
  for (std::size_t i = 0; i < n; ++i) {
    const bool replayed = k.graph_id[i] != kNoGraph;
    bool need_op = a.path[i] == AttributionPath::kNone || replayed;
    bool need_module = a.module[i] == kNoString || replayed;
    if (!need_op && !need_module) continue;
    auto st = streams.find(stream_key(k.device[i], k.stream[i]));
    if (st == streams.end()) continue;
    const std::int64_t s0 = k.start_ns[i], s1 = k.end_ns[i];
    if (need_op) {
      // An annotation on the stream around a kernel launched by a compiled graph's call (the GPU side of a
      // ProfilerStep#N around a CUDA graph's replay) is no more its operator than the CPU side is; where the
      // stream has annotations only, the question is not asked for each of the replay's kernels.
      const bool annotations_name_it = a.reason[i] != reason_in_compiled_call;
      const auto* op = annotations_name_it || st->second.has_operators ? st->second.ops.innermost(s0, s1) : nullptr;
      if (op && !annotations_name_it && r.kind[op->id] == RangeKind::kAnnotation) op = nullptr;
      if (op) {
        a.path[i] = AttributionPath::kEnclosure;
        a.confidence[i] = confidence::kRangeOnStream;
        a.op_range[i] = op->id;
        if (on_path) (*on_path)[op->id] = 1;
        a.op[i] = r.text[op->id];
        a.top_op[i] = r.text[st->second.ops.outermost(s0, s1)->id];
        a.reason[i] = kNoString;
      } else if (a.path[i] != AttributionPath::kNone) {
        // A replayed kernel without capture-time ranges keeps what correlation found.
      } else if (const auto* region = st->second.regions.innermost(s0, s1)) {
        // Only the compiled region encloses it: right about where it ran, vague about what it was.
        a.path[i] = AttributionPath::kEnclosure;
        a.confidence[i] = confidence::kCompiledRegionOnStream;
        a.op_range[i] = region->id;
        a.op[i] = r.text[region->id];
        a.reason[i] = kNoString;
      }
    }
    if (need_module) {
      if (const auto* mod = st->second.modules.innermost(s0, s1)) {
        a.module[i] = r.text[mod->id];
        a.module_source[i] = ModuleSource::kStreamRange;
      }
    }
  }

  // Path 3: fusion.
  if (inductor && !inductor->graphs.empty()) apply_fusion(tl, *inductor, threads, launch_of, opt, a, notes);

  // Phases last: a backward kernel keeps the module its FX provenance gave it.
  assign_phases(tl, threads, launch_of, a, notes);

  // Families for every activity; memcpy and memset are their own families.
  PerStringMemo<StrId> family_of_name(tl.strings.size());
  const StrId memcpy_family = tl.strings.intern("[memcpy]");
  const StrId memset_family = tl.strings.intern("[memset]");
  for (std::size_t i = 0; i < n; ++i) {
    if (k.kind[i] == ActivityKind::kMemcpy) {
      a.family[i] = memcpy_family;
      continue;
    }
    if (k.kind[i] == ActivityKind::kMemset) {
      a.family[i] = memset_family;
      continue;
    }
    a.family[i] = family_of_name.get(k.name[i], [&] { return tl.strings.intern(kernel_family(tl.str(k.name[i]))); });
  }
  return a;
}

}  // namespace opprof
