#include "opprof/store/profile_reader.hpp"

#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <charconv>
#include <type_traits>
#include <unordered_map>

#include "opprof/store/profile_db.hpp"
#include "opprof/store/schema_names.hpp"
#include "opprof/store/sqlite.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {

using sqlite::Statement;

namespace {

void read_column(const Statement& q, int c, std::string& v) { v = q.column_text(c); }
void read_column(const Statement& q, int c, std::int64_t& v) { v = q.column_int(c); }
void read_column(const Statement& q, int c, double& v) { v = q.column_double(c); }
void read_column(const Statement& q, int c, bool& v) { v = q.column_int(c) != 0; }
template <class T>
  requires std::is_unsigned_v<T>
void read_column(const Statement& q, int c, T& v) {
  v = static_cast<T>(q.column_int(c));
}

// Reads columns first, first + 1, ... of the current row into fields, each as its type: the fields stand
// in the order of the SELECT's columns, so one list says which column goes where.
template <class... Fields>
void read_columns(const Statement& q, int first, Fields&... fields) {
  int c = first;
  (read_column(q, c++, fields), ...);
}

// As read_columns, for the derived figures: NULL (not computable) reads as -1.
template <class... Fields>
void read_derived_columns(const Statement& q, int first, Fields&... fields) {
  int c = first;
  ((fields = q.is_null(c) ? -1.0 : q.column_double(c), ++c), ...);
}

}  // namespace

struct ProfileReader::Impl {
  std::string path;
  std::unique_ptr<sqlite::Database> db;
  int schema_version = 0;
  std::int64_t header_user_version = 0;
  std::map<std::string, std::string> metadata;
  Coverage coverage;
  std::vector<ProfileMetric> metrics;
  std::unordered_map<std::int64_t, std::size_t> metric_by_id;
  std::vector<ProfileAnomaly> anomalies;

  [[noreturn]] void fail(const sqlite::SqliteError& e) const { throw InputError(path, fmt::format("SQLite: {}", e.what())); }

  void open() {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw InputError(path, fmt_errno("cannot open profile"));
    if (S_ISDIR(st.st_mode)) throw InputError(path, "is a directory, not an opprof profile");
    try {
      db = std::make_unique<sqlite::Database>(path, SQLITE_OPEN_READONLY);
    } catch (const sqlite::SqliteError& e) {
      fail(e);
    }
    // SQLite opens any file lazily; the first read of the schema tells a database from other bytes.
    bool has_meta = false;
    try {
      has_meta = db->has_table("meta");
    } catch (const sqlite::SqliteError& e) {
      if (e.code() == SQLITE_NOTADB) throw InputError(path, "not an opprof profile: not an SQLite database");
      fail(e);
    }
    if (!has_meta) throw InputError(path, "not an opprof profile: an SQLite database without opprof's meta table");
    try {
      Statement q(*db, "SELECT key, value FROM meta");
      while (q.next()) metadata.emplace(q.column_text(0), q.column_text(1));
    } catch (const sqlite::SqliteError& e) {
      throw InputError(path, fmt::format("not an opprof profile: its meta table cannot be read ({})", e.what()));
    }
    check_version();
    try {
      load_coverage();
      load_metrics();
      load_anomalies();
    } catch (const sqlite::SqliteError& e) {
      fail(e);
    }
  }

  // The file header's two opprof fields: another program's database with a table named meta is not a profile.
  void check_header() {
    std::int64_t application_id = 0, user_version = 0;
    try {
      Statement a(*db, "PRAGMA application_id");
      if (a.next()) application_id = a.column_int(0);
      Statement u(*db, "PRAGMA user_version");
      if (u.next()) user_version = u.column_int(0);
    } catch (const sqlite::SqliteError& e) {
      fail(e);
    }
    if (application_id != kProfileApplicationId)
      throw InputError(path, fmt::format("not an opprof profile: its SQLite application_id is {:#x}, not opprof's {:#x}",
                                         application_id, kProfileApplicationId));
    header_user_version = user_version;
  }

