// Faults around a run, through the opprof executable: interrupts (SIGINT, SIGTERM) during `attribute`
// and during either pass of `profile`, stale temporaries of killed runs, output paths that cannot be
// written, a full disk, workloads and ncu that fail, and inputs whose text could break a report.
#include <gtest/gtest.h>
// GCC 12 reports a false -Wdangling-pointer inside simdjson's DOM parser once it is inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#include <simdjson.h>
#pragma GCC diagnostic pop
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli_harness.hpp"

namespace fs = std::filesystem;

namespace {

using opprof::test::count_lines;
using opprof::test::example;
using opprof::test::fixture;
using opprof::test::Result;
using opprof::test::run;

std::map<std::string, std::string> read_meta(const std::string& db_path) {
  std::map<std::string, std::string> meta;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return meta;
  }
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT key, value FROM meta", -1, &st, nullptr) == SQLITE_OK)
    while (sqlite3_step(st) == SQLITE_ROW)
      meta[reinterpret_cast<const char*>(sqlite3_column_text(st, 0))] =
          reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return meta;
}

// Names in dir that look like the writer's temporaries.
std::vector<std::string> temporaries_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) out.push_back(e.path().string());
  return out;
}

// A pid that no process has: a child's, once it has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

// True while a process of that pid runs (a zombie nobody reaped does not run).
// True when a string value anywhere in the document equals text.
bool holds_string(simdjson::dom::element e, std::string_view text) {
  switch (e.type()) {
    case simdjson::dom::element_type::STRING: return e.get_string().value() == text;
    case simdjson::dom::element_type::ARRAY:
    {
      const simdjson::dom::array array = e.get_array().value();  // named: a range-for outlives no temporary
      for (simdjson::dom::element v : array)
        if (holds_string(v, text)) return true;
      return false;
    }
    case simdjson::dom::element_type::OBJECT:
    {
      const simdjson::dom::object object = e.get_object().value();
      for (auto [k, v] : object)
        if (k == text || holds_string(v, text)) return true;
      return false;
    }
    default: return false;
  }
}

class Faults : public opprof::test::ScratchDir {
 protected:
  // Stand-ins for `opprof profile --backend torch` on a machine without a GPU: python3 answers the GPU
  // probe and, as pass A, writes a small real trace and then runs pass_a (shell code; $out is the output
  // directory, $PPID is opprof); ncu runs pass_b (its --export target in $out) and answers --import with
  // a CSV; nvidia-smi logs its arguments to smi.log and reports a base clock.
  void stand_ins(const std::string& pass_a, const std::string& pass_b) const {
    write_program("python3",
                  "if [ \"$1\" = -c ]; then echo 'NVIDIA H200'; exit 0; fi\n"
                  "out=; pass=; while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=$2; [ \"$1\" = --pass ] && pass=$2; shift; done\n"
                  "if [ \"$pass\" = timeline ]; then cp " + fixture("kineto/mlp_compiled.kineto.json") +
                      " $out/trace.json\n" + pass_a + "\nfi\n");
    write_program("ncu",
                  "if [ \"$1\" = --import ]; then exit 0; fi\n" + ncu_launch_and_attach() +
                  "out=; while [ $# -gt 0 ]; do [ \"$1\" = --export ] && out=$2; shift; done\n" + pass_b + "\n");
    write_program("nvidia-smi",
                  "echo \"$@\" >> " + path("smi.log") + "\n"
                  "case \"$*\" in *--query-gpu*) echo 1980 ;; esac\n");
  }
  Result profile(const std::string& extra = "") const {
    return run("profile --backend torch " + example("mlp.py") + " --python " + path("python3") + " --ncu " +
                   path("ncu") + " -o " + path("out") + " " + extra,
               "PATH=" + dir_.string() + ":/usr/bin:/bin");
  }
  std::string out_db() const { return path("out") + "/profile.db"; }
  // What pass A or B runs to be interrupted: a grandchild that would outlive its parent, its pid in
  // grandchild.pid, then a signal to opprof, then a wait that only the forwarded signal ends.
  std::string interrupt_opprof(const char* signal) const {
    return "sleep 60 & echo $! > " + path("grandchild.pid") + "\nkill -" + signal + " $PPID\nwait\n";
  }
  pid_t grandchild() const { return static_cast<pid_t>(std::stol(opprof::test::text_of(path("grandchild.pid")))); }
};

