#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "opprof/ingest/json_diagnose.hpp"
#include "opprof/ingest/json_scan.hpp"
#include "opprof/ingest/kineto.hpp"
#include "opprof/ingest/kineto_detail.hpp"
#include "opprof/util/error.hpp"
#include "timeline_checks.hpp"

using namespace opprof;
using opprof::test_support::expect_same_timeline;
namespace fs = std::filesystem;

namespace {

const std::string kFixtures = std::string(OPPROF_FIXTURES_DIR) + "/kineto/";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class KinetoReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("opprof_kineto_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    out << text;
    return path;
  }
  std::string write_gz(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    gzFile f = gzopen(path.c_str(), "wb6");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())), static_cast<int>(text.size()));
    gzclose(f);
    return path;
  }

  fs::path dir_;
};

using detail::InputAccess;
constexpr InputAccess kEveryAccess[] = {InputAccess::kRead, InputAccess::kReadAhead, InputAccess::kMap};
std::string access_name(InputAccess a) {
  return a == InputAccess::kMap ? " mapped" : a == InputAccess::kReadAhead ? " read ahead" : " read";
}

Timeline read_with_chunk(const std::string& path, std::size_t chunk, KinetoReadStats* stats = nullptr,
                         InputAccess access = InputAccess::kMap) {
  detail::KinetoReadOptions options;
  options.chunk_bytes = chunk;
  options.access = access;
  return detail::read_kineto_trace(path, options, stats, {});
}

// One event as torch.profiler formats it.
std::string event(const std::string& cat, const std::string& name, const std::string& pid, const std::string& tid,
                  const std::string& ts, const std::string& dur, const std::string& args) {
  return "  {\n    \"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name + "\", \"pid\": " + pid +
         ", \"tid\": " + tid + ",\n    \"ts\": " + ts + ", \"dur\": " + dur + ",\n    \"args\": {\n      " + args +
         "\n    }\n  }";
}

std::string trace(const std::vector<std::string>& events, const std::string& before = "",
                  const std::string& after = "") {
  std::string out = "{\n" + before + "  \"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) out += events[i] + (i + 1 < events.size() ? ",\n" : "\n");
  out += "  ]" + after + "\n}\n";
  return out;
}

// The error of reading path with each number of parse threads, chunk size and access, checked by `check`:
// the same error whatever the order in which the threads finish their batches.
template <class Check>
void expect_error_whatever_the_threads(const std::string& path, std::initializer_list<unsigned> thread_counts,
                                       std::initializer_list<std::size_t> chunks, Check&& check) {
  for (unsigned threads : thread_counts) {
    for (std::size_t chunk : chunks) {
      for (InputAccess access : kEveryAccess) {
        SCOPED_TRACE(std::to_string(threads) + " threads, chunk " + std::to_string(chunk) + access_name(access));
        detail::KinetoReadOptions options;
        options.chunk_bytes = chunk;
        options.parse_threads = threads;
        options.access = access;
        try {
          detail::read_kineto_trace(path, options, nullptr, {});
          ADD_FAILURE() << "expected an InputError";
        } catch (const InputError& e) {
          check(e);
        }
      }
    }
  }
}

InputError read_error(const std::string& path, std::size_t chunk = std::size_t{4} << 20) {
  try {
    read_with_chunk(path, chunk);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError reading " << path;
  return InputError(path, "no error");
}

std::uint64_t line_of(const std::string& text, std::size_t offset) {
  return static_cast<std::uint64_t>(std::count(text.begin(), text.begin() + static_cast<long>(offset), '\n')) + 1;
}

}  // namespace

// ---- real traces from the H200 ------------------------------------------------------------------

TEST_F(KinetoReaderTest, CompiledMlpTraceCountsAndKernelFields) {
  KinetoReadStats stats;
  const std::string path = kFixtures + "mlp_compiled.kineto.json";
  Timeline tl = read_kineto_trace(path, &stats);
  EXPECT_EQ(stats.events, 158u);
  EXPECT_EQ(stats.bytes, fs::file_size(path));
  ASSERT_EQ(tl.kernels.size(), 18u);  // 14 kernels + 4 memsets
  EXPECT_EQ(tl.launches.size(), 20u);
  EXPECT_EQ(tl.ranges.size(), 20u);

  // {"cat": "kernel", "name": "void scal_kernel<...>", "pid": 0, "tid": 7, "ts": 5103765998984.679, "dur": 1.024,
  //  "args": {"External id": 7, "device": 0, "context": 1, "stream": 7, "correlation": 22,
  //           "registers per thread": 18, "shared memory": 0, "grid": [16, 2, 1], "block": [256, 1, 1]}}
  std::size_t k = tl.kernels.size();
  for (std::size_t i = 0; i < tl.kernels.size(); ++i)
    if (tl.kernels.correlation[i] == 22) k = i;
  ASSERT_LT(k, tl.kernels.size());
  EXPECT_EQ(tl.str(tl.kernels.name[k]),
            "void scal_kernel<float, float, 1, true, 6, 5, 5, 3>(cublasTransposeParams<float>, float const*, "
            "float*, float const*)");
  EXPECT_EQ(tl.kernels.kind[k], ActivityKind::kKernel);
  EXPECT_EQ(tl.kernels.start_ns[k], 5103765998984679);
  EXPECT_EQ(tl.kernels.duration_ns(k), 1024);
  EXPECT_EQ(tl.kernels.external_id[k], 7u);
  EXPECT_EQ(tl.kernels.device[k], 0u);
  EXPECT_EQ(tl.kernels.context[k], 1u);
  EXPECT_EQ(tl.kernels.stream[k], 7u);
  EXPECT_EQ(tl.kernels.registers_per_thread[k], 18u);
  EXPECT_EQ(tl.kernels.shared_mem_bytes[k], 0u);
  EXPECT_EQ(tl.kernels.grid[k], (Dim3{16, 2, 1}));
  EXPECT_EQ(tl.kernels.block[k], (Dim3{256, 1, 1}));
  EXPECT_EQ(tl.kernels.pid[k], 771u) << "kernel pid comes from the launch with the same correlation";

  // The first memset: "Memset (Device)", 512 bytes, correlation 19, launched by cudaMemsetAsync.
  EXPECT_EQ(tl.kernels.kind[0], ActivityKind::kMemset);
  EXPECT_EQ(tl.str(tl.kernels.name[0]), "Memset (Device)");
  EXPECT_EQ(tl.kernels.bytes[0], 512u);
  EXPECT_EQ(tl.kernels.correlation[0], 19u);
  for (std::size_t i = 0; i < tl.kernels.size(); ++i) EXPECT_EQ(tl.kernels.pid[i], 771u) << i;

  std::size_t memset_launch = tl.launches.size();
  for (std::size_t i = 0; i < tl.launches.size(); ++i)
    if (tl.launches.correlation[i] == 19) memset_launch = i;
  ASSERT_LT(memset_launch, tl.launches.size());
  EXPECT_EQ(tl.str(tl.launches.api[memset_launch]), "cudaMemsetAsync");
  EXPECT_EQ(tl.launches.pid[memset_launch], 771u);
  EXPECT_EQ(tl.launches.tid[memset_launch], 771u);
  EXPECT_EQ(tl.launches.cpu_start_ns[memset_launch], 5103765998923450);
  EXPECT_EQ(tl.launches.cpu_end_ns[memset_launch], 5103765998923450 + 23525);
  EXPECT_EQ(tl.launches.external_id[memset_launch], 7u);
  std::size_t driver_launches = 0;
  for (std::size_t i = 0; i < tl.launches.size(); ++i) driver_launches += tl.str(tl.launches.api[i]) == "cuLaunchKernel";
  EXPECT_EQ(driver_launches, 2u);
}

