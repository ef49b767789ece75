#include "opprof/ingest/nsys_sqlite.hpp"

#include <sqlite3.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "opprof/ingest/tracer_log.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

// nsys NVTX_EVENTS.eventType values (Nsight Systems export documentation).
constexpr std::int64_t kNvtxPushPopRange = 59;
constexpr std::int64_t kNvtxStartEndRange = 60;
constexpr std::int64_t kNvtxDomainCreate = 75;

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& path) : path_(path) {
    if (sqlite3_prepare_v2(db, sql.c_str(), static_cast<int>(sql.size()), &stmt_, nullptr) != SQLITE_OK)
      throw InputError(path, fmt::format("SQLite: {} (in: {})", sqlite3_errmsg(db), sql));
  }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) throw InputError(path_, fmt::format("SQLite: {}", sqlite3_errstr(rc)));
    return false;
  }
  std::int64_t i64(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string_view text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p == nullptr ? std::string_view() : std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)));
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  std::string path_;
};

class Database {
 public:
  explicit Database(const std::string& path) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      std::string msg = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw InputError(path, "cannot open as SQLite: " + msg);
    }
  }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database() { sqlite3_close(db_); }

  Statement query(const std::string& sql) { return Statement(db_, sql, path_); }
  bool has_table(const std::string& table) {
    Statement s = query(fmt::format("SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = '{}'", table));
    return s.step();
  }
  std::set<std::string> columns(const std::string& table) {
    std::set<std::string> out;
    Statement s = query(fmt::format("PRAGMA table_info('{}')", table));
    while (s.step()) out.emplace(s.text(1));
    return out;
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

// "name" when the export has that column, else a constant: exports differ between nsys versions.
std::string column_or(const std::set<std::string>& cols, const std::string& name, const char* fallback = "0") {
  return cols.count(name) != 0 ? "\"" + name + "\"" : std::string(fallback);
}

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), db_(path) {}

  Timeline read() {
    // Every nsys export has StringIds; a database without it is something else.
    if (!db_.has_table("StringIds")) throw InputError(path_, "not an nsys SQLite export: no StringIds table");
    tl_.metadata["source"] = "nsys-sqlite";
    tl_.metadata["clock"] = "nsys";
    load_strings();
    kernels();
    memcpys();
    memsets();
    launches("CUPTI_ACTIVITY_KIND_RUNTIME");
    launches("CUPTI_ACTIVITY_KIND_DRIVER");
    nvtx();
    devices();
    return std::move(tl_);
  }

 private:
  void load_strings() {
    Statement s = db_.query("SELECT id, value FROM StringIds");
    while (s.step()) strings_.emplace(s.i64(0), std::string(s.text(1)));
  }
  std::string_view string_of(std::int64_t id) const {
    auto it = strings_.find(id);
    return it == strings_.end() ? std::string_view() : std::string_view(it->second);
  }
  StrId intern_id(std::int64_t id) {
    auto it = interned_.find(id);
    if (it != interned_.end()) return it->second;
    StrId s = string_of(id).empty() ? kNoString : tl_.strings.intern(string_of(id));
    interned_.emplace(id, s);
    return s;
  }
  void saw(std::int64_t t) { max_ts_ = std::max(max_ts_, t); }

  // An activity's [start, end] from columns 0 and 1 of the current row, checked: nsys writes nanoseconds
  // since the session start, so a negative time, an end before the start, or a time past 2^62 ns (146
  // years) is a damaged export, and would overflow the durations and sums computed from it.
  std::pair<std::int64_t, std::int64_t> interval(const Statement& s, const std::string& table, std::size_t row,
                                                 bool end_may_be_null = false) const {
    constexpr std::int64_t kMaxNs = std::int64_t{1} << 62;
    const std::int64_t start = s.i64(0);
    const bool has_end = !(end_may_be_null && s.null(1));
    const std::int64_t end = has_end ? s.i64(1) : start;
    if (start < 0 || start > kMaxNs || end < 0 || end > kMaxNs)
      throw InputError(path_, fmt::format("{} row {}: time out of range (start {} ns, end {} ns)", table, row + 1,
                                          start, end));
    if (end < start)
      throw InputError(path_, fmt::format("{} row {}: ends before it starts (start {} ns, end {} ns)", table, row + 1,
                                          start, end));
    return {start, end};
  }

  // Reads a CUPTI activity table (kernels, memcpys, memsets) into tl_.kernels. Every kind selects start,
  // end and the columns all kinds share (2-6), then its own (from 7): name_of gives a row's name, read
  // before the row is added, and own_fields fills the kind's own fields of the added row i.
  void activities(const std::string& table, ActivityKind kind, const std::vector<std::string>& own_columns,
                  const std::function<StrId(const Statement&)>& name_of,
                  const std::function<void(const Statement&, std::size_t i)>& own_fields) {
    if (!db_.has_table(table)) return;
    const auto c = db_.columns(table);
    std::string sql = "SELECT start, end";
    for (const char* shared : {"deviceId", "contextId", "streamId", "correlationId", "globalPid"})
      sql += ", " + column_or(c, shared);
    for (const std::string& own : own_columns) sql += ", " + column_or(c, own);
    Statement s = db_.query(sql + " FROM " + table);
    KernelTable& k = tl_.kernels;
    for (std::size_t row = 0; s.step(); ++row) {
      const auto [start, end] = interval(s, table, row);
      const std::size_t i = k.add(kind, name_of(s), static_cast<std::uint32_t>(s.i64(2)),
                                  static_cast<std::uint32_t>(s.i64(4)), start, end);
      k.context[i] = static_cast<std::uint32_t>(s.i64(3));
      k.correlation[i] = static_cast<std::uint64_t>(s.i64(5));
      k.pid[i] = nsys_pid(s.i64(6));
      own_fields(s, i);
      correlations_.insert(k.correlation[i]);
      saw(end);
    }
  }

  void kernels() {
    KernelTable& k = tl_.kernels;
    activities(
        "CUPTI_ACTIVITY_KIND_KERNEL", ActivityKind::kKernel,
        {"gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread", "staticSharedMemory",
         "dynamicSharedMemory", "demangledName", "shortName", "mangledName", "graphNodeId", "graphId"},
        [&](const Statement& s) {
          const StrId name = intern_id(s.i64(16));
          return name == kNoString ? intern_id(s.i64(17)) : name;
        },
        [&](const Statement& s, std::size_t i) {
          k.grid[i] = Dim3{static_cast<std::uint32_t>(s.i64(7)), static_cast<std::uint32_t>(s.i64(8)),
                           static_cast<std::uint32_t>(s.i64(9))};
          k.block[i] = Dim3{static_cast<std::uint32_t>(s.i64(10)), static_cast<std::uint32_t>(s.i64(11)),
                            static_cast<std::uint32_t>(s.i64(12))};
          k.registers_per_thread[i] = static_cast<std::uint32_t>(s.i64(13));
          k.shared_mem_bytes[i] = static_cast<std::uint32_t>(s.i64(14) + s.i64(15));
          k.mangled[i] = intern_id(s.i64(18));
          k.graph_node[i] = static_cast<std::uint64_t>(s.i64(19));
          k.graph_id[i] = static_cast<std::uint64_t>(s.i64(20));
        });
  }

  void memcpys() {
    static constexpr const char* kNames[] = {"Memcpy", "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA", "Memcpy AtoH",
                                             "Memcpy AtoA", "Memcpy AtoD", "Memcpy DtoA", "Memcpy DtoD",
                                             "Memcpy HtoH", "Memcpy PtoP"};
    KernelTable& k = tl_.kernels;
    activities(
        "CUPTI_ACTIVITY_KIND_MEMCPY", ActivityKind::kMemcpy, {"bytes", "copyKind", "graphNodeId"},
        [&](const Statement& s) {
          const std::int64_t kind = s.i64(8);
          return tl_.strings.intern(kind >= 0 && kind <= 10 ? kNames[kind] : kNames[0]);
        },
        [&](const Statement& s, std::size_t i) {
          k.bytes[i] = static_cast<std::uint64_t>(s.i64(7));
          k.graph_node[i] = static_cast<std::uint64_t>(s.i64(9));
        });
  }

  void memsets() {
    KernelTable& k = tl_.kernels;
    activities(
        "CUPTI_ACTIVITY_KIND_MEMSET", ActivityKind::kMemset, {"bytes", "graphNodeId"},
        [&](const Statement&) { return tl_.strings.intern("Memset"); },
        [&](const Statement& s, std::size_t i) {
          k.bytes[i] = static_cast<std::uint64_t>(s.i64(7));
          k.graph_node[i] = static_cast<std::uint64_t>(s.i64(8));
        });
  }

  void launches(const std::string& table) {
    if (!db_.has_table(table)) return;
    const auto c = db_.columns(table);
    Statement s = db_.query(fmt::format("SELECT start, end, {}, {}, {} FROM {} ORDER BY start", column_or(c, "globalTid"),
                                        column_or(c, "correlationId"), column_or(c, "nameId"), table));
    LaunchTable& l = tl_.launches;
    for (std::size_t row = 0; s.step(); ++row) {
      const auto [start, end] = interval(s, table, row);
      const auto corr = static_cast<std::uint64_t>(s.i64(3));
      const std::string_view name = string_of(s.i64(4));
      const bool profiler_start = starts_with(name, "cudaProfilerStart") || starts_with(name, "cuProfilerStart");
      const bool profiler_stop = starts_with(name, "cudaProfilerStop") || starts_with(name, "cuProfilerStop");
      if (correlations_.count(corr) == 0 && !profiler_start && !profiler_stop) continue;
      const std::int64_t gtid = s.i64(2);
      l.add(intern_id(s.i64(4)), nsys_pid(gtid), nsys_tid(gtid), start, end, corr);
      saw(end);
      if (profiler_start && !window_open_) {
        window_open_ = true;
        window_start_ = start;
        window_tid_ = nsys_tid(gtid);
        window_pid_ = nsys_pid(gtid);
      } else if (profiler_stop && window_open_) {
        window_open_ = false;
        add_window(end);
      }
    }
  }

  void add_window(std::int64_t end) {
    tl_.ranges.add(RangeKind::kCaptureWindow, RangeScope::kThread, tl_.strings.intern("capture window"), kNoString,
                   window_pid_, window_tid_, window_start_, end);
    if (windows_ == 0) tl_.metadata["window.start_ns"] = std::to_string(window_start_);
    tl_.metadata["window.end_ns"] = std::to_string(end);
    ++windows_;
  }

  void nvtx() {
    const std::string table = "NVTX_EVENTS";
    if (window_open_) add_window(max_ts_);  // a start without stop: the window runs to the end
    tl_.metadata["window.count"] = std::to_string(windows_);
    if (!db_.has_table(table)) return;
    const auto c = db_.columns(table);
    Statement s = db_.query(fmt::format(
        "SELECT start, end, {}, {}, {}, eventType, {}, {} FROM {} WHERE eventType IN ({}, {}, {}) ORDER BY start",
        column_or(c, "text", "NULL"), column_or(c, "textId"), column_or(c, "globalTid"), column_or(c, "domainId"),
        column_or(c, "category", "NULL"), table, kNvtxPushPopRange, kNvtxStartEndRange, kNvtxDomainCreate));
    struct Row {
      std::int64_t start, end;
      bool has_end;
      std::string text;
      std::int64_t gtid, type, domain;
      std::int64_t category;  // -1: NULL or no column
    };
    std::vector<Row> rows;
    std::unordered_map<std::uint64_t, std::string> domains;  // (pid << 32 | domainId) -> name
    for (std::size_t row = 0; s.step(); ++row) {
      const auto [start, end] = interval(s, table, row, /*end_may_be_null=*/true);
      Row r{start, end, !s.null(1), std::string(s.null(2) ? string_of(s.i64(3)) : s.text(2)), s.i64(4),
            s.i64(5), s.i64(6), s.null(7) ? -1 : s.i64(7)};
      if (r.type == kNvtxDomainCreate) {
        domains[(std::uint64_t{nsys_pid(r.gtid)} << 32) | static_cast<std::uint32_t>(r.domain)] = r.text;
        continue;
      }
      saw(r.has_end ? r.end : r.start);
      rows.push_back(std::move(r));
    }
    // Nesting per thread: ranges sorted by start (outer first on ties), a stack of open ends.
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
      if (a.gtid != b.gtid) return a.gtid < b.gtid;
      if (a.start != b.start) return a.start < b.start;
      return a.end > b.end;
    });
    std::vector<std::int64_t> open_ends;
    std::int64_t current = std::numeric_limits<std::int64_t>::min();
    std::uint64_t unclosed = 0;
    for (const Row& r : rows) {
      if (r.gtid != current) {
        open_ends.clear();
        current = r.gtid;
      }
      const std::int64_t end = r.has_end ? r.end : std::max(r.start, max_ts_);
      unclosed += r.has_end ? 0 : 1;
      const std::uint32_t pid = nsys_pid(r.gtid);
      std::string_view domain_name;
      if (auto d = domains.find((std::uint64_t{pid} << 32) | static_cast<std::uint32_t>(r.domain)); d != domains.end())
        domain_name = d->second;
      const StrId domain = domain_name.empty() ? kNoString : tl_.strings.intern(domain_name);
      std::string_view kept;
      // NVTX's "no category" (0) is stored as NULL or 0; the observer's categories start at 1.
      const RangeKind kind = classify_nvtx_range(r.text, domain_name, r.category < 0 ? 0 : r.category, &kept);
      const std::size_t row = tl_.ranges.add(kind, RangeScope::kThread, tl_.strings.intern(kept), domain, pid,
                                             nsys_tid(r.gtid), r.start, end);
      if (r.type == kNvtxPushPopRange) {
        while (!open_ends.empty() && open_ends.back() <= r.start) open_ends.pop_back();
        tl_.ranges.depth[row] = static_cast<std::int32_t>(open_ends.size());
        open_ends.push_back(end);
      }
    }
    if (unclosed != 0)
      tl_.metadata["warning.unclosed_ranges"] =
          fmt::format("{} NVTX ranges have no end in the export; they end at the last event", unclosed);
  }

  void devices() {
    const std::string table = "TARGET_INFO_GPU";
    if (!db_.has_table(table)) return;
    const auto c = db_.columns(table);
    if (c.count("name") == 0) return;
    const std::string id = c.count("cuDevice") != 0 ? "cuDevice" : column_or(c, "id");
    Statement s = db_.query(fmt::format("SELECT {}, name, {} FROM {}", id, column_or(c, "smCount"), table));
    while (s.step()) {
      const std::string key = fmt::format("device.{}.", s.i64(0));
      tl_.metadata[key + "name"] = std::string(s.text(1));
      if (s.i64(2) != 0) tl_.metadata[key + "num_sms"] = std::to_string(s.i64(2));
    }
  }

  std::string path_;
  Database db_;
  Timeline tl_;
  std::unordered_map<std::int64_t, std::string> strings_;
  std::unordered_map<std::int64_t, StrId> interned_;
  std::unordered_set<std::uint64_t> correlations_;
  std::int64_t max_ts_ = 0;
  bool window_open_ = false;
  std::int64_t window_start_ = 0;
  std::uint32_t window_pid_ = 0;
  std::uint64_t window_tid_ = 0;
  std::size_t windows_ = 0;
};

}  // namespace

Timeline read_nsys_sqlite(const std::string& path) {
  // sqlite3_open_v2 would create nothing read-only, but its error for a missing file is vague: say it plainly.
  if (FILE* f = std::fopen(path.c_str(), "rb"); f != nullptr) {
    std::fclose(f);
  } else {
    throw InputError(path, fmt_errno("cannot open"));
  }
  return Reader(path).read();
}

}  // namespace opprof
