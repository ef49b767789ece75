#pragma once
// The dedup plan (docs/dedup.md): from pass A's attributed timeline, which kernels pass B replays and from
// which replayed kernel every other kernel gets its counters.
//   layers   per structural class (structure_file.hpp) the first instance is the representative; each
//            instance's kernels (forward and, in training, backward: attribution gives backward kernels
//            their forward module) in launch order. An instance whose kernel sequence (name, grid, block)
//            equals the representative's takes its counters position by position; one that differs is
//            replayed in full and reported. Replayed: the representatives' kernels and every kernel
//            outside classes of more than one instance.
//   kernels  kernel-signature dedup across the window: the first launches of each signature (name, grid,
//            block, shared memory per block: the launch configuration ncu's per-launch-config filter
//            groups by) are replayed, every later launch of it takes the counters of the first replayed
//            launch that did the same work. One configuration can do different work: a GEMM of the same
//            output tiles over a 4x longer reduction (BERT's backward, H100: ~45 vs ~170 us, 4x the DRAM
//            reads). Pass A's durations tell these work variants apart (kVariantTolerance), and ncu's
//            --launch-count (per configuration) is raised until each variant of real weight has a replayed
//            launch; a lighter variant left out takes another variant's counters and is counted.
// verify K also replays K duplicates in full per class (per signature), to measure how far propagated
// counters are from measured ones (dedup_verify.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "opprof/attribute/attribution.hpp"
#include "opprof/dedup/structure_file.hpp"
#include "opprof/timeline/timeline.hpp"
#include "opprof/util/enum_names.hpp"

namespace opprof {

// ranks: a multi-process job whose pass B replayed only some ranks (plan_rank_dedup); chosen by
// `opprof profile` for a job, not a --dedup value.
enum class DedupMode : std::uint8_t { kOff = 0, kLayers = 1, kKernels = 2, kRanks = 3 };
inline constexpr std::array<const char*, 4> kDedupModeNames = {"off", "layers", "kernels", "ranks"};
inline const char* to_string(DedupMode m) { return enum_name(kDedupModeNames, m); }

// How pass B replays only a plan's replay set (docs/dedup.md has the measurements behind the choice).
enum class DedupSelection : std::uint8_t {
  kNvtxModules = 0,      // pass B's module hooks push "opprof.dup" around the skipped instances' forward and
                         // backward; ncu --nvtx --nvtx-exclude (eager forward and training)
  kPerLaunchConfig = 1,  // ncu --filter-mode per-launch-config --launch-count 1+verify: the first launches of
                         // each launch configuration, keyed by the function name without templates (ncu's
                         // default --kernel-name-base function); captures made before the mangled key
  kRankWindows = 2,      // a job's pass B: only the replayed ranks open ncu's window (OPPROF_COUNTERS_RANKS)
  kPerLaunchConfigMangled = 3,  // the same filter keyed by the mangled name (--kernel-name-base mangled):
                                // template instantiations are configurations of their own (the default)
};
inline constexpr std::array<const char*, 4> kDedupSelectionNames = {"nvtx_modules", "per_launch_config",
                                                                    "rank_windows", "per_launch_config_mangled"};
// Both per-launch-config selections: ncu decides what is replayed, by launch configuration.
inline bool by_launch_config(DedupSelection s) {
  return s == DedupSelection::kPerLaunchConfig || s == DedupSelection::kPerLaunchConfigMangled;
}
inline const char* to_string(DedupSelection s) { return enum_name(kDedupSelectionNames, s); }

struct DedupRequest {
  DedupMode mode = DedupMode::kOff;
  DedupSelection selection = DedupSelection::kPerLaunchConfigMangled;  // opprof profile's default
  int verify = 0;         // --dedup-verify K
  std::string structure;  // layers: pass A's opprof_structure.json
  // Per-launch-config selections: the --launch-count pass B ran with; 0: the plan's own choice (the same on
  // the same timeline; where the ncu rows say pass B ran another count, such as the 1 + verify of earlier
  // versions, attribute_capture plans with the count between 1 and kMaxLaunchCount that fits them).
  int launch_count = 0;
};

// Two launches of one configuration did different work when their pass A durations differ by more than
// this fraction of the first and by more than kVariantMinDiffNs (short kernels' launch-to-launch spread).
inline constexpr double kVariantTolerance = 0.25;
inline constexpr std::int64_t kVariantMinDiffNs = 2000;
// A work variant whose launches have at least this share of the window's kernel time gets a replayed
// launch of its own (raising --launch-count up to kMaxLaunchCount); a lighter one borrows another's counters.
inline constexpr double kVariantMinTimeShare = 0.002;
inline constexpr int kMaxLaunchCount = 8;

struct DedupInstance {
  std::string path;                    // module path; kernels mode: the kernel signature's display text
  std::vector<std::uint32_t> kernels;  // timeline kernel rows in launch order
  bool representative = false;
  bool replayed_in_full = false;       // measured, not propagated (the representative too)
  bool verify = false;                 // replayed in full to check the propagation (--dedup-verify)
  std::string reason;                  // why replayed in full, "" otherwise
};

struct DedupClass {
  std::string signature, type;
  std::vector<DedupInstance> instances;  // [0] is the representative
};

struct DedupPlan {
  DedupMode mode = DedupMode::kOff;
  DedupSelection selection = DedupSelection::kNvtxModules;
  int verify = 0;
  std::vector<DedupClass> classes;
  // Parallel to Timeline::kernels.
  std::vector<std::uint8_t> replayed;          // 1: pass B replays it (memcpy/memset: 0, ncu never does)
  std::vector<std::uint32_t> counters_from;    // the replayed kernel whose counters it takes; kNoIndex: its own
  std::vector<std::uint32_t> verify_against;   // verify duplicates: the representative kernel at its position
  // 1: counters_from is a launch of the same configuration whose pass A duration says it did other work (a
  // work variant left without a replayed launch of its own).
  std::vector<std::uint8_t> other_work;
  int launch_count = 0;                        // per-launch-config selections: ncu's --launch-count
  std::uint64_t kernels_other_work = 0;        // kernels with other_work set
  std::uint64_t kernels = 0;                   // kind kernel in the timeline
  std::uint64_t kernels_replayed = 0, kernels_propagated = 0;
  std::size_t instances = 0, instances_in_full = 0;  // in classes of more than one instance; replayed in full
  // Instances whose every kernel is propagated (the NVTX selection skips their forward and backward).
  std::vector<std::string> skip_modules;
  std::vector<std::string> notes;  // what the user should know (a class without kernels, a fallback)