TEST_F(KinetoReaderTest, CompiledMlpTraceRangeKinds) {
  Timeline tl = read_kineto_trace(kFixtures + "mlp_compiled.kineto.json");
  std::size_t operators = 0, compiled_thread = 0, compiled_stream = 0;
  for (std::size_t i = 0; i < tl.ranges.size(); ++i) {
    const std::string_view text = tl.str(tl.ranges.text[i]);
    const std::string_view domain = tl.str(tl.ranges.domain[i]);
    if (tl.ranges.kind[i] == RangeKind::kOperator) {
      ++operators;
      EXPECT_EQ(domain, "cpu_op");
    }
    if (tl.ranges.kind[i] == RangeKind::kCompiledRegion) {
      if (tl.ranges.scope(i) == RangeScope::kThread) {
        ++compiled_thread;
        EXPECT_EQ(tl.ranges.pid(i), 771u);
        EXPECT_EQ(tl.ranges.owner(i), 771u);
      } else {
        ++compiled_stream;
        EXPECT_EQ(domain, "gpu_user_annotation");
        EXPECT_EQ(tl.ranges.owner(i), 7u);
        EXPECT_EQ(tl.ranges.device(i), 0u);
        EXPECT_EQ(tl.ranges.pid(i), 771u) << "linked through External id to the CPU-side annotation";
        EXPECT_TRUE(text.starts_with("## Call CompiledFxGraph fixcfmfn3ts7f2hlr6ieyc2j3g2ewah5i5kdrjvpdj63e3wfc6ak"));
      }
    }
    EXPECT_EQ(tl.ranges.depth[i], -1);
  }
  // 2 "Torch-Compiled Region: 0/0" cpu_ops + 2 "## Call CompiledFxGraph" user annotations on the thread.
  EXPECT_EQ(compiled_thread, 4u);
  EXPECT_EQ(compiled_stream, 2u);
  EXPECT_EQ(operators, 16u - 2u);
}

TEST_F(KinetoReaderTest, CompiledMlpTraceMetadata) {
  Timeline tl = read_kineto_trace(kFixtures + "mlp_compiled.kineto.json");
  auto& m = tl.metadata;
  EXPECT_EQ(m["source"], "kineto");
  EXPECT_EQ(m["device.0.name"], "NVIDIA H200");
  EXPECT_EQ(m["device.0.compute_major"], "9");
  EXPECT_EQ(m["device.0.compute_minor"], "0");
  EXPECT_EQ(m["device.0.num_sms"], "132");
  EXPECT_EQ(m["device.0.total_global_mem"], "150109880320");
  EXPECT_EQ(m["base_time_ns"], "1790857026000000000");
  EXPECT_EQ(m["trace.cuda_runtime_version"], "13000");
  EXPECT_EQ(m["trace.cupti_version"], "130001");
  EXPECT_EQ(m["trace.trace_id"], "777E949F94B64D97B7229A4C7B3728BC");
  EXPECT_EQ(m["trace.trace_name"], "/root/out/kineto_compiled.json");
  EXPECT_EQ(m["process.771.name"], "python3");
  EXPECT_EQ(m["process.0.labels"], "GPU 0");
  EXPECT_EQ(m["thread.771.771.name"], "thread 771 (python3)");
  EXPECT_EQ(m["trace.ignored_events.overhead"], "1");
  EXPECT_EQ(m["trace.ignored_events.Trace"], "1");
  EXPECT_EQ(m["trace.ignored_events.ph_s"], "20");
  EXPECT_EQ(m["trace.ignored_events.ph_f"], "18");
  EXPECT_EQ(m["trace.ignored_events.ph_i"], "2");
}

TEST_F(KinetoReaderTest, EagerGpt2TraceLinksEveryKernelToItsProcess) {
  KinetoReadStats stats;
  Timeline tl = read_kineto_trace(kFixtures + "gpt2_eager.kineto.json", &stats);
  EXPECT_EQ(stats.events, 2299u);
  EXPECT_EQ(tl.kernels.size(), 246u);
  EXPECT_EQ(tl.launches.size(), 274u);
  ASSERT_EQ(tl.ranges.size(), 1197u);
  for (std::size_t i = 0; i < tl.kernels.size(); ++i) {
    EXPECT_EQ(tl.kernels.pid[i], 457u);
    EXPECT_NE(tl.kernels.correlation[i], kNoCorrelation);
    EXPECT_NE(tl.kernels.external_id[i], 0u);
    EXPECT_GT(tl.kernels.end_ns[i], tl.kernels.start_ns[i]);
  }
  for (std::size_t i = 0; i < tl.ranges.size(); ++i) {
    EXPECT_EQ(tl.ranges.kind[i], RangeKind::kOperator);
    EXPECT_EQ(tl.ranges.owner(i), 457u);
  }
  // "ts": 5104113816355.811, "dur": 2.496 -- the first kernel.
  EXPECT_EQ(tl.kernels.start_ns[0], 5104113816355811);
  EXPECT_EQ(tl.kernels.end_ns[0], 5104113816355811 + 2496);
  EXPECT_EQ(tl.str(tl.kernels.name[0]),
            "void at::native::vectorized_gather_kernel<16, long>(char*, char*, long*, int, long, long, long, long, "
            "bool)");
  // Names repeat: 246 kernels, far fewer distinct strings than rows.
  EXPECT_LT(tl.strings.size(), 200u);
}

// ---- streaming: chunk boundaries, gzip --------------------------------------------------------

// torch.profiler with record_shapes on a DDP step over gloo (CPU, torch 2.13): the tensors of each
// collective's ranges and the job's process group from distributedInfo.
TEST_F(KinetoReaderTest, CollectivesKeepTheirTensorsAndTheProcessGroups) {
  const Timeline tl = read_kineto_trace(kFixtures + "gloo_ddp_cpu/trace_rank0.json");
  ASSERT_EQ(tl.process_groups.size(), 1u);
  const ProcessGroup& g = tl.process_groups[0];
  EXPECT_EQ(g.pid, 0u);
  EXPECT_EQ(tl.str(g.name), "0");
  EXPECT_EQ(tl.str(g.desc), "default_pg");
  EXPECT_EQ(tl.str(g.backend), "cpu:gloo,cuda:gloo");
  EXPECT_EQ(g.size, 2);
  EXPECT_EQ(tl.str(g.ranks), "0,1");

  std::size_t gloo_all_reduce = 0, c10d_all_reduce = 0;
  std::uint32_t previous = 0;
  for (const CommunicationArgs& c : tl.communication_args) {
    EXPECT_GE(c.range, previous);  // sorted by range
    previous = c.range;
    const std::string_view text = tl.str(tl.ranges.text[c.range]);
    EXPECT_TRUE(is_communication_range(text)) << text;
    EXPECT_EQ(c.process_group, kNoString);  // gloo records no record_param_comms
    if (text == "gloo:all_reduce") {
      ++gloo_all_reduce;
      EXPECT_EQ(tl.str(c.dtype), "float");
      // DDP's bucket of the 64 x 64 linear layer's gradients (4,160 floats), then a tensor of 1,000.
      EXPECT_TRUE(c.elements == 4160 || c.elements == 1000) << c.elements;
      EXPECT_EQ(c.bytes, c.elements * 4);
    } else if (text == "c10d::allreduce_") {
      ++c10d_all_reduce;
      EXPECT_TRUE(c.elements == 4160 || c.elements == 1000) << c.elements;
      EXPECT_EQ(c.bytes, -1);  // a TensorList: dims without a dtype
      EXPECT_EQ(c.dtype, kNoString);
    }
  }
  EXPECT_EQ(gloo_all_reduce, 2u);
  EXPECT_EQ(c10d_all_reduce, 2u);
}