  void check_version() {
    auto it = metadata.find("schema_version");
    if (it == metadata.end()) throw InputError(path, "not an opprof profile: its meta table has no schema_version");
    const std::string& text = it->second;
    int version = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), version);
    if (ec != std::errc() || end != text.data() + text.size())
      throw InputError(path, fmt::format("not an opprof profile: schema_version is '{}', not a number", text));
    check_header();
    if (version < kOldestReadableSchemaVersion || version > kProfileSchemaVersion) {
      auto writer = metadata.find("opprof_version");
      const std::string older = kOldestReadableSchemaVersion < kProfileSchemaVersion
                                    ? fmt::format(" (and older ones down to {})", kOldestReadableSchemaVersion)
                                    : std::string();
      throw InputError(path, fmt::format("profile has schema version {}; this opprof ({}) reads schema version {}{}{}",
                                         version, OPPROF_VERSION, kProfileSchemaVersion, older,
                                         writer == metadata.end() ? std::string()
                                                                  : fmt::format(" (written by opprof {})", writer->second)));
    }
    if (header_user_version != version)
      throw InputError(path, fmt::format("damaged opprof profile: PRAGMA user_version is {} but meta.schema_version is {}",
                                         header_user_version, version));
    schema_version = version;
  }

  void load_coverage() {
    Statement q(*db,
                "SELECT kernel_time_ns, kernels, attributed_ns, module_attributed_ns, opaque_ns, path_correlation_ns, "
                "path_enclosure_ns, path_fusion_ns, path_none_ns, has_ncu, ncu_rows, ncu_matched, ncu_unmatched_rows, "
                "ncu_unmatched_kernels, ncu_grid_block_disagreements, ncu_launch_config_differs, ncu_strict_launch_config, "
                "phase_forward_ns, phase_backward_ns, phase_optimizer_ns, phase_other_ns, phase_communication_ns FROM coverage");
    if (!q.next()) throw InputError(path, "damaged opprof profile: the coverage table is empty");
    Coverage& c = coverage;
    read_columns(q, 0, c.kernel_time_ns, c.kernels, c.attributed_ns, c.module_attributed_ns, c.opaque_ns);
    c.by_path_ns[static_cast<int>(AttributionPath::kCorrelation)] = q.column_int(5);
    c.by_path_ns[static_cast<int>(AttributionPath::kEnclosure)] = q.column_int(6);
    c.by_path_ns[static_cast<int>(AttributionPath::kFusion)] = q.column_int(7);
    c.by_path_ns[static_cast<int>(AttributionPath::kNone)] = q.column_int(8);
    read_columns(q, 9, c.has_ncu, c.ncu_rows, c.ncu_matched, c.ncu_unmatched_rows, c.ncu_unmatched_kernels,
                 c.ncu_grid_block_disagreements, c.ncu_launch_config_differs, c.ncu_strict_launch_config);
    for (int ph = 0; ph < kPhases; ++ph) c.by_phase_ns[ph] = q.column_int(17 + ph);

    Statement u(*db, "SELECT family, reason, kernels, time_ns FROM unattributed ORDER BY id");
    while (u.next())
      c.unattributed.push_back(
          {u.column_text(0), u.column_text(1), static_cast<std::uint64_t>(u.column_int(2)), u.column_int(3)});
    Statement o(*db, "SELECT backend, time_ns FROM opaque_backends ORDER BY id");
    while (o.next()) c.opaque_backends.emplace_back(o.column_text(0), o.column_int(1));
  }

  void load_anomalies() {
    Statement q(*db, "SELECT kind, count, detail FROM anomalies ORDER BY kind");
    while (q.next()) {
      ProfileAnomaly a;
      a.kind = q.column_text(0);
      a.count = static_cast<std::uint64_t>(q.column_int(1));
      const std::string detail = q.column_text(2);
      for (std::string_view line : split_lines(detail)) a.details.emplace_back(line);
      anomalies.push_back(std::move(a));
    }
  }

  std::size_t row_count(std::string_view table) const {
    try {
      Statement q(*db, fmt::format("SELECT count(*) FROM {}", table));
      q.next();
      return static_cast<std::size_t>(q.column_int(0));
    } catch (const sqlite::SqliteError& e) {
      fail(e);
    }
  }

  void load_metrics() {
    Statement q(*db, "SELECT id, name, unit, aggregate, axis, reason, present, weight FROM metrics ORDER BY id");
    while (q.next()) {
      ProfileMetric m;
      read_columns(q, 0, m.id, m.name, m.unit, m.aggregate, m.axis, m.reason, m.present, m.weight);
      metric_by_id.emplace(m.id, metrics.size());
      metrics.push_back(std::move(m));
    }
  }
};

