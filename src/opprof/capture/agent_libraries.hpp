#pragma once
// Where the in-process agents (agents/: the tracer, the torch observer, the call-ranges extension) and the
// tracer's dump tool are found, in one place for `opprof profile` and `opprof doctor`.
// python/opprof/files.py follows the same order on the Python side.
//
// Order: the agent's environment variable (when set, it alone decides); the build tree
// (<exe dir>/<build subdir>/); an install prefix (<exe dir>/../lib/); the Python package of an installed
// wheel (<exe dir>/../lib/python3.*/{site,dist}-packages/opprof/lib/, where `pip install .` puts them).
// The dump tool, an executable, is looked for in the build tree and beside the opprof executable.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opprof {

enum class Agent {
  kTracer,         // libopprof_tracer.so: CUPTI activity + NVTX injection
  kTorchObserver,  // libopprof_torch_observer.so: PyTorch operator ranges through RecordFunction
  kCallRanges,     // opprof_call_ranges<EXT_SUFFIX>: module ranges through sys.monitoring (one per Python)
  kTraceDump,      // opprof_trace_dump: prints a tracer log record by record (a tool, not loaded in-process)
};
inline constexpr Agent kAllAgents[] = {Agent::kTracer, Agent::kTorchObserver, Agent::kCallRanges, Agent::kTraceDump};

struct AgentInfo {
  std::string_view name;          // "tracer"
  std::string_view file;          // file name, or for kCallRanges the prefix of the extension's file names
  std::string_view env_var;       // override: a file (a folder for kCallRanges)
  std::string_view build_subdir;  // folder of the build tree, relative to the opprof executable
};
const AgentInfo& agent_info(Agent agent);

struct AgentLocation {
  std::string path;                    // the file (kCallRanges: the folder of its builds); empty: not found
  std::string found_by;                // "OPPROF_TRACER_LIB", "build tree", "install prefix", "Python package"
  std::vector<std::string> looked_at;  // every place tried, in order, the found one last
  std::vector<std::string> builds;     // kCallRanges: the extension files in that folder (one per Python)
  std::string error;                   // the environment variable names nothing there; path is empty

  bool found() const { return !path.empty(); }
  // "a, b, c": where it looked, for messages.
  std::string looked_at_text() const;
};

// What the lookup reads from the process: the environment and the folder of the running executable.
struct AgentSearchContext {
  std::function<std::optional<std::string>(std::string_view)> getenv;
  std::string exe_dir;  // empty: /proc/self/exe unreadable; only the environment variable is tried

  static AgentSearchContext from_this_process();
};

AgentLocation find_agent(Agent agent, const AgentSearchContext& context = AgentSearchContext::from_this_process());

// The capture backend `opprof profile --backend auto` uses: "tracer" where the tracer library was found, else
// "torch" (torch.profiler). The one rule: `opprof profile` runs by it and `opprof doctor` reports it.
std::string auto_capture_backend(bool tracer_found);

}  // namespace opprof