// record_param_comms as ProcessGroupNCCL records it (torch.profiler writes its arguments after the External
// id): the message, its dtype and the collective's own process group. Arguments of other operators with the
// same keys are not read.
TEST_F(KinetoReaderTest, RecordParamCommsGivesTheMessageAndProcessGroup) {
  const std::string trace = R"({"traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 7, "tid": 7, "ts": 10.0, "dur": 5.0,
   "args": {"External id": 3, "Record function id": 0, "Ev Idx": 2, "Rank": 0, "Collective name": "allreduce",
            "In msg nelems": 2361600, "Out msg nelems": 2361600, "Group size": 2, "dtype": "BFloat16",
            "In split size": "[]", "Out split size": "[]", "Global rank start": 0, "Global rank stride": 1,
            "Process Group Name": "3", "Process Group Description": "data_parallel", "Process Group Ranks": "[0, 1]"}},
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 20.0, "dur": 5.0,
   "args": {"External id": 4, "Input Dims": [[2, 2], [2, 2]], "Input type": ["float", "float"], "dtype": "Float"}}
]})";
  const Timeline tl = read_kineto_trace(write("nccl.json", trace));
  ASSERT_EQ(tl.communication_args.size(), 1u);
  const CommunicationArgs& c = tl.communication_args[0];
  EXPECT_EQ(tl.str(tl.ranges.text[c.range]), "record_param_comms");
  EXPECT_EQ(c.elements, 2361600);
  EXPECT_EQ(c.bytes, 2 * 2361600);
  EXPECT_EQ(tl.str(c.dtype), "BFloat16");
  EXPECT_EQ(tl.str(c.process_group), "3");
  EXPECT_EQ(tl.str(c.process_group_desc), "data_parallel");
  EXPECT_EQ(c.group_size, 2);
  EXPECT_EQ(tl.str(c.collective), "allreduce");
  EXPECT_TRUE(tl.process_groups.empty());  // no distributedInfo
}

TEST_F(KinetoReaderTest, TinyChunksGiveTheSameTimeline) {
  const std::string path = kFixtures + "gpt2_eager.kineto.json";
  Timeline whole = read_kineto_trace(path);
  // Chunk sizes below, around and above the 64-byte scan block, so that events, keys, numbers and
  // strings straddle chunk boundaries everywhere.
  // Mapped, with chunks read ahead on a helper thread, and read when needed.
  for (InputAccess access : kEveryAccess) {
    for (std::size_t chunk : {std::size_t{7}, std::size_t{63}, std::size_t{64}, std::size_t{65}, std::size_t{4093}}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + access_name(access));
      KinetoReadStats stats;
      Timeline chunked = read_with_chunk(path, chunk, &stats, access);
      EXPECT_EQ(stats.events, 2299u);
      expect_same_timeline(whole, chunked);
    }
    const std::string mlp = kFixtures + "mlp_compiled.kineto.json";
    expect_same_timeline(read_kineto_trace(mlp), read_with_chunk(mlp, 1, nullptr, access));
  }
}

TEST_F(KinetoReaderTest, AnyNumberOfParseThreadsGivesTheSameTimeline) {
  // Events are parsed in batches (one per chunk) on worker threads and merged in file order.
  const std::string path = kFixtures + "gpt2_eager.kineto.json";
  const Timeline whole = read_kineto_trace(path);
  for (unsigned threads : {1u, 2u, 5u}) {
    for (std::size_t chunk : {std::size_t{64}, std::size_t{4093}}) {
      SCOPED_TRACE(std::to_string(threads) + " threads, chunk " + std::to_string(chunk));
      detail::KinetoReadOptions options;
      options.chunk_bytes = chunk;
      options.parse_threads = threads;
      KinetoReadStats stats;
      const Timeline t = detail::read_kineto_trace(path, options, &stats, {});
      EXPECT_EQ(stats.events, 2299u);
      expect_same_timeline(whole, t);
      EXPECT_EQ(t.strings.size(), whole.strings.size());
      for (StrId id = 0; id < whole.strings.size(); ++id) EXPECT_EQ(t.str(id), whole.str(id));  // same interning order
    }
  }
}

TEST_F(KinetoReaderTest, HandMadeAndTrainingCapturesGiveTheSameTimelineWhateverTheThreads) {
  // Real gzipped traces from the GPU machine: torch.profiler run by hand in a process of its own, without
  // opprof (field/), and a training step that `opprof profile` captured (backward and optimizer kernels,
  // autograd's thread). Small chunks cut them into hundreds of batches, parsed and merged by however many
  // threads.
  const std::string fixtures = std::string(OPPROF_FIXTURES_DIR) + "/";
  for (const char* name : {"field/resnet50_default/trace.json.gz", "field/vit_reduce-overhead/trace.json.gz",
                           "train/gpt2_eager/opprof/trace.json.gz"}) {
    const std::string path = fixtures + name;
    KinetoReadStats whole_stats;
    const Timeline whole = detail::read_kineto_trace(path, {}, &whole_stats, {});
    ASSERT_GT(whole.kernels.size(), 0u) << name;
    for (unsigned threads : {1u, 2u, 5u}) {
      SCOPED_TRACE(std::string(name) + ", " + std::to_string(threads) + " threads");
      detail::KinetoReadOptions options;
      options.chunk_bytes = 4093;
      options.parse_threads = threads;
      KinetoReadStats stats;
      const Timeline t = detail::read_kineto_trace(path, options, &stats, {});
      EXPECT_EQ(stats.events, whole_stats.events);
      expect_same_timeline(whole, t);
      ASSERT_EQ(t.strings.size(), whole.strings.size());
      for (StrId id = 0; id < whole.strings.size(); ++id) EXPECT_EQ(t.str(id), whole.str(id));
    }
  }
}

TEST_F(KinetoReaderTest, TheFirstErrorInTheFileIsReportedWhateverTheThreads) {
  // Two malformed events far apart (in different batches with small chunks) and garbage between events
  // after both: the error reported is the first one in the file, at its line and column, however many
  // workers parse the batches and in whatever order they finish.
  const std::string text = slurp(kFixtures + "gpt2_eager.kineto.json");
  std::string bad = text;
  const std::size_t events = text.find("\"traceEvents\"");
  const std::size_t first = text.find("\"ts\": ", text.find("\"cat\": \"kernel\"", events + text.size() / 3)) + 6;
  const std::size_t second = text.find("\"ts\": ", events + 2 * text.size() / 3) + 6;
  const std::size_t between = text.find("},\n", second) + 1;
  ASSERT_LT(first, second);
  bad[first] = 'x';
  bad[second] = 'x';
  bad[between] = ';';
  const std::string path = write("bad.json", bad);
  const std::size_t line_start = text.rfind('\n', first) + 1;
  expect_error_whatever_the_threads(
      path, {1u, 3u}, {std::size_t{64}, std::size_t{4096}, std::size_t{4} << 20}, [&](const InputError& e) {
        EXPECT_EQ(e.position().byte_offset, first) << e.what();
        EXPECT_EQ(e.position().line, line_of(text, first));
        EXPECT_EQ(e.position().column, first - line_start + 1);
        EXPECT_NE(e.message().find("expected a number of microseconds for \"ts\""), std::string::npos) << e.what();
      });
  // Without the malformed events, the garbage is the error.
  std::string garbage_only = text;
  garbage_only[between] = ';';
  InputError g = read_error(write("g.json", garbage_only), 64);
  EXPECT_EQ(g.position().byte_offset, between) << g.what();
}

