"""Probe which of ncu's kernel-selection mechanisms work for opprof's layer dedup (run under ncu).

A small transformer of 4 identical blocks runs one step inside a cudaProfilerStart/Stop window, in one of
four modes (eager forward, eager training step, torch.compile forward, CUDA-graph replay through
torch.compile's reduce-overhead mode). Hooks mark what a dedup plan would skip with the NVTX push/pop range
`opprof.dup`:
  module  - blocks 1..3 in forward (pre/post hooks) and backward (full backward pre-hook / hook, which run
            on autograd's thread)
  triton  - every Triton launch after the first of its kernel name (wraps Inductor's launcher)
  whole   - the whole step
scripts/probe_ncu_selection.sh runs it under each ncu filter and counts the profiled kernels.
"""
import os
import sys

import torch
import torch.nn as nn

MODE = sys.argv[1]
HOOKS = sys.argv[2] if len(sys.argv) > 2 else "none"
RANGE = "opprof.dup"


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Net(nn.Module):
    def __init__(self, d=256, n=4):
        super().__init__()
        self.inp = nn.Linear(d, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(n))
        self.out = nn.Linear(d, d)

    def forward(self, x):
        x = self.inp(x)
        for b in self.blocks:
            x = b(x)
        return self.out(x)


def push(*_):
    torch.cuda.nvtx.range_push(RANGE)


def pop(*_):
    torch.cuda.nvtx.range_pop()


def install_module_hooks(net, train):
    for b in list(net.blocks)[1:]:
        b.register_forward_pre_hook(push)
        b.register_forward_hook(pop)
        if train:
            b.register_full_backward_pre_hook(push)
            b.register_full_backward_hook(pop)


def install_triton_hooks():
    from torch._inductor.runtime import triton_heuristics as th
    seen = {}
    orig = th.CachedAutotuner.run

    def run(self, *args, **kwargs):
        name = getattr(self.fn, "__name__", "?")
        n = seen.get(name, 0)
        seen[name] = n + 1
        if n == 0:
            return orig(self, *args, **kwargs)
        torch.cuda.nvtx.range_push(RANGE)
        try:
            return orig(self, *args, **kwargs)
        finally:
            torch.cuda.nvtx.range_pop()

    th.CachedAutotuner.run = run


def main():
    torch.manual_seed(0)
    train = MODE == "eager_train"
    net = Net().cuda()
    x = torch.randn(2, 64, 256, device="cuda", requires_grad=False)
    fn = net
    if MODE == "compiled_fwd":
        fn = torch.compile(net)
    elif MODE == "cudagraph":
        fn = torch.compile(net, mode="reduce-overhead")
    opt = torch.optim.SGD(net.parameters(), lr=1e-3) if train else None

    def step():
        if train:
            opt.zero_grad(set_to_none=True)
            fn(x).sum().backward()
            opt.step()
        else:
            with torch.no_grad():
                fn(x)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    if HOOKS == "module":
        install_module_hooks(net, train)
    elif HOOKS == "triton":
        install_triton_hooks()
    torch.cuda.profiler.start()
    if HOOKS == "whole":
        push()
    step()
    if HOOKS == "whole":
        pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


main()
