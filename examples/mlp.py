"""Workload: a 4-layer MLP with GELU and LayerNorm (batch 64, width 1024).

Three blocks of Linear -> GELU -> LayerNorm and a final Linear, so the module paths are
blocks.0.fc, blocks.0.act, blocks.0.norm, ..., head. Eager, this is 4 GEMMs plus elementwise and
normalization kernels; Inductor fuses each GELU + LayerNorm pair into one kernel.
"""

import os

import torch
from torch import nn

BATCH = 64
WIDTH = 1024
BLOCKS = 3


class Block(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.act = nn.GELU()
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.act(self.fc(x)))


class MLP(nn.Module):
    def __init__(self, width: int = WIDTH, blocks: int = BLOCKS):
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(blocks))
        self.head = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def resolve_device(device: str | None = None) -> torch.device:
    """An explicit device, else $OPPROF_DEVICE (set by opprof.capture), else CUDA when available."""
    name = device or os.environ.get("OPPROF_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
    resolved = torch.device(name)
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {name!r} was asked for but CUDA is not available")
    return resolved


def get_model_and_input(device: str | None = None):
    dev = resolve_device(device)
    torch.manual_seed(0)
    model = MLP().to(dev).eval()
    x = torch.randn(BATCH, WIDTH, device=dev)
    return model, x
