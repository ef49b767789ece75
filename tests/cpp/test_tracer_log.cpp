// read_tracer_log on logs written with the shared format's LogBuilder (the same put_record the injection
// library uses): every record type, truncation, corruption, forward compatibility, graph capture stacks.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

#include "opprof/attribute/engine.hpp"
#include "opprof/ingest/communication_args.hpp"
#include "opprof/ingest/tracer_log.hpp"
#include "opprof/ingest/tracer_log_detail.hpp"
#include "tracer_log/decoder.hpp"
#include "tracer_log/format.hpp"
#include "opprof/util/error.hpp"
#include "timeline_checks.hpp"

namespace opprof {
namespace {

using namespace tracelog;

class TempLog {
 public:
  explicit TempLog(const std::string& bytes) {
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("opprof_test_tracer_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".bin"))
                .string();
    std::ofstream(path_, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  ~TempLog() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::size_t find_range(const Timeline& tl, std::string_view text, RangeScope scope = RangeScope::kThread) {
  for (std::size_t i = 0; i < tl.ranges.size(); ++i)
    if (tl.str(tl.ranges.text[i]) == text && tl.ranges.scope(i) == scope) return i;
  return kNoIndex;
}

KernelRecord kernel(std::uint32_t name_sid, std::uint64_t start, std::uint64_t end, std::uint32_t corr,
                    std::uint32_t stream = 7) {
  KernelRecord k{};
  k.start_ns = start;
  k.end_ns = end;
  k.correlation_id = corr;
  k.stream_id = stream;
  k.name_sid = name_sid;
  k.grid_x = 16; k.grid_y = 16; k.grid_z = 1;
  k.block_x = 16; k.block_y = 16; k.block_z = 1;
  k.static_shared_bytes = 1024;
  k.dynamic_shared_bytes = 512;
  k.registers_per_thread = 40;
  return k;
}

// A log with every record type, as the tracer writes them for a small program.
LogBuilder full_log() {
  LogBuilder b(4242, 0, 1000, 5000);
  b.string(1, "_Z12matmul_naivePKfS0_Pfi")
      .string(2, "cudaLaunchKernel_v7000")
      .string(3, "forward")
      .string(4, "nn.Module: layer0")
      .string(5, "aten::mm, seq = 12, op_id = 34, sizes = [[64, 256], [256, 512]]")
      .string(6, "async_region")
      .string(7, "my_domain")
      .string(8, "NVIDIA H200")
      .string(9, "main thread")
      .string(10, "a mark");
  b.add(RecordType::kDevice, DeviceRecord{141ull << 30, 0, 8, 9, 0, 132, 0});
  b.add(RecordType::kApiName, ApiNameRecord{kApiDomainRuntime, 211, 2, 0});
  b.add(RecordType::kThreadName, ThreadNameRecord{100, 9, 0});
  b.add(RecordType::kCategoryName, CategoryNameRecord{0, 3, 10, 0});
  b.add(RecordType::kWindowStart, WindowRecord{1100, 100, 10, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1200, 100, 3, 0, 0, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1300, 100, 4, 0, 0, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1400, 100, 5, 7, 0, 0});  // another domain
  b.add(RecordType::kApiCall, ApiCallRecord{1450, 1460, 100, 4242, 11, 211, kApiDomainRuntime, 0, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1500, 100, 7, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1600, 100, 0, 0});
  b.add(RecordType::kNvtxStart, NvtxStartRecord{1650, 77, 100, 6, 0, 0, 0});
  b.add(RecordType::kNvtxMark, NvtxMarkRecord{1660, 100, 10, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1700, 100, 0, 0});
  b.add(RecordType::kNvtxEnd, NvtxEndRecord{1800, 77, 101});  // ended on another thread
  b.add(RecordType::kWindowStop, WindowRecord{1900, 100, 20, 0});
  b.add(RecordType::kKernel, kernel(1, 1470, 1490, 11));
  MemcpyRecord m{};
  m.start_ns = 1420; m.end_ns = 1440; m.bytes = 4096; m.correlation_id = 12; m.stream_id = 7; m.copy_kind = 1;
  b.add(RecordType::kMemcpy, m);
  MemsetRecord s{};
  s.start_ns = 1441; s.end_ns = 1442; s.bytes = 256; s.correlation_id = 13; s.stream_id = 7;
  b.add(RecordType::kMemset, s);
  b.add(RecordType::kDropped, DroppedRecord{5, 1});
  b.add(RecordType::kTrailer, TrailerRecord{2000, 6000, 30, 10});
  return b;
}

TEST(TracerLog, RoundTripsEveryRecordType) {
  TempLog log(full_log().bytes());
  const Timeline tl = read_tracer_log(log.path());

  ASSERT_EQ(tl.kernels.size(), 3u);
  EXPECT_EQ(tl.kernels.kind[0], ActivityKind::kKernel);
  EXPECT_EQ(tl.str(tl.kernels.name[0]), "matmul_naive(float const*, float const*, float*, int)");
  EXPECT_EQ(tl.str(tl.kernels.mangled[0]), "_Z12matmul_naivePKfS0_Pfi");
  EXPECT_EQ(tl.kernels.grid[0], (Dim3{16, 16, 1}));
  EXPECT_EQ(tl.kernels.block[0], (Dim3{16, 16, 1}));
  EXPECT_EQ(tl.kernels.shared_mem_bytes[0], 1536u);
  EXPECT_EQ(tl.kernels.registers_per_thread[0], 40u);
  EXPECT_EQ(tl.kernels.correlation[0], 11u);
  EXPECT_EQ(tl.kernels.pid[0], 4242u);
  EXPECT_EQ(tl.kernels.start_ns[0], 1470);
  EXPECT_EQ(tl.kernels.kind[1], ActivityKind::kMemcpy);
  EXPECT_EQ(tl.str(tl.kernels.name[1]), "Memcpy HtoD");
  EXPECT_EQ(tl.kernels.bytes[1], 4096u);
  EXPECT_EQ(tl.kernels.kind[2], ActivityKind::kMemset);

  ASSERT_EQ(tl.launches.size(), 1u);
  EXPECT_EQ(tl.str(tl.launches.api[0]), "cudaLaunchKernel_v7000");
  EXPECT_EQ(tl.launches.tid[0], 100u);
  EXPECT_EQ(tl.launches.correlation[0], 11u);

  const std::size_t forward = find_range(tl, "forward");
  const std::size_t layer = find_range(tl, "layer0");
  const std::size_t mm = find_range(tl, "aten::mm");
  const std::size_t async = find_range(tl, "async_region");
  ASSERT_NE(forward, kNoIndex);
  ASSERT_NE(layer, kNoIndex);
  ASSERT_NE(mm, kNoIndex);
  ASSERT_NE(async, kNoIndex);
  EXPECT_EQ(tl.ranges.kind[forward], RangeKind::kAnnotation);
  EXPECT_EQ(tl.ranges.kind[layer], RangeKind::kModule);
  EXPECT_EQ(tl.ranges.kind[mm], RangeKind::kOperator);
  EXPECT_EQ(tl.str(tl.ranges.domain[mm]), "my_domain");
  EXPECT_EQ(tl.ranges.depth[forward], 0);
  EXPECT_EQ(tl.ranges.depth[layer], 1);
  EXPECT_EQ(tl.ranges.depth[mm], 2);
  // Pops pair within their own domain: layer0's pop comes after aten::mm's pop in another domain.
  EXPECT_EQ(tl.ranges.start_ns[mm], 1400);
  EXPECT_EQ(tl.ranges.end_ns[mm], 1500);
  EXPECT_EQ(tl.ranges.end_ns[layer], 1600);
  EXPECT_EQ(tl.ranges.end_ns[forward], 1700);
  EXPECT_EQ(tl.ranges.owner(forward), 100u);
  EXPECT_EQ(tl.ranges.depth[async], -1);
  EXPECT_EQ(tl.ranges.start_ns[async], 1650);
  EXPECT_EQ(tl.ranges.end_ns[async], 1800);
  EXPECT_EQ(tl.ranges.owner(async), 100u);

  const std::size_t window = find_range(tl, "capture window");
  ASSERT_NE(window, kNoIndex);
  EXPECT_EQ(tl.ranges.kind[window], RangeKind::kCaptureWindow);
  EXPECT_EQ(tl.metadata.at("window.start_ns"), "1100");
  EXPECT_EQ(tl.metadata.at("window.end_ns"), "1900");
  EXPECT_EQ(tl.metadata.at("source"), "opprof-tracer");
  EXPECT_EQ(tl.metadata.at("device.0.name"), "NVIDIA H200");
  EXPECT_EQ(tl.metadata.at("device.0.num_sms"), "132");
  EXPECT_EQ(tl.metadata.at("device.0.cc"), "9.0");
  EXPECT_EQ(tl.metadata.at("clock.steady_start_ns"), "5000");
  EXPECT_EQ(tl.metadata.at("clock.cupti_end_ns"), "2000");
  EXPECT_EQ(tl.metadata.at("nvtx.marks"), "1");
  EXPECT_TRUE(tl.metadata.count("warning.dropped"));
  EXPECT_FALSE(tl.metadata.count("warning.truncated"));
  EXPECT_FALSE(tl.metadata.count("warning.no_trailer"));
  EXPECT_FALSE(tl.metadata.count("warning.unclosed_ranges"));
}

TEST(TracerLog, TruncatedInsideARecordReadsUpToTheLastCompleteOne) {
  LogBuilder b(1);
  b.string(1, "_Z1kv");
  b.add(RecordType::kKernel, kernel(1, 10, 20, 1));
  b.add(RecordType::kKernel, kernel(1, 30, 40, 2));
  const std::size_t complete = b.bytes().size();
  b.add(RecordType::kKernel, kernel(1, 50, 60, 3));
  std::string cut = b.bytes().substr(0, complete + sizeof(RecordHeader) + 10);
  TempLog log(cut);
  const Timeline tl = read_tracer_log(log.path());
  EXPECT_EQ(tl.kernels.size(), 2u);
  ASSERT_TRUE(tl.metadata.count("warning.truncated"));
  EXPECT_NE(tl.metadata.at("warning.truncated").find(std::to_string(complete)), std::string::npos);

  // Cut inside a record header too.
  TempLog log2(b.bytes().substr(0, complete + 3));
  EXPECT_EQ(read_tracer_log(log2.path()).kernels.size(), 2u);
}

TEST(TracerLog, CutAtARecordBoundaryWarnsOfTheMissingTrailer) {
  LogBuilder b(1);
  b.string(1, "_Z1kv");
  b.add(RecordType::kKernel, kernel(1, 10, 20, 1));
  b.add(RecordType::kNvtxPush, NvtxPushRecord{15, 3, 1, 0, 0, 0});  // never popped: the process died
  TempLog log(b.bytes());
  const Timeline tl = read_tracer_log(log.path());
  EXPECT_EQ(tl.kernels.size(), 1u);
  EXPECT_FALSE(tl.metadata.count("warning.truncated"));
  EXPECT_TRUE(tl.metadata.count("warning.no_trailer"));
  EXPECT_TRUE(tl.metadata.count("warning.unclosed_ranges"));
  ASSERT_EQ(tl.ranges.size(), 1u);
  EXPECT_EQ(tl.ranges.end_ns[0], 20);  // closed at the last timestamp of the log
}

TEST(TracerLog, RejectsBadMagicNewerMajorAndCorruptRecords) {
  std::string bytes = LogBuilder(1).bytes();
  bytes[0] = 'X';
  TempLog bad_magic(bytes);
  try {
    read_tracer_log(bad_magic.path());
    FAIL() << "bad magic accepted";
  } catch (const InputError& e) {
    EXPECT_TRUE(e.position().known);
    EXPECT_EQ(e.position().byte_offset, 0u);
    EXPECT_NE(std::string(e.what()).find("magic"), std::string::npos);
  }

  std::string newer = LogBuilder(1).bytes();
  const std::uint16_t major = kFormatMajor + 1;
  std::memcpy(newer.data() + 8, &major, sizeof major);
  TempLog newer_log(newer);
  EXPECT_THROW(read_tracer_log(newer_log.path()), InputError);

  // A kernel record whose payload is shorter than a kernel: corrupt, reported at its offset.
  LogBuilder b(1);
  b.string(1, "x");
  const std::size_t at = b.bytes().size();
  b.raw(static_cast<std::uint16_t>(RecordType::kKernel), std::string(12, '\0'));
  TempLog corrupt(b.bytes());
  try {
    read_tracer_log(corrupt.path());
    FAIL() << "short kernel record accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.position().byte_offset, at);
  }

  TempLog header_only(LogBuilder(1).bytes().substr(0, 20));
  EXPECT_THROW(read_tracer_log(header_only.path()), InputError);
  EXPECT_THROW(read_tracer_log("/nonexistent/opprof.bin"), InputError);
}

// A log is decoded in parts on several threads, each into the slots its records take: split anywhere, every
// real log of the fixtures reads as in one part (tests/fixtures: eager, compiled, CUDA graphs, training, ranks).
TEST(TracerLog, EveryFixtureLogReadsTheSameInParts) {
  std::vector<std::string> logs;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(OPPROF_FIXTURES_DIR))
    if (entry.is_regular_file() && entry.path().extension() == ".opprof") logs.push_back(entry.path().string());
  std::sort(logs.begin(), logs.end());
  ASSERT_GE(logs.size(), 20u);
  detail::TracerLogReadOptions one_part;
  one_part.threads = 1;
  for (const std::string& path : logs) {
    const Timeline whole = detail::read_tracer_log(path, one_part);
    for (unsigned threads : {2u, 5u, 16u}) {
      SCOPED_TRACE(path + ", " + std::to_string(threads) + " parts");
      detail::TracerLogReadOptions parts;
      parts.threads = threads;
      parts.min_part_bytes = 1;
      test_support::expect_same_timeline(whole, detail::read_tracer_log(path, parts));
    }
  }
}

// Errors and truncation are found as by one pass: the first problem in the file wins, wherever the parts
// are cut and whichever thread meets it.
TEST(TracerLog, TheFirstProblemInTheFileIsReportedWhateverTheParts) {
  auto kernels = [](LogBuilder& b, std::uint32_t from, std::uint32_t n) {
    for (std::uint32_t i = from; i < from + n; ++i) b.add(RecordType::kKernel, kernel(1, 10 * i, 10 * i + 5, i));
  };
  auto read_in = [](const TempLog& log, unsigned threads) {
    detail::TracerLogReadOptions o;
    o.threads = threads;
    o.min_part_bytes = 1;
    return detail::read_tracer_log(log.path(), o);
  };
  auto error_offset = [&](const TempLog& log, unsigned threads) -> std::uint64_t {
    try {
      read_in(log, threads);
    } catch (const InputError& e) {
      return e.position().byte_offset;
    }
    ADD_FAILURE() << "no error with " << threads << " threads";
    return 0;
  };

  // Two short kernel records, in the second and the last quarter, then a string id no log this size holds.
  LogBuilder b(1);
  b.string(1, "_Z1kv");
  kernels(b, 1, 40);
  const std::size_t first = b.bytes().size();
  b.raw(static_cast<std::uint16_t>(RecordType::kKernel), std::string(12, '\0'));
  kernels(b, 41, 80);
  b.raw(static_cast<std::uint16_t>(RecordType::kKernel), std::string(20, '\0'));
  kernels(b, 121, 10);
  b.string(1u << 30, "too far");
  const TempLog two_short(b.bytes());
  for (unsigned threads : {1u, 2u, 3u, 8u}) EXPECT_EQ(error_offset(two_short, threads), first) << threads;

  // A record in order (a string) that does not decode comes before a short kernel after it.
  LogBuilder c(1);
  c.string(1, "_Z1kv");
  kernels(c, 1, 40);
  const std::size_t bad_string = c.bytes().size();
  c.string(1u << 30, "too far");
  kernels(c, 41, 40);
  c.raw(static_cast<std::uint16_t>(RecordType::kKernel), std::string(12, '\0'));
  const TempLog string_first(c.bytes());
  for (unsigned threads : {1u, 2u, 5u}) EXPECT_EQ(error_offset(string_first, threads), bad_string) << threads;

  // A log cut inside its last record: every complete record, and the warning, from any number of parts.
  LogBuilder d(1);
  d.string(1, "_Z1kv");
  kernels(d, 1, 60);
  const std::size_t complete = d.bytes().size();
  kernels(d, 61, 1);
  const TempLog cut(d.bytes().substr(0, complete + 30));
  for (unsigned threads : {1u, 4u}) {
    const Timeline tl = read_in(cut, threads);
    EXPECT_EQ(tl.kernels.size(), 60u) << threads;
    ASSERT_TRUE(tl.metadata.count("warning.truncated")) << threads;
    EXPECT_NE(tl.metadata.at("warning.truncated").find(std::to_string(complete)), std::string::npos);
  }
}

// A string id is an index into the reader's table: one no log of its size can hold is corruption, not a
// table of 2^32 entries (0xFFFFFFFF used to wrap id + 1 to 0 and write out of bounds; 0x20000000 asked for GBs).
TEST(TracerLog, RejectsStringIdsTheLogCannotHold) {
  for (const std::uint32_t id : {0xFFFFFFFFu, 0x80000000u, 0x7FFFFFFFu, 0x40000000u, 0x20000000u, 1000u}) {
    LogBuilder b(1);
    b.string(1, "_Z1kv");
    const std::size_t at = b.bytes().size();
    b.string(id, "x");
    b.add(RecordType::kKernel, kernel(1, 10, 20, 1));
    TempLog log(b.bytes());
    try {
      read_tracer_log(log.path());
      FAIL() << "string id " << id << " accepted in a log of " << b.bytes().size() << " bytes";
    } catch (const InputError& e) {
      EXPECT_TRUE(e.position().known);
      EXPECT_EQ(e.position().byte_offset, at) << id;
      EXPECT_NE(std::string(e.what()).find("id " + std::to_string(id)), std::string::npos) << e.what();
    }
  }
  // Dense ids, as the tracer writes them, are read.
  LogBuilder b(1);
  b.string(1, "_Z1kv");
  b.string(2, "_Z1jv");
  b.add(RecordType::kKernel, kernel(2, 10, 20, 1));
  TempLog log(b.bytes());
  const Timeline tl = read_tracer_log(log.path());
  ASSERT_EQ(tl.kernels.size(), 1u);
  EXPECT_EQ(tl.str(tl.kernels.mangled[0]), "_Z1jv");
}

// The decoder itself, as opprof_trace_dump sees it: typed records in order, their offsets, a cut tail.
TEST(TracerLogDecoder, HandsOutTypedRecordsAndStopsBeforeACutOne) {
  LogBuilder b(9);
  b.string(1, "_Z1kv");
  const std::size_t kernel_at = b.bytes().size();
  b.add(RecordType::kKernel, kernel(1, 10, 20, 4));
  GraphNodeRecord g{};
  g.node_id = 77;
  g.depth = 2;
  const StackEntry stack[2] = {{1, 0}, {1, 0}};
  b.add(RecordType::kGraphNode, g, stack, sizeof stack);
  b.add(RecordType::kWindowStop, WindowRecord{30, 3, 5, 0});
  b.raw(999, "abc");
  const std::size_t complete = b.bytes().size();
  b.add(RecordType::kKernel, kernel(1, 50, 60, 5));
  const std::string cut = b.bytes().substr(0, b.bytes().size() - 4);

  RecordDecoder decoder(cut);
  EXPECT_EQ(decoder.header().pid, 9u);
  std::vector<Record> records;
  Record r;
  while (decoder.next(&r)) records.push_back(r);
  ASSERT_EQ(records.size(), 5u);
  ASSERT_TRUE(std::holds_alternative<StringEntry>(records[0].value));
  EXPECT_EQ(std::get<StringEntry>(records[0].value).text, "_Z1kv");
  ASSERT_TRUE(std::holds_alternative<KernelRecord>(records[1].value));
  EXPECT_EQ(records[1].offset, kernel_at);
  EXPECT_EQ(std::get<KernelRecord>(records[1].value).correlation_id, 4u);
  ASSERT_TRUE(std::holds_alternative<GraphNode>(records[2].value));
  EXPECT_EQ(std::get<GraphNode>(records[2].value).fixed.node_id, 77u);
  EXPECT_EQ(std::get<GraphNode>(records[2].value).stack.size(), 2u);
  EXPECT_EQ(records[3].type, static_cast<std::uint16_t>(RecordType::kWindowStop));
  ASSERT_TRUE(std::holds_alternative<WindowStop>(records[3].value));
  EXPECT_EQ(std::get<WindowStop>(records[3].value).fixed.correlation_id, 5u);
  EXPECT_STREQ(record_type_name(records[3].type), "window_stop");
  EXPECT_TRUE(std::holds_alternative<UnknownRecord>(records[4].value));
  EXPECT_STREQ(record_type_name(records[4].type), "unknown");
  EXPECT_TRUE(decoder.truncated());
  EXPECT_EQ(decoder.truncated_at(), complete);

  // A graph node claiming more stack than its payload carries is corrupt, at its offset.
  LogBuilder deep(1);
  const std::size_t deep_at = deep.bytes().size();
  g.depth = 3;
  deep.add(RecordType::kGraphNode, g, stack, sizeof stack);
  RecordDecoder corrupt(deep.bytes());
  try {
    corrupt.next(&r);
    FAIL() << "stack deeper than its payload accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.offset(), deep_at);
    EXPECT_NE(std::string(e.what()).find("stack depth 3"), std::string::npos) << e.what();
  }
}

TEST(TracerLog, SkipsUnknownRecordTypesAndLongerPayloads) {
  LogBuilder b(1);
  b.string(1, "_Z1kv");
  b.raw(999, "a record type from a newer tracer");
  // A newer minor version appended a field to the kernel record: the known prefix is still read.
  std::string longer(sizeof(KernelRecord) + 8, '\0');
  const KernelRecord k = kernel(1, 10, 20, 5);
  std::memcpy(longer.data(), &k, sizeof k);
  b.raw(static_cast<std::uint16_t>(RecordType::kKernel), longer);
  b.add(RecordType::kKernel, kernel(1, 30, 40, 6));
  TempLog log(b.bytes());
  const Timeline tl = read_tracer_log(log.path());
  ASSERT_EQ(tl.kernels.size(), 2u);
  EXPECT_EQ(tl.kernels.correlation[0], 5u);
  EXPECT_EQ(tl.kernels.correlation[1], 6u);
  EXPECT_EQ(tl.metadata.at("tracer.unknown_records_skipped"), "1");
}

TEST(TracerLog, GraphReplayedKernelsGetStreamRangesFromTheirCaptureStack) {
  LogBuilder b(9);
  b.string(1, "_Z5scalePffi").string(2, "graph_capture").string(3, "nn.Module: block").string(4, "_Z4add1Pf");
  // Node 100 captured under graph_capture > nn.Module: block; instantiation cloned it into node 200.
  const StackEntry stack[] = {{2, 0}, {3, 0}};
  GraphNodeRecord g{100, 50, 3, 1, 1, 2, 0};
  b.add(RecordType::kGraphNode, g, stack, sizeof stack);
  b.add(RecordType::kGraphNodeClone, GraphNodeCloneRecord{200, 100, 2, 1});
  b.add(RecordType::kGraphExec, GraphExecRecord{5, 2});
  KernelRecord replayed = kernel(1, 1000, 1100, 40, 13);
  replayed.graph_id = 2;
  replayed.graph_node_id = 200;
  replayed.device_id = 1;
  b.add(RecordType::kKernel, replayed);
  KernelRecord unknown_node = kernel(4, 1200, 1300, 41, 13);
  unknown_node.graph_id = 2;
  unknown_node.graph_node_id = 999;
  b.add(RecordType::kKernel, unknown_node);
  b.add(RecordType::kKernel, kernel(4, 1400, 1500, 42, 13));  // not launched by a graph

  TempLog log(b.bytes());
  const Timeline tl = read_tracer_log(log.path());
  ASSERT_EQ(tl.kernels.size(), 3u);
  EXPECT_EQ(tl.kernels.graph_node[0], 200u);
  EXPECT_EQ(tl.kernels.graph_id[0], 2u);

  const std::size_t outer = find_range(tl, "graph_capture", RangeScope::kStream);
  const std::size_t inner = find_range(tl, "block", RangeScope::kStream);
  ASSERT_NE(outer, kNoIndex);
  ASSERT_NE(inner, kNoIndex);
  EXPECT_EQ(tl.ranges.kind[outer], RangeKind::kAnnotation);
  EXPECT_EQ(tl.ranges.kind[inner], RangeKind::kModule);
  for (std::size_t r : {outer, inner}) {
    EXPECT_EQ(tl.ranges.start_ns[r], 1000);
    EXPECT_EQ(tl.ranges.end_ns[r], 1100);
    EXPECT_EQ(tl.ranges.owner(r), 13u);
    EXPECT_EQ(tl.ranges.device(r), 1u);
    EXPECT_EQ(tl.ranges.pid(r), 9u);
  }
  EXPECT_EQ(tl.ranges.depth[outer], 0);
  EXPECT_EQ(tl.ranges.depth[inner], 1);
  EXPECT_EQ(tl.ranges.size(), 2u);  // nothing for the unknown node nor the plain kernel
  EXPECT_EQ(tl.metadata.at("graph.activities"), "2");
  EXPECT_EQ(tl.metadata.at("graph.activities_with_capture_stack"), "1");
}

// The H200 run: instantiation reported a GRAPHNODE_CREATED of its own (empty stack, made outside any
// range) for the node it then reported as a clone. The empty stack must not hide the captured one.
TEST(TracerLog, EmptyStackOfAnInstantiatedNodeDoesNotHideTheCapturedOne) {
  LogBuilder b(9);
  b.string(1, "_Z5scalePffi").string(2, "graph_capture").string(3, "captured_block");
  const StackEntry stack[] = {{2, 0}, {3, 0}};
  b.add(RecordType::kGraphNode, GraphNodeRecord{100, 50, 3, 1, 1, 2, 0}, stack, sizeof stack);
  b.add(RecordType::kGraphNode, GraphNodeRecord{200, 60, 3, 2, 1, 0, 0});  // the exec's node, no ranges open
  b.add(RecordType::kGraphNodeClone, GraphNodeCloneRecord{200, 100, 2, 1});
  // The same id reported again without a stack must not erase the first record's.
  b.add(RecordType::kGraphNode, GraphNodeRecord{100, 70, 3, 1, 1, 0, 0});
  KernelRecord replayed = kernel(1, 1000, 1100, 40, 13);
  replayed.graph_id = 2;
  replayed.graph_node_id = 200;
  b.add(RecordType::kKernel, replayed);
  KernelRecord original = kernel(1, 1200, 1300, 41, 13);
  original.graph_id = 1;
  original.graph_node_id = 100;
  b.add(RecordType::kKernel, original);
  TempLog log(b.bytes());
  const Timeline tl = read_tracer_log(log.path());
  EXPECT_EQ(tl.metadata.at("graph.activities"), "2");
  EXPECT_EQ(tl.metadata.at("graph.activities_with_capture_stack"), "2");
  EXPECT_EQ(tl.metadata.at("graph.resolved_by_node_id"), "2");
  EXPECT_EQ(tl.ranges.size(), 4u);
}

CaptureLaunchRecord capture_launch(std::uint64_t node, std::uint64_t capture, std::uint64_t ts, std::uint32_t graph,
                                   std::uint32_t name_sid, std::uint32_t depth) {
  CaptureLaunchRecord c{};
  c.node_id = node;
  c.capture_id = capture;
  c.ts_ns = ts;
  c.tid = 3;
  c.correlation_id = static_cast<std::uint32_t>(ts);
  c.graph_id = graph;
  c.name_sid = name_sid;
  c.cbid = 211;
  c.domain = kApiDomainRuntime;
  c.depth = depth;
  return c;
}

TEST(TracerLog, CaptureLaunchRecordsGiveNodeStacksWithoutResourceCallbacks) {
  LogBuilder b(9);
  b.string(1, "_Z5scalePffi").string(2, "graph_capture").string(3, "nn.Module: block");
  const StackEntry stack[] = {{2, 0}, {3, 0}};
  b.add(RecordType::kCaptureLaunch, capture_launch(100, 7, 50, 1, 1, 2), stack, sizeof stack);
  b.add(RecordType::kGraphNodeClone, GraphNodeCloneRecord{200, 100, 2, 1});
  KernelRecord replayed = kernel(1, 1000, 1100, 40, 13);
  replayed.graph_id = 2;
  replayed.graph_node_id = 200;
  b.add(RecordType::kKernel, replayed);
  TempLog log(b.bytes());
  const Timeline tl = read_tracer_log(log.path());
  EXPECT_EQ(tl.metadata.at("graph.activities_with_capture_stack"), "1");
  EXPECT_EQ(tl.metadata.at("graph.resolved_by_node_id"), "1");
  EXPECT_EQ(tl.metadata.at("tracer.format_version"), "1.2");
  EXPECT_NE(find_range(tl, "block", RangeScope::kStream), kNoIndex);
}

// Every id route fails (kernel node ids unknown to the log): the k-th replayed kernel of a name takes the
// stack of the capture's k-th launch of that name, per graph launch.
TEST(TracerLog, ReplayedKernelsFallBackToCaptureLaunchOrder) {
  LogBuilder b(9);
  b.string(1, "_Z5scalePffi").string(2, "_Z4add1Pf").string(3, "first_scale").string(4, "the_add")
      .string(5, "second_scale").string(6, "other_capture");
  const StackEntry s1[] = {{3, 0}};
  const StackEntry s2[] = {{4, 0}};
  const StackEntry s3[] = {{5, 0}};
  const StackEntry s4[] = {{6, 0}};
  // Capture 7 (graph 1): scale, add, scale. Node ids are 0: the driver could not be asked.
  b.add(RecordType::kCaptureLaunch, capture_launch(0, 7, 50, 1, 1, 1), s1, sizeof s1);
  b.add(RecordType::kCaptureLaunch, capture_launch(0, 7, 51, 1, 2, 1), s2, sizeof s2);
  b.add(RecordType::kCaptureLaunch, capture_launch(0, 7, 52, 1, 1, 1), s3, sizeof s3);
  // Another capture with other kernels only: never a match for these replays.
  b.add(RecordType::kCaptureLaunch, capture_launch(0, 8, 60, 5, 2, 1), s4, sizeof s4);
  b.add(RecordType::kGraphExec, GraphExecRecord{9, 1});
  // Two replays of graph 1 under exec ids the capture never saw (graph id 3 → clone of 1).
  b.add(RecordType::kGraphNodeClone, GraphNodeCloneRecord{500, 400, 3, 1});
  std::uint32_t corr = 90;
  for (std::uint64_t t0 : {1000u, 2000u}) {
    // Records arrive out of start order: the reader orders each replay by start time.
    KernelRecord add = kernel(2, t0 + 20, t0 + 30, corr, 13);
    KernelRecord scale_a = kernel(1, t0, t0 + 10, corr, 13);
    KernelRecord scale_b = kernel(1, t0 + 40, t0 + 50, corr, 13);
    for (KernelRecord* r : {&add, &scale_a, &scale_b}) {
      r->graph_id = 3;
      r->graph_node_id = 12345;  // an id in no record
      b.add(RecordType::kKernel, *r);
    }
    ++corr;
  }
  // A replay with no graph id that leads anywhere: chosen by its kernel names.
  KernelRecord lone = kernel(2, 3000, 3010, 99, 13);
  lone.graph_id = 77;
  lone.graph_node_id = 54321;
  b.add(RecordType::kKernel, lone);

  TempLog log(b.bytes());
  const Timeline tl = read_tracer_log(log.path());
  EXPECT_EQ(tl.metadata.at("graph.activities"), "7");
  EXPECT_EQ(tl.metadata.at("graph.activities_with_capture_stack"), "7");
  EXPECT_EQ(tl.metadata.at("graph.resolved_by_launch_order"), "7");
  EXPECT_EQ(tl.metadata.at("graph.resolved_by_node_id"), "0");
  auto range_over = [&](std::int64_t start) -> std::string {
    for (std::size_t i = 0; i < tl.ranges.size(); ++i)
      if (tl.ranges.scope(i) == RangeScope::kStream && tl.ranges.start_ns[i] == start)
        return std::string(tl.str(tl.ranges.text[i]));
    return "";
  };
  for (std::int64_t t0 : {1000, 2000}) {
    EXPECT_EQ(range_over(t0), "first_scale");
    EXPECT_EQ(range_over(t0 + 20), "the_add");
    EXPECT_EQ(range_over(t0 + 40), "second_scale");
  }
  // Both captures have an add; the lone replay comes after both began, so the latest one is taken.
  EXPECT_EQ(range_over(3000), "other_capture");
}

TEST(TracerLog, WindowOnlyLogsIgnorePopsOfRangesPushedBeforeTheWindow) {
  LogBuilder b(1, kFlagWindowOnly);
  b.string(1, "inside");
  b.add(RecordType::kWindowStart, WindowRecord{100, 1, 1, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{110, 1, 1, 0, 0, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{120, 1, 0, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{130, 1, 0, 0});  // its push came before the window
  b.add(RecordType::kWindowStop, WindowRecord{140, 1, 9, 0});
  b.add(RecordType::kTrailer, TrailerRecord{150, 0, 5, 1});
  TempLog log(b.bytes());
  const Timeline tl = read_tracer_log(log.path());
  const std::size_t r = find_range(tl, "inside");
  ASSERT_NE(r, kNoIndex);
  EXPECT_EQ(tl.ranges.end_ns[r], 120);
  EXPECT_EQ(tl.metadata.at("nvtx.unmatched_ends"), "1");
  EXPECT_EQ(tl.metadata.at("tracer.window_only"), "1");
  EXPECT_EQ(tl.metadata.at("window.count"), "1");
}

TEST(TracerLog, ClassifiesEmitNvtxAndModuleTexts) {
  std::string_view kept;
  EXPECT_EQ(classify_nvtx_range("aten::addmm, seq = 3, op_id = 17", &kept), RangeKind::kOperator);
  EXPECT_EQ(kept, "aten::addmm");
  EXPECT_EQ(classify_nvtx_range("aten::relu, op_id = 18", &kept), RangeKind::kOperator);
  EXPECT_EQ(kept, "aten::relu");
  EXPECT_EQ(classify_nvtx_range("aten::t, seq = 4, op_id = 9, sizes = [[512, 256]], input_op_ids = [(8, 0)]", &kept),
            RangeKind::kOperator);
  EXPECT_EQ(kept, "aten::t");
  EXPECT_EQ(classify_nvtx_range("AddmmBackward0, seq = 3, op_id = 40", &kept), RangeKind::kOperator);
  EXPECT_EQ(kept, "AddmmBackward0");
  EXPECT_EQ(classify_nvtx_range("aten::empty", &kept), RangeKind::kOperator);
  EXPECT_EQ(kept, "aten::empty");
  EXPECT_EQ(classify_nvtx_range("nn.Module: h.3.attn.c_attn", &kept), RangeKind::kModule);
  EXPECT_EQ(kept, "h.3.attn.c_attn");
  EXPECT_EQ(classify_nvtx_range("## Call CompiledFxGraph fabc123 ##", &kept), RangeKind::kCompiledRegion);
  EXPECT_EQ(kept, "## Call CompiledFxGraph fabc123 ##");
  EXPECT_EQ(classify_nvtx_range("forward", &kept), RangeKind::kAnnotation);
  EXPECT_EQ(classify_nvtx_range("my step :: 3", &kept), RangeKind::kAnnotation);
  EXPECT_EQ(kept, "my step :: 3");
}


TEST(TracerLog, ClassifiesTorchObserverRangesByCategory) {
  std::string_view kept;
  // Operator scopes (function = 1, backward_function = 2, ...) are operators whatever the text.
  EXPECT_EQ(classify_nvtx_range("aten::mm", kTorchObserverDomain, 1, &kept), RangeKind::kOperator);
  EXPECT_EQ(kept, "aten::mm");
  EXPECT_EQ(classify_nvtx_range("autograd::engine::evaluate_function: MmBackward0", kTorchObserverDomain, 2, &kept),
            RangeKind::kOperator);
  EXPECT_EQ(kept, "autograd::engine::evaluate_function: MmBackward0");
  // record_function ranges (user scope): modules and compiled regions by text, everything else annotation,
  // also texts shaped like an operator name.
  EXPECT_EQ(classify_nvtx_range("## Call CompiledFxGraph fabc ##", kTorchObserverDomain, kTorchUserScopeCategory, &kept),
            RangeKind::kCompiledRegion);
  EXPECT_EQ(classify_nvtx_range("nn.Module: h.0", kTorchObserverDomain, kTorchUserScopeCategory, &kept),
            RangeKind::kModule);
  EXPECT_EQ(kept, "h.0");
  EXPECT_EQ(classify_nvtx_range("mylib::step", kTorchObserverDomain, kTorchUserScopeCategory, &kept),
            RangeKind::kAnnotation);
  EXPECT_EQ(classify_nvtx_range("CUDAGraphNode.record", kTorchObserverDomain, kTorchUserScopeCategory, &kept),
            RangeKind::kAnnotation);
  // Dynamo's region is a function-scope RecordFunction: still a region.
  EXPECT_EQ(classify_nvtx_range("Torch-Compiled Region: 0/0", kTorchObserverDomain, 1, &kept),
            RangeKind::kCompiledRegion);
  // Another domain, or no category known: the text rules.
  EXPECT_EQ(classify_nvtx_range("autograd::engine::evaluate_function: MmBackward0", "other", 2, &kept),
            RangeKind::kAnnotation);
  EXPECT_EQ(classify_nvtx_range("aten::mm", kTorchObserverDomain, -1, &kept), RangeKind::kOperator);
  EXPECT_EQ(classify_nvtx_range("mylib::step", kTorchObserverDomain, -1, &kept), RangeKind::kOperator);
}

// What libopprof_torch_observer.so writes through the tracer: pushes in the "opprof.torch" domain with
// the RecordFunction scope + 1 as category, interleaved with module ranges of the default domain.
TEST(TracerLog, TorchObserverRangesBecomeOperatorsAndAnnotations) {
  LogBuilder b(4242, 0, 1000, 5000);
  b.string(1, "opprof.torch")
      .string(2, "nn.Module: blocks.0")
      .string(3, "aten::linear")
      .string(4, "aten::addmm")
      .string(5, "my_step")
      .string(6, "autograd::engine::evaluate_function: AddmmBackward0")
      .string(7, "_Z4gemmv")
      .string(8, "cudaLaunchKernel_v7000");
  b.add(RecordType::kApiName, ApiNameRecord{kApiDomainRuntime, 211, 8, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1100, 100, 5, 1, kTorchUserScopeCategory, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1200, 100, 2, 0, 0, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1300, 100, 3, 1, 1, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1310, 100, 4, 1, 1, 0});
  b.add(RecordType::kApiCall, ApiCallRecord{1320, 1330, 100, 4242, 11, 211, kApiDomainRuntime, 0, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1340, 100, 1, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1350, 100, 1, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1400, 100, 0, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1500, 100, 6, 1, 2, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1600, 100, 1, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1700, 100, 1, 0});
  b.add(RecordType::kKernel, kernel(7, 1400, 1450, 11));
  b.add(RecordType::kTrailer, TrailerRecord{2000, 6000, 20, 8});
  TempLog log(b.bytes());
  const Timeline tl = read_tracer_log(log.path());

  const std::size_t step = find_range(tl, "my_step");
  const std::size_t module = find_range(tl, "blocks.0");
  const std::size_t linear = find_range(tl, "aten::linear");
  const std::size_t addmm = find_range(tl, "aten::addmm");
  const std::size_t backward = find_range(tl, "autograd::engine::evaluate_function: AddmmBackward0");
  ASSERT_NE(step, kNoIndex);
  ASSERT_NE(module, kNoIndex);
  ASSERT_NE(linear, kNoIndex);
  ASSERT_NE(addmm, kNoIndex);
  ASSERT_NE(backward, kNoIndex);
  EXPECT_EQ(tl.ranges.kind[step], RangeKind::kAnnotation);
  EXPECT_EQ(tl.ranges.kind[module], RangeKind::kModule);
  EXPECT_EQ(tl.ranges.kind[linear], RangeKind::kOperator);
  EXPECT_EQ(tl.ranges.kind[addmm], RangeKind::kOperator);
  EXPECT_EQ(tl.ranges.kind[backward], RangeKind::kOperator);
  EXPECT_EQ(tl.str(tl.ranges.domain[addmm]), "opprof.torch");
  // Each domain pops its own innermost range; depth counts every open range of the thread.
  EXPECT_EQ(tl.ranges.depth[addmm], 3);
  EXPECT_EQ(tl.ranges.end_ns[addmm], 1340);
  EXPECT_EQ(tl.ranges.end_ns[linear], 1350);
  EXPECT_EQ(tl.ranges.end_ns[module], 1400);
  EXPECT_EQ(tl.ranges.end_ns[step], 1700);
}

// The tracer writes a deferred (observer) range's push record at the first launch inside it, after records
// of ranges opened later: the reader nests by time, not by file order.
TEST(TracerLog, DeferredPushRecordsWrittenLateNestByTheirStartTime) {
  LogBuilder b(4242, 0, 1000, 5000);
  b.string(1, "opprof.torch").string(2, "nn.Module: blocks.0").string(3, "aten::linear").string(4, "aten::addmm");
  // aten::linear (1100) opened first, then the module range (1150, written at once), then aten::addmm
  // (1200); the launch at 1300 writes the two deferred pushes.
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1150, 100, 2, 0, 0, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1100, 100, 3, 1, 1, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1200, 100, 4, 1, 1, 0});
  b.add(RecordType::kApiCall, ApiCallRecord{1300, 1310, 100, 4242, 11, 211, kApiDomainRuntime, 0, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1320, 100, 1, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1330, 100, 0, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1340, 100, 1, 0});
  b.add(RecordType::kKernel, kernel(4, 1400, 1450, 11));
  b.add(RecordType::kTrailer, TrailerRecord{2000, 6000, 9, 4});
  TempLog log(b.bytes());
  const Timeline tl = read_tracer_log(log.path());

  const std::size_t linear = find_range(tl, "aten::linear");
  const std::size_t module = find_range(tl, "blocks.0");
  const std::size_t addmm = find_range(tl, "aten::addmm");
  ASSERT_NE(linear, kNoIndex);
  ASSERT_NE(module, kNoIndex);
  ASSERT_NE(addmm, kNoIndex);
  EXPECT_EQ(tl.ranges.depth[linear], 0);
  EXPECT_EQ(tl.ranges.depth[module], 1);
  EXPECT_EQ(tl.ranges.depth[addmm], 2);
  EXPECT_EQ(tl.ranges.start_ns[linear], 1100);
  EXPECT_EQ(tl.ranges.end_ns[addmm], 1320);
  EXPECT_EQ(tl.ranges.end_ns[module], 1330);
  EXPECT_EQ(tl.ranges.end_ns[linear], 1340);
}

// Threads' records interleave in the log (each thread's buffer is flushed when it fills): every thread's
// pushes and pops pair among themselves, whichever thread the file names first.
TEST(TracerLog, InterleavedThreadsPairTheirOwnPushesAndPops) {
  LogBuilder b(4242, 0, 1000, 5000);
  b.string(1, "outer200").string(2, "inner200").string(3, "outer100").string(4, "inner100");
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1100, 200, 1, 0, 0, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1000, 100, 3, 0, 0, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1200, 200, 2, 0, 0, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1200, 100, 4, 0, 0, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1250, 200, 0, 0});  // inner200
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1300, 100, 0, 0});  // inner100
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1400, 100, 0, 0});  // outer100
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1500, 200, 0, 0});  // outer200
  b.add(RecordType::kApiCall, ApiCallRecord{1210, 1220, 100, 4242, 11, 211, kApiDomainRuntime, 0, 0});
  b.add(RecordType::kKernel, kernel(4, 1600, 1650, 11));
  b.add(RecordType::kTrailer, TrailerRecord{2000, 6000, 11, 4});
  TempLog log(b.bytes());
  const Timeline tl = read_tracer_log(log.path());

  struct Expected {
    const char* text;
    std::uint64_t tid;
    std::int64_t start, end;
    std::int32_t depth;
  };
  for (const Expected& e : {Expected{"outer200", 200, 1100, 1500, 0}, Expected{"inner200", 200, 1200, 1250, 1},
                            Expected{"outer100", 100, 1000, 1400, 0}, Expected{"inner100", 100, 1200, 1300, 1}}) {
    const std::size_t i = find_range(tl, e.text);
    ASSERT_NE(i, kNoIndex) << e.text;
    EXPECT_EQ(tl.ranges.owner(i), e.tid) << e.text;
    EXPECT_EQ(tl.ranges.start_ns[i], e.start) << e.text;
    EXPECT_EQ(tl.ranges.end_ns[i], e.end) << e.text;
    EXPECT_EQ(tl.ranges.depth[i], e.depth) << e.text;
  }
}

