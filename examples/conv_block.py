"""Workload: three Conv2d + BatchNorm2d + ReLU stages, global average pooling and a Linear classifier.

Batch 32 of 3x224x224 images: 3 -> 32 channels (stride 2, 112x112), 32 -> 64 (stride 2, 56x56),
64 -> 64 (56x56), then pooling to 64 features and a 10-way Linear. Eval mode, so BatchNorm uses its
running statistics (and Inductor can fold it into the convolution's epilogue).
"""

import os

import torch
from torch import nn

BATCH = 32
IMAGE = 224
CLASSES = 10


class ConvBNReLU(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.bn(self.conv(x)))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage1 = ConvBNReLU(3, 32, stride=2)
        self.stage2 = ConvBNReLU(32, 64, stride=2)
        self.stage3 = ConvBNReLU(64, 64, stride=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(64, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stage3(self.stage2(self.stage1(x)))
        return self.classifier(torch.flatten(self.pool(x), 1))


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
    model = ConvNet().to(dev).eval()
    x = torch.randn(BATCH, 3, IMAGE, IMAGE, device=dev)
    return model, x
