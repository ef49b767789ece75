// Writer of the profile database (schema: data/profile_schema.sql, docs/schema.md).
//
// Speed: one transaction; statements prepared once and rebound; the large tables inserted many rows per
// statement; strings bound without copies from the timeline's string arena; indices built after the
// rows are in; with a helper, the kernel and launch tables written during attribution and the
// attribution rows on a second connection while the ranges are written (ProfileDbWriter::State).
//
// Atomicity and durability: the database is built under "<path>.tmp-<pid>" in the same directory with
// journal_mode=OFF and synchronous=OFF. A rollback journal would only protect a file that nobody can
// see yet and that is deleted on any failure, so it would cost a second write of every page for
// nothing. Durability matters once, at the end: after COMMIT and close, the temporary file is fsync'ed,
// renamed over path (atomic on POSIX within one file system), and the directory is fsync'ed so that the
// rename itself survives a crash (util/atomic_file.hpp, which also removes the temporary on an interrupt
// and stale ones of dead processes). Readers therefore see either the old file or the complete new one.
#include "opprof/store/profile_db.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "opprof/store/schema_names.hpp"
#include "opprof/store/sqlite.hpp"
#include "opprof/util/atomic_file.hpp"
#include "opprof/util/embedded.hpp"
#include "opprof/util/enum_names.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/interrupt.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

using sqlite::Statement;

// Page size of the file: larger pages mean fewer B-tree splits while loading and fewer reads when a
// report scans a whole table; 16 KiB stays cheap for the few point lookups reports make.
constexpr int kPageSize = 16384;
// Written to the SQLite header so that tools (`file`, the reader) can tell an opprof profile at a glance.
// Rows per INSERT statement for the large tables (see Writer::insert_rows).
constexpr std::size_t kBatchRows = 64;
// A background write's attribution rows go into at most this many part databases. Past two, more parts
// gain little (the copy of one part overlaps the writing of the next); each is a temporary file that an
// interrupt removes, of which the process keeps a fixed number (util/interrupt.cpp).
constexpr std::size_t kMaxAttributionParts = 4;

// Part 0 keeps the name of the single part databases of earlier versions, whose leftovers it removes.
std::string attribution_part_name(const std::string& profile, std::size_t part) {
  return part == 0 ? profile + ".attribution" : fmt::format("{}.attribution-{}", profile, part);
}

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::int64_t as_i64(std::uint64_t v) { return static_cast<std::int64_t>(v); }

// Every column of a table must have one entry per row; a reader that filled one column short would
// otherwise make the writer read past a vector's end.
template <typename... Columns>
void check_columns(const char* table, std::size_t rows, const Columns&... columns) {
  std::size_t sizes[] = {columns.size()...};
  for (std::size_t s : sizes)
    if (s != rows)
      throw OutputError(fmt::format("{}: a column has {} entries where {} rows are expected", table, s, rows));
}

// The tables the timeline alone fills (kernels, launches), which may be written before attribution.
void validate_timeline_tables(const Timeline& tl) {
  const KernelTable& k = tl.kernels;
  check_columns("kernels", k.size(), k.kind, k.name, k.mangled, k.pid, k.device, k.context, k.stream, k.start_ns,
                k.end_ns, k.grid, k.block, k.correlation, k.external_id, k.graph_id, k.graph_node,
                k.registers_per_thread, k.shared_mem_bytes, k.bytes);
  const LaunchTable& l = tl.launches;
  check_columns("launches", l.size(), l.api, l.pid, l.tid, l.cpu_start_ns, l.cpu_end_ns, l.correlation, l.external_id);
}

void validate_inputs(const ProfileInputs& in) {
  if (!in.timeline || !in.attribution || !in.coverage)
    throw OutputError("a timeline, its attribution and its coverage are required");
  const Timeline& tl = *in.timeline;
  const KernelTable& k = tl.kernels;
  const RangeTable& r = tl.ranges;
  check_columns("ranges", r.size(), r.kind, r.track, r.text, r.domain, r.start_ns, r.end_ns, r.external_id, r.depth);
  for (std::uint32_t t : r.track)
    if (t >= r.tracks().size())
      throw OutputError(fmt::format("ranges: track {} of {} does not exist", t, r.tracks().size()));
  const AttributionTable& a = *in.attribution;
  check_columns("attribution", k.size(), a.path, a.confidence, a.op_range, a.op, a.top_op, a.module, a.module_source,
                a.fused_ops, a.fx_nodes, a.provenance_handle, a.source_line, a.family, a.reason, a.opaque,
                a.opaque_backend, a.phase, a.forward_op);
  if (const KernelMetrics* km = in.kernel_metrics) {
    if (km->kernels != k.size() || km->values.size() != km->kernels * km->metrics.size())
      throw OutputError(fmt::format(
          "kernel metrics hold {} values for {} kernels x {} metrics, the timeline "
          "has {} kernels",
          km->values.size(), km->kernels, km->metrics.size(), k.size()));
    if (km->units.size() != km->metrics.size())
      throw OutputError("kernel metrics have a different number of units and metrics");
  }
  if (const NcuTable* ncu = in.ncu) {
    check_columns("ncu rows", ncu->rows(), ncu->id, ncu->pid, ncu->kernel_name, ncu->context, ncu->stream, ncu->device,
                  ncu->grid, ncu->block, ncu->line);
    if (in.match && (in.match->kernel_for_ncu_row.size() != ncu->rows() ||
                     in.match->launch_config_kernel_for_ncu_row.size() != ncu->rows()))
      throw OutputError(fmt::format("the ncu match covers {} rows ({} with launch configurations), the ncu table has {}",
                                    in.match->kernel_for_ncu_row.size(),
                                    in.match->launch_config_kernel_for_ncu_row.size(), ncu->rows()));
  }
  if (in.aggregates) {
    std::size_t metrics = in.kernel_metrics ? in.kernel_metrics->metrics.size() : 0;
    for (const auto* groups : {&in.aggregates->operators, &in.aggregates->modules, &in.aggregates->families})
      for (const GroupStats& g : *groups)
        if (!g.metric.empty() && g.metric.size() != metrics)
          throw OutputError(fmt::format(
              "group '{}' has {} aggregated metrics, the profile has {} metrics", g.key,
              g.metric.size(), metrics));
  }
}

class Writer {
 public:
  // strings: the timeline's strings as a snapshot when the timeline's own tables are written while the
  // timeline is attributed (which interns strings meanwhile); null to read the string table itself.
  Writer(sqlite::Database& db, const ProfileInputs& in, const std::vector<std::string_view>* strings = nullptr)
      : db_(db),
        in_(in),
        tl_(*in.timeline),
        strings_(strings),
        max_parameters_(static_cast<std::size_t>(sqlite3_limit(db.handle(), SQLITE_LIMIT_VARIABLE_NUMBER, -1))),
        string_id_of_(strings ? strings->size() : tl_.strings.size(), -1) {}
  // A writer into another database that numbers strings as numbering has so far.
  Writer(sqlite::Database& db, const Writer& numbering)
      : db_(db),
        in_(numbering.in_),
        tl_(numbering.tl_),
        strings_(numbering.strings_),
        max_parameters_(numbering.max_parameters_),
        string_texts_(numbering.string_texts_),
        string_id_of_(numbering.string_id_of_),
        name_ids_(numbering.name_ids_),
        name_text_ids_(numbering.name_text_ids_) {}

