"""Data-parallel training as users write it for torchrun: DistributedDataParallel over HF GPT-2 small (random
weights from its config, nothing downloaded) or a tiny MLP, AdamW, every rank on the device it is given.

  torchrun --nproc-per-node 2 examples/train_ddp.py --model gpt2 --backend gloo
  opprof profile -- torchrun --nproc-per-node 2 examples/train_ddp.py --model gpt2
  torchrun --nproc-per-node 2 examples/train_ddp.py --model tiny --device cpu      # gloo on the CPU

After --steps warm-up steps, one measured step runs between torch.cuda.profiler.start()/stop() on every rank
(the window `opprof profile` and `ncu --profile-from-start off` honour). Ranks share one GPU unless there are
as many GPUs as local ranks (NCCL refuses two ranks on one device; gloo accepts them). --check only sets up
the process group and runs one all-reduce, to learn whether a backend works here.
"""

from __future__ import annotations

import argparse
import os
import sys


def build(model_name: str, batch: int, seq: int, device, layers: int = 12):
    import torch

    torch.manual_seed(0)
    if model_name == "gpt2":
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config(n_layer=layers)
        config.use_cache = False
        model = GPT2LMHeadModel(config)
        ids = torch.randint(0, config.vocab_size, (batch, seq), device=device)
        return model.to(device).train(), {"input_ids": ids, "labels": ids}
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    x = torch.randn(batch, 32, device=device)
    return model.to(device).train(), {"x": x}


def loss_of(model, inputs):
    if "x" in inputs:
        return model(inputs["x"]).square().mean()
    return model(**inputs).loss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("gpt2", "tiny"), default="gpt2")
    parser.add_argument("--backend", choices=("nccl", "gloo"), default="gloo")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--layers", type=int, default=12, help="gpt2: transformer blocks (GPT-2 small has 12)")
    parser.add_argument("--batch", type=int, default=2, help="per rank")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--steps", type=int, default=2, help="warm-up steps before the measured one")
    parser.add_argument("--check", action="store_true", help="set up the process group, all-reduce once, exit")
    args = parser.parse_args()

    import torch
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.set_device(local_rank % torch.cuda.device_count())
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    dist.init_process_group(args.backend)
    rank = dist.get_rank()
    if args.check:
        t = torch.ones(4, device=device)
        dist.all_reduce(t)
        ok = t[0].item() == dist.get_world_size()
        print(f"rank {rank}: {args.backend} all_reduce {'ok' if ok else 'wrong'} ({t[0].item()})", flush=True)
        dist.destroy_process_group()
        return 0 if ok else 1

    model, inputs = build(args.model, args.batch, args.seq, device, args.layers)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if cuda else None)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-4)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(ddp, inputs)
        loss.backward()
        optimizer.step()
        return loss

    for _ in range(args.steps):
        step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
    loss = step()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    print(f"rank {rank}: loss {loss.item():.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
