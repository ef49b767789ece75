#pragma once
// Reader for Nsight Compute's `--csv --page raw` output (optionally gzip-compressed).
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "opprof/timeline/timeline.hpp"

namespace opprof {

// One row per profiled kernel, in ncu's invocation order ("ID" column), with every metric column.
struct NcuTable {
  std::string path;
  std::vector<std::string> metric_names;  // metric columns, in file order (e.g. "dram__bytes_read.sum")
  std::vector<std::string> metric_units;  // base units as printed ("byte", "ns", "%", "" for ratios)
  std::uint64_t units_line = 0;                    // 1-based line of the units row, for messages
  std::vector<std::uint64_t> metric_unit_columns;  // per metric, 1-based column of its unit cell

  std::vector<std::uint64_t> id;
  std::vector<std::uint32_t> pid;
  std::vector<std::string> kernel_name;  // as ncu printed it (demangled by default, mangled with --print-kernel-base mangled)
  std::vector<std::uint32_t> context;
  std::vector<std::uint32_t> stream;
  std::vector<std::uint32_t> device;
  std::vector<Dim3> grid;
  std::vector<Dim3> block;
  std::vector<std::uint64_t> line;  // 1-based line of the row in the file, for messages

  // Row-major values: values[row * metric_names.size() + m]; NaN where the cell is empty or not numeric.
  std::vector<double> values;

  std::size_t rows() const { return id.size(); }
  // Index of a metric column, or npos.
  std::size_t metric_index(const std::string& name) const;
  double value(std::size_t row, std::size_t metric) const { return values[row * metric_names.size() + metric]; }
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
};

// A unit a metric set declares for a metric, and where it declares it.
struct DeclaredUnit {
  std::string metric;  // full ncu name ("dram__bytes_read.sum")
  std::string unit;    // base unit ncu prints ("byte"; "" for none)
  std::string source;  // the metric-set file
  std::uint32_t line = 0;
};

// The one check of a CSV's units row: every column a declaration names must carry exactly the declared
// unit, and every other metric column a base unit (no scale prefix: ncu picks the scale per column unless
// run with --print-units base). Throws InputError at the unit cell (file:line:col) of the first offender.
void check_ncu_units(const NcuTable& table, const std::vector<DeclaredUnit>& declared);

// Reads the file; throws InputError (file, line, column) on a missing file, malformed CSV, a missing
// header column, or scaled units (check_ncu_units with no declarations).
NcuTable read_ncu_csv(const std::string& path);

}  // namespace opprof
