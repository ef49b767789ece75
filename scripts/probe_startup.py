"""Times the phases of examples/gpt2.py's start-up in one process (issue 14: what pass B pays before its
window); its model and input are built here step by step, so that each step is timed apart. Prints one line
per phase, `phase<TAB>seconds`, to stdout. Run plainly and under ncu with nothing profiled
(scripts/probe_startup.sh) to see what ncu's interception adds to each phase."""

import time

t0 = time.perf_counter()


def mark(name: str, since: float) -> float:
    now = time.perf_counter()
    print(f"{name}\t{now - since:.3f}", flush=True)
    return now


t = t0
import torch  # noqa: E402

t = mark("import_torch", t)
torch.cuda.init()
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
t = mark("cuda_context", t)
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402

t = mark("import_transformers_gpt2", t)
torch.manual_seed(0)
config = GPT2Config()
config.use_cache = False
model = GPT2LMHeadModel(config)
t = mark("build_model_cpu", t)
model = model.to("cuda").eval()
torch.cuda.synchronize()
t = mark("model_to_cuda", t)
ids = torch.randint(0, config.vocab_size, (4, 128), device="cuda")
with torch.no_grad():
    model(input_ids=ids)
    torch.cuda.synchronize()
    t = mark("first_forward", t)
    model(input_ids=ids)
    torch.cuda.synchronize()
    t = mark("second_forward", t)
mark("total", t0)
