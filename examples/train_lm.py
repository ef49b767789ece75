"""A training loop as users write it: HF GPT-2 small (causal LM) or BERT-base (masked LM), AdamW, optional AMP
and torch.compile, built from configs (random weights, nothing downloaded).

  python examples/train_lm.py --model gpt2 [--compile] [--amp bf16] [--steps 3]
  opprof profile -- python examples/train_lm.py --model bert --amp bf16
  python examples/train_lm.py --model gpt2 --torch-profiler trace.json     # plain torch.profiler, no opprof

After --steps warm-up steps, one measured step runs between torch.cuda.profiler.start()/stop() (the window
`opprof profile -- python ...` and `ncu --profile-from-start off` honour). With --torch-profiler PATH the
measured step is recorded by torch.profiler(with_modules=True, with_stack=True), the standard way, and
exported to PATH. A step is zero_grad, forward (loss), backward, optimizer step.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def build(model_name: str, batch: int, seq: int, device: str):
    import torch

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    torch.manual_seed(0)
    if model_name == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config()
        config.use_cache = False
        model = GPT2LMHeadModel(config)
    else:
        from transformers import BertConfig, BertForMaskedLM

        config = BertConfig()
        model = BertForMaskedLM(config)
    ids = torch.randint(0, config.vocab_size, (batch, seq), device=device)
    return model.to(device).train(), {"input_ids": ids, "labels": ids}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("gpt2", "bert"), default="gpt2")
    parser.add_argument("--batch", type=int, default=None, help="default 4 (gpt2), 8 (bert)")
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--compile", action="store_true", help="torch.compile the model (Inductor, default mode)")
    parser.add_argument("--amp", choices=("none", "bf16", "fp16"), default="none", help="autocast dtype")
    parser.add_argument("--fused-adamw", action="store_true", help="AdamW(fused=True) instead of the foreach kernels")
    parser.add_argument("--steps", type=int, default=3, help="warm-up steps before the measured one")
    parser.add_argument("--torch-profiler", metavar="PATH", help="record the measured step with torch.profiler")
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("train_lm.py: needs a CUDA device", file=sys.stderr)
        return 2
    batch = args.batch or (4 if args.model == "gpt2" else 8)
    model, inputs = build(args.model, batch, args.seq, "cuda")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True if args.fused_adamw else None)
    runner = torch.compile(model) if args.compile else model
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.amp)

    def step() -> float:
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=amp_dtype, enabled=amp_dtype is not None):
            loss = runner(**inputs).loss
        loss.backward()
        optimizer.step()
        return loss

    t0 = time.perf_counter()
    for _ in range(args.steps):
        step()
    torch.cuda.synchronize()
    print(f"train_lm.py: {args.steps} warm-up steps in {time.perf_counter() - t0:.1f} s", file=sys.stderr)

    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_modules=True,
                     with_stack=True) as prof:
            step()
            torch.cuda.synchronize()
        prof.export_chrome_trace(args.torch_profiler)
    else:
        torch.cuda.profiler.start()
        step()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    print("train_lm.py: measured step done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