TEST_F(KinetoReaderTest, EventLargerThanTheRoomBetweenChunks) {
  // A kernel name of 700 KB: more than the room kept in front of a chunk for a carried-over event, so
  // the window moves to its overflow buffer and back.
  std::string long_name = "void huge_kernel<";
  while (long_name.size() < 700000) long_name += "cutlass::gemm::GemmShape<128, 128, 64>, ";
  long_name += "int>(int)";
  const std::string args = "\"device\": 0, \"stream\": 7, \"correlation\": ";
  const std::string text = trace({event("kernel", "small_a", "0", "7", "1", "1", args + "1"),
                                  event("kernel", long_name, "0", "7", "2", "1", args + "2"),
                                  event("kernel", "small_b", "0", "7", "3", "1", args + "3"),
                                  event("kernel", long_name, "0", "7", "4", "1", args + "4"),
                                  event("kernel", "small_c", "0", "7", "5", "1", args + "5")});
  const std::string path = write("big.json", text);
  for (InputAccess access : kEveryAccess) {
    // Repeated: with read-ahead, a chunk handed back too early shows up only when the helper thread
    // happens to refill it at the wrong moment.
    for (std::size_t chunk : {std::size_t{4096}, std::size_t{4096}, std::size_t{4096}, std::size_t{4096},
                              std::size_t{300000}, std::size_t{4} << 20}) {
      SCOPED_TRACE("chunk " + std::to_string(chunk) + access_name(access));
      Timeline tl = read_with_chunk(path, chunk, nullptr, access);
      ASSERT_EQ(tl.kernels.size(), 5u);
      EXPECT_EQ(tl.str(tl.kernels.name[0]), "small_a");
      EXPECT_EQ(tl.str(tl.kernels.name[1]), long_name);
      EXPECT_EQ(tl.str(tl.kernels.name[2]), "small_b");
      EXPECT_EQ(tl.kernels.name[3], tl.kernels.name[1]);
      EXPECT_EQ(tl.str(tl.kernels.name[4]), "small_c");
      EXPECT_EQ(tl.kernels.correlation[4], 5u);
    }
  }
}

TEST_F(KinetoReaderTest, AFileTruncatedWhileMappedIsAnInputError) {
  // The mapped window grows a chunk at a time; a file cut short meanwhile is found before the reader
  // touches a page past its new end (which would fault).
  const std::string text = slurp(kFixtures + "gpt2_eager.kineto.json");
  const std::string path = write("shrinking.json", text);
  detail::KinetoReadOptions options;
  options.chunk_bytes = 4096;
  options.progress_every_bytes = 4096;
  options.access = InputAccess::kMap;
  bool cut = false;
  try {
    detail::read_kineto_trace(path, options, nullptr, [&](std::uint64_t done, std::uint64_t) {
      // Past what the window shows and its padding, so that what was shown stays readable.
      if (!cut && done > text.size() / 2) {
        fs::resize_file(path, done + 8192);
        cut = true;
      }
    });
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_TRUE(cut);
    EXPECT_NE(e.message().find("truncated while it was being read"), std::string::npos) << e.what();
    EXPECT_EQ(e.file(), path);
  }
}

TEST_F(KinetoReaderTest, GzipInputReadsLikeThePlainFile) {
  const std::string text = slurp(kFixtures + "mlp_compiled.kineto.json");
  Timeline plain = read_kineto_trace(kFixtures + "mlp_compiled.kineto.json");
  KinetoReadStats stats;
  Timeline gz = read_kineto_trace(write_gz("trace.json.gz", text), &stats);
  EXPECT_EQ(stats.bytes, text.size());
  expect_same_timeline(plain, gz);
  // Recognized by its content, not its name; and with events straddling chunks.
  expect_same_timeline(plain, read_with_chunk(write_gz("renamed.json", text), 100));
}

TEST_F(KinetoReaderTest, TruncatedGzipIsAnInputError) {
  const std::string text = slurp(kFixtures + "mlp_compiled.kineto.json");
  const std::string gz = slurp(write_gz("full.json.gz", text));
  const std::string path = write("cut.json.gz", gz.substr(0, gz.size() / 2));
  InputError e = read_error(path);
  EXPECT_NE(e.message().find("truncated"), std::string::npos) << e.what();
}

TEST_F(KinetoReaderTest, ProgressIsReportedWhileReading) {
  detail::KinetoReadOptions options;
  options.chunk_bytes = 4096;
  options.progress_every_bytes = 100000;
  std::vector<std::uint64_t> seen;
  const std::string path = kFixtures + "gpt2_eager.kineto.json";
  detail::read_kineto_trace(path, options, nullptr, [&](std::uint64_t done, std::uint64_t total) {
    EXPECT_EQ(total, fs::file_size(path));
    seen.push_back(done);
  });
  ASSERT_GE(seen.size(), 7u);
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.back(), fs::file_size(path));
}

// ---- event mapping ----------------------------------------------------------------------------

TEST_F(KinetoReaderTest, AnnotationKindsAndModulePrefixStripping) {
  const std::string text = trace({
      event("user_annotation", "ProfilerStep#3", "10", "11", "100.000", "90", "\"External id\": 1"),
      event("user_annotation", "nn.Module: layers.0.attn.q_proj", "10", "11", "101", "5", "\"External id\": 2"),
      event("user_annotation", "## Call CompiledFxGraph abc123 ##", "10", "11", "102", "5", "\"External id\": 3"),
      event("cpu_op", "Torch-Compiled Region: 0/1", "10", "11", "102", "6", "\"External id\": 4"),
      event("cpu_op", "aten::addmm", "10", "11", "103", "1", "\"External id\": 5"),
      event("python_function", "torch/nn/modules/module.py(1771): _call_impl", "10", "11", "101", "7",
            "\"Python id\": 9"),
      event("gpu_user_annotation", "nn.Module: layers.0", "1", "13", "104", "2",
            "\"External id\": 2, \"device\": 1, \"stream\": 13"),
      event("gpu_user_annotation", "custom", "2", "20", "105", "2", "\"External id\": 77"),
  });
  Timeline tl = read_kineto_trace(write("t.json", text));
  ASSERT_EQ(tl.ranges.size(), 8u);
  const auto& r = tl.ranges;
  EXPECT_EQ(r.kind[0], RangeKind::kAnnotation);
  EXPECT_EQ(tl.str(r.text[0]), "ProfilerStep#3");
  EXPECT_EQ(r.kind[1], RangeKind::kModule);
  EXPECT_EQ(tl.str(r.text[1]), "layers.0.attn.q_proj");
  EXPECT_EQ(tl.str(r.domain[1]), "user_annotation");
  EXPECT_EQ(r.kind[2], RangeKind::kCompiledRegion);
  EXPECT_EQ(r.kind[3], RangeKind::kCompiledRegion);
  EXPECT_EQ(r.kind[4], RangeKind::kOperator);
  EXPECT_EQ(r.external_id[4], 5u);
  EXPECT_EQ(r.kind[5], RangeKind::kOther);
  EXPECT_EQ(tl.str(r.domain[5]), "python_function");
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(r.scope(i), RangeScope::kThread);
    EXPECT_EQ(r.pid(i), 10u);
    EXPECT_EQ(r.owner(i), 11u);
  }
  EXPECT_EQ(r.start_ns[0], 100000);
  EXPECT_EQ(r.end_ns[0], 190000);
  // Stream ranges: owner and device from args, else from tid and pid; pid from the CPU annotation.
  EXPECT_EQ(r.kind[6], RangeKind::kModule);
  EXPECT_EQ(tl.str(r.text[6]), "layers.0");
  EXPECT_EQ(r.scope(6), RangeScope::kStream);
  EXPECT_EQ(r.owner(6), 13u);
  EXPECT_EQ(r.device(6), 1u);
  EXPECT_EQ(r.pid(6), 10u);
  EXPECT_EQ(r.kind[7], RangeKind::kAnnotation);
  EXPECT_EQ(r.owner(7), 20u);
  EXPECT_EQ(r.device(7), 2u);
  EXPECT_EQ(r.pid(7), 0u) << "no CPU annotation with External id 77";
}

