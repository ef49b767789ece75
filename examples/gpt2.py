"""Workload: GPT-2 small (transformers GPT2LMHeadModel) built from GPT2Config(): no weights are downloaded,
the parameters are randomly initialized (seed 0). Eval mode, batch 4, sequence 128 of random token ids.

The KV cache is turned off (use_cache=False): a single forward over the whole sequence then runs the
same kernels every iteration, and torch.compile does not trace cache objects.
"""

import os

import torch

BATCH = 4
SEQ = 128


def resolve_device(device: str | None = None) -> torch.device:
    """An explicit device, else $OPPROF_DEVICE (set by opprof.capture), else CUDA when available."""
    name = device or os.environ.get("OPPROF_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
    resolved = torch.device(name)
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"device {name!r} was asked for but CUDA is not available")
    return resolved


def get_model_and_input(device: str | None = None, batch: int = BATCH, seq: int = SEQ):
    dev = resolve_device(device)
    # Never reach for the hub: the model is built from its config alone.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from transformers import GPT2Config, GPT2LMHeadModel
    except ImportError as exc:
        raise RuntimeError(
            "examples/gpt2.py needs the 'transformers' package (pip install transformers); "
            f"importing it failed: {exc}"
        ) from exc
    torch.manual_seed(0)
    config = GPT2Config()  # GPT-2 small: 12 layers, 12 heads, width 768, vocabulary 50257
    config.use_cache = False
    model = GPT2LMHeadModel(config).to(dev).eval()
    input_ids = torch.randint(0, config.vocab_size, (batch, seq), device=dev)
    return model, {"input_ids": input_ids}
