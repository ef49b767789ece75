#include "opprof/metrics/metric_set.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <optional>
#include <sstream>

#include "opprof/util/embedded.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {

MetricSet MetricSet::for_chip(std::string_view chip) const {
  MetricSet out;
  out.source = source;
  for (const auto& m : metrics)
    if (m.arch == "*") out.metrics.push_back(m);
  for (const auto& m : metrics) {
    if (m.arch == "*" || m.arch != chip) continue;
    auto it = std::find_if(out.metrics.begin(), out.metrics.end(),
                           [&](const MetricSpec& x) { return !m.replaces.empty() && x.name == m.replaces; });
    if (it == out.metrics.end()) {
      out.metrics.push_back(m);
      continue;
    }
    // Rows weighted by the metric this row stands in for are weighted by this one on this chip.
    for (auto& x : out.metrics)
      if (x.weight == it->name) x.weight = m.name;
    *it = m;
  }
  return out;
}

void require_rows_for_chip(const MetricSet& set, std::string_view chip) {
  if (set.metrics.empty()) return;
  for (const auto& m : set.metrics)
    if (m.arch == "*" || m.arch == chip) return;
  std::vector<std::string> chips;
  for (const auto& m : set.metrics)
    if (std::find(chips.begin(), chips.end(), m.arch) == chips.end()) chips.push_back(m.arch);
  const std::string capture = chip.empty() ? "the capture does not say its chip"
                                           : fmt::format("the capture ran on {}", chip);
  throw InputError(set.source,
                   fmt::format("no row of the metric set applies to this capture: its rows are for {} only, and {} "
                               "(give rows the arch '*' or the capture's chip)",
                               join(chips, ", "), capture),
                   {set.metrics.front().line, 1, 0, set.metrics.front().line != 0});
}

std::vector<std::string> MetricSet::names() const {
  std::vector<std::string> out;
  out.reserve(metrics.size());
  for (const auto& m : metrics) out.push_back(m.name);
  return out;
}

const MetricSpec* MetricSet::find(std::string_view name) const {
  for (const auto& m : metrics)
    if (m.name == name) return &m;
  return nullptr;
}

MetricSet parse_metric_set(std::string_view text, const std::string& source) {
  MetricSet set;
  set.source = source;
  std::vector<InputPosition> weight_at;  // per metric, where its weight column starts
  std::uint32_t line_no = 0;
  for (std::string_view line : split_lines(text)) {
    ++line_no;
    std::string_view t = trim(line);
    if (t.empty() || t.front() == '#') continue;
    auto cols = split(line, '\t');
    auto at = [&](std::size_t i) { return i < cols.size() ? std::string(trim(cols[i])) : std::string(); };
    // 1-based column of field i (past the end of the line for a missing field), for messages.
    auto pos = [&](std::size_t i) {
      std::uint64_t col = 1;
      for (std::size_t c = 0; c < i && c < cols.size(); ++c) col += cols[c].size() + 1;
      return InputPosition{line_no, col, 0, true};
    };
    if (cols.size() < 3)
      throw InputError(source, "expected tab-separated columns: metric, aggregate, axis, arch, replaces, reason, unit, weight",
                       pos(0));
    MetricSpec m;
    m.name = at(0);
    m.line = line_no;
    std::string agg = at(1);
    if (auto parsed = enum_from_name<Aggregate>(kAggregateNames, agg))
      m.aggregate = *parsed;
    else
      throw InputError(source, fmt::format("unknown aggregate '{}' for {} (expected sum, wmean or max)", agg, m.name),
                       pos(0));
    m.axis = at(2);
    m.arch = at(3).empty() ? "*" : at(3);
    m.replaces = at(4);
    m.reason = at(5);
    m.unit = at(6);
    m.weight = at(7);
    if (m.name.empty() || m.name.find_first_of(" ,\"") != std::string::npos)
      throw InputError(source, fmt::format("bad metric name '{}'", m.name), pos(0));
    if (set.find(m.name) && m.arch == "*")
      throw InputError(source, fmt::format("metric {} is listed twice", m.name), pos(0));
    // Every metric says its unit, so that a capture in other units is refused instead of misread.
    if (m.unit.empty())
      throw InputError(source,
                       fmt::format("metric {} declares no unit (column 7: the unit ncu prints with --print-units base, "
                                   "'-' for none)",
                                   m.name),
                       pos(6));
    if (m.unit == "-") m.unit.clear();
    if (m.aggregate == Aggregate::kWeightedMean && m.weight.empty())
      throw InputError(source,
                       fmt::format("wmean metric {} declares no weight (column 8: '{}' or a sum metric of the set, "
                                   "the ratio's denominator)",
                                   m.name, kDurationWeight),
                       pos(7));
    if (m.aggregate != Aggregate::kWeightedMean && !m.weight.empty() && m.weight != "-")
      throw InputError(source, fmt::format("metric {} is aggregated by {}, which takes no weight", m.name, agg), pos(7));
    if (m.weight == "-") m.weight.clear();
    weight_at.push_back(pos(7));
    set.metrics.push_back(std::move(m));
  }
  if (set.metrics.empty()) throw InputError(source, "the metric set names no metric");
  // A weight names a sum metric that the same chips collect: a "*" row, or a row of the weighted row's chip.
  for (std::size_t i = 0; i < set.metrics.size(); ++i) {
    const MetricSpec& m = set.metrics[i];
    if (m.weight.empty() || m.weight == kDurationWeight) continue;
    auto it = std::find_if(set.metrics.begin(), set.metrics.end(), [&](const MetricSpec& w) {
      return w.name == m.weight && (w.arch == "*" || w.arch == m.arch);
    });
    const InputPosition& where = weight_at[i];
    if (it == set.metrics.end())
      throw InputError(source, fmt::format("the weight of {} is {}, which is not a metric of the set for {}", m.name,
                                           m.weight, m.arch == "*" ? "every chip" : m.arch),
                       where);
    if (it->aggregate != Aggregate::kSum)
      throw InputError(source, fmt::format("the weight of {} is {}, which is aggregated by {}; a weight must be a sum",
                                           m.name, m.weight, to_string(it->aggregate)),
                       where);
  }
  return set;
}

