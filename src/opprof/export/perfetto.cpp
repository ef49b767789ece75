#include "opprof/export/perfetto.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <map>
#include <set>

#include "opprof/report/json_writer.hpp"
#include "opprof/store/sqlite.hpp"
#include "opprof/util/atomic_file.hpp"
#include "opprof/util/error.hpp"

namespace opprof {

namespace {

using sqlite::Statement;

// Events are appended to one buffer and written out in pieces, so a trace of millions of kernels does not
// sit in memory twice.
class TraceWriter {
 public:
  explicit TraceWriter(const std::string& path) : file_(path) {}

  // Opens an event object: {"ph":"X","name":...,"cat":...,"pid":..,"tid":..,"ts":..
  void begin(char ph, std::string_view name, std::string_view cat, std::int64_t pid, std::int64_t tid, std::int64_t ts_ns) {
    buf_ += first_ ? "\n" : ",\n";
    first_ = false;
    buf_ += "{\"ph\":\"";
    buf_ += ph;
    buf_ += "\",\"name\":";
    append_json_string(buf_, name);
    if (!cat.empty()) {
      buf_ += ",\"cat\":";
      append_json_string(buf_, cat);
    }
    fmt::format_to(std::back_inserter(buf_), ",\"pid\":{},\"tid\":{},\"ts\":", pid, tid);
    micros(ts_ns);
  }
  void dur(std::int64_t ns) {
    buf_ += ",\"dur\":";
    micros(ns);
  }
  void raw(std::string_view json) { buf_ += json; }
  void key(std::string_view k) {
    buf_ += args_first_ ? "" : ",";
    args_first_ = false;
    append_json_string(buf_, k);
    buf_ += ':';
  }
  void begin_args() {
    buf_ += ",\"args\":{";
    args_first_ = true;
  }
  void arg(std::string_view k, std::string_view v) {
    if (v.empty()) return;  // unknown text is left out, not written as ""
    key(k);
    append_json_string(buf_, v);
  }
  void arg(std::string_view k, std::int64_t v) {
    key(k);
    fmt::format_to(std::back_inserter(buf_), "{}", v);
  }
  void arg(std::string_view k, double v) {
    key(k);
    if (std::isfinite(v)) fmt::format_to(std::back_inserter(buf_), "{}", v);
    else buf_ += "null";
  }
  void end_args() { buf_ += '}'; }
  void end() {
    buf_ += '}';
    if (buf_.size() > (std::size_t{1} << 20)) flush();
  }
  void metadata(std::string_view what, std::int64_t pid, std::int64_t tid, std::string_view name) {
    begin('M', what, "", pid, tid, 0);
    begin_args();
    arg("name", name);
    end_args();
    end();
  }
  void flush() {
    file_.write(buf_);
    buf_.clear();
  }
  void commit() {
    flush();
    file_.commit();
  }

