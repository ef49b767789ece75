// Multi-process jobs: the launcher's command, the capture plan under torchrun, communication by name, and
// a job of hand-made rank captures attributed into one profile (ranks, missing and unreadable processes,
// communication and its overlap, ncu rows per process) and reported.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <sqlite3.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "opprof/attribute/communication.hpp"
#include "opprof/job/figures.hpp"
#include "opprof/pipeline/attribute_job.hpp"
#include "opprof/pipeline/profile_run.hpp"
#include "opprof/pipeline/capture_plan.hpp"
#include "opprof/pipeline/launcher.hpp"
#include "opprof/report/json.hpp"
#include "opprof/report/terminal.hpp"
#include "opprof/store/profile_reader.hpp"
#include "opprof/util/error.hpp"
#include "profile_fixture.hpp"

using namespace opprof;
using opprof::testing::TempDir;

namespace {

using Args = std::vector<std::string>;

std::string launcher_error(const Args& command) {
  try {
    parse_launcher(command);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

void write(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// One complete event as torch.profiler writes it; ts and dur in microseconds.
std::string event(const std::string& cat, const std::string& name, int pid, int tid, double ts, double dur,
                  const std::string& args) {
  return fmt::format(R"({{"ph": "X", "cat": "{}", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{{}}}}})",
                     cat, name, pid, tid, ts, dur, args);
}

std::string kernel_args(int correlation, int stream) {
  return fmt::format(R"("External id": {0}, "device": 0, "context": 1, "stream": {1}, "correlation": {0}, )"
                     R"("registers per thread": 32, "shared memory": 0, "grid": [1, 1, 1], "block": [128, 1, 1])",
                     correlation, stream);
}

// A rank's data-parallel step in miniature: a GEMM (10 us, and 5 us more per rank), an NCCL all-reduce
// launched from c10d::allreduce_ that overlaps the GEMM's end, and a broadcast whose device copy gloo
// makes inside c10d::broadcast_, while gloo's own range runs on its worker thread.
std::string rank_trace(int pid, int rank) {
  const double gemm = 10 + 5 * rank;
  const std::vector<std::string> events = {
      event("cpu_op", "aten::mm", pid, 1, 10, 10, R"("External id": 1)"),
      event("cuda_runtime", "cudaLaunchKernel", pid, 1, 11, 2, R"("External id": 1, "correlation": 1)"),
      event("kernel", "gemm_kernel", pid, 7, 20, gemm, kernel_args(1, 7)),
      event("cpu_op", "c10d::allreduce_", pid, 1, 14, 4, R"("External id": 2)"),
      event("cuda_runtime", "cudaLaunchKernel", pid, 1, 15, 2, R"("External id": 2, "correlation": 2)"),
      event("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", pid, 8, 25, 20, kernel_args(2, 8)),
      event("cpu_op", "c10d::broadcast_", pid, 1, 50, 8, R"("External id": 3)"),
      event("cuda_runtime", "cudaMemcpyAsync", pid, 1, 51, 2, R"("External id": 3, "correlation": 3)"),
      event("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", pid, 7, 60, 4,
            R"("External id": 3, "device": 0, "context": 1, "stream": 7, "correlation": 3, "bytes": 1024)"),
      event("cpu_op", "gloo:broadcast", pid, 2, 55, 10, R"("External id": 4)"),
  };
  std::string out = "{\"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) out += events[i] + (i + 1 < events.size() ? ",\n" : "\n");
  return out + "]}\n";
}

std::string record(int pid, int rank, int world) {
  return fmt::format(R"({{"status": "ok", "process": {{"pid": {}, "rank": {}, "local_rank": {}, "world_size": {}}}}})",
                     pid, rank, rank, world);
}

// Pass B's rows: each rank's GEMM and all-reduce by its own pass-B pid, and one row of a process of no rank.
std::string ncu_csv() {
  std::string out =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
      "\"Grid Size\",\"Device\",\"CC\",\"gpu__time_duration.sum\"\n"
      "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"ns\"\n";
  const std::vector<std::pair<int, std::string>> rows = {{200, "gemm_kernel"},
                                                         {201, "gemm_kernel"},
                                                         {200, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"},
                                                         {201, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"},
                                                         {999, "gemm_kernel"}};
  for (std::size_t r = 0; r < rows.size(); ++r)
    out += fmt::format("\"{}\",\"{}\",\"python3\",\"h\",\"{}\",\"1\",\"7\",\"(128, 1, 1)\",\"(1, 1, 1)\",\"0\",\"9.0\","
                       "\"{}\"\n",
                       r, rows[r].first, rows[r].second, 1000 * (r + 1));
  return out;
}

// rank0/, rank1/ (with pass-B records), a pid folder whose trace is cut short, and a world of three.
void write_job(const std::filesystem::path& dir) {
  for (int rank = 0; rank < 2; ++rank) {
    const auto folder = dir / fmt::format("rank{}", rank);
    write(folder / "trace.json", rank_trace(100 + rank, rank));
    write(folder / "capture.json", record(100 + rank, rank, 3));
    write(folder / "capture_counters.json", record(200 + rank, rank, 3));
  }
  const std::string cut = rank_trace(300, 0);
  write(dir / "pid300" / "trace.json", cut.substr(0, cut.size() / 2));
  write(dir / "ncu.csv", ncu_csv());
}

std::int64_t query_int(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
  std::int64_t v = -12345;
  if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  return v;
}

}  // namespace

TEST(Launcher, TorchrunOptionsAreSplitFromTheScript) {
  const auto l = parse_launcher({"torchrun", "--nproc-per-node", "2", "--standalone", "--master-port=29501", "train.py",
                                 "--lr", "3e-4"});
  ASSERT_TRUE(l);
  EXPECT_EQ(l->name, "torchrun");
  EXPECT_EQ(l->launcher, (Args{"torchrun", "--nproc-per-node", "2", "--standalone", "--master-port=29501"}));
  EXPECT_EQ(l->program, (Args{"train.py", "--lr", "3e-4"}));
  EXPECT_EQ(launch_runner(*l, {"--pass", "timeline"}),
            (Args{"torchrun", "--nproc-per-node", "2", "--standalone", "--master-port=29501", "-m", "opprof.capture",
                  "--pass", "timeline", "--", "train.py", "--lr", "3e-4"}));

  const auto m = parse_launcher({"/usr/bin/python3", "-m", "torch.distributed.run", "--nnodes=1", "-r", "3", "t.py"});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->name, "torch.distributed.run");
  EXPECT_EQ(m->launcher, (Args{"/usr/bin/python3", "-m", "torch.distributed.run", "--nnodes=1", "-r", "3"}));
  EXPECT_EQ(m->program, (Args{"t.py"}));
  EXPECT_FALSE(parse_launcher({"python", "train.py"}));
  EXPECT_FALSE(parse_launcher({"python", "-m", "torch.utils.bottleneck", "t.py"}));
}

TEST(Launcher, RunsOnlyPythonScripts) {
  EXPECT_NE(launcher_error({"torchrun", "-m", "mypkg.train"}).find("give the script's path"), std::string::npos);
  EXPECT_NE(launcher_error({"torchrun", "--no-python", "./a.out"}).find("--no-python"), std::string::npos);
  EXPECT_NE(launcher_error({"torchrun", "--nproc-per-node", "2"}).find("no training script"), std::string::npos);
}

TEST(Launcher, TorchrunPlanRunsTheCaptureRunnerInEveryProcess) {
  ProfileRequest r;
  r.command = {"torchrun", "--nproc-per-node", "2", "train.py", "--steps", "1"};
  r.output = "out";
  CaptureEnvironment env;
  env.gpu_probe.started = true;
  env.gpu_probe.exit_code = 0;
  env.gpu_name = "NVIDIA H200";
  env.ncu = "/usr/local/cuda/bin/ncu";
  env.tracer.path = "/opt/lib/libopprof_tracer.so";
  env.cwd = "/home/u";
  const CapturePlan plan = build_capture_plan(r, env);
  EXPECT_EQ(plan.launcher, "torchrun");
  EXPECT_TRUE(plan.per_process);
  EXPECT_EQ(plan.timeline.argv,
            (Args{"torchrun", "--nproc-per-node", "2", "-m", "opprof.capture", "--pass", "timeline", "--out", "/home/u/out",
                  "--warmup", "3", "--iters", "1", "--backend", "tracer", "--", "train.py", "--steps", "1"}));
  EXPECT_EQ(plan.timeline.env.at("OPPROF_TRACE_PER_PROCESS"), "1");
  EXPECT_EQ(plan.timeline.env.at("OPPROF_TRACE_DEFER_OPERATORS"), "0");  // gloo's CPU ranges launch nothing
  EXPECT_EQ(plan.timeline.env.at("OPPROF_TRACE_FILE"), "/home/u/out/trace.opprof");
  const CapturePass b = counters_pass(plan, env, {"gpu__time_duration.sum"}, false);
  EXPECT_EQ(b.env.at("OPPROF_TRACE_PER_PROCESS"), "1");
  const Args tail(b.argv.end() - 14, b.argv.end());
  EXPECT_EQ(tail, (Args{"-m", "opprof.capture", "--pass", "counters", "--out", "/home/u/out", "--warmup", "3", "--iters",
                        "1", "--", "train.py", "--steps", "1"}));
  // A plain script keeps one process and one capture.
  r.command = {"python", "train.py"};
  EXPECT_FALSE(build_capture_plan(r, env).per_process);
  r.multi_process = true;
  EXPECT_TRUE(build_capture_plan(r, env).per_process);
}

TEST(Communication, NamesCollectivesOfRangesAndKernels) {
  const std::pair<const char*, const char*> ranges[] = {
      {"c10d::allreduce_", "allreduce"}, {"c10d::_allgather_base_", "allgather_base"}, {"gloo:all_reduce", "all_reduce"},
      {"nccl:broadcast", "broadcast"},   {"record_param_comms", "record_param_comms"}, {"aten::mm", ""}};
  for (const auto& [text, collective] : ranges) EXPECT_EQ(collective_of_range(text), collective) << text;
  EXPECT_TRUE(is_communication_range("c10d::barrier"));
  EXPECT_FALSE(is_communication_range("aten::add_"));
  EXPECT_EQ(collective_of_kernel("_Z38ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"),
            "AllReduce");
  EXPECT_TRUE(is_communication_kernel("ncclKernel_Broadcast_RING_LL_Sum_int8_t"));
  EXPECT_FALSE(is_communication_kernel("ampere_sgemm_128x64_nn"));
}

TEST(Communication, UnionAndCoverOfIntervals) {
  EXPECT_EQ(union_ns({{0, 10}, {5, 15}, {20, 30}}), 25);
  EXPECT_EQ(covered_ns({{0, 10}, {20, 30}}, {{5, 25}}), 10);
  EXPECT_EQ(covered_ns({{0, 10}}, {{2, 3}, {4, 5}, {20, 30}}), 2);
  EXPECT_EQ(covered_ns({{0, 10}}, {}), 0);
}

TEST(Job, RanksAreAttributedIntoOneProfileAndProblemsReported) {
  TempDir dir;
  write_job(dir.path());
  // The launcher: it initialized CUDA (so it has a log) and ran nothing.
  write(dir.path() / "pid400" / "trace.json",
        "{\"traceEvents\": [" + event("cpu_op", "aten::empty", 400, 1, 1, 1, R"("External id": 1)") + "]}\n");
  JobRequest request;
  request.dir = dir.path().string();
  request.request.ncu = dir.file("ncu.csv");
  request.request.output = dir.file("job.db");
  const JobResult result = attribute_job(request);

  const auto& procs = result.job.processes;
  ASSERT_EQ(procs.size(), 5u);  // rank 0, rank 1, rank 2 (missing), pid 300 (unreadable), pid 400 (idle)
  EXPECT_EQ(procs[0].rank, 0);
  EXPECT_EQ(procs[0].status, "ok");
  EXPECT_EQ(procs[0].counters_pid, 200u);
  EXPECT_EQ(procs[0].ncu_rows, 2u);
  EXPECT_EQ(procs[1].rank, 1);
  EXPECT_EQ(procs[2].rank, 2);
  EXPECT_EQ(procs[2].status, "missing");
  EXPECT_NE(procs[2].problem.find("world size is 3"), std::string::npos) << procs[2].problem;
  EXPECT_EQ(procs[3].folder, "pid300");
  EXPECT_EQ(procs[3].status, "failed");
  EXPECT_NE(procs[3].problem.find("truncated"), std::string::npos) << procs[3].problem;
  EXPECT_EQ(procs[4].status, "idle");

  // Two ranks' rows in one timeline, every kernel still there and attributed.
  const AttributeResult& p = result.profile;
  ASSERT_EQ(p.timeline().kernels.size(), 6u);
  EXPECT_EQ(p.coverage.kernels, 4u);
  EXPECT_EQ(p.coverage.attributed_ns, p.coverage.kernel_time_ns);
  // Communication: the two all-reduces (gloo's copy is a memcpy, not kernel time).
  EXPECT_EQ(p.coverage.by_phase_ns[static_cast<int>(Phase::kCommunication)], 40'000);
  EXPECT_EQ(p.coverage.by_phase_ns[static_cast<int>(Phase::kForward)], 25'000);
  ASSERT_TRUE(p.match);
  EXPECT_EQ(p.match->matched, 4u);
  EXPECT_EQ(p.match->unmatched_rows, (std::vector<std::uint32_t>{4}));  // pid 999 belongs to no rank

  const auto& ranks = result.job.figures.ranks;
  ASSERT_EQ(ranks.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    const RankFigures& f = ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(f.kernels, 2u);
    EXPECT_EQ(f.compute_ns, (10 + 5 * r) * 1000);
    EXPECT_EQ(f.communication_kernel_ns, 20'000);  // the all-reduce
    EXPECT_EQ(f.communication_copy_ns, 4'000);     // the broadcast's copy
    EXPECT_EQ(f.communication_ns, 24'000);         // their union (disjoint)
    EXPECT_EQ(f.busy_ns, 29'000);                   // GEMM and all-reduce 20..45 us, the copy 60..64 us
    EXPECT_EQ(f.span_ns, 51'000);                   // from c10d::allreduce_ at 14 us to gloo's range end at 65 us
    EXPECT_EQ(f.overlap_ns, (5 + 5 * r) * 1000);  // the all-reduce starts 5 us before the GEMM ends
    EXPECT_EQ(f.exposed_communication_ns, 24'000 - f.overlap_ns);
    EXPECT_EQ(f.cpu_communication_ns, 19'000);  // c10d::allreduce_ 4 us, broadcast_ and gloo's range 50..65 us
    EXPECT_EQ(f.cpu_overlap_ns, 0);
  }
  EXPECT_NEAR(ranks[0].time_vs_mean, 30.0 / 32.5, 1e-9);
  EXPECT_NEAR(ranks[1].time_vs_mean, 35.0 / 32.5, 1e-9);

  ProfileReader reader(dir.file("job.db"));
  sqlite3* db = reader.handle();
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM kernels WHERE rank = 1"), 3);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM kernels WHERE rank IS NULL"), 0);
  EXPECT_EQ(query_int(db, "SELECT COUNT(DISTINCT rank) FROM launches"), 2);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM ranges WHERE text = 'gloo:broadcast' AND rank = 0"), 1);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM ncu_rows WHERE rank = 0"), 2);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM ncu_rows WHERE rank IS NULL"), 1);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM attribution WHERE phase = 'communication'"), 4);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM collectives WHERE collective = 'AllReduce'"), 2);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM collectives WHERE source = 'cpu_range' AND rank = 1"), 3);
  EXPECT_EQ(query_int(db, "SELECT time_ns FROM rank_groups WHERE group_kind = 'operator' AND key = 'aten::mm' AND rank = 1"),
            15'000);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM processes WHERE status = 'missing'"), 1);

  const std::string text = render_terminal_report(reader);
  EXPECT_NE(text.find("Ranks (4 processes)"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 2"), std::string::npos) << text;
  EXPECT_NE(text.find("not ranks: pid 400 (no GPU activity in its timeline)"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::mm (spread 5.00 µs)"), std::string::npos) << text;
  const std::string json = render_json_report(reader);
  // Every share is a part of a whole that holds it: 48 us of communication on the GPU of 58 us busy.
  EXPECT_NE(json.find("\"communication_share\": " + fmt::format("{}", 48.0 / 58.0)), std::string::npos) << json;
  EXPECT_NE(json.find("\"communication_kernel_share\": " + fmt::format("{}", 40.0 / 65.0)), std::string::npos) << json;
  EXPECT_NE(json.find("\"cpu_communication_share\": " + fmt::format("{}", 38.0 / 102.0)), std::string::npos) << json;
  EXPECT_NE(json.find("\"status\": \"failed\""), std::string::npos) << json;
  EXPECT_EQ(json.find("\"status\": \"idle\""), std::string::npos) << json;  // a launcher is not listed as a rank
  EXPECT_NE(json.find("\"idle_processes\": [\n      {\n        \"pid\": 400"), std::string::npos) << json;
}

// Pass B replayed rank 0 only (OPPROF_COUNTERS_RANKS=0): rank 1 launched the same kernels and takes rank 0's
// counters kernel by kernel, marked; a rank whose kernels differ keeps none and is reported.
TEST(Job, CrossRankDedupPropagatesTheRepresentativeRanksCounters) {
  TempDir dir;
  write_job(dir.path());
  std::filesystem::remove_all(dir.path() / "pid300");
  std::string csv = ncu_csv();
  std::string only_rank0;
  std::istringstream lines(csv);
  for (std::string line; std::getline(lines, line);)
    if (line.find("\"201\"") == std::string::npos && line.find("\"999\"") == std::string::npos) only_rank0 += line + "\n";
  write(dir.path() / "ncu.csv", only_rank0);
  JobRequest request;
  request.dir = dir.path().string();
  request.request.ncu = dir.file("ncu.csv");
  request.request.output = dir.file("job.db");
  request.counters_ranks = {0};
  const JobResult result = attribute_job(request);
  ASSERT_TRUE(result.profile.dedup);
  EXPECT_EQ(result.profile.dedup->mode, DedupMode::kRanks);
  EXPECT_EQ(result.profile.propagation.propagated, 2u);  // rank 1's GEMM and all-reduce
  EXPECT_EQ(result.profile.coverage.ncu_unmatched_kernels, 0u);

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(dir.file("job.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  // Every kernel of rank 1 has rank 0's values, and says from which kernel.
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM kernel_metrics km JOIN kernels k ON k.id = km.kernel_id "
                          "WHERE k.rank = 1 AND km.counters_from IS NOT NULL"),
            query_int(db, "SELECT COUNT(*) FROM kernel_metrics km JOIN kernels k ON k.id = km.kernel_id WHERE k.rank = 1"));
  EXPECT_GT(query_int(db, "SELECT COUNT(*) FROM kernel_metrics km JOIN kernels k ON k.id = km.kernel_id WHERE k.rank = 1"), 0);
  EXPECT_EQ(query_int(db, "SELECT COUNT(*) FROM kernel_metrics d JOIN kernel_metrics s ON s.kernel_id = d.counters_from "
                          "AND s.metric_id = d.metric_id JOIN kernels k ON k.id = s.kernel_id "
                          "WHERE k.rank != 0 OR s.value IS NOT d.value"),
            0);
  sqlite3_close(db);
  const ProfileReader reader(dir.file("job.db"));
  const ProfileDedup d = reader.dedup();
  EXPECT_TRUE(d.active);
  EXPECT_EQ(d.mode, "ranks");
  EXPECT_EQ(d.selection, "rank_windows");
  EXPECT_EQ(d.kernels_propagated, 2u);
  EXPECT_NE(render_terminal_report(reader).find("dedup ranks (rank_windows)"), std::string::npos);

  // Rank 1 launches one kernel more: nothing can be propagated to it, and the report says why.
  std::string other = rank_trace(101, 1);
  other.insert(other.rfind("]}"), ",\n" + event("kernel", "extra_kernel", 101, 7, 90, 3, kernel_args(9, 7)));
  write(dir.path() / "rank1" / "trace.json", other);
  const JobResult differs = attribute_job(request);
  ASSERT_TRUE(differs.profile.dedup);
  EXPECT_EQ(differs.profile.propagation.propagated, 0u);
  const ProfileDedup dd = ProfileReader(dir.file("job.db")).dedup();
  ASSERT_EQ(dd.in_full.size(), 1u);
  EXPECT_EQ(dd.in_full[0].instance, "rank 1");
  EXPECT_NE(dd.in_full[0].reason.find("differs from rank 0's"), std::string::npos) << dd.in_full[0].reason;

  // A rank with rows of its own keeps them: it counts as replayed, and is compared with rank 0 (verify).
  write(dir.path() / "rank1" / "trace.json", rank_trace(101, 1));
  write(dir.path() / "ncu.csv", csv);
  const JobResult own = attribute_job(request);
  ASSERT_TRUE(own.profile.dedup);
  EXPECT_EQ(own.profile.propagation.propagated, 0u);
  ASSERT_FALSE(own.profile.dedup_deviation.empty());
  EXPECT_EQ(own.profile.dedup_deviation.front().pairs, 2u);  // rank 1's GEMM and all-reduce against rank 0's
  sqlite3* db2 = nullptr;
  ASSERT_EQ(sqlite3_open_v2(dir.file("job.db").c_str(), &db2, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  EXPECT_EQ(query_int(db2, "SELECT COUNT(*) FROM kernel_metrics WHERE counters_from IS NOT NULL"), 0);
  sqlite3_close(db2);
}

TEST(Job, CrossRankDedupNeedsItsRepresentative) {
  Timeline tl;
  const DedupPlan p = plan_rank_dedup(tl, {{"rank 1", 1, {}}}, {0});
  EXPECT_FALSE(p.active());
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("rank 0"), std::string::npos);
}

TEST(Job, AProfileWithoutProcessFoldersIsAnInputError) {
  TempDir dir;
  JobRequest request;
  request.dir = dir.path().string();
  EXPECT_THROW(attribute_job(request), InputError);
}

TEST(Job, ProfileUnderTorchrunAttributesEveryRank) {
  // Stand-ins, since CI has no GPU: "python3" answers the GPU probe; "torchrun", as pass A, writes each
  // rank's capture folder (and records how it was called); "ncu" writes pass B's records of both ranks,
  // prints one progress line per kernel and exports the job's CSV.
  TempDir dir;
  const std::filesystem::path src = dir.path() / "src";
  write_job(src);
  std::filesystem::remove_all(src / "pid300");
  write(dir.path() / "train.py", "");
  write(dir.path() / "python3", "#!/bin/sh\necho 'NVIDIA H200'\n");
  write(dir.path() / "torchrun",
        "#!/bin/sh\n"
        "echo \"$@\" > " + dir.file("torchrun_args") + "\n"
        "echo \"$OPPROF_TRACE_PER_PROCESS\" > " + dir.file("torchrun_env") + "\n"
        "out=; pass=; while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; [ \"$1\" = --pass ] && pass=$2; shift; done\n"
        "if [ \"$pass\" = timeline ]; then for r in 0 1; do mkdir -p $out/rank$r; cp " + src.string() +
            "/rank$r/trace.json " + src.string() + "/rank$r/capture.json $out/rank$r/; done; fi\n");
  write(dir.path() / "ncu",
        "#!/bin/sh\n"
        "if [ \"$1\" = --import ]; then cat " + src.string() + "/ncu.csv; exit 0; fi\n"
        "out=; while [ $# -gt 0 ]; do [ \"$1\" = --export ] && out=$2; shift; done\n"
        "for r in 0 1; do cp " + src.string() + "/rank$r/capture_counters.json $(dirname $out)/rank$r/; done\n"
        "i=0; while [ $i -lt 5 ]; do echo \"==PROF== Profiling \\\"k\\\" - $i: 0%....100% - 1 passes\"; i=$((i+1)); done\n"
        "touch $out.ncu-rep\n");
  for (const char* f : {"python3", "torchrun", "ncu"})
    std::filesystem::permissions(dir.path() / f, std::filesystem::perms::owner_all);

  const std::string cmd = "cd " + dir.path().string() + " && " + OPPROF_CLI_PATH + " profile --backend torch --python " +
                          dir.file("python3") + " --ncu " + dir.file("ncu") + " -o out -- " + dir.file("torchrun") +
                          " --nproc-per-node 2 train.py --steps 1 2>&1";
  std::string output;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) output.append(buf.data(), n);
  ASSERT_EQ(pclose(p), 0) << output;

  EXPECT_NE(opprof::testing::slurp(dir.file("torchrun_args")).find("--nproc-per-node 2 -m opprof.capture --pass timeline"),
            std::string::npos);
  EXPECT_EQ(opprof::testing::slurp(dir.file("torchrun_env")), "1\n");
  EXPECT_NE(output.find("launcher: torchrun"), std::string::npos) << output;
  EXPECT_NE(output.find("Ranks (3 processes)"), std::string::npos) << output;  // rank 2 of the world of 3 is missing
  ProfileReader reader(dir.file("out/profile.db"));
  const std::vector<ProfileProcess> procs = reader.processes();
  ASSERT_EQ(procs.size(), 3u);
  EXPECT_EQ(procs[1].rank, 1);
  EXPECT_TRUE(procs[1].has_summary);
  EXPECT_EQ(procs[1].figures.communication_ns, 24'000);
  EXPECT_EQ(procs[2].status, "missing");
  EXPECT_EQ(reader.coverage().ncu_matched, 4u);
  EXPECT_EQ(query_int(reader.handle(), "SELECT COUNT(*) FROM ncu_rows WHERE rank = 1"), 2);
}

// A communication kernel's collective is the innermost range with arguments around its operator, on the
// operator's thread: c10d::allreduce_ around gloo:all_reduce around a copy, a copy after the inner one ended
// but inside the outer, an NCCL kernel outside every collective, and a collective of another thread.
TEST(JobFigures, ACommunicationKernelNamesTheInnermostDescribedCollectiveOfItsThread) {
  Timeline tl;
  auto range = [&](const char* name, std::uint64_t tid, std::int64_t s, std::int64_t e) {
    const std::size_t r = tl.ranges.add(RangeKind::kOperator, RangeScope::kThread, tl.strings.intern(name), kNoString,
                                        7, tid, s, e);
    return static_cast<std::uint32_t>(r);
  };
  const std::uint32_t outer = range("c10d::allreduce_", 1, 0, 1000);
  const std::uint32_t inner = range("gloo:all_reduce", 1, 100, 900);
  const std::uint32_t copy_in_inner = range("aten::copy_", 1, 200, 300);
  const std::uint32_t copy_after_inner = range("aten::copy_", 1, 950, 980);
  const std::uint32_t outside = range("nccl:all_reduce_launcher", 1, 1100, 1200);
  const std::uint32_t other_thread = range("gloo:all_reduce", 2, 1000, 1300);
  // A collective on the same thread that ended before the operators: not around any of them.
  const std::uint32_t earlier = range("gloo:broadcast", 1, -500, -100);
  for (std::uint32_t c : {earlier, outer, inner, other_thread}) {
    CommunicationArgs a;
    a.range = c;
    a.bytes = 4 * (c + 1);
    tl.communication_args.push_back(a);
  }
  std::sort(tl.communication_args.begin(), tl.communication_args.end(),
            [](const CommunicationArgs& x, const CommunicationArgs& y) { return x.range < y.range; });
  AttributionTable attr;
  const std::uint32_t ops[] = {copy_in_inner, copy_after_inner, outside};
  for (std::uint32_t op : ops) {
    const std::int64_t s = tl.ranges.start_ns[op] + 10;
    tl.kernels.add(ActivityKind::kMemcpy, tl.strings.intern("Memcpy DtoH"), 0, 7, s, s + 20);
    tl.kernels.pid.back() = 7;
  }
  attr.resize(tl.kernels.size());
  for (std::size_t i = 0; i < 3; ++i) {
    attr.op_range[i] = ops[i];
    attr.phase[i] = Phase::kCommunication;
  }
  JobProcess p;
  p.pid = 7;
  const JobFigures f = compute_job_figures(tl, attr, {p});
  std::vector<std::uint32_t> kernel_ranges;
  for (const Collective& c : f.collectives)
    if (c.source == "kernel") kernel_ranges.push_back(c.range_id);
  EXPECT_EQ(kernel_ranges, (std::vector<std::uint32_t>{inner, outer, kNoIndex}));
}
