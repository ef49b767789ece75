#pragma once
// The event model every timeline source fills and the attribution engine reads: GPU activities
// (kernels, memcpy, memset), the CPU-side API calls that launched them, and named ranges (operators,
// modules, annotations) on CPU threads or GPU streams. Columns, not objects: each table is a set of
// parallel vectors indexed by row, with strings interned in one StringTable.
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "contract/opprof_contract.h"
#include "opprof/timeline/string_table.hpp"
#include "opprof/util/enum_names.hpp"

namespace opprof {

struct Dim3 {
  std::uint32_t x = 0, y = 0, z = 0;
  bool operator==(const Dim3&) const = default;
  bool known() const { return x != 0; }
};

enum class ActivityKind : std::uint8_t { kKernel = 0, kMemcpy = 1, kMemset = 2 };
// The names of the enumerations here are the profile database's spelling too (docs/schema.md).
inline constexpr std::array<const char*, 3> kActivityKindNames = {"kernel", "memcpy", "memset"};
static_assert(kActivityKindNames.size() == static_cast<std::size_t>(ActivityKind::kMemset) + 1);
inline const char* to_string(ActivityKind k) { return enum_name(kActivityKindNames, k); }
inline std::optional<ActivityKind> parse_activity_kind(std::string_view name) {
  return enum_from_name<ActivityKind>(kActivityKindNames, name);
}

inline constexpr std::uint64_t kNoCorrelation = 0;
inline constexpr std::uint64_t kNoGraph = 0;
inline constexpr std::uint32_t kNoIndex = 0xffffffffu;
inline constexpr std::int64_t kNoSequenceNr = -1;

// One row per GPU activity. Times are nanoseconds on the trace's own clock.
struct KernelTable {
  std::vector<ActivityKind> kind;
  std::vector<StrId> name;      // as the source printed it (demangled for torch.profiler)
  std::vector<StrId> mangled;   // kNoString when the source gave none
  std::vector<std::uint32_t> pid;  // process that launched it
  std::vector<std::uint32_t> device;
  std::vector<std::uint32_t> context;
  std::vector<std::uint32_t> stream;
  std::vector<std::int64_t> start_ns;
  std::vector<std::int64_t> end_ns;
  std::vector<Dim3> grid;
  std::vector<Dim3> block;
  std::vector<std::uint64_t> correlation;  // kNoCorrelation when unknown
  std::vector<std::uint64_t> external_id;  // the framework's id of the launching op, 0 when unknown
  std::vector<std::uint64_t> graph_id;     // CUDA graph id, kNoGraph when not launched by a graph
  std::vector<std::uint64_t> graph_node;   // CUDA graph node id, 0 when unknown
  std::vector<std::uint32_t> registers_per_thread;
  std::vector<std::uint32_t> shared_mem_bytes;  // static + dynamic per block
  std::vector<std::uint64_t> bytes;             // memcpy/memset size, 0 for kernels

  std::size_t size() const { return name.size(); }
  std::int64_t duration_ns(std::size_t i) const { return end_ns[i] - start_ns[i]; }
  void reserve(std::size_t n);
  // Appends a row with every column defaulted except the ones given; returns its index.
  std::size_t add(ActivityKind k, StrId kernel_name, std::uint32_t dev, std::uint32_t strm,
                  std::int64_t start, std::int64_t end);
};

// One row per CPU-side API call that launched GPU work (cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync, ...).
struct LaunchTable {
  std::vector<StrId> api;
  std::vector<std::uint32_t> pid;
  std::vector<std::uint64_t> tid;
  std::vector<std::int64_t> cpu_start_ns;
  std::vector<std::int64_t> cpu_end_ns;
  std::vector<std::uint64_t> correlation;
  std::vector<std::uint64_t> external_id;