  // The tables that only the timeline fills.
  void write_timeline_tables() {
    write_kernels();
    write_launches();
  }

  // The rest, once the timeline is attributed, on this connection alone.
  void write_attributed_tables() {
    write_attribution(0, in_.attribution->size());
    write_meta_and_ranges();
    write_remaining_tables();
  }

  // The same in parts, so that another connection can write the attribution rows meanwhile (into
  // databases of their own, copied in afterwards): number_attribution_strings() on this writer, then
  // writers copied from this one after that run write_attribution(); this one goes on with the rest.
  // Either way the strings are numbered in the same order: attribution's first, then the ranges'.
  void number_attribution_strings() {
    NumberingOnly numbering;
    for (std::size_t i = 0; i < in_.attribution->size(); ++i) bind_attribution_row(numbering, 1, i);
  }
  // The attribution rows of kernels [begin, end).
  void write_attribution(std::size_t begin, std::size_t end) {
    insert_rows("attribution_rows",
                "kernel_id, path_id, confidence, op_range_id, op_id, top_op_id, module_id, module_source_id, "
                "fused_ops_id, fx_nodes_id, provenance_handle_id, source_line_id, family_id, reason_id, opaque, "
                "opaque_backend_id, phase_id, forward_op_id",
                18, end - begin,
                [&](Statement& s, int p, std::size_t i) { bind_attribution_row(s, p, begin + i); });
  }
  void write_meta_and_ranges() {
    write_meta();
    write_ranges();
  }
  void write_remaining_tables() {
    write_strings();
    write_metrics();
    write_ncu_rows();
    if (in_.aggregates) {
      write_groups(GroupBy::kOperator, in_.aggregates->operators);
      write_groups(GroupBy::kModule, in_.aggregates->modules);
      write_groups(GroupBy::kFamily, in_.aggregates->families);
    }
    write_coverage();
    write_kernel_time_by();
    write_match_notes();
    write_anomalies();
    write_dedup();
    if (in_.job) write_job(*in_.job);
    db_.exec(embedded_file("profile_indices.sql"));
  }

 private:
  // The text of an interned string, checked against the string table: an id from another timeline
  // would otherwise read outside the table.
  std::string_view text(StrId id, std::string_view table, std::size_t row, std::string_view column) const {
    const std::size_t strings = strings_ ? strings_->size() : tl_.strings.size();
    if (id >= strings)
      throw OutputError(fmt::format(
          "{} row {}: {} has string id {}, but the timeline's string table has {} "
          "strings",
          table, row, column, id, strings));
    return strings_ ? (*strings_)[id] : tl_.str(id);
  }
  // Binds an interned string, or NULL for kNoString (unknown).
  void bind_str(Statement& s, int i, StrId id, std::string_view table, std::size_t row, std::string_view column) {
    if (id == kNoString)
      s.bind_null(i);
    else
      s.bind_text(i, text(id, table, row, column));
  }
  // Binds an interned string that the schema declares NOT NULL: unknown becomes "".
  void bind_str_required(Statement& s, int i, StrId id, std::string_view table, std::size_t row,
                         std::string_view column) {
    s.bind_text(i, id == kNoString ? std::string_view() : text(id, table, row, column));
  }
  // Binds the strings.id of an interned string, or NULL for kNoString (unknown). strings.id numbers the
  // strings in order of first use, so the database does not depend on what else the timeline interned.
  template <class S>
  void bind_string_id(S& s, int i, StrId id, std::string_view table, std::size_t row, std::string_view column) {
    if (id == kNoString) {
      s.bind_null(i);
      return;
    }
    s.bind_int(i, string_id(id, text(id, table, row, column)));  // text() checks the id against the table
  }
  std::int64_t string_id(StrId id, std::string_view text) {
    std::int64_t& dense = string_id_of_[id];
    if (dense < 0) {
      dense = static_cast<std::int64_t>(string_texts_.size());
      string_texts_.push_back(text);
    }
    return dense;
  }
  // As bind_string_id for a column the schema declares NOT NULL: unknown becomes "".
  void bind_string_id_required(Statement& s, int i, StrId id, std::string_view table, std::size_t row,
                               std::string_view column) {
    static constexpr const char* kEmpty = "";
    if (id == kNoString)
      s.bind_int(i, name_id(kEmpty));
    else
      bind_string_id(s, i, id, table, row, column);
  }
  // The strings.id of an enumeration's name: the timeline's string of that text when it has one, so that
  // every text is in strings once. Cached by the name's address (a pointer into its name table, so rows
  // need no hashing of text); two tables' equal names ("none") may or may not share an address, so a miss
  // looks the text up.
  std::int64_t name_id(const char* name) {
    auto [it, inserted] = name_ids_.try_emplace(name, 0);
    if (inserted) {
      auto [by_text, new_text] = name_text_ids_.try_emplace(std::string_view(name), 0);
      if (new_text) {
        const StrId same = strings_ ? kNoString : tl_.strings.find(name);
        if (same != kNoString && same < string_id_of_.size()) {
          by_text->second = string_id(same, tl_.str(same));
        } else {
          by_text->second = static_cast<std::int64_t>(string_texts_.size());
          string_texts_.push_back(name);
        }
      }
      it->second = by_text->second;
    }
    return it->second;
  }
  template <std::size_t N, typename Enum>
  std::int64_t name_id(const std::array<const char*, N>& names, Enum value) {
    return name_id(enum_name(names, value));
  }
  static void bind_optional_id(Statement& s, int i, std::uint64_t v) {
    if (v == 0)
      s.bind_null(i);
    else
      s.bind_int(i, as_i64(v));
  }
  static void bind_dim(Statement& s, int first, const Dim3& d) {
    if (!d.known()) {
      for (int j = 0; j < 3; ++j) s.bind_null(first + j);
      return;
    }
    s.bind_int(first, d.x);
    s.bind_int(first + 1, d.y);
    s.bind_int(first + 2, d.z);
  }
  // Derived group figures use -1 for unknown; the database uses NULL, which SQL aggregates skip.
  static void bind_derived(Statement& s, int i, double v) {
    if (v < 0 || !std::isfinite(v))
      s.bind_null(i);
    else
      s.bind_double(i, v);
  }

  void put_meta(Statement& s, std::string_view key, std::string_view value) {
    s.bind_text(1, key);
    s.bind_text(2, value);
    s.run();
  }

