#include "opprof/report/metric_set_json.hpp"

#include <algorithm>
#include <vector>

#include "opprof/report/json_writer.hpp"

namespace opprof {

std::string render_metric_set_json(const MetricSet& set, const MetricSetQuery& query) {
  const MetricSet chip_set = set.for_chip(query.chip);
  const std::vector<std::string> chips = known_chips();
  // Each known chip's set, to say for each row where it applies; rows are identified by their line.
  std::vector<MetricSet> per_chip;
  per_chip.reserve(chips.size());
  for (const auto& c : chips) per_chip.push_back(set.for_chip(c));
  const MetricCatalog catalog = builtin_metric_catalog(query.chip);

  JsonWriter w;
  w.begin_object();
  w.key("source").string(set.source);
  w.key("chip").string(query.chip);
  if (!query.device_chip.empty()) w.key("device_chip").string(query.device_chip);
  w.key("known_chips").begin_array();
  for (const auto& c : chips) w.string(c);
  w.end_array();
  w.key("catalog").boolean(!catalog.entries.empty());
  w.key("problems").begin_array();
  if (!catalog.entries.empty())
    for (const auto& p : validate_metric_names(chip_set, catalog)) w.string(p.to_string());
  w.end_array();
  w.key("metrics").begin_array();
  for (const auto& m : chip_set.metrics) {
    w.begin_object();
    // The unit is declared by the set's file, checked against the catalog and the CSV.
    w.fields({{"name", m.name}, {"aggregate", to_string(m.aggregate)}, {"axis", m.axis}, {"unit", m.unit},
              {"weight", m.weight}, {"reason", m.reason}, {"arch", m.arch}, {"replaces", m.replaces},
              {"line", m.line}});
    w.key("chips").begin_array();
    for (std::size_t i = 0; i < chips.size(); ++i) {
      const auto& rows = per_chip[i].metrics;
      if (std::any_of(rows.begin(), rows.end(), [&](const MetricSpec& x) { return x.line == m.line; }))
        w.string(chips[i]);
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace opprof
