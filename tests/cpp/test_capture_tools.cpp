// The pieces `opprof profile` drives children with: ncu progress parsing, and the child runner.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "opprof/capture/local_ports.hpp"
#include "opprof/capture/ncu_progress.hpp"
#include "opprof/capture/subprocess.hpp"

using namespace opprof;

TEST(NcuProgress, CountsProfiledKernelsAndEstimatesTheRest) {
  NcuProgress p(4);
  EXPECT_FALSE(p.feed("==PROF== Connected to process 859 (/usr/bin/python3.12)"));
  EXPECT_TRUE(p.feed("==PROF== Profiling \"triton_poi_fused_add_0\" - 0: 0%....50%....100% - 11 passes"));
  EXPECT_TRUE(p.feed("==PROF== Profiling \"sm80_xmma_gemm\" - 1: 0%....50%....100% - 11 passes"));
  EXPECT_EQ(p.profiled(), 2u);
  EXPECT_EQ(p.status(20.0), "2/4 kernels, 0:20 elapsed, about 0:20 left");
  EXPECT_FALSE(p.permission_denied());
}

TEST(NcuProgress, RecognisesThePermissionErrorAndEmptyWindows) {
  NcuProgress p(10);
  p.feed("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters");
  p.feed("==WARNING== No kernels were profiled.");
  EXPECT_TRUE(p.permission_denied());
  EXPECT_TRUE(p.nothing_profiled());
  EXPECT_NE(p.first_error().find("ERR_NVGPUCTRPERM"), std::string::npos);
}

TEST(Subprocess, TeesOutputToFilesAndCallbacksLineByLine) {
  auto dir = std::filesystem::temp_directory_path() / "opprof_subprocess_test";
  std::filesystem::create_directories(dir);
  ChildSpec spec;
  spec.argv = {"sh", "-c", "printf 'a\\nb\\n'; printf 'err1\\rerr2\\n' >&2; echo \"$OPPROF_TEST_VALUE\"; exit 3"};
  spec.env["OPPROF_TEST_VALUE"] = "from-env";
  spec.stdout_path = (dir / "out.txt").string();
  std::vector<std::string> out_lines, err_lines;
  spec.on_stdout_line = [&](std::string_view l) { out_lines.emplace_back(l); };
  spec.on_stderr_line = [&](std::string_view l) { err_lines.emplace_back(l); };
  ChildResult r = run_child(spec);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.describe(), "exit status 3");
  EXPECT_EQ(out_lines, (std::vector<std::string>{"a", "b", "from-env"}));
  EXPECT_EQ(err_lines, (std::vector<std::string>{"err1", "err2"}));
  std::ifstream f(spec.stdout_path);
  std::string content((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "a\nb\nfrom-env\n");
  std::filesystem::remove_all(dir);
}

TEST(Subprocess, MissingProgramIsReportedNotRun) {
  ChildSpec spec;
  spec.argv = {"opprof-no-such-program-xyz"};
  ChildResult r = run_child(spec);
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.describe().find("command not found"), std::string::npos);
}

TEST(Subprocess, ReportsTheSignalThatEndedTheChild) {
  ChildSpec spec;
  spec.argv = {"sh", "-c", "kill -9 $$"};
  spec.on_stdout_line = [](std::string_view) {};
  ChildResult r = run_child(spec);
  EXPECT_EQ(r.signal, 9);
  EXPECT_NE(r.describe().find("signal 9"), std::string::npos);
}

TEST(LocalPorts, ParsesTheKernelsEphemeralRange) {
  EXPECT_EQ(parse_ephemeral_port_range("32768\t60999\n"), std::make_pair(32768, 60999));
  EXPECT_EQ(parse_ephemeral_port_range("1024 65535"), std::make_pair(1024, 65535));
  EXPECT_EQ(parse_ephemeral_port_range(""), std::make_pair(0, 0));
  EXPECT_EQ(parse_ephemeral_port_range("32768"), std::make_pair(0, 0));
  EXPECT_EQ(parse_ephemeral_port_range("60999 32768"), std::make_pair(0, 0));
  EXPECT_EQ(parse_ephemeral_port_range("32768 70000"), std::make_pair(0, 0));
  EXPECT_EQ(parse_ephemeral_port_range("32768 60999 1"), std::make_pair(0, 0));
}

TEST(LocalPorts, APairIsFreeAndBelowTheEphemeralRange) {
  // What the machine's kernel hands to outgoing connections meanwhile must not be the pair ncu will listen on.
  std::ifstream file("/proc/sys/net/ipv4/ip_local_port_range");
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  const auto [low, high] = parse_ephemeral_port_range(text);
  const int port = free_local_port_pair();
  ASSERT_GT(port, 0);
  if (low > 20002) {
    EXPECT_LT(port + 1, low) << "ephemeral range " << low << "-" << high;
  }
}
