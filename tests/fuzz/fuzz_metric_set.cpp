// The metric-set TSV (format version 2), as `--metrics` files are read.
#include <string_view>

#include "fuzz_input.hpp"
#include "opprof/metrics/metric_set.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  opprof::fuzz::expect_input_error_at_most([&] {
    const opprof::MetricSet set = opprof::parse_metric_set(text, "fuzz.tsv");
    // What attribute does with a user's set next: the rows of the capture's chip, checked against its catalog.
    const opprof::MetricSet chip = set.for_chip("gh100");
    static const opprof::MetricCatalog catalog = opprof::builtin_metric_catalog("gh100");  // parsed once
    (void)opprof::validate_metric_names(chip, catalog);
    opprof::require_rows_for_chip(set, "gh100");
  });
  return 0;
}
