#pragma once
// The subcommands: each file in cli/ adds one to the app (its options live with it) and returns how to
// run it once CLI11 has parsed the arguments.
#include <CLI/CLI.hpp>

#include <array>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "opprof/util/enum_names.hpp"

namespace opprof::cli {

struct Command {
  CLI::App* app = nullptr;
  // Runs the parsed command; program holds the words after "--". Returns the exit code.
  std::function<int(const std::vector<std::string>& program)> run;
  bool takes_program = false;  // `opprof profile` runs a program given after --; optimize says why it cannot
};

// The options of a subcommand that passes one library request on: the request, which CLI11 fills in, and
// how to print, which is the CLI's own (each command offers the switches that apply to it). Held by
// shared_ptr in the command's run function, so that they outlive add_*_command.
template <class Request>
struct CommandOptions {
  Request request;
  bool quiet = false;  // --quiet: no progress on stderr
  bool json = false;   // --json: the machine-readable output
};

// The names (from an enum's name table, util/enum_names.hpp) of the values a command accepts, for CLI::IsMember:
// the table stays the one spelling.
template <typename Enum, std::size_t N>
std::vector<std::string> enum_words(const std::array<const char*, N>& names, std::initializer_list<Enum> accepted) {
  std::vector<std::string> words;
  for (Enum e : accepted) words.emplace_back(enum_name(names, e));
  return words;
}

// An option whose value is one of those names, stored as the enum. The help lists the names (CLI11's
// transformer of an enum map prints the enum's values, which for a uint8_t enum are control characters).
template <typename Enum, std::size_t N>
CLI::Option* add_enum_option(CLI::App* app, const std::string& flags, Enum& target,
                             const std::array<const char*, N>& names, std::initializer_list<Enum> accepted,
                             const std::string& help) {
  return app
      ->add_option_function<std::string>(
          flags, [&target, &names](const std::string& word) { target = *enum_from_name<Enum>(names, word); }, help)
      ->check(CLI::IsMember(enum_words(names, accepted)))
      ->default_str(enum_name(names, target));
}

Command add_attribute_command(CLI::App& app);
Command add_report_command(CLI::App& app);
Command add_compare_command(CLI::App& app);             // compare-attribution
Command add_deprecated_compare_command(CLI::App& app);  // compare: the old name, with a note
Command add_diff_command(CLI::App& app);
Command add_profile_command(CLI::App& app);
Command add_metrics_command(CLI::App& app);
Command add_doctor_command(CLI::App& app);
Command add_optimize_command(CLI::App& app);
Command add_export_command(CLI::App& app);

// Adds every subcommand to app.
void register_commands(CLI::App& app);
// Runs the subcommand CLI11 selected; program holds the words after "--". Returns the exit code.
int run_selected(CLI::App& app, const std::vector<std::string>& program);

}  // namespace opprof::cli
