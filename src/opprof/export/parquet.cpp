// The Parquet export with Apache Arrow's C++ library (export/parquet.hpp). Every dataset is a query of the
// profile database whose first column is the rank; its rows go to the file of their rank's partition, a
// row group every rows_per_batch rows, so memory stays bounded by one batch per partition.
#include "opprof/export/parquet.hpp"

#include <arrow/api.h>
#include <arrow/io/file.h>
#include <arrow/util/config.h>
#include <fmt/format.h>
#include <parquet/arrow/writer.h>
#include <parquet/properties.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "opprof/report/json_writer.hpp"
#include "opprof/store/sqlite.hpp"
#include "opprof/util/atomic_file.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/interrupt.hpp"

namespace opprof {
namespace {

namespace fs = std::filesystem;
using sqlite::Statement;

// Hive's name for the partition of a NULL key, which DuckDB, Spark and Arrow read back as NULL.
constexpr std::string_view kNullPartition = "__HIVE_DEFAULT_PARTITION__";

enum class ColumnType : std::uint8_t { kInt64, kDouble, kText };

struct Column {
  std::string name;
  ColumnType type;
};

std::shared_ptr<arrow::DataType> arrow_type(ColumnType t) {
  switch (t) {
    case ColumnType::kInt64: return arrow::int64();
    case ColumnType::kDouble: return arrow::float64();
    case ColumnType::kText: return arrow::utf8();
  }
  return arrow::null();
}

void check(const arrow::Status& status, const std::string& what) {
  if (!status.ok()) throw OutputError(fmt::format("{}: {}", what, status.ToString()));
}

template <class T>
T check(arrow::Result<T> result, const std::string& what) {
  check(result.status(), what);
  return std::move(result).ValueUnsafe();
}

// One partition's file of a dataset, and the batch being filled.
struct Partition {
  std::string key;   // "rank=0"
  std::string path;  // absolute
  std::shared_ptr<arrow::io::FileOutputStream> file;
  std::unique_ptr<parquet::arrow::FileWriter> writer;
  std::vector<std::unique_ptr<arrow::ArrayBuilder>> builders;
  std::int64_t rows = 0;  // in the batch
};

// A dataset (kernels/, operators/, ...): its columns, and a file per partition of the rank.
class Dataset {
 public:
  Dataset(fs::path root, std::string name, std::vector<Column> columns, std::size_t rows_per_batch,
          ParquetExportStats& stats)
      : root_(std::move(root)), name_(std::move(name)), columns_(std::move(columns)), rows_per_batch_(rows_per_batch),
        stats_(stats) {
    arrow::FieldVector fields;
    for (const Column& c : columns_) fields.push_back(arrow::field(c.name, arrow_type(c.type)));
    schema_ = arrow::schema(fields);
  }

  const std::vector<Column>& columns() const { return columns_; }

  Partition& partition(std::optional<std::int64_t> rank) {
    const std::string key = rank ? fmt::format("rank={}", *rank) : fmt::format("rank={}", kNullPartition);
    auto it = partitions_.find(key);
    if (it != partitions_.end()) return it->second;
    Partition& p = partitions_[key];
    p.key = key;
    const fs::path dir = root_ / name_ / key;
    fs::create_directories(dir);
    p.path = (dir / "part-0.parquet").string();
    p.file = check(arrow::io::FileOutputStream::Open(p.path), "cannot create " + p.path);
    parquet::WriterProperties::Builder props;
    props.compression(parquet::Compression::ZSTD)->max_row_group_length(static_cast<std::int64_t>(rows_per_batch_));
    p.writer = check(parquet::arrow::FileWriter::Open(*schema_, arrow::default_memory_pool(), p.file, props.build()),
                     "cannot write " + p.path);
    for (const Column& c : columns_) p.builders.push_back(check(arrow::MakeBuilder(arrow_type(c.type)), "arrow builder"));
    if (std::find(stats_.partitions.begin(), stats_.partitions.end(), key) == stats_.partitions.end())
      stats_.partitions.push_back(key);
    stats_.files.push_back(fs::relative(p.path, root_).string());
    return p;
  }