TEST_F(Faults, SigintOrSigtermDuringAttributeRemovesTheTemporaryAndKeepsTheOldProfile) {
  const std::string db = path("p.db");
  const std::string trace = fixture("lstm/trace.json.gz");
  ASSERT_EQ(run("attribute -q --trace " + trace + " -o " + db).status, 0);
  const auto before = fs::file_size(db);
  const std::string before_meta = read_meta(db).at("created_at");
  for (const int sig : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(strsignal(sig));
    // The writer stops itself with the temporary half written; it is interrupted there and continued.
    const pid_t pid = fork();
    if (pid == 0) {
      setenv("OPPROF_PAUSE_AT", "profile_db.write", 1);
      execl(OPPROF_CLI_PATH, OPPROF_CLI_PATH, "attribute", "-q", "--trace", trace.c_str(), "-o", db.c_str(),
            static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, WUNTRACED), pid);
    ASSERT_TRUE(WIFSTOPPED(status));
    // The profile's temporary and, written beside it on a second connection, its attribution part's.
    EXPECT_EQ(temporaries_in(dir_).size(), 2u);
    kill(pid, sig);
    kill(pid, SIGCONT);
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_TRUE(temporaries_in(dir_).empty());
    EXPECT_EQ(fs::file_size(db), before);
    EXPECT_EQ(read_meta(db).at("created_at"), before_meta);
    EXPECT_EQ(run("report " + db).status, 0);
  }
}

TEST_F(Faults, StaleTemporariesOfDeadRunsAreRemovedAndNoOthers) {
  const std::string db = path("p.db");
  const std::string dead = db + ".tmp-" + std::to_string(dead_pid());
  const std::string live = db + ".tmp-" + std::to_string(getpid());  // this test: a live process
  const std::string not_ours = db + ".tmp-backup";
  const std::string other_output = path("q.db") + ".tmp-" + std::to_string(dead_pid());
  // A killed run's second database (its attribution rows, written beside the profile's temporary).
  const std::string dead_part = db + ".attribution.tmp-" + std::to_string(dead_pid());
  // The last of the four parts of a larger profile's (more than 3M kernels) attribution rows.
  const std::string dead_later_part = db + ".attribution-3.tmp-" + std::to_string(dead_pid());
  for (const std::string& p : {dead, live, not_ours, other_output, dead_part, dead_later_part})
    std::ofstream(p) << "x";
  ASSERT_EQ(run("attribute -q --trace " + fixture("lstm/trace.json.gz") + " -o " + db).status, 0);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(dead_part));
  EXPECT_FALSE(fs::exists(dead_later_part));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(not_ours));
  EXPECT_TRUE(fs::exists(other_output));
}

