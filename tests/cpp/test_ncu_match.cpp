#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "golden_checks.hpp"
#include "opprof/ingest/kineto.hpp"
#include "opprof/ingest/ncu_csv.hpp"
#include "opprof/match/ncu_match.hpp"
#include "opprof/match/sequence_align.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

using namespace opprof;

namespace {

const std::string kFixtures = std::string(OPPROF_FIXTURES_DIR) + "/ncu/";
constexpr std::uint32_t kNone = 0xffffffffu;

struct K {
  std::string name;
  Dim3 grid{1, 1, 1};
  Dim3 block{128, 1, 1};
};

// A timeline holding the kernels in launch order, one per microsecond on stream 7, without launch rows.
Timeline make_timeline(const std::vector<K>& kernels, std::uint32_t pid = 4242) {
  Timeline tl;
  tl.kernels.reserve(kernels.size());
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    auto start = static_cast<std::int64_t>(i) * 1000;
    std::size_t k = tl.kernels.add(ActivityKind::kKernel, tl.strings.intern(kernels[i].name), 0, 7, start, start + 500);
    tl.kernels.pid[k] = pid;
    tl.kernels.grid[k] = kernels[i].grid;
    tl.kernels.block[k] = kernels[i].block;
    tl.kernels.correlation[k] = i + 1;
  }
  return tl;
}

NcuTable make_ncu(const std::vector<K>& kernels, std::uint32_t pid = 859) {
  NcuTable t;
  t.path = "replay.ncu.csv";
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    t.id.push_back(i);
    t.pid.push_back(pid);
    t.kernel_name.push_back(kernels[i].name);
    t.context.push_back(1);
    t.stream.push_back(7);
    t.device.push_back(0);
    t.grid.push_back(kernels[i].grid);
    t.block.push_back(kernels[i].block);
    t.line.push_back(i + 3);
  }
  return t;
}

std::vector<K> named(const std::vector<std::string>& names) {
  std::vector<K> out;
  for (const auto& n : names) out.push_back({n});
  return out;
}

// The ncu row of each timeline kernel, in timeline row order.
std::vector<std::uint32_t> rows_of(const NcuMatch& m) { return m.ncu_row_for_kernel; }

bool any_note_contains(const NcuMatch& m, const std::string& text) {
  return std::any_of(m.notes.begin(), m.notes.end(), [&](const std::string& n) { return contains(n, text); });
}

std::string all_notes(const NcuMatch& m) { return join(m.notes, "\n"); }

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

