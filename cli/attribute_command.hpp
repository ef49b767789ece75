#pragma once
#include <CLI/CLI.hpp>

#include "opprof/pipeline/attribute.hpp"

namespace opprof::cli {

struct AttributeOptions {
  AttributeRequest request;
  bool quiet = false;
};

void add_attribute_command(CLI::App& app, AttributeOptions& options);
// Attributes and writes the profile database (opprof/pipeline/attribute.hpp), with progress on stderr.
int run_attribute(const AttributeOptions& options);

}  // namespace opprof::cli
