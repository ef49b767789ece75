"""A plain PyTorch script that knows nothing of opprof and marks its own measured region with the CUDA
profiler API, as one does for nsys or ncu:

    opprof profile -- python examples/script_with_window.py

opprof honours the window: only the two steps between start() and stop() are captured and replayed.
"""

import torch
from torch import nn


def main() -> None:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024), nn.LayerNorm(1024)
    ).to(device).eval()
    x = torch.randn(64, 1024, device=device)
    with torch.no_grad():
        for _ in range(3):  # warm-up, outside the window
            model(x)
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
        for _ in range(2):
            y = model(x)
        if device == "cuda":
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
    print(f"done: {tuple(y.shape)}")


if __name__ == "__main__":
    main()
