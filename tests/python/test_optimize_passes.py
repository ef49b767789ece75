"""Every rewrite of opprof optimize on the CPU build of torch: the rewritten graph computes what the original
computes, within its tier's tolerance (exact tier: FP32 reassociation noise; precision tier: bf16's), on outputs
and, where the rewrite applies to training, on gradients; and each pass leaves alone what it must not touch.

FX passes run through Dynamo with the eager backend (no Inductor compile, so the tests stay fast); the one
Inductor-option test compiles a two-layer MLP."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from opprof.optimize import numerics, passes
from opprof.optimize.backend import make_backend
from opprof.optimize.rewrites import CATALOG, Step, apply, precision_flags, to_channels_last

EXACT = 1e-5  # FP32 reassociation on these sizes stays far below this


class Attention(nn.Module):
    """The hand-written attention of examples/attention_block.py, small."""

    def __init__(self, width=32, heads=4, seq=16, mask="masked_fill"):
        super().__init__()
        self.heads, self.mask_kind = heads, mask
        self.q, self.k, self.v, self.o = (nn.Linear(width, width) for _ in range(4))
        self.register_buffer("causal", torch.ones(seq, seq, dtype=torch.bool).triu(1))
        self.register_buffer("band", (torch.arange(seq)[:, None] - torch.arange(seq)[None, :]).abs() > 2)

    def forward(self, x):
        b, t, d = x.shape
        split = lambda y: y.view(b, t, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        if self.mask_kind == "masked_fill":
            scores = scores.masked_fill(self.causal[:t, :t], float("-inf"))
        elif self.mask_kind == "additive":
            scores = scores + torch.zeros(t, t).masked_fill(self.causal[:t, :t], float("-inf"))
        elif self.mask_kind == "band":
            scores = scores.masked_fill(self.band[:t, :t], float("-inf"))
        elif self.mask_kind == "from_input":  # depends on the data: never a constant causal mask
            scores = scores.masked_fill(x[:, None, :, :1] > 10, float("-inf"))
        out = torch.matmul(F.softmax(scores, dim=-1), v)
        return self.o(out.transpose(1, 2).reshape(b, t, d))


class SdpaWithMask(nn.Module):
    def __init__(self, mask):
        super().__init__()
        self.register_buffer("mask", mask)

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask)


class ConvBN(nn.Module):
    def __init__(self, bias=False):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=bias)
        self.bn = nn.BatchNorm2d(8)
        with torch.no_grad():  # running statistics that are not the identity, so folding has work to do
            self.bn.running_mean.uniform_(-1, 1)
            self.bn.running_var.uniform_(0.5, 2)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-1, 1)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def rewrite(model, inputs, names, train=False):
    """Runs model through Dynamo with the passes; returns (outputs, grads, changes by pass, the graphs)."""
    changes, graphs = {}, []
    inner = make_backend(names, None, changes)

    def backend(gm, example_inputs):
        fn = inner(gm, example_inputs)
        graphs.append(gm)
        return fn

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend)
    outputs, grads = run(compiled, model, inputs, train)
    return outputs, grads, changes, graphs


def run(callable_, model, inputs, train):
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    if not train:
        with torch.no_grad():
            return callable_(*inputs), None
    model.zero_grad(set_to_none=True)
    out = callable_(*inputs)
    out.sum().backward()
    return out, [p.grad.clone() for p in model.parameters()]


def targets(graphs, kind):
    from opprof.optimize import graph as g

    return [n for gm in graphs for n in gm.graph.nodes if g.kind(n) == kind]


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch.manual_seed(0)
    yield
    torch._dynamo.reset()


def test_fuse_projections_is_one_linear_with_the_same_result_and_gradients(train=True):
    model = Attention().train(train)
    x = torch.randn(2, 16, 32)
    ref, ref_grads = run(model, model, x, train)
    out, grads, changes, graphs = rewrite(model, x, ["fuse_projections"], train)
    assert len(changes["fuse_projections"]) == 1 and "3 projections" in changes["fuse_projections"][0]
    assert len(targets(graphs, "linear")) == 2  # the fused Q/K/V linear and the output projection
    agreement = numerics.compare(ref, out, ref_grads, grads)
    assert agreement.within(EXACT), agreement.text()


def test_fuse_projections_leaves_linears_of_different_inputs_alone():
    model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))  # the second reads the first's output
    _, _, changes, _ = rewrite(model, torch.randn(3, 8), ["fuse_projections"])
    assert changes["fuse_projections"] == []


@pytest.mark.parametrize("mask,train", [("masked_fill", True), ("additive", False), ("none", False)])
def test_attention_to_sdpa_replaces_the_pieces_with_the_same_result(mask, train):
    model = Attention(mask=mask).train(train)
    x = torch.randn(2, 16, 32)
    ref, ref_grads = run(model, model, x, train)
    out, grads, changes, graphs = rewrite(model, x, ["attention_to_sdpa"], train)
    assert len(changes["attention_to_sdpa"]) == 1
    assert targets(graphs, "softmax") == [] and targets(graphs, "matmul") == []
    (sdpa,) = targets(graphs, "sdpa")
    assert sdpa.kwargs["scale"] == pytest.approx(1 / math.sqrt(8))
    agreement = numerics.compare(ref, out, ref_grads, grads)
    assert agreement.within(EXACT), agreement.text()


def test_attention_to_sdpa_needs_the_softmax_over_the_last_dimension():
    class WrongDim(Attention):
        def forward(self, x):
            q = k = v = x[:, None]
            return torch.matmul(F.softmax(torch.matmul(q, k.transpose(-2, -1)), dim=-2), v)

    _, _, changes, graphs = rewrite(WrongDim(), torch.randn(2, 16, 32), ["attention_to_sdpa"])
    assert changes["attention_to_sdpa"] == [] and targets(graphs, "sdpa") == []


@pytest.mark.parametrize("mask", ["masked_fill", "additive"])
def test_causal_mask_becomes_is_causal_with_the_same_result(mask):
    model = Attention(mask=mask).eval()
    x = torch.randn(2, 16, 32)
    ref, _ = run(model, model, x, False)
    out, _, changes, graphs = rewrite(model, x, ["attention_to_sdpa", "causal_sdpa"])
    assert len(changes["causal_sdpa"]) == 1
    (sdpa,) = targets(graphs, "sdpa")
    assert sdpa.kwargs["is_causal"] is True and sdpa.kwargs["attn_mask"] is None
    agreement = numerics.compare(ref, out)
    assert agreement.within(EXACT), agreement.text()


@pytest.mark.parametrize("mask", ["band", "from_input"])
def test_a_mask_that_is_not_the_causal_constant_stays(mask):
    model = Attention(mask=mask).eval()
    _, _, changes, graphs = rewrite(model, torch.randn(2, 16, 32), ["attention_to_sdpa", "causal_sdpa"])
    assert len(changes["attention_to_sdpa"]) == 1 and changes["causal_sdpa"] == []
    (sdpa,) = targets(graphs, "sdpa")
    assert sdpa.kwargs.get("is_causal", False) is False and sdpa.kwargs["attn_mask"] is not None


def test_causal_sdpa_on_a_given_sdpa_call_with_a_boolean_tril_mask():
    q, k, v = (torch.randn(2, 4, 8, 16) for _ in range(3))
    model = SdpaWithMask(torch.ones(8, 8, dtype=torch.bool).tril())
    ref, _ = run(model, model, (q, k, v), False)
    out, _, changes, _ = rewrite(model, (q, k, v), ["causal_sdpa"])
    assert len(changes["causal_sdpa"]) == 1
    assert numerics.compare(ref, out).within(EXACT)


def test_is_causal_mask_checks_every_position():
    tril = torch.ones(4, 4, dtype=torch.bool).tril()
    assert passes.is_causal_mask(tril, 4, 4)
    assert passes.is_causal_mask(tril.expand(2, 3, 4, 4), 4, 4)
    assert passes.is_causal_mask(torch.zeros(4, 4).masked_fill(~tril, float("-inf")), 4, 4)
    assert passes.is_causal_mask(torch.zeros(4, 4).masked_fill(~tril, torch.finfo(torch.float32).min), 4, 4)
    assert not passes.is_causal_mask(torch.zeros(4, 4).masked_fill(~tril, -100.0), 4, 4)  # exp(-100) is not 0
    off = tril.clone()
    off[3, 0] = False
    assert not passes.is_causal_mask(off, 4, 4)
    assert not passes.is_causal_mask(torch.ones(4, 6, dtype=torch.bool).tril(), 4, 6)  # not square
    assert not passes.is_causal_mask(tril, 4, 5)


@pytest.mark.parametrize("bias", [False, True])
def test_fold_batchnorm_in_eval_gives_the_same_result(bias):
    model = ConvBN(bias).eval()
    x = torch.randn(2, 3, 12, 12)
    ref, _ = run(model, model, x, False)
    out, _, changes, graphs = rewrite(model, x, ["fold_batchnorm"])
    assert len(changes["fold_batchnorm"]) == 1
    assert targets(graphs, "batch_norm") == [] and len(targets(graphs, "conv")) == 1
    agreement = numerics.compare(ref, out)
    assert agreement.within(EXACT), agreement.text()


def test_fold_batchnorm_leaves_training_batchnorm_alone():
    model = ConvBN().train()
    _, _, changes, graphs = rewrite(model, torch.randn(2, 3, 12, 12), ["fold_batchnorm"])
    assert changes["fold_batchnorm"] == [] and len(targets(graphs, "batch_norm")) == 1


@pytest.mark.parametrize("dtype,name,train", [(torch.bfloat16, "bf16", True), (torch.float16, "fp16", False)])
def test_cast_matmuls_keeps_fp32_outputs_within_the_precision_tolerance(dtype, name, train):
    model = Attention().train(train)
    x = torch.randn(2, 16, 32)
    ref, ref_grads = run(model, model, x, train)
    out, grads, changes, graphs = rewrite(model, x, ["attention_to_sdpa", name], train)
    assert "run in " + str(dtype).removeprefix("torch.") in changes[name][0]
    assert out.dtype == torch.float32
    agreement = numerics.compare(ref, out, ref_grads, grads)
    assert agreement.within(3e-2), agreement.text()
    assert not agreement.within(EXACT / 10)  # it did change the arithmetic


def test_rnn_cudnn_keeps_the_rnn_out_of_the_compiled_graph():
    class Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.head = nn.LSTM(8, 16, batch_first=True), nn.Linear(16, 4)

        def forward(self, x):
            return self.head(self.lstm(x)[0][:, -1])

    model, x = Seq().eval(), torch.randn(3, 5, 8)
    ref, _ = run(model, model, x, False)
    built = apply(model, x, [Step("rnn_cudnn", ("lstm",))], compile="eager")
    seen = []

    def record(gm, example_inputs):
        seen.extend(n for n in gm.graph.nodes if n.op == "call_function" and getattr(n.target, "__name__", "") == "lstm")
        return gm.forward

    saved = torch._dynamo.config.allow_rnn
    torch._dynamo.config.allow_rnn = True  # Dynamo would trace (and Inductor unroll) the LSTM
    try:
        out, _ = run(torch.compile(built.model, backend=record), built.model, x, False)
        torch._dynamo.reset()
        run(torch.compile(model, backend=record), model, x, False)
    finally:
        torch._dynamo.config.allow_rnn = saved
    assert len(seen) == 1  # in the original's graph, not in the rewritten one's
    assert numerics.compare(ref, out).within(EXACT)


def test_channels_last_converts_model_and_inputs_with_the_same_result():
    model, x = ConvBN().eval(), torch.randn(2, 3, 12, 12)
    ref, _ = run(model, model, x, False)
    built = apply(model, x, [Step("channels_last")], compile="eager")
    assert built.inputs.is_contiguous(memory_format=torch.channels_last)
    assert built.model.conv.weight.is_contiguous(memory_format=torch.channels_last)
    out, _ = run(built.runner, built.model, built.inputs, False)
    assert numerics.compare(ref, out).within(EXACT)
    assert to_channels_last({"a": x, "b": [torch.ones(3)]})["b"][0].shape == (3,)


@pytest.mark.slow
def test_inductor_options_freezing_and_cuda_graphs_compile_to_the_same_result():
    # Two linears of one input and nothing else: Inductor calls extern GEMMs and generates no C++ kernel
    # to compile, which keeps the test quick.
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(16, 4), nn.Linear(16, 4)

        def forward(self, x):
            return self.a(x), self.b(x)

    model, x = TwoHeads().eval(), torch.randn(8, 16)
    ref, _ = run(model, model, x, False)
    # On the CPU build the CUDA-graph option compiles and is inert; its effect is measured on a GPU.
    built = apply(model, x, [Step("fuse_projections"), Step("freezing"), Step("cuda_graphs")])
    out, _ = run(built.runner, built.model, x, False)
    assert numerics.compare(ref, out).within(EXACT)


def test_tf32_is_a_scoped_setting_restored_after():
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    with precision_flags(True):
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    with precision_flags(False):  # the exact tier: true FP32 for cuBLAS and cuDNN alike
        assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before
    assert apply(nn.Linear(2, 2), None, [Step("tf32")], compile="eager").tf32


def test_every_rewrite_in_the_catalog_has_a_tier_and_an_fx_pass_or_option():
    assert {r.tier for r in CATALOG.values()} == {"exact", "precision"}
    for name, r in CATALOG.items():
        if r.mechanism == "FX pass":
            assert callable(__import__("opprof.optimize.backend", fromlist=["fx_pass"]).fx_pass(name))
    with pytest.raises(KeyError, match="unknown rewrite"):
        apply(nn.Linear(2, 2), None, [Step("nonsense")])
    with pytest.raises(ValueError, match="need.*--compile inductor"):
        apply(nn.Linear(2, 2), None, [Step("freezing")], compile="eager")


def test_numerics_definitions():
    ref = torch.tensor([1.0, -4.0, 0.0])
    a = numerics.compare(ref, torch.tensor([1.0, -4.0, 0.002]))
    assert a.max_abs == pytest.approx(0.002) and a.max_rel == pytest.approx(0.0005)  # relative to max |ref|
    bad = numerics.compare(ref, torch.tensor([1.0, float("nan"), 0.0]))
    assert bad.nonfinite and not bad.within(1.0)
    with pytest.raises(ValueError, match="shape"):
        numerics.compare(ref, torch.zeros(4))
    grads = numerics.compare(ref, ref, [torch.ones(2)], [torch.tensor([1.0, 1.5])])
    assert grads.grad_max_rel == pytest.approx(0.5) and grads.worst_rel == pytest.approx(0.5)
    # A gradient that is zero in exact arithmetic is judged against the gradients' scale, not its own noise.
    noise = numerics.compare(ref, ref, [torch.full((2,), 4.0), torch.tensor([1e-7])], [torch.full((2,), 4.0), torch.tensor([4e-7])])
    assert noise.grad_max_rel == pytest.approx(3e-7 / 4)