  void write_meta() {
    Statement s(db_, "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)");
    // Defaults first, so that facts the caller knows better (a fixed created_at in a test) replace them.
    put_meta(s, "opprof_version", OPPROF_VERSION);
    put_meta(s, "created_at", utc_now_iso8601());
    for (const auto& [key, value] : in_.metadata) put_meta(s, key, value);
    // The timeline's own facts get a prefix: its "source" is not the profile's.
    for (const auto& [key, value] : tl_.metadata) put_meta(s, "timeline." + key, value);
    if (in_.ncu) {
      put_meta(s, "ncu.path", in_.ncu->path);
      put_meta(s, "ncu.rows", std::to_string(in_.ncu->rows()));
    }
    if (in_.match) put_meta(s, "ncu.used_mangled_names", in_.match->used_mangled_names ? "true" : "false");
    // Last, so nothing can replace it.
    put_meta(s, "schema_version", std::to_string(kProfileSchemaVersion));
    if (const DedupPlan* p = in_.dedup) {
      put_meta(s, "dedup.mode", to_string(p->mode));
      put_meta(s, "dedup.selection", to_string(p->selection));
      put_meta(s, "dedup.verify", std::to_string(p->verify));
      put_meta(s, "dedup.classes", std::to_string(p->classes.size()));
      put_meta(s, "dedup.instances", std::to_string(p->instances));
      put_meta(s, "dedup.instances_in_full", std::to_string(p->instances_in_full));
      put_meta(s, "dedup.kernels", std::to_string(p->kernels));
      put_meta(s, "dedup.kernels_replayed", std::to_string(p->kernels_replayed));
      put_meta(s, "dedup.kernels_planned_propagated", std::to_string(p->kernels_propagated));
      if (p->launch_count > 0) put_meta(s, "dedup.launch_count", std::to_string(p->launch_count));
      put_meta(s, "dedup.kernels_other_work", std::to_string(p->kernels_other_work));
      if (in_.propagation) {
        put_meta(s, "dedup.kernels_propagated", std::to_string(in_.propagation->propagated));
        put_meta(s, "dedup.kernels_without_source", std::to_string(in_.propagation->without_source));
      }
      for (std::size_t i = 0; i < p->notes.size(); ++i) put_meta(s, fmt::format("dedup.note.{}", i), p->notes[i]);
    }
  }

  // Inserts the rows of one table in batches: one statement carries up to kBatchRows rows
  // ("VALUES (..), (..), .."), which spreads SQLite's per-statement cost (opening a cursor, checking the
  // transaction, resetting) over many rows. bind_row(statement, first_parameter, row) binds one row.
  template <typename BindRow>
  void insert_rows(std::string_view table, std::string_view columns, int n_columns, std::size_t rows,
                   BindRow&& bind_row) {
    const std::size_t per_batch =
        std::max<std::size_t>(1, std::min<std::size_t>(kBatchRows, max_parameters_ / n_columns));
    std::unique_ptr<Statement> full, tail;
    max_rowid_ = kNoRowid;  // the table is empty
    for (std::size_t start = 0; start < rows; start += per_batch) {
      const std::size_t n = std::min(per_batch, rows - start);
      std::unique_ptr<Statement>& s = n == per_batch ? full : tail;
      if (!s) s = std::make_unique<Statement>(db_, insert_sql(table, columns, n_columns, n));
      for (std::size_t r = 0; r < n; ++r) bind_row(*s, static_cast<int>(r) * n_columns + 1, start + r);
      s->run();
    }
  }

  // Binds the INTEGER PRIMARY KEY of a row of the table insert_rows is writing. Where the id is one more
  // than the largest written so far (rows in ascending order), it binds NULL: SQLite then numbers the row
  // max(rowid) + 1, the same id, and appends it at the B-tree's end instead of searching the tree from its
  // root for an explicit id (a sixth of the time of a 23-column insert, measured).
  template <class S>
  void bind_rowid(S& s, int i, std::int64_t id) {
    if (max_rowid_ != kNoRowid && id == max_rowid_ + 1)
      s.bind_null(i);
    else
      s.bind_int(i, id);
    max_rowid_ = std::max(max_rowid_, id);
  }

  static std::string insert_sql(std::string_view table, std::string_view columns, int n_columns, std::size_t rows) {
    std::string tuple = "(?";
    for (int c = 1; c < n_columns; ++c) tuple += ",?";
    tuple += ')';
    std::string sql = fmt::format("INSERT INTO {} ({}) VALUES ", table, columns);
    sql.reserve(sql.size() + rows * (tuple.size() + 1));
    for (std::size_t r = 0; r < rows; ++r) {
      if (r) sql += ',';
      sql += tuple;
    }
    return sql;
  }

  void write_kernels() {
    const KernelTable& k = tl_.kernels;
    // Distinct (name, mangled) pairs, numbered in order of first appearance.
    std::unordered_map<std::uint64_t, std::int64_t> name_ids;
    Statement names(db_, "INSERT INTO kernel_names (id, name, mangled) VALUES (?1, ?2, ?3)");
    std::uint64_t last_key = std::numeric_limits<std::uint64_t>::max();
    std::int64_t last_id = -1;
    auto name_id = [&](std::size_t i) {
      std::uint64_t key = (std::uint64_t{k.name[i]} << 32) | k.mangled[i];
      if (key == last_key) return last_id;  // consecutive launches of one kernel are common
      auto [it, inserted] = name_ids.try_emplace(key, static_cast<std::int64_t>(name_ids.size()));
      if (inserted) {
        names.bind_int(1, it->second);
        bind_str_required(names, 2, k.name[i], "kernels", i, "name");
        bind_str(names, 3, k.mangled[i], "kernels", i, "mangled");
        names.run();
      }
      last_key = key;
      last_id = it->second;
      return last_id;
    };
    insert_rows("kernels",
                "id, kind, name_id, pid, device, context, stream, start_ns, end_ns, duration_ns, grid_x, grid_y, "
                "grid_z, block_x, block_y, block_z, correlation, external_id, graph_id, graph_node, "
                "registers_per_thread, shared_mem_bytes, bytes",
                23, k.size(), [&](Statement& s, int p, std::size_t i) {
                  bind_rowid(s, p, static_cast<std::int64_t>(i));
                  s.bind_text(p + 1, to_string(k.kind[i]));
                  s.bind_int(p + 2, name_id(i));
                  s.bind_int(p + 3, k.pid[i]);
                  s.bind_int(p + 4, k.device[i]);
                  s.bind_int(p + 5, k.context[i]);
                  s.bind_int(p + 6, k.stream[i]);
                  s.bind_int(p + 7, k.start_ns[i]);
                  s.bind_int(p + 8, k.end_ns[i]);
                  s.bind_int(p + 9, k.duration_ns(i));
                  bind_dim(s, p + 10, k.grid[i]);
                  bind_dim(s, p + 13, k.block[i]);
                  bind_optional_id(s, p + 16, k.correlation[i]);
                  bind_optional_id(s, p + 17, k.external_id[i]);
                  bind_optional_id(s, p + 18, k.graph_id[i]);
                  bind_optional_id(s, p + 19, k.graph_node[i]);
                  bind_optional_id(s, p + 20, k.registers_per_thread[i]);
                  s.bind_int(p + 21, k.shared_mem_bytes[i]);
                  s.bind_int(p + 22, as_i64(k.bytes[i]));
                });
  }

