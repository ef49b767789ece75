"""Workload: a self-attention block written by hand, the way the optimizer's case study has it: separate Q, K
and V projections, attention as matmul, scale, an explicit causal mask (a registered buffer), softmax and
matmul, then an output projection. FP32, eval mode; batch 8, sequence 512, width 512, 8 heads.

`opprof optimize examples/attention_block.py` finds the separate projections, the hand-written attention and
the causal mask in the profile and rewrites them (one fused projection, scaled_dot_product_attention,
is_causal=True).
"""

import math
import os

import torch
import torch.nn.functional as F
from torch import nn

BATCH = 8
SEQ = 512
WIDTH = 512
HEADS = 8


class AttentionBlock(nn.Module):
    def __init__(self, width: int = WIDTH, heads: int = HEADS, max_seq: int = SEQ):
        super().__init__()
        if width % heads:
            raise ValueError(f"width {width} is not divisible by {heads} heads")
        self.heads, self.head_dim = heads, width // heads
        self.q_proj = nn.Linear(width, width)
        self.k_proj = nn.Linear(width, width)
        self.v_proj = nn.Linear(width, width)
        self.out_proj = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)
        # True above the diagonal: the future positions a query must not see.
        self.register_buffer("mask", torch.ones(max_seq, max_seq, dtype=torch.bool).triu(1), persistent=False)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, width = x.shape
        h = self.norm(x)
        q, k, v = self.split_heads(self.q_proj(h)), self.split_heads(self.k_proj(h)), self.split_heads(self.v_proj(h))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(self.mask[:seq, :seq], float("-inf"))
        attended = torch.matmul(F.softmax(scores, dim=-1), v)
        return x + self.out_proj(attended.transpose(1, 2).reshape(batch, seq, width))


def get_model_and_input(device: str | None = None, batch: int = BATCH, seq: int = SEQ, width: int = WIDTH,
                        heads: int = HEADS):
    # An explicit device, else $OPPROF_DEVICE (set by opprof.capture), else CUDA when available.
    dev = torch.device(device or os.environ.get("OPPROF_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.manual_seed(0)
    model = AttentionBlock(width, heads, seq).to(dev).eval()
    x = torch.randn(batch, seq, width, device=dev)
    return model, x
