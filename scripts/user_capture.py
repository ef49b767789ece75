"""Captures a timeline or ncu counters the way a user does without opprof: one pass per process, each with
its own fresh Inductor/Triton cache, so autotuned launch configurations may differ between the two passes.

  python scripts/user_capture.py --model gpt2 --mode default --pass timeline --out DIR
  ncu --profile-from-start off --target-processes all ... python scripts/user_capture.py --model gpt2 --pass ncu --out DIR

--pass timeline: torch.profiler (CPU + CUDA activities) over one measured step after the warm-up, exported to
DIR/trace.json; TORCH_COMPILE_DEBUG=1 writes Inductor's debug directory to DIR/debug. With --schedule the step is
the active one of torch.profiler's schedule (wait 1, warm-up 1, active 1), inside its ProfilerStep#N annotation.
--pass ncu: the measured step between torch.cuda.profiler.start()/stop(), for ncu's --profile-from-start off.
Nothing of opprof is imported: this is the capture a user makes by hand. Models are built from their
configs (no weights are downloaded): gpt2 (transformers GPT-2 small, batch 4 x 128), resnet50 (torchvision,
batch 8 x 224^2), vit (timm vit_small_patch16_224, batch 8). Inference under torch.no_grad().
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def build(model_name: str, device: str):
    import torch

    torch.manual_seed(0)
    if model_name == "gpt2":
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from transformers import GPT2Config, GPT2LMHeadModel

        config = GPT2Config()
        config.use_cache = False
        model = GPT2LMHeadModel(config)
        inputs = {"input_ids": torch.randint(0, config.vocab_size, (4, 128), device=device)}
    elif model_name == "resnet50":
        import torchvision

        model = torchvision.models.resnet50(weights=None)
        inputs = {"x": torch.randn(8, 3, 224, 224, device=device)}
    elif model_name == "vit":
        import timm

        model = timm.create_model("vit_small_patch16_224", pretrained=False)
        inputs = {"x": torch.randn(8, 3, 224, 224, device=device)}
    else:
        raise SystemExit(f"unknown model {model_name!r}")
    return model.to(device).eval(), inputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, choices=("gpt2", "resnet50", "vit"))
    parser.add_argument("--mode", default="default", choices=("default", "reduce-overhead", "eager"))
    parser.add_argument("--pass", dest="pass_", required=True, choices=("timeline", "ncu"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument(
        "--schedule", action="store_true",
        help="timeline pass: profile with torch.profiler's schedule (wait 1, warmup 1, active 1) and prof.step(), "
        "as training loops do: the measured step sits in a ProfilerStep#N annotation")
    args = parser.parse_args()

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    # A fresh compile cache per process, as two separate runs by hand have.
    cache = out / f"cache_{args.pass_}"
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache / "inductor")
    os.environ["TRITON_CACHE_DIR"] = str(cache / "triton")
    if args.pass_ == "timeline" and args.mode != "eager":
        os.environ["TORCH_COMPILE_DEBUG"] = "1"
        os.environ["TORCH_COMPILE_DEBUG_DIR"] = str(out / "debug")

    import torch

    model, inputs = build(args.model, "cuda")
    runner = model if args.mode == "eager" else torch.compile(model, mode=None if args.mode == "default" else args.mode)

    def step():
        out_ = runner(**inputs)
        return out_

    t0 = time.perf_counter()
    with torch.no_grad():
        for _ in range(args.warmup):
            step()
        torch.cuda.synchronize()
        warm_s = time.perf_counter() - t0
        if args.pass_ == "timeline":
            from torch.profiler import ProfilerActivity, profile

            if args.schedule:
                from torch.profiler import schedule

                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                             schedule=schedule(wait=1, warmup=1, active=1),
                             on_trace_ready=lambda p: p.export_chrome_trace(str(out / "trace.json"))) as prof:
                    for _ in range(3):
                        step()
                        torch.cuda.synchronize()
                        prof.step()
            else:
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                    step()
                    torch.cuda.synchronize()
                prof.export_chrome_trace(str(out / "trace.json"))
        else:
            torch.cuda.profiler.start()
            step()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
    record = {
        "model": args.model, "mode": args.mode, "pass": args.pass_, "warmup": args.warmup, "schedule": args.schedule,
        "warmup_s": warm_s, "torch": torch.__version__, "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0), "argv": sys.argv,
    }
    (out / f"capture_{args.pass_}.json").write_text(json.dumps(record, indent=1))
    print(f"user_capture: {args.model} {args.mode} {args.pass_} done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