// Output paths that cannot be written are refused before the trace is read: the error names the output,
// not the (here also broken) trace.
TEST_F(Faults, UnwritableOutputPathsAreRefusedBeforeTheWork) {
  write("broken.json", "{\"traceEvents\": [");
  write("afile", "x");
  fs::create_directories(path("adir"));
  const std::string trace = " --trace " + path("broken.json");
  struct Case {
    std::string output;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{{"''", "the output path is empty"},
                                         {path("missing/p.db"), "does not exist"},
                                         {path("afile/p.db"), "is not a directory"},
                                         {path("adir"), "is a directory"},
                                         {"/proc/p.db", "cannot create files in /proc"}}) {
    const Result r = run("attribute -q" + trace + " -o " + c.output);
    EXPECT_EQ(r.status, 2) << c.output << ": " << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.output << ": " << r.output;
    EXPECT_EQ(r.output.find("broken.json"), std::string::npos) << r.output;
  }
  stand_ins("", "");
  const Result r = run("profile --backend torch " + example("mlp.py") + " --skip-ncu --python " + path("python3") +
                       " -o " + path("afile"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("not a directory"), std::string::npos) << r.output;
  const Result empty = run("profile --backend torch " + example("mlp.py") + " --skip-ncu --python " + path("python3") +
                           " -o ''");
  EXPECT_EQ(empty.status, 2) << empty.output;
  EXPECT_EQ(count_lines(empty.output), 1) << empty.output;
  EXPECT_NE(empty.output.find("the output directory is an empty path"), std::string::npos) << empty.output;
  fs::create_directories(path("readonly"));
  fs::permissions(path("readonly"), fs::perms::owner_read | fs::perms::owner_exec);
  const Result readonly = run("profile --backend torch " + example("mlp.py") + " --skip-ncu --python " + path("python3") +
                              " -o " + path("readonly/out"));
  fs::permissions(path("readonly"), fs::perms::owner_all);
  if (geteuid() != 0) {  // root writes anywhere
    EXPECT_EQ(readonly.status, 2) << readonly.output;
    EXPECT_EQ(count_lines(readonly.output), 1) << readonly.output;
    EXPECT_NE(readonly.output.find("cannot create the output directory"), std::string::npos) << readonly.output;
  }
}

// The database write fails for want of space (a file-size limit): exit 1, one line, the old profile kept.
TEST_F(Faults, AFullDiskKeepsTheOldProfileAndLeavesNoTemporary) {
  const std::string db = path("p.db");
  const std::string args = "attribute -q --trace " + fixture("gpt2_eager/trace.json.gz") + " -o " + db;
  ASSERT_EQ(run(args).status, 0);
  const auto before = fs::file_size(db);
  // 256 blocks (128 or 256 KiB, as the shell counts them): far less than the profile. SIGXFSZ ignored, so
  // that the write fails with EFBIG the way it fails with ENOSPC on a full disk.
  const Result r = run(args, "", "ulimit -f 256; trap '' XFSZ; ");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("cannot write profile database " + db), std::string::npos) << r.output;
  EXPECT_TRUE(temporaries_in(dir_).empty());
  EXPECT_EQ(fs::file_size(db), before);
  EXPECT_EQ(run("report " + db).status, 0);

  // The same failure for a database whose directory's name holds an escape and a newline: still one line,
  // the characters escaped.
  const std::string odd = path("odd\x1b[31m\ndir");
  fs::create_directories(odd);
  const Result named = run("attribute -q --trace " + fixture("gpt2_eager/trace.json.gz") + " -o '" + odd + "/p.db'", "",
                           "ulimit -f 256; trap '' XFSZ; ");
  EXPECT_EQ(named.status, 1) << named.output;
  EXPECT_EQ(count_lines(named.output), 1) << named.output;
  EXPECT_EQ(named.output.find('\x1b'), std::string::npos) << named.output;
  EXPECT_NE(named.output.find("odd\\x1b[31m\\ndir/p.db"), std::string::npos) << named.output;
}

// Each pass interrupted by each signal opprof handles (a fresh output directory and clock log each time).
constexpr std::pair<int, const char*> kInterrupts[] = {{SIGTERM, "TERM"}, {SIGINT, "INT"}};

TEST_F(Faults, SigtermOrSigintInPassAStopsTheWorkloadRestoresClocksAndKeepsAPartialProfile) {
  for (const auto& [sig, name] : kInterrupts) {
    SCOPED_TRACE(name);
    fs::remove_all(path("out"));
    fs::remove(path("smi.log"));
    stand_ins(interrupt_opprof(name), "touch " + path("ncu_ran"));
    const Result r = profile("--lock-clocks");
    EXPECT_EQ(r.signal, 0) << r.output;
    EXPECT_EQ(r.status, 128 + sig) << r.output;
    EXPECT_FALSE(opprof::test::running(grandchild()));
    const std::string smi = opprof::test::text_of(path("smi.log"));
    EXPECT_NE(smi.find("--lock-gpu-clocks=1980,1980"), std::string::npos) << smi;
    EXPECT_NE(smi.find("--reset-gpu-clocks"), std::string::npos) << smi;
    EXPECT_FALSE(fs::exists(path("ncu_ran")));  // pass B does not start after an interrupt
    ASSERT_TRUE(fs::exists(out_db())) << r.output;
    EXPECT_NE(read_meta(out_db())["partial"].find("interrupted in pass A"), std::string::npos);
    EXPECT_TRUE(temporaries_in(path("out")).empty());
    EXPECT_NE(r.output.find("the profile is partial"), std::string::npos) << r.output;
  }
}