  void append_int(Partition& p, std::size_t column, std::optional<std::int64_t> v) {
    auto& b = static_cast<arrow::Int64Builder&>(*p.builders[column]);
    check(v ? b.Append(*v) : b.AppendNull(), "arrow append");
  }
  void append_double(Partition& p, std::size_t column, double v) {  // NaN: no value
    auto& b = static_cast<arrow::DoubleBuilder&>(*p.builders[column]);
    check(std::isnan(v) ? b.AppendNull() : b.Append(v), "arrow append");
  }
  void append_text(Partition& p, std::size_t column, std::optional<std::string_view> v) {
    auto& b = static_cast<arrow::StringBuilder&>(*p.builders[column]);
    check(v ? b.Append(v->data(), static_cast<std::int32_t>(v->size())) : b.AppendNull(), "arrow append");
  }
  // The query's column sql_column into the dataset's column, by the dataset column's type.
  void append_sql(Partition& p, std::size_t column, const Statement& q, int sql_column) {
    const bool null = q.is_null(sql_column);
    switch (columns_[column].type) {
      case ColumnType::kInt64:
        append_int(p, column, null ? std::nullopt : std::optional<std::int64_t>(q.column_int(sql_column)));
        break;
      case ColumnType::kDouble: append_double(p, column, q.column_double(sql_column)); break;
      case ColumnType::kText:
        append_text(p, column, null ? std::nullopt : std::optional<std::string_view>(q.column_view(sql_column)));
        break;
    }
  }

  // Ends a row of p: writes the batch when it is full.
  void end_row(Partition& p) {
    ++rows_;
    if (++p.rows >= static_cast<std::int64_t>(rows_per_batch_)) flush(p);
  }

  // Writes what is buffered and closes every file; a dataset without rows still gets one file (of no rows)
  // in the NULL partition, so that a reader's glob finds its columns.
  std::uint64_t close() {
    if (partitions_.empty()) partition(std::nullopt);
    for (auto& [key, p] : partitions_) {
      flush(p);
      check(p.writer->Close(), "cannot finish " + p.path);
      check(p.file->Close(), "cannot close " + p.path);
      fsync_file(p.path);
    }
    return rows_;
  }

 private:
  void flush(Partition& p) {
    if (p.rows == 0) return;
    arrow::ArrayVector arrays;
    for (auto& b : p.builders) arrays.push_back(check(b->Finish(), "arrow finish"));
    const auto batch = arrow::RecordBatch::Make(schema_, p.rows, arrays);
    check(p.writer->WriteRecordBatch(*batch), "cannot write " + p.path);
    p.rows = 0;
  }

