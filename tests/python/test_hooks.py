"""Module ranges in a real torch.profiler trace on the CPU: names, nesting, root name, closing on errors."""

import pytest
import torch
from torch import nn

from conftest import user_annotations
from opprof.hooks import ModulePathResolver, ModuleRangeHooks, module_ranges


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(8, 24)
        self.c_proj = nn.Linear(8, 8)

    def forward(self, x):
        q, _, _ = self.c_attn(x).split(8, dim=-1)
        return self.c_proj(q)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(8)
        self.attn = Attention()

    def forward(self, x):
        return x + self.attn(self.ln_1(x))


class TinyGPT(nn.Module):
    def __init__(self, layers=2):
        super().__init__()
        self.h = nn.ModuleList(Block() for _ in range(layers))
        self.heads = nn.ModuleDict({"lm_head": nn.Linear(8, 4)})

    def forward(self, x):
        for block in self.h:
            x = block(x)
        return self.heads["lm_head"](x)


EXPECTED_ORDER = [
    "nn.Module: TinyGPT",
    "nn.Module: h.0",
    "nn.Module: h.0.ln_1",
    "nn.Module: h.0.attn",
    "nn.Module: h.0.attn.c_attn",
    "nn.Module: h.0.attn.c_proj",
    "nn.Module: h.1",
    "nn.Module: h.1.ln_1",
    "nn.Module: h.1.attn",
    "nn.Module: h.1.attn.c_attn",
    "nn.Module: h.1.attn.c_proj",
    "nn.Module: heads.lm_head",
]


def profile_to_trace(fn, path):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=False) as prof:
        fn()
    prof.export_chrome_trace(str(path))
    return user_annotations(path)


def parent_of(events, index):
    """The innermost earlier range that encloses events[index] (same thread), or None."""
    child = events[index]
    best = None
    for other in events[:index]:
        if other["tid"] != child["tid"]:
            continue
        if other["ts"] <= child["ts"] + 1e-3 and child["ts"] + child["dur"] <= other["ts"] + other["dur"] + 1e-3:
            if best is None or other["ts"] >= best["ts"]:
                best = other
    return best


def expected_parent(name):
    path = name[len("nn.Module: "):]
    if path == "TinyGPT":
        return None
    parent = path.rsplit(".", 1)[0] if "." in path else "TinyGPT"
    if parent == "h" or parent == "heads":  # containers are not called, so they have no range
        parent = "TinyGPT"
    return "nn.Module: " + parent


@pytest.mark.parametrize("known_root", [True, False], ids=["known-root", "lazy-root"])
def test_ranges_are_named_and_nested(tmp_path, known_root):
    torch.manual_seed(0)
    model = TinyGPT().eval()
    x = torch.randn(2, 3, 8)
    with module_ranges(model if known_root else None), torch.no_grad():
        events = profile_to_trace(lambda: model(x), tmp_path / "trace.json")
    names = [e["name"] for e in events]
    assert names == EXPECTED_ORDER
    for index, event in enumerate(events):
        parent = parent_of(events, index)
        assert (parent["name"] if parent else None) == expected_parent(event["name"]), event["name"]


def test_ranges_close_when_forward_raises(tmp_path):
    class Exploding(nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    model = TinyGPT().eval()
    model.h[1].attn.c_proj = Exploding()
    hooks = ModuleRangeHooks(model)

    def run():
        with pytest.raises(ValueError, match="boom"):
            model(torch.randn(2, 3, 8))

    with hooks, torch.no_grad():
        events = profile_to_trace(run, tmp_path / "trace.json")
        assert hooks._stack() == []  # nothing left open on this thread
    names = [e["name"] for e in events]
    assert names == EXPECTED_ORDER[:-1]  # lm_head never ran
    by_name = {e["name"]: e for e in events}
    root, failing = by_name["nn.Module: TinyGPT"], by_name["nn.Module: h.1.attn.c_proj"]
    assert failing["dur"] >= 0
    assert root["ts"] <= failing["ts"] and failing["ts"] + failing["dur"] <= root["ts"] + root["dur"] + 1e-3
    for index in range(len(events)):
        parent = parent_of(events, index)
        assert (parent["name"] if parent else None) == expected_parent(events[index]["name"])


def test_uninstall_stops_the_ranges(tmp_path):
    model = TinyGPT().eval()
    with module_ranges(model):
        pass
    with torch.no_grad():
        events = profile_to_trace(lambda: model(torch.randn(1, 1, 8)), tmp_path / "trace.json")
    assert events == []


def test_only_one_installation_at_a_time():
    with module_ranges():
        with pytest.raises(RuntimeError, match="already installed"):
            ModuleRangeHooks().install()


def test_lazy_paths_for_submodules_called_first_and_for_separate_roots():
    model = TinyGPT()
    other = nn.Linear(2, 2)
    resolver = ModulePathResolver()
    # A child called on its own, before its model: a root of its own for now.
    assert resolver.resolve(model.h[0], []) == ""
    assert resolver.resolve(model.h[0].attn.c_attn, [model.h[0]]) == "attn.c_attn"
    # The whole model seen later takes over: paths now follow its named_modules().
    assert resolver.resolve(model, []) == ""
    assert resolver.lookup(model.h[0].attn.c_attn) == "h.0.attn.c_attn"
    # A grandchild called directly from its grandparent's forward is found in the subtree.
    fresh = TinyGPT()
    resolver2 = ModulePathResolver()
    assert resolver2.resolve(fresh, []) == ""
    assert resolver2.resolve(fresh.h[1].attn, [fresh]) == "h.1.attn"
    # A module outside every enclosing tree is a root of its own, named by its class.
    assert resolver.resolve(other, [model]) == ""
    assert ModulePathResolver.range_name(other, "") == "nn.Module: Linear"
    assert resolver.roots_seen == ["Block", "TinyGPT", "Linear"]


def test_compiled_wrapper_is_named_after_the_model_and_keeps_its_paths():
    model = TinyGPT()
    wrapper = torch.compile(model)  # no compilation happens until it is called
    resolver = ModulePathResolver()
    assert resolver.resolve(wrapper, []) == ""
    assert ModulePathResolver.range_name(wrapper, "") == "nn.Module: TinyGPT"
    assert resolver.lookup(model.h[0].attn) == "h.0.attn"
