"""Structural classes (opprof.structure) and pass B's dedup hooks (opprof.dedup_select) on real torch modules (CPU)."""

import json

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from opprof.dedup_select import DedupSelection, PlanError  # noqa: E402
from opprof.structure import RootWatcher, StructureRecorder, fx_module_graph_signatures  # noqa: E402


class Attention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_attn = nn.Linear(d, 3 * d)
        self.c_proj = nn.Linear(d, d)

    def forward(self, x):
        q, k, v = self.c_attn(x).chunk(3, dim=-1)
        w = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        return self.c_proj(w @ v)


class Block(nn.Module):
    def __init__(self, d, hidden=4):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = Attention(d)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, hidden * d), nn.GELU(), nn.Linear(hidden * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt(nn.Module):
    """GPT-2's layout: transformer.{wte, h.N, ln_f}, lm_head."""

    def __init__(self, d=16, layers=4, vocab=50, hidden=(4, 4, 4, 4)):
        super().__init__()
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(vocab, d)
        self.transformer.h = nn.ModuleList(Block(d, hidden[i]) for i in range(layers))
        self.transformer.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.transformer.wte(ids)
        for block in self.transformer.h:
            x = block(x)
        return self.lm_head(self.transformer.ln_f(x))


class EncoderDecoder(nn.Module):
    """Two block types: 3 encoder blocks of width 16, 2 decoder blocks of width 8."""

    def __init__(self):
        super().__init__()
        self.enc = nn.ModuleList(Block(16) for _ in range(3))
        self.bridge = nn.Linear(16, 8)
        self.dec = nn.ModuleList(Block(8) for _ in range(2))

    def forward(self, x):
        for b in self.enc:
            x = b(x)
        x = self.bridge(x)
        for b in self.dec:
            x = b(x)
        return x


def classes_of(model, *inputs):
    rec = StructureRecorder(model).install()
    with torch.no_grad():
        model(*inputs)
    rec.uninstall()
    return rec, {c["type"]: c["instances"] for c in rec.classes()}


def test_gpt2_like_blocks_are_one_class_covering_their_layers():
    model = Gpt()
    rec, classes = classes_of(model, torch.randint(0, 50, (2, 5)))
    assert classes == {"Block": [f"transformer.h.{i}" for i in range(4)]}
    doc = rec.document()
    assert doc["format"] == "opprof-structure" and doc["version"] == 1 and doc["runtime"] == "eager_inputs"
    # The Linear layers inside the blocks are covered by the block class; ln_f is alone among the uncovered.
    assert all(not c["instances"][0].startswith("transformer.h.0.") for c in doc["classes"])
    by_path = {m["path"]: m for m in doc["modules"]}
    assert by_path["transformer.h.0"]["signature"] == by_path["transformer.h.3"]["signature"]
    assert by_path["transformer.h.0"]["size"] == 10 and by_path["transformer.h.0"]["called"]


def test_two_block_types_give_two_classes():
    rec, _ = classes_of(EncoderDecoder(), torch.randn(2, 3, 16))
    got = sorted((c["type"], c["instances"]) for c in rec.classes())
    assert got == [("Block", ["dec.0", "dec.1"]), ("Block", ["enc.0", "enc.1", "enc.2"])]


def test_an_instance_built_differently_is_left_out():
    model = Gpt(hidden=(4, 4, 2, 4))  # block 2 has a narrower MLP
    _, classes = classes_of(model, torch.randint(0, 50, (2, 5)))
    assert classes["Block"] == ["transformer.h.0", "transformer.h.1", "transformer.h.3"]
    # Its layers are not covered by a class instance: those that repeat among the uncovered modules form
    # classes of their own (its two layer norms and ln_f); its attention is alone (the others' are covered).
    assert "Attention" not in classes
    assert classes["LayerNorm"] == ["transformer.h.2.ln_1", "transformer.h.2.ln_2", "transformer.ln_f"]


def test_an_instance_called_on_other_shapes_is_left_out():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(8, 8)
            self.b = nn.Linear(8, 8)
            self.c = nn.Linear(8, 8)

        def forward(self, x):
            return self.a(x) + self.b(x) + self.c(x[:1])

    _, classes = classes_of(Twice(), torch.randn(4, 8))
    assert classes == {"Linear": ["a", "b"]}


def test_the_one_shot_hooks_remove_themselves():
    model = Gpt()
    rec = StructureRecorder(model).install()
    with torch.no_grad():
        model(torch.randint(0, 50, (2, 5)))
    # Every module that ran lost its hook; "transformer" and "transformer.h" are containers that never run forward.
    assert [p for p, m in model.named_modules() if m._forward_pre_hooks] == ["transformer", "transformer.h"]
    assert len(rec.runtime) == len(list(model.modules())) - 2
    rec.uninstall()
    assert all(not m._forward_pre_hooks for m in model.modules())


def test_write_is_the_documented_file(tmp_path):
    model = Gpt()
    rec, _ = classes_of(model, torch.randint(0, 50, (2, 5)))
    path = rec.write(tmp_path)
    doc = json.loads(open(path).read())
    assert path.endswith("opprof_structure.json")
    assert doc["classes"][0]["instances"][0] == "transformer.h.0"


def test_fx_graph_signatures_tell_layers_apart_by_what_they_run():
    model = Gpt(hidden=(4, 4, 2, 4))
    gm = torch.fx.symbolic_trace(model)
    from torch.fx.passes.shape_prop import ShapeProp

    ShapeProp(gm).propagate(torch.randint(0, 50, (2, 5)))
    for node in gm.graph.nodes:  # symbolic_trace records no nn_module_stack: put the module path there
        if node.op == "call_module":
            node.meta["nn_module_stack"] = {node.target: (node.target, "M")}
    sigs = fx_module_graph_signatures(gm)
    assert sigs["transformer.h.0.mlp.0"] == sigs["transformer.h.1.mlp.0"]
    assert sigs["transformer.h.0.mlp.0"] != sigs["transformer.h.2.mlp.0"]  # 16 -> 32 vs 16 -> 64
    rec = StructureRecorder(model)
    rec.runtime_from_fx(sigs)
    assert rec.document()["runtime"] == "fx_graph"
    assert {"transformer.h.0", "transformer.h.1", "transformer.h.3"} <= set(
        next(c["instances"] for c in rec.classes() if c["type"] == "Block"))


def test_root_watcher_finds_the_scripts_model_once():
    seen = []
    model = Gpt()
    watcher = RootWatcher(lambda root, args: seen.append(root)).install()
    with torch.no_grad():
        model(torch.randint(0, 50, (2, 5)))
        model(torch.randint(0, 50, (2, 5)))
    assert seen == [model]
    assert not watcher._handles


def plan(skip, backward=False):
    return {"format": "opprof-dedup-plan", "version": 1, "mechanism": "nvtx_modules", "range": "opprof.dup",
            "skip_modules": skip, "backward": backward}


def test_dedup_selection_brackets_skipped_layers_in_forward_and_backward():
    model = Gpt()
    events = []
    order = []
    for path, m in model.named_modules():
        if path.endswith(".attn.c_attn"):
            m.register_forward_hook(lambda *_, p=path: order.append(("fwd", p, len(events))))
    sel = DedupSelection(plan(["transformer.h.1", "transformer.h.3"], backward=True), model,
                         push=lambda text: events.append(("push", text)), pop=lambda: events.append(("pop",)))
    sel.install()
    model(torch.randint(0, 50, (2, 5))).sum().backward()
    sel.uninstall()
    assert sel.forward_ranges == 2 and sel.backward_ranges == 2
    assert events.count(("push", "opprof.dup")) == 4 and events.count(("pop",)) == 4
    depth = 0
    for e in events:  # balanced and never nested
        depth += 1 if e[0] == "push" else -1
        assert depth in (0, 1)
    # Blocks 0 and 2 ran outside a range, 1 and 3 inside one.
    inside = {p: sum(1 if e[0] == "push" else -1 for e in events[:n]) == 1 for _, p, n in order}
    assert inside == {"transformer.h.0.attn.c_attn": False, "transformer.h.1.attn.c_attn": True,
                      "transformer.h.2.attn.c_attn": False, "transformer.h.3.attn.c_attn": True}


def test_dedup_selection_refuses_what_it_cannot_follow():
    model = Gpt()
    with pytest.raises(PlanError, match="does not have"):
        DedupSelection(plan(["transformer.h.9"]), model, push=print, pop=print).install()
    with pytest.raises(PlanError, match="mechanism"):
        DedupSelection({**plan([]), "mechanism": "psychic"}, model, push=print, pop=print)
    with pytest.raises(PlanError, match="version"):
        DedupSelection({**plan([]), "version": 9}, model, push=print, pop=print)
