#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "opprof/match/ncu_match.hpp"
#include "opprof/match/sequence_align.hpp"
#include "opprof/util/text.hpp"

using namespace opprof;

namespace {

const std::string kFixtures = std::string(OPPROF_FIXTURES_DIR) + "/ncu/";
constexpr std::uint32_t kNone = 0xffffffffu;

// Lines of a fixture TSV without its '#' comments.
std::vector<std::vector<std::string>> read_tsv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::string text = read_file(path);
  for (std::string_view line : split_lines(text)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    for (std::string_view f : split(line, '\t')) fields.emplace_back(f);
    rows.push_back(std::move(fields));
  }
  return rows;
}

// Length of a longest common subsequence by dynamic programming, to check the aligner against.
std::size_t lcs_length(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  std::vector<std::size_t> prev(b.size() + 1, 0), cur(b.size() + 1, 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] = a[i - 1] == b[j - 1] ? prev[j - 1] + 1 : std::max(prev[j], cur[j - 1]);
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// kernel_base_name / kernel_match_name

TEST(KernelBaseName, RealSpellingsOfOneKernelAgree) {
  auto rows = read_tsv(kFixtures + "kernel_names.tsv");
  ASSERT_GE(rows.size(), 30u);
  std::map<std::string, std::vector<std::string>> match_names_by_group;
  std::map<std::string, std::set<std::string>> sources_by_group;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 4u);
    const std::string& group = row[0];
    const std::string& name = row[2];
    EXPECT_EQ(kernel_base_name(name), row[3]) << row[1] << " spelling of " << group << ": " << name;
    match_names_by_group[group].push_back(kernel_match_name(name));
    sources_by_group[group].insert(row[1]);
  }
  std::set<std::string> distinct;
  for (const auto& [group, names] : match_names_by_group) {
    for (const auto& n : names) EXPECT_EQ(n, names.front()) << group;
    distinct.insert(names.front());
  }
  // Different kernels keep different names.
  EXPECT_EQ(distinct.size(), match_names_by_group.size());
  // The table really spans the spellings: groups with a torch.profiler, an ncu and a mangled name.
  std::size_t three_way = 0;
  for (const auto& [group, sources] : sources_by_group) three_way += sources.size() == 3;
  EXPECT_GE(three_way, 4u);
}

TEST(KernelBaseName, DropsReturnTypeTemplateArgumentsAndParameters) {
  EXPECT_EQ(kernel_base_name("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(kernel_base_name("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_"
                             "alignc4_execute_kernel__5x_cublas"),
            "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_"
            "kernel__5x_cublas");
  EXPECT_EQ(kernel_base_name("void ns::f<int, float>(int *, float)"), "ns::f");
  EXPECT_EQ(kernel_base_name("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)"),
            "cutlass::Kernel2");
  EXPECT_EQ(kernel_base_name("fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, "
                             "cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)"),
            "fmha_cutlassF_f32_aligned_64x64_rf_sm80");
  // Return types with templates, pointers and references.
  EXPECT_EQ(kernel_base_name("std::pair<int, std::vector<float>> *ns::make<int>(int)"), "ns::make");
  EXPECT_EQ(kernel_base_name("std::enable_if<true, void>::type ns::k<1>(int)"), "ns::k");
  EXPECT_EQ(kernel_base_name("float* f(int)"), "f");
  EXPECT_EQ(kernel_base_name("const at::Foo<int>& g(int)"), "g");
  EXPECT_EQ(kernel_base_name("unsigned int h()"), "h");
  // Nested arguments closed by ">>" or by "> >".
  EXPECT_EQ(kernel_base_name("void ns::k<std::array<char *, 2>>(int, std::array<char *, 2>)"), "ns::k");
  EXPECT_EQ(kernel_base_name("void ns::k<std::array<char*, 2ul> >(int, std::array<char*, 2ul>)"), "ns::k");
  // Members of class templates keep their class.
  EXPECT_EQ(kernel_base_name("void ns::Outer<int>::Inner<float>::run(int)"), "ns::Outer::Inner::run");
  EXPECT_EQ(kernel_match_name("void ns::Outer<int>::Inner<float>::run(int)"), "run");
}

TEST(KernelBaseName, AnonymousNamespacesAgree) {
  EXPECT_EQ(kernel_base_name("void at::native::(anonymous namespace)::k<float>(float*)"),
            "at::native::(anonymous namespace)::k");
  EXPECT_EQ(kernel_base_name("void at::native::<unnamed>::k<float>(float *)"), "at::native::(anonymous namespace)::k");
  EXPECT_EQ(kernel_base_name("(anonymous namespace)::k(int)"), "(anonymous namespace)::k");
  EXPECT_EQ(kernel_base_name("<unnamed>::k(int)"), "(anonymous namespace)::k");
  EXPECT_EQ(kernel_match_name("void at::<unnamed>::k<float>(float *)"), "k");
}