TEST_F(Faults, SigintOrSigtermInPassBStopsNcuRestoresClocksAndKeepsTheTimeline) {
  for (const auto& [sig, name] : kInterrupts) {
    SCOPED_TRACE(name);
    fs::remove_all(path("out"));
    fs::remove(path("smi.log"));
    stand_ins("", interrupt_opprof(name));
    const Result r = profile("--lock-clocks");
    EXPECT_EQ(r.status, 128 + sig) << r.output;
    EXPECT_FALSE(opprof::test::running(grandchild()));
    const std::string smi = opprof::test::text_of(path("smi.log"));
    EXPECT_NE(smi.find("--lock-gpu-clocks=1980,1980"), std::string::npos) << smi;
    EXPECT_NE(smi.find("--reset-gpu-clocks"), std::string::npos) << smi;
    ASSERT_TRUE(fs::exists(out_db())) << r.output;
    const auto meta = read_meta(out_db());
    EXPECT_NE(meta.at("partial").find("interrupted in pass B"), std::string::npos);
    EXPECT_EQ(meta.count("ncu.rows"), 0u);
    for (const char* f : {"report.txt", "report.json", "trace.json"}) EXPECT_TRUE(fs::exists(path("out") + "/" + f)) << f;
    EXPECT_TRUE(temporaries_in(path("out")).empty());
  }
}

TEST_F(Faults, AWorkloadFailingInsideTheWindowGivesAPartialProfileAndExitOne) {
  stand_ins("echo 'CUDA error: an illegal memory access' >&2; exit 3", "exit 0");
  const Result failed = profile("--skip-ncu");
  EXPECT_EQ(failed.status, 1) << failed.output;
  EXPECT_NE(failed.output.find("the workload failed in pass A (exit status 3)"), std::string::npos) << failed.output;
  ASSERT_TRUE(fs::exists(out_db()));
  EXPECT_NE(read_meta(out_db())["partial"].find("exit status 3"), std::string::npos);
  EXPECT_EQ(run("report " + out_db()).status, 0);

  // Killed before it wrote a timeline: nothing to attribute, said so, exit 1, no database.
  fs::remove_all(path("out"));
  stand_ins("rm $out/trace.json; kill -9 $$", "exit 0");
  const Result killed = profile("--skip-ncu");
  EXPECT_EQ(killed.status, 1) << killed.output;
  EXPECT_NE(killed.output.find("killed by signal 9"), std::string::npos) << killed.output;
  EXPECT_NE(killed.output.find("left no timeline"), std::string::npos) << killed.output;
  EXPECT_FALSE(fs::exists(out_db()));
}

TEST_F(Faults, NcuFailingOrWithoutCounterPermissionSaysWhatToDo) {
  stand_ins("", "echo '==ERROR== Failed to connect to the target application' >&2; exit 1");
  const Result failed = profile();
  EXPECT_EQ(failed.status, 1) << failed.output;
  EXPECT_NE(failed.output.find("ncu failed in pass B (exit status 1"), std::string::npos) << failed.output;
  ASSERT_TRUE(fs::exists(out_db()));
  EXPECT_NE(read_meta(out_db())["partial"].find("no counters"), std::string::npos);

  fs::remove_all(path("out"));
  stand_ins("", "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
                "Performance Counters on the target device 0.' >&2; exit 1");
  const Result denied = profile();
  EXPECT_EQ(denied.status, 1) << denied.output;  // the machine's permission, not the user's input
  const auto error_line = denied.output.find("opprof: error:");
  ASSERT_NE(error_line, std::string::npos) << denied.output;
  const std::string error = denied.output.substr(error_line);
  EXPECT_EQ(count_lines(error), 1) << error;
  EXPECT_NE(error.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos) << error;
  EXPECT_NE(error.find("--skip-ncu"), std::string::npos) << error;
}

