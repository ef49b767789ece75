// `opprof doctor`: which backend `opprof profile` would use and why, where each agent was found, the
// Python and torch, the GPU, ncu and counter permission. It reports and exits 0.
#include <fmt/format.h>

#include <memory>

#include "cli/commands.hpp"
#include "opprof/capture/doctor.hpp"

namespace opprof::cli {

Command add_doctor_command(CLI::App& app) {
  auto o = std::make_shared<CommandOptions<DoctorOptions>>();
  auto* cmd = app.add_subcommand(
      "doctor", "Say what `opprof profile` would use here: backend, agent libraries, Python/torch, GPU, ncu, counters");
  cmd->add_option("--python", o->request.python, "Python interpreter that would run the workload")->capture_default_str();
  cmd->add_option("--ncu", o->request.ncu, "ncu executable (default: PATH, then CUDA's usual places)");
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  cmd->footer("Exit status 0 whatever it finds: it reports, it does not check.");
  return {cmd, [o](const std::vector<std::string>&) {
            const DoctorReport report = run_doctor(o->request);
            fmt::print("{}", o->json ? render_doctor_json(report) : render_doctor_text(report));
            return 0;
          }};
}

}  // namespace opprof::cli
