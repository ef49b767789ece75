// Writes a synthetic torch.profiler (Kineto) trace of a transformer's inference
// forward steps, with the structure and formatting of the real ones (tests/fixtures/kineto): module
// annotations around ATen operators nested a few deep, runtime and driver launch calls with correlation
// and External ids, ac2g flow arrows, kernels with demangled CUTLASS / ATen / Triton names on one or two
// streams, a few memcpys and memsets, compiled steps with "## Call CompiledFxGraph" regions and their
// gpu_user_annotation, CUDA-graph replays (torch.compile's "reduce-overhead": one cudaGraphLaunch whose
// correlation every kernel of the graph carries, as tests/fixtures/field/*_reduce-overhead have), and
// optionally python_function frames. The output is deterministic for a seed.
//
// Events are written the way Kineto writes them: first every CPU-side range (per thread, by start time),
// then the GPU activities with their launches and flow events, then process/thread metadata. A step is
// simulated in memory (its ranges need their end before they are written); the simulation runs twice,
// once per section, from the same seed.
#include "synthetic_trace.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "contract/opprof_contract.h"

namespace opprof::bench {
namespace {

using Options = SyntheticTraceOptions;

// splitmix64: small, fast, and the same sequence on every platform (std distributions are not).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::int64_t range(std::int64_t lo, std::int64_t hi) {  // inclusive
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  bool chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

