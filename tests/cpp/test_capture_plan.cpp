// The `opprof profile` plan as data: which arguments and environment each pass gets for a request on a
// machine described by hand (no GPU, no ncu, no child process needed).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "opprof/pipeline/capture_plan.hpp"
#include "opprof/util/error.hpp"

using namespace opprof;

namespace {

using Args = std::vector<std::string>;

// A machine with a GPU, ncu, the tracer and the observer, in a source tree.
CaptureEnvironment machine() {
  CaptureEnvironment env;
  env.gpu_probe.started = true;
  env.gpu_probe.exit_code = 0;
  env.gpu_name = "NVIDIA H200";
  env.ncu = "/usr/local/cuda/bin/ncu";
  env.tracer.path = "/opt/opprof/lib/libopprof_tracer.so";
  env.observer.path = "/opt/opprof/lib/libopprof_torch_observer.so";
  env.python_source = "/src/opprof/python";
  env.cwd = "/home/u";
  env.timestamp = "20250102-030405";
  return env;
}

ProfileRequest workload() {
  ProfileRequest r;
  r.workload = "examples/gpt2.py";
  r.compile = "inductor";
  r.output = "out";
  return r;
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

std::string message_of(const ProfileRequest& r, const CaptureEnvironment& env) {
  try {
    build_capture_plan(r, env);
  } catch (const InputError& e) {
    return e.what();
  } catch (const EnvironmentError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(CapturePlan, WorkloadModuleWithTheTracerInjectsItIntoPassAOnly) {
  const CapturePlan plan = build_capture_plan(workload(), machine());
  EXPECT_EQ(plan.output_dir, "/home/u/out");
  EXPECT_EQ(plan.backend, "tracer");  // auto, with the tracer found
  EXPECT_EQ(plan.trace, "/home/u/out/trace.opprof");
  EXPECT_EQ(plan.database, "/home/u/out/profile.db");
  EXPECT_EQ(plan.timeline.argv,
            (Args{"python3", "-m", "opprof.capture", "--pass", "timeline", "--out", "/home/u/out", "--warmup", "3",
                  "--iters", "1", "--backend", "tracer", "--workload", "examples/gpt2.py", "--compile", "inductor"}));
  const auto& env = plan.timeline.env;
  EXPECT_EQ(env.at("CUDA_INJECTION64_PATH"), "/opt/opprof/lib/libopprof_tracer.so");
  EXPECT_EQ(env.at("NVTX_INJECTION64_PATH"), "/opt/opprof/lib/libopprof_tracer.so");
  EXPECT_EQ(env.at("OPPROF_TRACE_FILE"), "/home/u/out/trace.opprof");
  EXPECT_EQ(env.at("OPPROF_TRACE_WINDOW"), "1");
  EXPECT_EQ(env.at("OPPROF_TORCH_OBSERVER_LIB"), "/opt/opprof/lib/libopprof_torch_observer.so");
  EXPECT_EQ(env.at("PYTHONPATH"), "/src/opprof/python");
  EXPECT_EQ(env.at("PYTHONUNBUFFERED"), "1");
  EXPECT_EQ(plan.timeline.stderr_path, "/home/u/out/pass_a.log");
  EXPECT_EQ(plan.timeline.produces, plan.trace);
  EXPECT_TRUE(has(plan.timeline.notes, "tracer: /opt/opprof/lib/libopprof_tracer.so"));
  EXPECT_TRUE(has(plan.notes, "GPU: NVIDIA H200"));

  const CapturePass b = counters_pass(plan, machine(), {"gpu__time_duration.sum", "dram__bytes_read.sum"}, false);
  EXPECT_EQ(b.kind, PassKind::kCounters);
  EXPECT_EQ(b.argv,
            (Args{"/usr/local/cuda/bin/ncu", "--target-processes", "all", "--export", "/home/u/out/ncu", "--force-overwrite",
                  "--clock-control", "none", "--profile-from-start", "off", "--metrics",
                  "gpu__time_duration.sum,dram__bytes_read.sum", "python3", "-m", "opprof.capture", "--pass", "counters",
                  "--out", "/home/u/out", "--warmup", "3", "--iters", "1", "--workload", "examples/gpt2.py", "--compile",
                  "inductor"}));
  EXPECT_EQ(b.env.count("CUDA_INJECTION64_PATH"), 0u);
  EXPECT_EQ(b.env.count("NVTX_INJECTION64_PATH"), 0u);
  EXPECT_EQ(b.env.count("OPPROF_TORCH_OBSERVER_LIB"), 0u);
  EXPECT_EQ(b.stdout_path, "/home/u/out/ncu.log");
  EXPECT_EQ(b.stderr_path, "/home/u/out/pass_b.log");
  EXPECT_EQ(b.produces, "/home/u/out/ncu.ncu-rep");

  const CapturePass e = csv_export_pass(plan);
  EXPECT_EQ(e.argv, (Args{"/usr/local/cuda/bin/ncu", "--import", "/home/u/out/ncu.ncu-rep", "--csv", "--page", "raw",
                          "--print-units", "base"}));
  EXPECT_EQ(e.produces, "/home/u/out/ncu.csv");

  // A compiled workload starts pass B early too (auto), ncu holding only the runner: Inductor's compile workers
  // would wait at their first CUDA call for an attach that never comes.
  EXPECT_TRUE(plan.counters_early);
  EXPECT_EQ(plan.counters_early_targets, "application-only");
  ProfileRequest early = workload();
  early.pass_b_start = "early";
  const CapturePlan early_plan = build_capture_plan(early, machine());
  EXPECT_TRUE(early_plan.counters_early);
  EXPECT_EQ(early_plan.counters_early_targets, "application-only");
  ProfileRequest program = early;
  program.workload.clear();
  program.command = {"python3", "train.py"};
  program.pass_b_start = "auto";
  EXPECT_FALSE(build_capture_plan(program, machine()).counters_early);  // a program's own processes: after
  program.pass_b_start = "early";
  EXPECT_TRUE(build_capture_plan(program, machine()).counters_early);
  ProfileRequest eager = workload();
  eager.compile = "eager";
  const CapturePlan eager_plan = build_capture_plan(eager, machine());
  EXPECT_TRUE(eager_plan.counters_early);  // auto: early for an eager workload module, every process held
  EXPECT_EQ(eager_plan.counters_early_targets, "all");

  // Started early: the same runner under ncu's launch mode, the profiling options at the attach.
  const CapturePass launch = counters_launch_pass(early_plan, machine(), 50000);
  EXPECT_EQ(launch.argv,
            (Args{"/usr/local/cuda/bin/ncu", "--mode", "launch", "--port", "50000", "--max-connections", "2",
                  "--target-processes", "application-only", "python3", "-m", "opprof.capture", "--pass", "counters", "--out",
                  "/home/u/out", "--warmup", "3", "--iters", "1", "--workload", "examples/gpt2.py", "--compile", "inductor"}));
  EXPECT_EQ(launch.env.at("PYTORCH_NVML_BASED_CUDA_CHECK"), "1");
  EXPECT_EQ(launch.env.at("PYTHONPATH"), "/src/opprof/python");
  EXPECT_EQ(launch.env.count("CUDA_INJECTION64_PATH"), 0u);
  EXPECT_EQ(launch.stderr_path, "/home/u/out/pass_b.log");
  const CapturePass attach = counters_attach_pass(plan, {"gpu__time_duration.sum"}, true, nullptr, 50000);
  EXPECT_EQ(attach.argv, (Args{"/usr/local/cuda/bin/ncu", "--mode", "attach", "--hostname", "127.0.0.1", "--port", "50000",
                               "--max-connections", "2", "--export", "/home/u/out/ncu", "--force-overwrite",
                               "--clock-control", "none", "--profile-from-start", "on", "--metrics",
                               "gpu__time_duration.sum"}));
  EXPECT_EQ(attach.stdout_path, "/home/u/out/ncu.log");
  EXPECT_EQ(attach.produces, "/home/u/out/ncu.ncu-rep");

  // After pass A: on request, for NVTX selection (its plan file is pass B's environment) and for a job.
  ProfileRequest after = eager;
  after.pass_b_start = "after";
  EXPECT_FALSE(build_capture_plan(after, machine()).counters_early);
  ProfileRequest nvtx = eager;
  nvtx.dedup_selection = "nvtx_modules";
  EXPECT_FALSE(build_capture_plan(nvtx, machine()).counters_early);
  ProfileRequest job = early;
  job.workload.clear();
  job.command = {"torchrun", "--nproc-per-node", "2", "train.py"};
  EXPECT_FALSE(build_capture_plan(job, machine()).counters_early);
  ProfileRequest timeline_only = eager;
  timeline_only.skip_ncu = true;
  EXPECT_FALSE(build_capture_plan(timeline_only, machine()).counters_early);
}

TEST(CapturePlan, PythonCommandGivesTheRunnerTheScriptAndItsArguments) {
  ProfileRequest r;
  r.command = {"/usr/bin/python3.12", "train.py", "--lr", "3e-4"};
  r.train = true;
  r.backend = "torch";
  r.output = "/abs/run";
  const CapturePlan plan = build_capture_plan(r, machine());
  EXPECT_EQ(plan.output_dir, "/abs/run");
  EXPECT_EQ(plan.trace, "/abs/run/trace.json");
  EXPECT_EQ(plan.timeline.argv, (Args{"python3", "-m", "opprof.capture", "--pass", "timeline", "--out", "/abs/run",
                                      "--warmup", "3", "--iters", "1", "--train", "--backend", "torch", "--", "train.py",
                                      "--lr", "3e-4"}));
  EXPECT_EQ(plan.timeline.env.count("CUDA_INJECTION64_PATH"), 0u);
  EXPECT_TRUE(plan.timeline.notes.empty());
  // A script given without its interpreter is passed on as it is; pass B records from the start when pass
  // A's window spanned the whole run.
  r.command = {"train.py"};
  const CapturePlan bare = build_capture_plan(r, machine());
  const CapturePass b = counters_pass(bare, machine(), {"gpu__time_duration.sum"}, /*whole_run=*/true);
  const Args tail(b.argv.end() - 2, b.argv.end());
  EXPECT_EQ(tail, (Args{"--", "train.py"}));
  EXPECT_TRUE(has(b.argv, "--train"));
  EXPECT_FALSE(has(b.argv, "--backend"));
  const auto from_start = std::find(b.argv.begin(), b.argv.end(), "--profile-from-start");
  ASSERT_NE(from_start, b.argv.end());
  EXPECT_EQ(*(from_start + 1), "on");
}

TEST(CapturePlan, AutoBackendFallsBackToTorchProfilerAndSaysWhy) {
  CaptureEnvironment env = machine();
  env.tracer = {"", "/b/tracer/libopprof_tracer.so, /b/../lib/libopprof_tracer.so"};
  env.observer = {};
  const CapturePlan plan = build_capture_plan(workload(), env);
  EXPECT_EQ(plan.backend, "torch");
  EXPECT_EQ(plan.trace, "/home/u/out/trace.json");
  ASSERT_FALSE(plan.notes.empty());
  EXPECT_NE(plan.notes[0].find("backend: torch.profiler (libopprof_tracer.so not found at /b/tracer/"), std::string::npos)
      << plan.notes[0];
  EXPECT_TRUE(has(plan.timeline.argv, "torch"));
  EXPECT_EQ(plan.timeline.env.count("CUDA_INJECTION64_PATH"), 0u);

  ProfileRequest tracer = workload();
  tracer.backend = "tracer";
  EXPECT_NE(message_of(tracer, env).find("libopprof_tracer.so not found"), std::string::npos);
}

TEST(CapturePlan, TracerWithoutTheObserverFallsBackToEmitNvtx) {
  CaptureEnvironment env = machine();
  env.observer = {"", "/b/torch_observer/libopprof_torch_observer.so"};
  const CapturePlan plan = build_capture_plan(workload(), env);
  EXPECT_EQ(plan.timeline.env.count("OPPROF_TORCH_OBSERVER_LIB"), 0u);
  EXPECT_EQ(plan.timeline.env.at("CUDA_INJECTION64_PATH"), env.tracer.path);
  ASSERT_EQ(plan.timeline.notes.size(), 2u);
  EXPECT_EQ(plan.timeline.notes[1].rfind("operator ranges: emit_nvtx (libopprof_torch_observer.so not found at "
                                         "/b/torch_observer/",
                                         0),
            0u);
}

TEST(CapturePlan, SkipNcuNeedsNoNcuAndPlansNoCounterPass) {
  ProfileRequest r = workload();
  CaptureEnvironment env = machine();
  env.ncu.clear();
  EXPECT_NE(message_of(r, env).find("--skip-ncu"), std::string::npos);
  // No ncu on the PATH is the machine's lack (exit 1); a --ncu that names nothing is the user's input (exit 2).
  EXPECT_THROW(build_capture_plan(r, env), EnvironmentError);
  EXPECT_NE(message_of(r, env).find("not found on the PATH"), std::string::npos);
  ProfileRequest named = r;
  named.ncu = "/opt/nowhere/ncu";
  EXPECT_THROW(build_capture_plan(named, env), InputError);
  EXPECT_NE(message_of(named, env).find("/opt/nowhere/ncu: Nsight Compute (ncu) not found there"), std::string::npos);
  // No GPU: the machine's too.
  CaptureEnvironment no_gpu = machine();
  no_gpu.gpu_probe.exit_code = 3;
  EXPECT_THROW(build_capture_plan(workload(), no_gpu), EnvironmentError);
  r.skip_ncu = true;
  const CapturePlan plan = build_capture_plan(r, env);
  EXPECT_FALSE(plan.counters);
}

TEST(CapturePlan, ClockOptionsReachPassB) {
  ProfileRequest r = workload();
  r.clock_control = "base";
  r.lock_clocks = true;
  const CapturePlan plan = build_capture_plan(r, machine());
  EXPECT_TRUE(plan.lock_clocks);
  const CapturePass b = counters_pass(plan, machine(), {"gpu__time_duration.sum"}, false);
  const auto control = std::find(b.argv.begin(), b.argv.end(), "--clock-control");
  ASSERT_NE(control, b.argv.end());
  EXPECT_EQ(*(control + 1), "base");
  EXPECT_FALSE(build_capture_plan(workload(), machine()).lock_clocks);
}

TEST(CapturePlan, NoGpuOrNoTorchIsAnInputError) {
  CaptureEnvironment env = machine();
  env.gpu_probe.exit_code = 3;
  EXPECT_NE(message_of(workload(), env).find("no CUDA GPU visible to PyTorch"), std::string::npos);
  env.gpu_probe.exit_code = 1;
  EXPECT_NE(message_of(workload(), env).find("cannot import torch (exit status 1)"), std::string::npos);
  env.gpu_probe.started = false;
  env.gpu_probe.error = "could not start: python3: not found";
  EXPECT_NE(message_of(workload(), env).find("python3: not found"), std::string::npos);
}

TEST(CapturePlan, DefaultOutputDirectoryNamesTheWorkloadAndTheTime) {
  ProfileRequest r = workload();
  r.output.clear();
  EXPECT_EQ(build_capture_plan(r, machine()).output_dir, "/home/u/opprof-gpt2-20250102-030405");
  r.workload.clear();
  r.command = {"python", "scripts/train.py"};
  EXPECT_EQ(build_capture_plan(r, machine()).output_dir, "/home/u/opprof-train-20250102-030405");
}

TEST(CapturePlan, PythonPathKeepsTheCallersEntries) {
  CaptureEnvironment env = machine();
  env.pythonpath = "/site/a";
  EXPECT_EQ(python_env(env).at("PYTHONPATH"), "/src/opprof/python:/site/a");
  env.python_source.clear();  // an install: the package is on sys.path already
  EXPECT_EQ(python_env(env).count("PYTHONPATH"), 0u);
}

TEST(CapturePlan, RequestsThatCannotRunAreRejectedBeforeAnyProbe) {
  ProfileRequest both = workload();
  both.command = {"python", "x.py"};
  EXPECT_THROW(check_profile_request(both), InputError);
  ProfileRequest none;
  EXPECT_THROW(check_profile_request(none), InputError);
  ProfileRequest not_python;
  not_python.command = {"./a.out"};
  try {
    check_profile_request(not_python);
    FAIL() << "a non-Python program was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a .py script"), std::string::npos);
  }
}