ProfileReader::ProfileReader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  impl_->open();
}
ProfileReader::ProfileReader(ProfileReader&&) noexcept = default;
ProfileReader& ProfileReader::operator=(ProfileReader&&) noexcept = default;
ProfileReader::~ProfileReader() = default;

const std::string& ProfileReader::path() const { return impl_->path; }
int ProfileReader::schema_version() const { return impl_->schema_version; }
const std::map<std::string, std::string>& ProfileReader::metadata() const { return impl_->metadata; }

std::string ProfileReader::meta(std::string_view key, std::string_view fallback) const {
  auto it = impl_->metadata.find(std::string(key));
  return it == impl_->metadata.end() ? std::string(fallback) : it->second;
}

const Coverage& ProfileReader::coverage() const { return impl_->coverage; }

ProfileDedup ProfileReader::dedup() const {
  ProfileDedup d;
  d.mode = meta("dedup.mode");
  d.active = !d.mode.empty() && d.mode != "off";
  if (!d.active) return d;
  auto count = [&](std::string_view key) { return static_cast<std::uint64_t>(std::stoull(meta(key, "0"))); };
  d.selection = meta("dedup.selection");
  d.verify = static_cast<int>(count("dedup.verify"));
  d.classes = count("dedup.classes");
  d.instances = count("dedup.instances");
  d.instances_in_full = count("dedup.instances_in_full");
  d.kernels = count("dedup.kernels");
  d.kernels_replayed = count("dedup.kernels_replayed");
  d.kernels_propagated = count("dedup.kernels_propagated");
  d.kernels_without_source = count("dedup.kernels_without_source");
  d.kernels_other_work = count("dedup.kernels_other_work");
  d.launch_count = static_cast<int>(count("dedup.launch_count"));
  for (std::size_t i = 0;; ++i) {
    const std::string note = meta(fmt::format("dedup.note.{}", i));
    if (note.empty()) break;
    d.notes.push_back(note);
  }
  Statement q(*impl_->db,
              "SELECT instance, class_type, reason FROM dedup_instances WHERE reason IS NOT NULL ORDER BY class_id, "
              "instance");
  while (q.next()) d.in_full.push_back({q.column_text(0), q.column_text(1), q.column_text(2)});
  Statement v(*impl_->db, "SELECT metric, pairs, median_rel, max_rel FROM dedup_verify ORDER BY metric");
  while (v.next())
    d.verify_deviation.push_back({v.column_text(0), static_cast<std::uint64_t>(v.column_int(1)), v.column_double(2),
                                  v.column_double(3)});
  return d;
}
const std::vector<ProfileMetric>& ProfileReader::metrics() const { return impl_->metrics; }
const std::vector<ProfileAnomaly>& ProfileReader::anomalies() const { return impl_->anomalies; }

std::size_t ProfileReader::metric_index(std::string_view name) const {
  for (std::size_t i = 0; i < impl_->metrics.size(); ++i)
    if (impl_->metrics[i].name == name) return i;
  return npos;
}

