// The synthetic traces the benchmarks time must be traces the engine takes in whole: every GPU activity
// imported, linked to the call that launched it and attributed as a real trace of that shape is. A trace the
// reader half skipped would time the wrong work.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "opprof/attribute/engine.hpp"
#include "opprof/ingest/kineto.hpp"
#include "profile_fixture.hpp"
#include "synthetic_trace.hpp"

namespace opprof::bench {
namespace {

class SyntheticTrace : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_.file(name); }

  opprof::testing::TempDir dir_;
};

// Per launch call, the GPU activities whose correlation names it.
std::map<std::size_t, std::size_t> activities_per_launch(const Timeline& tl) {
  std::map<std::uint64_t, std::size_t> launch_of;
  for (std::size_t i = 0; i < tl.launches.size(); ++i) launch_of.emplace(tl.launches.correlation[i], i);
  std::map<std::size_t, std::size_t> per_launch;
  for (std::size_t k = 0; k < tl.kernels.size(); ++k) {
    const auto it = launch_of.find(tl.kernels.correlation[k]);
    EXPECT_NE(it, launch_of.end()) << "activity " << k << " has no launch";
    if (it != launch_of.end()) ++per_launch[it->second];
  }
  return per_launch;
}

// Every activity launched through a call of its own gets its operator by correlation. A CUDA graph's kernels
// have no operator range around their launch, only the compiled graph's call and the profiler step: without
// Inductor's directory they stay unattributed, and say why.
void expect_attributed_as_launched(Timeline& tl) {
  const AttributionTable a = attribute_timeline(tl, nullptr, AttributionOptions{});
  ASSERT_EQ(a.size(), tl.kernels.size());
  std::map<std::uint64_t, std::string_view> api_of;
  for (std::size_t i = 0; i < tl.launches.size(); ++i)
    api_of.emplace(tl.launches.correlation[i], tl.str(tl.launches.api[i]));
  std::size_t by_correlation = 0, replayed = 0, replayed_unattributed = 0;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (api_of[tl.kernels.correlation[k]] != "cudaGraphLaunch") {
      by_correlation += a.path[k] == AttributionPath::kCorrelation;
      continue;
    }
    ++replayed;
    replayed_unattributed += a.path[k] == AttributionPath::kNone &&
                             tl.str(a.reason[k]).find("compiled graph's call") != std::string_view::npos;
  }
  EXPECT_EQ(by_correlation, a.size() - replayed);
  EXPECT_EQ(replayed_unattributed, replayed);
}

TEST_F(SyntheticTrace, CudaGraphReplaysLaunchAWholeForwardThroughOneCall) {
  SyntheticTraceOptions o;
  o.kernels = 3000;
  o.cuda_graph_fraction = 1.0;
  o.output = path("graphs.json");
  const SyntheticTraceSummary s = write_synthetic_trace(o);
  EXPECT_EQ(s.kernels, o.kernels);
  Timeline tl = read_kineto_trace(o.output);
  ASSERT_EQ(tl.kernels.size(), o.kernels);

  // Each step: now and then an upload of the inputs (cudaMemcpyAsync), the copy into the graph's static
  // inputs (cudaLaunchKernel), then one cudaGraphLaunch for the 12 layers' 10 kernels and a memset every
  // other layer; the last step stops at the quota.
  std::size_t graphs = 0, copies = 0, uploads = 0, graph_activities = 0, full_graphs = 0;
  for (const auto& [launch, activities] : activities_per_launch(tl)) {
    const std::string_view api = tl.str(tl.launches.api[launch]);
    if (api == "cudaGraphLaunch") {
      ++graphs;
      graph_activities += activities;
      full_graphs += activities == 12 * 10 + 6;
      continue;
    }
    EXPECT_EQ(activities, 1u) << api;
    if (api == "cudaMemcpyAsync")
      ++uploads;
    else if (api == "cudaLaunchKernel")
      ++copies;
    else
      ADD_FAILURE() << "unexpected launch call " << api;
  }
  EXPECT_GT(uploads, 0u);
  EXPECT_EQ(graphs, copies);
  EXPECT_GE(full_graphs + 1, graphs);
  EXPECT_EQ(graph_activities + copies + uploads, o.kernels);
  expect_attributed_as_launched(tl);
}

TEST_F(SyntheticTrace, MixedStepsOnThreadsAndStreamsAreTakenInWhole) {
  SyntheticTraceOptions o;
  o.kernels = 20000;
  o.threads = 2;
  o.streams = 2;
  o.cuda_graph_fraction = 0.3;
  o.compiled_fraction = 0.3;
  o.python_functions = true;
  o.output = path("mixed.json.gz");
  const SyntheticTraceSummary s = write_synthetic_trace(o);
  Timeline tl = read_kineto_trace(o.output);
  ASSERT_EQ(tl.kernels.size(), s.kernels);
  std::size_t graph_launches = 0;
  for (const auto& [launch, activities] : activities_per_launch(tl))
    graph_launches += tl.str(tl.launches.api[launch]) == "cudaGraphLaunch";
  EXPECT_GT(graph_launches, 0u);
  expect_attributed_as_launched(tl);
}

TEST_F(SyntheticTrace, TheSameSeedWritesTheSameBytes) {
  auto bytes_of = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  SyntheticTraceOptions o;
  o.kernels = 5000;
  o.cuda_graph_fraction = 0.5;
  o.output = path("a.json");
  write_synthetic_trace(o);
  const std::string first = bytes_of(o.output);
  write_synthetic_trace(o);
  EXPECT_EQ(bytes_of(o.output), first);
  o.seed += 1;
  write_synthetic_trace(o);
  EXPECT_NE(bytes_of(o.output), first);
}

}  // namespace
}  // namespace opprof::bench
