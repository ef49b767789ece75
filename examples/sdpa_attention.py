"""Workload: one self-attention block around F.scaled_dot_product_attention.

x -> qkv Linear -> split into 16 heads -> SDPA -> out Linear -> residual add -> LayerNorm.
Batch 8, sequence 512, width 1024; fp16 on CUDA (so SDPA can pick a flash/efficient kernel), fp32 on CPU.
"""

import os

import torch
import torch.nn.functional as F
from torch import nn

BATCH = 8
SEQ = 512
WIDTH = 1024
HEADS = 16


class SelfAttentionBlock(nn.Module):
    def __init__(self, width: int = WIDTH, heads: int = HEADS):
        super().__init__()
        if width % heads:
            raise ValueError(f"width {width} is not divisible by {heads} heads")
        self.heads = heads
        self.head_dim = width // heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, width = x.shape
        qkv = self.qkv(x).view(batch, seq, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)  # each (batch, heads, seq, head_dim)
        attended = F.scaled_dot_product_attention(q, k, v)
        attended = attended.transpose(1, 2).reshape(batch, seq, width)
        return self.norm(x + self.out(attended))


def resolve_device(device: str | None = None) -> torch.device:
    """An explicit device, else $OPPROF_DEVICE (set by opprof.capture), else CUDA when available."""
    name = device or os.environ.get("OPPROF_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
    resolved = torch.device(name)
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {name!r} was asked for but CUDA is not available")
    return resolved


def get_model_and_input(device: str | None = None):
    dev = resolve_device(device)
    dtype = torch.float16 if dev.type == "cuda" else torch.float32
    torch.manual_seed(0)
    model = SelfAttentionBlock().to(device=dev, dtype=dtype).eval()
    x = torch.randn(BATCH, SEQ, WIDTH, device=dev, dtype=dtype)
    return model, x