// The observer's payload carries autograd's link: the reader gives the ranges their sequence numbers and
// forward threads, and attribution links the backward kernel to the forward operator's module.
TEST(TracerLog, TorchObserverPayloadsLinkBackwardNodesToTheirForwardOperators) {
  EXPECT_EQ(autograd_link_sequence_nr(encode_autograd_link(48, 1)), 48);
  EXPECT_EQ(autograd_link_forward_thread(encode_autograd_link(48, 1)), 1u);
  EXPECT_EQ(encode_autograd_link(-1, 0), 0u) << "no sequence number, no payload";
  EXPECT_NE(encode_autograd_link(0, 0), 0u);
  EXPECT_EQ(autograd_link_forward_thread(encode_autograd_link(7, 300)), 255u);
  EXPECT_EQ(encode_autograd_link(5, 0), encode_autograd_link(5 + kAutogradLinkSeqModulus, 0));

  LogBuilder b(4242, 0, 1000, 5000);
  b.string(1, "opprof.torch")
      .string(2, "nn.Module: blocks.0")
      .string(3, "aten::addmm")
      .string(4, "autograd::engine::evaluate_function: AddmmBackward0")
      .string(5, "aten::mm")
      .string(6, "gemm")
      .string(7, "cudaLaunchKernel_v7000")
      .string(8, "AddmmBackward0");
  b.add(RecordType::kApiName, ApiNameRecord{kApiDomainRuntime, 211, 7, 0});
  // Forward on thread 100: the module range and aten::addmm (sequence number 48).
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1100, 100, 2, 0, 0, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1200, 100, 3, 1, 1, encode_autograd_link(48, 0)});
  b.add(RecordType::kApiCall, ApiCallRecord{1210, 1220, 100, 4242, 11, 211, kApiDomainRuntime, 0, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1300, 100, 1, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1400, 100, 0, 0});
  // Backward on autograd's thread 200, as torch records it: the engine's evaluate_function range (no
  // number), the node's own range (48, forward thread 1) and the aten::mm it calls.
  b.add(RecordType::kNvtxPush, NvtxPushRecord{2000, 200, 4, 1, 2, 0});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{2005, 200, 8, 1, 2, encode_autograd_link(48, 1)});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{2010, 200, 5, 1, 1, 0});
  b.add(RecordType::kApiCall, ApiCallRecord{2020, 2030, 200, 4242, 12, 211, kApiDomainRuntime, 0, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{2100, 200, 1, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{2150, 200, 1, 0});
  b.add(RecordType::kNvtxPop, NvtxPopRecord{2200, 200, 1, 0});
  b.add(RecordType::kKernel, kernel(6, 1500, 1600, 11));
  b.add(RecordType::kKernel, kernel(6, 2500, 2600, 12));
  b.add(RecordType::kTrailer, TrailerRecord{3000, 6000, 23, 8});
  TempLog log(b.bytes());
  Timeline tl = read_tracer_log(log.path());

  const std::size_t addmm = find_range(tl, "aten::addmm");
  const std::size_t engine = find_range(tl, "autograd::engine::evaluate_function: AddmmBackward0");
  const std::size_t node = find_range(tl, "AddmmBackward0");
  const std::size_t mm = find_range(tl, "aten::mm");
  ASSERT_NE(addmm, kNoIndex);
  ASSERT_NE(engine, kNoIndex);
  ASSERT_NE(node, kNoIndex);
  ASSERT_NE(mm, kNoIndex);
  EXPECT_EQ(tl.ranges.sequence_nr[engine], kNoSequenceNr);
  EXPECT_EQ(tl.ranges.sequence_nr[addmm], 48);
  EXPECT_EQ(tl.ranges.forward_thread[addmm], 0u);
  EXPECT_EQ(tl.ranges.sequence_nr[node], 48);
  EXPECT_EQ(tl.ranges.forward_thread[node], 1u);
  EXPECT_EQ(tl.ranges.sequence_nr[mm], kNoSequenceNr);

  AttributionTable a = attribute_timeline(tl, nullptr, AttributionOptions{});
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a.phase[0], Phase::kForward);
  EXPECT_EQ(tl.str(a.module[0]), "blocks.0");
  EXPECT_EQ(a.phase[1], Phase::kBackward);
  EXPECT_EQ(tl.str(a.op[1]), "aten::mm");
  EXPECT_EQ(tl.str(a.forward_op[1]), "aten::addmm");
  EXPECT_EQ(tl.str(a.module[1]), "blocks.0");
  EXPECT_EQ(a.module_source[1], ModuleSource::kForwardOp);
}