 private:
  std::uint64_t state_;
};

struct Dim {
  std::uint32_t x, y, z;
};

struct KernelKind {
  std::string_view name;
  Dim grid, block;
  std::uint32_t registers;
  std::uint32_t shared_mem;
  std::int64_t min_ns, max_ns;
};

// Names as torch.profiler prints them on an H100/H200 (demangled), grids and costs of GPT-2-sized shapes.
const KernelKind kGemmSm90{
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__"
    "5x_cublas",
    {6, 4, 1}, {384, 1, 1}, 168, 213248, 9000, 16000};
const KernelKind kGemmCutlass3{
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, "
    "cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90TmaGmmaWarpSpecializedCooperative<4, "
    "cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, cutlass::gemm::KernelTmaWarpSpecializedCooperative>, "
    "cute::tuple<cute::C<128>, cute::C<256>, cute::C<64> >, cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, "
    "long>, cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, long>, cute::TiledMMA<cute::MMA_Atom<cute::SM90_"
    "64x256x16_F32BF16BF16_SS<(cute::GMMA::Major)0, (cute::GMMA::Major)0, (cute::GMMA::ScaleIn)1, "
    "(cute::GMMA::ScaleIn)1> >, cute::Layout<cute::tuple<cute::C<2>, cute::C<1>, cute::C<1> >, "
    "cute::tuple<cute::C<1>, cute::C<0>, cute::C<0> > > > >, void, cutlass::epilogue::collective::Epilogue"
    "<cute::tuple<long, cute::C<1>, long>, cutlass::epilogue::thread::LinearCombination<cutlass::bfloat16_t, 8, "
    "float, float, (cutlass::epilogue::thread::ScaleType::Kind)0, (cutlass::FloatRoundStyle)2, "
    "cutlass::bfloat16_t> >, cutlass::gemm::PersistentScheduler> >(cutlass::gemm::kernel::GemmUniversal<cute::"
    "tuple<int, int, int, int>, void, void, cutlass::gemm::PersistentScheduler>::Params)",
    {132, 1, 1}, {384, 1, 1}, 168, 232448, 20000, 42000};
const KernelKind kGemmSimt{
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x64_8x5_nn_align1>(cutlass_80_simt_sgemm_128x64_8x5_nn_align1::"
    "Params)",
    {64, 1, 5}, {128, 1, 1}, 120, 30720, 12000, 30000};
const KernelKind kSplitKReduce{
    "void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, float, float, float, true, "
    "false, false, false>(cublasLt::cublasSplitKParams<float>, float const*, float const*, float*, float*, float "
    "const*, float const*, float const*, float const*, float*, void*, long, float*, int*)",
    {24, 32, 1}, {32, 16, 1}, 32, 0, 1500, 3000};
const KernelKind kLayerNorm{
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, false>(int, float, float "
    "const*, float const*, float const*, float*, float*, float*)",
    {512, 1, 1}, {32, 4, 1}, 39, 24, 3000, 5000};
const KernelKind kAttention{
    "fmha_cutlassF_f32_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80, "
    "true, 64, 64, 64, true, true>::Params)",
    {2, 12, 4}, {32, 4, 1}, 168, 36352, 18000, 26000};
const KernelKind kGelu{
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
    "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, "
    "std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::"
    "{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)",
    {1536, 1, 1}, {128, 1, 1}, 32, 0, 4000, 7000};
const KernelKind kAdd{
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> "
    ">(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
    {384, 1, 1}, {128, 1, 1}, 32, 0, 2500, 4000};
const KernelKind kTritonLayerNorm{"triton_per_fused_add_native_layer_norm_view_0", {512, 1, 1}, {256, 1, 1}, 30, 32,
                                  3000, 4500};
const KernelKind kTritonSplit{"triton_poi_fused_cat_split_transpose_view_1", {768, 1, 1}, {256, 1, 1}, 16, 0, 2000,
                              3000};
const KernelKind kTritonGelu{"triton_poi_fused_add_addmm_gelu_view_2", {1536, 1, 1}, {128, 1, 1}, 27, 0, 4000, 6000};
const KernelKind kTritonSoftmax{"triton_red_fused__softmax_3", {1536, 1, 1}, {256, 1, 1}, 40, 192, 5000, 8000};
const KernelKind kForeachCopy{
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
    "TensorListMetadata<2>, at::native::(anonymous namespace)::UnaryOpFunctor<float, 2, 1, 1>, at::native::Copy<float, "
    "float> >(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::"
    "UnaryOpFunctor<float, 2, 1, 1>, at::native::Copy<float, float>)",
    {19, 1, 1}, {512, 1, 1}, 32, 0, 12000, 20000};
const KernelKind kMemcpyHtoD{"Memcpy HtoD (Pageable -> Device)", {0, 0, 0}, {0, 0, 0}, 0, 0, 8000, 40000};
const KernelKind kMemset{"Memset (Device)", {0, 0, 0}, {0, 0, 0}, 0, 0, 800, 1200};

enum class Api { kLaunchKernel, kLaunchKernelExC, kCuLaunchKernel, kMemcpyAsync, kMemsetAsync, kGraphLaunch };
std::string_view api_name(Api a) {
  switch (a) {
    case Api::kLaunchKernel: return "cudaLaunchKernel";
    case Api::kLaunchKernelExC: return "cudaLaunchKernelExC";
    case Api::kCuLaunchKernel: return "cuLaunchKernel";
    case Api::kMemcpyAsync: return "cudaMemcpyAsync";
    case Api::kMemsetAsync: return "cudaMemsetAsync";
    case Api::kGraphLaunch: return "cudaGraphLaunch";
  }
  return "";
}
int api_cbid(Api a) {
  switch (a) {
    case Api::kLaunchKernel: return 211;
    case Api::kLaunchKernelExC: return 430;
    case Api::kCuLaunchKernel: return 307;
    case Api::kMemcpyAsync: return 41;
    case Api::kMemsetAsync: return 51;
    case Api::kGraphLaunch: return 311;
  }
  return 0;
}

// Operator arguments as record_shapes prints them; they make up much of a real trace's bytes.
constexpr std::string_view kAddmmArgs =
    R"("Concrete Inputs": ["", "", "", "1", "1"], "Input type": ["float", "float", "float", "Scalar", "Scalar"], )"
    R"("Input Strides": [[1], [768, 1], [2304, 1], [], []], "Input Dims": [[2304], [512, 768], [768, 2304], [], []])";
constexpr std::string_view kLinearArgs =
    R"("Concrete Inputs": ["", "", ""], "Input type": ["float", "float", "float"], )"
    R"("Input Strides": [[98304, 768, 1], [768, 1], [1]], "Input Dims": [[4, 128, 768], [2304, 768], [2304]])";
constexpr std::string_view kTArgs =
    R"("Concrete Inputs": [""], "Input type": ["float"], "Input Strides": [[768, 1]], "Input Dims": [[2304, 768]])";
constexpr std::string_view kTransposeArgs =
    R"("Concrete Inputs": ["", "1", "2"], "Input type": ["float", "Scalar", "Scalar"], )"
    R"("Input Strides": [[294912, 2304, 64, 1], [], []], "Input Dims": [[4, 128, 12, 64], [], []])";
constexpr std::string_view kAsStridedArgs =
    R"("Concrete Inputs": ["", "[512, 768]", "[1, 0]", ""], "Input type": ["float", "ScalarList", "ScalarList", ""], )"
    R"("Input Strides": [[512, 1], [], [], []], "Input Dims": [[512, 1], [], [], []])";
constexpr std::string_view kLayerNormArgs =
    R"("Concrete Inputs": ["", "[768]", "", "", "1.0000000000000001e-05", "True"], )"
    R"("Input type": ["float", "ScalarList", "float", "float", "Scalar", "Scalar"], )"
    R"("Input Strides": [[98304, 768, 1], [], [1], [1], [], []], "Input Dims": [[4, 128, 768], [], [768], [768], [], []])";
constexpr std::string_view kNativeLayerNormArgs =
    R"("Concrete Inputs": ["", "[768]", "", "", "1.0000000000000001e-05"], )"
    R"("Input type": ["float", "ScalarList", "float", "float", "Scalar"], )"
    R"("Input Strides": [[98304, 768, 1], [], [1], [1], []], "Input Dims": [[4, 128, 768], [], [768], [768], []])";
constexpr std::string_view kSdpaArgs =
    R"("Concrete Inputs": ["", "", "", "", "0.", "True", "0.125", "False"], )"
    R"("Input type": ["float", "float", "float", "", "Scalar", "Scalar", "Scalar", "Scalar"], )"
    R"("Input Strides": [[294912, 64, 2304, 1], [98304, 8192, 64, 1], [98304, 8192, 64, 1], [], [], [], [], []], )"
    R"("Input Dims": [[4, 12, 128, 64], [4, 12, 128, 64], [4, 12, 128, 64], [], [], [], [], []])";
constexpr std::string_view kEfficientAttentionArgs =
    R"("Concrete Inputs": ["", "", "", "", "", "", "", "", "0.", "1", "False", "0.125", "", ""], )"
    R"("Input type": ["float", "float", "float", "", "", "", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "", ""], )"
    R"("Input Strides": [[294912, 2304, 64, 1], [98304, 64, 8192, 1], [98304, 64, 8192, 1], [], [], [], [], [], [], )"
    R"([], [], [], [], []], "Input Dims": [[4, 128, 12, 64], [4, 128, 12, 64], [4, 128, 12, 64], [], [], [], [], [], )"
    R"([], [], [], [], [], []])";
constexpr std::string_view kEmptyArgs =
    R"("Concrete Inputs": ["[4, 12, 128]", "6", "0", "", "", ""], "Input type": ["ScalarList", "Scalar", "Scalar", )"
    R"("", "", ""], "Input Strides": [[], [], [], [], [], []], "Input Dims": [[], [], [], [], [], []])";
constexpr std::string_view kGeluArgs =
    R"("Concrete Inputs": ["", "none"], "Input type": ["float", "str"], "Input Strides": [[393216, 3072, 1], []], )"
    R"("Input Dims": [[4, 128, 3072], []])";
constexpr std::string_view kAddArgs =
    R"("Concrete Inputs": ["", "", "1"], "Input type": ["float", "float", "Scalar"], )"
    R"("Input Strides": [[98304, 768, 1], [98304, 768, 1], []], "Input Dims": [[4, 128, 768], [4, 128, 768], []])";
constexpr std::string_view kCopyArgs =
    R"("Concrete Inputs": ["", "", "False"], "Input type": ["long int", "long int", "Scalar"], )"
    R"("Input Strides": [[128, 1], [128, 1], []], "Input Dims": [[4, 128], [4, 128], []])";
constexpr std::string_view kMmArgs =
    R"("Concrete Inputs": ["", ""], "Input type": ["float", "float"], "Input Strides": [[768, 1], [1, 768]], )"
    R"("Input Dims": [[512, 768], [768, 3072]])";
constexpr std::string_view kNoArgs = "";

enum class RangeCat { kCpuOp, kUserAnnotation, kPythonFunction };

struct Range {
  RangeCat cat;
  std::string name;
  std::string_view shapes;  // record_shapes arguments, cpu_op only
  std::int64_t start = 0, end = 0;
  std::uint64_t external_id = 0;
  std::uint64_t ev_idx = 0;
  std::uint64_t python_id = 0, python_parent = 0;
};

struct Launch {
  Api api;
  const KernelKind* kernel;
  std::uint32_t stream;
  std::int64_t cpu_start, cpu_end, gpu_start, gpu_end;
  std::uint64_t correlation, external_id;
  std::uint64_t bytes;
  // The runtime call is written with the activity; false for a CUDA graph's kernels after its first, which
  // share the one cudaGraphLaunch (and its correlation).
  bool writes_call = true;
};

struct GpuAnnotation {
  std::string name;
  std::uint32_t stream;
  std::int64_t start, end;
  std::uint64_t external_id;
};

struct Step {
  std::vector<Range> ranges;  // in start order: a parent before its children
  std::vector<Launch> launches;
  std::vector<GpuAnnotation> gpu_annotations;
  void clear() {
    ranges.clear();
    launches.clear();
    gpu_annotations.clear();
  }
};

constexpr std::uint32_t kPid = 457;
constexpr std::uint32_t kDevice = 0;
constexpr std::uint32_t kMainStream = 7;
constexpr std::uint32_t kSideStream = 22;
constexpr std::int64_t kStartNs = 5104113812853425;  // a real trace's clock: µs values of 13 digits

// One CPU thread running a GPT-2-like model step after step, launching onto its stream(s).
class ThreadSimulation {
 public:
  ThreadSimulation(const Options& options, int thread_index, std::uint64_t kernel_quota)
      : options_(options),
        rng_(options.seed * 1000003 + static_cast<std::uint64_t>(thread_index)),
        tid_(kPid + static_cast<std::uint64_t>(thread_index)),
        quota_(kernel_quota),
        id_base_(static_cast<std::uint64_t>(thread_index) * 1'000'000'000ULL) {
    clock_ = kStartNs + static_cast<std::int64_t>(thread_index) * 1000;
    stream_clock_[0] = stream_clock_[1] = clock_;
    main_stream_ = kMainStream + static_cast<std::uint32_t>(thread_index) * 2;
    side_stream_ = options.streams > 1 ? kSideStream + static_cast<std::uint32_t>(thread_index) * 2 : main_stream_;
  }

  std::uint64_t tid() const { return tid_; }
  std::uint32_t main_stream() const { return main_stream_; }
  std::uint32_t side_stream() const { return side_stream_; }
  bool done() const { return kernels_ >= quota_; }

  // Simulates the next step into step; false once the kernel quota was reached before it.
  bool next_step(Step& step) {
    if (done()) return false;
    step_ = &step;
    step.clear();
    ++step_index_;
    const std::size_t profiler_step = open(RangeCat::kUserAnnotation, fmt::format("ProfilerStep#{}", step_index_));
    const std::size_t first_launch = step.launches.size();
    if (rng_.chance(0.3)) copy_inputs();
    // Drawn only when asked for, so that traces without graphs keep their bytes for a seed.
    if (options_.cuda_graph_fraction > 0 && rng_.chance(options_.cuda_graph_fraction))
      graph_forward();
    else if (rng_.chance(options_.compiled_fraction))
      compiled_forward();
    else
      eager_forward();
    close(profiler_step);
    annotate_stream("ProfilerStep#" + std::to_string(step_index_), first_launch, step.ranges[profiler_step]);
    clock_ += rng_.range(20000, 60000);  // the Python loop between steps
    return true;
  }

 private:
  // ---- ranges ----
  std::size_t open(RangeCat cat, std::string name, std::string_view shapes = kNoArgs) {
    clock_ += rng_.range(300, 2500);
    Range r;
    r.cat = cat;
    r.name = std::move(name);
    r.shapes = shapes;
    r.start = clock_;
    r.ev_idx = ev_idx_++;
    if (cat == RangeCat::kPythonFunction) {
      r.python_id = ++python_id_;
      r.python_parent = python_stack_.empty() ? 0 : python_stack_.back();
      python_stack_.push_back(r.python_id);
    } else {
      r.external_id = id_base_ + ++external_id_;
      ext_stack_.push_back(r.external_id);
    }
    step_->ranges.push_back(std::move(r));
    clock_ += rng_.range(500, 4000);
    return step_->ranges.size() - 1;
  }
  void close(std::size_t index) {
    clock_ += rng_.range(500, 3000);
    Range& r = step_->ranges[index];
    r.end = clock_;
    if (r.cat == RangeCat::kPythonFunction)
      python_stack_.pop_back();
    else
      ext_stack_.pop_back();
  }

  // ---- launches ----
  void launch(Api api, const KernelKind& kernel, std::uint32_t stream, std::uint64_t bytes = 0) {
    if (done()) return;
    ++kernels_;
    clock_ += rng_.range(800, 3000);
    Launch l{};
    l.api = api;
    l.kernel = &kernel;
    l.stream = stream;
    l.cpu_start = clock_;
    l.cpu_end = clock_ + rng_.range(3500, 12000);
    correlation_ += static_cast<std::uint64_t>(rng_.range(1, 4));  // other runtime calls use ids too
    l.correlation = id_base_ + correlation_;
    l.external_id = ext_stack_.empty() ? 0 : ext_stack_.back();
    l.bytes = bytes;
    std::int64_t& stream_clock = stream_clock_[stream == main_stream_ ? 0 : 1];
    l.gpu_start = std::max(stream_clock + rng_.range(500, 2000), l.cpu_start + rng_.range(4000, 15000));
    l.gpu_end = l.gpu_start + rng_.range(kernel.min_ns, kernel.max_ns);
    stream_clock = l.gpu_end;
    clock_ = l.cpu_end;
    step_->launches.push_back(l);
  }

  // One cudaGraphLaunch that runs `kernels` back to back on the main stream, each activity with the
  // launch's correlation and the enclosing range's External id, as CUPTI reports a graph's kernel nodes.
  void graph_launch(const std::vector<const KernelKind*>& kernels) {
    if (done()) return;
    clock_ += rng_.range(800, 3000);
    correlation_ += static_cast<std::uint64_t>(rng_.range(1, 4));
    const std::int64_t cpu_start = clock_, cpu_end = clock_ + rng_.range(150000, 300000);
    std::int64_t& stream_clock = stream_clock_[0];
    stream_clock = std::max(stream_clock, cpu_start + rng_.range(4000, 15000));
    bool first = true;
    for (const KernelKind* kernel : kernels) {
      if (done()) break;
      ++kernels_;
      Launch l{};
      l.api = Api::kGraphLaunch;
      l.kernel = kernel;
      l.stream = main_stream_;
      l.cpu_start = cpu_start;
      l.cpu_end = cpu_end;
      l.correlation = id_base_ + correlation_;
      l.external_id = ext_stack_.empty() ? 0 : ext_stack_.back();
      l.bytes = kernel == &kMemset ? 1800 : 0;
      l.gpu_start = stream_clock + rng_.range(300, 1500);  // no launch gap inside a graph
      l.gpu_end = l.gpu_start + rng_.range(kernel->min_ns, kernel->max_ns);
      l.writes_call = std::exchange(first, false);
      stream_clock = l.gpu_end;
      step_->launches.push_back(l);
    }
    clock_ = cpu_end;
  }

  // A GPU-side copy of a CPU annotation, spanning the kernels launched inside it (Kineto adds these).
  void annotate_stream(std::string name, std::size_t first_launch, const Range& cpu) {
    const auto& launches = step_->launches;
    if (first_launch >= launches.size()) return;
    std::int64_t start = launches[first_launch].gpu_start, end = launches[first_launch].gpu_end;
    for (std::size_t i = first_launch; i < launches.size(); ++i) {
      start = std::min(start, launches[i].gpu_start);
      end = std::max(end, launches[i].gpu_end);
    }
    step_->gpu_annotations.push_back({std::move(name), main_stream_, start, end, cpu.external_id});
  }

  // ---- modules and operators ----
  std::size_t module_open(const std::string& path, std::string_view class_name) {
    if (options_.python_functions) {
      open(RangeCat::kPythonFunction, "torch/nn/modules/module.py(1773): _call_impl");
      // torch numbers module instances ("Linear_3"), not calls: the same module has the same frame name.
      const auto it = module_instances_.try_emplace(path, module_instances_.size()).first;
      open(RangeCat::kPythonFunction, fmt::format("nn.Module: {}_{}", class_name, it->second));
    }
    return open(RangeCat::kUserAnnotation, OPPROF_MODULE_RANGE_PREFIX + path);
  }
  void module_close(std::size_t index) {
    close(index);
    if (options_.python_functions) {
      // The two frames opened before the annotation are the last open python_function ranges.
      std::size_t closed = 0;
      for (std::size_t i = step_->ranges.size(); i-- > 0 && closed < 2;) {
        Range& r = step_->ranges[i];
        if (r.cat == RangeCat::kPythonFunction && r.end == 0) {
          close(i);
          ++closed;
        }
      }
    }
  }

  void linear(const std::string& path, const KernelKind& gemm) {
    if (done()) return;
    const std::size_t m = module_open(path, "Linear");
    const std::size_t op = open(RangeCat::kCpuOp, "aten::linear", kLinearArgs);
    const std::size_t t = open(RangeCat::kCpuOp, "aten::t", kTArgs);
    const std::size_t tr = open(RangeCat::kCpuOp, "aten::transpose", kTransposeArgs);
    close(open(RangeCat::kCpuOp, "aten::as_strided", kAsStridedArgs));
    close(tr);
    close(t);
    const std::size_t addmm = open(RangeCat::kCpuOp, "aten::addmm", kAddmmArgs);
    if (rng_.chance(0.01)) launch(Api::kMemsetAsync, kMemset, side_stream_, 512);  // cuBLAS workspace
    launch(&gemm == &kGemmSm90 ? Api::kLaunchKernelExC : Api::kLaunchKernel, gemm, main_stream_);
    if (&gemm == &kGemmSimt && rng_.chance(0.5)) launch(Api::kLaunchKernel, kSplitKReduce, main_stream_);
    close(addmm);
    close(op);
    module_close(m);
  }

  void layer_norm(const std::string& path) {
    if (done()) return;
    const std::size_t m = module_open(path, "LayerNorm");
    const std::size_t op = open(RangeCat::kCpuOp, "aten::layer_norm", kLayerNormArgs);
    const std::size_t native = open(RangeCat::kCpuOp, "aten::native_layer_norm", kNativeLayerNormArgs);
    launch(Api::kLaunchKernel, kLayerNorm, main_stream_);
    close(native);
    close(op);
    module_close(m);
  }

  void attention_core() {
    if (done()) return;
    const std::size_t sdpa = open(RangeCat::kCpuOp, "aten::scaled_dot_product_attention", kSdpaArgs);
    const std::size_t eff =
        open(RangeCat::kCpuOp, "aten::_scaled_dot_product_efficient_attention", kSdpaArgs);
    for (int i = 0; i < 3; ++i) {
      const std::size_t tr = open(RangeCat::kCpuOp, "aten::transpose", kTransposeArgs);
      close(open(RangeCat::kCpuOp, "aten::as_strided", kAsStridedArgs));
      close(tr);
    }
    const std::size_t fwd = open(RangeCat::kCpuOp, "aten::_efficient_attention_forward", kEfficientAttentionArgs);
    close(open(RangeCat::kCpuOp, "aten::empty", kEmptyArgs));
    close(open(RangeCat::kCpuOp, "aten::empty", kEmptyArgs));
    launch(Api::kLaunchKernel, kAttention, main_stream_);
    close(fwd);
    close(eff);
    close(sdpa);
  }

  void elementwise(std::string_view op_name, std::string_view shapes, const KernelKind& kernel) {
    if (done()) return;
    const std::size_t op = open(RangeCat::kCpuOp, std::string(op_name), shapes);
    // Some elementwise work goes to the side stream when there is one, as with overlapped copies.
    launch(Api::kLaunchKernel, kernel, rng_.chance(0.125) ? side_stream_ : main_stream_);
    close(op);
  }

  void copy_inputs() {
    const std::size_t to = open(RangeCat::kCpuOp, "aten::to", kCopyArgs);
    const std::size_t to_copy = open(RangeCat::kCpuOp, "aten::_to_copy", kCopyArgs);
    const std::size_t copy = open(RangeCat::kCpuOp, "aten::copy_", kCopyArgs);
    launch(Api::kMemcpyAsync, kMemcpyHtoD, side_stream_, 4096);
    close(copy);
    close(to_copy);
    close(to);
  }

  void eager_forward() {
    const std::size_t model = module_open("transformer", "GPT2Model");
    for (int layer = 0; layer < options_.layers && !done(); ++layer) {
      const std::string base = fmt::format("transformer.h.{}", layer);
      const std::size_t block = module_open(base, "Block");
      layer_norm(base + ".ln_1");
      if (!done()) {
        const std::size_t attn = module_open(base + ".attn", "Attention");
        linear(base + ".attn.q_proj", kGemmSm90);
        linear(base + ".attn.k_proj", kGemmSm90);
        linear(base + ".attn.v_proj", kGemmSm90);
        attention_core();
        linear(base + ".attn.c_proj", kGemmSimt);
        module_close(attn);
      }
      elementwise("aten::add", kAddArgs, kAdd);
      layer_norm(base + ".ln_2");
      if (!done()) {
        const std::size_t mlp = module_open(base + ".mlp", "MLP");
        linear(base + ".mlp.c_fc", kGemmCutlass3);
        if (!done()) {
          const std::size_t act = module_open(base + ".mlp.act", "GELU");
          elementwise("aten::gelu", kGeluArgs, kGelu);
          module_close(act);
        }
        linear(base + ".mlp.c_proj", kGemmCutlass3);
        module_close(mlp);
      }
      elementwise("aten::add", kAddArgs, kAdd);
      module_close(block);
    }
    module_close(model);
  }

  // The same model as one Inductor graph: Triton kernels launched through the driver, GEMMs and attention
  // through ATen, inside "## Call CompiledFxGraph" and no module annotations (a compiled graph has none).
  void compiled_forward() {
    close(open(RangeCat::kCpuOp, "TorchDynamo Cache Lookup"));
    const std::size_t region = open(RangeCat::kCpuOp, "Torch-Compiled Region: 0/0");
    close(open(RangeCat::kCpuOp, "Pregraph bytecode"));
    close(open(RangeCat::kCpuOp, "AOTDispatcher Runtime Wrapper Prologue"));
    const std::size_t fn = open(RangeCat::kCpuOp, "CompiledFunction");
    const std::size_t first_launch = step_->launches.size();
    const std::size_t graph =
        open(RangeCat::kUserAnnotation, "## Call CompiledFxGraph fbw5qb3vcxxuww5voxu4sfj4yu265pj65q7w6ux4ihato3twzjzo ##");
    auto triton = [&](const KernelKind& kernel) {
      if (done()) return;
      const std::size_t op = open(RangeCat::kCpuOp, std::string(kernel.name));
      launch(Api::kCuLaunchKernel, kernel, main_stream_);
      close(op);
    };
    auto mm = [&](const KernelKind& gemm) {
      if (done()) return;
      const std::size_t op = open(RangeCat::kCpuOp, "aten::mm", kMmArgs);
      launch(Api::kLaunchKernelExC, gemm, main_stream_);
      close(op);
    };
    for (int layer = 0; layer < options_.layers && !done(); ++layer) {
      triton(kTritonLayerNorm);
      mm(kGemmSm90);
      triton(kTritonSplit);
      if (!done()) {
        const std::size_t eff =
            open(RangeCat::kCpuOp, "aten::_scaled_dot_product_efficient_attention", kSdpaArgs);
        const std::size_t fwd =
            open(RangeCat::kCpuOp, "aten::_efficient_attention_forward", kEfficientAttentionArgs);
        launch(Api::kLaunchKernel, kAttention, main_stream_);
        close(fwd);
        close(eff);
      }
      triton(kTritonSoftmax);
      mm(kGemmSm90);
      triton(kTritonLayerNorm);
      mm(kGemmCutlass3);
      triton(kTritonGelu);
      mm(kGemmCutlass3);
    }
    close(graph);
    annotate_stream(step_->ranges[graph].name, first_launch, step_->ranges[graph]);
    close(fn);
    close(region);
  }

  // The compiled model captured as a CUDA graph (torch.compile mode="reduce-overhead"): the inputs copied into
  // the graph's static buffers, then the whole forward, memsets included, replayed by one cudaGraphLaunch.
  // Like the real traces, no gpu_user_annotation and "## Call CompiledFxGraph" a cpu_op.
  void graph_forward() {
    close(open(RangeCat::kCpuOp, "TorchDynamo Cache Lookup"));
    const std::size_t region = open(RangeCat::kCpuOp, "Torch-Compiled Region: 0/0");
    close(open(RangeCat::kCpuOp, "Pregraph bytecode"));
    close(open(RangeCat::kCpuOp, "AOTDispatcher Runtime Wrapper Prologue"));
    const std::size_t graph =
        open(RangeCat::kCpuOp, "## Call CompiledFxGraph f54dmalsiwlllpetndplynay243v3b6k7z2czghnbwjqdu535fg5 ##");
    const std::size_t copy = open(RangeCat::kCpuOp, "aten::_foreach_copy_");
    launch(Api::kLaunchKernel, kForeachCopy, main_stream_);
    close(copy);
    std::vector<const KernelKind*> nodes;
    for (int layer = 0; layer < options_.layers; ++layer) {
      if (layer % 2 == 0) nodes.push_back(&kMemset);
      for (const KernelKind* k : {&kTritonLayerNorm, &kGemmSm90, &kTritonSplit, &kAttention, &kTritonSoftmax,
                                  &kGemmSm90, &kTritonLayerNorm, &kGemmCutlass3, &kTritonGelu, &kGemmCutlass3})
        nodes.push_back(k);
    }
    graph_launch(nodes);
    close(graph);
    close(region);
  }

  const Options& options_;
  Rng rng_;
  std::uint64_t tid_;
  std::uint64_t quota_;
  std::uint64_t id_base_;
  std::uint32_t main_stream_ = kMainStream, side_stream_ = kMainStream;
  Step* step_ = nullptr;
  std::int64_t clock_ = 0;
  std::int64_t stream_clock_[2] = {0, 0};
  std::uint64_t kernels_ = 0;
  std::uint64_t step_index_ = 0;
  std::uint64_t external_id_ = 0;
  std::uint64_t correlation_ = 0;
  std::uint64_t ev_idx_ = 0;
  std::uint64_t python_id_ = 0;
  std::unordered_map<std::string, std::size_t> module_instances_;
  std::vector<std::uint64_t> ext_stack_;
  std::vector<std::uint64_t> python_stack_;
};

// ---- output -------------------------------------------------------------------------------------

class Writer {
 public:
  explicit Writer(const std::string& path) {
    const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
    if (gz) {
      gz_ = gzopen(path.c_str(), "wb4");
      if (gz_ == nullptr) throw std::runtime_error("cannot open " + path);
      gzbuffer(gz_, 1u << 20);
    } else {
      file_ = std::fopen(path.c_str(), "wb");
      if (file_ == nullptr) throw std::runtime_error("cannot open " + path);
    }
    buf_.reserve(kFlushBytes + (1u << 16));
  }
  ~Writer() {
    if (file_ != nullptr) std::fclose(file_);
    if (gz_ != nullptr) gzclose(gz_);
  }
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  fmt::memory_buffer& buf() { return buf_; }
  void maybe_flush() {
    if (buf_.size() >= kFlushBytes) flush();
  }
  void flush() {
    if (buf_.size() == 0) return;
    if (gz_ != nullptr) {
      if (gzwrite(gz_, buf_.data(), static_cast<unsigned>(buf_.size())) != static_cast<int>(buf_.size()))
        throw std::runtime_error("gzip write failed");
    } else if (std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
      throw std::runtime_error("write failed (disk full?)");
    }
    bytes_ += buf_.size();
    buf_.clear();
  }
  void close() {
    flush();
    if (file_ != nullptr && std::fclose(std::exchange(file_, nullptr)) != 0) throw std::runtime_error("close failed");
    if (gz_ != nullptr && gzclose(std::exchange(gz_, nullptr)) != Z_OK) throw std::runtime_error("gzip close failed");
  }
  std::uint64_t bytes() const { return bytes_; }

 private:
  static constexpr std::size_t kFlushBytes = std::size_t{8} << 20;
  std::FILE* file_ = nullptr;
  gzFile gz_ = nullptr;
  fmt::memory_buffer buf_;
  std::uint64_t bytes_ = 0;
};

// Microseconds with three decimals, as Kineto prints them: 5104113816355.811
struct Us {
  std::int64_t ns;
};

}  // namespace
}  // namespace opprof::bench

template <>
struct fmt::formatter<opprof::bench::Us> : fmt::formatter<std::string_view> {
  auto format(opprof::bench::Us t, format_context& ctx) const {
    const std::int64_t whole = t.ns / 1000, frac = t.ns % 1000;
    return fmt::format_to(ctx.out(), "{}.{:03}", whole, frac);
  }
};

namespace opprof::bench {
namespace {

class TraceWriter {
 public:
  TraceWriter(Writer& out, const std::string& name) : out_(out), name_(name) {}

