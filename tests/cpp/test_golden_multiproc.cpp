// The engine on a real multi-process job from an H200: two gloo ranks of a GPT-2 small DDP training step and
// torchrun's own process (tests/fixtures/multiproc/README.md).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "opprof/pipeline/attribute_job.hpp"
#include "opprof/report/terminal.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/store/sqlite.hpp"

#include <sqlite3.h>
#include "opprof/util/error.hpp"
#include "cli_harness.hpp"
#include "profile_fixture.hpp"

using namespace opprof;

namespace {
const std::string kJob = opprof::test::fixture("multiproc/gpt2");
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

// Cross-rank dedup on the H200 (tests/fixtures/multiproc/README.md, gpt2_l1_ranks): pass B opened ncu's range in
// rank 0 only. attribute_job reads that from the ranks' counters records, without being told, and gives rank 1
// rank 0's counters kernel by kernel; nothing is left unmatched and the propagated values are rank 0's.
TEST(GoldenMultiproc, CrossRankDedupFromTheRanksRecordsPropagatesRank0sCounters) {
  const std::string job = opprof::test::fixture("multiproc/gpt2_l1_ranks");
  opprof::testing::TempDir dir;
  JobRequest request;
  request.dir = job;
  request.request.ncu = opprof::test::fixture("multiproc/gpt2_l1_ranks/ncu.csv.gz");
  request.request.metrics = opprof::test::fixture("multiproc/gpt2_l1_ranks/metrics.tsv");
  request.request.output = dir.file("job.db");
  const JobResult r = attribute_job(request);

  ASSERT_EQ(r.job.processes.size(), 3u);
  EXPECT_EQ(r.job.processes[0].counters_window, CountersWindow::kOpened);
  EXPECT_EQ(r.job.processes[1].counters_window, CountersWindow::kNotOpened);
  EXPECT_EQ(r.job.processes[0].ncu_rows, 136u);
  EXPECT_EQ(r.job.processes[1].ncu_rows, 0u);
  ASSERT_TRUE(r.profile.dedup);
  EXPECT_EQ(r.profile.dedup->mode, DedupMode::kRanks);
  EXPECT_EQ(r.profile.dedup->kernels_replayed, 136u);
  EXPECT_EQ(r.profile.dedup->kernels_propagated, 136u);
  EXPECT_EQ(r.profile.propagation.propagated, 136u);
  ASSERT_TRUE(r.profile.match);
  EXPECT_EQ(r.profile.match->matched, 136u);
  EXPECT_TRUE(r.profile.match->unmatched_kernels.empty());
  EXPECT_TRUE(r.profile.match->unmatched_rows.empty());

  // Every kernel of rank 1 holds the values of the rank-0 kernel it names, which has the same name.
  const Timeline& tl = r.profile.timeline();
  const KernelMetrics& km = r.profile.kernel_metrics;
  ASSERT_EQ(km.metrics.size(), 2u);
  ASSERT_EQ(km.counters_from.size(), tl.kernels.size());
  const std::uint32_t rank1_pid = r.job.processes[1].pid;
  std::size_t rank1_kernels = 0;
  for (std::uint32_t k = 0; k < tl.kernels.size(); ++k) {
    if (tl.kernels.kind[k] != ActivityKind::kKernel || tl.kernels.pid[k] != rank1_pid) continue;
    ++rank1_kernels;
    const std::uint32_t from = km.counters_from[k];
    ASSERT_NE(from, kNoIndex) << k;
    EXPECT_EQ(tl.kernels.pid[from], r.job.processes[0].pid);
    EXPECT_EQ(tl.str(tl.kernels.name[from]), tl.str(tl.kernels.name[k]));
    for (std::size_t m = 0; m < km.metrics.size(); ++m) {
      EXPECT_FALSE(std::isnan(km.value(from, m))) << "rank 0's kernel " << from << " has no " << km.metrics[m].name;
      EXPECT_EQ(km.value(k, m), km.value(from, m));
    }
  }
  EXPECT_EQ(rank1_kernels, 136u);

  // Told otherwise (--counters-ranks naming rank 1, which pass B did not replay): rank 0's rows cannot become
  // rank 1's, and rank 1 has none to give, so the inputs do not fit together.
  JobRequest told = request;
  told.counters_ranks = {1};
  told.request.output.clear();
  EXPECT_THROW(attribute_job(told), InputError);
}

// What the trace says of each collective (tests/fixtures/multiproc/README.md, gpt2_l1_comm): the torch observer's
// communication marks inside gloo's all_reduce ranges and the capture's process-group mark, under the tracer's
// defaults (deferred operator ranges). DDP's two gradient buckets of GPT-2 with one block: 2,361,600 and
// 44,111,616 floats, 46,473,216 in all, the model's parameter count.
TEST(GoldenMultiproc, CollectivesCarryTheirTensorsBytesAndProcessGroup) {
  opprof::testing::TempDir dir;
  JobRequest request;
  request.dir = opprof::test::fixture("multiproc/gpt2_l1_comm");
  request.request.output = dir.file("job.db");
  const JobResult r = attribute_job(request);
  const Timeline& tl = r.profile.timeline();
  ASSERT_EQ(r.job.figures.ranks.size(), 2u);

  for (std::size_t q = 0; q < 2; ++q) {
    const std::size_t process = r.job.figures.ranks[q].process;
    std::int64_t all_reduce_bytes = 0, copy_bytes = 0;
    std::vector<std::int64_t> elements;
    std::size_t c10d = 0, copies_in_described = 0;
    for (const Collective& c : r.job.figures.collectives) {
      if (c.process != process) continue;
      // The process had one process group: every collective is in it, named by the mark or by being the only one.
      EXPECT_EQ(c.process_group, "0");
      EXPECT_EQ(c.process_group_desc, "default_pg");
      EXPECT_EQ(c.group_size, 2);
      if (c.source == "cpu_range" && c.collective == "all_reduce") {
        EXPECT_EQ(c.dtype, "Float");
        EXPECT_EQ(c.bytes, 4 * c.elements);
        elements.push_back(c.elements);
        all_reduce_bytes += c.bytes;
      } else if (c.source == "cpu_range") {
        EXPECT_EQ(c.collective, "allreduce");  // c10d::allreduce_ on the main thread: the observer reads no inputs there
        EXPECT_EQ(c.elements, -1);
        ++c10d;
      } else {
        ASSERT_EQ(c.source, "kernel");
        EXPECT_EQ(tl.kernels.kind[c.kernel_id], ActivityKind::kMemcpy);
        EXPECT_EQ(c.bytes, -1);  // a copy's own size is kernels.bytes
        copy_bytes += static_cast<std::int64_t>(tl.kernels.bytes[c.kernel_id]);
        if (c.range_id == kNoIndex) continue;
        // Launched inside a gloo:all_reduce (gloo's copy of the bucket to the host): range_id names it, and the
        // copy moves exactly the tensors the mark described.
        ++copies_in_described;
        EXPECT_EQ(tl.str(tl.ranges.text[c.range_id]), "gloo:all_reduce");
        for (const Collective& owner : r.job.figures.collectives) {
          if (owner.source == "cpu_range" && owner.range_id == c.range_id) {
            EXPECT_EQ(owner.bytes, static_cast<std::int64_t>(tl.kernels.bytes[c.kernel_id]));
          }
        }
      }
    }
    EXPECT_EQ(copies_in_described, 2u) << "rank " << q;
    std::sort(elements.begin(), elements.end());
    EXPECT_EQ(elements, (std::vector<std::int64_t>{2'361'600, 44'111'616})) << "rank " << q;
    EXPECT_EQ(c10d, 2u);
    // Independent of the marks: gloo copies each bucket to the host and back, so the copies' bytes, which CUPTI
    // recorded, are twice the tensors' bytes the observer read.
    EXPECT_EQ(copy_bytes, 2 * all_reduce_bytes) << "rank " << q;
    EXPECT_EQ(all_reduce_bytes, 185'892'864);
  }
  ASSERT_EQ(tl.process_groups.size(), 2u);  // one per rank; torchrun's own process joined none
  EXPECT_EQ(tl.metadata.count("nvtx.stray_communication_marks"), 0u);

  // The database holds the same, NULL where the trace said nothing.
  sqlite::Database db(dir.file("job.db"), SQLITE_OPEN_READONLY);
  sqlite::Statement s(db, "SELECT count(*), sum(bytes), count(bytes), count(process_group), count(DISTINCT dtype) "
                          "FROM collectives");
  ASSERT_TRUE(s.next());
  EXPECT_EQ(s.column_int(0), static_cast<std::int64_t>(r.job.figures.collectives.size()));
  EXPECT_EQ(s.column_int(1), 2 * 185'892'864);
  EXPECT_EQ(s.column_int(2), 4);
  EXPECT_EQ(s.column_int(3), s.column_int(0));
  EXPECT_EQ(s.column_int(4), 1);

  ReportOptions wide;
  wide.width = 400;
  const std::string text = render_terminal_report(ProfileReader(dir.file("job.db")), wide);
  EXPECT_NE(text.find("rank 1: all_reduce x2, 186 MB of Float in process group 0 (default_pg, 2 ranks)"),
            std::string::npos) << text;
}
