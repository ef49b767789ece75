#include "opprof/dedup/dedup_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

#include "opprof/match/ncu_match.hpp"
#include "opprof/util/error.hpp"

namespace opprof {
namespace {

DedupPlan empty_plan(const Timeline& tl, DedupMode mode) {
  DedupPlan p;
  p.mode = mode;
  const std::size_t n = tl.kernels.size();
  p.replayed.assign(n, 0);
  p.counters_from.assign(n, kNoIndex);
  p.verify_against.assign(n, kNoIndex);
  for (std::size_t k = 0; k < n; ++k) {
    const bool kernel = tl.kernels.kind[k] == ActivityKind::kKernel;
    p.replayed[k] = kernel ? 1 : 0;
    p.kernels += kernel;
  }
  return p;
}

// A launch configuration as ncu's per-launch-config filter tells launches apart: the kernel's name, grid, block
// and shared memory per block. Which name is ncu's --kernel-name-base: by default (function) the function name
// without namespace, template arguments and parameters, so two instantiations of one template (elementwise add
// and mul) with the same grid share a configuration (measured on the H200: ncu replayed 20 rows of eager GPT-2
// where the full names predicted 27); with mangled, the mangled name, which the timeline records (a tracer
// that left none: the printed name, one to one with it). scripts/probe_ncu_name_base.sh measured both.
std::string launch_signature(const Timeline& tl, std::uint32_t k, DedupSelection key) {
  const Dim3 g = tl.kernels.grid[k], b = tl.kernels.block[k];
  const StrId mangled = tl.kernels.mangled[k];
  const std::string name = key == DedupSelection::kPerLaunchConfigMangled
                               ? std::string(tl.str(mangled != kNoString ? mangled : tl.kernels.name[k]))
                               : kernel_match_name(tl.str(tl.kernels.name[k]));
  return fmt::format("{} grid({},{},{}) block({},{},{}) smem {}", name, g.x, g.y, g.z, b.x, b.y, b.z,
                     tl.kernels.shared_mem_bytes[k]);
}

// --dedup kernels selects by launch configuration: the key the request names, else the mangled name's.
DedupSelection kernel_key(DedupSelection requested) {
  return by_launch_config(requested) ? requested : DedupSelection::kPerLaunchConfigMangled;
}

// K of the n candidates, spread evenly (the first, middle and last region of a stack of layers).
std::vector<std::size_t> spread(std::size_t n, int k) {
  std::vector<std::size_t> out;
  if (k <= 0 || n == 0) return out;
  const std::size_t want = std::min<std::size_t>(n, static_cast<std::size_t>(k));
  for (std::size_t j = 0; j < want; ++j) out.push_back(want == n ? j : (j + 1) * n / (want + 1));
  return out;
}

void finish_counts(DedupPlan& p) {
  p.kernels_replayed = p.kernels_propagated = 0;
  for (std::size_t k = 0; k < p.replayed.size(); ++k) {
    p.kernels_replayed += p.replayed[k];
    p.kernels_propagated += p.counters_from[k] != kNoIndex;
  }
  p.instances = p.instances_in_full = 0;
  for (const DedupClass& c : p.classes) {
    p.instances += c.instances.size();
    for (const DedupInstance& i : c.instances) p.instances_in_full += !i.representative && i.replayed_in_full && !i.verify;
  }
}

// Where two kernel sequences first differ, for the report.
std::string first_difference(const Timeline& tl, const std::vector<std::uint32_t>& rep,
                             const std::vector<std::uint32_t>& other) {
  const std::size_t n = std::min(rep.size(), other.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (kernel_identity_text(tl, rep[i]) != kernel_identity_text(tl, other[i]))
      return fmt::format("kernel {} of {} is {} where the representative launches {}", i + 1, other.size(),
                         kernel_identity_text(tl, other[i]), kernel_identity_text(tl, rep[i]));
  }
  return fmt::format("{} kernels where the representative launches {}", other.size(), rep.size());
}

std::string join_ranks(const std::vector<std::int64_t>& ranks) {
  std::string out;
  for (std::int64_t r : ranks) out += fmt::format("{}rank {}", out.empty() ? "" : ", ", r);
  return out;
}

}  // namespace

std::string kernel_identity_text(const Timeline& tl, std::uint32_t k) {
  const Dim3 g = tl.kernels.grid[k], b = tl.kernels.block[k];
  return fmt::format("{} grid({},{},{}) block({},{},{})", tl.str(tl.kernels.name[k]), g.x, g.y, g.z, b.x, b.y, b.z);
}

DedupPlan plan_without_dedup(const Timeline& tl) {
  DedupPlan p = empty_plan(tl, DedupMode::kOff);
  finish_counts(p);
  return p;
}

DedupPlan plan_layer_dedup(const Timeline& tl, const AttributionTable& attribution, const ModelStructure& structure,
                           int verify) {
  DedupPlan p = empty_plan(tl, DedupMode::kLayers);
  p.selection = DedupSelection::kNvtxModules;
  p.verify = verify;
  // Instance of each module path; a kernel belongs to the instance whose path is its module's or a prefix
  // of it at a dot.
  struct Slot {
    std::size_t cls, instance;
  };
  std::unordered_map<std::string, Slot> slot_of_path;
  for (const StructuralClass& sc : structure.classes) {
    if (sc.instances.size() < 2) continue;
    DedupClass c{sc.signature, sc.type, {}};
    for (const std::string& path : sc.instances) {
      slot_of_path.emplace(path, Slot{p.classes.size(), c.instances.size()});
      c.instances.push_back({path, {}, false, false, false, {}});
    }
    p.classes.push_back(std::move(c));
  }
  std::unordered_map<StrId, const Slot*> slot_of_module;  // cache per interned module path
  auto slot_for = [&](StrId module) -> const Slot* {
    if (module == kNoString) return nullptr;
    auto [it, inserted] = slot_of_module.try_emplace(module, nullptr);
    if (!inserted) return it->second;
    std::string_view path = tl.str(module);
    while (true) {
      if (auto s = slot_of_path.find(std::string(path)); s != slot_of_path.end()) return it->second = &s->second;
      const std::size_t dot = path.rfind('.');
      if (dot == std::string_view::npos) return nullptr;
      path = path.substr(0, dot);
    }
  };
  for (const std::vector<std::uint32_t>& process : kernels_in_launch_order(tl)) {
    for (std::uint32_t k : process) {
      if (const Slot* s = slot_for(attribution.module[k])) p.classes[s->cls].instances[s->instance].kernels.push_back(k);
    }
  }

  for (DedupClass& c : p.classes) {
    // The representative: the first instance of the kernel sequence most instances launch (usually the
    // first instance; in a compiled graph the first and last layers may fuse with their neighbours).
    std::vector<std::string> sequence(c.instances.size());
    std::map<std::string, std::size_t> count;
    for (std::size_t i = 0; i < c.instances.size(); ++i) {
      for (std::uint32_t k : c.instances[i].kernels) sequence[i] += kernel_identity_text(tl, k) + '\n';
      ++count[sequence[i]];
    }
    std::size_t rep = 0;
    for (std::size_t i = 1; i < c.instances.size(); ++i)
      if (count[sequence[i]] > count[sequence[rep]]) rep = i;
    if (rep != 0) std::rotate(c.instances.begin(), c.instances.begin() + static_cast<std::ptrdiff_t>(rep),
                              c.instances.begin() + static_cast<std::ptrdiff_t>(rep) + 1);
    if (rep != 0) std::rotate(sequence.begin(), sequence.begin() + static_cast<std::ptrdiff_t>(rep),
                              sequence.begin() + static_cast<std::ptrdiff_t>(rep) + 1);
    DedupInstance& representative = c.instances[0];
    representative.representative = representative.replayed_in_full = true;
    if (representative.kernels.empty()) {
      p.notes.push_back(fmt::format("class {} ({} instances, first {}): no kernel is attributed to its instances; "
                                    "nothing to deduplicate",
                                    c.type, c.instances.size(), representative.path));
      for (DedupInstance& i : c.instances) i.replayed_in_full = true;
      continue;
    }
    std::vector<std::size_t> same;  // duplicates that can take the representative's counters
    for (std::size_t i = 1; i < c.instances.size(); ++i) {
      DedupInstance& inst = c.instances[i];
      if (sequence[i] == sequence[0]) {
        same.push_back(i);
      } else {
        inst.replayed_in_full = true;
        inst.reason = "its kernel sequence differs from the representative's (" + representative.path + "): " +
                      first_difference(tl, representative.kernels, inst.kernels);
      }
    }
    for (std::size_t j : spread(same.size(), verify)) c.instances[same[j]].verify = c.instances[same[j]].replayed_in_full = true;
    for (std::size_t i : same) {
      DedupInstance& inst = c.instances[i];
      for (std::size_t pos = 0; pos < inst.kernels.size(); ++pos) {
        const std::uint32_t k = inst.kernels[pos], r = representative.kernels[pos];
        if (inst.verify) {
          p.verify_against[k] = r;
        } else {
          p.replayed[k] = 0;
          p.counters_from[k] = r;
        }
      }
      if (!inst.verify) p.skip_modules.push_back(inst.path);
    }
  }
  finish_counts(p);
  return p;
}

DedupPlan plan_kernel_dedup(const Timeline& tl, int verify, DedupSelection key) {
  if (!by_launch_config(key))
    throw InputError("--dedup-selection", fmt::format("{} does not select by launch configuration", to_string(key)));
  DedupPlan p = empty_plan(tl, DedupMode::kKernels);
  p.selection = key;
  p.verify = verify;
  std::unordered_map<std::string, std::size_t> class_of;
  for (const std::vector<std::uint32_t>& process : kernels_in_launch_order(tl)) {
    for (std::uint32_t k : process) {
      std::string sig = launch_signature(tl, k, key);
      auto [it, inserted] = class_of.try_emplace(sig, p.classes.size());
      if (inserted) p.classes.push_back({sig, kernel_match_name(tl.str(tl.kernels.name[k])), {}});
      DedupClass& c = p.classes[it->second];
      DedupInstance inst{fmt::format("launch {}", c.instances.size() + 1), {k}, c.instances.empty(), false, false, {}};
      if (inst.representative) {
        inst.replayed_in_full = true;
      } else if (c.instances.size() <= static_cast<std::size_t>(std::max(verify, 0))) {
        // ncu's per-launch-config filter with --launch-count K+1 replays the first K+1 launches of each
        // configuration: the verify duplicates are the first K after the representative.
        inst.verify = inst.replayed_in_full = true;
        p.verify_against[k] = c.instances[0].kernels[0];
      } else {
        p.replayed[k] = 0;
        p.counters_from[k] = c.instances[0].kernels[0];
      }
      c.instances.push_back(std::move(inst));
    }
  }
  std::erase_if(p.classes, [](const DedupClass& c) { return c.instances.size() < 2; });
  finish_counts(p);
  return p;
}

DedupPlan build_dedup_plan(const Timeline& tl, const AttributionTable& attribution, const DedupRequest& request) {
  DedupPlan p;
  switch (request.mode) {
    case DedupMode::kOff: p = plan_without_dedup(tl); break;
    case DedupMode::kRanks:
      throw InputError("--dedup", "ranks is the dedup of a multi-process job: attribute the job (--job, --counters-ranks)");
    case DedupMode::kKernels: p = plan_kernel_dedup(tl, request.verify, kernel_key(request.selection)); break;
    case DedupMode::kLayers: {
      const ModelStructure structure = read_structure_file(request.structure);
      if (request.selection == DedupSelection::kNvtxModules) {
        p = plan_layer_dedup(tl, attribution, structure, request.verify);
        break;
      }
      // ncu decides what is replayed (the first launches of each configuration); the classes decide where a
      // duplicate's counters come from.
      DedupPlan layers = plan_layer_dedup(tl, attribution, structure, 0);
      p = plan_kernel_dedup(tl, request.verify, request.selection);
      p.mode = DedupMode::kLayers;
      for (std::size_t k = 0; k < p.counters_from.size(); ++k) {
        const std::uint32_t r = layers.counters_from[k];
        if (p.counters_from[k] != kNoIndex && r != kNoIndex && p.replayed[r]) p.counters_from[k] = r;
      }
      for (DedupClass& c : layers.classes)
        for (DedupInstance& i : c.instances) {
          if (i.representative || i.reason.empty()) continue;
          i.replayed_in_full = false;
          i.reason += "; its kernels take the counters of the first launch of their launch configuration";
        }
      p.classes = std::move(layers.classes);
      p.notes = std::move(layers.notes);
      p.notes.push_back(fmt::format("pass B replays the first launch of each launch configuration (ncu --filter-mode "
                                    "per-launch-config, keyed by the {} name)",
                                    request.selection == DedupSelection::kPerLaunchConfigMangled
                                        ? "mangled"
                                        : "function"));
      finish_counts(p);
      break;
    }
  }
  p.selection = request.mode == DedupMode::kKernels ? kernel_key(request.selection) : request.selection;
  p.verify = request.verify;
  return p;
}

DedupPlan plan_rank_dedup(const Timeline& tl, const std::vector<RankKernels>& ranks,
                          const std::vector<std::int64_t>& counters_ranks) {
  DedupPlan p = empty_plan(tl, DedupMode::kRanks);
  p.selection = DedupSelection::kRankWindows;
  p.verify = counters_ranks.empty() ? 0 : static_cast<int>(counters_ranks.size()) - 1;
  auto replayed_rank = [&](std::int64_t rank) {
    return std::find(counters_ranks.begin(), counters_ranks.end(), rank) != counters_ranks.end();
  };
  const RankKernels* rep = nullptr;
  for (const RankKernels& r : ranks)
    if (!counters_ranks.empty() && r.rank == counters_ranks.front() && !r.kernels.empty()) rep = &r;
  if (!rep) {
    p.mode = DedupMode::kOff;
    p.notes.push_back(fmt::format("cross-rank dedup: rank {} (whose counters the others would take) has no kernels "
                                  "in the job: nothing propagated",
                                  counters_ranks.empty() ? -1 : counters_ranks.front()));
    finish_counts(p);
    return p;
  }
  DedupClass c;
  c.type = "rank";
  c.signature = fmt::format("the kernel sequence of {} ({} kernels)", rep->label, rep->kernels.size());
  c.instances.push_back({rep->label, rep->kernels, true, true, false, ""});
  for (const RankKernels& r : ranks) {
    if (&r == rep) continue;
    DedupInstance inst{r.label, r.kernels, false, false, false, ""};
    const bool same = r.kernels.size() == rep->kernels.size() &&
                      std::equal(r.kernels.begin(), r.kernels.end(), rep->kernels.begin(), [&](std::uint32_t a, std::uint32_t b) {
                        return kernel_identity_text(tl, a) == kernel_identity_text(tl, b);
                      });
    if (replayed_rank(r.rank)) {
      inst.replayed_in_full = true;
      inst.verify = same;
      if (same)
        for (std::size_t i = 0; i < r.kernels.size(); ++i) p.verify_against[r.kernels[i]] = rep->kernels[i];
    } else {
      for (std::uint32_t k : r.kernels) p.replayed[k] = 0;
      if (same) {
        for (std::size_t i = 0; i < r.kernels.size(); ++i) p.counters_from[r.kernels[i]] = rep->kernels[i];
      } else {
        inst.reason = fmt::format("its kernel sequence differs from {}'s ({}): not replayed, so without counters",
                                  rep->label, first_difference(tl, rep->kernels, r.kernels));
      }
    }
    c.instances.push_back(std::move(inst));
  }
  const bool some_rank_propagated = std::any_of(c.instances.begin(), c.instances.end(), [](const DedupInstance& i) {
    return !i.replayed_in_full;
  });
  p.classes.push_back(std::move(c));
  if (some_rank_propagated)
    p.notes.push_back(fmt::format("pass B replayed {} only (OPPROF_COUNTERS_RANKS); the other ranks take {}'s "
                                  "counters kernel by kernel",
                                  join_ranks(counters_ranks), rep->label));
  else
    p.notes.push_back(fmt::format("pass B replayed every rank ({}): each is compared with {} (--dedup-verify), "
                                  "nothing is propagated",
                                  join_ranks(counters_ranks), rep->label));
  finish_counts(p);
  return p;
}

}  // namespace opprof