Dim3 parse_dim(const std::string& text) {
  auto parts = split(text, ',');
  return Dim3{static_cast<std::uint32_t>(std::stoul(std::string(parts.at(0)))),
              static_cast<std::uint32_t>(std::stoul(std::string(parts.at(1)))),
              static_cast<std::uint32_t>(std::stoul(std::string(parts.at(2))))};
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

TEST(SequenceAlign, PairOccurrencesPairsTheKthOccurrenceOfEachSymbol) {
  // a: 5 7 5 9; b: 7 5 5 — 5s pair in order, 7 pairs across them, 9 has no partner.
  std::vector<std::uint32_t> a{5, 7, 5, 9}, b{7, 5, 5};
  EXPECT_EQ(pair_occurrences(a, b), (std::vector<std::uint32_t>{1, 0, 2, kNone}));
  EXPECT_TRUE(pair_occurrences({}, b).empty());
}

// ---------------------------------------------------------------------------------------------------------
// match_ncu

TEST(NcuMatch, IdenticalSequencesPairOneToOne) {
  auto kernels = named({"triton_poi_fused_0", "void ns::gemm<float>(float*)", "triton_poi_fused_0", "triton_red_1"});
  Timeline tl = make_timeline(kernels);
  NcuTable ncu = make_ncu(kernels);
  NcuMatch m = match_ncu(tl, ncu);
  EXPECT_EQ(m.matched, 4u);
  EXPECT_EQ(rows_of(m), (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_EQ(m.kernel_for_ncu_row, (std::vector<std::uint32_t>{0, 1, 2, 3}));
  EXPECT_TRUE(m.unmatched_rows.empty());
  EXPECT_TRUE(m.unmatched_kernels.empty());
  EXPECT_EQ(m.grid_block_disagreements, 0u);
  EXPECT_FALSE(m.used_mangled_names);
  ASSERT_EQ(m.notes.size(), 1u) << all_notes(m);
  EXPECT_EQ(m.notes[0], "matched 4 of 4 timeline kernels and 4 of 4 ncu rows by kernel name, grid and block");
}

TEST(NcuMatch, AnExtraNcuRowIsReportedAndSkipped) {
  auto kernels = named({"a", "b", "c", "d", "e", "f"});
  auto replayed = kernels;
  replayed.insert(replayed.begin() + 3, K{"triton_poi_fused_x_3"});
  NcuMatch m = match_ncu(make_timeline(kernels), make_ncu(replayed));
  EXPECT_EQ(m.matched, 6u);
  EXPECT_EQ(rows_of(m), (std::vector<std::uint32_t>{0, 1, 2, 4, 5, 6}));
  EXPECT_EQ(m.unmatched_rows, (std::vector<std::uint32_t>{3}));
  EXPECT_TRUE(m.unmatched_kernels.empty());
  EXPECT_TRUE(any_note_contains(m, "ncu ID 3 (1 row: triton_poi_fused_x_3) has no timeline kernel")) << all_notes(m);
}

TEST(NcuMatch, AnExtraTimelineKernelIsReportedAndSkipped) {
  auto kernels = named({"a", "b", "c", "d", "e", "f"});
  auto recorded = kernels;
  recorded.insert(recorded.begin() + 2, K{"extra"});
  recorded.insert(recorded.begin() + 3, K{"extra"});
  NcuMatch m = match_ncu(make_timeline(recorded), make_ncu(kernels));
  EXPECT_EQ(m.matched, 6u);
  EXPECT_EQ(rows_of(m), (std::vector<std::uint32_t>{0, 1, kNoIndex, kNoIndex, 2, 3, 4, 5}));
  EXPECT_EQ(m.unmatched_kernels, (std::vector<std::uint32_t>{2, 3}));
  EXPECT_TRUE(any_note_contains(m, "timeline kernels 3-4 of 8 in launch order (2 kernels: extra) have no ncu row"))
      << all_notes(m);
}

TEST(NcuMatch, ASwappedPairLeavesOneOfThemUnmatched) {
  auto kernels = named({"a", "b", "c", "d", "e"});
  auto swapped = named({"a", "c", "b", "d", "e"});
  NcuMatch m = match_ncu(make_timeline(kernels), make_ncu(swapped));
  EXPECT_EQ(m.matched, 4u);
  EXPECT_EQ(m.unmatched_rows.size(), 1u);
  EXPECT_EQ(m.unmatched_kernels.size(), 1u);
  // Whichever of b and c stays matched, the pairs keep their order and equal names.
  for (std::uint32_t k = 0; k < 5; ++k) {
    std::uint32_t r = m.ncu_row_for_kernel[k];
    if (r != kNoIndex) {
      EXPECT_EQ(swapped[r].name, kernels[k].name);
    }
  }
  EXPECT_EQ(m.notes.size(), 3u) << all_notes(m);  // summary and one line for each side of the swap
}

TEST(NcuMatch, RepeatedIdentitiesPairByOccurrenceAroundADivergence) {
  // Three layers of the same four kernels; the replay lost the middle layer's "norm".
  std::vector<std::string> names;
  for (int layer = 0; layer < 3; ++layer) names.insert(names.end(), {"qkv", "attn", "proj", "norm"});
  auto replayed = names;
  replayed.erase(replayed.begin() + 7);
  NcuMatch m = match_ncu(make_timeline(named(names)), make_ncu(named(replayed)));
  EXPECT_EQ(m.matched, 11u);
  EXPECT_EQ(m.unmatched_kernels.size(), 1u);
  EXPECT_EQ(names[m.unmatched_kernels[0]], "norm");
  for (std::uint32_t k = 0; k < names.size(); ++k) {
    std::uint32_t r = m.ncu_row_for_kernel[k];
    if (r == kNoIndex) continue;
    EXPECT_EQ(replayed[r], names[k]);
    // Layer 0 pairs with layer 0 and layer 2 with layer 2: nothing slides across a layer.
    if (k < 4) {
      EXPECT_EQ(r, k);
    } else if (k >= 8) {
      EXPECT_EQ(r, k - 1);
    }
  }
}

TEST(NcuMatch, GridAndBlockArePartOfTheIdentity) {
  std::vector<K> kernels{{"k", {1, 1, 1}, {128, 1, 1}}, {"k", {2, 1, 1}, {128, 1, 1}}, {"k", {2, 1, 1}, {256, 1, 1}}};
  std::vector<K> replayed{{"k", {2, 1, 1}, {128, 1, 1}}, {"k", {2, 1, 1}, {256, 1, 1}}};
  NcuMatch m = match_ncu(make_timeline(kernels), make_ncu(replayed));
  EXPECT_EQ(rows_of(m), (std::vector<std::uint32_t>{kNoIndex, 0, 1}));
  EXPECT_EQ(m.grid_block_disagreements, 0u);
}

TEST(NcuMatch, ACsvFromAnotherWindowIsRejected) {
  std::vector<std::string> model, other;
  for (int i = 0; i < 20; ++i) {
    model.push_back("triton_poi_fused_" + std::to_string(i));
    other.push_back("triton_red_fused_" + std::to_string(i));
  }
  other[4] = model[4];
  other[9] = model[9];
  try {
    match_ncu(make_timeline(named(model)), make_ncu(named(other)));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "replay.ncu.csv");
    EXPECT_NE(std::string(e.what()).find("does not belong to this capture: only 2 of 20"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("another window"), std::string::npos) << e.what();
  }
  // Half on one side is enough: a replay of the first half of the window belongs to it.
  std::vector<std::string> first_half(model.begin(), model.begin() + 10);
  NcuMatch m = match_ncu(make_timeline(named(model)), make_ncu(named(first_half)));
  EXPECT_EQ(m.matched, 10u);
}

TEST(NcuMatch, DifferentSpellingsOfOneKernelMatch) {
  // torch.profiler's spelling in the timeline, ncu's in the CSV (samples/h200).
  std::vector<K> torch_names{
      {"void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgemm_256x128_8x4_nn_align1::"
       "Params)", {8, 3, 1}, {256, 1, 1}},
      {"fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, "
       "true, 64, 64, 64, true, true>::Params)", {2, 12, 4}, {32, 4, 1}},
      {"void cublasLt::epilogue::impl::globalKernel<8, 32, float, float, float, true, true, 1>(int, int, long, float*, "
       "cublasLtEpilogue_t, int, float*, long, void*, long, long, long, float*, long, int*)", {4, 1, 1}, {256, 1, 1}}};
  std::vector<K> ncu_names{
      {"void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)", {8, 3, 1}, {256, 1, 1}},
      {"fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, arch::Sm80, 1, 64, 64, "
       "64, 1, 1>::Params)", {2, 12, 4}, {32, 4, 1}},
      {"void cublasLt::globalKernel<8, 32, float, float, float, 1, 1, 1>(int, int, long, T3 *, cublasLtEpilogue_t, int, "
       "T4 *, long, void *, long, long, long, T5 *, long, int *)", {4, 1, 1}, {256, 1, 1}}};
  NcuMatch m = match_ncu(make_timeline(torch_names), make_ncu(ncu_names));
  EXPECT_EQ(m.matched, 3u);
  EXPECT_FALSE(m.used_mangled_names);
}

TEST(NcuMatch, MangledNamesOnBothSidesCompareExactly) {
  const std::string kernel2 = "_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_256x128_8x4_nn_align1EEvNT_6ParamsE";
  const std::string other_kernel2 = "_ZN7cutlass7Kernel2I42cutlass_80_simt_sgemm_128x64_8x5_nn_align1EEvNT_6ParamsE";
  std::vector<K> kernels{{"triton_poi_fused_0"}, {kernel2}, {"triton_poi_fused_0"}};
  Timeline tl = make_timeline(named({"triton_poi_fused_0",
                                     "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>("
                                     "cutlass_80_simt_sgemm_256x128_8x4_nn_align1::Params)",
                                     "triton_poi_fused_0"}));
  for (std::size_t k = 0; k < tl.kernels.size(); ++k) tl.kernels.mangled[k] = tl.strings.intern(kernels[k].name);

  // Exact comparison tells the two Kernel2 instantiations apart, which the base name cannot.
  NcuMatch exact = match_ncu(tl, make_ncu(kernels));
  EXPECT_TRUE(exact.used_mangled_names);
  EXPECT_EQ(exact.matched, 3u);
  NcuMatch different = match_ncu(tl, make_ncu({{"triton_poi_fused_0"}, {other_kernel2}, {"triton_poi_fused_0"}}));
  EXPECT_TRUE(different.used_mangled_names);
  EXPECT_EQ(different.matched, 2u);
  EXPECT_EQ(different.unmatched_kernels, (std::vector<std::uint32_t>{1}));
  EXPECT_TRUE(any_note_contains(different, "exact mangled name"));

  // Mangled timeline names against ncu's demangled spelling: base names, demangling the timeline side.
  NcuMatch demangled = match_ncu(
      tl, make_ncu(named({"triton_poi_fused_0", "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)",
                          "triton_poi_fused_0"})));
  EXPECT_FALSE(demangled.used_mangled_names);
  EXPECT_EQ(demangled.matched, 3u);

  // A tracer that left only the mangled name in the name column.
  Timeline raw = make_timeline(kernels);
  NcuMatch from_mangled = match_ncu(
      raw, make_ncu(named({"triton_poi_fused_0", "void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(T1::Params)",
                           "triton_poi_fused_0"})));
  EXPECT_EQ(from_mangled.matched, 3u);
}

TEST(NcuMatch, TimelineOrderIsLaunchOrderNotStartOrder) {
  // Launched a, b, c, d on two streams; b and d (stream 2) start before a and c finish their queue.
  Timeline tl = make_timeline(named({"a", "b", "c", "d"}));
  const std::int64_t starts[] = {5000, 1000, 9000, 2000};
  for (std::uint32_t k = 0; k < 4; ++k) {
    tl.kernels.start_ns[k] = starts[k];
    tl.kernels.end_ns[k] = starts[k] + 500;
    tl.kernels.stream[k] = k % 2 ? 2 : 1;
    tl.launches.add(tl.strings.intern("cudaLaunchKernel"), 4242, 1, 100 * (k + 1), 100 * (k + 1) + 50, k + 1);
  }
  NcuTable ncu = make_ncu(named({"a", "b", "c", "d"}));
  NcuMatch m = match_ncu(tl, ncu);
  EXPECT_EQ(m.matched, 4u);
  EXPECT_EQ(rows_of(m), (std::vector<std::uint32_t>{0, 1, 2, 3}));

  // Without launch rows the start order (b, d, a, c) is all there is, and it does not fit the replay.
  Timeline no_launches = make_timeline(named({"a", "b", "c", "d"}));
  for (std::uint32_t k = 0; k < 4; ++k) no_launches.kernels.start_ns[k] = starts[k];
  NcuMatch by_start = match_ncu(no_launches, ncu);
  EXPECT_EQ(by_start.matched, 2u);

  // A launch of another process with the same correlation id does not count.
  Timeline other_pid = make_timeline(named({"a", "b", "c", "d"}));
  for (std::uint32_t k = 0; k < 4; ++k) {
    other_pid.kernels.start_ns[k] = starts[k];
    other_pid.launches.add(tl.strings.intern("cudaLaunchKernel"), 1, 1, 100 * (k + 1), 100 * (k + 1) + 50, k + 1);
  }
  EXPECT_EQ(match_ncu(other_pid, ncu).matched, 2u);
}

TEST(NcuMatch, MemcpyAndMemsetAreNeverMatched) {
  Timeline tl = make_timeline(named({"a", "b"}));
  tl.kernels.add(ActivityKind::kMemcpy, tl.strings.intern("Memcpy HtoD"), 0, 7, 500, 600);
  tl.kernels.add(ActivityKind::kMemset, tl.strings.intern("a"), 0, 7, 700, 800);
  NcuMatch m = match_ncu(tl, make_ncu(named({"a", "b"})));
  EXPECT_EQ(m.matched, 2u);
  EXPECT_EQ(rows_of(m), (std::vector<std::uint32_t>{0, 1, kNoIndex, kNoIndex}));
  EXPECT_TRUE(m.unmatched_kernels.empty());
}

TEST(NcuMatch, ProcessesPairByOrderOfFirstAppearance) {
  // Two processes in the capture (pids 10 and 20), replayed by ncu as pids 900 and 700.
  Timeline tl = make_timeline(named({"a", "b", "x", "y"}));
  tl.kernels.pid = {10, 10, 20, 20};
  tl.kernels.start_ns = {0, 10, 5, 15};
  NcuTable ncu = make_ncu(named({"a", "x", "b", "y"}));
  ncu.pid = {900, 700, 900, 700};
  NcuMatch m = match_ncu(tl, ncu);
  EXPECT_EQ(m.matched, 4u);
  EXPECT_EQ(rows_of(m), (std::vector<std::uint32_t>{0, 2, 1, 3}));
  EXPECT_TRUE(any_note_contains(m, "timeline process 10 is paired with ncu process 900")) << all_notes(m);

  // The same pids pair directly, whatever their order.
  ncu.pid = {10, 20, 10, 20};
  m = match_ncu(tl, ncu);
  EXPECT_EQ(rows_of(m), (std::vector<std::uint32_t>{0, 2, 1, 3}));
}

TEST(NcuMatch, DivergenceNotesAreCapped) {
  std::vector<std::string> names, replayed;
  for (int i = 0; i < 200; ++i) {
    names.push_back("k" + std::to_string(i));
    replayed.push_back(names.back());
    if (i % 4 == 0) replayed.push_back("extra" + std::to_string(i));
  }
  NcuMatch m = match_ncu(make_timeline(named(names)), make_ncu(named(replayed)));
  EXPECT_EQ(m.matched, 200u);
  EXPECT_EQ(m.unmatched_rows.size(), 50u);
  EXPECT_LE(m.notes.size(), 22u);
  EXPECT_TRUE(contains(m.notes.back(), "and 30 more divergent stretches (30 ncu rows, 0 timeline kernels) not listed"))
      << all_notes(m);
}

TEST(NcuMatch, FallsBackToOccurrenceOrderWhenTheSequencesAreTooFarApart) {
  // 150k distinct kernels each side, of which the second half differ: edit distance 150k, past the limit.
  std::vector<K> tl_kernels, ncu_kernels;
  for (int i = 0; i < 150000; ++i) {
    tl_kernels.push_back({"k" + std::to_string(i)});
    ncu_kernels.push_back({i < 75000 ? tl_kernels.back().name : "r" + std::to_string(i)});
  }
  // Move the shared half apart so that the common prefix does not absorb it.
  std::rotate(ncu_kernels.begin(), ncu_kernels.begin() + 75000, ncu_kernels.end());
  std::reverse(tl_kernels.begin(), tl_kernels.begin() + 75000);
  std::reverse(ncu_kernels.begin() + 75000, ncu_kernels.end());
  NcuMatch m = match_ncu(make_timeline(tl_kernels), make_ncu(ncu_kernels));
  EXPECT_EQ(m.matched, 75000u);
  EXPECT_TRUE(any_note_contains(m, "paired the k-th occurrence")) << m.notes.front();
}

TEST(NcuMatch, MillionKernelsInAgreementMatchFast) {
  std::vector<std::string> family{"triton_poi_fused_add_0", "void at::native::vectorized_elementwise_kernel<4>(int)",
                                  "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3", "triton_red_fused_1"};
  const std::size_t n = 1'000'000;
  Timeline tl;
  tl.kernels.reserve(n);
  NcuTable ncu;
  ncu.path = "big.ncu.csv";
  const StrId launch_api = tl.strings.intern("cudaLaunchKernel");
  for (std::size_t i = 0; i < n; ++i) {
    const std::string& name = family[i % family.size()];
    Dim3 grid{static_cast<std::uint32_t>(1 + i % 7), 1, 1};
    std::size_t k = tl.kernels.add(ActivityKind::kKernel, tl.strings.intern(name), 0, 7,
                                   static_cast<std::int64_t>(i) * 10, static_cast<std::int64_t>(i) * 10 + 5);
    tl.kernels.grid[k] = grid;
    tl.kernels.block[k] = Dim3{128, 1, 1};
    tl.kernels.correlation[k] = i + 1;
    tl.launches.add(launch_api, 0, 1, static_cast<std::int64_t>(i) * 10 - 3, static_cast<std::int64_t>(i) * 10 - 1, i + 1);
    ncu.id.push_back(i);
    ncu.pid.push_back(1);
    ncu.kernel_name.push_back(name);
    ncu.context.push_back(1);
    ncu.stream.push_back(7);
    ncu.device.push_back(0);
    ncu.grid.push_back(grid);
    ncu.block.push_back(Dim3{128, 1, 1});
    ncu.line.push_back(i + 3);
  }
  auto start = std::chrono::steady_clock::now();
  NcuMatch m = match_ncu(tl, ncu);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(m.matched, n);
  EXPECT_EQ(m.ncu_row_for_kernel[n - 1], n - 1);
  RecordProperty("seconds", std::to_string(seconds));  // recorded, not asserted: timings belong in bench/
}

TEST(NcuMatch, TheRealCompiledGpt2StepMatchesTheEndOfTheWholeProcessReplay) {
  // ncu replayed the whole process (compile, autotuning, 3 warm-ups, the step: 629 kernels); torch.profiler
  // recorded the step (157 kernels, its own spelling, in launch order).
  NcuTable ncu = read_ncu_csv(kFixtures + "gpt2_compiled.ncu.csv.gz");
  ASSERT_EQ(ncu.rows(), 629u);
  auto rows = read_tsv(kFixtures + "gpt2_compiled_step_kernels.tsv");
  ASSERT_EQ(rows.size(), 157u);
  std::vector<K> step;
  for (const auto& row : rows) step.push_back({row.at(0), parse_dim(row.at(1)), parse_dim(row.at(2))});
  Timeline tl = make_timeline(step, 506);

  NcuMatch m = match_ncu(tl, ncu);
  EXPECT_EQ(m.matched, 157u);
  EXPECT_TRUE(m.unmatched_kernels.empty());
  EXPECT_EQ(m.unmatched_rows.size(), 472u);
  EXPECT_EQ(m.grid_block_disagreements, 0u);
  // The step is the last thing the process ran: it pairs with the last 157 rows, in order.
  for (std::uint32_t k = 0; k < 157; ++k) EXPECT_EQ(m.ncu_row_for_kernel[k], 472 + k);
  EXPECT_EQ(m.notes.front(), "matched 157 of 157 timeline kernels and 157 of 629 ncu rows by kernel name, grid and block");
  EXPECT_TRUE(any_note_contains(m, "ncu IDs 0-471 (472 rows: ")) << all_notes(m);
}

// ---------------------------------------------------------------------------------------------------------
// Launch configurations that differ between the timeline's run and ncu's

namespace {

// A compiled step as two processes that autotuned apart record it: the same kernels in the same order,
// two Triton kernels with another grid and block in ncu's run.
std::vector<K> autotuned_step(bool ncu_run) {
  const Dim3 g1 = ncu_run ? Dim3{1536, 1, 1} : Dim3{3072, 1, 1};
  const Dim3 b1 = ncu_run ? Dim3{128, 1, 1} : Dim3{256, 1, 1};
  const Dim3 b2 = ncu_run ? Dim3{64, 1, 1} : Dim3{128, 1, 1};
  return {{"gemm", {12, 4, 1}, {256, 1, 1}}, {"triton_poi_fused_add_0", g1, b1}, {"gemm", {12, 4, 1}, {256, 1, 1}},
          {"triton_red_fused_sum_1", {64, 1, 1}, b2}, {"triton_poi_fused_add_0", g1, b1},
          {"triton_per_fused_layer_norm_2", {96, 1, 1}, {128, 1, 1}}};
}

}  // namespace

TEST(NcuMatch, AnotherLaunchConfigurationOfTheSameKernelPairsInOrderAndIsFlagged) {
  Timeline tl = make_timeline(autotuned_step(false));
  NcuTable ncu = make_ncu(autotuned_step(true));
  NcuMatch m = match_ncu(tl, ncu);
  EXPECT_EQ(rows_of(m), (std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(m.unmatched_rows.empty());
  EXPECT_TRUE(m.unmatched_kernels.empty());
  EXPECT_EQ(m.launch_config_differs, 3u);
  EXPECT_EQ(m.launch_config_kernel_for_ncu_row, (std::vector<std::uint32_t>{kNone, 1, kNone, 3, 4, kNone}));
  EXPECT_EQ(m.grid_block_disagreements, 0u) << "pairs of one identity only";
  EXPECT_FALSE(m.strict_launch_config);
  EXPECT_TRUE(any_note_contains(m, "3 ncu rows matched a kernel of the same name and invocation order whose grid or "
                                   "block differ"))
      << all_notes(m);
  EXPECT_TRUE(any_note_contains(m, "triton_poi_fused_add_0 grid 3072x1x1 block 256x1x1 in the timeline, grid "
                                   "1536x1x1 block 128x1x1 in ncu (2x)"))
      << all_notes(m);
}

TEST(NcuMatch, StrictLaunchConfigLeavesSuchPairsUnmatchedAndReported) {
  Timeline tl = make_timeline(autotuned_step(false));
  NcuTable ncu = make_ncu(autotuned_step(true));
  NcuMatch m = match_ncu(tl, ncu, NcuMatchOptions{true});
  EXPECT_EQ(rows_of(m), (std::vector<std::uint32_t>{0, kNone, 2, kNone, kNone, 5}));
  EXPECT_EQ(m.unmatched_rows, (std::vector<std::uint32_t>{1, 3, 4}));
  EXPECT_EQ(m.unmatched_kernels, (std::vector<std::uint32_t>{1, 3, 4}));
  EXPECT_EQ(m.launch_config_differs, 3u);
  EXPECT_EQ(m.launch_config_kernel_for_ncu_row[1], 1u) << "the refused partner is still named";
  EXPECT_TRUE(m.strict_launch_config);
  EXPECT_TRUE(any_note_contains(m, "were refused (--strict-launch-config)")) << all_notes(m);
  EXPECT_TRUE(any_note_contains(m, "neither has a counterpart")) << all_notes(m);
}

TEST(NcuMatch, OnlyEqualNamesPairAcrossLaunchConfigurationsNeverSubstrings) {
  // triton_poi_fused_add_0 vs triton_poi_fused_add_0_1 (one name a prefix of the other) and a kernel ncu
  // replayed in another place do not pair.
  std::vector<K> timeline{{"a"}, {"triton_poi_fused_add_0", {8, 1, 1}, {256, 1, 1}}, {"b"}, {"c"}};
  std::vector<K> replayed{{"a"}, {"triton_poi_fused_add_0_1", {4, 1, 1}, {128, 1, 1}}, {"b"},
                          {"triton_poi_fused_add_0", {4, 1, 1}, {128, 1, 1}}, {"c"}};
  NcuMatch m = match_ncu(make_timeline(timeline), make_ncu(replayed));
  EXPECT_EQ(rows_of(m), (std::vector<std::uint32_t>{0, kNone, 2, 4}));
  EXPECT_EQ(m.launch_config_differs, 0u);
}

TEST(NcuMatch, ARealCompiledGpt2CsvAutotunedInAnotherRunStillMatchesEveryRowOnce) {
  // tests/fixtures/gpt2_compiled's step (126 kernels, every ncu row matched by full identity), with the
  // CSV's Triton kernels of two names given the grid and block another autotuning would pick: half the
  // block, twice the blocks in the grid.
  const std::string dir = std::string(OPPROF_FIXTURES_DIR) + "/gpt2_compiled/";
  NcuTable original = read_ncu_csv(dir + "ncu.csv.gz");
  NcuTable ncu = read_ncu_csv(dir + "ncu.csv.gz");
  std::vector<std::string> retuned;
  for (std::size_t r = 0; r < ncu.rows() && retuned.size() < 2; ++r)
    if (starts_with(ncu.kernel_name[r], "triton_") && ncu.block[r].x >= 64 &&
        std::find(retuned.begin(), retuned.end(), ncu.kernel_name[r]) == retuned.end())
      retuned.push_back(ncu.kernel_name[r]);
  ASSERT_EQ(retuned.size(), 2u);
  std::size_t edited = 0;
  for (std::size_t r = 0; r < ncu.rows(); ++r) {
    if (std::find(retuned.begin(), retuned.end(), ncu.kernel_name[r]) == retuned.end()) continue;
    ncu.block[r].x /= 2;
    ncu.grid[r].x *= 2;
    ++edited;
  }
  ASSERT_GE(edited, 2u);

  Timeline tl = read_kineto_trace(dir + "trace.json.gz");
  NcuMatch exact = match_ncu(tl, original);
  EXPECT_EQ(exact.launch_config_differs, 0u);
  NcuMatch m = match_ncu(tl, ncu);
  EXPECT_EQ(opprof::testing::expect_every_row_matched_once_configs_flagged(tl, ncu, m), edited);
  EXPECT_EQ(m.ncu_row_for_kernel, exact.ncu_row_for_kernel) << "the same pairs as before the edit";

  NcuMatch strict = match_ncu(tl, ncu, NcuMatchOptions{true});
  EXPECT_EQ(strict.unmatched_rows.size(), edited);
  EXPECT_EQ(strict.matched, ncu.rows() - edited);
}
