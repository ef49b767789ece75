#include "opprof/attribute/phases.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "opprof/attribute/communication.hpp"
#include "opprof/util/text.hpp"

namespace opprof {

std::string_view optimizer_class(std::string_view text) {
  if (!starts_with(text, kOptimizerStepPrefix)) return {};
  std::string_view rest = text.substr(kOptimizerStepPrefix.size());  // "AdamW.step"
  const auto dot = rest.find('.');
  return rest.substr(0, dot);
}

bool is_optimizer_operator(std::string_view op) {
  // torch.optim's foreach implementations (aten::_foreach_mul_, ...) and fused ones (aten::_fused_adamw_,
  // aten::_fused_adam_, aten::_fused_sgd_, aten::_fused_adagrad_).
  return starts_with(op, "aten::_foreach_") || starts_with(op, "aten::_fused_adam") ||
         starts_with(op, "aten::_fused_sgd") || starts_with(op, "aten::_fused_adagrad");
}

namespace {

struct SeqKey {
  std::uint32_t pid;
  std::uint64_t thread;  // OS tid for forward ranges, RecordFunction thread id for the forward-thread map
  std::int64_t seq;
  bool operator==(const SeqKey&) const = default;
};
struct SeqKeyHash {
  std::size_t operator()(const SeqKey& k) const noexcept {
    return std::hash<std::uint64_t>{}((std::uint64_t{k.pid} * 0x9E3779B97F4A7C15ull) ^
                                      (k.thread * 0xC2B2AE3D27D4EB4Full) ^ static_cast<std::uint64_t>(k.seq));
  }
};

// Forward operator ranges by sequence number, and the way from a backward range to its forward range.
class AutogradLinker {
 public:
  explicit AutogradLinker(const Timeline& tl) : tl_(tl) {
    const RangeTable& r = tl.ranges;
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (r.scope(i) != RangeScope::kThread || r.kind[i] != RangeKind::kOperator) continue;
      if (r.sequence_nr[i] == kNoSequenceNr || r.forward_thread[i] != 0) continue;
      // The operator that created the node is the last to start among those that saw its number (an
      // aten::linear and the aten::t it calls share the number of the TBackward0 node aten::t creates).
      auto [it, inserted] = forward_.try_emplace(SeqKey{r.pid(i), r.owner(i), r.sequence_nr[i]}, i);
      if (!inserted && r.start_ns[i] >= r.start_ns[it->second]) it->second = static_cast<std::uint32_t>(i);
      auto [t, first] = forward_threads_.try_emplace(r.pid(i), r.owner(i));
      if (!first && t->second != r.owner(i)) t->second = kSeveral;
    }
    for (std::size_t i = 0; i < r.size(); ++i)
      if (r.scope(i) == RangeScope::kThread && r.sequence_nr[i] != kNoSequenceNr && r.forward_thread[i] != 0)
        numbered_nodes_[ThreadKey{r.pid(i), r.owner(i)}].push_back(static_cast<std::uint32_t>(i));
    for (auto& [key, ids] : numbered_nodes_)
      std::sort(ids.begin(), ids.end(), [&](std::uint32_t a, std::uint32_t b) { return r.start_ns[a] < r.start_ns[b]; });
    for (const AutogradLink& link : tl.autograd_links) {
      linked_.emplace(link.backward_range, link.forward_range);
      const std::uint32_t b = link.backward_range, f = link.forward_range;
      if (r.forward_thread[b] != 0) os_thread_.emplace(SeqKey{r.pid(b), r.forward_thread[b], 0}, r.owner(f));
    }
  }

  // The forward range of backward range b, kNoIndex when none is known.
  std::uint32_t forward_of(std::uint32_t b) const {
    if (auto it = linked_.find(b); it != linked_.end()) return it->second;
    const RangeTable& r = tl_.ranges;
    if (r.sequence_nr[b] == kNoSequenceNr) {
      // The engine's `evaluate_function: X` range carries no number in opprof's tracer; the node's own range
      // inside it does. Work the engine does around the node (validate_outputs' sum_to and dtype casts, the
      // input buffer's gradient accumulation) launches inside the first range only.
      const std::uint32_t inner = numbered_node_inside(b);
      return inner == kNoIndex ? kNoIndex : forward_of(inner);
    }
    // Sequence numbers count per thread: the forward thread is the one the flows showed for this
    // RecordFunction thread id, else the only thread of the process that ran numbered forward operators.
    std::uint64_t thread = kSeveral;
    if (auto it = os_thread_.find(SeqKey{r.pid(b), r.forward_thread[b], 0}); it != os_thread_.end()) {
      thread = it->second;
    } else if (auto t = forward_threads_.find(r.pid(b)); t != forward_threads_.end()) {
      thread = t->second;
    }
    if (thread == kSeveral) return kNoIndex;
    auto it = forward_.find(SeqKey{r.pid(b), thread, r.sequence_nr[b]});
    return it == forward_.end() ? kNoIndex : it->second;
  }

