#pragma once
// `opprof profile -- torchrun ... train.py ...`: a distributed launcher's command split into the launcher
// with its own options and the training script with its arguments, so that the capture runner can take
// the script's place in every process the launcher starts (torchrun -m opprof.capture ... -- train.py).
#include <optional>
#include <string>
#include <vector>

namespace opprof {

struct LauncherCommand {
  std::string name;                   // "torchrun" or "torch.distributed.run"
  std::vector<std::string> launcher;  // the launcher's words up to the script: "torchrun --nproc-per-node 2"
  std::vector<std::string> program;   // the training script and its arguments
};

// The launcher in command, or nothing when command starts no known launcher ("python train.py").
// Throws InputError where the launcher is told to run something that is not a Python script
// (--module, --no-python) or is given no script.
std::optional<LauncherCommand> parse_launcher(const std::vector<std::string>& command);

// The launcher's command with the capture runner in the script's place: the launcher words, then
// "-m opprof.capture", runner_args, "--" and the program.
std::vector<std::string> launch_runner(const LauncherCommand& launcher, const std::vector<std::string>& runner_args);

}  // namespace opprof
