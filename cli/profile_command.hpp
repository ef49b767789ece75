#pragma once
#include <CLI/CLI.hpp>

#include "opprof/pipeline/capture_plan.hpp"

namespace opprof::cli {

struct ProfileOptions {
  ProfileRequest request;
  bool quiet = false;
};

void add_profile_command(CLI::App& app, ProfileOptions& options);
// Runs the capture plan (opprof/pipeline/profile_run.hpp) and prints the report; the exit code.
int run_profile(const ProfileOptions& options);

}  // namespace opprof::cli