  void write_launches() {
    const LaunchTable& l = tl_.launches;
    insert_rows("launches", "id, api, pid, tid, cpu_start_ns, cpu_end_ns, correlation, external_id", 8, l.size(),
                [&](Statement& s, int p, std::size_t i) {
                  bind_rowid(s, p, static_cast<std::int64_t>(i));
                  bind_str_required(s, p + 1, l.api[i], "launches", i, "api");
                  s.bind_int(p + 2, l.pid[i]);
                  s.bind_int(p + 3, as_i64(l.tid[i]));
                  s.bind_int(p + 4, l.cpu_start_ns[i]);
                  s.bind_int(p + 5, l.cpu_end_ns[i]);
                  bind_optional_id(s, p + 6, l.correlation[i]);
                  bind_optional_id(s, p + 7, l.external_id[i]);
                });
  }

  void write_ranges() {
    const RangeTable& r = tl_.ranges;
    const std::vector<std::uint8_t>* keep = in_.operator_ranges_to_keep;
    if (keep && keep->size() != r.size())
      throw OutputError(fmt::format("operator_ranges_to_keep has {} entries for {} ranges", keep->size(), r.size()));
    std::vector<std::uint32_t> rows;
    rows.reserve(r.size());
    for (std::size_t i = 0; i < r.size(); ++i)
      if (!keep || r.kind[i] != RangeKind::kOperator || (*keep)[i]) rows.push_back(static_cast<std::uint32_t>(i));
    insert_rows("range_rows",
                "id, kind_id, scope_id, text_id, domain_id, pid, owner, device, start_ns, end_ns, depth, external_id", 12,
                rows.size(), [&](Statement& s, int p, std::size_t row) {
                  const std::size_t i = rows[row];
                  bind_rowid(s, p, static_cast<std::int64_t>(i));
                  s.bind_int(p + 1, name_id(kRangeKindNames, r.kind[i]));
                  s.bind_int(p + 2, name_id(kRangeScopeNames, r.scope(i)));
                  bind_string_id_required(s, p + 3, r.text[i], "ranges", i, "text");
                  bind_string_id(s, p + 4, r.domain[i], "ranges", i, "domain");
                  s.bind_int(p + 5, r.pid(i));
                  s.bind_int(p + 6, as_i64(r.owner(i)));
                  s.bind_int(p + 7, r.device(i));
                  s.bind_int(p + 8, r.start_ns[i]);
                  s.bind_int(p + 9, r.end_ns[i]);
                  if (r.depth[i] < 0)
                    s.bind_null(p + 10);
                  else
                    s.bind_int(p + 10, r.depth[i]);
                  bind_optional_id(s, p + 11, r.external_id[i]);
                });
  }

  // What a row binder binds to when only its strings' numbering is wanted.
  struct NumberingOnly {
    void bind_int(int, std::int64_t) {}
    void bind_double(int, double) {}
    void bind_text(int, std::string_view) {}
    void bind_null(int) {}
  };

  template <class S>
  void bind_attribution_row(S& s, int p, std::size_t i) {
    const AttributionTable& a = *in_.attribution;
    const std::size_t ranges = tl_.ranges.size();
    bind_rowid(s, p, static_cast<std::int64_t>(i));
    s.bind_int(p + 1, name_id(kAttributionPathNames, a.path[i]));
    // A NaN confidence binds NULL and fails the NOT NULL constraint: it is a bug upstream.
    s.bind_double(p + 2, static_cast<double>(a.confidence[i]));
    if (a.op_range[i] == kNoIndex) {
      s.bind_null(p + 3);
    } else if (a.op_range[i] >= ranges) {
      throw OutputError(fmt::format(
          "attribution row {}: operator range {} is not in the timeline ({} ranges)", i,
          a.op_range[i], ranges));
    } else {
      s.bind_int(p + 3, a.op_range[i]);
    }
    bind_string_id(s, p + 4, a.op[i], "attribution", i, "op");
    bind_string_id(s, p + 5, a.top_op[i], "attribution", i, "top_op");
    bind_string_id(s, p + 6, a.module[i], "attribution", i, "module");
    s.bind_int(p + 7, name_id(kModuleSourceNames, a.module_source[i]));
    bind_string_id(s, p + 8, a.fused_ops[i], "attribution", i, "fused_ops");
    bind_string_id(s, p + 9, a.fx_nodes[i], "attribution", i, "fx_nodes");
    bind_string_id(s, p + 10, a.provenance_handle[i], "attribution", i, "provenance_handle");
    bind_string_id(s, p + 11, a.source_line[i], "attribution", i, "source_line");
    bind_string_id(s, p + 12, a.family[i], "attribution", i, "family");
    bind_string_id(s, p + 13, a.reason[i], "attribution", i, "reason");
    s.bind_int(p + 14, a.opaque[i] ? 1 : 0);
    bind_string_id(s, p + 15, a.opaque_backend[i], "attribution", i, "opaque_backend");
    s.bind_int(p + 16, name_id(kPhaseNames, a.phase[i]));
    bind_string_id(s, p + 17, a.forward_op[i], "attribution", i, "forward_op");
  }

  // The strings table: every text range_rows and attribution_rows refer to, by id.
  void write_strings() {
    insert_rows("strings", "id, text", 2, string_texts_.size(), [&](Statement& s, int p, std::size_t i) {
      bind_rowid(s, p, static_cast<std::int64_t>(i));
      s.bind_text(p + 1, string_texts_[i]);
    });
  }

