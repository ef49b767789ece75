// read_nsys_sqlite on databases built here with the documented `nsys export --type sqlite` schema.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "opprof/ingest/nsys_sqlite.hpp"
#include "opprof/util/error.hpp"

namespace opprof {
namespace {

constexpr std::int64_t kPid = 4242;
constexpr std::int64_t kTid = 4250;
// nsys puts a hardware/VM id above the pid bits: the reader must mask it away.
constexpr std::int64_t kGlobalTid = (std::int64_t{1} << 48) | (kPid << 24) | kTid;
constexpr std::int64_t kGlobalPid = (std::int64_t{1} << 48) | (kPid << 24);

class TempDb {
 public:
  explicit TempDb(const std::string& sql) {
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("opprof_test_nsys_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".sqlite"))
                .string();
    std::filesystem::remove(path_);
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  ~TempDb() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

const std::string kSchema = R"sql(
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER,
  cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
  gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
  localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
  sharedMemoryLimitConfig INTEGER);
)sql";

const std::string kNvtxSchema = R"sql(
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
)sql";

const std::string kFullExport = kSchema + kNvtxSchema + R"sql(
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL,
  copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
  srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,
  isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER,
  smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER, ctxId INTEGER,
  ctxHandle INTEGER);
INSERT INTO StringIds VALUES (1, 'matmul_naive(float const*, float const*, float*, int)'), (2, 'matmul_naive'),
  (3, '_Z12matmul_naivePKfS0_Pfi'), (4, 'cudaLaunchKernel_v7000'), (5, 'cudaMalloc_v3020'),
  (6, 'cudaMemcpyAsync_v3020'), (7, 'aten::mm, seq = 5, op_id = 9'), (8, 'cudaProfilerStart_v4000'),
  (9, 'cudaProfilerStop_v4000');
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2000, 2500, 0, 1, 7, 100, )sql" +
                                std::to_string(kGlobalPid) + R"sql(, 1, 2, 3, 0, 0, 40, 16, 16, 1, 16, 16, 1, 1024,
  512, 0, 0, 1, 0, 0, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (1000, 1010, 0, )sql" + std::to_string(kGlobalTid) + R"sql(, 90, 8, 0, 0),
  (1500, 1600, 0, )sql" + std::to_string(kGlobalTid) + R"sql(, 99, 5, 0, 0),
  (1700, 1710, 0, )sql" + std::to_string(kGlobalTid) + R"sql(, 100, 4, 0, 0),
  (1720, 1730, 0, )sql" + std::to_string(kGlobalTid) + R"sql(, 101, 6, 0, 0),
  (3000, 3010, 0, )sql" + std::to_string(kGlobalTid) + R"sql(, 102, 9, 0, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (2600, 2700, 0, 1, 7, 101, )sql" + std::to_string(kGlobalPid) +
                                R"sql(, 4096, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0);
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId) VALUES
  (1100, NULL, 75, 'my_domain', )sql" + std::to_string(kGlobalTid) + R"sql(, NULL, 3),
  (1200, 2900, 59, 'forward', )sql" + std::to_string(kGlobalTid) + R"sql(, NULL, 0),
  (1300, 2800, 59, 'nn.Module: layer0', )sql" + std::to_string(kGlobalTid) + R"sql(, NULL, 0),
  (1650, 1750, 59, NULL, )sql" + std::to_string(kGlobalTid) + R"sql(, 7, 3),
  (1800, 1900, 60, 'async', )sql" + std::to_string(kGlobalTid) + R"sql(, NULL, 0),
  (1950, NULL, 59, 'never_closed', )sql" + std::to_string(kGlobalTid) + R"sql(, NULL, 0),
  (1960, NULL, 34, 'a mark', )sql" + std::to_string(kGlobalTid) + R"sql(, NULL, 0);
INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount, cuDevice) VALUES (0, 0, 'NVIDIA H200', 132, 0);
)sql";

std::size_t find_range(const Timeline& tl, std::string_view text) {
  for (std::size_t i = 0; i < tl.ranges.size(); ++i)
    if (tl.str(tl.ranges.text[i]) == text) return i;
  return kNoIndex;
}

TEST(NsysSqlite, DecodesGlobalIds) {
  EXPECT_EQ(nsys_pid(kGlobalTid), 4242u);
  EXPECT_EQ(nsys_tid(kGlobalTid), 4250u);
  EXPECT_EQ(nsys_pid(kGlobalPid), 4242u);
  EXPECT_EQ(nsys_tid(kGlobalPid), 0u);
}

