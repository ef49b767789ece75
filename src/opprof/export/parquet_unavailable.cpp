// The Parquet export in a build without Apache Arrow's C++ library (CMake found neither a system Arrow nor
// pyarrow's): the command exists and says how to get a build that has it.
#include <stdexcept>

#include "opprof/export/parquet.hpp"

namespace opprof {

namespace {
constexpr const char* kWhyNone =
    "this opprof was built without Apache Arrow's C++ library: install pyarrow in the Python environment opprof "
    "is built for (pip install pyarrow), or a system Arrow with Parquet, and build again (CMake option "
    "OPPROF_PARQUET=ON insists on it)";
}  // namespace

bool parquet_export_available() { return false; }

std::string parquet_library_description() { return std::string("none: ") + kWhyNone; }

ParquetExportStats export_parquet(const ProfileReader&, const std::string&, std::size_t) {
  throw std::runtime_error(std::string("opprof export --parquet: ") + kWhyNone);
}

}  // namespace opprof
