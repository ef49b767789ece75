#include "opprof/attribute/fusion.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "opprof/match/sequence_align.hpp"
#include "opprof/util/text.hpp"

namespace opprof {

namespace {

// AOTAutograd runs a compiled graph inside an autograd Function: "CompiledFunction" around the forward graph's
// call; "CompiledFunctionBackward", inside the autograd engine's "autograd::engine::evaluate_function:
// CompiledFunctionBackward", around the backward graph's (on the autograd engine's thread). torch.profiler
// adds a "## Call CompiledFxGraph" region inside them; a timeline without it (the opprof tracer: Inductor
// emits it only under torch's profiler) has the wrapper stand for the graph's call. Either way the wrapper is
// no wrapper call's operator.
bool is_compiled_graph_wrapper(std::string_view op) {
  return op == "CompiledFunction" || op == "CompiledFunctionBackward" ||
         op == "autograd::engine::evaluate_function: CompiledFunctionBackward";
}

std::string_view graph_hash_of(std::string_view region_text) {
  if (!starts_with(region_text, kCompiledGraphCallPrefix)) return {};
  std::string_view rest = region_text.substr(kCompiledGraphCallPrefix.size());
  auto sp = rest.find(' ');
  return rest.substr(0, sp);
}

// What one wrapper call says about the kernels it launched, resolved once per (graph, call).
struct CallProvenance {
  StrId handle = kNoString;
  StrId fused_ops = kNoString;
  StrId fx_nodes = kNoString;
  StrId module = kNoString;
  StrId source_line = kNoString;
  bool generated = false;  // a kernel Inductor generated (Triton/C++), as opposed to a library call
  StrId callee = kNoString;
};

class FusionContext {
 public:
  FusionContext(Timeline& tl, const InductorArtifacts& ind, Anomalies* anomalies)
      : tl_(tl), ind_(ind), anomalies_(anomalies) {}

  // The graph that ran in a region: by hash when the region names it, else the graph whose calls
  // share the most names with the region's launches (the first of several that share as many).
  int choose_graph(std::string_view region_text, std::string_view hash, const std::vector<std::string_view>& unit_names) {
    if (!hash.empty())
      for (std::size_t g = 0; g < ind_.graphs.size(); ++g)
        if (ind_.graphs[g].graph_hash == hash) return static_cast<int>(g);
    int best = -1;
    std::size_t best_hits = 0;
    std::vector<std::size_t> tied;  // graphs with as many hits as best, after it
    for (std::size_t g = 0; g < ind_.graphs.size(); ++g) {
      const auto& callees = callee_set(g);
      std::size_t hits = 0;
      for (auto name : unit_names) hits += callees.count(name);
      if (hits > best_hits) {
        best_hits = hits;
        best = static_cast<int>(g);
        tied.clear();
      } else if (hits == best_hits && hits > 0) {
        tied.push_back(g);
      }
    }
    if (anomalies_ && !tied.empty()) {
      std::vector<std::string> others;
      for (std::size_t g : tied) others.push_back(ind_.graphs[g].dir);
      anomalies_->record(AnomalyKind::kFusionGraphTie,
                         fmt::format("compiled region '{}': {} of its {} launches name calls of {} and equally of {}",
                                     region_text, best_hits, unit_names.size(),
                                     ind_.graphs[static_cast<std::size_t>(best)].dir, join(others, ", ")));
    }
    return best;
  }

  const CallProvenance& provenance(std::size_t g, std::size_t c, std::string_view compile_id) {
    auto key = std::make_pair(g, c);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    return cache_.emplace(key, resolve(g, c, compile_id)).first->second;
  }

  const std::unordered_set<std::string_view>& callee_set(std::size_t g) {
    auto [it, inserted] = callees_.try_emplace(g);
    if (inserted)
      for (const auto& call : ind_.graphs[g].calls) it->second.insert(call.callee);
    return it->second;
  }