  void write_metrics() {
    const KernelMetrics* km = in_.kernel_metrics;
    if (!km) return;
    Statement s(db_,
                "INSERT INTO metrics (id, name, unit, aggregate, axis, reason, present, weight) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    const std::size_t present = km->metrics.size();
    for (std::size_t m = 0; m < present; ++m) {
      const MetricSpec& spec = km->metrics[m];
      s.bind_int(1, static_cast<std::int64_t>(m));
      s.bind_text(2, spec.name);
      s.bind_text(3, km->units[m]);
      s.bind_text(4, to_string(spec.aggregate));
      s.bind_text(5, spec.axis);
      s.bind_text(6, spec.reason);
      s.bind_int(7, 1);
      if (spec.weight.empty())
        s.bind_null(8);
      else
        s.bind_text(8, spec.weight);
      s.run();
    }
    for (std::size_t j = 0; j < km->missing.size(); ++j) {
      s.bind_int(1, static_cast<std::int64_t>(present + j));
      s.bind_text(2, km->missing[j]);
      for (int c = 3; c <= 6; ++c) s.bind_null(c);
      s.bind_int(7, 0);
      s.bind_null(8);
      s.run();
    }
    // Only values present: kernels without an ncu row, and metrics a row lacks, have no row here.
    std::vector<std::size_t> cells;
    for (std::size_t c = 0; c < km->values.size(); ++c)
      if (std::isfinite(km->values[c])) cells.push_back(c);
    insert_rows("kernel_metrics", "kernel_id, metric_id, value, counters_from", 4, cells.size(),
                [&](Statement& v, int p, std::size_t i) {
                  const std::size_t kernel = cells[i] / present;
                  v.bind_int(p, static_cast<std::int64_t>(kernel));
                  v.bind_int(p + 1, static_cast<std::int64_t>(cells[i] % present));
                  v.bind_double(p + 2, km->values[cells[i]]);
                  const std::uint32_t from = km->counters_from.empty() ? kNoIndex : km->counters_from[kernel];
                  if (from == kNoIndex)
                    v.bind_null(p + 3);
                  else
                    v.bind_int(p + 3, from);
                });
  }

  void write_ncu_rows() {
    const NcuTable* ncu = in_.ncu;
    if (!ncu) return;
    Statement s(db_,
                "INSERT INTO ncu_rows (row, ncu_id, pid, context, stream, device, kernel_name, grid_x, grid_y, grid_z, "
                "block_x, block_y, block_z, csv_line, matched_kernel_id, launch_config_kernel_id) VALUES (?1, ?2, ?3, ?4, "
                "?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
    for (std::size_t r = 0; r < ncu->rows(); ++r) {
      s.bind_int(1, static_cast<std::int64_t>(r));
      s.bind_int(2, as_i64(ncu->id[r]));
      s.bind_int(3, ncu->pid[r]);
      s.bind_int(4, ncu->context[r]);
      s.bind_int(5, ncu->stream[r]);
      s.bind_int(6, ncu->device[r]);
      s.bind_text(7, ncu->kernel_name[r]);
      bind_dim(s, 8, ncu->grid[r]);
      bind_dim(s, 11, ncu->block[r]);
      if (ncu->line[r] == 0)
        s.bind_null(14);
      else
        s.bind_int(14, as_i64(ncu->line[r]));
      std::uint32_t kernel = in_.match ? in_.match->kernel_for_ncu_row[r] : kNoIndex;
      if (kernel == kNoIndex)
        s.bind_null(15);
      else
        s.bind_int(15, kernel);
      std::uint32_t config_kernel = in_.match ? in_.match->launch_config_kernel_for_ncu_row[r] : kNoIndex;
      if (config_kernel == kNoIndex)
        s.bind_null(16);
      else
        s.bind_int(16, config_kernel);
      s.run();
    }
  }

  void write_groups(GroupBy by, const std::vector<GroupStats>& groups) {
    Statement s(db_, fmt::format("INSERT INTO {} (id, key, fused_ops, kernels, time_ns, time_share, counted_time_ns, "
                                 "dram_bytes, dram_bandwidth_gbps, flops, arithmetic_intensity, bottleneck, "
                                 "bottleneck_why, tensor_flops, fp32_flops, fp16_flops, fp64_flops, gflops, "
                                 "tensor_gflops, fp32_gflops) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                                 "?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)",
                                 schema::group_table(by)));
    Statement gm(db_,
                 "INSERT INTO group_metrics (group_kind, group_id, key, metric_id, metric, value) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    const std::string_view kind = to_string(by);
    for (std::size_t i = 0; i < groups.size(); ++i) {
      const GroupStats& g = groups[i];
      s.bind_int(1, static_cast<std::int64_t>(i));
      s.bind_text(2, g.key);
      if (g.fused_ops.empty())
        s.bind_null(3);
      else
        s.bind_text(3, g.fused_ops);
      s.bind_int(4, as_i64(g.kernels));
      s.bind_int(5, g.time_ns);
      s.bind_double(6, g.time_share);
      s.bind_int(7, g.counted_time_ns);
      bind_derived(s, 8, g.dram_bytes);
      bind_derived(s, 9, g.dram_bandwidth_gbps);
      bind_derived(s, 10, g.flops);
      bind_derived(s, 11, g.arithmetic_intensity);
      if (g.bottleneck.empty())
        s.bind_null(12);
      else
        s.bind_text(12, g.bottleneck);
      if (g.bottleneck_why.empty())
        s.bind_null(13);
      else
        s.bind_text(13, g.bottleneck_why);
      bind_derived(s, 14, g.tensor_flops);
      bind_derived(s, 15, g.fp32_flops);
      bind_derived(s, 16, g.fp16_flops);
      bind_derived(s, 17, g.fp64_flops);
      bind_derived(s, 18, g.gflops);
      bind_derived(s, 19, g.tensor_gflops);
      bind_derived(s, 20, g.fp32_gflops);
      s.run();
      for (std::size_t m = 0; m < g.metric.size(); ++m) {
        if (!std::isfinite(g.metric[m])) continue;
        gm.bind_text(1, kind);
        gm.bind_int(2, static_cast<std::int64_t>(i));
        gm.bind_text(3, g.key);
        gm.bind_int(4, static_cast<std::int64_t>(m));
        gm.bind_text(5, in_.kernel_metrics->metrics[m].name);
        gm.bind_double(6, g.metric[m]);
        gm.run();
      }
    }
  }

  void write_coverage() {
    const Coverage& c = *in_.coverage;
    Statement s(db_,
                "INSERT INTO coverage (kernel_time_ns, kernels, attributed_ns, module_attributed_ns, opaque_ns, "
                "path_correlation_ns, path_enclosure_ns, path_fusion_ns, path_none_ns, has_ncu, ncu_rows, ncu_matched, "
                "ncu_unmatched_rows, ncu_unmatched_kernels, ncu_grid_block_disagreements, ncu_launch_config_differs, "
                "ncu_strict_launch_config, phase_forward_ns, phase_backward_ns, phase_optimizer_ns, phase_other_ns, "
                "phase_communication_ns) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)");
    s.bind_int(1, c.kernel_time_ns);
    s.bind_int(2, as_i64(c.kernels));
    s.bind_int(3, c.attributed_ns);
    s.bind_int(4, c.module_attributed_ns);
    s.bind_int(5, c.opaque_ns);
    s.bind_int(6, c.by_path_ns[static_cast<int>(AttributionPath::kCorrelation)]);
    s.bind_int(7, c.by_path_ns[static_cast<int>(AttributionPath::kEnclosure)]);
    s.bind_int(8, c.by_path_ns[static_cast<int>(AttributionPath::kFusion)]);
    s.bind_int(9, c.by_path_ns[static_cast<int>(AttributionPath::kNone)]);
    s.bind_int(10, c.has_ncu ? 1 : 0);
    s.bind_int(11, static_cast<std::int64_t>(c.ncu_rows));
    s.bind_int(12, static_cast<std::int64_t>(c.ncu_matched));
    s.bind_int(13, static_cast<std::int64_t>(c.ncu_unmatched_rows));
    s.bind_int(14, static_cast<std::int64_t>(c.ncu_unmatched_kernels));
    s.bind_int(15, static_cast<std::int64_t>(c.ncu_grid_block_disagreements));
    s.bind_int(16, static_cast<std::int64_t>(c.ncu_launch_config_differs));
    s.bind_int(17, c.ncu_strict_launch_config ? 1 : 0);
    for (int ph = 0; ph < kPhases; ++ph) s.bind_int(18 + ph, c.by_phase_ns[ph]);
    s.run();

    Statement u(db_, "INSERT INTO unattributed (id, family, reason, kernels, time_ns) VALUES (?1, ?2, ?3, ?4, ?5)");
    for (std::size_t i = 0; i < c.unattributed.size(); ++i) {
      const UnattributedGroup& g = c.unattributed[i];
      u.bind_int(1, static_cast<std::int64_t>(i));
      u.bind_text(2, g.family);
      u.bind_text(3, g.reason);
      u.bind_int(4, as_i64(g.kernels));
      u.bind_int(5, g.time_ns);
      u.run();
    }
    Statement o(db_, "INSERT INTO opaque_backends (id, backend, time_ns) VALUES (?1, ?2, ?3)");
    for (std::size_t i = 0; i < c.opaque_backends.size(); ++i) {
      o.bind_int(1, static_cast<std::int64_t>(i));
      o.bind_text(2, c.opaque_backends[i].first);
      o.bind_int(3, c.opaque_backends[i].second);
      o.run();
    }
  }

  // kernel_time_by: kernel time by phase and by source line, summed here once rather than by every report.
  void write_kernel_time_by() {
    const KernelTable& k = tl_.kernels;
    const AttributionTable& a = *in_.attribution;
    struct Sum {
      std::int64_t kernels = 0, time_ns = 0;
    };
    std::array<Sum, kPhases> by_phase{};
    std::unordered_map<StrId, Sum> by_line;
    for (std::size_t i = 0; i < k.size(); ++i) {
      if (k.kind[i] != ActivityKind::kKernel) continue;
      const std::int64_t d = k.duration_ns(i);
      Sum& p = by_phase[static_cast<std::size_t>(a.phase[i])];
      Sum& l = by_line[a.source_line[i]];
      p.kernels += 1;
      p.time_ns += d;
      l.kernels += 1;
      l.time_ns += d;
    }
    Statement s(db_, "INSERT INTO kernel_time_by (grouped_by, key, kernels, time_ns) VALUES (?1, ?2, ?3, ?4)");
    auto put = [&](std::string_view by, std::string_view key, const Sum& sum) {
      s.bind_text(1, by);
      s.bind_text(2, key);
      s.bind_int(3, sum.kernels);
      s.bind_int(4, sum.time_ns);
      s.run();
    };
    for (std::size_t ph = 0; ph < by_phase.size(); ++ph)
      if (by_phase[ph].kernels > 0) put("phase", to_string(static_cast<Phase>(ph)), by_phase[ph]);
    // Lines that differ only in being unknown and empty are one key, as the schema's '' says. Every id was
    // checked against the string table, with its row, when attribution_rows was written.
    std::unordered_map<std::string_view, Sum> by_text;
    for (const auto& [line, sum] : by_line) {
      Sum& t = by_text[line == kNoString ? std::string_view() : tl_.str(line)];
      t.kernels += sum.kernels;
      t.time_ns += sum.time_ns;
    }
    for (const auto& [line, sum] : by_text) put("source_line", line, sum);
  }

  void write_match_notes() {
    if (!in_.match) return;
    Statement s(db_, "INSERT INTO match_notes (id, note) VALUES (?1, ?2)");
    for (std::size_t i = 0; i < in_.match->notes.size(); ++i) {
      s.bind_int(1, static_cast<std::int64_t>(i));
      s.bind_text(2, in_.match->notes[i]);
      s.run();
    }
  }

  void write_anomalies() {
    if (!in_.anomalies) return;
    Statement s(db_, "INSERT INTO anomalies (kind, count, detail) VALUES (?1, ?2, ?3)");
    for (std::size_t k = 0; k < kAnomalyKindNames.size(); ++k) {
      const Anomalies::Entry& e = (*in_.anomalies)[static_cast<AnomalyKind>(k)];
      if (e.count == 0) continue;
      const std::string details = join(e.details, "\n");  // bound, not copied: alive until run()
      s.bind_text(1, kAnomalyKindNames[k]);
      s.bind_int(2, as_i64(e.count));
      s.bind_text(3, details);
      s.run();
    }
  }

  void write_dedup() {
    if (const DedupPlan* plan = in_.dedup) {
      Statement s(db_,
                  "INSERT INTO dedup_instances (class_id, class_type, signature, instance, representative, kernels, "
                  "replayed_in_full, verify, reason) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
      for (std::size_t c = 0; c < plan->classes.size(); ++c) {
        const DedupClass& cls = plan->classes[c];
        for (const DedupInstance& i : cls.instances) {
          s.bind_int(1, as_i64(c));
          s.bind_text(2, cls.type);
          s.bind_text(3, cls.signature);
          s.bind_text(4, i.path);
          s.bind_int(5, i.representative ? 1 : 0);
          s.bind_int(6, as_i64(i.kernels.size()));
          s.bind_int(7, i.replayed_in_full ? 1 : 0);
          s.bind_int(8, i.verify ? 1 : 0);
          if (i.reason.empty())
            s.bind_null(9);
          else
            s.bind_text(9, i.reason);
          s.run();
        }
      }
    }
    if (const auto* deviations = in_.dedup_deviation) {
      Statement s(db_, "INSERT INTO dedup_verify (metric, pairs, median_rel, max_rel) VALUES (?1, ?2, ?3, ?4)");
      for (const MetricDeviation& d : *deviations) {
        if (d.pairs == 0) continue;
        s.bind_text(1, d.metric);
        s.bind_int(2, as_i64(d.pairs));
        s.bind_double(3, d.median_rel);
        s.bind_double(4, d.max_rel);
        s.run();
      }
    }
  }

  static void bind_rank(Statement& s, int i, std::int64_t rank) {
    if (rank == kNoRank)
      s.bind_null(i);
    else
      s.bind_int(i, rank);
  }

  // A job's processes, its per-rank tables, and the rank of every row of the big tables (through its pid:
  // the rows keep their own columns as they are, for one process or many).
  void write_job(const JobTables& job) {
    const auto& procs = job.processes;
    Statement p(db_,
                "INSERT INTO processes (id, pid, rank, local_rank, world_size, folder, counters_pid, status, problem, "
                "kernels, ncu_rows) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    for (std::size_t i = 0; i < procs.size(); ++i) {
      const JobProcess& q = procs[i];
      p.bind_int(1, static_cast<std::int64_t>(i));
      p.bind_int(2, q.pid);
      bind_rank(p, 3, q.rank);
      bind_rank(p, 4, q.local_rank);
      bind_rank(p, 5, q.world_size);
      if (q.folder.empty()) p.bind_null(6); else p.bind_text(6, q.folder);
      if (q.counters_pid == 0) p.bind_null(7); else p.bind_int(7, q.counters_pid);
      p.bind_text(8, q.status);
      if (q.problem.empty()) p.bind_null(9); else p.bind_text(9, q.problem);
      p.bind_int(10, as_i64(q.kernels));
      p.bind_int(11, as_i64(q.ncu_rows));
      p.run();
    }
    Statement r(db_,
                "INSERT INTO rank_summary (process_id, rank, kernels, kernel_time_ns, time_vs_mean, compute_ns, "
                "communication_kernel_ns, communication_copy_ns, communication_ns, overlap_ns, exposed_communication_ns, cpu_communication_ns, cpu_overlap_ns, busy_ns, "
                "span_ns, phase_forward_ns, phase_backward_ns, phase_optimizer_ns, phase_other_ns, phase_communication_ns) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)");
    for (const RankFigures& f : job.figures.ranks) {
      r.bind_int(1, static_cast<std::int64_t>(f.process));
      bind_rank(r, 2, procs[f.process].rank);
      r.bind_int(3, as_i64(f.kernels));
      r.bind_int(4, f.kernel_time_ns);
      r.bind_double(5, f.time_vs_mean);
      r.bind_int(6, f.compute_ns);
      int c = 7;
      for (std::int64_t v : {f.communication_kernel_ns, f.communication_copy_ns, f.communication_ns, f.overlap_ns,
                             f.exposed_communication_ns, f.cpu_communication_ns, f.cpu_overlap_ns, f.busy_ns, f.span_ns})
        r.bind_int(c++, v);
      for (int ph = 0; ph < kPhases; ++ph) r.bind_int(c++, f.by_phase_ns[ph]);
      r.run();
    }
    Statement g(db_, "INSERT INTO rank_groups (group_kind, key, process_id, rank, kernels, time_ns) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    for (const RankGroupTime& t : job.figures.groups) {
      g.bind_text(1, t.group_kind);
      g.bind_text(2, t.key);
      g.bind_int(3, static_cast<std::int64_t>(t.process));
      bind_rank(g, 4, procs[t.process].rank);
      g.bind_int(5, as_i64(t.kernels));
      g.bind_int(6, t.time_ns);
      g.run();
    }
    Statement c(db_, "INSERT INTO collectives (id, process_id, rank, source, collective, kernel_id, range_id, start_ns, "
                     "end_ns, duration_ns, elements, bytes, dtype, process_group, process_group_desc, group_size) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
    auto bind_known = [&](int i, std::int64_t v) { if (v < 0) c.bind_null(i); else c.bind_int(i, v); };
    auto bind_text_or_null = [&](int i, const std::string& v) { if (v.empty()) c.bind_null(i); else c.bind_text(i, v); };
    const auto& cs = job.figures.collectives;
    for (std::size_t i = 0; i < cs.size(); ++i) {
      c.bind_int(1, static_cast<std::int64_t>(i));
      c.bind_int(2, static_cast<std::int64_t>(cs[i].process));
      bind_rank(c, 3, procs[cs[i].process].rank);
      c.bind_text(4, cs[i].source);
      if (cs[i].collective.empty()) c.bind_null(5); else c.bind_text(5, cs[i].collective);
      bind_optional_index(c, 6, cs[i].kernel_id);
      bind_optional_index(c, 7, cs[i].range_id);
      c.bind_int(8, cs[i].start_ns);
      c.bind_int(9, cs[i].end_ns);
      c.bind_int(10, cs[i].end_ns - cs[i].start_ns);
      bind_known(11, cs[i].elements);
      bind_known(12, cs[i].bytes);
      bind_text_or_null(13, cs[i].dtype);
      bind_text_or_null(14, cs[i].process_group);
      bind_text_or_null(15, cs[i].process_group_desc);
      bind_known(16, cs[i].group_size);
      c.run();
    }
    db_.exec(
        "UPDATE kernels SET rank = (SELECT p.rank FROM processes p WHERE p.pid = kernels.pid AND p.pid != 0);"
        "UPDATE launches SET rank = (SELECT p.rank FROM processes p WHERE p.pid = launches.pid AND p.pid != 0);"
        "UPDATE range_rows SET rank = (SELECT p.rank FROM processes p WHERE p.pid = range_rows.pid AND p.pid != 0);"
        "UPDATE ncu_rows SET rank = (SELECT p.rank FROM processes p WHERE p.counters_pid = ncu_rows.pid);");
  }
  static void bind_optional_index(Statement& s, int i, std::uint32_t v) {
    if (v == kNoIndex)
      s.bind_null(i);
    else
      s.bind_int(i, v);
  }

  sqlite::Database& db_;
  const ProfileInputs& in_;
  const Timeline& tl_;
  const std::vector<std::string_view>* strings_;
  std::size_t max_parameters_;  // this SQLite build's limit on parameters per statement
  static constexpr std::int64_t kNoRowid = std::numeric_limits<std::int64_t>::min();
  std::int64_t max_rowid_ = kNoRowid;  // the largest id bind_rowid bound in the table being written
  // The strings table as it grows: texts by strings.id, the id of each timeline string (-1 until used)
  // and of each enumeration name (by address and by text).
  std::vector<std::string_view> string_texts_;
  std::vector<std::int64_t> string_id_of_;
  std::unordered_map<const char*, std::int64_t> name_ids_;
  std::unordered_map<std::string_view, std::int64_t> name_text_ids_;
};

// A new database for the writer, its settings made (see the top of this file) and its tables created, in
// an open transaction.
std::unique_ptr<sqlite::Database> create_database(const std::string& path) {
  auto db = std::make_unique<sqlite::Database>(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX);
  // page_size must precede the first table; the rest trade crash safety of the invisible temporary
  // file for speed.
  db->exec(fmt::format(
      "PRAGMA page_size = {}; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
      "PRAGMA locking_mode = EXCLUSIVE; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -65536; "
      "PRAGMA application_id = {}; PRAGMA user_version = {};",
      kPageSize, kProfileApplicationId, kProfileSchemaVersion));
  db->exec("BEGIN");
  db->exec(embedded_file("profile_schema.sql"));
  return db;
}

// Joins a thread when it goes out of scope, so that no exception leaves one running.
struct JoinOnExit {
  std::thread& thread;
  ~JoinOnExit() {
    if (thread.joinable()) thread.join();
  }
};

}  // namespace

struct ProfileDbWriter::State {
  std::string path;
  std::unique_ptr<AtomicFile> file;  // the temporary: removed on failure, on an interrupt, or unless published
  std::unique_ptr<sqlite::Database> db;
  // With a helper: the attribution rows go into databases of their own on a second connection, written
  // while this one writes the ranges, and are then copied in by SQLite's transfer of whole records
  // (INSERT INTO .. SELECT * between tables of one definition), which costs less than half of writing them.
  // SQLite writes a database from one thread; this spreads the write over two. Where there are many rows
  // they go in parts of consecutive kernels, each copied in as soon as it is written, so that the copy
  // overlaps the writing of the parts after it instead of waiting for the last.
  std::vector<std::unique_ptr<AtomicFile>> part_files;  // never published: each removed once copied in
  std::vector<std::unique_ptr<sqlite::Database>> part_dbs;
  std::size_t rows_per_part = 0;
  const Timeline* timeline = nullptr;
  std::vector<std::string_view> strings;  // the timeline's strings when the helper started
  std::thread helper;                     // writes the timeline's tables
  std::exception_ptr helper_error;

  // Closes the connections before their temporaries are removed.
  void discard() {
    db.reset();
    part_dbs.clear();
    file.reset();
    part_files.clear();
  }
  // SQLite and output errors name the database; others pass as they are.
  [[noreturn]] void fail(std::exception_ptr error) {
    discard();
    try {
      std::rethrow_exception(error);
    } catch (const sqlite::SqliteError& e) {
      throw OutputError(fmt::format("cannot write profile database {}: SQLite: {}", path, e.what()));
    } catch (const OutputError& e) {
      throw OutputError(fmt::format("cannot write profile database {}: {}", path, e.what()));
    }
  }
};

ProfileDbWriter::ProfileDbWriter(const std::string& path, const Timeline& timeline, bool background,
                                 std::size_t rows_per_part)
    : s_(std::make_unique<State>()) {
  s_->path = path;
  s_->timeline = &timeline;
  try {
    validate_timeline_tables(timeline);
    s_->file = std::make_unique<AtomicFile>(path);
    s_->db = create_database(s_->file->temporary());
    if (background) {
      // One attribution row per kernel (validate_inputs checks it).
      const std::size_t rows = timeline.kernels.size();
      const std::size_t per_part = std::max<std::size_t>(rows_per_part, 1);
      const std::size_t parts = std::clamp<std::size_t>((rows + per_part - 1) / per_part, 1, kMaxAttributionParts);
      s_->rows_per_part = (rows + parts - 1) / parts;
      for (std::size_t i = 0; i < kMaxAttributionParts; ++i) {
        const std::string name = attribution_part_name(path, i);
        if (i >= parts) {
          remove_stale_temporaries(name);  // a larger profile's, of a run killed before it could
          continue;
        }
        s_->part_files.push_back(std::make_unique<AtomicFile>(name));
        s_->part_dbs.push_back(create_database(s_->part_files.back()->temporary()));
      }
    }
  } catch (...) {
    s_->fail(std::current_exception());
  }
  pause_point("profile_db.write");  // the temporary exists, half written: where tests interrupt
  auto write_timeline_tables = [state = s_.get()] {
    try {
      ProfileInputs in;
      in.timeline = state->timeline;
      Writer(*state->db, in, &state->strings).write_timeline_tables();
    } catch (...) {
      state->helper_error = std::current_exception();
    }
  };
  // The views point into the string table's arena, which never moves; only the list of them grows.
  for (StrId id = 0; id < timeline.strings.size(); ++id) s_->strings.push_back(timeline.str(id));
  if (background)
    s_->helper = std::thread(write_timeline_tables);
  else
    write_timeline_tables();
}

ProfileDbWriter::~ProfileDbWriter() {
  if (s_->helper.joinable()) s_->helper.join();
  s_->discard();
}

void ProfileDbWriter::finish(const ProfileInputs& in) {
  try {
    JoinOnExit join_helper{s_->helper};
    if (in.timeline != s_->timeline) throw OutputError("the profile's timeline is not the one its tables were written from");
    validate_inputs(in);
    if (s_->part_dbs.empty()) {
      if (s_->helper_error) std::rethrow_exception(s_->helper_error);
      Writer(*s_->db, in).write_attributed_tables();
    } else {
      // The attribution rows start at once, on their own connection, while the helper may still be writing
      // the kernels; the ranges follow the kernels on this one, and then the parts are copied in, each as
      // soon as it is written.
      Writer part_writer(*s_->part_dbs.front(), in);
      part_writer.number_attribution_strings();
      Writer writer(*s_->db, part_writer);
      const std::size_t rows = in.attribution->size(), parts = s_->part_dbs.size();
      std::mutex mutex;
      std::condition_variable part_done;
      std::size_t parts_written = 0;
      std::exception_ptr part_error;
      std::thread part([&] {
        try {
          for (std::size_t i = 0; i < parts; ++i) {
            sqlite::Database& db = *s_->part_dbs[i];
            Writer(db, part_writer)
                .write_attribution(std::min(rows, i * s_->rows_per_part), std::min(rows, (i + 1) * s_->rows_per_part));
            db.exec("COMMIT");
            db.close();
            const std::lock_guard lock(mutex);
            parts_written = i + 1;
            part_done.notify_one();
          }
        } catch (...) {
          const std::lock_guard lock(mutex);
          part_error = std::current_exception();
          part_done.notify_one();
        }
      });
      JoinOnExit join_part{part};
      if (s_->helper.joinable()) s_->helper.join();
      if (s_->helper_error) std::rethrow_exception(s_->helper_error);
      writer.write_meta_and_ranges();
      // ATTACH cannot run inside a transaction; with journal_mode=OFF a commit costs only the pages it
      // writes, which the final commit would write anyway.
      s_->db->exec("COMMIT");
      // The pages committed so far go to the device while the rest is written, on a thread of their own (the
      // call waits while it queues them): the flush before the rename then waits for a fraction of the file.
      std::thread writeback([file = s_->file.get()] { file->start_writeback(); });
      JoinOnExit join_writeback{writeback};
      for (std::size_t i = 0; i < parts; ++i) {
        {
          std::unique_lock lock(mutex);
          part_done.wait(lock, [&] { return parts_written > i || part_error; });
          if (part_error) std::rethrow_exception(part_error);
        }
        {
          Statement attach(*s_->db, "ATTACH DATABASE ?1 AS attribution_part");
          attach.bind_text(1, s_->part_files[i]->temporary());
          attach.run();
        }
        s_->db->exec(
            "BEGIN; INSERT INTO attribution_rows SELECT * FROM attribution_part.attribution_rows; COMMIT; "
            "DETACH DATABASE attribution_part;");
        s_->part_dbs[i].reset();
        s_->part_files[i].reset();  // removes the part's file
      }
      s_->db->exec("BEGIN");
      writer.write_remaining_tables();
    }
    s_->db->exec("COMMIT");
    s_->db->close();
    s_->db.reset();
    s_->file->commit();
    s_->discard();
  } catch (...) {
    s_->fail(std::current_exception());
  }
}

void write_profile_db(const std::string& path, const ProfileInputs& in) {
  try {
    validate_inputs(in);  // before the temporary file is created
  } catch (const OutputError& e) {
    throw OutputError(fmt::format("cannot write profile database {}: {}", path, e.what()));
  }
  ProfileDbWriter writer(path, *in.timeline, /*background=*/false);
  writer.finish(in);
}

}  // namespace opprof
