#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace opprof::cli {

struct CompareOptions {
  std::string a, b;
  bool json = false;
  bool all_activity = false;
  int top = 10;
  bool has_min_agreement = false;
  double min_agreement = 0;  // percent of A's aligned kernel time
};

void add_compare_command(CLI::App& app, CompareOptions& options);
// Prints the comparison; 1 when operator agreement is below --min-agreement, else 0.
int run_compare(const CompareOptions& options);

}  // namespace opprof::cli