MetricSet default_metric_set() { return parse_metric_set(embedded_file("metrics_default.tsv"), "<built-in>"); }

MetricSet load_metric_set(const std::string& path) {
  if (path.empty() || path == "default") return default_metric_set();
  // The built-in sets by name (data/metrics_<name>.tsv); a file of that name in the working directory is
  // reached as ./quick.
  if (path == "quick" || path == "full")
    return parse_metric_set(embedded_file("metrics_" + path + ".tsv"), "<built-in " + path + ">");
  return parse_metric_set(read_file(path), path);
}

const MetricCatalog::Entry* MetricCatalog::find(std::string_view base) const {
  auto it = std::lower_bound(entries.begin(), entries.end(), base,
                             [](const Entry& e, std::string_view b) { return e.base < b; });
  if (it != entries.end() && it->base == base) return &*it;
  return nullptr;
}

MetricCatalog parse_metric_catalog(std::string_view text, const std::string& source, const std::string& chip) {
  MetricCatalog cat;
  cat.chip = chip;
  for (std::string_view line : split_lines(text)) {
    if (trim(line).empty() || line.front() == '#') continue;
    std::vector<std::string_view> cols;
    if (line.front() == '"') {  // ncu's own CSV: "name","type","unit","description",...
      cols = split(line, ',');
      for (auto& c : cols) c = trim(c, "\" ");
    } else {
      cols = split(line, '\t');
    }
    if (cols.size() < 2 || cols[0] == "Metric name") continue;
    std::string base(cols[0]);
    // Grouped names ("CTC.TriageCompute.ctc__rx_bytes") are collected under their last part.
    if (auto dot = base.rfind('.'); dot != std::string::npos) base = base.substr(dot + 1);
    cat.entries.push_back({base, std::string(cols[1]), cols.size() > 2 ? std::string(cols[2]) : std::string()});
  }
  if (cat.entries.empty()) throw InputError(source, "no metric in the catalog");
  std::sort(cat.entries.begin(), cat.entries.end(), [](const auto& a, const auto& b) { return a.base < b.base; });
  return cat;
}

MetricCatalog builtin_metric_catalog(std::string_view chip) {
  std::string file = fmt::format("ncu_catalog_{}.tsv", chip);
  std::string_view text = embedded_file(file);
  if (text.empty()) return MetricCatalog{std::string(chip), {}};
  return parse_metric_catalog(text, "<built-in " + file + ">", std::string(chip));
}

namespace {
// ncu's chip name per compute capability (major * 10 + minor).
struct ChipByCapability {
  int capability;
  const char* chip;
};
constexpr std::array kChipsByCapability = {
    ChipByCapability{70, "gv100"}, ChipByCapability{75, "tu102"}, ChipByCapability{80, "ga100"},
    ChipByCapability{86, "ga102"}, ChipByCapability{87, "ga102"}, ChipByCapability{89, "ad102"},
    ChipByCapability{90, "gh100"}, ChipByCapability{100, "gb100"}, ChipByCapability{120, "gb202"},
};
}  // namespace

std::string chip_for_device(std::string_view device_name, int major, int minor) {
  const int cc = major * 10 + minor;
  for (const auto& [capability, chip] : kChipsByCapability)
    if (capability == cc) return chip;
  // No compute capability: go by the marketing name.
  if (contains(device_name, "H100") || contains(device_name, "H200") || contains(device_name, "H800")) return "gh100";
  if (contains(device_name, "A100") || contains(device_name, "A800") || contains(device_name, "A30")) return "ga100";
  return "";
}