  bool active() const { return mode != DedupMode::kOff; }
};

// The identity matching compares (kernel_match_name, grid, block) as one text, for sequences and reports.
std::string kernel_identity_text(const Timeline& tl, std::uint32_t kernel);

// The plan a request asks for: layers with NVTX selection is plan_layer_dedup; layers with per-launch-config
// selection replays what ncu's filter replays (plan_kernel_dedup) and propagates within each class by
// position where the representative's kernel was replayed, else from the first launch of the configuration;
// kernels is plan_kernel_dedup. Reads request.structure (InputError when it is bad).
DedupPlan build_dedup_plan(const Timeline& tl, const AttributionTable& attribution, const DedupRequest& request);

// Off: everything replayed, nothing propagated.
DedupPlan plan_without_dedup(const Timeline& tl);
DedupPlan plan_layer_dedup(const Timeline& tl, const AttributionTable& attribution, const ModelStructure& structure,
                           int verify = 0);
// key: which per-launch-config selection pass B used (the name a configuration is keyed by); launch_count:
// ncu's --launch-count pass B ran with, 0 for the plan's choice (at least 1 + verify).
DedupPlan plan_kernel_dedup(const Timeline& tl, int verify = 0,
                            DedupSelection key = DedupSelection::kPerLaunchConfigMangled, int launch_count = 0);

// The note (and the attribute warning) of a plan whose kernels_other_work is not 0.
std::string other_work_note(const DedupPlan& p);

// One process of a job in the merged timeline: its label ("rank 1"), rank (kNoRank without one) and its
// kernels (kind kernel) in launch order.
struct RankKernels {
  std::string label;
  std::int64_t rank = -1;
  std::vector<std::uint32_t> kernels;
};

// Cross-rank dedup: pass B replayed only the ranks in counters_ranks (the first is the representative, the
// others were replayed to verify). Every other rank whose kernel sequence (name, grid, block) equals the
// representative's takes its counters position by position; one whose sequence differs keeps no counters
// and is reported. The verify ranks are compared with the representative (verify_against). Inactive, with
// a note, when the representative rank has no kernels in the job.
DedupPlan plan_rank_dedup(const Timeline& tl, const std::vector<RankKernels>& ranks,
                          const std::vector<std::int64_t>& counters_ranks);

}  // namespace opprof