  void header() {
    fmt::format_to(std::back_inserter(out_.buf()),
                   "\n  {{\n"
                   "    \"schemaVersion\": 1,\n"
                   "    \"deviceProperties\": [\n"
                   "    {{\n"
                   "      \"id\": 0, \"name\": \"NVIDIA H200\", \"totalGlobalMem\": 150109880320,\n"
                   "      \"computeMajor\": 9, \"computeMinor\": 0,\n"
                   "      \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": 2048,\n"
                   "      \"regsPerBlock\": 65536, \"warpSize\": 32,\n"
                   "      \"sharedMemPerBlock\": 49152, \"numSms\": 132\n"
                   "    , \"regsPerMultiprocessor\": 65536, \"sharedMemPerBlockOptin\": 232448, "
                   "\"sharedMemPerMultiprocessor\": 233472\n"
                   "    }}\n"
                   "    ],\n"
                   "      \"trace_id\": \"5EED0F0PR0F0000000000000000000000\",\n"
                   "      \"record_shapes\": 1,\n"
                   "      \"with_modules\": 1,\n"
                   "      \"cupti_version\": 130001,\n"
                   "      \"cuda_driver_version\": 13000,\n"
                   "      \"cuda_runtime_version\": 13000,\n"
                   "  \"displayTimeUnit\": \"ms\",\n"
                   "  \"baseTimeNanoseconds\": 1790857026000000000,\n"
                   "  \"traceEvents\": [");
  }