  fs::path root_;
  std::string name_;
  std::vector<Column> columns_;
  std::shared_ptr<arrow::Schema> schema_;
  std::size_t rows_per_batch_;
  ParquetExportStats& stats_;
  std::map<std::string, Partition> partitions_;
  std::uint64_t rows_ = 0;
};

// Raised inside the export when SIGINT or SIGTERM came; the caller removes the temporary directory.
struct Interrupted {};

void stop_if_interrupted() {
  if (interrupted()) throw Interrupted{};
}

std::optional<std::int64_t> rank_of(const Statement& q, int column) {
  return q.is_null(column) ? std::nullopt : std::optional<std::int64_t>(q.column_int(column));
}

// A query whose column 0 is the rank and whose other columns are the dataset's, in order.
std::uint64_t export_query(sqlite::Database& db, Dataset& d, const std::string& sql) {
  Statement q(db, sql);
  std::uint64_t n = 0;
  while (q.next()) {
    Partition& p = d.partition(rank_of(q, 0));
    for (std::size_t c = 0; c < d.columns().size(); ++c) d.append_sql(p, c, q, static_cast<int>(c) + 1);
    d.end_row(p);
    if ((++n & 0xFFFF) == 0) stop_if_interrupted();
  }
  return n;
}

// kernel_view's columns, after the rank, in the view's order.
const std::vector<Column> kKernelColumns = {
    {"id", ColumnType::kInt64},          {"kind", ColumnType::kText},
    {"name", ColumnType::kText},         {"mangled", ColumnType::kText},
    {"pid", ColumnType::kInt64},         {"device", ColumnType::kInt64},
    {"context", ColumnType::kInt64},     {"stream", ColumnType::kInt64},
    {"start_ns", ColumnType::kInt64},    {"end_ns", ColumnType::kInt64},
    {"duration_ns", ColumnType::kInt64}, {"grid_x", ColumnType::kInt64},
    {"grid_y", ColumnType::kInt64},      {"grid_z", ColumnType::kInt64},
    {"block_x", ColumnType::kInt64},     {"block_y", ColumnType::kInt64},
    {"block_z", ColumnType::kInt64},     {"correlation", ColumnType::kInt64},
    {"external_id", ColumnType::kInt64}, {"graph_id", ColumnType::kInt64},
    {"graph_node", ColumnType::kInt64},  {"registers_per_thread", ColumnType::kInt64},
    {"shared_mem_bytes", ColumnType::kInt64}, {"bytes", ColumnType::kInt64},
    {"path", ColumnType::kText},         {"confidence", ColumnType::kDouble},
    {"op", ColumnType::kText},           {"top_op", ColumnType::kText},
    {"module", ColumnType::kText},       {"module_source", ColumnType::kText},
    {"fused_ops", ColumnType::kText},    {"fx_nodes", ColumnType::kText},
    {"provenance_handle", ColumnType::kText}, {"source_line", ColumnType::kText},
    {"family", ColumnType::kText},       {"reason", ColumnType::kText},
    {"opaque", ColumnType::kInt64},      {"opaque_backend", ColumnType::kText},
    {"phase", ColumnType::kText},        {"forward_op", ColumnType::kText},
};

std::string kernel_query() {
  std::string sql = "SELECT rank";
  for (const Column& c : kKernelColumns) sql += ", " + c.name;
  return sql + " FROM kernel_view ORDER BY id";
}

// kernels/: kernel_view merge-joined with kernel_metrics (both in kernel id order), one column per present
// metric and counters_from (the kernel whose ncu row its values came from under dedup; NULL: its own).
std::uint64_t export_kernels(sqlite::Database& db, const ProfileReader& profile, const fs::path& root,
                             std::size_t rows_per_batch, ParquetExportStats& stats) {
  std::vector<Column> columns = kKernelColumns;
  columns.push_back({"counters_from", ColumnType::kInt64});
  std::unordered_map<std::int64_t, std::size_t> metric_column;  // metrics.id -> index among the metrics
  for (const ProfileMetric& m : profile.metrics()) {
    if (!m.present) continue;
    metric_column[m.id] = metric_column.size();
    columns.push_back({m.name, ColumnType::kDouble});
  }
  stats.metrics = metric_column.size();
  Dataset d(root, "kernels", columns, rows_per_batch, stats);
  const std::size_t first_metric = kKernelColumns.size() + 1;

  Statement kernels(db, kernel_query());
  Statement values(db, "SELECT kernel_id, metric_id, value, counters_from FROM kernel_metrics ORDER BY kernel_id");
  bool value_row = values.next();
  std::vector<double> row_values(metric_column.size());
  std::uint64_t n = 0;
  while (kernels.next()) {
    const std::int64_t id = kernels.column_int(1);
    std::fill(row_values.begin(), row_values.end(), std::nan(""));
    std::optional<std::int64_t> counters_from;
    for (; value_row && values.column_int(0) <= id; value_row = values.next()) {
      if (values.column_int(0) < id) continue;  // a value of no kernel: the schema's foreign key forbids it
      const auto it = metric_column.find(values.column_int(1));
      if (it != metric_column.end()) row_values[it->second] = values.column_double(2);
      if (!values.is_null(3)) counters_from = values.column_int(3);
    }
    Partition& p = d.partition(rank_of(kernels, 0));
    for (std::size_t c = 0; c < kKernelColumns.size(); ++c) d.append_sql(p, c, kernels, static_cast<int>(c) + 1);
    d.append_int(p, kKernelColumns.size(), counters_from);
    for (std::size_t m = 0; m < row_values.size(); ++m) d.append_double(p, first_metric + m, row_values[m]);
    d.end_row(p);
    if ((++n & 0xFFFF) == 0) stop_if_interrupted();
  }
  return d.close();
}

// operators/ or modules/: kernel time per group on each rank (rank_groups) in a job; the profile's groups
// (one NULL partition) otherwise.
std::uint64_t export_groups(sqlite::Database& db, const fs::path& root, const std::string& name,
                            const std::string& kind, const std::string& table, bool job, std::size_t rows_per_batch,
                            ParquetExportStats& stats) {
  Dataset d(root, name, {{kind, ColumnType::kText}, {"pid", ColumnType::kInt64}, {"kernels", ColumnType::kInt64},
                         {"time_ns", ColumnType::kInt64}, {"time_share", ColumnType::kDouble}},
            rows_per_batch, stats);
  const std::string sql =
      job ? fmt::format("SELECT g.rank, g.key, p.pid, g.kernels, g.time_ns, "
                        "CAST(g.time_ns AS REAL) / NULLIF(s.kernel_time_ns, 0) FROM rank_groups g "
                        "JOIN processes p ON p.id = g.process_id LEFT JOIN rank_summary s ON s.process_id = g.process_id "
                        "WHERE g.group_kind = '{}' ORDER BY g.process_id, g.time_ns DESC, g.key",
                        kind)
          : fmt::format("SELECT NULL, key, NULL, kernels, time_ns, time_share FROM {} ORDER BY id", table);
  export_query(db, d, sql);
  return d.close();
}

// schema_version 3 profiles have no arguments of the collectives: their columns are NULL.
std::uint64_t export_collectives(sqlite::Database& db, int schema_version, const fs::path& root,
                                 std::size_t rows_per_batch, ParquetExportStats& stats) {
  Dataset d(root, "collectives",
            {{"pid", ColumnType::kInt64}, {"source", ColumnType::kText}, {"collective", ColumnType::kText},
             {"kernel_id", ColumnType::kInt64}, {"range_id", ColumnType::kInt64}, {"start_ns", ColumnType::kInt64},
             {"end_ns", ColumnType::kInt64}, {"duration_ns", ColumnType::kInt64}, {"elements", ColumnType::kInt64},
             {"bytes", ColumnType::kInt64}, {"dtype", ColumnType::kText}, {"process_group", ColumnType::kText},
             {"process_group_desc", ColumnType::kText}, {"group_size", ColumnType::kInt64}},
            rows_per_batch, stats);
  const char* args = schema_version >= 4
                         ? "c.elements, c.bytes, c.dtype, c.process_group, c.process_group_desc, c.group_size"
                         : "NULL, NULL, NULL, NULL, NULL, NULL";
  export_query(db, d,
               fmt::format("SELECT c.rank, p.pid, c.source, c.collective, c.kernel_id, c.range_id, c.start_ns, c.end_ns, "
                           "c.duration_ns, {} FROM collectives c JOIN processes p ON p.id = c.process_id ORDER BY c.id",
                           args));
  return d.close();
}

// metrics.parquet: one file, no partitions.
void export_metrics(const ProfileReader& profile, const fs::path& root, ParquetExportStats& stats) {
  arrow::Int64Builder id, present;
  arrow::StringBuilder name, unit, aggregate, axis, weight;
  for (const ProfileMetric& m : profile.metrics()) {
    check(id.Append(m.id), "arrow append");
    check(name.Append(m.name), "arrow append");
    check(m.present ? unit.Append(m.unit) : unit.AppendNull(), "arrow append");
    check(aggregate.Append(m.aggregate), "arrow append");
    check(axis.Append(m.axis), "arrow append");
    check(present.Append(m.present ? 1 : 0), "arrow append");
    check(m.weight.empty() ? weight.AppendNull() : weight.Append(m.weight), "arrow append");
  }
  arrow::ArrayVector arrays;
  for (arrow::ArrayBuilder* b : std::initializer_list<arrow::ArrayBuilder*>{&id, &name, &unit, &aggregate, &axis,
                                                                            &present, &weight})
    arrays.push_back(check(b->Finish(), "arrow finish"));
  const auto schema = arrow::schema({arrow::field("id", arrow::int64()), arrow::field("name", arrow::utf8()),
                                     arrow::field("unit", arrow::utf8()), arrow::field("aggregate", arrow::utf8()),
                                     arrow::field("axis", arrow::utf8()), arrow::field("present", arrow::int64()),
                                     arrow::field("weight", arrow::utf8())});
  const auto table = arrow::Table::Make(schema, arrays);
  const std::string path = (root / "metrics.parquet").string();
  auto file = check(arrow::io::FileOutputStream::Open(path), "cannot create " + path);
  check(parquet::arrow::WriteTable(*table, arrow::default_memory_pool(), file, 65536), "cannot write " + path);
  check(file->Close(), "cannot close " + path);
  fsync_file(path);
  stats.files.push_back("metrics.parquet");
}

void write_manifest(const ProfileReader& profile, const fs::path& root, const ParquetExportStats& stats) {
  JsonWriter j;
  j.begin_object();
  j.fields({{"opprof_parquet_export", kParquetExportVersion},
            {"written_by", "opprof " OPPROF_VERSION},
            {"library", parquet_library_description()},
            {"profile", fs::absolute(profile.path()).string()},
            {"profile_schema_version", profile.schema_version()},
            {"partitioning", "hive: rank"},
            {"null_partition", kNullPartition}});
  j.key("rows").begin_object();
  j.fields({{"kernels", stats.kernels}, {"operators", stats.operators}, {"modules", stats.modules},
            {"collectives", stats.collectives}});
  j.end_object();
  j.key("metric_columns").begin_array();
  for (const ProfileMetric& m : profile.metrics())
    if (m.present) j.string(m.name);
  j.end_array();
  j.key("partitions").strings(stats.partitions);
  j.key("files").strings(stats.files);
  j.end_object();
  const std::string path = (root / kParquetManifestFile).string();
  write_file_atomically(path, j.str() + "\n");
}

bool is_earlier_export(const fs::path& dir) { return fs::is_regular_file(dir / kParquetManifestFile); }

}  // namespace

bool parquet_export_available() { return true; }

std::string parquet_library_description() { return "Apache Arrow " ARROW_VERSION_STRING; }

ParquetExportStats export_parquet(const ProfileReader& profile, const std::string& dir, std::size_t rows_per_batch) {
  if (dir.empty()) throw InputError("--parquet", "the export directory is empty");
  if (rows_per_batch == 0) rows_per_batch = 1;
  const fs::path target = fs::absolute(dir).lexically_normal();
  if (fs::exists(target) && !(fs::is_directory(target) && is_earlier_export(target)))
    throw InputError(dir, fmt::format("exists and is not an opprof Parquet export (no {}): remove it or choose "
                                      "another directory",
                                      kParquetManifestFile));
  if (!fs::is_directory(target.parent_path()))
    throw InputError(dir, fmt::format("the parent directory {} does not exist", target.parent_path().string()));
  remove_stale_temporaries(target.string(), TemporaryKind::kDirectory);
  const fs::path temporary = temporary_name(target.string());

  ParquetExportStats stats;
  const DeferInterrupts defer;  // an interrupt is noticed between batches and removes the temporary below
  try {
    fs::remove_all(temporary);  // a leftover of an earlier process with this pid
    fs::create_directory(temporary);
    sqlite::Database& db = profile.database();
    const bool job = !profile.processes().empty();
    stats.kernels = export_kernels(db, profile, temporary, rows_per_batch, stats);
    pause_point("parquet_export.write");
    stop_if_interrupted();
    stats.operators = export_groups(db, temporary, "operators", "operator", "operators", job, rows_per_batch, stats);
    stats.modules = export_groups(db, temporary, "modules", "module", "modules", job, rows_per_batch, stats);
    stats.collectives = export_collectives(db, profile.schema_version(), temporary, rows_per_batch, stats);
    export_metrics(profile, temporary, stats);
    stop_if_interrupted();
    write_manifest(profile, temporary, stats);
    // In place: an earlier export moves aside first, so that a reader sees the old or the new one whole.
    const fs::path old = target.string() + fmt::format(".old-{}", ::getpid());
    const bool replacing = fs::exists(target);
    if (replacing) fs::rename(target, old);
    fs::rename(temporary, target);
    if (replacing) fs::remove_all(old);
    fsync_directory(target.parent_path().string());
  } catch (const Interrupted&) {
    std::error_code ec;
    fs::remove_all(temporary, ec);
    stats.interrupted = true;
  } catch (const fs::filesystem_error& e) {
    std::error_code ec;
    fs::remove_all(temporary, ec);
    throw OutputError(fmt::format("{}: {}", dir, e.code().message()));
  } catch (...) {
    std::error_code ec;
    fs::remove_all(temporary, ec);
    throw;
  }
  return stats;
}

}  // namespace opprof