  std::size_t size() const { return api.size(); }
  void reserve(std::size_t n);
  std::size_t add(StrId api_name, std::uint32_t process, std::uint64_t thread, std::int64_t start,
                  std::int64_t end, std::uint64_t corr);
};

// What a range means to attribution.
enum class RangeKind : std::uint8_t {
  kOperator = 0,        // a framework operator (aten::mm, an Inductor kernel's launcher, ...)
  kModule = 1,          // an nn.Module call; text is the module path (h.3.attn.c_attn)
  kAnnotation = 2,      // a user or library annotation (record_function, NVTX push/pop)
  kCompiledRegion = 3,  // a compiled graph's call ("## Call CompiledFxGraph <hash> ##")
  kCaptureWindow = 4,   // the profiled window
  kOther = 5,           // framework bookkeeping that attributes nothing (profiler spans, python frames)
};
inline constexpr std::array<const char*, 6> kRangeKindNames = {"operator",        "module",         "annotation",
                                                               "compiled_region", "capture_window", "other"};
static_assert(kRangeKindNames.size() == static_cast<std::size_t>(RangeKind::kOther) + 1);
inline const char* to_string(RangeKind k) { return enum_name(kRangeKindNames, k); }

// A forward operator range and the backward range that differentiates it, as the source linked them
// (torch.profiler's "fwdbwd" flow events).
struct AutogradLink {
  std::uint32_t forward_range;
  std::uint32_t backward_range;
};

// Range texts every timeline source recognises, in one place so the readers and the engine agree.
inline constexpr std::string_view kModuleRangePrefix = OPPROF_MODULE_RANGE_PREFIX;  // opprof's module ranges
inline constexpr std::string_view kCompiledGraphCallPrefix = "## Call CompiledFxGraph ";  // + hash + " ##"
inline constexpr std::string_view kCompiledRegionPrefix = "Torch-Compiled Region: ";      // + compile id
// torch.optim's annotation around each optimizer step: "Optimizer.step#AdamW.step".
inline constexpr std::string_view kOptimizerStepPrefix = "Optimizer.step#";
// The autograd engine's range around each backward node it runs: + the node's name ("MmBackward0").
inline constexpr std::string_view kAutogradNodePrefix = "autograd::engine::evaluate_function: ";
// NVTX domain of libopprof_torch_observer.so's operator ranges; the category is the RecordFunction scope + 1,
// and only kTorchUserScopeCategory (record_function ranges) is not an operator.
inline constexpr std::string_view kTorchObserverDomain = OPPROF_NVTX_DOMAIN_TORCH;
inline constexpr std::uint32_t kTorchUserScopeCategory = OPPROF_NVTX_CATEGORY_USER_SCOPE;

// Collective communication's ranges: c10d's operators (c10d::allreduce_), ProcessGroupNCCL / ProcessGroupGloo's
// work titles (nccl:all_reduce, gloo:all_reduce) and record_param_comms. The readers keep their arguments
// (CommunicationArgs); attribute/communication.hpp names their collectives.
inline constexpr std::string_view kParamCommsRange = "record_param_comms";
inline constexpr std::string_view kC10dOperatorPrefix = "c10d::";
inline constexpr std::array<std::string_view, 2> kProcessGroupWorkPrefixes = {"nccl:", "gloo:"};
inline bool is_communication_range(std::string_view text) {
  if (text == kParamCommsRange || text.substr(0, kC10dOperatorPrefix.size()) == kC10dOperatorPrefix) return true;
  for (std::string_view p : kProcessGroupWorkPrefixes)
    if (text.substr(0, p.size()) == p) return true;
  return false;
}

enum class RangeScope : std::uint8_t { kThread = 0, kStream = 1 };
inline constexpr std::array<const char*, 2> kRangeScopeNames = {"thread", "stream"};
static_assert(kRangeScopeNames.size() == static_cast<std::size_t>(RangeScope::kStream) + 1);
inline const char* to_string(RangeScope s) { return enum_name(kRangeScopeNames, s); }

// Where ranges lie: a CPU thread of a process (owner = tid) or a GPU stream (owner = stream, device set).
struct RangeTrack {
  RangeScope scope = RangeScope::kThread;
  std::uint32_t pid = 0;
  std::uint64_t owner = 0;  // tid for thread ranges, stream for stream ranges
  std::uint32_t device = 0;
  bool operator==(const RangeTrack&) const = default;
};

// One row per named interval, on a track. A trace has a few tracks (one per thread and stream) and tens of
// millions of ranges, so a row holds its track's index: 4 bytes where scope, pid, owner and device took 17,
// half a GB of a 10M-kernel trace's 40M ranges.
struct RangeTable {
  std::vector<RangeKind> kind;
  std::vector<std::uint32_t> track;  // index into tracks()
  std::vector<StrId> text;
  std::vector<StrId> domain;  // NVTX domain or the trace's category ("cpu_op", "user_annotation")
  std::vector<std::int64_t> start_ns;
  std::vector<std::int64_t> end_ns;
  std::vector<std::uint64_t> external_id;
  std::vector<std::int32_t> depth;  // nesting depth among ranges of the same track; -1 until computed
  // Autograd's link between a forward operator and the backward node that differentiates it: the
  // operator's sequence number (kNoSequenceNr when it has none), and for a backward range the
  // RecordFunction thread id of the forward thread (torch.profiler's "Fwd thread id"; 0 on forward ranges).
  std::vector<std::int64_t> sequence_nr;
  std::vector<std::uint64_t> forward_thread;

