#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <string>

namespace opprof::cli {

struct AttributeOptions {
  std::string trace, ncu, inductor, metrics, opaque, output;
  bool quiet = false;
  bool all_ranges = false;
  bool strict_launch_config = false;
};

void add_attribute_command(CLI::App& app, AttributeOptions& options);
// Attributes and writes the profile database; extra_metadata is stored with the capture's own.
int run_attribute(const AttributeOptions& options, const std::map<std::string, std::string>& extra_metadata = {});

}  // namespace opprof::cli
