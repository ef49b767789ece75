#include "opprof/capture/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "opprof/util/interrupt.hpp"

namespace opprof {
namespace {

// Splits a byte stream into lines for a callback and appends it to a file.
class StreamSink {
 public:
  StreamSink(const std::string& path, std::function<void(std::string_view)> on_line)
      : on_line_(std::move(on_line)) {
    if (!path.empty()) file_ = std::fopen(path.c_str(), "wb");
  }
  ~StreamSink() {
    flush_partial();
    if (file_) std::fclose(file_);
  }
  StreamSink(const StreamSink&) = delete;
  StreamSink& operator=(const StreamSink&) = delete;
  bool file_failed(const std::string& path) const { return !path.empty() && !file_; }

  void write(const char* data, std::size_t n) {
    if (file_) std::fwrite(data, 1, n, file_);
    if (!on_line_) return;
    pending_.append(data, n);
    std::size_t start = 0;
    for (std::size_t nl; (nl = pending_.find_first_of("\n\r", start)) != std::string::npos; start = nl + 1)
      if (nl > start) on_line_(std::string_view(pending_).substr(start, nl - start));
    pending_.erase(0, start);
  }
  void flush_partial() {
    if (on_line_ && !pending_.empty()) on_line_(pending_);
    pending_.clear();
  }

 private:
  std::FILE* file_ = nullptr;
  std::function<void(std::string_view)> on_line_;
  std::string pending_;
};

}  // namespace

std::string ChildResult::describe() const {
  if (!started) return "could not start: " + error;
  if (signal) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exit status {}", exit_code);
}

std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : std::string();
  const char* path = std::getenv("PATH");
  if (!path) return {};
  std::string p(path);
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    struct stat st{};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(candidate.c_str(), X_OK) == 0)
      return candidate;
    start = end + 1;
  }
  return {};
}

ChildResult run_child(const ChildSpec& spec) {
  ChildResult result;
  if (spec.argv.empty()) {
    result.error = "empty command";
    return result;
  }
  std::string exe = find_in_path(spec.argv[0]);
  if (exe.empty()) {
    result.error = fmt::format("{}: command not found", spec.argv[0]);
    return result;
  }
  const bool capture_out = !spec.stdout_path.empty() || static_cast<bool>(spec.on_stdout_line);
  const bool capture_err = !spec.stderr_path.empty() || static_cast<bool>(spec.on_stderr_line);
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if ((capture_out && pipe2(out_pipe, O_CLOEXEC) != 0) || (capture_err && pipe2(err_pipe, O_CLOEXEC) != 0)) {
    result.error = fmt::format("pipe: {}", std::strerror(errno));
    return result;
  }
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string_view::npos && spec.env.count(std::string(kv.substr(0, eq)))) continue;
    env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : spec.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  install_interrupt_handlers();
  pid_t pid = fork();
  if (pid < 0) {
    result.error = fmt::format("fork: {}", std::strerror(errno));
    return result;
  }
  if (pid == 0) {
    // A process group of its own, so that an interrupt stops everything the child started (the
    // workload's worker processes, the application ncu launches): the parent forwards it to the group.
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (capture_out) dup2(out_pipe[1], STDOUT_FILENO);
    if (capture_err) dup2(err_pipe[1], STDERR_FILENO);
    execve(exe.c_str(), argv.data(), envp.data());
    std::fprintf(stderr, "opprof: cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
    _exit(127);
  }
  result.started = true;
  setpgid(pid, pid);  // also here: whichever of the two runs first, the group exists before a signal is sent to it
  if (spec.on_started) spec.on_started(pid);
  ForwardInterrupts forward(pid);
  int status = 0;
  bool reaped = false;
  if (capture_out) close(out_pipe[1]);
  if (capture_err) close(err_pipe[1]);
  {
    StreamSink out(spec.stdout_path, spec.on_stdout_line);
    StreamSink err(spec.stderr_path, spec.on_stderr_line);
    std::vector<pollfd> fds;
    if (capture_out) fds.push_back({out_pipe[0], POLLIN, 0});
    if (capture_err) fds.push_back({err_pipe[0], POLLIN, 0});
    char buf[1 << 16];
    while (!fds.empty()) {
      int n = poll(fds.data(), fds.size(), 500);
      // After an interrupt, once the child itself has ended, what it left running (a grandchild that
      // ignores SIGINT, as background jobs of a shell script do) would hold the pipes open: it goes.
      if (interrupted() && !reaped && waitpid(pid, &status, WNOHANG) == pid) {
        reaped = true;
        (void)kill(-pid, SIGKILL);
      }
      if (n < 0 && errno == EINTR) continue;
      for (std::size_t i = 0; i < fds.size();) {
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
          ssize_t got = read(fds[i].fd, buf, sizeof buf);
          if (got > 0) {
            (fds[i].fd == out_pipe[0] ? out : err).write(buf, static_cast<std::size_t>(got));
            ++i;
            continue;
          }
          if (got < 0 && errno == EINTR) {
            ++i;
            continue;
          }
          close(fds[i].fd);
          fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i));
          continue;
        }
        ++i;
      }
    }
  }
  while (!reaped && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // What the child started and left running after an interrupt goes too (no such group: ESRCH, ignored).
  if (interrupted()) (void)kill(-pid, SIGKILL);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

BackgroundChild::BackgroundChild(ChildSpec spec) {
  auto started = spec.on_started;
  spec.on_started = [this, started](int pid) {
    pid_.store(pid);
    if (started) started(pid);
  };
  thread_ = std::thread([this, spec = std::move(spec)] {
    result_ = run_child(spec);
    ended_.store(true);
  });
}

BackgroundChild::~BackgroundChild() {
  if (thread_.joinable()) kill();
}

ChildResult BackgroundChild::wait() {
  if (thread_.joinable()) thread_.join();
  return result_;
}

ChildResult BackgroundChild::kill() {
  // Until the fork, there is no group to signal: wait for the pid (or for a child that never started).
  while (pid_.load() == 0 && !ended_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!ended_.load()) (void)::kill(-pid_.load(), SIGKILL);
  return wait();
}

}  // namespace opprof
