#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace opprof::cli {

struct ProfileOptions {
  std::string workload;
  std::vector<std::string> command;
  std::string compile = "eager";
  std::string compile_mode;  // torch.compile(mode=...); empty: torch's default
  int warmup = 3;
  int iters = 1;
  bool train = false;
  std::string output;
  std::string metrics;
  std::string clock_control = "none";
  bool lock_clocks = false;
  std::string ncu;
  std::string python = "python3";
  bool skip_ncu = false;
  bool quiet = false;
  // Pass A's capture: tracer (libopprof_tracer.so), torch (torch.profiler), or auto: the tracer where it
  // was built, else torch.
  std::string backend = "auto";
};

void add_profile_command(CLI::App& app, ProfileOptions& options);
int run_profile(ProfileOptions options);

}  // namespace opprof::cli