 private:
  // The first numbered backward-node range that starts inside range b on b's thread and ends inside it.
  std::uint32_t numbered_node_inside(std::uint32_t b) const {
    const RangeTable& r = tl_.ranges;
    auto it = numbered_nodes_.find(ThreadKey{r.pid(b), r.owner(b)});
    if (it == numbered_nodes_.end()) return kNoIndex;
    const std::vector<std::uint32_t>& ids = it->second;
    auto first = std::lower_bound(ids.begin(), ids.end(), r.start_ns[b],
                                  [&](std::uint32_t id, std::int64_t t) { return r.start_ns[id] < t; });
    if (first == ids.end() || *first == b || r.start_ns[*first] > r.end_ns[b] || r.end_ns[*first] > r.end_ns[b])
      return kNoIndex;
    return *first;
  }

  using ThreadKey = ThreadRangeIndexes::Key;  // (pid, thread)
  using ThreadKeyHash = ThreadRangeIndexes::KeyHash;

  static constexpr std::uint64_t kSeveral = ~std::uint64_t{0};
  const Timeline& tl_;
  std::unordered_map<ThreadKey, std::vector<std::uint32_t>, ThreadKeyHash> numbered_nodes_;  // by start
  std::unordered_map<SeqKey, std::uint32_t, SeqKeyHash> forward_;
  std::unordered_map<std::uint32_t, std::uint64_t> forward_threads_;  // pid -> its forward thread, or kSeveral
  std::unordered_map<SeqKey, std::uint64_t, SeqKeyHash> os_thread_;    // (pid, RecordFunction id) -> OS tid
  std::unordered_map<std::uint32_t, std::uint32_t> linked_;            // backward range -> forward range
};

// What the phase rules ask of a range's text, worked out once per distinct text: a 10M-kernel trace asks it
// of every range around every launch, tens of millions of times, of a few thousand texts.
class TextTraits {
 public:
  enum : std::uint8_t { kOptimizerStep = 1, kCommunication = 2, kAutogradNode = 4, kOptimizerOp = 8,
                         kCommunicationKernel = 16 };
  explicit TextTraits(const Timeline& tl) : tl_(tl), traits_(tl.strings.size()) {}

  std::uint8_t of(StrId id) {
    return traits_.get(id, [&] {
      const std::string_view text = tl_.str(id);
      std::uint8_t t = 0;
      if (!optimizer_class(text).empty()) t |= kOptimizerStep;
      if (is_communication_range(text)) t |= kCommunication;
      if (starts_with(text, kAutogradNodePrefix)) t |= kAutogradNode;
      if (is_optimizer_operator(text)) t |= kOptimizerOp;
      if (is_communication_kernel(text)) t |= kCommunicationKernel;
      return t;
    });
  }

 private:
  const Timeline& tl_;
  PerStringMemo<std::uint8_t> traits_;
};

bool is_backward_node(const RangeTable& r, std::uint32_t id, std::uint8_t traits) {
  return (r.sequence_nr[id] != kNoSequenceNr && r.forward_thread[id] != 0) || (traits & TextTraits::kAutogradNode);
}

}  // namespace