 private:
  // The FX module map for a graph: the one recorded under the region's compile id when it knows the
  // graph's nodes, else the one that knows most of them.
  const FxModuleMap* module_map(std::size_t g, std::string_view compile_id) {
    auto key = std::make_pair(g, std::string(compile_id));
    if (auto it = maps_.find(key); it != maps_.end()) return it->second;
    std::vector<const std::string*> nodes;
    for (const auto& call : ind_.graphs[g].calls)
      for (const auto& nd : call.source_nodes)
        if (!nd.empty()) nodes.push_back(&nd);
    for (const auto& [post, pres] : ind_.graphs[g].post_to_pre_nodes)
      for (const auto& nd : pres) nodes.push_back(&nd);
    const FxModuleMap* best = nullptr;
    std::size_t best_hits = 0;
    const FxModuleMap* tied = nullptr;  // a later map that knows as many nodes as best
    bool by_compile_id = false;
    for (const auto& m : ind_.module_maps) {
      std::size_t hits = 0;
      for (const auto* nd : nodes) hits += m.nodes.count(*nd);
      bool same_id = !compile_id.empty() && m.compile_id == compile_id;
      if (hits > 0 && same_id) {
        best = &m;
        by_compile_id = true;
        break;
      }
      if (hits > best_hits) {
        best_hits = hits;
        best = &m;
        tied = nullptr;
      } else if (hits == best_hits && hits > 0 && !tied) {
        tied = &m;
      }
    }
    if (anomalies_ && tied && !by_compile_id)
      anomalies_->record(AnomalyKind::kFusionModuleMapTie,
                         fmt::format("graph {}: the FX module maps of compile ids {} and {} both know {} of its nodes",
                                     ind_.graphs[g].dir, best->compile_id, tied->compile_id, best_hits));
    maps_.emplace(key, best);
    return best;
  }

  CallProvenance resolve(std::size_t g, std::size_t c, std::string_view compile_id) {
    const InductorGraph& graph = ind_.graphs[g];
    const WrapperCall& call = graph.calls[c];
    CallProvenance p;
    p.generated = call.kind == WrapperCall::Kind::kTriton;
    p.callee = tl_.strings.intern(call.callee);
    if (!call.handle.empty()) p.handle = tl_.strings.intern(call.handle);

    // Pre-grad nodes: through the provenance JSON when it has the handle (exact), else the comment.
    std::vector<std::string> post_nodes;
    if (auto it = graph.handle_to_post_nodes.find(call.handle); it != graph.handle_to_post_nodes.end())
      post_nodes = it->second;
    std::vector<std::string> pre_nodes;
    std::set<std::string> seen;
    for (const auto& post : post_nodes)
      if (auto it = graph.post_to_pre_nodes.find(post); it != graph.post_to_pre_nodes.end())
        for (const auto& pre : it->second)
          if (!pre.empty() && seen.insert(pre).second) pre_nodes.push_back(pre);
    if (pre_nodes.empty())
      for (const auto& pre : call.source_nodes)
        if (!pre.empty() && seen.insert(pre).second) pre_nodes.push_back(pre);
    if (!pre_nodes.empty()) p.fx_nodes = tl_.strings.intern(join(pre_nodes, ","));

    std::vector<std::string> ops = call.aten_ops;
    if (ops.empty()) {
      std::set<std::string> op_seen;
      for (const auto& post : post_nodes)
        if (auto it = graph.post_node_target.find(post); it != graph.post_node_target.end())
          if (op_seen.insert(it->second).second) ops.push_back(it->second);
    }
    if (!ops.empty()) p.fused_ops = tl_.strings.intern(join(ops, ","));

    for (const auto& post : post_nodes)
      if (auto it = graph.post_node_source.find(post); it != graph.post_node_source.end()) {
        p.source_line = tl_.strings.intern(it->second);
        break;
      }

    // Module: the module that produced the kernel's output, i.e. the last of its topologically sorted
    // source nodes that has one. A fused kernel can span modules (one layer's epilogue and the next
    // layer's norm; an attention call with the mask arithmetic of its parent), and its output names the
    // work it exists for. Without the sorted list, the path most of its nodes belong to.
    if (const FxModuleMap* map = module_map(g, compile_id)) {
      auto lookup = [&](const std::string& node) -> const FxNodeModule* {
        auto it = map->nodes.find(node);
        return it == map->nodes.end() ? nullptr : &it->second;
      };
      const std::string* chosen = nullptr;
      const std::string* source = module_node(call, *map);
      if (source && ambiguous_backward_nodes(g, *map).count(*source)) {
        // No module rather than another layer's: the autograd link gives the kernel its forward call's.
        ++ambiguous_calls_;
      } else if (source) {
        chosen = &lookup(*source)->module_path;
      }
      if (!chosen && !source) {
        std::map<std::string, std::pair<std::size_t, std::size_t>> votes;  // path -> (count, first position)
        for (std::size_t i = 0; i < pre_nodes.size(); ++i)
          if (const FxNodeModule* m = lookup(pre_nodes[i]); m && !m->module_path.empty())
            ++votes.try_emplace(m->module_path, 0, i).first->second.first;
        std::pair<std::size_t, std::size_t> best_vote{0, 0};
        for (const auto& [path, vote] : votes)
          if (!chosen || vote.first > best_vote.first ||
              (vote.first == best_vote.first && vote.second < best_vote.second)) {
            chosen = &path;
            best_vote = vote;
          }
        if (chosen) p.module = tl_.strings.intern(*chosen);  // votes dies with this block
      } else if (chosen) {
        p.module = tl_.strings.intern(*chosen);
      }
      if (p.source_line == kNoString)
        for (const auto& node : pre_nodes)
          if (const FxNodeModule* m = lookup(node); m && !m->source.empty()) {
            p.source_line = tl_.strings.intern(m->source);
            break;
          }
    }
    return p;
  }