std::vector<GroupStats> ProfileReader::groups(GroupBy by, std::size_t limit) const {
  std::vector<GroupStats> out;
  const auto sql_limit = limit == 0 ? std::int64_t{-1} : static_cast<std::int64_t>(limit);  // -1: no limit
  const std::size_t n_metrics = impl_->metrics.size();
  try {
    Statement q(*impl_->db,
                fmt::format("SELECT id, key, fused_ops, kernels, time_ns, time_share, counted_time_ns, dram_bytes, "
                            "dram_bandwidth_gbps, flops, arithmetic_intensity, bottleneck, bottleneck_why, tensor_flops, "
                            "fp32_flops, fp16_flops, fp64_flops, gflops, tensor_gflops, fp32_gflops FROM {} "
                            "ORDER BY id LIMIT ?1",
                            schema::group_table(by)));
    q.bind_int(1, sql_limit);
    // The group's id -> its position in out; ids are positions in the writer's order, but the reader
    // does not rely on them being dense.
    std::unordered_map<std::int64_t, std::size_t> position;
    while (q.next()) {
      GroupStats g;
      position.emplace(q.column_int(0), out.size());
      read_columns(q, 1, g.key, g.fused_ops, g.kernels, g.time_ns, g.time_share, g.counted_time_ns);
      read_derived_columns(q, 7, g.dram_bytes, g.dram_bandwidth_gbps, g.flops, g.arithmetic_intensity);
      read_columns(q, 11, g.bottleneck, g.bottleneck_why);
      read_derived_columns(q, 13, g.tensor_flops, g.fp32_flops, g.fp16_flops, g.fp64_flops, g.gflops, g.tensor_gflops,
                           g.fp32_gflops);
      g.metric.assign(n_metrics, std::numeric_limits<double>::quiet_NaN());
      out.push_back(std::move(g));
    }
    if (out.empty() || n_metrics == 0) return out;
    Statement m(*impl_->db,
                "SELECT group_id, metric_id, value FROM group_metrics WHERE group_kind = ?1 ORDER BY group_id, "
                "metric_id");
    m.bind_text(1, to_string(by));
    while (m.next()) {
      auto g = position.find(m.column_int(0));
      if (g == position.end()) continue;  // beyond the limit
      auto metric = impl_->metric_by_id.find(m.column_int(1));
      if (metric == impl_->metric_by_id.end()) continue;
      out[g->second].metric[metric->second] = m.column_double(2);
    }
  } catch (const sqlite::SqliteError& e) {
    impl_->fail(e);
  }
  return out;
}

std::size_t ProfileReader::group_count(GroupBy by) const { return impl_->row_count(schema::group_table(by)); }

std::vector<GroupStats> ProfileReader::kernel_time_by(KernelColumn column) const {
  std::vector<GroupStats> out;
  const bool phase = column == KernelColumn::kPhase;
  try {
    // Summed by the writer since schema version 5; older profiles are summed here, over every kernel.
    Statement q(*impl_->db,
                impl_->schema_version >= 5
                    ? fmt::format("SELECT key, kernels, time_ns FROM kernel_time_by WHERE grouped_by = '{}' "
                                  "ORDER BY 3 DESC, 1",
                                  phase ? "phase" : "source_line")
                    : fmt::format("SELECT COALESCE({}, ''), COUNT(*), SUM(k.duration_ns) FROM kernels k "
                                  "JOIN attribution a ON a.kernel_id = k.id WHERE k.kind = 'kernel' "
                                  "GROUP BY 1 ORDER BY 3 DESC, 1",
                                  phase ? "a.phase" : "a.source_line"));
    const std::int64_t total = impl_->coverage.kernel_time_ns;
    while (q.next()) {
      GroupStats g;
      read_columns(q, 0, g.key, g.kernels, g.time_ns);
      g.time_share = total > 0 ? static_cast<double>(g.time_ns) / static_cast<double>(total) : 0.0;
      out.push_back(std::move(g));
    }
  } catch (const sqlite::SqliteError& e) {
    impl_->fail(e);
  }
  return out;
}

std::vector<std::string> ProfileReader::match_notes() const {
  std::vector<std::string> out;
  try {
    Statement q(*impl_->db, "SELECT note FROM match_notes ORDER BY id");
    while (q.next()) out.push_back(q.column_text(0));
  } catch (const sqlite::SqliteError& e) {
    impl_->fail(e);
  }
  return out;
}

std::size_t ProfileReader::activity_count() const { return impl_->row_count("kernels"); }

void ProfileReader::for_each_kernel(const std::function<void(const ProfileKernel&)>& fn) const {
  try {
    Statement q(*impl_->db,
                "SELECT id, kind, name, device, stream, start_ns, end_ns, path, confidence, op, module, family, "
                "reason, opaque_backend, mangled, top_op FROM kernel_view ORDER BY id");
    ProfileKernel k;
    while (q.next()) {
      read_columns(q, 0, k.id, k.kind, k.name, k.device, k.stream, k.start_ns, k.end_ns, k.path);
      k.confidence = q.is_null(8) ? 0.0 : q.column_double(8);
      read_columns(q, 9, k.op, k.module, k.family, k.reason, k.opaque_backend, k.mangled, k.top_op);
      fn(k);
    }
  } catch (const sqlite::SqliteError& e) {
    impl_->fail(e);
  }
}

