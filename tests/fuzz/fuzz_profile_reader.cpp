// The profile database as reports read it: a file that claims to be a profile, then every typed access.
#include "fuzz_input.hpp"
#include "opprof/store/profile_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = opprof::fuzz::write_input("profile.db", data, size);
  opprof::fuzz::expect_input_error_at_most([&] {
    const opprof::ProfileReader p(path);
    (void)p.coverage();
    (void)p.anomalies();
    for (const auto by : {opprof::GroupBy::kOperator, opprof::GroupBy::kModule, opprof::GroupBy::kFamily}) {
      (void)p.groups(by);
      (void)p.group_count(by);
    }
    (void)p.match_notes();
    (void)p.activity_count();
    p.for_each_kernel([](const opprof::ProfileKernel&) {});
    (void)p.ncu_rows();
  });
  return 0;
}
