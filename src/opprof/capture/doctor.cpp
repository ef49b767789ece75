#include "opprof/capture/doctor.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "opprof/capture/subprocess.hpp"
#include "opprof/report/json_writer.hpp"
#include "opprof/util/text.hpp"

namespace fs = std::filesystem;

namespace opprof {
namespace {

constexpr const char* kNcuPlaces[] = {"/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"};
constexpr const char* kDriverDir = "/proc/driver/nvidia";

// Runs argv and returns its stdout lines; result says how it went.
std::vector<std::string> output_lines(const std::vector<std::string>& argv, ChildResult* result,
                                      std::vector<std::string>* err = nullptr) {
  std::vector<std::string> lines;
  ChildSpec spec;
  spec.argv = argv;
  spec.on_stdout_line = [&](std::string_view l) { lines.emplace_back(l); };
  spec.on_stderr_line = [&](std::string_view l) {
    if (err) err->emplace_back(l);
  };
  *result = run_child(spec);
  return lines;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One line per torch fact, in this order; a line "error: ..." when torch does not import.
constexpr const char* kPythonProbe =
    "import sys\n"
    "print(sys.executable); print(sys.version.split()[0])\n"
    "try:\n"
    "    import torch\n"
    "except Exception as e:\n"
    "    print('error: cannot import torch: %s' % e); sys.exit(0)\n"
    "print(torch.__version__); print(torch.version.cuda or '')\n"
    "ok = torch.cuda.is_available(); print(int(ok)); print(torch.cuda.get_device_name(0) if ok else '')\n";

DoctorReport::Python probe_python(const std::string& python) {
  DoctorReport::Python p;
  p.requested = python;
  ChildResult r;
  std::vector<std::string> err;
  std::vector<std::string> lines = output_lines({python, "-c", kPythonProbe}, &r, &err);
  if (!r.ok() || lines.size() < 2) {
    p.error = r.started ? r.describe() + (err.empty() ? "" : ": " + err.back()) : r.error;
    return p;
  }
  p.runs = true;
  p.executable = lines[0];
  p.version = lines[1];
  if (lines.size() > 2 && starts_with(lines[2], "error: ")) {
    p.error = lines[2].substr(7);
    return p;
  }
  if (lines.size() < 6) {
    p.error = "the torch probe printed " + std::to_string(lines.size()) + " lines";
    return p;
  }
  p.torch = lines[2];
  p.torch_cuda = lines[3];
  p.cuda_available = lines[4] == "1";
  p.device = lines[5];
  return p;
}

DoctorReport::Gpu probe_gpu() {
  DoctorReport::Gpu g;
  const std::string smi = find_in_path("nvidia-smi");
  if (!smi.empty()) {
    ChildResult r;
    std::vector<std::string> err;
    std::vector<std::string> lines =
        output_lines({smi, "--query-gpu=name,driver_version", "--format=csv,noheader"}, &r, &err);
    if (r.ok() && !lines.empty()) {
      g.found = true;
      g.source = "nvidia-smi";
      for (const auto& l : lines) {
        auto cols = split(l, ',');
        g.devices.push_back(cols.size() == 2 ? fmt::format("{}, driver {}", trim(cols[0]), trim(cols[1])) : l);
      }
      return g;
    }
    g.detail = fmt::format("{} failed ({}{}); ", smi, r.describe(), err.empty() ? "" : ": " + err.back());
  } else {
    g.detail = "nvidia-smi not on PATH; ";
  }
  std::error_code ec;
  const fs::path gpus = fs::path(kDriverDir) / "gpus";
  for (const auto& entry : fs::directory_iterator(gpus, ec)) {
    const std::string information = read_text(entry.path() / "information");
    for (std::string_view line : split_lines(information))
      if (starts_with(line, "Model:")) g.devices.emplace_back(trim(line.substr(6)));
  }
  if (!g.devices.empty()) {
    g.found = true;
    g.source = kDriverDir;
    return g;
  }
  g.detail += fs::exists(kDriverDir, ec) ? fmt::format("{} lists no GPU", gpus.string())
                                         : fmt::format("no {} (no NVIDIA driver loaded)", kDriverDir);
  return g;
}

DoctorReport::Ncu probe_ncu(const std::string& given) {
  DoctorReport::Ncu n;
  std::vector<std::string> looked_at;
  n.path = find_ncu(given, &looked_at);
  if (n.path.empty()) {
    n.detail = "not found (looked at " + join(looked_at, ", ") + ")";
    return n;
  }
  ChildResult r;
  std::vector<std::string> lines = output_lines({n.path, "--version"}, &r);
  if (r.ok() && !lines.empty())
    n.version = lines.back();
  else
    n.detail = "`ncu --version` " + r.describe();
  return n;
}

// ncu needs the driver's permission to read counters: RmProfilingAdminOnly=1 limits it to root.
DoctorReport::Counters probe_counters() {
  DoctorReport::Counters c;
  const fs::path params = fs::path(kDriverDir) / "params";
  std::error_code ec;
  if (!fs::exists(params, ec)) {
    c.state = "unknown";
    c.detail = "no " + params.string() + " (no NVIDIA driver loaded)";
    return c;
  }
  const std::string text = read_text(params);
  for (std::string_view line : split_lines(text)) {
    if (!starts_with(line, "RmProfilingAdminOnly:")) continue;
    const bool admin_only = trim(line.substr(21)) == "1";
    const bool root = geteuid() == 0;
    c.state = !admin_only || root ? "allowed" : "admin only";
    c.detail = fmt::format("RmProfilingAdminOnly={} in {}{}", admin_only ? 1 : 0, params.string(),
                           admin_only ? (root ? "; running as root" : "; ncu needs root (or the driver's "
                                                                      "NVreg_RestrictProfilingToAdminUsers=0): "
                                                                      "otherwise it fails with ERR_NVGPUCTRPERM")
                                      : "");
    return c;
  }
  c.state = "unknown";
  c.detail = params.string() + " has no RmProfilingAdminOnly line";
  return c;
}

}  // namespace

std::string find_ncu(const std::string& given, std::vector<std::string>* looked_at) {
  if (!given.empty()) {
    if (looked_at) looked_at->push_back(given + " (--ncu)");
    return find_in_path(given);
  }
  if (looked_at) looked_at->push_back("PATH");
  std::string p = find_in_path("ncu");
  if (!p.empty()) return p;
  for (const char* c : kNcuPlaces) {
    if (looked_at) looked_at->push_back(c);
    if (fs::exists(c)) return c;
  }
  return {};
}

std::string auto_backend(const AgentLocation& tracer, std::string* why) {
  if (tracer.found())
    *why = fmt::format("{} found ({})", agent_info(Agent::kTracer).file, tracer.found_by);
  else
    *why = tracer.error.empty() ? fmt::format("{} not found (looked at {})", agent_info(Agent::kTracer).file,
                                              tracer.looked_at_text())
                                : tracer.error;
  return auto_capture_backend(tracer.found());
}

DoctorReport run_doctor(const DoctorOptions& options) {
  DoctorReport r;
  r.opprof_version = OPPROF_VERSION;
  std::error_code ec;
  r.opprof_path = fs::read_symlink("/proc/self/exe", ec).string();
  for (Agent a : kAllAgents) r.agents.push_back({a, find_agent(a)});
  r.backend = auto_backend(r.agents.front().location, &r.backend_why);
  r.python = probe_python(options.python);
  r.gpu = probe_gpu();
  r.ncu = probe_ncu(options.ncu);
  r.counters = probe_counters();
  return r;
}

std::string render_doctor_text(const DoctorReport& r) {
  std::string out;
  auto line = [&](std::string_view label, const std::string& text) {
    out += fmt::format("{:<16}{}\n", label, text);
  };
  line("opprof", fmt::format("{} ({})", r.opprof_version, r.opprof_path));
  line("backend", fmt::format("{}: {}", r.backend, r.backend_why));
  for (const auto& [agent, loc] : r.agents) {
    const std::string name(agent_info(agent).name);
    if (loc.found())
      line(name, fmt::format("{} ({}){}", loc.path, loc.found_by,
                             loc.builds.empty() ? "" : ": " + join(loc.builds, ", ")));
    else
      line(name, loc.error.empty() ? "not found (looked at " + loc.looked_at_text() + ")" : loc.error);
  }
  const auto& p = r.python;
  if (!p.runs)
    line("python", fmt::format("{} does not run: {}", p.requested, p.error));
  else if (p.torch.empty())
    line("python", fmt::format("{} {}; {}", p.executable, p.version, p.error));
  else
    line("python", fmt::format("{} {}, torch {} ({}), torch.cuda {}", p.executable, p.version, p.torch,
                               p.torch_cuda.empty() ? "CPU build" : "CUDA " + p.torch_cuda,
                               p.cuda_available ? "sees " + p.device : "sees no GPU"));
  if (r.gpu.found)
    line("GPU", fmt::format("{} ({})", join(r.gpu.devices, "; "), r.gpu.source));
  else
    line("GPU", "none: " + r.gpu.detail + "; `opprof profile` needs an NVIDIA GPU, `opprof attribute` and "
                "`opprof report` work here");
  line("ncu", r.ncu.path.empty() ? r.ncu.detail
                                 : r.ncu.path + (r.ncu.version.empty() ? " (" + r.ncu.detail + ")" : ", " + r.ncu.version));
  line("counters", fmt::format("{}: {}", r.counters.state, r.counters.detail));
  return out;
}

std::string render_doctor_json(const DoctorReport& r) {
  JsonWriter w;
  w.begin_object();
  w.key("opprof").begin_object().key("version").string(r.opprof_version).key("path").string(r.opprof_path).end_object();
  w.key("backend").string(r.backend);
  w.key("backend_why").string(r.backend_why);
  w.key("agents").begin_object();
  for (const auto& [agent, loc] : r.agents) {
    w.key(agent_info(agent).name).begin_object();
    w.key("found").boolean(loc.found());
    w.key("path").string(loc.path);
    w.key("found_by").string(loc.found_by);
    w.key("looked_at").begin_array();
    for (const auto& l : loc.looked_at) w.string(l);
    w.end_array();
    if (agent == Agent::kCallRanges) {
      w.key("builds").begin_array();
      for (const auto& b : loc.builds) w.string(b);
      w.end_array();
    }
    w.key("error").string(loc.error);
    w.end_object();
  }
  w.end_object();
  const auto& p = r.python;
  w.key("python").begin_object();
  w.key("requested").string(p.requested).key("runs").boolean(p.runs).key("executable").string(p.executable);
  w.key("version").string(p.version).key("torch").string(p.torch).key("torch_cuda").string(p.torch_cuda);
  w.key("cuda_available").boolean(p.cuda_available).key("device").string(p.device).key("error").string(p.error);
  w.end_object();
  w.key("gpu").begin_object().key("found").boolean(r.gpu.found).key("source").string(r.gpu.source);
  w.key("devices").begin_array();
  for (const auto& d : r.gpu.devices) w.string(d);
  w.end_array().key("detail").string(r.gpu.detail).end_object();
  w.key("ncu").begin_object().key("path").string(r.ncu.path).key("version").string(r.ncu.version);
  w.key("detail").string(r.ncu.detail).end_object();
  w.key("counters").begin_object().key("state").string(r.counters.state).key("detail").string(r.counters.detail);
  w.end_object();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace opprof
