// The tracer's NVTX side, injected into this process the way NVTX_INJECTION64_PATH injects it into a
// user's program (no GPU needed: NVTX calls never reach CUDA). NVTX reads the variable at the process's
// first NVTX call, so every test sets it first; gtest_discover_tests runs each test in a process of its own.
#include <gtest/gtest.h>
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#ifndef OPPROF_TRACER_PATH
#error "OPPROF_TRACER_PATH (libopprof_tracer.so) must be defined"
#endif

namespace {

// Domain handles live as long as the process (the tracer never frees them): kept in statics, so that
// LeakSanitizer sees them reachable at exit.
nvtxDomainHandle_t g_modules = nullptr;
nvtxDomainHandle_t g_operators = nullptr;

class TracerNvtx : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto log = std::filesystem::temp_directory_path() / ("opprof_tracer_nvtx_" + std::to_string(getpid()) + ".opprof");
    setenv("OPPROF_TRACE_FILE", log.c_str(), 1);
    setenv("NVTX_INJECTION64_PATH", OPPROF_TRACER_PATH, 1);
    g_modules = nvtxDomainCreateA("test.modules");
    g_operators = nvtxDomainCreateA("opprof.torch");  // the tracer's deferred domain
  }
  static void TearDownTestSuite() { std::filesystem::remove(std::getenv("OPPROF_TRACE_FILE")); }

  static int push(nvtxDomainHandle_t domain, const char* text) {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.category = 1;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = text;
    return nvtxDomainRangePushEx(domain, &a);
  }
};

// NVTX's contract: a push returns the 0-based level of the range it opens, a pop the level of the range it
// closes, -1 when the domain has none open. Without an injection NVTX answers with a fixed value, so these
// also show the tracer is the one answering.
TEST_F(TracerNvtx, PushAndPopReturnTheLevelWithinTheDomain) {
  EXPECT_EQ(nvtxRangePushA("outer"), 0);
  EXPECT_EQ(nvtxRangePushA("inner"), 1);
  EXPECT_EQ(nvtxRangePop(), 1);
  EXPECT_EQ(nvtxRangePop(), 0);
  EXPECT_EQ(nvtxRangePop(), -1);
}

TEST_F(TracerNvtx, DomainsNestIndependently) {
  EXPECT_EQ(push(g_modules, "block"), 0);
  EXPECT_EQ(nvtxRangePushA("default"), 0);
  EXPECT_EQ(push(g_modules, "attn"), 1);
  EXPECT_EQ(nvtxRangePushA("default inner"), 1);
  // A pop closes its own domain's innermost range, whatever was pushed in other domains after it.
  EXPECT_EQ(push(g_modules, "proj"), 2);
  EXPECT_EQ(nvtxRangePop(), 1);
  EXPECT_EQ(nvtxRangePop(), 0);
  EXPECT_EQ(nvtxDomainRangePop(g_modules), 2);
  EXPECT_EQ(push(g_modules, "mlp"), 2);
  EXPECT_EQ(nvtxDomainRangePop(g_modules), 2);
  EXPECT_EQ(nvtxDomainRangePop(g_modules), 1);
  EXPECT_EQ(nvtxDomainRangePop(g_modules), 0);
  EXPECT_EQ(nvtxDomainRangePop(g_modules), -1);
}

TEST_F(TracerNvtx, DeferredOperatorRangesNestLikeOthers) {
  EXPECT_EQ(push(g_modules, "block"), 0);
  EXPECT_EQ(push(g_operators, "aten::linear"), 0);
  EXPECT_EQ(push(g_operators, "aten::addmm"), 1);
  EXPECT_EQ(push(g_modules, "inside an operator"), 1);
  EXPECT_EQ(nvtxDomainRangePop(g_operators), 1);
  EXPECT_EQ(push(g_operators, "aten::t"), 1);
  EXPECT_EQ(nvtxDomainRangePop(g_operators), 1);
  EXPECT_EQ(nvtxDomainRangePop(g_operators), 0);
  EXPECT_EQ(nvtxDomainRangePop(g_operators), -1);
  EXPECT_EQ(nvtxDomainRangePop(g_modules), 1);
  EXPECT_EQ(nvtxDomainRangePop(g_modules), 0);
}

}  // namespace

// A job's process (OPPROF_TRACE_PER_PROCESS=1) writes into a folder of its own beside OPPROF_TRACE_FILE,
// named by the RANK its launcher set. The tracer opens its log at the first NVTX call, so this needs a process
// where no other test made one (ctest runs every test in its own).
TEST(TracerPerProcess, LogGoesToTheRanksFolder) {
  if (std::getenv("OPPROF_TRACE_FILE") != nullptr) GTEST_SKIP() << "the tracer was set up by another test in this process";
  const auto dir = std::filesystem::temp_directory_path() / ("opprof_tracer_job_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  setenv("OPPROF_TRACE_FILE", (dir / "trace.opprof").c_str(), 1);
  setenv("OPPROF_TRACE_PER_PROCESS", "1", 1);
  setenv("RANK", "5", 1);
  setenv("NVTX_INJECTION64_PATH", OPPROF_TRACER_PATH, 1);
  nvtxRangePushA("first call: NVTX loads the tracer");
  nvtxRangePop();
  EXPECT_TRUE(std::filesystem::exists(dir / "rank5" / "trace.opprof"));
  EXPECT_FALSE(std::filesystem::exists(dir / "trace.opprof"));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