void assign_phases(Timeline& tl, const ThreadRangeIndexes& threads, const std::vector<std::uint32_t>& launch_of,
                   AttributionTable& a, AttributionNotes* notes) {
  const KernelTable& k = tl.kernels;
  const RangeTable& r = tl.ranges;
  const LaunchTable& l = tl.launches;
  AutogradLinker linker(tl);
  TextTraits traits(tl);

  struct ForwardInfo {
    StrId op = kNoString;
    StrId module = kNoString;
  };
  std::unordered_map<std::uint32_t, ForwardInfo> forward_info;  // per backward node range
  PerStringMemo<StrId> optimizer_module(tl.strings.size());      // step annotation text -> "optimizer: AdamW"
  const StrId plain_optimizer = tl.strings.intern("optimizer");
  std::size_t backward_kernels = 0, backward_linked = 0, optimizer_kernels = 0, communication = 0;

  // What the ranges around a launch say about its phase. A CUDA graph's kernels share one launch and
  // follow each other in the table: they ask once (a reduce-overhead step replays a hundred kernels a launch).
  struct LaunchPhaseFacts {
    StrId step = kNoString;  // the optimizer step annotation around the launch
    bool collective = false;  // a collective's own work (gloo's copies between the device and the host it reduces on)
    const IntervalIndex::Interval* node = nullptr;  // the innermost autograd node around the launch
    bool optimizer_op = false;
    bool thread_known = false;
  };
  auto phase_facts = [&](std::uint32_t li) {
    LaunchPhaseFacts f;
    const ThreadRangeIndexes::PerThread* th = threads.find(l.pid[li], l.tid[li]);
    if (!th) return f;
    f.thread_known = true;
    const std::int64_t t = l.cpu_start_ns[li];
    th->annotations.for_each_containing(t, t, [&](const IntervalIndex::Interval& iv) {
      const std::uint8_t range_traits = traits.of(r.text[iv.id]);
      if (f.step == kNoString && (range_traits & TextTraits::kOptimizerStep)) f.step = r.text[iv.id];
      f.collective = f.collective || (range_traits & TextTraits::kCommunication);
    });
    th->ops.for_each_containing(t, t, [&](const IntervalIndex::Interval& iv) {
      const std::uint8_t range_traits = traits.of(r.text[iv.id]);
      if (is_backward_node(r, iv.id, range_traits) &&
          (!f.node || iv.start > f.node->start || (iv.start == f.node->start && r.sequence_nr[iv.id] != kNoSequenceNr)))
        f.node = &iv;
      f.optimizer_op = f.optimizer_op || (range_traits & TextTraits::kOptimizerOp);
      f.collective = f.collective || (range_traits & TextTraits::kCommunication);
    });
    return f;
  };
  std::uint32_t facts_launch = kNoIndex;
  LaunchPhaseFacts facts;

  for (std::size_t i = 0; i < k.size(); ++i) {
    const bool known = a.path[i] != AttributionPath::kNone || a.module[i] != kNoString;
    a.phase[i] = known ? Phase::kForward : Phase::kOther;
    if (traits.of(k.name[i]) & TextTraits::kCommunicationKernel) {
      a.phase[i] = Phase::kCommunication;
      ++communication;
      continue;
    }
    const std::uint32_t li = launch_of[i];
    if (li == kNoIndex) continue;
    if (li != facts_launch) {
      facts = phase_facts(li);
      facts_launch = li;
    }
    if (!facts.thread_known) continue;
    const auto [step, collective, node, optimizer_op, thread_known] = facts;
    if (collective) {
      a.phase[i] = Phase::kCommunication;
      ++communication;
      continue;
    }
    if (step != kNoString || (optimizer_op && !node)) {
      a.phase[i] = Phase::kOptimizer;
      ++optimizer_kernels;
      StrId owner = plain_optimizer;
      if (step != kNoString)
        owner = optimizer_module.get(
            step, [&] { return tl.strings.intern(fmt::format("optimizer: {}", optimizer_class(tl.str(step)))); });
      if (a.module_source[i] != ModuleSource::kFxProvenance) {
        a.module[i] = owner;
        a.module_source[i] = ModuleSource::kOptimizerStep;
      }
      continue;
    }
    if (!node) continue;

    a.phase[i] = Phase::kBackward;
    ++backward_kernels;
    auto [it, inserted] = forward_info.try_emplace(node->id);
    if (inserted) {
      // The engine's evaluate_function range and the node's own range carry the same number; a node range
      // without one (a trace without sequence numbers) links nothing.
      const std::uint32_t f = linker.forward_of(node->id);
      if (f != kNoIndex) {
        it->second.op = r.text[f];
        if (const auto* fth = threads.find(r.pid(f), r.owner(f)))
          if (const auto* mod = fth->modules.innermost(r.start_ns[f], r.start_ns[f])) it->second.module = r.text[mod->id];
      }
    }
    const ForwardInfo& fwd = it->second;
    if (fwd.op == kNoString) continue;
    ++backward_linked;
    a.forward_op[i] = fwd.op;
    const bool keep = a.module_source[i] == ModuleSource::kFxProvenance || a.module_source[i] == ModuleSource::kThreadRange;
    if (fwd.module != kNoString && !keep) {
      a.module[i] = fwd.module;
      a.module_source[i] = ModuleSource::kForwardOp;
    }
  }
  if (notes && (backward_kernels > 0 || optimizer_kernels > 0 || communication > 0))
    notes->lines.push_back(fmt::format(
        "phases: {} backward kernels ({} linked to their forward operator through autograd's sequence number), {} "
        "optimizer kernels{}",
        backward_kernels, backward_linked, optimizer_kernels,
        communication > 0 ? fmt::format(", {} communication activities", communication) : std::string()));
}

}  // namespace opprof
