// opprof_gen_trace: writes a synthetic torch.profiler trace (bench/README.md).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "synthetic_trace.hpp"
#include "synthetic_tracer_log.hpp"

int main(int argc, char** argv) {
  opprof::bench::SyntheticTraceOptions options;
  CLI::App app{"Writes a synthetic torch.profiler (Kineto) trace with the structure of a real one."};
  app.add_option("--kernels", options.kernels, "GPU activities (kernels, memcpys, memsets) to write")
      ->capture_default_str();
  app.add_option("-o,--output", options.output, "trace to write (.json, or .json.gz for gzip)")->required();
  app.add_option("--threads", options.threads, "CPU threads, each running the model on its own stream")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--streams", options.streams, "streams per thread: 2 puts copies and some work on a side stream")
      ->check(CLI::Range(1, 2))
      ->capture_default_str();
  app.add_option("--layers", options.layers, "transformer layers per step")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--compiled-fraction", options.compiled_fraction, "share of steps run as one compiled graph")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--cuda-graph-fraction", options.cuda_graph_fraction,
                 "share of steps replayed as one CUDA graph (torch.compile mode=\"reduce-overhead\"); "
                 "--compiled-fraction applies to the others")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_flag("--python-functions", options.python_functions, "also write python_function frames (with_stack)");
  app.add_option("--seed", options.seed, "random seed; the same seed writes the same trace")->capture_default_str();
  bool tracer_log = false;
  app.add_flag("--tracer-log", tracer_log,
               "write an opprof tracer log (eager steps under the torch observer) instead; --kernels only");
  CLI11_PARSE(app, argc, argv);
  try {
    if (tracer_log) {
      const auto s = opprof::bench::write_synthetic_tracer_log(options.kernels, options.output);
      std::printf("wrote %s: %llu bytes, %llu records (%llu kernels)\n", options.output.c_str(),
                  static_cast<unsigned long long>(s.bytes), static_cast<unsigned long long>(s.records),
                  static_cast<unsigned long long>(s.kernels));
      return 0;
    }
    const auto s = opprof::bench::write_synthetic_trace(options);
    std::printf("wrote %s: %llu bytes of JSON, %llu events (%llu GPU activities, %llu CPU ranges)\n", options.output.c_str(),
                static_cast<unsigned long long>(s.bytes), static_cast<unsigned long long>(s.events),
                static_cast<unsigned long long>(s.kernels), static_cast<unsigned long long>(s.ranges));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "opprof_gen_trace: %s\n", e.what());
    return 1;
  }
}