// The observer's communication mark describes the gloo:* range around it; the capture's process-group mark
// names this process's group. A mark outside any observer range, and one whose JSON is broken, are counted.
TEST(TracerLog, CommunicationMarksDescribeTheirRangeAndTheProcessGroups) {
  LogBuilder b(4242, 0, 1000, 5000);
  b.string(1, "opprof.torch")
      .string(2, "gloo:all_reduce")
      .string(3, R"(opprof.comm {"elements": 4160, "bytes": 16640, "dtype": "Float"})")
      .string(4, R"(opprof.process_group {"backend_config": "cuda:gloo", "pg_desc": "default_pg", "pg_name": "0", "pg_size": 2, "ranks": [0, 1]})")
      .string(5, R"(opprof.comm {"elements": 7)")
      .string(6, "aten::add");
  b.add(RecordType::kNvtxMark, NvtxMarkRecord{{1050, 100}, {4, 0}});
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1100, 200, 2, 1, kTorchUserScopeCategory, 0});
  b.add(RecordType::kNvtxMark, NvtxMarkRecord{{1101, 200}, {3, 1}});
  b.add(RecordType::kNvtxMark, NvtxMarkRecord{{1102, 200}, {3, 1}});  // a second one: the first stands
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1300, 200, 1, 0});
  b.add(RecordType::kNvtxMark, NvtxMarkRecord{{1400, 200}, {3, 1}});  // outside any range
  b.add(RecordType::kNvtxPush, NvtxPushRecord{1500, 200, 6, 1, 1, 0});
  b.add(RecordType::kNvtxMark, NvtxMarkRecord{{1501, 200}, {5, 1}});  // broken JSON
  b.add(RecordType::kNvtxPop, NvtxPopRecord{1600, 200, 1, 0});
  b.add(RecordType::kTrailer, TrailerRecord{2000, 6000, 20, 8});
  TempLog log(b.bytes());
  const Timeline tl = read_tracer_log(log.path());

  const std::size_t gloo = find_range(tl, "gloo:all_reduce");
  ASSERT_NE(gloo, kNoIndex);
  ASSERT_EQ(tl.communication_args.size(), 1u);
  const CommunicationArgs& c = tl.communication_args[0];
  EXPECT_EQ(c.range, gloo);
  EXPECT_EQ(c.elements, 4160);
  EXPECT_EQ(c.bytes, 16640);
  EXPECT_EQ(tl.str(c.dtype), "Float");
  EXPECT_EQ(c.process_group, kNoString);
  EXPECT_EQ(c.collective, kNoString);  // a gloo:* range names its collective itself
  ASSERT_EQ(tl.process_groups.size(), 1u);
  EXPECT_EQ(tl.process_groups[0].pid, 4242u);
  EXPECT_EQ(tl.str(tl.process_groups[0].name), "0");
  EXPECT_EQ(tl.str(tl.process_groups[0].desc), "default_pg");
  EXPECT_EQ(tl.str(tl.process_groups[0].backend), "cuda:gloo");
  EXPECT_EQ(tl.process_groups[0].size, 2);
  EXPECT_EQ(tl.str(tl.process_groups[0].ranks), "0,1");
  EXPECT_EQ(tl.metadata.at("nvtx.stray_communication_marks"), "2");
  EXPECT_EQ(tl.metadata.at("nvtx.marks"), "5");
}