TEST(NsysSqlite, ReadsKernelsLaunchesMemcpysAndNvtx) {
  TempDb db(kFullExport);
  const Timeline tl = read_nsys_sqlite(db.path());
  EXPECT_EQ(tl.metadata.at("source"), "nsys-sqlite");
  EXPECT_EQ(tl.metadata.at("device.0.name"), "NVIDIA H200");
  EXPECT_EQ(tl.metadata.at("device.0.num_sms"), "132");

  ASSERT_EQ(tl.kernels.size(), 2u);
  EXPECT_EQ(tl.str(tl.kernels.name[0]), "matmul_naive(float const*, float const*, float*, int)");
  EXPECT_EQ(tl.str(tl.kernels.mangled[0]), "_Z12matmul_naivePKfS0_Pfi");
  EXPECT_EQ(tl.kernels.pid[0], 4242u);
  EXPECT_EQ(tl.kernels.stream[0], 7u);
  EXPECT_EQ(tl.kernels.correlation[0], 100u);
  EXPECT_EQ(tl.kernels.grid[0], (Dim3{16, 16, 1}));
  EXPECT_EQ(tl.kernels.shared_mem_bytes[0], 1536u);
  EXPECT_EQ(tl.kernels.registers_per_thread[0], 40u);
  EXPECT_EQ(tl.kernels.kind[1], ActivityKind::kMemcpy);
  EXPECT_EQ(tl.str(tl.kernels.name[1]), "Memcpy DtoH");
  EXPECT_EQ(tl.kernels.bytes[1], 4096u);

  // cudaMalloc (no GPU activity) is left out; profiler start/stop are kept and make the window.
  ASSERT_EQ(tl.launches.size(), 4u);
  EXPECT_EQ(tl.str(tl.launches.api[1]), "cudaLaunchKernel_v7000");
  EXPECT_EQ(tl.launches.tid[1], 4250u);
  EXPECT_EQ(tl.launches.pid[1], 4242u);
  EXPECT_EQ(tl.launches.correlation[1], 100u);
  EXPECT_EQ(tl.metadata.at("window.count"), "1");
  EXPECT_EQ(tl.metadata.at("window.start_ns"), "1000");
  EXPECT_EQ(tl.metadata.at("window.end_ns"), "3010");

  const std::size_t forward = find_range(tl, "forward");
  const std::size_t layer = find_range(tl, "layer0");
  const std::size_t mm = find_range(tl, "aten::mm");
  const std::size_t async = find_range(tl, "async");
  const std::size_t open = find_range(tl, "never_closed");
  ASSERT_NE(forward, kNoIndex);
  ASSERT_NE(layer, kNoIndex);
  ASSERT_NE(mm, kNoIndex);
  ASSERT_NE(async, kNoIndex);
  ASSERT_NE(open, kNoIndex);
  EXPECT_EQ(find_range(tl, "a mark"), kNoIndex);
  EXPECT_EQ(tl.ranges.kind[layer], RangeKind::kModule);
  EXPECT_EQ(tl.ranges.kind[mm], RangeKind::kOperator);
  EXPECT_EQ(tl.str(tl.ranges.domain[mm]), "my_domain");
  EXPECT_EQ(tl.ranges.depth[forward], 0);
  EXPECT_EQ(tl.ranges.depth[layer], 1);
  EXPECT_EQ(tl.ranges.depth[mm], 2);
  EXPECT_EQ(tl.ranges.depth[async], -1);
  EXPECT_EQ(tl.ranges.owner(forward), 4250u);
  EXPECT_EQ(tl.ranges.pid(forward), 4242u);
  EXPECT_EQ(tl.ranges.end_ns[forward], 2900);
  EXPECT_EQ(tl.ranges.end_ns[open], 3010);  // no end in the export: the last event's time
  EXPECT_TRUE(tl.metadata.count("warning.unclosed_ranges"));
}

