#include "opprof/capture/clocks.hpp"

#include <fmt/format.h>

#include "opprof/capture/subprocess.hpp"
#include "opprof/util/text.hpp"

namespace opprof {

ClockLock::ClockLock(int gpu) : gpu_(gpu) {
  if (find_in_path("nvidia-smi").empty()) {
    error_ = "nvidia-smi not found";
    return;
  }
  std::string out;
  ChildSpec query;
  query.argv = {"nvidia-smi", "-i", std::to_string(gpu), "--query-gpu=clocks.default_applications.graphics",
                "--format=csv,noheader,nounits"};
  query.on_stdout_line = [&](std::string_view line) { out += std::string(trim(line)); };
  ChildResult q = run_child(query);
  try {
    mhz_ = q.ok() ? std::stoi(out) : 0;
  } catch (const std::exception&) {
    mhz_ = 0;
  }
  if (mhz_ <= 0) {
    error_ = fmt::format("could not read the base clock of GPU {} ({})", gpu, q.ok() ? out : q.describe());
    return;
  }
  std::string msg;
  ChildSpec lock;
  lock.argv = {"nvidia-smi", "-i", std::to_string(gpu), fmt::format("--lock-gpu-clocks={},{}", mhz_, mhz_)};
  lock.on_stdout_line = [&](std::string_view line) { msg += std::string(line) + " "; };
  lock.on_stderr_line = lock.on_stdout_line;
  ChildResult l = run_child(lock);
  if (!l.ok()) {
    error_ = fmt::format("nvidia-smi --lock-gpu-clocks failed ({}): {}", l.describe(), trim(msg));
    return;
  }
  locked_ = true;
}

ClockLock::~ClockLock() {
  if (!locked_) return;
  ChildSpec reset;
  reset.argv = {"nvidia-smi", "-i", std::to_string(gpu_), "--reset-gpu-clocks"};
  reset.on_stdout_line = [](std::string_view) {};
  ChildResult r = run_child(reset);
  if (!r.ok()) fmt::print(stderr, "opprof: warning: could not restore the clocks of GPU {} ({})\n", gpu_, r.describe());
}

}  // namespace opprof
