// The opprof command line: subcommands are registered from cli/commands_*.cpp.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "opprof/util/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"opprof: hardware-attributed operator profiler for PyTorch on NVIDIA GPUs"};
  app.set_version_flag("--version", std::string("opprof ") + OPPROF_VERSION);
  app.require_subcommand(1);
  opprof::cli::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return opprof::cli::run_selected(app);
  } catch (const opprof::InputError& e) {
    fmt::print(stderr, "opprof: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "opprof: error: {}\n", e.what());
    return 1;
  }
}
