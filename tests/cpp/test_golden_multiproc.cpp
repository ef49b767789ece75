// The engine on a real multi-process job from an H200: two gloo ranks of a GPT-2 small DDP training step and
// torchrun's own process (tests/fixtures/multiproc/README.md).
#include <gtest/gtest.h>

#include <string>

#include "opprof/pipeline/attribute_job.hpp"
#include "opprof/report/terminal.hpp"
#include "opprof/store/profile_reader.hpp"
#include "profile_fixture.hpp"

using namespace opprof;

namespace {
const std::string kJob = std::string(OPPROF_FIXTURES_DIR) + "/multiproc/gpt2";
}  // namespace

TEST(GoldenMultiproc, GlooRanksOfAGpt2StepAreAttributedAndCompared) {
  opprof::testing::TempDir dir;
  JobRequest request;
  request.dir = kJob;
  request.request.output = dir.file("job.db");
  const JobResult r = attribute_job(request);

  const auto& procs = r.job.processes;
  ASSERT_EQ(procs.size(), 3u);
  EXPECT_EQ(procs[0].rank, 0);
  EXPECT_EQ(procs[1].rank, 1);
  EXPECT_EQ(procs[2].folder, "pid1203");
  EXPECT_EQ(procs[2].status, "idle");  // torchrun itself: CUDA initialized, nothing run

  const Coverage& c = r.profile.coverage;
  EXPECT_EQ(c.kernels, 1898u);
  EXPECT_EQ(c.kernel_time_ns, 27'689'426);
  EXPECT_DOUBLE_EQ(c.pct(c.attributed_ns), 100.0);
  EXPECT_NEAR(c.pct(c.module_attributed_ns), 97.44, 0.01);
  EXPECT_EQ(c.by_phase_ns[static_cast<int>(Phase::kCommunication)], 0);  // gloo: no communication kernel

  const auto& ranks = r.job.figures.ranks;
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].kernels, 949u);
  EXPECT_EQ(ranks[1].kernels, 949u);
  EXPECT_EQ(ranks[0].kernel_time_ns, 13'218'787);
  EXPECT_EQ(ranks[1].kernel_time_ns, 14'470'639);
  EXPECT_NEAR(ranks[0].time_vs_mean, 0.955, 0.001);
  EXPECT_NEAR(ranks[1].time_vs_mean, 1.045, 0.001);
  // The GPU side of gloo's all-reduce: copies of the gradient buckets to and from the host, barely hidden.
  EXPECT_EQ(ranks[0].communication_copy_ns, 23'742'511);
  EXPECT_EQ(ranks[0].communication_ns, 22'764'913);  // their union (copies overlap each other)
  EXPECT_EQ(ranks[0].overlap_ns, 618'722);
  EXPECT_EQ(ranks[1].overlap_ns, 479'539);
  // The reduction on the CPU: most of the step's wall time.
  EXPECT_EQ(ranks[0].cpu_communication_ns, 256'904'936);
  EXPECT_EQ(ranks[0].span_ns, 286'359'262);
  EXPECT_EQ(ranks[1].cpu_communication_ns, 249'779'740);
  for (const RankFigures& f : ranks) {
    EXPECT_LE(f.communication_ns, f.busy_ns);
    EXPECT_LE(f.overlap_ns, f.communication_ns);
    EXPECT_LE(f.cpu_communication_ns, f.span_ns);
    EXPECT_EQ(f.communication_kernel_ns, f.by_phase_ns[static_cast<int>(Phase::kCommunication)]);
  }

  ReportOptions wide;  // one line per sentence, so that the phrases below are not cut by wrapping
  wide.width = 400;
  const std::string text = render_terminal_report(ProfileReader(dir.file("job.db")), wide);
  EXPECT_NE(text.find("Ranks (2 processes)"), std::string::npos) << text;
  EXPECT_NE(text.find("62.4% of the time the GPU was busy"), std::string::npos) << text;
  EXPECT_NE(text.find("89.0% of the ranks' wall span"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::_foreach_div_ (spread 1.23 ms)"), std::string::npos) << text;
  EXPECT_NE(text.find("not ranks: pid 1203"), std::string::npos) << text;
}
