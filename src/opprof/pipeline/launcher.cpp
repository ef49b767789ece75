#include "opprof/pipeline/launcher.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <string_view>

#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

// torch.distributed.run's options that take no value (torch 2.x: get_args_parser's nargs=0 actions); every
// other option takes one, as "--opt value" or "--opt=value".
constexpr std::array<std::string_view, 3> kFlags = {"--standalone", "--virtual-local-rank", "--virtual_local_rank"};
// Options that run the script some other way than `python script.py` in a new process.
constexpr std::array<std::string_view, 6> kNotAScript = {"-m", "--module", "--no-python", "--no_python", "--run-path",
                                                         "--run_path"};

bool is_flag(std::string_view arg) { return std::find(kFlags.begin(), kFlags.end(), arg) != kFlags.end(); }

}  // namespace

std::optional<LauncherCommand> parse_launcher(const std::vector<std::string>& command) {
  if (command.empty()) return std::nullopt;
  LauncherCommand out;
  std::size_t i = 0;
  const std::string first = std::filesystem::path(command[0]).filename().string();
  if (first == "torchrun") {
    out.name = "torchrun";
    i = 1;
  } else if (contains(first, "python") && command.size() > 2 && command[1] == "-m" &&
             command[2] == "torch.distributed.run") {
    out.name = "torch.distributed.run";
    i = 3;
  } else {
    return std::nullopt;
  }
  for (; i < command.size(); ++i) {
    const std::string& arg = command[i];
    if (std::find(kNotAScript.begin(), kNotAScript.end(), arg) != kNotAScript.end())
      throw InputError(arg, out.name + " " + arg + ": opprof profile runs the launcher's Python script in every process; "
                                                    "give the script's path (without " + arg + ")");
    if (arg == "--") {
      ++i;
      break;
    }
    if (!starts_with(arg, "-")) break;
    if (is_flag(arg) || arg.find('=') != std::string::npos) continue;
    ++i;  // the option's value
  }
  if (i >= command.size()) throw InputError(out.name, "no training script in the launcher's command");
  out.launcher.assign(command.begin(), command.begin() + static_cast<std::ptrdiff_t>(i));
  if (!out.launcher.empty() && out.launcher.back() == "--") out.launcher.pop_back();
  out.program.assign(command.begin() + static_cast<std::ptrdiff_t>(i), command.end());
  return out;
}

std::vector<std::string> launch_runner(const LauncherCommand& launcher, const std::vector<std::string>& runner_args) {
  std::vector<std::string> argv = launcher.launcher;
  argv.insert(argv.end(), {"-m", "opprof.capture"});
  argv.insert(argv.end(), runner_args.begin(), runner_args.end());
  argv.push_back("--");
  argv.insert(argv.end(), launcher.program.begin(), launcher.program.end());
  return argv;
}

}  // namespace opprof