TEST_F(KinetoReaderTest, MemcpyKernelWithoutLaunchAndDeviceFromPid) {
  const std::string text = trace({
      event("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", "1", "20", "10", "3",
            "\"device\": 1, \"context\": 1, \"stream\": 20, \"correlation\": 5, \"bytes\": 1048576"),
      event("kernel", "triton_poi_fused_add_0", "0", "7", "20", "1",
            "\"External id\": 3, \"correlation\": 99, \"grid\": [8, 1, 1], \"block\": [128, 1, 1]"),
  });
  Timeline tl = read_kineto_trace(write("t.json", text));
  ASSERT_EQ(tl.kernels.size(), 2u);
  EXPECT_EQ(tl.kernels.kind[0], ActivityKind::kMemcpy);
  EXPECT_EQ(tl.kernels.bytes[0], 1048576u);
  EXPECT_EQ(tl.kernels.device[0], 1u);
  EXPECT_EQ(tl.kernels.stream[0], 20u);
  EXPECT_EQ(tl.kernels.pid[0], 0u) << "no launch with correlation 5";
  EXPECT_EQ(tl.kernels.device[1], 0u) << "no device in args: the pid is the device";
  EXPECT_EQ(tl.kernels.stream[1], 7u) << "no stream in args: the tid is the stream";
  EXPECT_EQ(tl.kernels.grid[1], (Dim3{8, 1, 1}));
}

TEST_F(KinetoReaderTest, EscapesAndBracketsInsideStrings) {
  // A name with an escaped quote, escaped backslashes and brackets must neither end the event early nor
  // leak into the next one.
  const std::string text = trace({
      event("cpu_op", R"(weird \"}]{[ name\\)", "1", "2", "1", "1", R"("Concrete Inputs": ["}", "\\\"]", "[["])"),
      event("cpu_op", R"(\u00e9t\u00e9 \\\\)", "1", "2", "2", "1", "\"External id\": 8"),
  });
  Timeline tl = read_with_chunk(write("t.json", text), 5);
  ASSERT_EQ(tl.ranges.size(), 2u);
  EXPECT_EQ(tl.str(tl.ranges.text[0]), "weird \"}]{[ name\\");
  EXPECT_EQ(tl.str(tl.ranges.text[1]), "\xC3\xA9t\xC3\xA9 \\\\");
  EXPECT_EQ(tl.ranges.external_id[1], 8u);
}

TEST_F(KinetoReaderTest, NamedPidAndTidOnARealEventDoNotCrash) {
  const std::string text = trace({
      event("cpu_op", "aten::mm", "\"Spans\"", "\"worker\"", "1", "1", "\"External id\": 1"),
      event("cpu_op", "aten::mm", "\"42\"", "\"43\"", "2", "1", "\"External id\": 2"),
      "  {\"ph\": \"X\", \"cat\": \"Trace\", \"ts\": 1, \"dur\": 9, \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\", "
      "\"name\": \"PyTorch Profiler (0)\", \"args\": {\"Op count\": 0}}",
      "  {\"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"Traces\", "
      "\"tid\": \"Trace PyTorch Profiler\", \"ts\": 1}",
  });
  Timeline tl = read_kineto_trace(write("t.json", text));
  ASSERT_EQ(tl.ranges.size(), 2u);
  EXPECT_GE(tl.ranges.pid(0), 0x80000000u);
  EXPECT_EQ(tl.metadata["process." + std::to_string(tl.ranges.pid(0)) + ".name"], "Spans");
  EXPECT_EQ(tl.ranges.pid(1), 42u) << "numeric text is a number";
  EXPECT_EQ(tl.ranges.owner(1), 43u);
  EXPECT_EQ(tl.metadata["trace.ignored_events.Trace"], "1");
}

// ---- top level --------------------------------------------------------------------------------

TEST_F(KinetoReaderTest, TopLevelKeysAfterTheEventsAndTheBareArrayFormat) {
  const std::string ev = event("kernel", "k", "0", "7", "5", "1", "\"device\": 0, \"stream\": 7");
  const std::string text = trace({ev}, "  \"schemaVersion\": 1,\n",
                                 ",\n  \"deviceProperties\": [{\"id\": 3, \"name\": \"NVIDIA H200\", \"numSms\": 132}],\n"
                                 "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 2},\n"
                                 "  \"baseTimeNanoseconds\": 1790857026000000000, \"with_modules\": true, \"x\": null");
  Timeline tl = read_with_chunk(write("t.json", text), 16);
  EXPECT_EQ(tl.kernels.size(), 1u);
  EXPECT_EQ(tl.metadata["device.3.name"], "NVIDIA H200");
  EXPECT_EQ(tl.metadata["device.3.num_sms"], "132");
  EXPECT_EQ(tl.metadata["trace.schema_version"], "1");
  EXPECT_EQ(tl.metadata["trace.distributed_info.backend"], "nccl");
  EXPECT_EQ(tl.metadata["trace.distributed_info.rank"], "2");
  EXPECT_EQ(tl.metadata["base_time_ns"], "1790857026000000000");
  EXPECT_EQ(tl.metadata["trace.with_modules"], "true");

  Timeline bare = read_kineto_trace(write("bare.json", "[" + ev + ",\n" + ev + "]"));
  EXPECT_EQ(bare.kernels.size(), 2u);
  // A byte order mark in front, even when the first chunk holds only part of it.
  const std::string with_bom = write("bom.json", "\xEF\xBB\xBF" + text);
  for (InputAccess access : kEveryAccess)
    EXPECT_EQ(read_with_chunk(with_bom, 2, nullptr, access).kernels.size(), 1u) << access_name(access);
  EXPECT_EQ(read_kineto_trace(with_bom).kernels.size(), 1u);
  Timeline empty = read_kineto_trace(write("empty_events.json", "{\"traceEvents\": []}"));
  EXPECT_EQ(empty.kernels.size(), 0u);
  EXPECT_EQ(empty.metadata["source"], "kineto");
}

// ---- errors -----------------------------------------------------------------------------------

TEST_F(KinetoReaderTest, MissingFileNamesTheSystemError) {
  const std::string path = (dir_ / "does_not_exist.json").string();
  InputError e = read_error(path);
  EXPECT_EQ(e.file(), path);
  EXPECT_NE(e.message().find("cannot open"), std::string::npos) << e.what();
  EXPECT_NE(e.message().find("No such file"), std::string::npos) << e.what();
  EXPECT_FALSE(e.position().known);
}

