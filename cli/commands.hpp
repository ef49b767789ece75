#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace opprof::cli {
// Adds every subcommand to app.
void register_commands(CLI::App& app);
// Runs the subcommand CLI11 selected; program holds the words after "--". Returns the exit code.
int run_selected(CLI::App& app, const std::vector<std::string>& program);
}  // namespace opprof::cli