 private:
  // Nanoseconds as microseconds with three decimals, exactly (no rounding through a double).
  void micros(std::int64_t ns) {
    const char* sign = ns < 0 ? "-" : "";
    const std::uint64_t a = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
    fmt::format_to(std::back_inserter(buf_), "{}{}.{:03}", sign, a / 1000, a % 1000);
  }
  AtomicFile file_;
  std::string buf_;
  bool first_ = true;
  bool args_first_ = true;
};

std::int64_t gpu_pid(std::int64_t device) { return kPerfettoGpuPidBase + device; }

// A launch, looked up by (pid, correlation id) for the flows to its kernels.
struct LaunchEnd {
  std::int64_t tid = 0;
  std::int64_t start_ns = 0;
};

void write_launches(TraceWriter& w, sqlite::Database& db, PerfettoExportStats& stats,
                    std::map<std::pair<std::int64_t, std::int64_t>, LaunchEnd>& by_correlation,
                    std::set<std::pair<std::int64_t, std::int64_t>>& threads) {
  Statement q(db, "SELECT id, api, pid, tid, cpu_start_ns, cpu_end_ns, correlation, external_id FROM launches ORDER BY id");
  while (q.next()) {
    const std::int64_t pid = q.column_int(2), tid = q.column_int(3), start = q.column_int(4);
    w.begin('X', q.column_text(1), "launch", pid, tid, start);
    w.dur(q.column_int(5) - start);
    w.begin_args();
    w.arg("launch_id", q.column_int(0));
    if (!q.is_null(6)) {
      w.arg("correlation", q.column_int(6));
      by_correlation[{pid, q.column_int(6)}] = {tid, start};
    }
    if (!q.is_null(7)) w.arg("external_id", q.column_int(7));
    w.end_args();
    w.end();
    threads.insert({pid, tid});
    ++stats.launches;
  }
}

void write_ranges(TraceWriter& w, sqlite::Database& db, PerfettoExportStats& stats,
                  std::set<std::pair<std::int64_t, std::int64_t>>& threads,
                  std::set<std::pair<std::int64_t, std::int64_t>>& stream_range_tracks) {
  Statement q(db, "SELECT id, kind, scope, text, domain, pid, owner, device, start_ns, end_ns, external_id "
                  "FROM ranges ORDER BY id");
  while (q.next()) {
    const bool on_stream = q.column_text(2) == "stream";
    const std::int64_t device = q.column_int(7), owner = q.column_int(6);
    const std::int64_t pid = on_stream ? gpu_pid(device) : q.column_int(5);
    const std::int64_t tid = on_stream ? kPerfettoStreamRangeTidBase + owner : owner;
    const std::int64_t start = q.column_int(8);
    w.begin('X', q.column_text(3), q.column_text(1), pid, tid, start);
    w.dur(q.column_int(9) - start);
    w.begin_args();
    w.arg("range_id", q.column_int(0));
    w.arg("domain", q.column_text(4));
    if (on_stream) w.arg("process", q.column_int(5));
    if (!q.is_null(10)) w.arg("external_id", q.column_int(10));
    w.end_args();
    w.end();
    (on_stream ? stream_range_tracks : threads).insert({on_stream ? device : pid, owner});
    ++stats.ranges;
  }
}

void write_kernels(TraceWriter& w, sqlite::Database& db, PerfettoExportStats& stats,
                   const std::map<std::pair<std::int64_t, std::int64_t>, LaunchEnd>& by_correlation,
                   std::set<std::pair<std::int64_t, std::int64_t>>& streams) {
  Statement q(db,
              "SELECT id, kind, name, pid, device, stream, start_ns, end_ns, grid_x, grid_y, grid_z, block_x, block_y, "
              "block_z, correlation, external_id, graph_id, path, confidence, op, top_op, module, fused_ops, "
              "source_line, family, reason, opaque_backend, phase, forward_op, registers_per_thread, shared_mem_bytes, "
              "bytes FROM kernel_view ORDER BY id");
  while (q.next()) {
    const std::int64_t id = q.column_int(0), pid = gpu_pid(q.column_int(4)), stream = q.column_int(5);
    const std::int64_t start = q.column_int(6);
    const std::string kind = q.column_text(1), phase = q.column_text(27);
    // The category carries the kind and the phase, so that Perfetto's search and filters find
    // "backward" kernels.
    w.begin('X', q.column_text(2), phase.empty() ? kind : kind + "," + phase, pid, stream, start);
    w.dur(q.column_int(7) - start);
    w.begin_args();
    w.arg("kernel_id", id);
    w.arg("op", q.column_text(19));
    w.arg("module", q.column_text(21));
    w.arg("phase", phase);
    w.arg("top_op", q.column_text(20));
    w.arg("attribution", q.column_text(17));
    if (!q.is_null(18)) w.arg("confidence", q.column_double(18));
    w.arg("fused_ops", q.column_text(22));
    w.arg("source_line", q.column_text(23));
    w.arg("family", q.column_text(24));
    w.arg("unattributed_reason", q.column_text(25));
    w.arg("opaque_backend", q.column_text(26));
    w.arg("forward_op", q.column_text(28));
    if (!q.is_null(8))
      w.arg("grid", fmt::format("{}x{}x{}", q.column_int(8), q.column_int(9), q.column_int(10)));
    if (!q.is_null(11))
      w.arg("block", fmt::format("{}x{}x{}", q.column_int(11), q.column_int(12), q.column_int(13)));
    if (!q.is_null(29)) w.arg("registers_per_thread", q.column_int(29));
    if (kind == "kernel") w.arg("shared_mem_bytes", q.column_int(30));
    else w.arg("bytes", q.column_int(31));
    if (!q.is_null(14)) w.arg("correlation", q.column_int(14));
    if (!q.is_null(15)) w.arg("external_id", q.column_int(15));
    if (!q.is_null(16)) w.arg("graph_id", q.column_int(16));
    w.arg("process", q.column_int(3));
    w.end_args();
    w.end();
    streams.insert({q.column_int(4), stream});
    ++stats.kernels;
    if (q.is_null(14)) continue;
    auto launch = by_correlation.find({q.column_int(3), q.column_int(14)});
    if (launch == by_correlation.end()) continue;
    // Flow from the launch slice to the kernel slice (v1 flow events: "s" binds to the slice enclosing it on
    // the launching thread, "f" with "bp":"e" to the kernel's own slice).
    const std::string flow_id = fmt::format(",\"id\":{}", id);
    w.begin('s', "launch", "flow", q.column_int(3), launch->second.tid, launch->second.start_ns);
    w.raw(flow_id);
    w.end();
    w.begin('f', "launch", "flow", pid, stream, start);
    w.raw(flow_id);
    w.raw(",\"bp\":\"e\"");
    w.end();
    ++stats.flows;
  }
}

void write_counters(TraceWriter& w, sqlite::Database& db, PerfettoExportStats& stats) {
  Statement q(db,
              "SELECT k.device, m.name, k.start_ns, k.end_ns, km.value FROM kernel_metrics km "
              "JOIN kernels k ON k.id = km.kernel_id JOIN metrics m ON m.id = km.metric_id "
              "WHERE m.present = 1 AND m.unit = '%' ORDER BY k.device, m.id, k.start_ns, k.id");
  while (q.next()) {
    const std::int64_t pid = gpu_pid(q.column_int(0));
    const std::string name = q.column_text(1) + " [%]";
    w.begin('C', name, "ncu", pid, 0, q.column_int(2));
    w.begin_args();
    w.arg("value", q.column_double(4));
    w.end_args();
    w.end();
    w.begin('C', name, "ncu", pid, 0, q.column_int(3));
    w.begin_args();
    w.arg("value", 0.0);
    w.end_args();
    w.end();
    stats.counter_events += 2;
  }
}

}  // namespace

PerfettoExportStats export_perfetto(const ProfileReader& profile, const std::string& path) {
  PerfettoExportStats stats;
  sqlite::Database& db = profile.database();
  TraceWriter w(path);
  w.raw("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":");
  w.raw(json_quote(fmt::format("opprof {}", OPPROF_VERSION)));
  w.raw(",\"profile\":");
  w.raw(json_quote(profile.path()));
  w.raw("},\"traceEvents\":[");
  std::map<std::pair<std::int64_t, std::int64_t>, LaunchEnd> by_correlation;
  std::set<std::pair<std::int64_t, std::int64_t>> threads, streams, stream_range_tracks;
  try {
    write_launches(w, db, stats, by_correlation, threads);
    write_ranges(w, db, stats, threads, stream_range_tracks);
    write_kernels(w, db, stats, by_correlation, streams);
    write_counters(w, db, stats);
  } catch (const sqlite::SqliteError& e) {
    throw InputError(profile.path(), fmt::format("SQLite: {}", e.what()));
  }
  // Names of the processes and tracks.
  std::set<std::int64_t> pids, devices;
  for (const auto& [pid, tid] : threads) {
    if (pids.insert(pid).second) w.metadata("process_name", pid, 0, fmt::format("process {}", pid));
    w.metadata("thread_name", pid, tid, fmt::format("thread {}", tid));
  }
  for (const auto& tracks : {streams, stream_range_tracks})
    for (const auto& track : tracks) devices.insert(track.first);
  for (std::int64_t device : devices) {
    const std::string gpu = profile.meta(fmt::format("timeline.device.{}.name", device));
    w.metadata("process_name", gpu_pid(device), 0,
               gpu.empty() ? fmt::format("GPU {}", device) : fmt::format("GPU {} ({})", device, gpu));
  }
  for (const auto& [device, stream] : streams)
    w.metadata("thread_name", gpu_pid(device), stream, fmt::format("stream {}", stream));
  for (const auto& [device, stream] : stream_range_tracks)
    w.metadata("thread_name", gpu_pid(device), kPerfettoStreamRangeTidBase + stream,
               fmt::format("stream {} ranges", stream));
  w.raw("\n]}\n");
  w.commit();
  return stats;
}

}  // namespace opprof
