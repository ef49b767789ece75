#pragma once
#include <CLI/CLI.hpp>
#include <filesystem>
#include <string>

namespace opprof::cli {

struct ReportOptions {
  std::string database;
  bool json = false;
  int top = 15;
};

void add_report_command(CLI::App& app, ReportOptions& options);
int run_report(const ReportOptions& options);

// The terminal report of a profile database.
std::string render_report_text(const std::string& database);
// Writes report.txt and report.json beside the artifacts of a profile run.
void write_report_files(const std::string& database, const std::filesystem::path& dir);

}  // namespace opprof::cli
