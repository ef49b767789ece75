#pragma once
// Running the opprof executable from a test: its exit status and output, a scratch directory per test,
// and stand-in programs (python3, ncu, nvidia-smi) written into it.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace opprof::test {

struct Result {
  int status = -1;     // exit status; -1 when a signal ended it (see signal)
  int signal = 0;      // the signal that ended it, 0 when it exited
  std::string output;  // stdout and stderr together
};

// Runs `opprof <args>` through the shell. env: "NAME=value ..." assignments for the command's
// environment; prefix: shell words run before it in the same shell (`ulimit -f 64;`), or empty.
inline Result run(const std::string& args, const std::string& env = "", const std::string& prefix = "") {
  // exec: the shell becomes opprof, so that a signal that ends it shows in the status.
  const std::string cmd = prefix + "exec env " + env + " " + std::string(OPPROF_CLI_PATH) + " " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int raw = pclose(p);
  if (WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) r.signal = WTERMSIG(raw);
  return r;
}

// Appended, not `std::string(DIR) + "/" + rel`: g++ 12 reports a false -Warray-bounds on that operator+
// chain for some lengths of DIR (so for some checkout paths).
inline std::string fixture(const std::string& rel) {
  std::string path = OPPROF_FIXTURES_DIR;
  path += '/';
  path += rel;
  return path;
}
inline std::string example(const std::string& name) { return fixture("../../examples/" + name); }

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// A file's bytes, "" when it cannot be read (opprof::read_file throws instead, and gunzips).
inline std::string text_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The process exists and is not a zombie (a killed process nobody has reaped yet).
inline bool running(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  const std::string stat = text_of("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] != 'Z';
}

// A scratch directory named after the test, removed afterwards.
class ScratchDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("opprof_cli_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
  }
  // A stand-in program: a shell script, executable.
  void write_program(const std::string& name, const std::string& script) const {
    write(name, "#!/bin/sh\n" + script);
    std::filesystem::permissions(path(name), std::filesystem::perms::owner_all);
  }
  // The first lines of a stand-in ncu that plays ncu's launch/attach (pass B started early): `--mode launch`
  // holds the program, as at its first CUDA call, until an attach has run and ended; `--mode attach` says it
  // connected and goes on as the rest of the script (the profiling: its output is the attach's), marking its
  // end however it exits. Markers in the scratch directory.
  std::string ncu_launch_and_attach() const {
    const std::string ended = path("attach_ended");
    return "if [ \"$1 $2\" = '--mode launch' ]; then\n"
           "  echo \"launch $*\" >> " + path("ncu_calls.log") + "\n"
           "  while [ ! -e " + ended + " ]; do sleep 0.02; done; rm -f " + ended + "; exit 0\n"
           "fi\n"
           "if [ \"$1 $2\" = '--mode attach' ]; then\n"
           "  echo \"attach $*\" >> " + path("ncu_calls.log") + "; trap 'touch " + ended + "' EXIT\n"
           "  echo '==PROF== Connected to process 1 (python3)'\n"
           "fi\n";
  }
  std::filesystem::path dir_;
};

}  // namespace opprof::test
