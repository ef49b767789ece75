// An `nsys export --type sqlite` database: damaged SQLite files as well as well-formed ones with hostile rows.
#include "fuzz_input.hpp"
#include "opprof/ingest/nsys_sqlite.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = opprof::fuzz::write_input("report.sqlite", data, size);
  opprof::fuzz::expect_input_error_at_most([&] { (void)opprof::read_nsys_sqlite(path); });
  return 0;
}
