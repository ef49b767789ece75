#include "cli/commands.hpp"

#include "opprof/util/error.hpp"

namespace opprof::cli {
namespace {
std::vector<Command> g_commands;
}  // namespace

void register_commands(CLI::App& app) {
  g_commands = {add_attribute_command(app), add_report_command(app), add_compare_command(app),
                add_profile_command(app), add_metrics_command(app), add_doctor_command(app),
                add_optimize_command(app)};
}

int run_selected(CLI::App&, const std::vector<std::string>& program) {
  for (const Command& c : g_commands) {
    if (!c.app->parsed()) continue;
    if (!program.empty() && !c.takes_program)
      throw InputError("opprof", "only `opprof profile` takes a program after --");
    return c.run(program);
  }
  return 2;
}

}  // namespace opprof::cli