  std::size_t size() const { return text.size(); }
  void reserve(std::size_t n);
  std::size_t add(RangeKind k, RangeScope s, StrId txt, StrId dom, std::uint32_t process, std::uint64_t own,
                  std::int64_t start, std::int64_t end, std::uint32_t dev = 0);

  const RangeTrack& track_of(std::size_t i) const { return tracks_[track[i]]; }
  RangeScope scope(std::size_t i) const { return track_of(i).scope; }
  std::uint32_t pid(std::size_t i) const { return track_of(i).pid; }
  std::uint64_t owner(std::size_t i) const { return track_of(i).owner; }
  std::uint32_t device(std::size_t i) const { return track_of(i).device; }
  const std::vector<RangeTrack>& tracks() const { return tracks_; }
  // The track's index, added when new.
  std::uint32_t track_id(const RangeTrack& t);
  // Moves row i to the track of another process that is otherwise its track.
  void set_pid(std::size_t i, std::uint32_t process);

 private:
  struct TrackHash {
    std::size_t operator()(const RangeTrack& t) const noexcept {
      return std::hash<std::uint64_t>{}((t.owner * 0x9E3779B97F4A7C15ull) ^ (std::uint64_t{t.pid} << 20) ^
                                        (std::uint64_t{t.device} << 4) ^ static_cast<std::uint64_t>(t.scope));
    }
  };
  std::vector<RangeTrack> tracks_;
  std::unordered_map<RangeTrack, std::uint32_t, TrackHash> track_ids_;
  std::uint32_t last_track_ = kNoIndex;  // ranges come in runs of one track: checked before the map
};

// What the trace says about one collective, on the range that carries it: torch.profiler's
// record_param_comms arguments, the Input Dims / Input type of a gloo:*, nccl:* or c10d::* range recorded
// with record_shapes, or the tracer's communication mark inside a gloo:* / nccl:* range
// (OPPROF_COMM_ARGS_MARK). Sorted by range, at most one per range.
struct CommunicationArgs {
  std::uint32_t range = kNoIndex;  // into ranges
  std::int64_t elements = -1;      // elements of the input tensors; -1 unknown
  std::int64_t bytes = -1;         // their bytes; -1 unknown (no dtype of known size)
  StrId dtype = kNoString;         // as the source names it ("float", "Float", "BFloat16")
  StrId process_group = kNoString;       // the process group's name ("0"), when the source gives it
  StrId process_group_desc = kNoString;  // its description ("default_pg")
  std::int32_t group_size = -1;          // ranks in the group; -1 unknown
  StrId collective = kNoString;          // record_param_comms's collective ("allreduce"), which its name does not say
};

// A process group a process had when it was captured (torch.profiler's distributedInfo.pg_config, or
// the mark opprof's capture writes at the window's start: OPPROF_PROCESS_GROUP_MARK).
struct ProcessGroup {
  std::uint32_t pid = 0;  // the process; 0 when the source does not say (a single-process trace)
  StrId name = kNoString, desc = kNoString, backend = kNoString;
  std::int32_t size = -1;
  StrId ranks = kNoString;  // its global ranks, "0,1"
};

// A whole capture: what a reader produced. metadata holds facts about the capture (source format,
// GPU name, clocks, torch version) as key/value text.
struct Timeline {
  StringTable strings;
  KernelTable kernels;
  LaunchTable launches;
  RangeTable ranges;
  std::vector<AutogradLink> autograd_links;
  std::vector<CommunicationArgs> communication_args;
  std::vector<ProcessGroup> process_groups;
  std::map<std::string, std::string> metadata;

  std::string_view str(StrId id) const { return strings.view(id); }
};

// Bounds every reader's times are held to after reading, so that the engine's arithmetic on them cannot
// overflow: the difference of any two times fits in int64, and so does any sum of kernel durations (per
// operator, per rank, per job). 2^62 ns is 146 years: no real trace comes near either.
inline constexpr std::int64_t kMaxTimelineTimeNs = (std::int64_t{1} << 62) - 1;  // |time| at most this
inline constexpr std::int64_t kMaxTotalDurationNs = std::int64_t{1} << 62;        // of all GPU activities

// Throws InputError (naming source) for a GPU activity, launch or range outside ±kMaxTimelineTimeNs, a GPU
// activity that ends before it starts, or GPU activities whose durations add up past kMaxTotalDurationNs.
void check_timeline_times(const Timeline& tl, const std::string& source);

}  // namespace opprof
