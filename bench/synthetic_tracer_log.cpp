#include "synthetic_tracer_log.hpp"

#include <array>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "opprof/timeline/timeline.hpp"
#include "tracer_log/format.hpp"

namespace opprof::bench {
namespace {

using namespace tracelog;

constexpr std::uint32_t kPid = 4242;
constexpr std::uint64_t kTid = 4242;
constexpr std::uint32_t kLaunchCbid = 211;   // cudaLaunchKernel_v7000
constexpr std::uint32_t kOperatorCategory = 1;  // RecordFunction scope FUNCTION + 1
constexpr int kLayers = 12;

// String ids: the fixed ones, then one per layer's module path.
enum Sid : std::uint32_t {
  kLaunchApi = 1, kObserverDomain, kDeviceName, kThreadName, kOpLinear, kOpLayerNorm, kOpGelu, kOpSdpa,
  kKernelGemm, kKernelLayerNorm, kKernelGelu, kKernelFlash, kFirstModule,
};

struct Operator {
  Sid op, kernel;
  std::int32_t grid, block;
};
// One layer: the operators a GPT-2 block launches, each with its kernel (mangled, as CUPTI names them).
constexpr std::array<Operator, 8> kLayer = {{
    {kOpLayerNorm, kKernelLayerNorm, 512, 256},
    {kOpLinear, kKernelGemm, 288, 128},
    {kOpSdpa, kKernelFlash, 96, 128},
    {kOpLinear, kKernelGemm, 96, 128},
    {kOpLayerNorm, kKernelLayerNorm, 512, 256},
    {kOpLinear, kKernelGemm, 384, 128},
    {kOpGelu, kKernelGelu, 2048, 256},
    {kOpLinear, kKernelGemm, 96, 128},
}};

class LogFile {
 public:
  explicit LogFile(const std::string& path) : f_(std::fopen(path.c_str(), "wb"), &std::fclose), path_(path) {
    if (!f_) throw std::runtime_error("cannot write " + path);
  }
  // Appends what the builder holds and empties it (the file header, written once, included).
  void flush(LogBuilder& b) {
    std::string& bytes = b.mutable_bytes();
    if (std::fwrite(bytes.data(), 1, bytes.size(), f_.get()) != bytes.size()) throw std::runtime_error("cannot write " + path_);
    written_ += bytes.size();
    bytes.clear();
  }
  std::uint64_t written() const { return written_; }
  void close() {
    if (std::fclose(f_.release()) != 0) throw std::runtime_error("cannot write " + path_);
  }

 private:
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f_;
  std::string path_;
  std::uint64_t written_ = 0;
};

}  // namespace

SyntheticTracerLogSummary write_synthetic_tracer_log(std::uint64_t kernels, const std::string& path) {
  LogFile file(path);
  LogBuilder b(kPid, 0, 1'000'000, 5'000'000);
  SyntheticTracerLogSummary s;
  auto add = [&](RecordType type, const auto& record) {
    b.add(type, record);
    ++s.records;
  };
  auto string = [&](std::uint32_t id, std::string_view text) {
    b.string(id, text);
    ++s.records;
  };
  string(kLaunchApi, "cudaLaunchKernel_v7000");
  string(kObserverDomain, kTorchObserverDomain);
  string(kDeviceName, "NVIDIA H200");
  string(kThreadName, "python");
  string(kOpLinear, "aten::linear");
  string(kOpLayerNorm, "aten::layer_norm");
  string(kOpGelu, "aten::gelu");
  string(kOpSdpa, "aten::scaled_dot_product_attention");
  string(kKernelGemm, "_Z27sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
                      "segment_k_off_kernel__5x_cublasv");
  string(kKernelLayerNorm, "_ZN2at6native53_GLOBAL__N__layer_norm_kernel_impl_vectorized_float_bf16_EEvi");
  string(kKernelGelu, "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13GeluCUDAKernelImplEEEviT0_T1_");
  string(kKernelFlash, "_ZN7pytorch_flash20flash_fwd_kernel_sm90ILi64ELi128ELb1ELb0EEEvNS_16Flash_fwd_paramsE");
  for (int l = 0; l < kLayers; ++l)
    string(kFirstModule + static_cast<std::uint32_t>(l), std::string(kModuleRangePrefix) + "transformer.h." + std::to_string(l));
  add(RecordType::kDevice, DeviceRecord{141ull << 30, 0, kDeviceName, 9, 0, 132, 0});
  add(RecordType::kApiName, ApiNameRecord{kApiDomainRuntime, kLaunchCbid, kLaunchApi, 0});
  add(RecordType::kThreadName, ThreadNameRecord{kTid, kThreadName, 0});

  // CPU time advances 10 us per operator; a kernel runs 5 us, 40 us after its launch.
  std::uint64_t t = 2'000'000, correlation = 0;
  std::vector<KernelRecord> pending;  // delivered after the launches, as CUPTI's buffers are
  while (s.kernels < kernels) {
    const std::uint32_t module = kFirstModule + static_cast<std::uint32_t>((s.kernels / kLayer.size()) % kLayers);
    add(RecordType::kNvtxPush, NvtxPushRecord{t, kTid, module, kObserverDomain, kTorchUserScopeCategory, 0});
    for (const Operator& o : kLayer) {
      if (s.kernels == kernels) break;
      add(RecordType::kNvtxPush, NvtxPushRecord{t + 1000, kTid, o.op, kObserverDomain, kOperatorCategory, 0});
      ++correlation;
      add(RecordType::kApiCall, ApiCallRecord{t + 3000, t + 7000, kTid, kPid, static_cast<std::uint32_t>(correlation),
                                              kLaunchCbid, kApiDomainRuntime, 0, 0});
      add(RecordType::kNvtxPop, NvtxPopRecord{t + 9000, kTid, kObserverDomain, 0});
      KernelRecord k{};
      k.start_ns = t + 40'000;
      k.end_ns = t + 45'000;
      k.correlation_id = static_cast<std::uint32_t>(correlation);
      k.context_id = 1;
      k.stream_id = 7;
      k.name_sid = o.kernel;
      k.grid_x = o.grid, k.grid_y = 1, k.grid_z = 1;
      k.block_x = o.block, k.block_y = 1, k.block_z = 1;
      k.dynamic_shared_bytes = 4096;
      k.registers_per_thread = 128;
      pending.push_back(k);
      ++s.kernels;
      t += 10'000;
    }
    add(RecordType::kNvtxPop, NvtxPopRecord{t, kTid, kObserverDomain, 0});
    if (pending.size() >= 4096 || s.kernels == kernels) {
      for (const KernelRecord& k : pending) add(RecordType::kKernel, k);
      pending.clear();
      file.flush(b);
    }
  }
  add(RecordType::kTrailer, TrailerRecord{t + 100'000, t + 4'100'000, s.records, kFirstModule + kLayers - 1});
  file.flush(b);
  file.close();
  s.bytes = file.written();
  return s;
}

}  // namespace opprof::bench