std::vector<ProfileNcuRow> ProfileReader::ncu_rows() const {
  std::vector<ProfileNcuRow> out;
  try {
    Statement q(*impl_->db, "SELECT row, ncu_id, matched_kernel_id FROM ncu_rows ORDER BY row");
    while (q.next()) out.push_back({q.column_int(0), q.column_int(1), q.is_null(2) ? -1 : q.column_int(2)});
  } catch (const sqlite::SqliteError& e) {
    impl_->fail(e);
  }
  return out;
}

std::vector<ProfileProcess> ProfileReader::processes() const {
  std::vector<ProfileProcess> out;
  try {
    Statement q(*impl_->db,
                "SELECT p.id, p.rank, p.pid, p.folder, p.status, p.problem, s.process_id, s.kernels, s.kernel_time_ns, "
                "s.time_vs_mean, s.compute_ns, s.communication_kernel_ns, s.communication_copy_ns, s.communication_ns, s.overlap_ns, s.exposed_communication_ns, "
                "s.cpu_communication_ns, s.cpu_overlap_ns, s.busy_ns, s.span_ns, s.phase_forward_ns, "
                "s.phase_backward_ns, s.phase_optimizer_ns, s.phase_other_ns, s.phase_communication_ns "
                "FROM processes p LEFT JOIN rank_summary s ON s.process_id = p.id ORDER BY p.id");
    while (q.next()) {
      ProfileProcess p;
      p.id = q.column_int(0);
      p.rank = q.is_null(1) ? kNoRank : q.column_int(1);
      read_columns(q, 2, p.pid, p.folder, p.status, p.problem);
      p.has_summary = !q.is_null(6);
      RankFigures& f = p.figures;
      f.process = static_cast<std::size_t>(p.id);
      if (p.has_summary) {
        read_columns(q, 7, f.kernels, f.kernel_time_ns);
        f.time_vs_mean = q.column_double(9);
        read_columns(q, 10, f.compute_ns, f.communication_kernel_ns, f.communication_copy_ns, f.communication_ns,
                     f.overlap_ns, f.exposed_communication_ns, f.cpu_communication_ns, f.cpu_overlap_ns, f.busy_ns,
                     f.span_ns);
        for (int ph = 0; ph < kPhases; ++ph) f.by_phase_ns[ph] = q.column_int(20 + ph);
      }
      out.push_back(std::move(p));
    }
  } catch (const sqlite::SqliteError& e) {
    impl_->fail(e);
  }
  return out;
}

std::vector<ProfileRankGroup> ProfileReader::rank_groups(std::string_view group_kind) const {
  std::vector<ProfileRankGroup> out;
  try {
    Statement q(*impl_->db,
                "SELECT key, process_id, kernels, time_ns FROM rank_groups WHERE group_kind = ?1 ORDER BY key, process_id");
    q.bind_text(1, group_kind);
    while (q.next()) {
      ProfileRankGroup g;
      read_columns(q, 0, g.key, g.process_id, g.kernels, g.time_ns);
      out.push_back(std::move(g));
    }
  } catch (const sqlite::SqliteError& e) {
    impl_->fail(e);
  }
  return out;
}

std::vector<ProfileCollectiveMessages> ProfileReader::collective_messages() const {
  std::vector<ProfileCollectiveMessages> out;
  if (impl_->schema_version < 4) return out;
  try {
    Statement q(*impl_->db,
                "SELECT process_id, coalesce(collective, ''), coalesce(dtype, ''), coalesce(process_group, ''), "
                "coalesce(process_group_desc, ''), coalesce(group_size, -1), count(*), sum(elements), sum(bytes) "
                "FROM collectives WHERE bytes IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 9 DESC, 2");
    while (q.next()) {
      ProfileCollectiveMessages m;
      read_columns(q, 0, m.process_id, m.collective, m.dtype, m.process_group, m.process_group_desc, m.group_size,
                   m.count, m.elements, m.bytes);
      out.push_back(std::move(m));
    }
  } catch (const sqlite::SqliteError& e) {
    impl_->fail(e);
  }
  return out;
}

sqlite3* ProfileReader::handle() const { return impl_->db->handle(); }
sqlite::Database& ProfileReader::database() const { return *impl_->db; }

}  // namespace opprof
