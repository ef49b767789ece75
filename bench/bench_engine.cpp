// opprof_bench: Google Benchmark runs of the engine's stages on a synthetic trace generated at start-up
// (OPPROF_BENCH_KERNELS kernels, 100,000 by default), and
//   opprof_bench --ingest-only FILE
// which reads one trace once and prints throughput, counts and peak memory: for traces too large to
// read over and over (bench/README.md).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "opprof/ingest/json_scan.hpp"
#include "opprof/ingest/kineto.hpp"
#include "opprof/pipeline/attribute.hpp"
#include "opprof/util/error.hpp"
#include "synthetic_trace.hpp"

namespace {

namespace fs = std::filesystem;

// A generated trace that lives as long as the process.
struct GeneratedTrace {
  std::string path;
  opprof::bench::SyntheticTraceSummary summary;

  GeneratedTrace(std::uint64_t kernels, const std::string& suffix) {
    opprof::bench::SyntheticTraceOptions options;
    options.kernels = kernels;
    options.streams = 2;
    options.python_functions = true;
    options.output = (fs::temp_directory_path() / ("opprof_bench_" + std::to_string(::getpid()) + suffix)).string();
    path = options.output;
    summary = opprof::bench::write_synthetic_trace(options);
  }
  ~GeneratedTrace() {
    std::error_code ignored;
    fs::remove(path, ignored);
  }
  GeneratedTrace(const GeneratedTrace&) = delete;
  GeneratedTrace& operator=(const GeneratedTrace&) = delete;
};

std::uint64_t bench_kernels() {
  const char* env = std::getenv("OPPROF_BENCH_KERNELS");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 100'000;
}

const GeneratedTrace& plain_trace() {
  static const GeneratedTrace trace(bench_kernels(), ".json");
  return trace;
}
const GeneratedTrace& gzip_trace() {
  static const GeneratedTrace trace(bench_kernels() / 4, ".json.gz");
  return trace;
}

void read_trace(benchmark::State& state, const GeneratedTrace& trace) {
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    opprof::KinetoReadStats stats;
    opprof::Timeline timeline = opprof::read_kineto_trace(trace.path, &stats);
    benchmark::DoNotOptimize(timeline.kernels.size());
    bytes = stats.bytes;
  }
  // Bytes of JSON (uncompressed) per second, kernels per second.
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * trace.summary.kernels));
  state.counters["events"] = static_cast<double>(trace.summary.events);
}

void BM_ReadKinetoTrace(benchmark::State& state) { read_trace(state, plain_trace()); }
BENCHMARK(BM_ReadKinetoTrace)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReadKinetoTraceGzip(benchmark::State& state) { read_trace(state, gzip_trace()); }
BENCHMARK(BM_ReadKinetoTraceGzip)->Unit(benchmark::kMillisecond)->UseRealTime();

// The byte scan that cuts the event array into events, alone: the trace in memory, split event by event
// as the reader does (each scan starts at an event's '{').
void BM_SplitEvents(benchmark::State& state) {
  std::string text;
  {
    std::FILE* f = std::fopen(plain_trace().path.c_str(), "rb");
    if (f == nullptr) {
      state.SkipWithError("cannot open the generated trace");
      return;
    }
    text.resize(std::size_t{64} << 20);
    text.resize(std::fread(text.data(), 1, text.size(), f));
    std::fclose(f);
  }
  const std::size_t events_at = text.find("\"traceEvents\": [");
  const std::size_t size = text.size();
  text.append(64, ' ');  // the scan's padding
  std::uint64_t events = 0;
  for (auto _ : state) {
    events = 0;
    std::size_t pos = text.find('{', events_at);
    while (pos < size) {
      opprof::detail::BracketScan scan;
      scan.pos = pos;
      const std::size_t end = opprof::detail::scan_to_value_end(text.data(), size, scan);
      if (end == opprof::detail::kNoEnd) break;
      ++events;
      pos = text.find('{', end);
    }
    benchmark::DoNotOptimize(events);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * size));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * events));
}
BENCHMARK(BM_SplitEvents)->Unit(benchmark::kMillisecond);

int ingest_only(const char* path) {
  const auto start = std::chrono::steady_clock::now();
  opprof::KinetoReadStats stats;
  opprof::Timeline timeline;
  try {
    timeline = opprof::read_kineto_trace(path, &stats);
  } catch (const opprof::InputError& e) {
    std::fprintf(stderr, "opprof_bench: %s\n", e.what());
    return 1;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  const double mb = static_cast<double>(stats.bytes) / 1e6;
  std::printf("%s: %.1f MB of JSON in %.2f s = %.0f MB/s\n", path, mb, seconds, mb / seconds);
  std::printf("  %llu events: %zu GPU activities, %zu launches, %zu ranges, %zu distinct strings\n",
              static_cast<unsigned long long>(stats.events), timeline.kernels.size(), timeline.launches.size(),
              timeline.ranges.size(), timeline.strings.size());
  auto to_seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  // CPU time next to wall time: on a busy machine the wall time says little about the reader.
  std::printf("  %.0f kernels/s; CPU %.2f s user + %.2f s system; peak RSS %.0f MB (getrusage)\n",
              static_cast<double>(timeline.kernels.size()) / seconds, to_seconds(usage.ru_utime),
              to_seconds(usage.ru_stime),
              static_cast<double>(usage.ru_maxrss) / 1024.0);  // ru_maxrss is in KB on Linux
  return 0;
}

// Wall and CPU (user + system, all threads) seconds of one stage; CPU time says what a stage costs on a
// busy machine, where the wall time mostly says how busy it was.
class StageClock {
 public:
  StageClock() { restart(); }
  void restart() {
    wall_ = std::chrono::steady_clock::now();
    cpu_ = cpu_seconds();
  }
  void print(const char* stage) const {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count();
    std::printf("  %-10s %6.2f s wall %6.2f s CPU\n", stage, wall, cpu_seconds() - cpu_);
  }
  static double cpu_seconds() {
    struct rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return s(usage.ru_utime) + s(usage.ru_stime);
  }

 private:
  std::chrono::steady_clock::time_point wall_;
  double cpu_ = 0;
};

// The stages of `opprof attribute --trace TRACE -o DB`, one after another, each timed.
int pipeline(const char* trace, const char* db) {
  try {
    StageClock total, stage;
    opprof::TimelineCapture capture = opprof::read_capture_timeline(trace);
    stage.print("read");
    stage.restart();
    opprof::AttributeRequest request;
    request.trace = trace;
    const opprof::AttributeResult result = opprof::attribute_capture(std::move(capture), request);
    stage.print("attribute");
    stage.restart();
    opprof::write_profile(result, db);
    stage.print("write");
    total.print("total");
    struct rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    std::printf("  %zu kernels; peak RSS %.0f MB\n", result.timeline().kernels.size(),
                static_cast<double>(usage.ru_maxrss) / 1024.0);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opprof_bench: %s\n", e.what());
    return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--ingest-only") == 0) return ingest_only(argv[2]);
  if (argc == 4 && std::strcmp(argv[1], "--pipeline") == 0) return pipeline(argv[2], argv[3]);
  if (argc >= 2 && (std::strcmp(argv[1], "--ingest-only") == 0 || std::strcmp(argv[1], "--pipeline") == 0)) {
    std::fprintf(stderr, "usage: opprof_bench --ingest-only TRACE.json[.gz] | --pipeline TRACE PROFILE.db\n");
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
