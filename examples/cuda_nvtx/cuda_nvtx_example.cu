// A small CUDA program for checking the opprof tracer end to end, with no PyTorch:
//   warm-up (outside the capture window), then between cudaProfilerStart and cudaProfilerStop:
//   "forward" > "layer0"/"layer1" > "matmul" / "bias_add" / "reduce" ranges around a naive matmul, an
//   elementwise add and a reduction; a CUDA graph of two kernels captured inside "graph_capture" >
//   "captured_block" and replayed three times inside "graph_replay"; and a start/end range and a
//   domain range. Prints what it launched so a check can compare counts.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#define CHECK(call)                                                                          \
  do {                                                                                       \
    cudaError_t err_ = (call);                                                               \
    if (err_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

__global__ void matmul_naive(const float* a, const float* b, float* c, int n) {
  int row = blockIdx.y * blockDim.y + threadIdx.y;
  int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= n || col >= n) return;
  float acc = 0.f;
  for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
  c[row * n + col] = acc;
}

__global__ void add_bias(float* x, const float* bias, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n * n) x[i] += bias[i % n];
}

__global__ void reduce_sum(const float* x, float* out, int count) {
  __shared__ float partial[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < count ? x[i] : 0.f;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
}

__global__ void scale(float* x, float f, int count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) x[i] *= f;
}

__global__ void tiny_kernel(int* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1);
}

struct Buffers {
  float *a, *b, *c, *bias, *sum;
  int n;
};

// One layer: matmul, bias add, reduction; each under its own range. Launches 3 kernels.
void layer(const Buffers& m, const char* name, cudaStream_t s) {
  nvtxRangePushA(name);
  dim3 block(16, 16), grid((m.n + 15) / 16, (m.n + 15) / 16);
  nvtxRangePushA("matmul");
  matmul_naive<<<grid, block, 0, s>>>(m.a, m.b, m.c, m.n);
  nvtxRangePop();
  nvtxRangePushA("bias_add");
  add_bias<<<(m.n * m.n + 255) / 256, 256, 0, s>>>(m.c, m.bias, m.n);
  nvtxRangePop();
  nvtxRangePushA("reduce");
  reduce_sum<<<(m.n * m.n + 255) / 256, 256, 0, s>>>(m.c, m.sum, m.n * m.n);
  nvtxRangePop();
  nvtxRangePop();
}

int main(int argc, char** argv) {
  // "--overhead N": only N tiny launches, timed, for the tracer's overhead measurement.
  if (argc == 3 && std::string_view(argv[1]) == "--overhead") {
    const int launches = std::atoi(argv[2]);
    int* counter = nullptr;
    CHECK(cudaMalloc(&counter, sizeof(int)));
    tiny_kernel<<<1, 32>>>(counter);
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    std::vector<float> samples;
    for (int rep = 0; rep < 7; ++rep) {
      CHECK(cudaEventRecord(t0));
      for (int i = 0; i < launches; ++i) {
        nvtxRangePushA("tiny");
        tiny_kernel<<<1, 32>>>(counter);
        nvtxRangePop();
      }
      CHECK(cudaEventRecord(t1));
      CHECK(cudaEventSynchronize(t1));
      float ms = 0.f;
      CHECK(cudaEventElapsedTime(&ms, t0, t1));
      samples.push_back(ms);
    }
    std::sort(samples.begin(), samples.end());
    std::printf("overhead launches=%d median_ms=%.3f\n", launches, samples[samples.size() / 2]);
    return 0;
  }

  Buffers m{};
  m.n = 256;
  const size_t bytes = sizeof(float) * m.n * m.n;
  CHECK(cudaMalloc(&m.a, bytes));
  CHECK(cudaMalloc(&m.b, bytes));
  CHECK(cudaMalloc(&m.c, bytes));
  CHECK(cudaMalloc(&m.bias, sizeof(float) * m.n));
  CHECK(cudaMalloc(&m.sum, sizeof(float)));
  std::vector<float> host(static_cast<size_t>(m.n) * m.n, 1.0f);
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // Warm-up, outside the window: not counted by the window-only mode.
  nvtxRangePushA("warmup");
  layer(m, "warmup_layer", s);
  nvtxRangePop();

  // The CUDA graph is captured outside the window too, as PyTorch does during warm-up: its nodes must
  // still lead back to these ranges when replayed inside the window.
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  nvtxRangePushA("graph_capture");
  nvtxRangePushA("captured_block");
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  scale<<<(m.n * m.n + 255) / 256, 256, 0, s>>>(m.c, 0.5f, m.n * m.n);
  add_bias<<<(m.n * m.n + 255) / 256, 256, 0, s>>>(m.c, m.bias, m.n);
  CHECK(cudaStreamEndCapture(s, &graph));
  nvtxRangePop();
  nvtxRangePop();
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaStreamSynchronize(s));

  CHECK(cudaProfilerStart());
  int kernels = 0, graph_kernels = 0;
  nvtxRangePushA("forward");
  CHECK(cudaMemcpyAsync(m.a, host.data(), bytes, cudaMemcpyHostToDevice, s));
  CHECK(cudaMemcpyAsync(m.b, host.data(), bytes, cudaMemcpyHostToDevice, s));
  CHECK(cudaMemsetAsync(m.bias, 0, sizeof(float) * m.n, s));
  CHECK(cudaMemsetAsync(m.sum, 0, sizeof(float), s));
  layer(m, "layer0", s);
  layer(m, "layer1", s);
  kernels += 6;
  nvtxRangePop();

  nvtxRangePushA("graph_replay");
  for (int i = 0; i < 3; ++i) CHECK(cudaGraphLaunch(exec, s));
  graph_kernels += 6;
  nvtxRangePop();

  // A start/end range and a range in a named domain.
  nvtxRangeId_t id = nvtxRangeStartA("async_region");
  nvtxDomainHandle_t domain = nvtxDomainCreateA("opprof_example");
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = "domain_range";
  nvtxDomainRangePushEx(domain, &attr);
  scale<<<(m.n * m.n + 255) / 256, 256, 0, s>>>(m.c, 2.0f, m.n * m.n);
  kernels += 1;
  nvtxDomainRangePop(domain);
  nvtxRangeEnd(id);
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaProfilerStop());

  float sum = 0.f;
  CHECK(cudaMemcpy(&sum, m.sum, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("example window_kernels=%d window_graph_kernels=%d warmup_kernels=3 sum=%g\n", kernels,
              graph_kernels, static_cast<double>(sum));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  return 0;
}