  // The pre-grad node whose module a call takes: the last of its sorted source nodes that has a module.
  static const std::string* module_node(const WrapperCall& call, const FxModuleMap& map) {
    for (auto it = call.source_nodes.rbegin(); it != call.source_nodes.rend(); ++it) {
      if (it->empty()) continue;
      auto m = map.nodes.find(*it);
      if (m != map.nodes.end() && !m->second.module_path.empty()) return &m->first;
    }
    return nullptr;
  }

  // A backward graph's calls name forward nodes among their source nodes; Inductor sometimes names one
  // forward node for the calls of every layer (GPT-2's "attn_output" for each layer's attention backward).
  // A node that the calls of a backward graph take their module from in more than one separate stretch
  // (other nodes' calls between them) is such a name: its module would put every layer's kernels in one.
  const std::set<std::string>& ambiguous_backward_nodes(std::size_t g, const FxModuleMap& map) {
    auto [it, inserted] = ambiguous_.try_emplace(g);
    if (!inserted) return it->second;
    const InductorGraph& graph = ind_.graphs[g];
    if (graph.aot_id.find("backward") == std::string::npos) return it->second;
    std::map<std::string, std::size_t> stretches;
    const std::string* previous = nullptr;
    for (const WrapperCall& call : graph.calls) {
      const std::string* node = module_node(call, map);
      if (!node) continue;
      if (!previous || *previous != *node) ++stretches[*node];
      previous = node;
    }
    for (const auto& [node, n] : stretches)
      if (n > 1) it->second.insert(node);
    return it->second;
  }

 public:
  std::size_t ambiguous_calls() const { return ambiguous_calls_; }