TEST_F(KinetoReaderTest, TruncatedInsideAnEventNamesTheLineWhereTheEventStarts) {
  const std::string text = slurp(kFixtures + "mlp_compiled.kineto.json");
  // Cut inside the scal_kernel event, in its "ts" value; the event's '{' is two lines above.
  const std::size_t cut = text.find("\"ts\": 5103765998984.679") + 9;
  const std::size_t event_start = text.rfind("\n  {", cut) + 3;
  const std::string path = write("cut.json", text.substr(0, cut));
  for (std::size_t chunk : {std::size_t{4} << 20, std::size_t{33}}) {
    InputError e = read_error(path, chunk);
    EXPECT_EQ(e.message(),
              "truncated: the trace ends inside an event (was the profiler stopped before it finished writing?)");
    EXPECT_TRUE(e.position().known);
    EXPECT_EQ(e.position().line, line_of(text, event_start));
    EXPECT_EQ(e.position().line, 174u);
    EXPECT_EQ(e.position().column, 3u);
    EXPECT_EQ(e.position().byte_offset, event_start);
    EXPECT_NE(std::string(e.what()).find("cut.json:174:3: truncated"), std::string::npos) << e.what();
  }
}

TEST_F(KinetoReaderTest, TruncatedBetweenEventsOrAfterTheArray) {
  const std::string text = slurp(kFixtures + "mlp_compiled.kineto.json");
  const std::size_t after_event = text.find("},\n", text.find("\"traceEvents\"")) + 2;
  InputError between = read_error(write("a.json", text.substr(0, after_event)));
  EXPECT_NE(between.message().find("truncated: the trace ends inside the \"traceEvents\" array"), std::string::npos)
      << between.what();
  EXPECT_EQ(between.position().byte_offset, after_event);

  const std::size_t after_array = text.find("\n  ],") + 4;
  InputError top = read_error(write("b.json", text.substr(0, after_array)));
  EXPECT_NE(top.message().find("truncated: the trace ends before its top-level object is closed"),
            std::string::npos)
      << top.what();
}

TEST_F(KinetoReaderTest, MalformedEventNamesLineAndColumn) {
  const std::string text = slurp(kFixtures + "mlp_compiled.kineto.json");
  const std::string ts_line = "    \"ts\": 5103765998984.679, \"dur\": 1.024,";
  const std::size_t at = text.find(ts_line);
  ASSERT_NE(at, std::string::npos);
  const std::uint64_t line = line_of(text, at);
  ASSERT_EQ(line, 176u);

  // A number that is not one: the error points at the value.
  std::string bad_number = text;
  bad_number.replace(at, ts_line.size(), "    \"ts\": 51037659x98984.679, \"dur\": 1.024,");
  for (std::size_t chunk : {std::size_t{4} << 20, std::size_t{50}}) {
    InputError e = read_error(write("n.json", bad_number), chunk);
    EXPECT_EQ(e.position().line, line);
    EXPECT_EQ(e.position().column, 11u);
    EXPECT_NE(e.message().find("expected a number of microseconds for \"ts\""), std::string::npos) << e.what();
  }

  // A missing comma between two fields: simdjson finds it; the error is on that line.
  std::string missing_comma = text;
  missing_comma.replace(at, ts_line.size(), "    \"ts\": 5103765998984.679 \"dur\": 1.024,");
  for (std::size_t chunk : {std::size_t{4} << 20, std::size_t{50}}) {
    InputError e = read_error(write("c.json", missing_comma), chunk);
    EXPECT_EQ(e.position().line, line) << e.what();
    EXPECT_EQ(e.position().column, 29u) << e.what();
    EXPECT_EQ(e.message(), "malformed event: expected ',' or '}' after a value in an object, found '\"'");
  }

  // A colon where a comma belongs, in a key that is read before the problem is reached.
  std::string colon = text;
  const std::size_t cat = text.find("\"cat\": \"kernel\"", at - 200);
  colon.replace(cat, 15, "\"cat\": \"kernel\" : 3");
  InputError c = read_error(write("colon.json", colon));
  EXPECT_EQ(c.position().line, line - 1);
  EXPECT_EQ(c.position().byte_offset, cat + 16);
  EXPECT_NE(c.message().find("found ':'"), std::string::npos) << c.what();

  // A malformed number inside "args".
  std::string bad_arg = text;
  const std::size_t stream = text.find("\"stream\": 7,", at);
  bad_arg.replace(stream, 12, "\"stream\": 7x,");
  InputError n = read_error(write("arg.json", bad_arg));
  EXPECT_EQ(n.position().byte_offset, stream + 10);
  EXPECT_NE(n.message().find("malformed number"), std::string::npos) << n.what();

  // A grid that is not three counts: a fourth element would otherwise be dropped (and with it, for an
  // object, whatever event a broken edit put there), a string or a missing one would change the identity.
  for (const char* grid : {"[1, 1, 1, 1]", "[1, 1]", "[1, \"x\", 1]"}) {
    std::string bad_grid = text;
    const std::size_t g = text.find("\"grid\": [", at);
    ASSERT_NE(g, std::string::npos);
    bad_grid.replace(g + 8, text.find(']', g) + 1 - (g + 8), grid);
    InputError e = read_error(write("grid.json", bad_grid));
    EXPECT_EQ(e.position().byte_offset, g + 8) << e.what();
    EXPECT_NE(e.message().find("\"grid\" is not [x, y, z]"), std::string::npos) << e.what();
  }

  // Garbage between events.
  std::string garbage = text;
  const std::size_t between = text.find("},\n", text.find("\"traceEvents\"")) + 1;
  garbage.replace(between, 1, ";");
  InputError g = read_error(write("g.json", garbage));
  EXPECT_NE(g.message().find("expected ',' or ']' after an event, found ';'"), std::string::npos) << g.what();
  EXPECT_EQ(g.position().byte_offset, between);
  EXPECT_EQ(g.position().line, line_of(text, between));
}

TEST_F(KinetoReaderTest, EventWithoutTimestampIsAnError) {
  const std::string text =
      "{\"traceEvents\": [\n  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7},\n"
      "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"dur\": 1}\n]}";
  InputError e = read_error(write("t.json", text));
  EXPECT_NE(e.message().find("has no \"ts\""), std::string::npos) << e.what();
  EXPECT_EQ(e.position().line, 2u);
  EXPECT_EQ(e.position().column, 3u);
}

TEST_F(KinetoReaderTest, AnErrorFoundWhileMergingIsTheFirstInTheFileWhateverTheThreads) {
  // A kernel without "ts" parses but cannot go into the timeline: the thread merging its batch finds it,
  // while other threads parse the batches after it, one of which holds a malformed event. The error
  // reported is the one that comes first in the file, and the reader neither hangs nor reads on.
  const std::string text = slurp(kFixtures + "gpt2_eager.kineto.json");
  std::string bad = text;
  const std::size_t events = text.find("\"traceEvents\"");
  const std::size_t kernel = text.find("\"cat\": \"kernel\"", events + text.size() / 3);
  const std::size_t event_start = text.rfind("\n  {", kernel) + 3;
  const std::size_t ts = text.find("\"ts\": ", kernel);
  ASSERT_LT(ts, text.find('}', kernel));
  bad.replace(ts, 2, "\"x");  // "ts" becomes "xs", a key opprof does not read
  const std::size_t later = bad.find("\"ts\": ", events + 2 * text.size() / 3) + 6;
  bad[later] = 'x';
  const std::string path = write("no_ts.json", bad);
  expect_error_whatever_the_threads(path, {1u, 2u, 3u}, {std::size_t{64}, std::size_t{4096}}, [&](const InputError& e) {
    EXPECT_NE(e.message().find("has no \"ts\""), std::string::npos) << e.what();
    EXPECT_EQ(e.position().byte_offset, event_start) << e.what();
    EXPECT_EQ(e.position().line, line_of(text, event_start));
  });
}