  void range(const Range& r, std::uint64_t tid) {
    auto o = std::back_inserter(begin_event());
    std::string_view cat = r.cat == RangeCat::kCpuOp            ? "cpu_op"
                           : r.cat == RangeCat::kUserAnnotation ? "user_annotation"
                                                                : "python_function";
    fmt::format_to(o,
                   "  {{\n    \"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {},\n"
                   "    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      ",
                   cat, r.name, kPid, tid, Us{r.start}, Us{r.end - r.start});
    switch (r.cat) {
      case RangeCat::kCpuOp:
        if (r.shapes.empty())
          fmt::format_to(o, "\"External id\": {},\"Record function id\": 0, \"Ev Idx\": {}", r.external_id, r.ev_idx);
        else
          fmt::format_to(o, "\"External id\": {},\"Record function id\": 0, {}, \"Ev Idx\": {}", r.external_id,
                         r.shapes, r.ev_idx);
        break;
      case RangeCat::kUserAnnotation:
        fmt::format_to(o, "\"External id\": {},\"Record function id\": 0, \"scope\": \"user_scope\", \"Ev Idx\": {}",
                       r.external_id, r.ev_idx);
        break;
      case RangeCat::kPythonFunction:
        fmt::format_to(o, "\"Python parent id\": {}, \"Python id\": {}, \"Ev Idx\": {}", r.python_parent, r.python_id,
                       r.ev_idx);
        break;
    }
    fmt::format_to(o, "\n    }}\n  }}");
  }

