#pragma once
// `opprof metrics --json`: the metric set as one JSON document, which the Python side reads instead of
// parsing the TSV itself (one parser, the engine's).
//
//   source            the metric-set file, or "<built-in>"
//   chip              the chip the list is for ("*": the chip-independent set)
//   device_chip       the chip chip_for_device found for the device asked about (only when one was)
//   known_chips [..]  every chip the engine knows by compute capability
//   catalog           true when a built-in ncu catalog for the chip checked the names
//   problems [..]     "<source>:<line>: <metric>: <what>" per name the chip's catalog rejects
//   metrics [{name, aggregate, axis, unit, reason, arch, replaces, line, chips [..]}]
//                     the set for the chip, in ncu --metrics order; chips: the known chips whose set holds
//                     this row (a "*" row is absent from the chips where a row replaces it)
#include <string>

#include "opprof/metrics/metric_set.hpp"

namespace opprof {

struct MetricSetQuery {
  std::string chip = "*";
  std::string device_chip;  // set when the chip was found from a device's name and compute capability
};

// The document for `set` (the whole file's rows) as seen by query.chip, pretty-printed, ending in a newline.
std::string render_metric_set_json(const MetricSet& set, const MetricSetQuery& query);

}  // namespace opprof
