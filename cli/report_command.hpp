#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace opprof::cli {

struct ReportOptions {
  std::string database;
  bool json = false;
  int top = 15;
};

void add_report_command(CLI::App& app, ReportOptions& options);
int run_report(const ReportOptions& options);

}  // namespace opprof::cli