TEST(NsysSqlite, TorchObserverDomainRangesAreClassifiedByCategory) {
  const std::string tid = std::to_string(kGlobalTid);
  TempDb db(kSchema + kNvtxSchema + R"sql(
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, textId, domainId, category) VALUES
  (100, NULL, 75, 'opprof.torch', )sql" + tid + R"sql(, NULL, 4, NULL),
  (200, 900, 59, 'my_step', )sql" + tid + R"sql(, NULL, 4, 8),
  (300, 800, 59, 'autograd::engine::evaluate_function: MmBackward0', )sql" + tid + R"sql(, NULL, 4, 2),
  (400, 700, 59, 'aten::mm', )sql" + tid + R"sql(, NULL, 4, 1),
  (950, 990, 59, 'autograd::engine::evaluate_function: MmBackward0', )sql" + tid + R"sql(, NULL, 0, NULL);
)sql");
  const Timeline tl = read_nsys_sqlite(db.path());
  std::size_t backward_observer = kNoIndex, backward_default = kNoIndex;
  for (std::size_t i = 0; i < tl.ranges.size(); ++i) {
    if (tl.str(tl.ranges.text[i]) != "autograd::engine::evaluate_function: MmBackward0") continue;
    (tl.ranges.start_ns[i] == 300 ? backward_observer : backward_default) = i;
  }
  ASSERT_NE(find_range(tl, "my_step"), kNoIndex);
  ASSERT_NE(find_range(tl, "aten::mm"), kNoIndex);
  ASSERT_NE(backward_observer, kNoIndex);
  ASSERT_NE(backward_default, kNoIndex);
  EXPECT_EQ(tl.ranges.kind[find_range(tl, "my_step")], RangeKind::kAnnotation);
  EXPECT_EQ(tl.ranges.kind[find_range(tl, "aten::mm")], RangeKind::kOperator);
  EXPECT_EQ(tl.ranges.kind[backward_observer], RangeKind::kOperator);
  EXPECT_EQ(tl.ranges.kind[backward_default], RangeKind::kAnnotation);  // the default domain: text rules
  EXPECT_EQ(tl.str(tl.ranges.domain[backward_observer]), "opprof.torch");
}

TEST(NsysSqlite, ToleratesMissingTables) {
  TempDb db(kSchema + R"sql(
INSERT INTO StringIds VALUES (1, 'k(int)'), (2, 'k');
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (10, 20, 0, 1, 7, 5, 0, 1, 2, 0, 0, 0, 32, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 1,
  0, 0, 0);
)sql");
  const Timeline tl = read_nsys_sqlite(db.path());
  ASSERT_EQ(tl.kernels.size(), 1u);
  EXPECT_EQ(tl.str(tl.kernels.name[0]), "k(int)");
  EXPECT_EQ(tl.kernels.mangled[0], kNoString);
  EXPECT_EQ(tl.launches.size(), 0u);
  EXPECT_EQ(tl.ranges.size(), 0u);
}

// Damaged times are refused with the table and row, before any duration or sum could overflow.
TEST(NsysSqlite, RejectsActivitiesThatEndBeforeTheyStartOrLieOutOfRange) {
  const auto kernel_row = [](const std::string& start, const std::string& end) {
    return kSchema + "INSERT INTO StringIds VALUES (1, 'k'); INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (" + start +
           ", " + end + ", 0, 1, 7, 100, " + std::to_string(kGlobalPid) +
           ", 1, 1, 1, 0, 0, 40, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0);";
  };
  struct Case {
    std::string start, end, message;
  };
  for (const Case& c : {Case{"2500", "2000", "ends before it starts"},
                        Case{"-9223372036854775808", "9223372036854775807", "time out of range"},
                        Case{"0", "9223372036854775807", "time out of range"}, Case{"-5", "10", "time out of range"}}) {
    TempDb db(kernel_row(c.start, c.end));
    try {
      (void)read_nsys_sqlite(db.path());
      ADD_FAILURE() << "accepted a kernel from " << c.start << " to " << c.end;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("CUPTI_ACTIVITY_KIND_KERNEL row 1: " + c.message), std::string::npos)
          << e.what();
    }
  }
  TempDb fine(kernel_row("2000", "2000"));  // a zero-length kernel is possible
  EXPECT_EQ(read_nsys_sqlite(fine.path()).kernels.size(), 1u);
}

TEST(NsysSqlite, RejectsOtherDatabasesAndMissingFiles) {
  TempDb other("CREATE TABLE t (x INTEGER);");
  EXPECT_THROW(read_nsys_sqlite(other.path()), InputError);
  EXPECT_THROW(read_nsys_sqlite("/nonexistent/report.sqlite"), InputError);
}

}  // namespace
}  // namespace opprof
