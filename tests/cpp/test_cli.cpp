// The opprof executable as users run it: exit status, one-line errors naming file and position, no
// database left behind on bad input, and `opprof profile` driving its passes (with stand-ins for
// python3 and ncu, since CI has no GPU).
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_harness.hpp"

namespace fs = std::filesystem;

namespace {

using opprof::test::count_lines;
using opprof::test::fixture;
using opprof::test::Result;
using opprof::test::run;
using Cli = opprof::test::ScratchDir;

// A stand-in python3: the GPU probe's answer, and a pass A that copies the compiled GPT-2 capture into --out
// after the shell lines `before`.
std::string compiled_gpt2_runner(const std::string& before) {
  const std::string src = fixture("gpt2_compiled");
  return "if [ \"$1\" = -c ]; then echo 'NVIDIA H200'; exit 0; fi\n"
         "out=; pass=; while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; [ \"$1\" = --pass ] && pass=$2; shift; done\n" +
         before + "zcat " + src + "/trace.json.gz > $out/trace.json; cp -r " + src + "/inductor " + src +
         "/opprof_fx_modules.json " + src + "/capture.json $out/\n";
}

// A stand-in ncu's profiling of that capture: a progress line per kernel and the report file at --export.
const std::string kProfilesCompiledGpt2 =
    "out=; while [ $# -gt 0 ]; do [ \"$1\" = --export ] && out=$2; shift; done\n"
    "i=0; while [ $i -lt 126 ]; do echo \"==PROF== Profiling \\\"k\\\" - $i: 0%....100% - 11 passes\"; i=$((i+1)); done\n"
    "touch $out.ncu-rep\n";

}  // namespace

TEST_F(Cli, AttributeThenReportJson) {
  std::string db = path("p.db");
  Result a = run("attribute -q --trace " + fixture("gpt2_compiled/trace.json.gz") + " --ncu " +
                 fixture("gpt2_compiled/ncu.csv.gz") + " --inductor " + fixture("gpt2_compiled/inductor") + " -o " + db);
  ASSERT_EQ(a.status, 0) << a.output;
  ASSERT_TRUE(fs::exists(db));
  Result j = run("report --json " + db);
  ASSERT_EQ(j.status, 0) << j.output;
  for (const char* key : {"\"kernel_time_ns\"", "\"attributed_pct\"", "\"module_attributed_pct\"",
                          "\"opaque_backend_pct\"", "\"by_path\"", "\"unattributed\"", "\"unmatched_rows\"",
                          "\"unmatched_kernels\""})
    EXPECT_NE(j.output.find(key), std::string::npos) << key;
  Result t = run("report " + db);
  ASSERT_EQ(t.status, 0);
  EXPECT_NE(t.output.find("Top operators"), std::string::npos);
  EXPECT_NE(t.output.find("Module tree"), std::string::npos);
  EXPECT_NE(t.output.find("\n  transformer "), std::string::npos);
}