TEST_F(KinetoReaderTest, NotATrace) {
  EXPECT_NE(read_error(write("a.json", "{\"schemaVersion\": 1}")).message().find("no \"traceEvents\""),
            std::string::npos);
  EXPECT_NE(read_error(write("b.json", "hello")).message().find("expected '{'"), std::string::npos);
  EXPECT_NE(read_error(write("c.json", "")).message().find("empty file"), std::string::npos);
  EXPECT_NE(read_error(write("d.json", "{\"traceEvents\": 3}")).message().find("must be an array"),
            std::string::npos);
  EXPECT_NE(read_error(write("e.json", "{\"traceEvents\": [1, 2]}")).message().find("expected an event object"),
            std::string::npos);
  EXPECT_NE(read_error(write("f.json", "{\"traceEvents\": []} x")).message().find("unexpected data after"),
            std::string::npos);
  EXPECT_NE(read_error(write("g.json", "{\"a\" 1, \"traceEvents\": []}")).message().find("expected ':'"),
            std::string::npos);
  const std::string bad_devices = "{\"deviceProperties\": [{\"id\": 0,,}], \"traceEvents\": []}";
  InputError devices = read_error(write("h.json", bad_devices));
  EXPECT_EQ(devices.message(), "malformed value of the top-level key \"deviceProperties\": expected a key string, found ','");
  EXPECT_EQ(devices.position().line, 1u);
  EXPECT_EQ(devices.position().column, bad_devices.find(",,") + 2);
}

// ---- pieces -----------------------------------------------------------------------------------

TEST(KinetoTimeParsing, MicrosecondsToNanosecondsExactly) {
  using detail::parse_trace_us_as_ns;
  EXPECT_EQ(parse_trace_us_as_ns("5104156394367.444"), 5104156394367444);
  EXPECT_EQ(parse_trace_us_as_ns("5104113816355.811 "), 5104113816355811);
  // 2^53 + 1 ns: no double holds it, so only a parse of the text gets it right.
  EXPECT_EQ(parse_trace_us_as_ns("9007199254740.993"), 9007199254740993);
  EXPECT_EQ(parse_trace_us_as_ns("12"), 12000);
  EXPECT_EQ(parse_trace_us_as_ns("0.8"), 800);
  EXPECT_EQ(parse_trace_us_as_ns("0.001"), 1);
  EXPECT_EQ(parse_trace_us_as_ns("1.0004999"), 1000);
  EXPECT_EQ(parse_trace_us_as_ns("1.0005"), 1001);
  EXPECT_EQ(parse_trace_us_as_ns("-3.25"), -3250);
  EXPECT_EQ(parse_trace_us_as_ns("-0.0006"), -1);
  EXPECT_EQ(parse_trace_us_as_ns("1e3"), 1000000);
  EXPECT_EQ(parse_trace_us_as_ns("1.5E-3"), 2);
  EXPECT_EQ(parse_trace_us_as_ns("2.5e+1"), 25000);
  for (const char* bad : {"", " ", "abc", "1.", ".5", "1.2.3", "--1", "+1", "1e", "0x10", "99999999999999999999",
                          "9300000000000000", "1,5"})
    EXPECT_EQ(parse_trace_us_as_ns(bad), std::nullopt) << bad;
}

namespace {
// The obvious byte-at-a-time scan the SIMD one must agree with. For valid JSON this is plain JSON
// semantics. For invalid JSON both follow the same rules: a backslash escapes the next byte wherever it
// stands (as in simdjson's first stage) and escaping only matters to quotes; only brackets of the
// value's own kind are counted.
std::size_t reference_value_end(const std::string& s, std::size_t start) {
  std::vector<bool> escaped(s.size() + 1, false);
  for (std::size_t i = start; i < s.size(); ++i)
    if (s[i] == '\\' && !escaped[i]) escaped[i + 1] = true;
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = start; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '"' && !escaped[i]) {
      in_string = !in_string;
      continue;
    }
    if (in_string) continue;
    if (c == s[start]) ++depth;
    if (c == s[start] + 2 && --depth == 0) return i + 1;
  }
  return detail::kNoEnd;
}
}  // namespace

using ScanFn = std::size_t (*)(const char*, std::size_t, detail::BracketScan&);

// The build the reader picked, and each build on its own where the CPU runs it.
std::vector<std::pair<const char*, ScanFn>> scan_builds() {
  std::vector<std::pair<const char*, ScanFn>> builds = {{"dispatched", detail::scan_to_value_end},
                                                        {"baseline", detail::scan_to_value_end_baseline}};
  if (detail::scan_uses_avx2()) builds.emplace_back("avx2", detail::scan_to_value_end_avx2);
  return builds;
}

TEST(JsonScan, AgreesWithAByteAtATimeScanAcrossBlocksAndResumes) {
  for (auto [build, scan_to_value_end] : scan_builds()) {
  SCOPED_TRACE(build);
  std::mt19937 rng(1234);
  const std::string alphabet = "{}[]\"\\\\\\ab:,\n";
  for (int round = 0; round < 3000; ++round) {
    // Random bodies heavy in quotes and backslashes, so escape runs and strings cross 64-byte blocks.
    std::string s(rng() % 7, ' ');
    const std::size_t start = s.size();
    const bool object = rng() % 4 != 0;
    s += object ? "{" : "[";
    const std::size_t body = rng() % 300;
    for (std::size_t i = 0; i < body; ++i) s += alphabet[rng() % alphabet.size()];
    s += std::string(rng() % 3, object ? '}' : ']') + (object ? "]}" : "}]");
    const std::size_t expected = reference_value_end(s, start);

    std::string buf = s + std::string(64, ' ');
    detail::BracketScan whole;
    whole.pos = start;
    ASSERT_EQ(scan_to_value_end(buf.data(), s.size(), whole), expected) << s;

    // The same bytes arriving a few at a time, the scan resumed after each arrival.
    detail::BracketScan scan;
    scan.pos = start;
    std::size_t got = detail::kNoEnd;
    for (std::size_t size = start + 1; size <= s.size() && got == detail::kNoEnd; size += 1 + rng() % 90) {
      std::string window = s.substr(0, size) + std::string(64, '"');  // padding must not matter
      got = scan_to_value_end(window.data(), size, scan);
    }
    if (got == detail::kNoEnd) {
      std::string window = s + std::string(64, '"');
      got = scan_to_value_end(window.data(), s.size(), scan);
    }
    ASSERT_EQ(got, expected) << s;
  }
  }
}

TEST(JsonScan, CountsNewlines) {
  std::mt19937 rng(7);
  for (std::size_t n : {0u, 1u, 15u, 16u, 17u, 31u, 33u, 255u * 16u, 255u * 32u + 33u, 100000u}) {
    std::string s(n, 'x');
    for (auto& c : s)
      if (rng() % 3 == 0) c = '\n';
    const auto expected = static_cast<std::uint64_t>(std::count(s.begin(), s.end(), '\n'));
    EXPECT_EQ(detail::count_newlines(s.data(), s.size()), expected);
    EXPECT_EQ(detail::count_newlines_baseline(s.data(), s.size()), expected);
    if (detail::scan_uses_avx2()) {
      EXPECT_EQ(detail::count_newlines_avx2(s.data(), s.size()), expected);
    }
  }
}