TEST(CommunicationArgs, MarksParseTheirJsonAndRefuseOthers) {
  auto m = parse_comm_args_mark(R"(opprof.comm {"elements": 10, "bytes": 20, "dtype": "BFloat16", "process_group": "1",)"
                                R"( "process_group_desc": "tp", "group_size": 4, "collective": "allreduce", "new": [1]})");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->elements, 10);
  EXPECT_EQ(m->bytes, 20);
  EXPECT_EQ(m->dtype, "BFloat16");
  EXPECT_EQ(m->process_group, "1");
  EXPECT_EQ(m->process_group_desc, "tp");
  EXPECT_EQ(m->group_size, 4);
  EXPECT_EQ(m->collective, "allreduce");
  EXPECT_FALSE(parse_comm_args_mark(R"(opprof.comm [1, 2])"));
  EXPECT_FALSE(parse_comm_args_mark(R"(opprof.comm {"elements": )"));
  EXPECT_FALSE(parse_comm_args_mark(R"(other {"elements": 1})"));
  // A field of the wrong type, or negative, is left unknown.
  auto wrong = parse_comm_args_mark(R"(opprof.comm {"elements": "many", "bytes": -5})");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->elements, -1);
  EXPECT_EQ(wrong->bytes, -1);
  EXPECT_FALSE(parse_process_group_mark(R"(opprof.process_group {"pg_desc": "no name"})"));
  auto g = parse_process_group_mark(R"(opprof.process_group {"pg_name": "2", "ranks": [0, "x"]})");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->ranks, "");  // not all integers
}