TEST_F(Faults, ATraceWithoutKernelsIsRefusedWithWhatIsMissing) {
  write("cpu_only.json",
        R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]})");
  const Result r = run("attribute -q --trace " + path("cpu_only.json") + " -o " + path("p.db"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("holds no GPU activity"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("p.db")));
  // A tracer log without GPU activity: torchrun's own process, which initialized CUDA and ran nothing.
  const Result log = run("attribute -q --trace " + fixture("multiproc/gpt2/pid1203/trace.opprof") + " -o " + path("p.db"));
  EXPECT_EQ(log.status, 2) << log.output;
  EXPECT_EQ(count_lines(log.output), 1) << log.output;
  EXPECT_NE(log.output.find("holds no GPU activity"), std::string::npos) << log.output;
  EXPECT_FALSE(fs::exists(path("p.db")));
}

// Kernel and operator names are whatever the trace says: quotes, commas, newlines, escapes, non-ASCII.
// The terminal report shows them on one line each without control characters; the JSON report stays JSON
// and gives them back exactly.
TEST_F(Faults, HostileKernelNamesAreShownSafelyInEveryReport) {
  const std::string kernel = "k\\\"q,uo\\nte\\u001b[31m\\u00e9\\u4e2d";  // as JSON text
  const std::string op = "aten::\\\"op\\\",\\r\\t";
  write("names.json",
        "{\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H200\", \"computeMajor\": 9, \"computeMinor\": 0, "
        "\"numSms\": 132}],\n\"traceEvents\": [\n"
        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" + op + "\", \"pid\": 1, \"tid\": 1, \"ts\": 10, \"dur\": 50, "
        "\"args\": {\"External id\": 7}},\n"
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": 20, "
        "\"dur\": 5, \"args\": {\"correlation\": 99, \"External id\": 7}},\n"
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" + kernel + "\", \"pid\": 0, \"tid\": 7, \"ts\": 30, \"dur\": 40, "
        "\"args\": {\"correlation\": 99, \"device\": 0, \"stream\": 7, \"grid\": [1, 1, 1], \"block\": [32, 1, 1]}}\n]}\n");
  const std::string db = path("p.db");
  const Result a = run("attribute -q --trace " + path("names.json") + " -o " + db);
  ASSERT_EQ(a.status, 0) << a.output;

  const Result t = run("report " + db);
  ASSERT_EQ(t.status, 0) << t.output;
  EXPECT_EQ(t.output.find('\x1b'), std::string::npos) << t.output;
  EXPECT_EQ(t.output.find('\r'), std::string::npos) << t.output;
  EXPECT_EQ(t.output.find("uo\nte"), std::string::npos) << t.output;
  EXPECT_NE(t.output.find("aten::\"op\""), std::string::npos) << t.output;

  const Result j = run("report --json --top 0 " + db);
  ASSERT_EQ(j.status, 0) << j.output;
  EXPECT_EQ(j.output.find('\x1b'), std::string::npos) << j.output;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(j.output).get(doc), simdjson::SUCCESS) << j.output;
  EXPECT_TRUE(holds_string(doc, "aten::\"op\",\r\t")) << j.output;

  // opprof diff, text and JSON, of the profile against itself.
  const Result d = run("diff --top 0 " + db + " " + db);
  ASSERT_EQ(d.status, 0) << d.output;
  EXPECT_EQ(d.output.find('\x1b'), std::string::npos) << d.output;
  EXPECT_EQ(d.output.find('\r'), std::string::npos) << d.output;
  EXPECT_EQ(d.output.find("uo\nte"), std::string::npos) << d.output;
  EXPECT_NE(d.output.find("aten::\"op\""), std::string::npos) << d.output;
  const Result dj = run("diff --json " + db + " " + db);
  ASSERT_EQ(dj.status, 0) << dj.output;
  simdjson::dom::parser diff_parser;
  ASSERT_EQ(diff_parser.parse(dj.output).get(doc), simdjson::SUCCESS) << dj.output;
  EXPECT_TRUE(holds_string(doc, "aten::\"op\",\r\t")) << dj.output;

  // The Perfetto export: JSON that gives the names back exactly.
  const std::string trace = path("names.perfetto.json");
  ASSERT_EQ(run("export --quiet " + db + " --perfetto " + trace).status, 0);
  simdjson::dom::parser perfetto_parser;
  simdjson::padded_string text = simdjson::padded_string::load(trace);
  ASSERT_EQ(perfetto_parser.parse(text).get(doc), simdjson::SUCCESS);
  EXPECT_TRUE(holds_string(doc, "k\"q,uo\nte\x1b[31m\u00e9\u4e2d"));
  EXPECT_TRUE(holds_string(doc, "aten::\"op\",\r\t"));
}

