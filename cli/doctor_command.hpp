#pragma once
#include <CLI/CLI.hpp>
#include <string>

namespace opprof::cli {

struct DoctorCommandOptions {
  std::string python = "python3";
  std::string ncu;
  bool json = false;
};

void add_doctor_command(CLI::App& app, DoctorCommandOptions& options);
int run_doctor_command(const DoctorCommandOptions& options);

}  // namespace opprof::cli
