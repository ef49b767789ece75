#pragma once
// Runs a child process (the workload, ncu) with its output teed to files and handed to callbacks line
// by line, so that long passes show progress and nothing they print is lost.
#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace opprof {

struct ChildSpec {
  std::vector<std::string> argv;                // argv[0] is looked up in PATH
  std::map<std::string, std::string> env;       // added to (or replacing in) the parent's environment
  std::string stdout_path;                      // file receiving stdout ("" = a callback only, or the parent's)
  std::string stderr_path;                      // file receiving stderr ("" = a callback only, or the parent's)
  std::function<void(std::string_view)> on_stdout_line;
  std::function<void(std::string_view)> on_stderr_line;
  std::function<void(int pid)> on_started;      // called once the child runs (its pid is its process group)
};

struct ChildResult {
  bool started = false;
  int exit_code = -1;    // when it exited
  int signal = 0;        // when a signal ended it
  std::string error;     // why it could not start
  bool ok() const { return started && signal == 0 && exit_code == 0; }
  std::string describe() const;  // "exit status 3", "killed by signal 9 (Killed)", "could not start: ..."
};

// Starts the child in a process group of its own and waits for it. SIGINT and SIGTERM are passed on to
// that group (a second one as SIGKILL) and, after an interrupt, whatever of the group outlived the child
// is killed; what the parent does about the interrupt follows util/interrupt.hpp.
ChildResult run_child(const ChildSpec& spec);

// A child that runs while the caller does other work: pass B's process, started under `ncu --mode launch`
// while pass A runs. run_child runs it on a thread of its own, so the callbacks are called on that thread.
// Destroyed before the child ended, it kills the child's process group.
class BackgroundChild {
 public:
  explicit BackgroundChild(ChildSpec spec);
  ~BackgroundChild();
  BackgroundChild(const BackgroundChild&) = delete;
  BackgroundChild& operator=(const BackgroundChild&) = delete;

  bool ended() const { return ended_.load(); }
  ChildResult wait();  // waits for the child's end
  ChildResult kill();  // SIGKILL to its process group, then waits

 private:
  std::atomic<int> pid_{0};
  std::atomic<bool> ended_{false};
  ChildResult result_;
  std::thread thread_;
};

// Full path of an executable found in PATH, or "" when none.
std::string find_in_path(const std::string& name);

}  // namespace opprof
