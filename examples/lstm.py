"""Workload: a 2-layer LSTM (input 256, hidden 512) over 64 steps, batch 32, and a Linear head on the last step.

On a GPU nn.LSTM runs through cuDNN (aten::_cudnn_rnn): many library kernels under one operator, which
the engine reports as an opaque backend.
"""

import os

import torch
from torch import nn

BATCH = 32
SEQ = 64
INPUT = 256
HIDDEN = 512
LAYERS = 2


class LSTMModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(INPUT, HIDDEN, num_layers=LAYERS, batch_first=True)
        self.head = nn.Linear(HIDDEN, INPUT)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        output, _ = self.lstm(x)
        return self.head(output[:, -1])


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
    model = LSTMModel().to(dev).eval()
    x = torch.randn(BATCH, SEQ, INPUT, device=dev)
    return model, x
