#pragma once
// `opprof export profile.db --parquet DIR`: the profile as Parquet datasets partitioned by rank, for jobs
// too large for one machine's reports (DuckDB, Spark, pandas read them directly):
//
//   DIR/opprof_export.json                     what was exported, from which profile (the manifest)
//   DIR/metrics.parquet                        the ncu metrics of the profile (name, unit, aggregate, axis)
//   DIR/kernels/rank=<R>/part-<N>.parquet      every GPU activity: kernel_view's columns (attribution,
//                                              phase) and one column per present metric (its value, null
//                                              where the kernel has none), counters_from
//   DIR/operators/rank=<R>/part-<N>.parquet    kernel time per operator per rank
//   DIR/modules/rank=<R>/part-<N>.parquet      kernel time per module per rank
//   DIR/collectives/rank=<R>/part-<N>.parquet  a job's collectives (NCCL kernels, gloo copies, CPU ranges)
//
// The rank is the Hive partition key (`rank=0`); a process without a rank, and a single-process profile,
// go to `rank=__HIVE_DEFAULT_PARTITION__`, which DuckDB, Spark and Arrow read as NULL. Written into
// "DIR.tmp-<pid>" and renamed into place when complete: DIR appears whole or not at all, and a previous
// export there (one with a manifest) is replaced. docs/parquet.md describes the columns.
//
// Built with Apache Arrow's C++ library where CMake found one (a system Arrow, or pyarrow's); otherwise
// export_parquet throws std::runtime_error (a failure of the environment: exit 1) saying how to get one.
#include <cstdint>
#include <string>
#include <vector>

#include "opprof/store/profile_reader.hpp"

namespace opprof {

inline constexpr int kParquetExportVersion = 1;  // opprof_export.json's "opprof_parquet_export"
inline constexpr const char* kParquetManifestFile = "opprof_export.json";

struct ParquetExportStats {
  std::uint64_t kernels = 0, operators = 0, modules = 0, collectives = 0;  // rows written
  std::uint64_t metrics = 0;          // metric columns of kernels
  std::vector<std::string> files;     // relative to the export directory, in writing order
  std::vector<std::string> partitions;  // "rank=0", ..., in order of first appearance
  bool interrupted = false;           // SIGINT/SIGTERM: nothing was left behind
};

// True when this build can write Parquet.
bool parquet_export_available();
// The Arrow library this build writes with ("Apache Arrow 25.0.1"), or why there is none.
std::string parquet_library_description();

// Writes the export directory. Throws InputError when dir exists and is not an earlier opprof export (a
// file, or a directory without the manifest), OutputError when writing fails, std::runtime_error in a
// build without Arrow. rows_per_batch bounds the memory of each partition's column buffers (a Parquet row group each).
ParquetExportStats export_parquet(const ProfileReader& profile, const std::string& dir,
                                  std::size_t rows_per_batch = 65536);

}  // namespace opprof