 private:
  Timeline& tl_;
  const InductorArtifacts& ind_;
  Anomalies* anomalies_;
  std::size_t ambiguous_calls_ = 0;
  std::map<std::size_t, std::set<std::string>> ambiguous_;
  std::map<std::pair<std::size_t, std::size_t>, CallProvenance> cache_;
  std::map<std::pair<std::size_t, std::string>, const FxModuleMap*> maps_;
  std::unordered_map<std::size_t, std::unordered_set<std::string_view>> callees_;
};

void apply_call(const CallProvenance& p, std::size_t i, AttributionTable& a) {
  a.provenance_handle[i] = p.handle;
  a.fx_nodes[i] = p.fx_nodes;
  // Only a generated kernel fuses ops; a library call's "Original ATen" lists the ops of the graph it
  // stands for (views, the epilogue's add), which it does not run itself.
  if (p.generated) a.fused_ops[i] = p.fused_ops;
  if (p.source_line != kNoString) a.source_line[i] = p.source_line;
  if (p.module != kNoString) {
    a.module[i] = p.module;
    a.module_source[i] = ModuleSource::kFxProvenance;
  }
  const bool vague = a.path[i] == AttributionPath::kNone || a.confidence[i] < confidence::kVague;
  if (!p.generated && !vague) return;  // a library kernel keeps the operator correlation found
  // A generated kernel is what the call names (correlation found its launcher range, which carries the same
  // name, or only an enclosing compiled-graph wrapper, or nothing); so is a library kernel that only a coarse
  // enclosure placed.
  if (vague || a.op[i] == kNoString || p.generated) a.op[i] = p.callee;
  // Nothing encloses a wrapper call in a compiled graph: without a range around its launch (the tracer
  // records no Triton launcher ranges, torch.profiler does), the call is also the top-level operator.
  if (vague || a.top_op[i] == kNoString) a.top_op[i] = a.op[i];
  a.path[i] = AttributionPath::kFusion;
  a.confidence[i] = p.generated ? confidence::kGeneratedKernelCall : confidence::kLibraryKernelCall;
  a.reason[i] = kNoString;
}

}  // namespace

void apply_fusion(Timeline& tl, const InductorArtifacts& inductor, const ThreadRangeIndexes& threads,
                  const std::vector<std::uint32_t>& launch_of, const AttributionOptions& opt, AttributionTable& a,
                  AttributionNotes* notes) {
  const KernelTable& k = tl.kernels;
  const RangeTable& r = tl.ranges;
  const LaunchTable& l = tl.launches;
  Anomalies* anomalies = notes ? &notes->anomalies : nullptr;
  FusionContext ctx(tl, inductor, anomalies);

  std::vector<std::uint8_t> wrapper(r.size(), 0);
  for (std::size_t id = 0; id < r.size(); ++id)
    wrapper[id] = r.kind[id] == RangeKind::kOperator && is_compiled_graph_wrapper(tl.str(r.text[id]));

  // Kernels by the innermost compiled region around their launch, or the compiled-graph wrapper operator
  // inside it (or without one).
  std::map<std::uint32_t, std::vector<std::uint32_t>> by_region;
  for (std::size_t i = 0; i < k.size(); ++i) {
    std::uint32_t li = launch_of[i];
    if (li == kNoIndex) continue;
    const auto* th = threads.find(l.pid[li], l.tid[li]);
    if (!th) continue;
    const std::int64_t t = l.cpu_start_ns[li];
    const IntervalIndex::Interval* region = th->regions.innermost(t, t);
    th->ops.for_each_containing(t, t, [&](const IntervalIndex::Interval& iv) {
      if (wrapper[iv.id] && (!region || iv.start > region->start)) region = &iv;
    });
    if (region) by_region[region->id].push_back(static_cast<std::uint32_t>(i));
  }

  std::vector<std::uint8_t> done(k.size(), 0);
  for (auto& [region, kernels] : by_region) {
    std::sort(kernels.begin(), kernels.end(), [&](std::uint32_t x, std::uint32_t y) {
      auto tx = l.cpu_start_ns[launch_of[x]], ty = l.cpu_start_ns[launch_of[y]];
      return tx != ty ? tx < ty : x < y;
    });
    const std::uint32_t li0 = launch_of[kernels.front()];
    const auto* th = threads.find(l.pid[li0], l.tid[li0]);
    const std::int64_t region_start = r.start_ns[region];

    // Launch units: consecutive kernels launched by one top-level operator of the region (an extern
    // GEMM call can launch a GEMM and a split-K reduction) form one unit, named like the wrapper call.
    std::vector<std::string_view> unit_names;
    std::vector<std::uint8_t> unit_has_op;  // named by its operator (else by its kernel)
    std::vector<std::size_t> unit_first;    // index into kernels where each unit starts
    std::uint32_t prev_op = kNoIndex;
    for (std::size_t idx = 0; idx < kernels.size(); ++idx) {
      std::uint32_t i = kernels[idx];
      std::int64_t t = l.cpu_start_ns[launch_of[i]];
      const IntervalIndex::Interval* top = nullptr;
      th->ops.for_each_containing(t, t, [&](const IntervalIndex::Interval& iv) {
        if (iv.start >= region_start && !wrapper[iv.id] && (!top || iv.start < top->start)) top = &iv;
      });
      std::uint32_t op = top ? top->id : kNoIndex;
      if (op == kNoIndex || op != prev_op) {
        unit_first.push_back(idx);
        unit_names.push_back(op != kNoIndex ? tl.str(r.text[op]) : tl.str(k.name[i]));
        unit_has_op.push_back(op != kNoIndex ? 1 : 0);
      }
      prev_op = op;
    }
    unit_first.push_back(kernels.size());

    // The compile id from an enclosing "Torch-Compiled Region: <id>" range, for the FX module map.
    std::string_view compile_id;
    std::string_view region_text = tl.str(r.text[region]);
    th->regions.for_each_containing(region_start, region_start, [&](const IntervalIndex::Interval& iv) {
      std::string_view text = tl.str(r.text[iv.id]);
      if (starts_with(text, kCompiledRegionPrefix)) compile_id = text.substr(kCompiledRegionPrefix.size());
    });

    int g = ctx.choose_graph(region_text, graph_hash_of(region_text), unit_names);
    if (g < 0) {
      if (notes)
        notes->lines.push_back(fmt::format("compiled region '{}': no Inductor graph has its {} launches", region_text,
                                           unit_names.size()));
      continue;
    }
    const InductorGraph& graph = inductor.graphs[static_cast<std::size_t>(g)];
    // A unit without an operator around its launch that is not one of the graph's generated kernels is a
    // library kernel whose operator range was not recorded: kernels a CUDA graph replays (RecordFunction
    // does not run while cudagraph trees record) or a trace without operator ranges. It may stand for any
    // library call; the generated kernels around it anchor the alignment.
    const auto& generated = ctx.callee_set(static_cast<std::size_t>(g));
    std::vector<std::uint8_t> unit_any_library(unit_names.size(), 0);
    for (std::size_t u = 0; u < unit_names.size(); ++u)
      unit_any_library[u] = unit_has_op[u] == 0 && generated.count(unit_names[u]) == 0;
    auto pairs = align_in_order(
        unit_names.size(), graph.calls.size(),
        [&](std::size_t u, std::size_t c) {
          const WrapperCall& call = graph.calls[c];
          if (unit_any_library[u]) return call.kind == WrapperCall::Kind::kExtern;
          return unit_names[u] == call.callee;
        },
        opt.fusion_align_max_steps, anomalies);
    std::vector<std::size_t> call_of_unit(unit_names.size(), kNoIndex);
    for (auto [u, c] : pairs) call_of_unit[u] = c;
    // A library call may launch more than one kernel (a GEMM and its split-K reduction): unaligned
    // library kernels right after an aligned library call belong to it.
    std::size_t last_library_call = kNoIndex;
    for (std::size_t u = 0; u < unit_names.size(); ++u) {
      if (call_of_unit[u] != kNoIndex) {
        const bool library = graph.calls[call_of_unit[u]].kind == WrapperCall::Kind::kExtern;
        last_library_call = library ? call_of_unit[u] : kNoIndex;
      } else if (unit_any_library[u] && last_library_call != kNoIndex) {
        call_of_unit[u] = last_library_call;
      } else {
        last_library_call = kNoIndex;
      }
    }
    std::size_t aligned = 0;
    for (std::size_t u = 0; u < unit_names.size(); ++u) {
      if (call_of_unit[u] == kNoIndex) continue;
      ++aligned;
      const CallProvenance& p = ctx.provenance(static_cast<std::size_t>(g), call_of_unit[u], compile_id);
      for (std::size_t idx = unit_first[u]; idx < unit_first[u + 1]; ++idx) {
        apply_call(p, kernels[idx], a);
        done[kernels[idx]] = 1;
      }
    }
    if (notes && (aligned != unit_names.size() || pairs.size() != graph.calls.size()))
      notes->lines.push_back(fmt::format(
          "compiled region '{}' ({}): {} of {} launches aligned with {} wrapper calls of {}", region_text,
          compile_id.empty() ? "no compile id" : compile_id, aligned, unit_names.size(), graph.calls.size(),
          graph.dir));
  }

  // Generated kernels outside any region (a timeline without framework ranges): a kernel name that one
  // wrapper call alone launches identifies the call.
  std::unordered_map<std::string_view, std::pair<std::size_t, std::size_t>> unique_generated;
  std::unordered_set<std::string_view> ambiguous;
  for (std::size_t g = 0; g < inductor.graphs.size(); ++g)
    for (std::size_t c = 0; c < inductor.graphs[g].calls.size(); ++c) {
      const WrapperCall& call = inductor.graphs[g].calls[c];
      if (call.kind != WrapperCall::Kind::kTriton) continue;
      if (!unique_generated.emplace(call.callee, std::make_pair(g, c)).second) ambiguous.insert(call.callee);
    }
  std::size_t by_name = 0;
  for (std::size_t i = 0; i < k.size(); ++i) {
    if (done[i] || k.kind[i] != ActivityKind::kKernel) continue;
    std::string_view name = tl.str(k.name[i]);
    auto it = unique_generated.find(name);
    if (it == unique_generated.end() || ambiguous.count(name)) continue;
    apply_call(ctx.provenance(it->second.first, it->second.second, {}), i, a);
    ++by_name;
  }
  if (notes && by_name)
    notes->lines.push_back(
        fmt::format("{} generated kernels outside compiled-region ranges matched their wrapper call by name", by_name));
  if (notes && ctx.ambiguous_calls())
    notes->lines.push_back(fmt::format(
        "{} backward-graph wrapper calls name a forward node that calls of other layers name too: no FX module "
        "for them (their kernels take the module of the forward call autograd links them to)",
        ctx.ambiguous_calls()));
}

}  // namespace opprof
