#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace opprof::cli {

struct AttributeOptions {
  std::string trace, ncu, inductor, metrics, opaque, output;
  bool quiet = false;
};

void add_attribute_command(CLI::App& app, AttributeOptions& options);
int run_attribute(const AttributeOptions& options);

}  // namespace opprof::cli
