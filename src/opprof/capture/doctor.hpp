#pragma once
// `opprof doctor`: what `opprof profile` would use on this machine and why, without running anything
// long: the capture backend, where each agent library was found (or where it was looked for), the Python
// and torch that would run the workload, the GPU, ncu and its version, and whether ncu may read hardware
// counters. It reports; it does not fail (a machine without a GPU is a finding, not an error).
#include <string>
#include <vector>

#include "opprof/capture/agent_libraries.hpp"

namespace opprof {

struct DoctorOptions {
  std::string python = "python3";  // the interpreter `opprof profile --python` would run
  std::string ncu;                 // `opprof profile --ncu`; "" looks it up
};

struct DoctorReport {
  std::string opprof_version;
  std::string opprof_path;  // the running executable

  std::string backend;      // "tracer" or "torch": what `opprof profile --backend auto` picks
  std::string backend_why;

  struct AgentEntry {
    Agent agent;
    AgentLocation location;
  };
  std::vector<AgentEntry> agents;

  struct Python {
    std::string requested;   // DoctorOptions::python
    bool runs = false;
    std::string executable;  // sys.executable
    std::string version;     // "3.11.7"
    std::string torch;       // torch.__version__, "" when torch does not import
    std::string torch_cuda;  // torch.version.cuda, "" for a CPU build
    bool cuda_available = false;
    std::string device;      // torch.cuda.get_device_name(0) when available
    std::string error;       // why it did not run, or why torch did not import
  } python;

  struct Gpu {
    bool found = false;
    std::string source;                // "nvidia-smi" or "/proc/driver/nvidia"
    std::vector<std::string> devices;  // "NVIDIA H200, driver 580.65.06"
    std::string detail;                // what was looked at when none was found
  } gpu;

  struct Ncu {
    std::string path;     // "" when not found
    std::string version;  // ncu --version's last line
    std::string detail;   // where it was looked for, or why --version failed
  } ncu;

  struct Counters {
    std::string state;   // "allowed", "admin only", "unknown"
    std::string detail;  // the figures behind it
  } counters;
};

// Looks at the machine. Runs `python -c` (to ask torch), nvidia-smi and `ncu --version`, each once.
DoctorReport run_doctor(const DoctorOptions& options);

// The backend `opprof profile --backend auto` uses, and why, given where the tracer was found.
std::string auto_backend(const AgentLocation& tracer, std::string* why);

// The ncu `opprof profile` runs: `given` looked up in PATH, else ncu in PATH or CUDA's usual places.
std::string find_ncu(const std::string& given, std::vector<std::string>* looked_at = nullptr);

// The report as text lines for a terminal, and as one JSON document.
std::string render_doctor_text(const DoctorReport& report);
std::string render_doctor_json(const DoctorReport& report);

}  // namespace opprof
