"""Workload: six kernels whose bottleneck is known in advance, each in its own nn.Module, for checking
opprof's bottleneck classes and FLOP counts against ncu (tests/fixtures/microkernels).

| module            | kernel                                                    | expected class      |
|-------------------|-----------------------------------------------------------|---------------------|
| streaming_copy    | y = x * 2 over 2^28 fp32 (1 GiB read, 1 GiB written)      | dram-bound          |
| bf16_gemm         | torch.mm, bf16, M = N = K = 8192 (cuBLAS, tensor cores)   | tensor-bound        |
| fp32_simt_gemm    | torch.mm, fp32 with TF32 off, M = N = K = 4096 (FFMA)     | compute-bound (+ hint: use TF32/BF16 tensor cores) |
| tiny              | t += 1 on one element                                     | launch-bound        |
| pointer_chase     | 132 blocks x 32 threads, each following 4096 dependent    | latency-bound       |
|                   | loads through a random cycle over 256 MiB                 |                     |
| smem_capped_chase | the same dependent loads, 1024 per thread, from 132 x 256 | occupancy-limited   |
|                   | threads whose 160 KiB of dynamic shared memory per block  |                     |
|                   | leaves one block (8 of 64 warps) per SM                   |                     |

The last two are CUDA C kernels compiled at run time by CuPy (NVRTC); CuPy and torch launch on the same
(legacy default) stream. CUDA only.
"""

from __future__ import annotations

import torch
from torch import nn

GEMM_BF16_MNK = (8192, 8192, 8192)
GEMM_FP32_MNK = (4096, 4096, 4096)
STREAM_ELEMENTS = 1 << 28
CHASE_BYTES = 256 << 20
CHASE_STEPS = 4096
CHASE_GRID, CHASE_BLOCK = 132, 32
CAPPED_SMEM_BYTES = 160 << 10
CAPPED_BLOCK = 256
CAPPED_STEPS = 1024

_CUDA_SOURCE = r"""
extern "C" __global__ void pointer_chase(const unsigned int* __restrict__ next, unsigned int* out, int steps) {
  unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x) * 7919u;
  for (int s = 0; s < steps; ++s) i = next[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = i;
}

// Latency-bound per thread like pointer_chase, but with enough threads to hide the latency if they could all
// be resident: the shared memory each block reserves caps residency at one block per SM.
extern "C" __global__ void smem_capped_chase(const unsigned int* __restrict__ next, unsigned int* out, int steps) {
  extern __shared__ unsigned int parked[];
  unsigned int i = (blockIdx.x * blockDim.x + threadIdx.x) * 1901u;  // 33792 threads x 1901 < 2^26 slots
  for (int s = 0; s < steps; ++s) i = next[i];
  parked[threadIdx.x] = i;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = parked[(threadIdx.x + 1) % blockDim.x];
}
"""


class StreamingCopy(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2.0


class Gemm(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a, b)


class Tiny(nn.Module):
    def forward(self, t: torch.Tensor) -> torch.Tensor:
        return t.add_(1)


class RawKernel(nn.Module):
    """Launches one CuPy RawKernel; the module range encloses its launch."""

    def __init__(self, name: str, grid: int, block: int, shared_bytes: int = 0):
        super().__init__()
        import cupy

        self.kernel = cupy.RawKernel(_CUDA_SOURCE, name)
        if shared_bytes:
            self.kernel.max_dynamic_shared_size_bytes = shared_bytes
        self.grid, self.block, self.shared_bytes = grid, block, shared_bytes

    def forward(self, *args) -> None:
        import cupy

        converted = tuple(cupy.asarray(a) if isinstance(a, torch.Tensor) else a for a in args)
        self.kernel((self.grid,), (self.block,), converted, shared_mem=self.shared_bytes)


class MicroKernels(nn.Module):
    def __init__(self, sm_count: int):
        super().__init__()
        self.streaming_copy = StreamingCopy()
        self.bf16_gemm = Gemm()
        self.fp32_simt_gemm = Gemm()
        self.tiny = Tiny()
        self.pointer_chase = RawKernel("pointer_chase", CHASE_GRID, CHASE_BLOCK)
        self.smem_capped_chase = RawKernel("smem_capped_chase", sm_count, CAPPED_BLOCK, CAPPED_SMEM_BYTES)

    def forward(self, data: dict) -> torch.Tensor:
        import numpy as np

        self.streaming_copy(data["stream"])
        self.bf16_gemm(data["a16"], data["b16"])
        self.fp32_simt_gemm(data["a32"], data["b32"])
        self.tiny(data["one"])
        self.pointer_chase(data["next"], data["chase_out"], np.int32(CHASE_STEPS))
        self.smem_capped_chase(data["next"], data["capped_out"], np.int32(CAPPED_STEPS))
        return data["capped_out"]


def random_cycle(n: int, device: torch.device) -> torch.Tensor:
    """next[] of one random cycle through all n slots: every load depends on the one before."""
    g = torch.Generator().manual_seed(0)
    order = torch.randperm(n, generator=g)
    nxt = torch.empty(n, dtype=torch.int64)
    nxt[order] = torch.roll(order, -1)
    return nxt.to(torch.int32).to(device)


def get_model_and_input(device: str | None = None):
    dev = torch.device(device or "cuda")
    if dev.type != "cuda":
        raise RuntimeError("examples/microkernels.py needs a CUDA device (its kernels are CUDA C)")
    # The SIMT GEMM must stay on FFMA: no TF32 tensor cores for fp32 matmuls.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.manual_seed(0)
    m, n, k = GEMM_BF16_MNK
    m32, n32, k32 = GEMM_FP32_MNK
    data = {
        "stream": torch.randn(STREAM_ELEMENTS, device=dev),
        "a16": torch.randn(m, k, device=dev, dtype=torch.bfloat16),
        "b16": torch.randn(k, n, device=dev, dtype=torch.bfloat16),
        "a32": torch.randn(m32, k32, device=dev),
        "b32": torch.randn(k32, n32, device=dev),
        "one": torch.zeros(1, device=dev),
        "next": random_cycle(CHASE_BYTES // 4, dev),
        "chase_out": torch.empty(CHASE_GRID * CHASE_BLOCK, dtype=torch.int32, device=dev),
        "capped_out": torch.empty(torch.cuda.get_device_properties(dev).multi_processor_count * CAPPED_BLOCK,
                                  dtype=torch.int32, device=dev),
    }
    model = MicroKernels(torch.cuda.get_device_properties(dev).multi_processor_count)
    return model, (data,)