TEST(JsonDiagnose, NamesTheFirstBrokenByteAndWhatWasExpected) {
  using detail::find_json_problem;
  EXPECT_FALSE(find_json_problem(R"( {"a": [1, 2.5e-3, "x\"y\u00e9", true, null, {}], "b": {"c": -0}} )"));
  struct Case {
    const char* text;
    std::size_t offset;
    const char* message;
  };
  const Case cases[] = {
      {R"({"a": 1 "b": 2})", 8, "expected ',' or '}' after a value in an object, found '\"'"},
      {R"({"a": 1,})", 8, "expected a key string, found '}'"},
      {R"({"a" 1})", 5, "expected ':' after a key, found '1'"},
      {R"([1, 2,])", 6, "expected a value, found ']'"},
      {R"([1 2])", 3, "expected ',' or ']' after a value in an array, found '2'"},
      {R"({"a": "b)", 6, "unterminated string"},
      {R"({"a": "\q"})", 7, "invalid escape '\\q' in a string"},
      {R"({"a": "\u12"})", 7, "invalid \\u escape in a string: expected four hex digits"},
      {"{\"a\": \"x\ty\"}", 8, "raw control character (byte 0x09) in a string: it must be escaped"},
      {R"({"a": 01})", 6, "malformed number: unexpected '1' in it"},
      {R"({"a": 1.})", 6, "malformed number: expected a digit after '.'"},
      {R"({"a": tru})", 6, "expected a value, found 't'"},
      {R"({"a": 1} x)", 9, "unexpected 'x' after the end of the value"},
      {R"({"a": [1, 2})", 11, "expected ',' or ']' after a value in an array, found '}'"},
  };
  for (const Case& c : cases) {
    auto problem = find_json_problem(c.text);
    ASSERT_TRUE(problem.has_value()) << c.text;
    EXPECT_EQ(problem->offset, c.offset) << c.text;
    EXPECT_EQ(problem->message, c.message) << c.text;
  }
}

// A training step as torch.profiler(with_modules=True) writes it: module calls as python_function events,
// sequence numbers on forward and backward operators, and fwdbwd flows between them.
TEST_F(KinetoReaderTest, AutogradSequenceNumbersFlowsAndPythonModuleRanges) {
  auto flow = [](const std::string& ph, const std::string& id, const std::string& tid, const std::string& ts) {
    return "  {\"ph\": \"" + ph + "\", \"id\": " + id + ", \"pid\": 10, \"tid\": " + tid + ", \"ts\": " + ts +
           ", \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\"" + (ph == "f" ? ", \"bp\": \"e\"" : "") + "}";
  };
  const std::string text = trace({
      event("python_function", "nn.Module: GPT2Model_0", "10", "11", "100", "50", "\"Python id\": 1"),
      event("python_function", "nn.Module: GPT2Block_3", "10", "11", "110", "20", "\"Python id\": 2"),
      event("python_function", "nn.Module: Conv1D_12", "10", "11", "111", "5", "\"Python id\": 3"),
      event("python_function", "nn.Module: Conv1D_13", "10", "11", "120", "5", "\"Python id\": 4"),
      event("python_function", "torch/nn/functional.py(2901): gelu", "10", "11", "121", "1", "\"Python id\": 5"),
      event("cpu_op", "aten::addmm", "10", "11", "112", "2",
            "\"External id\": 7, \"Record function id\": 0, \"Sequence number\": 48, \"Fwd thread id\": 0, "
            "\"Input Dims\": [[2, 3]], \"Ev Idx\": 3"),
      event("cpu_op", "aten::view", "10", "11", "115", "1",
            "\"External id\": 8, \"Record function id\": 0, \"Input Dims\": [[6]], \"Sequence number\": 99"),
      event("cpu_op", "autograd::engine::evaluate_function: AddmmBackward0", "10", "20", "300", "9",
            "\"External id\": 513, \"Record function id\": 0, \"Sequence number\": 48, \"Fwd thread id\": 1"),
      event("cpu_op", "AddmmBackward0", "10", "20", "301", "7",
            "\"External id\": 514, \"Record function id\": 0, \"Sequence number\": 48, \"Fwd thread id\": 1"),
      flow("s", "1", "11", "112"),
      flow("f", "1", "20", "301"),
      "  {\"ph\": \"s\", \"id\": 5, \"pid\": 10, \"tid\": 11, \"ts\": 112, \"cat\": \"ac2g\", \"name\": \"ac2g\"}",
  });
  Timeline tl = read_kineto_trace(write("t.json", text));
  const auto& r = tl.ranges;
  ASSERT_EQ(r.size(), 9u);
  // Module calls nest into paths; other Python frames stay frames.
  EXPECT_EQ(r.kind[0], RangeKind::kModule);
  EXPECT_EQ(tl.str(r.text[0]), "GPT2Model_0");
  EXPECT_EQ(tl.str(r.text[1]), "GPT2Model_0/GPT2Block_3");
  EXPECT_EQ(tl.str(r.text[2]), "GPT2Model_0/GPT2Block_3/Conv1D_12");
  EXPECT_EQ(tl.str(r.text[3]), "GPT2Model_0/GPT2Block_3/Conv1D_13");
  EXPECT_EQ(r.kind[4], RangeKind::kOther);
  // Sequence numbers and forward threads; reading stops before the shapes, which come after them.
  EXPECT_EQ(r.sequence_nr[5], 48);
  EXPECT_EQ(r.forward_thread[5], 0u);
  EXPECT_EQ(r.sequence_nr[6], kNoSequenceNr) << "the sequence number after the shapes is not read";
  EXPECT_EQ(r.sequence_nr[7], 48);
  EXPECT_EQ(r.forward_thread[7], 1u);
  EXPECT_EQ(r.sequence_nr[8], 48);
  EXPECT_EQ(r.sequence_nr[0], kNoSequenceNr);
  // The fwdbwd flow links the forward operator to the backward node it lands on; ac2g flows are ignored.
  ASSERT_EQ(tl.autograd_links.size(), 1u);
  EXPECT_EQ(tl.autograd_links[0].forward_range, 5u);
  EXPECT_EQ(tl.autograd_links[0].backward_range, 8u);
  EXPECT_EQ(tl.metadata.at("trace.ignored_events.ph_s"), "1");
}

TEST_F(KinetoReaderTest, PythonModuleEventsGiveWayToOpprofsModuleAnnotations) {
  const std::string text = trace({
      event("user_annotation", "nn.Module: transformer.h.0", "10", "11", "100", "50", "\"External id\": 1"),
      event("python_function", "nn.Module: GPT2Block_0", "10", "11", "100", "50", "\"Python id\": 2"),
  });
  Timeline tl = read_kineto_trace(write("t.json", text));
  ASSERT_EQ(tl.ranges.size(), 2u);
  EXPECT_EQ(tl.ranges.kind[0], RangeKind::kModule);
  EXPECT_EQ(tl.str(tl.ranges.text[0]), "transformer.h.0");
  EXPECT_EQ(tl.ranges.kind[1], RangeKind::kOther) << "the hooks' attribute paths are the module ranges";
}