  void activity(const Launch& l, std::uint64_t tid) {
    const KernelKind& k = *l.kernel;
    const bool is_memcpy = &k == &kMemcpyHtoD, is_memset = &k == &kMemset;
    {
      auto o = std::back_inserter(begin_event());
      const std::string_view cat = is_memcpy ? "gpu_memcpy" : is_memset ? "gpu_memset" : "kernel";
      fmt::format_to(o,
                     "  {{\n    \"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {},\n"
                     "    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      ",
                     cat, k.name, kDevice, l.stream, Us{l.gpu_start}, Us{l.gpu_end - l.gpu_start});
      if (is_memcpy || is_memset) {
        const double gbps = static_cast<double>(l.bytes) / static_cast<double>(l.gpu_end - l.gpu_start);
        fmt::format_to(o,
                       "\"External id\": {},      \"device\": {}, \"context\": 1,      \"stream\": {}, "
                       "\"correlation\": {},      \"bytes\": {}, \"memory bandwidth (GB/s)\": {}",
                       l.external_id, kDevice, l.stream, l.correlation, l.bytes, gbps);
      } else {
        const std::uint64_t blocks = std::uint64_t{k.grid.x} * k.grid.y * k.grid.z;
        const double blocks_per_sm = static_cast<double>(blocks) / 132.0;
        const double warps_per_sm = blocks_per_sm * static_cast<double>(k.block.x * k.block.y * k.block.z) / 32.0;
        const auto occupancy = static_cast<int>(std::min(100.0, warps_per_sm / 64.0 * 100.0));
        fmt::format_to(o,
                       "\"External id\": {},      \"queued\": 0, \"device\": {}, \"context\": 1,      \"stream\": {}, "
                       "\"correlation\": {},      \"registers per thread\": {},      \"shared memory\": {},      "
                       "\"blocks per SM\": {:.6f},      \"warps per SM\": {:.6f},      \"grid\": [{}, {}, {}],      "
                       "\"block\": [{}, {}, {}],      \"est. achieved occupancy %\": {}",
                       l.external_id, kDevice, l.stream, l.correlation, k.registers, k.shared_mem, blocks_per_sm,
                       warps_per_sm, k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z, occupancy);
      }
      fmt::format_to(o, "\n    }}\n  }}");
    }
    fmt::format_to(std::back_inserter(begin_event()),
                   "  {{\n    \"ph\": \"f\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {},\n"
                   "    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  }}",
                   l.correlation, kDevice, l.stream, Us{l.gpu_start});
    if (!l.writes_call) return;
    fmt::format_to(std::back_inserter(begin_event()),
                   "  {{\n    \"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, \"tid\": {},\n"
                   "    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      "
                   "\"External id\": {},      \"cbid\": {}, \"correlation\": {}\n    }}\n  }}",
                   l.api == Api::kCuLaunchKernel ? "cuda_driver" : "cuda_runtime", api_name(l.api), kPid, tid,
                   Us{l.cpu_start}, Us{l.cpu_end - l.cpu_start}, l.external_id, api_cbid(l.api), l.correlation);
    fmt::format_to(std::back_inserter(begin_event()),
                   "  {{\n    \"ph\": \"s\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {},\n"
                   "    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  }}",
                   l.correlation, kPid, tid, Us{l.cpu_start});
  }

