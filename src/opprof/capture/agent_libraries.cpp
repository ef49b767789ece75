#include "opprof/capture/agent_libraries.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "contract/opprof_contract.h"
#include "opprof/util/text.hpp"

namespace fs = std::filesystem;

namespace opprof {
namespace {

// The in-process agents' file names and variables are the contract's (python/opprof finds them by the same
// names); the dump tool is found by the engine alone.
constexpr AgentInfo kAgents[] = {
    {"tracer", OPPROF_TRACER_LIBRARY, OPPROF_ENV_TRACER_LIB, "agents/tracer"},
    {"torch observer", OPPROF_TORCH_OBSERVER_LIBRARY, OPPROF_ENV_TORCH_OBSERVER_LIB, "agents/torch_observer"},
    {"call ranges", OPPROF_CALL_RANGES_EXTENSION, OPPROF_ENV_CALL_RANGES_DIR, "agents/call_ranges"},
    {"trace dump", "opprof_trace_dump", "OPPROF_TRACE_DUMP", "agents/tracer"},
};

// The folder inside an installed wheel's package where `pip install .` puts the agents.
constexpr std::string_view kPackageLibDir = "opprof/lib";

// The extension's builds in dir: opprof_call_ranges.cpython-312-x86_64-linux-gnu.so and the like.
std::vector<std::string> call_range_builds(const fs::path& dir, std::string_view prefix) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file(ec) && starts_with(name, std::string(prefix) + ".") && name.size() > 3 &&
        name.compare(name.size() - 3, 3, ".so") == 0)
      out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// site-packages (or Debian's dist-packages) folders of the Pythons under <prefix>/lib, sorted.
std::vector<fs::path> package_dirs(const fs::path& prefix) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(prefix / "lib", ec)) {
    if (!entry.is_directory(ec) || !starts_with(entry.path().filename().string(), "python3")) continue;
    for (const char* packages : {"site-packages", "dist-packages"}) {
      const fs::path p = entry.path() / packages / kPackageLibDir;
      if (fs::is_directory(entry.path() / packages, ec)) out.push_back(p);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Records the place in dir as looked at; true (and fills loc) when the agent is there.
bool try_place(const AgentInfo& info, Agent agent, const fs::path& dir, std::string_view found_by,
               AgentLocation& loc) {
  std::error_code ec;
  if (agent == Agent::kCallRanges) {
    loc.looked_at.push_back((dir / (std::string(info.file) + ".*.so")).lexically_normal().string());
    std::vector<std::string> builds = call_range_builds(dir, info.file);
    if (builds.empty()) return false;
    loc.path = fs::canonical(dir, ec).string();
    loc.builds = std::move(builds);
  } else {
    const fs::path p = dir / info.file;
    loc.looked_at.push_back(p.lexically_normal().string());
    if (!fs::is_regular_file(p, ec)) return false;
    loc.path = fs::canonical(p, ec).string();
  }
  loc.found_by = std::string(found_by);
  return true;
}

}  // namespace

const AgentInfo& agent_info(Agent agent) { return kAgents[static_cast<int>(agent)]; }

std::string auto_capture_backend(bool tracer_found) { return tracer_found ? "tracer" : "torch"; }

std::string AgentLocation::looked_at_text() const { return join(looked_at, ", "); }

AgentSearchContext AgentSearchContext::from_this_process() {
  AgentSearchContext c;
  c.getenv = [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
  };
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) c.exe_dir = exe.parent_path().string();
  return c;
}

AgentLocation find_agent(Agent agent, const AgentSearchContext& context) {
  const AgentInfo& info = agent_info(agent);
  AgentLocation loc;
  if (std::optional<std::string> env = context.getenv(info.env_var)) {
    const fs::path p = fs::absolute(*env);
    if (agent == Agent::kCallRanges) {
      try_place(info, agent, p, info.env_var, loc);
    } else {  // the variable names the file itself, whatever its name
      std::error_code ec;
      loc.looked_at.push_back(p.lexically_normal().string());
      if (fs::is_regular_file(p, ec)) {
        loc.path = fs::canonical(p, ec).string();
        loc.found_by = std::string(info.env_var);
      }
    }
    if (!loc.found())
      loc.error = std::string(info.env_var) + "=" + *env +
                  (agent == Agent::kCallRanges ? " holds no " + std::string(info.file) + ".*.so" : " names no file");
    return loc;
  }
  if (context.exe_dir.empty()) {
    loc.looked_at.push_back("nothing else: /proc/self/exe unreadable");
    return loc;
  }
  const fs::path dir = context.exe_dir;
  if (try_place(info, agent, dir / info.build_subdir, "build tree", loc)) return loc;
  if (agent == Agent::kTraceDump) {
    try_place(info, agent, dir, "beside opprof", loc);
    return loc;
  }
  if (try_place(info, agent, dir / ".." / "lib", "install prefix", loc)) return loc;
  for (const fs::path& p : package_dirs(dir / ".."))
    if (try_place(info, agent, p, "Python package", loc)) return loc;
  if (package_dirs(dir / "..").empty())
    loc.looked_at.push_back(
        (dir / ".." / "lib" / "python3.*" / "site-packages" / kPackageLibDir / info.file).lexically_normal().string());
  return loc;
}

}  // namespace opprof
