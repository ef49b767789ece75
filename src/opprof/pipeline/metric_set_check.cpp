#include "opprof/pipeline/metric_set_check.hpp"

namespace opprof {

MetricSetCheck check_metric_set(const std::string& file, const std::string& chip, bool check) {
  MetricSetCheck c;
  c.set = load_metric_set(file).for_chip(chip);
  if (!check) return c;
  const MetricCatalog catalog = builtin_metric_catalog(chip);
  c.catalog_known = !catalog.entries.empty();
  if (c.catalog_known) c.problems = validate_metric_names(c.set, catalog);
  return c;
}

}  // namespace opprof