  void gpu_annotation(const GpuAnnotation& a) {
    fmt::format_to(std::back_inserter(begin_event()),
                   "  {{\n    \"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"{}\", \"pid\": {}, "
                   "\"tid\": {},\n    \"ts\": {}, \"dur\": {},\n    \"args\": {{\n      \"External id\": {}\n    }}\n  }}",
                   a.name, kDevice, a.stream, Us{a.start}, Us{a.end - a.start}, a.external_id);
  }

  void metadata(const std::vector<std::uint64_t>& tids, const std::vector<std::uint32_t>& streams,
                std::int64_t first_ns, std::int64_t last_ns) {
    auto meta = [&](std::string_view name, std::string_view pid, std::uint64_t tid, std::string_view key,
                    std::string_view value) {
      fmt::format_to(std::back_inserter(begin_event()),
                     "  {{\n    \"name\": \"{}\", \"ph\": \"M\", \"ts\": {}, \"pid\": {}, \"tid\": {},\n"
                     "    \"args\": {{\n      \"{}\": {}\n    }}\n  }}",
                     name, Us{first_ns}, pid, tid, key, value);
    };
    const std::string pid = std::to_string(kPid);
    meta("process_name", pid, 0, "name", "\"python3\"");
    meta("process_labels", pid, 0, "labels", "\"CPU\"");
    meta("process_sort_index", pid, 0, "sort_index", pid);
    meta("process_name", "0", 0, "name", "\"python3\"");
    meta("process_labels", "0", 0, "labels", "\"GPU 0\"");
    meta("process_sort_index", "0", 0, "sort_index", "5000000");
    for (std::uint32_t s : streams) {
      meta("thread_name", "0", s, "name", fmt::format("\"stream {} \"", s));
      meta("thread_sort_index", "0", s, "sort_index", std::to_string(s));
    }
    for (std::uint64_t t : tids) {
      meta("thread_name", pid, t, "name", fmt::format("\"thread {} (python3)\"", t));
      meta("thread_sort_index", pid, t, "sort_index", std::to_string(t));
    }
    fmt::format_to(std::back_inserter(begin_event()),
                   "  {{\n    \"ph\": \"X\", \"cat\": \"Trace\", \"ts\": {}, \"dur\": {},\n"
                   "    \"pid\": \"Spans\", \"tid\": \"PyTorch Profiler\",\n    \"name\": \"PyTorch Profiler (0)\",\n"
                   "    \"args\": {{\n      \"Op count\": 0\n    }}\n  }}",
                   Us{first_ns}, Us{last_ns - first_ns});
    fmt::format_to(std::back_inserter(begin_event()),
                   "  {{\n    \"name\": \"process_sort_index\", \"ph\": \"M\", \"ts\": {},\n"
                   "    \"pid\": \"Spans\", \"tid\": 0,\n    \"args\": {{\n      \"sort_index\": 536870912\n    }}\n  }}",
                   Us{first_ns});
    fmt::format_to(std::back_inserter(begin_event()),
                   "  {{\n    \"name\": \"Iteration Start: PyTorch Profiler\", \"ph\": \"i\", \"s\": \"g\",\n"
                   "    \"pid\": \"Traces\", \"tid\": \"Trace PyTorch Profiler\", \"ts\": {}\n  }}",
                   Us{first_ns});
    fmt::format_to(std::back_inserter(begin_event()),
                   "  {{\n    \"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\",\n"
                   "    \"pid\": \"\", \"tid\": \"\", \"ts\": {}\n  }}",
                   Us{last_ns});
  }