std::vector<std::string> known_chips() {
  std::vector<std::string> out;
  for (const auto& entry : kChipsByCapability)
    if (std::find(out.begin(), out.end(), entry.chip) == out.end()) out.emplace_back(entry.chip);
  return out;
}

std::string chip_for_capture(const std::map<std::string, std::string>& metadata) {
  auto get = [&](const std::string& key) -> std::string {
    auto it = metadata.find(key);
    return it == metadata.end() ? std::string() : it->second;
  };
  int major = 0, minor = 0;
  try {
    if (!get("device.0.compute_major").empty()) major = std::stoi(get("device.0.compute_major"));
    if (!get("device.0.compute_minor").empty()) minor = std::stoi(get("device.0.compute_minor"));
    // The tracer and nsys readers give "major.minor" in device.0.cc.
    if (major == 0 && !get("device.0.cc").empty()) {
      const std::string cc = get("device.0.cc");
      major = std::stoi(cc);
      if (auto dot = cc.find('.'); dot != std::string::npos) minor = std::stoi(cc.substr(dot + 1));
    }
  } catch (const std::exception&) {
    // A malformed capability leaves the name to decide.
  }
  return chip_for_device(get("device.0.name"), major, minor);
}

namespace {
constexpr std::array kCounterRollups = {"sum", "avg", "min", "max"};
constexpr std::array kRatioRollups = {"ratio", "pct", "max_rate"};
constexpr std::array kSubmetrics = {"pct_of_peak_sustained_active",  "pct_of_peak_sustained_elapsed",
                                    "pct_of_peak_sustained_region",  "pct_of_peak_sustained_frame",
                                    "peak_sustained",                "peak_sustained_active",
                                    "peak_sustained_elapsed",        "peak_sustained_region",
                                    "peak_sustained_frame",          "per_second",
                                    "per_cycle_active",              "per_cycle_elapsed",
                                    "per_cycle_in_region",           "per_cycle_in_frame",
                                    "pct_of_peak_burst_active",      "pct_of_peak_burst_elapsed"};
template <std::size_t N>
bool one_of(std::string_view s, const std::array<const char*, N>& set) {
  return std::any_of(set.begin(), set.end(), [&](const char* x) { return s == x; });
}
}  // namespace

std::string MetricProblem::to_string() const { return fmt::format("{}:{}: {}: {}", source, line, metric, message); }

std::vector<MetricProblem> validate_metric_names(const MetricSet& set, const MetricCatalog& catalog) {
  std::vector<MetricProblem> problems;
  for (const auto& m : set.metrics) {
    if (m.arch != "*" && m.arch != catalog.chip) continue;
    if (starts_with(m.name, "launch__") || starts_with(m.name, "device__attribute_")) continue;
    auto parts = split(m.name, '.');
    const auto* entry = catalog.find(parts[0]);
    auto problem = [&](std::string message) { problems.push_back({set.source, m.line, m.name, std::move(message)}); };
    if (!entry) {
      problem(fmt::format("unknown metric for {} (not in its ncu catalog)", catalog.chip));
      continue;
    }
    if (parts.size() < 2) {
      problem("needs a rollup suffix (.sum, .avg, .pct, ...)");
      continue;
    }
    bool ratio = entry->type == "Ratio";
    bool rollup_ok = ratio ? one_of(parts[1], kRatioRollups) : one_of(parts[1], kCounterRollups);
    bool sub_ok = parts.size() < 3 || (parts.size() == 3 && one_of(parts[2], kSubmetrics));
    if (!rollup_ok || !sub_ok) {
      problem(fmt::format("suffix not valid for a {} metric", entry->type));
      continue;
    }
    std::optional<std::string> expected = catalog_unit(*entry, m.name);
    if (expected && m.unit != *expected)
      problem(fmt::format("declares unit '{}', ncu prints '{}' for it (the {} catalog)", m.unit.empty() ? "-" : m.unit,
                          expected->empty() ? "-" : *expected, catalog.chip));
  }
  return problems;
}

std::optional<std::string> catalog_unit(const MetricCatalog::Entry& entry, std::string_view full_name) {
  auto parts = split(full_name, '.');
  if (parts.size() >= 2 && parts[1] == "pct") return "%";
  if (parts.size() >= 3 && starts_with(parts[2], "pct_of_peak")) return "%";
  // Rates and peaks (per_second, per_cycle_*, peak_sustained*): the catalog does not say how ncu spells
  // their compound unit, so only the CSV's units row checks them.
  if (parts.size() >= 3) return std::nullopt;
  return entry.unit;
}

}  // namespace opprof