TEST(KernelBaseName, LambdasAndOperatorsInsideTemplateArguments) {
  // torch.profiler's and ncu's spellings of lambdas nested in the template arguments of the kernel.
  EXPECT_EQ(kernel_base_name("void at::native::vectorized_elementwise_kernel<4, at::native::tanh_kernel_cuda(at::"
                             "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
                             "const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::tanh_kernel_cuda(at::"
                             "TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() "
                             "const::{lambda(float)#1}, std::array<char*, 2ul>)"),
            "at::native::vectorized_elementwise_kernel");
  EXPECT_EQ(kernel_base_name("void at::vectorized_elementwise_kernel<4, at::GeluCUDAKernelImpl(at::TensorIteratorBase "
                             "&, at::GeluType)::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 2)]::"
                             "operator ()() const::[lambda(float) (instance 1)], std::array<char *, 2>>(int, T2, T3)"),
            "at::vectorized_elementwise_kernel");
  // Operators as names, and as template arguments that must not open or close anything.
  EXPECT_EQ(kernel_base_name("void ns::F<int>::operator()<float>(float)"), "ns::F::operator()");
  EXPECT_EQ(kernel_base_name("void ns::F<int>::operator ()<float>(float)"), "ns::F::operator()");
  EXPECT_EQ(kernel_base_name("ns::operator<(ns::A const&, ns::A const&)"), "ns::operator<");
  EXPECT_EQ(kernel_base_name("bool ns::operator<=<ns::A>(ns::A const&, int)"), "ns::operator<=");
  EXPECT_EQ(kernel_base_name("ns::operator<<(ns::A const&, int)"), "ns::operator<<");
  EXPECT_EQ(kernel_base_name("void ns::sort_kernel<int, ns::Cmp<&ns::operator<> >(int*)"), "ns::sort_kernel");
}

TEST(KernelBaseName, DemanglesAndKeepsWhatDoesNotDemangle) {
  EXPECT_EQ(kernel_base_name("_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nn_align1EEvNT_6ParamsE"),
            "cutlass::Kernel2");
  EXPECT_EQ(kernel_base_name("_ZN2at6native12_GLOBAL__N_128vectorized_layer_norm_kernelIffLb0EEEviT0_PKT_S6_S6_PS4_PS3_S8_"),
            "at::native::(anonymous namespace)::vectorized_layer_norm_kernel");
  // Truncated symbol: not demangleable, kept whole so it still equals itself.
  EXPECT_EQ(kernel_base_name("_ZN7cutlass7Kernel2I43cutlass_80"), "_ZN7cutlass7Kernel2I43cutlass_80");
  EXPECT_EQ(kernel_match_name("_ZN7cutlass7Kernel2I43cutlass_80"), "_ZN7cutlass7Kernel2I43cutlass_80");
  EXPECT_EQ(kernel_base_name(""), "");
}

// ---------------------------------------------------------------------------------------------------------
// align_longest_common_subsequence

TEST(SequenceAlign, FindsALongestCommonSubsequenceOnRandomSequences) {
  std::mt19937 rng(12345);
  auto below = [&](std::uint32_t bound) { return static_cast<std::uint32_t>(rng() % bound); };
  for (int round = 0; round < 2000; ++round) {
    const std::uint32_t alphabet = 1 + below(round % 2 ? 6 : 60);
    const std::uint32_t length = round % 10 ? 40 : 300;
    std::vector<std::uint32_t> a(below(length)), b;
    for (auto& v : a) v = below(alphabet);
    // b: a with random edits, or unrelated.
    if (round % 5 == 0) {
      b.resize(below(length));
      for (auto& v : b) v = below(alphabet);
    } else {
      for (std::uint32_t v : a) {
        std::uint32_t edit = below(10);
        if (edit == 0) continue;                        // delete
        if (edit == 1) b.push_back(below(alphabet));  // insert before
        b.push_back(v);
      }
    }
    auto aligned = align_longest_common_subsequence(a, b);
    ASSERT_TRUE(aligned.has_value());
    ASSERT_EQ(aligned->size(), a.size());
    std::size_t matched = 0;
    std::int64_t last_j = -1;
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::uint32_t j = (*aligned)[i];
      if (j == kNone) continue;
      ASSERT_LT(j, b.size());
      ASSERT_EQ(a[i], b[j]);
      ASSERT_GT(static_cast<std::int64_t>(j), last_j);  // increasing in both
      last_j = j;
      ++matched;
    }
    ASSERT_EQ(matched, lcs_length(a, b)) << "round " << round;
  }
}

TEST(SequenceAlign, PrefersTheCommonSuffixAndGivesUpPastItsLimits) {
  // b recorded the same step three times; a recorded it once: a pairs with the last one.
  std::vector<std::uint32_t> step{1, 2, 3, 2, 4};
  std::vector<std::uint32_t> b;
  for (int i = 0; i < 3; ++i) b.insert(b.end(), step.begin(), step.end());
  auto aligned = align_longest_common_subsequence(step, b);
  ASSERT_TRUE(aligned);
  EXPECT_EQ(*aligned, (std::vector<std::uint32_t>{10, 11, 12, 13, 14}));

  std::vector<std::uint32_t> x(1000), y(1000);
  for (std::uint32_t i = 0; i < 1000; ++i) {
    x[i] = i;
    y[i] = 1000 + i;
  }
  EXPECT_FALSE(align_longest_common_subsequence(x, y, AlignmentLimits{100, 2'000'000'000}).has_value());
  EXPECT_FALSE(align_longest_common_subsequence(x, y, AlignmentLimits{100000, 1000}).has_value());
  auto unrelated = align_longest_common_subsequence(x, y);
  ASSERT_TRUE(unrelated);
  EXPECT_TRUE(std::all_of(unrelated->begin(), unrelated->end(), [](std::uint32_t j) { return j == kNone; }));
}