  void footer() {
    fmt::format_to(std::back_inserter(out_.buf()), "\n  ],\n  \"traceName\": \"{}\"\n}}", name_);
  }

  std::uint64_t events() const { return events_; }

 private:
  fmt::memory_buffer& begin_event() {
    out_.maybe_flush();
    out_.buf().append(std::string_view(events_++ == 0 ? "\n" : ",\n"));
    return out_.buf();
  }

  Writer& out_;
  std::string name_;
  std::uint64_t events_ = 0;
};

}  // namespace

SyntheticTraceSummary write_synthetic_trace(const SyntheticTraceOptions& options) {
  Writer out(options.output);
  TraceWriter trace(out, options.output);
  trace.header();

  const auto threads = static_cast<std::uint64_t>(options.threads);
  auto quota = [&](std::uint64_t t) { return options.kernels / threads + (t < options.kernels % threads ? 1 : 0); };
  std::vector<std::uint64_t> tids;
  std::vector<std::uint32_t> streams;
  std::int64_t first_ns = kStartNs, last_ns = kStartNs;
  std::uint64_t kernels = 0, ranges = 0;
  Step step;

  // Section 1: the CPU-side ranges of every thread, in start order.
  for (std::uint64_t t = 0; t < threads; ++t) {
    ThreadSimulation sim(options, static_cast<int>(t), quota(t));
    tids.push_back(sim.tid());
    streams.push_back(sim.main_stream());
    if (sim.side_stream() != sim.main_stream()) streams.push_back(sim.side_stream());
    while (sim.next_step(step)) {
      for (const Range& r : step.ranges) {
        trace.range(r, sim.tid());
        last_ns = std::max(last_ns, r.end);
      }
      ranges += step.ranges.size();
    }
  }
  // Section 2: the same simulation again, writing launches, kernels, flows and stream annotations.
  for (std::uint64_t t = 0; t < threads; ++t) {
    ThreadSimulation sim(options, static_cast<int>(t), quota(t));
    while (sim.next_step(step)) {
      for (const Launch& l : step.launches) {
        trace.activity(l, sim.tid());
        last_ns = std::max(last_ns, l.gpu_end);
      }
      for (const GpuAnnotation& a : step.gpu_annotations) trace.gpu_annotation(a);
      kernels += step.launches.size();
    }
  }
  trace.metadata(tids, streams, first_ns - 100000, last_ns + 100000);
  trace.footer();
  out.close();
  return SyntheticTraceSummary{out.bytes(), trace.events(), kernels, ranges};
}

}  // namespace opprof::bench
