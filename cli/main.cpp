// The opprof command line: each cli/*_command.cpp adds one subcommand (cli/commands.hpp).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/interrupt.hpp"

int main(int argc, char** argv) {
  // From the start: an interrupt removes the temporary database being written (util/interrupt.hpp).
  opprof::install_interrupt_handlers();
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
  // Before the command only --help and --version exist: name an unknown option rather than ask for a command.
  if (own_argc > 1 && argv[1][0] == '-') {
    const std::string_view word = argv[1];
    if (word != "-h" && word != "--help" && word != "--version") {
      fmt::print(stderr, "opprof: error: unknown option '{}' before the command (opprof --help lists the commands)\n",
                 opprof::printable(word));
      return 2;
    }
  }
  // An unknown first word is a mistyped command: say so, rather than CLI11's "A subcommand is required".
  if (own_argc > 1 && argv[1][0] != '-') {
    const std::string word = argv[1];
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), word) == names.end()) {
      fmt::print(stderr, "opprof: error: unknown command '{}' (commands: {}; opprof --help lists them)\n",
                 opprof::printable(word), fmt::join(names, ", "));
      return 2;
    }
  }
  try {
    app.parse(own_argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A usage error is bad input: exit status 2, like every other (CLI11's own codes are 100 and up), in
    // one line that names where the options are listed.
    std::string command = "opprof";
    for (const CLI::App* sub : app.get_subcommands()) command += " " + sub->get_name();
    fmt::print(stderr, "opprof: error: {} ({} --help lists the options)\n", opprof::printable(e.what()), command);
    return 2;
  }
  try {
    return opprof::cli::run_selected(app, program);
  } catch (const opprof::InputError& e) {
    fmt::print(stderr, "opprof: error: {}\n", e.what());  // InputError's text is printable() already
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "opprof: error: {}\n", opprof::printable(e.what()));
    return 1;
  }
}
