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
  p.other_work.assign(n, 0);
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
  p.kernels_replayed = p.kernels_propagated = p.kernels_other_work = 0;
  for (std::size_t k = 0; k < p.replayed.size(); ++k) {
    p.kernels_replayed += p.replayed[k];
    p.kernels_propagated += p.counters_from[k] != kNoIndex;
    p.kernels_other_work += p.other_work[k] != 0;
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

std::string other_work_note(const DedupPlan& p) {
  return fmt::format("{} kernels take the counters of a launch of their configuration that did other work (pass A "
                     "durations), not of their own work: pass B's --launch-count {} reached no launch of their work "
                     "variant (the dedup instances' reasons say which)",
                     p.kernels_other_work, p.launch_count);
}

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

DedupPlan plan_kernel_dedup(const Timeline& tl, int verify, DedupSelection key, int launch_count) {
  if (!by_launch_config(key))
    throw InputError("--dedup-selection", fmt::format("{} does not select by launch configuration", to_string(key)));
  DedupPlan p = empty_plan(tl, DedupMode::kKernels);
  p.selection = key;
  p.verify = verify = std::max(verify, 0);

  // Each configuration's launches in launch order, with their work variants (pass A durations).
  struct Config {
    std::string signature;
    std::vector<std::uint32_t> launches;
    std::vector<std::size_t> variant;         // per launch
    std::vector<std::int64_t> variant_ns;     // per variant: its first launch's duration
    std::vector<std::int64_t> variant_total;  // per variant: the time of all its launches
    std::vector<std::size_t> variant_first;   // per variant: the index of its first launch
  };
  std::vector<Config> configs;
  std::unordered_map<std::string, std::size_t> config_of;
  std::int64_t window_ns = 0;
  for (const std::vector<std::uint32_t>& process : kernels_in_launch_order(tl)) {
    for (std::uint32_t k : process) {
      std::string sig = launch_signature(tl, k, key);
      auto [it, inserted] = config_of.try_emplace(sig, configs.size());
      if (inserted) configs.push_back({std::move(sig), {}, {}, {}, {}, {}});
      Config& c = configs[it->second];
      const std::int64_t d = std::max<std::int64_t>(tl.kernels.duration_ns(k), 0);
      window_ns += d;
      std::size_t v = 0;
      while (v < c.variant_ns.size()) {
        const std::int64_t ref = c.variant_ns[v], diff = d > ref ? d - ref : ref - d;
        if (diff <= kVariantMinDiffNs || static_cast<double>(diff) <= kVariantTolerance * static_cast<double>(ref))
          break;
        ++v;
      }
      if (v == c.variant_ns.size()) {
        c.variant_ns.push_back(d);
        c.variant_total.push_back(0);
        c.variant_first.push_back(c.launches.size());
      }
      c.variant_total[v] += d;
      c.variant.push_back(v);
      c.launches.push_back(k);
    }
  }

  // ncu replays the first launch_count launches of every configuration: enough for the verify duplicates
  // and for the first launch of each variant of real weight.
  int needed = 1 + verify;
  for (const Config& c : configs)
    for (std::size_t v = 1; v < c.variant_ns.size(); ++v) {
      if (static_cast<double>(c.variant_total[v]) < kVariantMinTimeShare * static_cast<double>(window_ns)) continue;
      if (c.variant_first[v] < static_cast<std::size_t>(kMaxLaunchCount))
        needed = std::max(needed, static_cast<int>(c.variant_first[v]) + 1);
    }
  p.launch_count = launch_count > 0 ? launch_count : needed;
  const std::size_t replayed_per_config = static_cast<std::size_t>(p.launch_count);

  std::size_t multi_variant = 0;
  for (const Config& c : configs) {
    multi_variant += c.variant_ns.size() > 1;
    // The class of each variant (one per configuration where it has one variant), and its first replayed
    // launch: the source of the variant's other launches.
    std::vector<std::size_t> class_of_variant(c.variant_ns.size());
    std::vector<std::uint32_t> source(c.variant_ns.size(), kNoIndex);
    for (std::size_t v = 0; v < c.variant_ns.size(); ++v) {
      class_of_variant[v] = p.classes.size();
      const std::string sig =
          c.variant_ns.size() == 1
              ? c.signature
              : fmt::format("{} work variant {} (pass A {:.1f} us)", c.signature, v + 1,
                            static_cast<double>(c.variant_ns[v]) / 1e3);
      p.classes.push_back({sig, kernel_match_name(tl.str(tl.kernels.name[c.launches[0]])), {}});
    }
    for (std::size_t i = 0; i < c.launches.size() && i < replayed_per_config; ++i)
      if (source[c.variant[i]] == kNoIndex) source[c.variant[i]] = c.launches[i];
    for (std::size_t i = 0; i < c.launches.size(); ++i) {
      const std::uint32_t k = c.launches[i];
      const std::size_t v = c.variant[i];
      DedupClass& cls = p.classes[class_of_variant[v]];
      DedupInstance inst{fmt::format("launch {}", i + 1), {k}, cls.instances.empty() && i < replayed_per_config,
                         false, false, {}};
      if (i < replayed_per_config) {
        // Replayed in full: the variant's first launch, or a later one of the first launch_count. ncu's
        // per-launch-config filter with --launch-count K+1 replays the first K+1 launches of each
        // configuration: the verify duplicates are the first K after the representative.
        inst.replayed_in_full = true;
        if (!inst.representative && i <= static_cast<std::size_t>(verify)) {
          inst.verify = true;
          p.verify_against[k] = source[v];
        }
      } else {
        p.replayed[k] = 0;
        std::size_t from = v;
        if (source[v] == kNoIndex) {
          // A variant without a replayed launch: the replayed launch nearest in duration, counted.
          std::int64_t best = -1;
          for (std::size_t u = 0; u < c.variant_ns.size(); ++u) {
            if (source[u] == kNoIndex) continue;
            const std::int64_t diff = std::abs(c.variant_ns[u] - c.variant_ns[v]);
            if (best < 0 || diff < best) best = diff, from = u;
          }
          p.other_work[k] = 1;
          inst.reason = fmt::format("takes the counters of {} of its configuration, whose pass A duration ({:.1f} "
                                    "us against {:.1f}) says it did other work",
                                    kernel_identity_text(tl, source[from]), static_cast<double>(c.variant_ns[from]) / 1e3,
                                    static_cast<double>(c.variant_ns[v]) / 1e3);
        }
        p.counters_from[k] = source[from];
      }
      cls.instances.push_back(std::move(inst));
    }
  }
  // A class of one launch deduplicates nothing, unless that launch borrowed another variant's counters.
  std::erase_if(p.classes, [](const DedupClass& c) { return c.instances.size() < 2 && c.instances[0].reason.empty(); });
  finish_counts(p);
  if (multi_variant > 0)
    p.notes.push_back(fmt::format(
        "{} launch configurations launch other work under one configuration (pass A durations differ by more than "
        "{:.0f} %): ncu --launch-count {} replays a launch of each such work variant with at least {:.1f} % of the "
        "kernel time",
        multi_variant, 100 * kVariantTolerance, p.launch_count, 100 * kVariantMinTimeShare));
  if (p.kernels_other_work > 0) p.notes.push_back(other_work_note(p));
  return p;
}

DedupPlan build_dedup_plan(const Timeline& tl, const AttributionTable& attribution, const DedupRequest& request) {
  DedupPlan p;
  switch (request.mode) {
    case DedupMode::kOff: p = plan_without_dedup(tl); break;
    case DedupMode::kRanks:
      throw InputError("--dedup", "ranks is the dedup of a multi-process job: attribute the job (--job, --counters-ranks)");
    case DedupMode::kKernels:
      p = plan_kernel_dedup(tl, request.verify, kernel_key(request.selection), request.launch_count);
      break;
    case DedupMode::kLayers: {
      const ModelStructure structure = read_structure_file(request.structure);
      if (request.selection == DedupSelection::kNvtxModules) {
        p = plan_layer_dedup(tl, attribution, structure, request.verify);
        break;
      }
      // ncu decides what is replayed (the first launches of each configuration); the classes decide where a
      // duplicate's counters come from.
      DedupPlan layers = plan_layer_dedup(tl, attribution, structure, 0);
      p = plan_kernel_dedup(tl, request.verify, request.selection, request.launch_count);
      p.mode = DedupMode::kLayers;
      for (std::size_t k = 0; k < p.counters_from.size(); ++k) {
        const std::uint32_t r = layers.counters_from[k];
        if (p.counters_from[k] != kNoIndex && r != kNoIndex && p.replayed[r]) {
          p.counters_from[k] = r;  // the representative's kernel at the same position: the same work
          p.other_work[k] = 0;
        }
      }
      for (DedupClass& c : layers.classes)
        for (DedupInstance& i : c.instances) {
          if (i.representative || i.reason.empty()) continue;
          i.replayed_in_full = false;
          i.reason += "; its kernels take the counters of the replayed launches of their launch configuration";
        }
      p.classes = std::move(layers.classes);
      std::vector<std::string> kernel_notes = std::move(p.notes);
      p.notes = std::move(layers.notes);
      p.notes.push_back(fmt::format("pass B replays the first {} of each launch configuration (ncu --filter-mode "
                                    "per-launch-config, keyed by the {} name)",
                                    p.launch_count == 1 ? "launch" : fmt::format("{} launches", p.launch_count),
                                    request.selection == DedupSelection::kPerLaunchConfigMangled
                                        ? "mangled"
                                        : "function"));
      finish_counts(p);
      // The kernel plan's notes but its count of other work, which the positions above lowered.
      for (std::string& n : kernel_notes)
        if (n.find("did other work") == std::string::npos) p.notes.push_back(std::move(n));
      if (p.kernels_other_work > 0) p.notes.push_back(other_work_note(p));
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
