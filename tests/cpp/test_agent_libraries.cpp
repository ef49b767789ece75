// Where the agents are found (src/opprof/capture/agent_libraries.cpp), `opprof doctor`, and the metric
// set as JSON (`opprof metrics --json`, what the Python side reads).
#include <gtest/gtest.h>
#include <sys/wait.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#include <simdjson.h>
#pragma GCC diagnostic pop

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "opprof/capture/agent_libraries.hpp"
#include "opprof/capture/doctor.hpp"
#include "opprof/metrics/metric_set.hpp"
#include "opprof/report/metric_set_json.hpp"

namespace fs = std::filesystem;
using namespace opprof;

namespace {

class AgentLookup : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("opprof_agents_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path touch(const fs::path& rel) const {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << "";
    return fs::canonical(root_ / rel);
  }
  AgentSearchContext context(const std::string& exe_dir) const {
    fs::create_directories(root_ / exe_dir);  // where the opprof executable would be
    AgentSearchContext c;
    c.exe_dir = (root_ / exe_dir).string();
    c.getenv = [env = env_](std::string_view name) -> std::optional<std::string> {
      auto it = env.find(std::string(name));
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
    return c;
  }
  fs::path root_;
  std::map<std::string, std::string> env_;
};

TEST_F(AgentLookup, BuildTreeFirst) {
  const fs::path built = touch("build/" + std::string(agent_info(Agent::kTracer).build_subdir) + "/libopprof_tracer.so");
  touch("lib/libopprof_tracer.so");  // an install prefix's copy comes second
  AgentLocation loc = find_agent(Agent::kTracer, context("build"));
  EXPECT_EQ(loc.path, built.string());
  EXPECT_EQ(loc.found_by, "build tree");
  EXPECT_EQ(loc.looked_at.size(), 1u);
}

TEST_F(AgentLookup, InstallPrefixThenPythonPackage) {
  const fs::path in_prefix = touch("prefix/lib/libopprof_torch_observer.so");
  AgentLocation loc = find_agent(Agent::kTorchObserver, context("prefix/bin"));
  EXPECT_EQ(loc.path, in_prefix.string());
  EXPECT_EQ(loc.found_by, "install prefix");

  // A pip install into a venv: <venv>/bin/opprof and <venv>/lib/python3.X/site-packages/opprof/lib/.
  const fs::path in_package = touch("venv/lib/python3.11/site-packages/opprof/lib/libopprof_tracer.so");
  loc = find_agent(Agent::kTracer, context("venv/bin"));
  EXPECT_EQ(loc.path, in_package.string());
  EXPECT_EQ(loc.found_by, "Python package");
  ASSERT_EQ(loc.looked_at.size(), 3u);
  EXPECT_EQ(loc.looked_at[1], (root_ / "venv/lib/libopprof_tracer.so").string());
}

TEST_F(AgentLookup, NotFoundSaysEveryPlace) {
  fs::create_directories(root_ / "venv/bin");
  AgentLocation loc = find_agent(Agent::kTracer, context("venv/bin"));
  EXPECT_FALSE(loc.found());
  EXPECT_TRUE(loc.error.empty());
  ASSERT_EQ(loc.looked_at.size(), 3u);
  EXPECT_NE(loc.looked_at_text().find("site-packages/opprof/lib/libopprof_tracer.so"), std::string::npos)
      << loc.looked_at_text();
  std::string why;
  EXPECT_EQ(auto_backend(loc, &why), "torch");
  EXPECT_NE(why.find("not found (looked at "), std::string::npos) << why;
}

TEST_F(AgentLookup, TheEnvironmentVariableAloneDecides) {
  touch("build/" + std::string(agent_info(Agent::kTracer).build_subdir) + "/libopprof_tracer.so");
  const fs::path mine = touch("elsewhere/my_tracer.so");
  env_["OPPROF_TRACER_LIB"] = mine.string();
  AgentLocation loc = find_agent(Agent::kTracer, context("build"));
  EXPECT_EQ(loc.path, mine.string());
  EXPECT_EQ(loc.found_by, "OPPROF_TRACER_LIB");
  std::string why;
  EXPECT_EQ(auto_backend(loc, &why), "tracer");

  env_["OPPROF_TRACER_LIB"] = (root_ / "missing.so").string();
  loc = find_agent(Agent::kTracer, context("build"));
  EXPECT_FALSE(loc.found());
  EXPECT_EQ(loc.error, "OPPROF_TRACER_LIB=" + (root_ / "missing.so").string() + " names no file");
}

TEST_F(AgentLookup, CallRangesIsAFolderOfBuildsOnePerPython) {
  const std::string sub(agent_info(Agent::kCallRanges).build_subdir);
  touch("build/" + sub + "/opprof_call_ranges.cpython-312-x86_64-linux-gnu.so");
  touch("build/" + sub + "/opprof_call_ranges.cpython-313-x86_64-linux-gnu.so");
  touch("build/" + sub + "/interpreter.txt");
  AgentLocation loc = find_agent(Agent::kCallRanges, context("build"));
  EXPECT_EQ(loc.path, fs::canonical(root_ / "build" / sub).string());
  ASSERT_EQ(loc.builds.size(), 2u);
  EXPECT_NE(loc.builds[0].find("cpython-312"), std::string::npos);

  env_["OPPROF_CALL_RANGES_DIR"] = (root_ / "empty").string();
  fs::create_directories(root_ / "empty");
  loc = find_agent(Agent::kCallRanges, context("build"));
  EXPECT_FALSE(loc.found());
  EXPECT_NE(loc.error.find("holds no opprof_call_ranges.*.so"), std::string::npos) << loc.error;
}

TEST_F(AgentLookup, TheDumpToolIsFoundBesideTheExecutable) {
  const fs::path tool = touch("venv/bin/opprof_trace_dump");
  AgentLocation loc = find_agent(Agent::kTraceDump, context("venv/bin"));
  EXPECT_EQ(loc.path, tool.string());
  EXPECT_EQ(loc.found_by, "beside opprof");
}

TEST(Doctor, AMachineWithoutAGpuIsReportedNotFailed) {
  DoctorReport r;
  r.opprof_version = "0.1.0";
  r.backend = "torch";
  r.backend_why = "libopprof_tracer.so not found (looked at /x)";
  r.python.requested = "python3";
  r.python.runs = true;
  r.python.executable = "/usr/bin/python3";
  r.python.version = "3.11.7";
  r.python.torch = "2.13.0+cpu";
  r.gpu.detail = "nvidia-smi not on PATH; no /proc/driver/nvidia (no NVIDIA driver loaded)";
  r.ncu.detail = "not found (looked at PATH)";
  r.counters = {"unknown", "no /proc/driver/nvidia/params (no NVIDIA driver loaded)"};
  const std::string text = render_doctor_text(r);
  EXPECT_NE(text.find("backend         torch: libopprof_tracer.so not found"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU             none: nvidia-smi not on PATH"), std::string::npos) << text;
  EXPECT_NE(text.find("torch 2.13.0+cpu (CPU build), torch.cuda sees no GPU"), std::string::npos) << text;

  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(render_doctor_json(r)).value();
  EXPECT_EQ(std::string_view(doc["backend"].get_string().value()), "torch");
  EXPECT_FALSE(doc["gpu"]["found"].get_bool().value());
  EXPECT_EQ(std::string_view(doc["counters"]["state"].get_string().value()), "unknown");
}

TEST(Doctor, FindsNcuWhereItIsGivenAndSaysWhereItLooked) {
  std::vector<std::string> looked;
  EXPECT_EQ(find_ncu("/nonexistent/ncu", &looked), "");
  EXPECT_EQ(looked, std::vector<std::string>{"/nonexistent/ncu (--ncu)"});
}

struct CliRun {
  int status = -1;
  std::string out;
};
CliRun run_cli(const std::string& args) {
  CliRun r;
  FILE* p = popen((std::string(OPPROF_CLI_PATH) + " " + args + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int raw = pclose(p);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

TEST(Doctor, TheCommandReportsAndExitsZero) {
  CliRun r = run_cli("doctor --python /nonexistent/python --ncu /nonexistent/ncu --json");
  ASSERT_EQ(r.status, 0) << r.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(r.out).value();
  const std::string_view backend = doc["backend"].get_string().value();
  EXPECT_TRUE(backend == "tracer" || backend == "torch") << backend;
  // The tracer lookup and the backend agree, whatever this build has.
  EXPECT_EQ(doc["agents"]["tracer"]["found"].get_bool().value(), backend == "tracer");
  EXPECT_FALSE(doc["python"]["runs"].get_bool().value());
  EXPECT_EQ(std::string_view(doc["ncu"]["path"].get_string().value()), "");
  for (const char* agent : {"tracer", "torch observer", "call ranges", "trace dump"})
    EXPECT_FALSE(doc["agents"][agent].error()) << agent;
}

TEST(MetricSetJson, TheListIsTheChipsSetWithUnitsAndChips) {
  const MetricSet set = parse_metric_set(
      "gpu__time_duration.sum\tsum\ttime\t*\t\tduration\tns\n"
      "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active\twmean\ttensor\t*\t\ttensor pipe\t%\tduration\n"
      "dram__bytes_read.sum\tsum\tdram\t*\t\tDRAM\tbyte\n"
      "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active\twmean\ttensor\tgh100\t"
      "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active\tHopper GMMA\t%\tduration\n",
      "test.tsv");
  MetricSetQuery q;
  q.chip = "gh100";
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(render_metric_set_json(set, q)).value();
  EXPECT_EQ(std::string_view(doc["source"].get_string().value()), "test.tsv");
  EXPECT_TRUE(doc["catalog"].get_bool().value());
  simdjson::dom::array metrics = doc["metrics"].get_array().value();
  std::vector<std::string> names;
  for (auto m : metrics) names.emplace_back(std::string_view(m["name"].get_string().value()));
  EXPECT_EQ(names, set.for_chip("gh100").names());
  simdjson::dom::element gmma = metrics.at(1).value();
  EXPECT_EQ(std::string_view(gmma["unit"].get_string().value()), "%");
  EXPECT_EQ(std::string_view(gmma["arch"].get_string().value()), "gh100");
  simdjson::dom::array gmma_chips = gmma["chips"].get_array().value();
  ASSERT_EQ(gmma_chips.size(), 1u);
  EXPECT_EQ(std::string_view(gmma_chips.at(0).get_string().value()), "gh100");
  EXPECT_EQ(std::string_view(metrics.at(2).value()["unit"].get_string().value()), "byte");

  // The chip-independent set: the hmma row applies everywhere but on gh100, where gmma replaces it.
  q.chip = "*";
  doc = parser.parse(render_metric_set_json(set, q)).value();
  simdjson::dom::element hmma = doc["metrics"].at(1).value();
  std::vector<std::string> chips;
  simdjson::dom::array hmma_chips = hmma["chips"].get_array().value();  // named: a range over a temporary dangles
  for (auto c : hmma_chips) chips.emplace_back(std::string_view(c.get_string().value()));
  EXPECT_EQ(chips.size(), known_chips().size() - 1);
  EXPECT_EQ(std::find(chips.begin(), chips.end(), "gh100"), chips.end());
  EXPECT_FALSE(doc["catalog"].get_bool().value());
}

TEST(MetricSetJson, TheCommandFindsTheChipOfADeviceAndNamesABadLine) {
  CliRun r = run_cli("metrics --json --device-name 'NVIDIA H200' --compute-capability 9.0");
  ASSERT_EQ(r.status, 0) << r.out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(r.out).value();
  EXPECT_EQ(std::string_view(doc["device_chip"].get_string().value()), "gh100");
  EXPECT_EQ(doc["problems"].get_array().value().size(), 0u);
  EXPECT_EQ(doc["metrics"].get_array().value().size(), default_metric_set().for_chip("gh100").metrics.size());

  const fs::path bad = fs::temp_directory_path() / "opprof_bad_metrics.tsv";
  std::ofstream(bad) << "# a comment\ngpu__time_duration.sum\tmean\ttime\n";
  r = run_cli("metrics --json --metrics " + bad.string());
  fs::remove(bad);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.out.find(bad.string() + ":2:1: unknown aggregate 'mean'"), std::string::npos) << r.out;
}

}  // namespace