TEST(CommunicationArgs, InputTensorsFromRecordShapes) {
  EXPECT_EQ(element_bytes("float"), 4);
  EXPECT_EQ(element_bytes("Float"), 4);
  EXPECT_EQ(element_bytes("c10::BFloat16"), 2);
  EXPECT_EQ(element_bytes("long int"), 8);
  EXPECT_EQ(element_bytes("Scalar"), 0);
  EXPECT_EQ(element_bytes(""), 0);

  InputTensors t = input_tensors("[[4160]]", R"(["float"])");
  EXPECT_EQ(t.elements, 4160);
  EXPECT_EQ(t.bytes, 16640);
  EXPECT_EQ(t.dtype, "float");
  t = input_tensors("[[2, 3], [], [4]]", R"(["c10::Half", "Scalar", "float"])");
  EXPECT_EQ(t.elements, 10);
  EXPECT_EQ(t.bytes, 6 * 2 + 4 * 4);
  EXPECT_EQ(t.dtype, "mixed");
  t = input_tensors("[[[4160], [10]], [], []]", R"(["TensorList", "", "Scalar"])");
  EXPECT_EQ(t.elements, 4170);
  EXPECT_EQ(t.bytes, -1);
  EXPECT_EQ(t.dtype, "");
  t = input_tensors("[[], []]", R"(["Scalar", ""])");
  EXPECT_EQ(t.elements, -1);
  // Dims that overflow, are negative or are not integers: nothing is claimed.
  EXPECT_EQ(input_tensors("[[4294967296, 4294967296, 4294967296]]", R"(["float"])").elements, -1);
  EXPECT_EQ(input_tensors("[[-1]]", R"(["float"])").elements, -1);
  EXPECT_EQ(input_tensors("[[1.5]]", R"(["float"])").elements, -1);
  EXPECT_EQ(input_tensors("not json", R"(["float"])").elements, -1);
}

}  // namespace
}  // namespace opprof