// Every bad invocation: exit status 2 and one line, "opprof: error: ...", saying what is wrong.
TEST_F(Faults, BadInvocationsExitTwoWithOneLine) {
  write("text.db", "not a database\n");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path("foreign.db").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (x INTEGER)", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  const std::string trace = fixture("lstm/trace.json.gz");
  struct Case {
    std::string args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"", "subcommand"},
      {"bogus", "unknown command 'bogus'"},
      {"--bogus", "unknown option '--bogus'"},
      {"attribute", "--output is required"},
      {"attribute -o x.db", "give --trace (or --job)"},
      {"attribute --trace " + trace, "--output"},
      {"attribute --trace " + trace + " -o " + path("p.db") + " --no-such-flag", "--no-such-flag"},
      {"attribute --trace " + path("nope.json") + " -o " + path("p.db"), "nope.json"},
      {"attribute --trace " + trace + " -o " + path("p.db") + " --metrics " + path("nope.tsv"), "nope.tsv"},
      {"attribute --trace " + trace + " -o " + path("p.db") + " -- python x.py", "only `opprof profile` takes a program"},
      {"report", "database"},
      {"report " + path("nope.db"), "nope.db"},
      {"report " + path("text.db"), "text.db"},
      {"report " + path("foreign.db"), "not an opprof profile"},
      {"report --top -5 " + path("p.db"), "--top"},
      {"report --top many " + path("p.db"), "--top"},
      {"report " + path("p.db") + " extra", "extra"},
      {"compare " + path("p.db"), "required"},
      {"profile --compile bogus " + example("mlp.py"), "--compile"},
      {"profile --backend bogus " + example("mlp.py"), "--backend"},
      {"metrics --bogus", "--bogus"},
  };
  for (const Case& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.args << "\n" << r.output;
    EXPECT_EQ(count_lines(r.output), 1) << c.args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("opprof: error: ", 0), 0u) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_FALSE(fs::exists(path("p.db"))) << c.args;
  }
}

}  // namespace

// Times that no real work has: kernels whose durations add up past 2^62 ns, a kernel past 2^62 ns from the
// clock's zero. Refused with one line before any sum of them could overflow; no database.
TEST_F(Faults, TimesPastWhatSumsCanHoldAreRefused) {
  auto trace = [&](const std::string& name, const std::string& kernels) {
    write(name, "{\"traceEvents\": [\n"
                "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": 1, \"ts\": 10, \"dur\": 50},\n" +
                    kernels + "]}\n");
    return path(name);
  };
  auto kernel = [](const std::string& ts, const std::string& dur) {
    return "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": " + ts + ", \"dur\": " +
           dur + ", \"args\": {\"device\": 0, \"stream\": 7}}";
  };
  // Each 3e18 ns (95 years) is a time the readers accept; two of them add up past 2^62 (4.6e18).
  const std::string sum = trace("sum.json", kernel("0", "3000000000000000") + ",\n" + kernel("0", "3000000000000000") + "\n");
  Result r = run("attribute -q --trace " + sum + " -o " + path("p.db"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("durations add up to more than 4611686018427387904 ns"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("p.db")));
  // One of them alone is kept.
  const std::string one = trace("one.json", kernel("0", "3000000000000000") + "\n");
  EXPECT_EQ(run("attribute -q --trace " + one + " -o " + path("p.db")).status, 0);
  fs::remove(path("p.db"));

  const std::string late = trace("late.json", kernel("5000000000000000", "1") + "\n");
  r = run("attribute -q --trace " + late + " -o " + path("p.db"));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_EQ(count_lines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("GPU activity 0 lies at 5000000000000000000 .. 5000000000000001000 ns"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(path("p.db")));
}
