#pragma once
#include <CLI/CLI.hpp>

namespace opprof::cli {
// Adds every subcommand to app.
void register_commands(CLI::App& app);
// Runs the subcommand CLI11 selected; returns the process exit code.
int run_selected(CLI::App& app);
}  // namespace opprof::cli