TEST_F(Cli, TruncatedTraceFailsWithOneLineNamingTheLineAndLeavesNoDatabase) {
  // Cut a real trace in the middle of an event.
  std::string cmd = "zcat " + fixture("gpt2_eager/trace.json.gz") + " | head -c 200000 > " + path("cut.json");
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::string db = path("p.db");
  Result r = run("attribute -q --trace " + path("cut.json") + " -o " + db);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find(path("cut.json") + ":"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("truncated"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(db));
}

TEST_F(Cli, MalformedCsvAndForeignWindowAreRejected) {
  std::string db = path("p.db");
  write("bad.csv", "\"ID\",\"Process ID\",\"Kernel Name\"\n\"\",\"\",\"\"\n\"0\",\"1\n");
  Result bad = run("attribute -q --trace " + fixture("lstm/trace.json.gz") + " --ncu " + path("bad.csv") + " -o " + db);
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(count_lines(bad.output), 1) << bad.output;
  EXPECT_NE(bad.output.find(path("bad.csv") + ":"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(db));

  Result foreign = run("attribute -q --trace " + fixture("gpt2_compiled/trace.json.gz") + " --ncu " +
                       fixture("gpt2_eager/ncu.csv.gz") + " -o " + db);
  EXPECT_EQ(foreign.status, 2);
  EXPECT_NE(foreign.output.find("does not belong to this capture"), std::string::npos) << foreign.output;
  EXPECT_FALSE(fs::exists(db));
}

// The H100 BERT capture ran ncu --launch-count 5 (work variants): left out, the plan's own count matches the
// rows; a count the rows contradict is refused with the one they say, and no database is written.
TEST_F(Cli, ADedupLaunchCountTheRowsContradictIsRefusedWithTheCountTheySay) {
  const std::string dir = fixture("dedup/bert_train/layers"), db = path("p.db");
  const std::string args = "attribute -q --trace " + dir + "/trace.opprof --ncu " + dir + "/ncu.csv.gz --dedup layers " +
                           "--structure " + dir + "/opprof_structure.json -o " + db;
  Result wrong = run(args + " --dedup-launch-count 1");
  EXPECT_EQ(wrong.status, 2);
  EXPECT_EQ(count_lines(wrong.output), 1) << wrong.output;
  EXPECT_NE(wrong.output.find("pass B ran --launch-count 5"), std::string::npos) << wrong.output;
  EXPECT_FALSE(fs::exists(db));
  Result own = run(args);
  ASSERT_EQ(own.status, 0) << own.output;
  Result j = run("report --json " + db);
  ASSERT_EQ(j.status, 0) << j.output;
  EXPECT_NE(j.output.find("\"launch_count\": 5"), std::string::npos);
  EXPECT_NE(j.output.find("\"kernels_replayed\": 200"), std::string::npos);
  EXPECT_NE(j.output.find("\"kernels_other_work\": 0"), std::string::npos);
}

TEST_F(Cli, MissingFilesAndUnknownMetricsAreInputErrors) {
  std::string db = path("p.db");
  Result missing = run("attribute -q --trace " + path("nope.json") + " -o " + db);
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.output.find("nope.json"), std::string::npos);
  write("m.tsv", "# mine\ndram__bytes_reed.sum\tsum\tdram\t*\t\ttypo\tbyte\n");
  Result metric = run("attribute -q --trace " + fixture("lstm/trace.json.gz") + " --metrics " + path("m.tsv") + " -o " + db);
  EXPECT_EQ(metric.status, 2);
  EXPECT_NE(metric.output.find(path("m.tsv") + ":2:"), std::string::npos) << metric.output;
  EXPECT_NE(metric.output.find("unknown metric"), std::string::npos) << metric.output;
  EXPECT_FALSE(fs::exists(db));
}

TEST_F(Cli, ACaptureInOtherUnitsThanTheMetricSetIsRefused) {
  // A unit the chip's catalog contradicts is refused before the CSV is read, at the metric set's line.
  std::string db = path("p.db");
  const std::string inputs =
      " --trace " + fixture("microkernels/trace.json.gz") + " --ncu " + fixture("microkernels/ncu.csv.gz");
  write("m.tsv", "gpu__time_duration.sum\tsum\ttime\t*\t\tduration\tns\n"
                 "dram__bytes_read.sum\tsum\tdram\t*\t\tbytes read\tsector\n");
  Result catalog = run("attribute -q" + inputs + " --metrics " + path("m.tsv") + " -o " + db);
  EXPECT_EQ(catalog.status, 2) << catalog.output;
  EXPECT_EQ(count_lines(catalog.output), 1) << catalog.output;
  EXPECT_NE(catalog.output.find(path("m.tsv") + ":2:1: dram__bytes_read.sum: declares unit 'sector', ncu prints 'byte'"),
            std::string::npos)
      << catalog.output;
  // Launch figures are not in the catalog: the capture's units row refuses them, at the unit's cell.
  write("m.tsv", "gpu__time_duration.sum\tsum\ttime\t*\t\tduration\tns\n"
                 "launch__registers_per_thread\tmax\tlaunch\t*\t\tregisters\tregister\n");
  Result csv = run("attribute -q" + inputs + " --metrics " + path("m.tsv") + " -o " + db);
  EXPECT_EQ(csv.status, 2) << csv.output;
  EXPECT_EQ(count_lines(csv.output), 1) << csv.output;
  EXPECT_NE(csv.output.find(fixture("microkernels/ncu.csv.gz") + ":"), std::string::npos) << csv.output;
  EXPECT_NE(csv.output.find("\"launch__registers_per_thread\" is in \"register/thread\", but " + path("m.tsv") +
                            ":2 declares \"register\""),
            std::string::npos)
      << csv.output;
  EXPECT_FALSE(fs::exists(db));
}

TEST_F(Cli, AnExistingDatabaseSurvivesAFailedRun) {
  std::string db = path("p.db");
  ASSERT_EQ(run("attribute -q --trace " + fixture("lstm/trace.json.gz") + " -o " + db).status, 0);
  auto before = fs::file_size(db);
  EXPECT_EQ(run("attribute -q --trace " + path("nope.json") + " -o " + db).status, 2);
  ASSERT_TRUE(fs::exists(db));
  EXPECT_EQ(fs::file_size(db), before);
  EXPECT_EQ(run("report " + db).status, 0);
}

TEST_F(Cli, ProfileDrivesBothPassesAndWritesTheOutputDirectory) {
  // Stand-ins: "python3" answers the GPU probe and, as pass A, copies a real capture into --out;
  // "ncu" prints one progress line per kernel and exports the capture's real CSV.
  const std::string src = fixture("gpt2_compiled");
  write("python3",
        "#!/bin/sh\n"
        "if [ \"$1\" = -c ]; then echo 'NVIDIA H200'; exit 0; fi\n"
        "out=; pass=; while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; [ \"$1\" = --pass ] && pass=$2; shift; done\n"
        "if [ \"$pass\" = timeline ]; then zcat " + src + "/trace.json.gz > $out/trace.json; cp -r " + src +
            "/inductor " + src + "/opprof_fx_modules.json " + src + "/capture.json $out/; fi\n"
        "echo \"pass $pass done\" >&2\n");
  write("ncu",
        "#!/bin/sh\n"
        "if [ \"$1\" = --import ]; then zcat " + src + "/ncu.csv.gz; exit 0; fi\n" + ncu_launch_and_attach() +
        "out=; while [ $# -gt 0 ]; do [ \"$1\" = --export ] && out=$2; shift; done\n"
        "i=0; while [ $i -lt 126 ]; do echo \"==PROF== Profiling \\\"k\\\" - $i: 0%....100% - 11 passes\"; i=$((i+1)); done\n"
        "touch $out.ncu-rep\n");
  fs::permissions(path("python3"), fs::perms::owner_all);
  fs::permissions(path("ncu"), fs::perms::owner_all);
  std::string out = path("out");
  // The stand-in ncu replays every kernel whatever the filter: no dedup (ProfileWithDedup... covers it).
  Result r = run("profile --dedup off --backend torch " + std::string(OPPROF_FIXTURES_DIR) +
                 "/../../examples/gpt2.py --compile inductor --python " + path("python3") + " --ncu " + path("ncu") +
                 " -o " + out);
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* f : {"profile.db", "report.txt", "report.json", "trace.json", "ncu.csv", "capture.json"})
    EXPECT_TRUE(fs::exists(fs::path(out) / f)) << f;
  EXPECT_NE(r.output.find("126/126 kernels"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("wall time: pass A"), std::string::npos);
  Result j = run("report --json " + out + "/profile.db");
  EXPECT_NE(j.output.find("\"matched\": 126"), std::string::npos) << j.output.substr(0, 2000);
}

TEST_F(Cli, ProfileDefaultsToTheTracerAndInjectsItIntoPassAOnly) {
  // Stand-ins as above, with a real tracer capture: pass A must run with the tracer and the observer
  // injected (the stand-in records its environment) and write the log where OPPROF_TRACE_FILE says;
  // pass B must run without them.
  const std::string src = fixture("gpt2_tracer/c");
  write("libopprof_tracer.so", "");
  write("libopprof_torch_observer.so", "");
  write("python3",
        "#!/bin/sh\n"
        "if [ \"$1\" = -c ]; then echo 'NVIDIA H200'; exit 0; fi\n"
        "out=; pass=; while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; [ \"$1\" = --pass ] && pass=$2; shift; done\n"
        "echo \"$pass injection=${CUDA_INJECTION64_PATH:-none} nvtx=${NVTX_INJECTION64_PATH:-none} "
        "observer=${OPPROF_TORCH_OBSERVER_LIB:-none} window=${OPPROF_TRACE_WINDOW:-none}\" >> " + path("env.log") + "\n"
        "if [ \"$pass\" = timeline ]; then cp " + src + "/trace.opprof \"$OPPROF_TRACE_FILE\"; cp -r " + src +
            "/inductor " + src + "/opprof_fx_modules.json " + src + "/capture.json $out/; fi\n");
  write("ncu",
        "#!/bin/sh\n"
        "if [ \"$1\" = --import ]; then zcat " + src + "/ncu.csv.gz; exit 0; fi\n" + ncu_launch_and_attach() +
        "echo \"counters injection=${CUDA_INJECTION64_PATH:-none} nvtx=${NVTX_INJECTION64_PATH:-none}\" >> " +
            path("env.log") + "\n"
        "out=; while [ $# -gt 0 ]; do [ \"$1\" = --export ] && out=$2; shift; done\n"
        "i=0; while [ $i -lt 126 ]; do echo \"==PROF== Profiling \\\"k\\\" - $i: 0%....100% - 11 passes\"; i=$((i+1)); done\n"
        "touch $out.ncu-rep\n");
  fs::permissions(path("python3"), fs::perms::owner_all);
  fs::permissions(path("ncu"), fs::perms::owner_all);
  Result r = run("profile --dedup off " + std::string(OPPROF_FIXTURES_DIR) +
                     "/../../examples/gpt2.py --compile inductor --python " + path("python3") + " --ncu " + path("ncu") +
                     " -o " + path("out"),
                 "OPPROF_TRACER_LIB=" + path("libopprof_tracer.so") +
                     " OPPROF_TORCH_OBSERVER_LIB=" + path("libopprof_torch_observer.so"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(fs::path(path("out")) / "trace.opprof"));
  std::ifstream log(path("env.log"));
  std::string timeline, counters, line;
  while (std::getline(log, line)) {
    if (line.rfind("timeline ", 0) == 0) timeline = line;
    if (line.rfind("counters ", 0) == 0) counters = line;
  }
  EXPECT_EQ(timeline, "timeline injection=" + path("libopprof_tracer.so") + " nvtx=" + path("libopprof_tracer.so") +
                          " observer=" + path("libopprof_torch_observer.so") + " window=1");
  EXPECT_EQ(counters, "counters injection=none nvtx=none");
  Result j = run("report --json " + path("out") + "/profile.db");
  EXPECT_NE(j.output.find("\"matched\": 126"), std::string::npos) << j.output.substr(0, 2000);
  EXPECT_NE(j.output.find("opprof-tracer"), std::string::npos);
}

TEST_F(Cli, ProfileWithDedupReplaysThePlansKernelsAndSaysSoBeforePassB) {
  // Pass A's stand-in leaves a structure file of GPT-2's twelve blocks (compiled: runtime fx_graph); the ncu
  // stand-in records its arguments, reports the 17 kernels the filter replays and exports the full CSV of
  // the capture (the duplicates' rows are then leftovers of the match).
  const std::string src = fixture("gpt2_compiled");
  std::string instances;
  for (int i = 0; i < 12; ++i) instances += std::string(i ? ", " : "") + "\"transformer.h." + std::to_string(i) + "\"";
  write("opprof_structure.json", "{\"format\": \"opprof-structure\", \"version\": 1, \"runtime\": \"fx_graph\", "
                                 "\"classes\": [{\"signature\": \"s\", \"type\": \"GPT2Block\", \"instances\": [" +
                                     instances + "]}]}");
  write("python3",
        "#!/bin/sh\n"
        "if [ \"$1\" = -c ]; then echo 'NVIDIA H200'; exit 0; fi\n"
        "out=; pass=; while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; [ \"$1\" = --pass ] && pass=$2; shift; done\n"
        "if [ \"$pass\" = timeline ]; then zcat " + src + "/trace.json.gz > $out/trace.json; cp -r " + src +
            "/inductor " + src + "/opprof_fx_modules.json " + src + "/capture.json " + path("opprof_structure.json") +
            " $out/; fi\n");
  write("ncu",
        "#!/bin/sh\n"
        "if [ \"$1\" = --import ]; then zcat " + src + "/ncu.csv.gz; exit 0; fi\n" + ncu_launch_and_attach() +
        "echo \"$@\" > " + path("ncu_args.txt") + "\n"
        "out=; while [ $# -gt 0 ]; do [ \"$1\" = --export ] && out=$2; shift; done\n"
        "i=0; while [ $i -lt 17 ]; do echo \"==PROF== Profiling \\\"k\\\" - $i: 0%....100% - 11 passes\"; i=$((i+1)); done\n"
        "touch $out.ncu-rep\n");
  fs::permissions(path("python3"), fs::perms::owner_all);
  fs::permissions(path("ncu"), fs::perms::owner_all);
  Result r = run("profile --backend torch " + std::string(OPPROF_FIXTURES_DIR) +
                 "/../../examples/gpt2.py --compile inductor --python " + path("python3") + " --ncu " + path("ncu") +
                 " -o " + path("out"));
  ASSERT_EQ(r.status, 0) << r.output;
  std::ifstream args_file(path("ncu_args.txt"));
  std::string args((std::istreambuf_iterator<char>(args_file)), std::istreambuf_iterator<char>());
  // A compiled workload: pass B started early, the filter on the attach, which profiles what the launch holds.
  EXPECT_TRUE(args.starts_with("--mode attach ")) << args;
  EXPECT_NE(args.find("--filter-mode per-launch-config --launch-count 1 --kernel-name-base mangled\n"),
            std::string::npos)
      << args;
  EXPECT_NE(r.output.find("pass B starts now, beside pass A"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("dedup layers (per_launch_config_mangled): 1 classes, 12 instances"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("pass B: 17 kernels to replay"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ncu: 11 replay passes per kernel"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("17/17 kernels"), std::string::npos) << r.output;
  Result j = run("report --json " + path("out") + "/profile.db");
  EXPECT_NE(j.output.find("\"mode\": \"layers\""), std::string::npos) << j.output.substr(0, 2000);
  EXPECT_NE(j.output.find("\"kernels_replayed\": 17"), std::string::npos);
}

TEST_F(Cli, PassBStartsBesidePassAAndIsAttachedAfterIt) {
  // The launched process is waiting (ncu_calls.log says so) before pass A's stand-in goes on; the attach
  // comes after pass A, with the profiling options; the runner's environment asks NVML for the device count.
  const std::string src = fixture("gpt2_compiled");
  const std::string calls = path("ncu_calls.log");
  write_program("python3",
                compiled_gpt2_runner("i=0; while ! grep -q '^launch' " + calls +
                                     " 2>/dev/null && [ $i -lt 250 ]; do sleep 0.02; i=$((i+1)); done\n"
                                     "echo \"pass A\" >> " + calls + "\n"));
  write_program("ncu",
                "if [ \"$1\" = --import ]; then zcat " + src + "/ncu.csv.gz; exit 0; fi\n"
                "if [ \"$1 $2\" = '--mode launch' ]; then echo \"nvml check ${PYTORCH_NVML_BASED_CUDA_CHECK:-unset}\" >> " +
                    calls + "; fi\n" + ncu_launch_and_attach() + kProfilesCompiledGpt2);
  Result r = run("profile --dedup off --pass-b-start early --backend torch " + opprof::test::example("gpt2.py") +
                 " --compile inductor --python " +
                 path("python3") + " --ncu " + path("ncu") + " -o " + path("out"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("pass B starts now, beside pass A"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("126/126 kernels"), std::string::npos) << r.output;
  std::ifstream log(calls);
  std::vector<std::string> lines;
  for (std::string line; std::getline(log, line);) lines.push_back(line.substr(0, line.find(" --port")));
  EXPECT_EQ(lines, (std::vector<std::string>{"nvml check 1", "launch --mode launch", "pass A", "attach --mode attach --hostname 127.0.0.1"}));
  const std::string meta = run("report --json " + path("out") + "/profile.db").output;
  EXPECT_NE(meta.find("\"ncu.pass_b_start\": \"early\""), std::string::npos) << meta.substr(0, 3000);
  EXPECT_NE(meta.find("\"matched\": 126"), std::string::npos);
}

TEST_F(Cli, TheAttachIsTriedAgainUntilPassBsProcessWaitsForIt) {
  // Pass A ends before pass B's process reaches its first CUDA call: the first two attaches find nothing
  // listening, the third connects; pass B is the early one, not started again.
  const std::string src = fixture("gpt2_compiled");
  const std::string attempts = path("attach_attempts");
  write_program("python3", compiled_gpt2_runner(""));
  write_program("ncu",
                "if [ \"$1\" = --import ]; then zcat " + src + "/ncu.csv.gz; exit 0; fi\n"
                "if [ \"$1 $2\" = '--mode attach' ]; then echo x >> " + attempts + "\n"
                "  if [ $(wc -l < " + attempts + ") -lt 3 ]; then echo '==ERROR== No processes found on 127.0.0.1'; exit 1; fi\n"
                "fi\n" + ncu_launch_and_attach() + kProfilesCompiledGpt2);
  Result r = run("profile --dedup off --pass-b-start early --backend torch " + opprof::test::example("gpt2.py") +
                 " --compile inductor --python " + path("python3") + " --ncu " + path("ncu") + " -o " + path("out"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("trying the attach again"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("starting pass B again"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("126/126 kernels"), std::string::npos) << r.output;
  const std::string meta = run("report --json " + path("out") + "/profile.db").output;
  EXPECT_NE(meta.find("\"ncu.pass_b_start\": \"early\""), std::string::npos) << meta.substr(0, 3000);
  EXPECT_NE(meta.find("\"ncu.attach_attempts\": 3,"), std::string::npos) << meta.substr(0, 3000);
}

TEST_F(Cli, PassBStartsAgainWhenTheAttachFindsNoProcess) {
  // The launched process never reaches a CUDA call ncu holds (it sleeps): the attach finds nothing, opprof
  // stops it and runs pass B after pass A.
  const std::string src = fixture("gpt2_compiled");
  write_program("python3", compiled_gpt2_runner(""));
  write_program("ncu",
                "if [ \"$1\" = --import ]; then zcat " + src + "/ncu.csv.gz; exit 0; fi\n"
                "if [ \"$1 $2\" = '--mode launch' ]; then sleep 120 & echo $! > " + path("sleeper.pid") + "; wait; exit 0; fi\n"
                "if [ \"$1 $2\" = '--mode attach' ]; then echo '==ERROR== No attachable process found.'; exit 1; fi\n" +
                    kProfilesCompiledGpt2);
  Result r = run("profile --dedup off --pass-b-start early --backend torch " + opprof::test::example("gpt2.py") +
                 " --compile inductor --python " +
                 path("python3") + " --ncu " + path("ncu") + " -o " + path("out"));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("is not yet waiting at its first CUDA call: trying the attach again for up to 10 s"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("ncu's attach found no process on port"), std::string::npos) << r.output;
  // The attach's words are kept, not overwritten by the pass B that followed.
  EXPECT_NE(opprof::test::text_of(path("out") + "/ncu_attach.log").find("No attachable process"), std::string::npos);
  EXPECT_NE(r.output.find("126/126 kernels"), std::string::npos) << r.output;
  std::ifstream pid_file(path("sleeper.pid"));
  pid_t sleeper = 0;
  ASSERT_TRUE(pid_file >> sleeper);
  EXPECT_FALSE(opprof::test::running(sleeper));  // the held process's group was killed, its sleep too
  const std::string meta = run("report --json " + path("out") + "/profile.db").output;
  EXPECT_NE(meta.find("\"ncu.pass_b_start\": \"after (the attach failed)\""), std::string::npos) << meta.substr(0, 3000);
}

TEST_F(Cli, ProfileWithoutAGpuSaysSo) {
  write("python3", "#!/bin/sh\necho none; exit 3\n");
  fs::permissions(path("python3"), fs::perms::owner_all);
  Result r = run("profile --backend torch " + std::string(OPPROF_FIXTURES_DIR) + "/../../examples/mlp.py --skip-ncu --python " +
                 path("python3") + " -o " + path("out"));
  EXPECT_EQ(r.status, 1) << r.output;  // the machine's lack, not bad input
  EXPECT_NE(r.output.find("no CUDA GPU"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("out"))) << "an output directory was left for a profile that never started";
}

TEST_F(Cli, ProfileWithoutNcuSaysWhatToDo) {
  Result r = run("profile --backend torch " + std::string(OPPROF_FIXTURES_DIR) + "/../../examples/mlp.py --ncu " + path("no-ncu") +
                 " -o " + path("out"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("--skip-ncu"), std::string::npos) << r.output;
}

TEST_F(Cli, CompareExitsZeroOneOrTwo) {
  const std::string a = path("a.db"), b = path("b.db");
  ASSERT_EQ(run("attribute -q --trace " + fixture("lstm/trace.json.gz") + " --ncu " + fixture("lstm/ncu.csv.gz") +
                " -o " + a).status, 0);
  fs::copy_file(a, b);
  Result same = run("compare-attribution " + a + " " + b + " --min-agreement 100");
  EXPECT_EQ(same.status, 0) << same.output;
  EXPECT_NE(same.output.find("operator             100.0%"), std::string::npos) << same.output;
  Result json = run("compare-attribution --json " + a + " " + b);
  EXPECT_EQ(json.status, 0);
  EXPECT_EQ(json.output.rfind("{", 0), 0u) << json.output;

  // B's longest kernel gets another operator: below 100%, above 0%.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(b.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO strings (id, text) VALUES ((SELECT max(id) + 1 FROM strings), 'aten::changed');"
                         "UPDATE attribution_rows SET op_id = (SELECT max(id) FROM strings) WHERE kernel_id = "
                         "(SELECT id FROM kernels WHERE kind = 'kernel' ORDER BY duration_ns DESC LIMIT 1)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  Result below = run("compare-attribution " + a + " " + b + " --min-agreement 100");
  EXPECT_EQ(below.status, 1) << below.output;
  EXPECT_NE(below.output.find("aten::changed"), std::string::npos) << below.output;
  EXPECT_NE(below.output.find("is below --min-agreement 100%"), std::string::npos) << below.output;
  EXPECT_EQ(run("compare-attribution " + a + " " + b + " --min-agreement 0").status, 0);
  EXPECT_EQ(run("compare-attribution " + a + " " + b).status, 0);

  // Bad input: one line naming the file, exit 2.
  Result missing = run("compare-attribution " + a + " " + path("nope.db"));
  EXPECT_EQ(missing.status, 2);
  EXPECT_EQ(count_lines(missing.output), 1) << missing.output;
  EXPECT_NE(missing.output.find("opprof: error: " + path("nope.db") + ": cannot open profile"), std::string::npos)
      << missing.output;
  write("text.db", "not a database, just text\n");
  Result text = run("compare-attribution " + path("text.db") + " " + b);
  EXPECT_EQ(text.status, 2);
  EXPECT_EQ(count_lines(text.output), 1) << text.output;
  EXPECT_NE(text.output.find("not an opprof profile"), std::string::npos) << text.output;
  ASSERT_EQ(sqlite3_open(path("other.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (x INTEGER)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  Result other = run("compare-attribution " + a + " " + path("other.db"));
  EXPECT_EQ(other.status, 2);
  EXPECT_NE(other.output.find("without opprof's meta table"), std::string::npos) << other.output;
  Result pct = run("compare-attribution " + a + " " + b + " --min-agreement 150");
  EXPECT_EQ(pct.status, 2);
  EXPECT_EQ(count_lines(pct.output), 1) << pct.output;
}

// ---------------------------------------------------------------------------------------------------------
// Inputs that do not fit the capture: an error where the result would be wrong, a warning where it would be
// incomplete.

TEST_F(Cli, AnInductorDirectoryOfAnotherModelIsRefused) {
  std::string db = path("p.db");
  Result r = run("attribute -q --trace " + fixture("gpt2_compiled/trace.json.gz") + " --inductor " +
                 fixture("inductor/mlp") + " -o " + db);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find(fixture("inductor/mlp") + ": none of the 1 kernels Inductor generated in this directory "
                                                     "occurs in the trace"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(db));
}

TEST_F(Cli, AnInductorGraphThatRanInNoKernelIsAWarning) {
  // The captured run's graph next to another model's.
  fs::create_directories(dir_ / "inductor");
  fs::copy(fixture("gpt2_compiled/inductor/model__0_inference_0.0"), dir_ / "inductor" / "model__0_inference_0.0");
  fs::copy(fixture("inductor/mlp"), dir_ / "inductor" / "mlp_forward");
  std::string db = path("p.db");
  Result r = run("attribute -q --trace " + fixture("gpt2_compiled/trace.json.gz") + " --inductor " + path("inductor") +
                 " -o " + db);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("opprof: warning: Inductor graph " + path("inductor/mlp_forward") +
                          " ran in none of the trace's kernels"),
            std::string::npos)
      << r.output;
  Result report = run("report --width 400 " + db);  // the warning on one line
  EXPECT_NE(report.output.find("warning: Inductor graph " + path("inductor/mlp_forward")), std::string::npos)
      << report.output;
}

TEST_F(Cli, ACompiledTraceWithoutInductorDirectoryWarns) {
  std::string db = path("p.db");
  Result r = run("attribute -q --trace " + fixture("gpt2_compiled/trace.json.gz") + " -o " + db);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("opprof: warning: the trace is of a compiled model ("), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("pass that directory with --inductor"), std::string::npos) << r.output;
  Result j = run("report --json " + db);
  EXPECT_NE(j.output.find("the trace is of a compiled model"), std::string::npos) << j.output;
  // An eager trace gets no such warning.
  Result eager = run("attribute -q --trace " + fixture("gpt2_eager/trace.json.gz") + " -o " + path("e.db"));
  ASSERT_EQ(eager.status, 0) << eager.output;
  EXPECT_EQ(eager.output, "");
}

TEST_F(Cli, AMetricFileForNoChipOfTheCaptureIsRefused) {
  // An A100 metric set on an H200 capture: every operator would be "unmeasured".
  write("a100.tsv", "# for the A100 only\nsm__throughput.avg.pct_of_peak_sustained_elapsed\twmean\tcompute\tga100\t\tSM\t%\t"
                    "duration\ndram__bytes_read.sum\tsum\tdram\tga100\t\tDRAM\tbyte\n");
  std::string db = path("p.db");
  Result r = run("attribute -q --trace " + fixture("lstm/trace.json.gz") + " --metrics " + path("a100.tsv") + " -o " + db);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find(path("a100.tsv") + ":2:1: no row of the metric set applies to this capture: its rows are "
                                             "for ga100 only, and the capture ran on gh100"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(db));
}

TEST_F(Cli, StrictLaunchConfigIsAFlagOfAttribute) {
  std::string db = path("p.db");
  Result r = run("attribute -q --strict-launch-config --trace " + fixture("gpt2_compiled/trace.json.gz") + " --ncu " +
                 fixture("gpt2_compiled/ncu.csv.gz") + " --inductor " + fixture("gpt2_compiled/inductor") + " -o " + db);
  ASSERT_EQ(r.status, 0) << r.output;
  Result j = run("report --json " + db);
  EXPECT_NE(j.output.find("\"launch_config_differs\": 0"), std::string::npos) << j.output;
  EXPECT_NE(j.output.find("\"strict_launch_config\": true"), std::string::npos) << j.output;
  EXPECT_NE(j.output.find("\"by_phase\""), std::string::npos) << j.output;
}

// --dedup and --dedup-selection take the names of the enums' name tables and reach the library as those modes;
// the help lists the names (CLI11's enum transformer printed control characters there).
TEST_F(Cli, DedupOptionsOfAttributeTakeTheirNames) {
  const std::string dir = fixture("dedup/gpt2_eager/nvtx");
  std::string db = path("p.db");
  Result r = run("attribute -q --trace " + dir + "/trace.opprof --ncu " + dir + "/ncu.csv.gz --dedup layers " +
                 "--dedup-selection nvtx_modules --structure " + dir + "/opprof_structure.json -o " + db);
  ASSERT_EQ(r.status, 0) << r.output;
  Result j = run("report --json " + db);
  EXPECT_NE(j.output.find("\"mode\": \"layers\""), std::string::npos) << j.output;
  EXPECT_NE(j.output.find("\"selection\": \"nvtx_modules\""), std::string::npos) << j.output;
  Result bad = run("attribute -q --trace " + dir + "/trace.opprof --dedup ranks -o " + db);
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("not in {off,layers,kernels}"), std::string::npos) << bad.output;
  Result help = run("attribute --help");
  EXPECT_NE(help.output.find("{per_launch_config_mangled,nvtx_modules,per_launch_config}"), std::string::npos)
      << help.output;
}

TEST_F(Cli, ATimelineAndAnNcuCsvOfTwoRunsReportAnotherLaunchConfiguration) {
  // tests/fixtures/field: Inductor autotuned 14 Triton kernels of GPT-2 differently in ncu's run.
  const std::string dir = fixture("field/gpt2_default");
  std::string db = path("p.db");
  Result a = run("attribute -q --trace " + dir + "/trace.json.gz --ncu " + dir + "/ncu.csv.gz --inductor " + dir +
                 "/inductor -o " + db);
  ASSERT_EQ(a.status, 0) << a.output;
  EXPECT_NE(a.output.find("opprof: warning: 14 ncu rows pair with a kernel of the same name whose grid or block "
                          "differ"),
            std::string::npos)
      << a.output;
  Result j = run("report --json " + db);
  EXPECT_NE(j.output.find("\"launch_config_differs\": 14"), std::string::npos) << j.output;
  EXPECT_NE(j.output.find("\"unmatched_rows\": 0"), std::string::npos) << j.output;
  Result t = run("report --width 200 " + db);  // each warning on one line
  EXPECT_NE(t.output.find("warning: 14 ncu row(s) matched a kernel whose grid or block differ: their counters come "
                          "from another launch configuration of the same kernel"),
            std::string::npos)
      << t.output;
  EXPECT_NE(t.output.find("126 matched to kernels (base name + grid + block, 14 of them of another launch "
                          "configuration)"),
            std::string::npos)
      << t.output;

  Result strict = run("attribute -q --strict-launch-config --trace " + dir + "/trace.json.gz --ncu " + dir +
                      "/ncu.csv.gz --inductor " + dir + "/inductor -o " + path("s.db"));
  ASSERT_EQ(strict.status, 0) << strict.output;
  Result sj = run("report --json " + path("s.db"));
  EXPECT_NE(sj.output.find("\"unmatched_rows\": 14"), std::string::npos) << sj.output;
  EXPECT_NE(sj.output.find("\"strict_launch_config\": true"), std::string::npos) << sj.output;
}

namespace {

// Usage errors are bad input: exit status 2 (not CLI11's 100+ codes), one message; help and version exit 0.
TEST_F(Cli, UsageErrorsExitTwoAndHelpExitsZero) {
  const Result bogus = run("bogus");
  EXPECT_EQ(bogus.status, 2) << bogus.output;
  EXPECT_NE(bogus.output.find("unknown command 'bogus'"), std::string::npos) << bogus.output;
  EXPECT_NE(bogus.output.find("attribute"), std::string::npos) << bogus.output;  // the commands are listed
  EXPECT_EQ(run("").status, 2);
  const Result missing = run("attribute -o " + path("x.db"));
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_NE(missing.output.find("--trace"), std::string::npos) << missing.output;
  EXPECT_EQ(run("attribute --trace t.json -o x.db --no-such-flag").status, 2);
  const Result negative = run("report --top -5 " + path("x.db"));
  EXPECT_EQ(negative.status, 2) << negative.output;
  EXPECT_EQ(run("compare a.db b.db --top -1").status, 2);
  EXPECT_EQ(run("--help").status, 0);
  EXPECT_EQ(run("report --help").status, 0);
  EXPECT_EQ(run("--version").status, 0);
}

// Input text in an error message cannot drive the terminal: control characters and invalid UTF-8 are escaped.
TEST_F(Cli, ErrorMessagesEscapeControlCharactersAndInvalidUtf8) {
  const std::string name = path("evil\x1b[31m\xff\xfe.json");
  const Result r = run("attribute -q --trace '" + name + "' -o " + path("x.db"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\xff'), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("evil\\x1b[31m\\xff\\xfe.json"), std::string::npos) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
}

}  // namespace
