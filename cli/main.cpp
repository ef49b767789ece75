// The opprof command line: each cli/*_command.cpp adds one subcommand (cli/commands.hpp).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "opprof/util/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"opprof: hardware-attributed operator profiler for PyTorch on NVIDIA GPUs"};
  app.set_version_flag("--version", std::string("opprof ") + OPPROF_VERSION);
  app.require_subcommand(1);
  opprof::cli::register_commands(app);
  // Everything after the first "--" is the program `opprof profile` runs; CLI11 sees only what precedes it.
  int own_argc = argc;
  std::vector<std::string> program;
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--") {
      own_argc = i;
      program.assign(argv + i + 1, argv + argc);
      break;
    }
  try {
    app.parse(own_argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return opprof::cli::run_selected(app, program);
  } catch (const opprof::InputError& e) {
    fmt::print(stderr, "opprof: error: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "opprof: error: {}\n", e.what());
    return 1;
  }
}
