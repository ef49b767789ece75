"""Rules: the profile's evidence (opprof.load()'s DataFrames: kernels with their operator, module, fused ATen
ops and ncu counters) turned into candidate rewrites, each with the figures that triggered it.

A rule reads the profile and, where the profile cannot say (which module is an RNN, which linears are
siblings), the model's module types. It proposes; the FX pass then finds the pattern in the graph or
reports that it is not there, and the optimizer measures whether the rewrite pays.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from opprof.optimize.rewrites import CATALOG, PRECISION, Step

GEMM_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear", "aten::addmv"}
_GEMM_NAME = re.compile(r"gemm|cutlass|xmma|cublas", re.IGNORECASE)
_ATTENTION = re.compile(r"attention|flash|fmha|scaled_dot_product", re.IGNORECASE)
_LAYOUT_NAME = re.compile(r"nchwToNhwc|nhwcToNchw|convertTensor|nchw2nhwc|nhwc2nchw", re.IGNORECASE)
_MASK_OPS = ("aten.where", "aten.tril", "aten.triu", "aten.masked_fill", "aten.bitwise_and", "aten.le", "aten.ge",
             "aten.lt", "aten.gt")
RNN_TYPES = {"LSTM", "GRU", "RNN"}
_QKV_NAMES = {"q", "k", "v", "q_proj", "k_proj", "v_proj", "query", "key", "value", "wq", "wk", "wv"}

TENSOR_PIPE = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"
FP32_INSTRUCTIONS = {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 2.0,
                     "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 1.0,
                     "sm__sass_thread_inst_executed_op_fmul_pred_on.sum": 1.0}
TENSOR_FLOPS_PREFIX = "sm__ops_path_tensor_src_"


@dataclass
class Context:
    """What the rules know besides the profile."""
    compile: str = "inductor"           # how the workload runs: inductor or eager
    train: bool = False
    allow_precision: str | None = None  # tf32, bf16, fp16 or None
    module_types: dict[str, str] = field(default_factory=dict)  # module path -> class name
    steps_in_profile: int = 1           # measured iterations the profile's window holds
    wall_ms_per_step: float | None = None  # the baseline's measured wall time


@dataclass
class Finding:
    rule: str
    evidence: list[str]
    step: Step | None = None  # None: a diagnosis with nothing to rewrite

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "rewrite": str(self.step) if self.step else None, "evidence": self.evidence}


class Evidence:
    """The kernels of a profile (activities of kind 'kernel') with the figures rules ask for."""

    def __init__(self, frames: Mapping[str, Any]):
        kernels = frames["kernels"]
        self.kernels = kernels[kernels["kind"] == "kernel"].copy()
        for column in ("op", "module", "fused_ops", "name", "opaque_backend", "fx_nodes", "source_line"):
            if column not in self.kernels:
                self.kernels[column] = None
            self.kernels[column] = self.kernels[column].astype(object).fillna("").astype(str)
        self.total_ns = float(self.kernels["duration_ns"].sum())

    def select(self, mask: Any) -> Any:
        return self.kernels[mask]

    def share(self, rows: Any) -> float:
        return float(rows["duration_ns"].sum()) / self.total_ns if self.total_ns else 0.0

    def fused(self, *ops: str) -> Any:
        """Rows whose Inductor kernel fuses any of the ATen ops (``aten._softmax``) or whose operator is one."""
        pattern = "|".join(re.escape(op) for op in ops)
        aten = "|".join(re.escape(op.replace("aten.", "aten::")) for op in ops)
        return self.kernels["fused_ops"].str.contains(pattern) | self.kernels["op"].str.fullmatch(aten)

    def gemms(self) -> Any:
        k = self.kernels
        return k["op"].isin(GEMM_OPS) | (k["name"].str.contains(_GEMM_NAME) & ~k["name"].str.startswith("triton_"))

    def attention(self) -> Any:
        return self.kernels["op"].str.contains(_ATTENTION) | self.kernels["name"].str.contains(_ATTENTION)

    def under(self, path: str) -> Any:
        m = self.kernels["module"]
        return (m == path) | m.str.startswith(path + ".")

    def describe(self, rows: Any, label: str) -> str:
        n = len(rows)
        if n == 0:
            return f"{label}: none"
        mean_us = rows["duration_ns"].mean() / 1e3
        return f"{label}: {n} kernels, {rows['duration_ns'].sum() / 1e3:.1f} us ({100 * self.share(rows):.1f} % of kernel time), mean {mean_us:.1f} us"

    def counters(self, rows: Any) -> dict[str, float] | None:
        """Tensor-pipe activity (duration-weighted %), FP32 CUDA-core FLOPs and tensor-core FLOPs of rows;
        None when the profile has no ncu counters for them."""
        if TENSOR_PIPE not in rows or rows[TENSOR_PIPE].notna().sum() == 0:
            return None
        measured = rows[rows[TENSOR_PIPE].notna()]
        weights = measured["duration_ns"].astype(float)
        tensor_pct = float((measured[TENSOR_PIPE] * weights).sum() / weights.sum()) if weights.sum() else math.nan
        fp32 = sum(factor * float(measured[m].fillna(0).sum()) for m, factor in FP32_INSTRUCTIONS.items() if m in measured)
        columns = [c for c in measured.columns if str(c).startswith(TENSOR_FLOPS_PREFIX)]
        tensor = sum(float(measured[c].fillna(0).sum()) for c in columns) if columns else None
        return {"tensor_pipe_pct": tensor_pct, "fp32_flops": fp32, "tensor_flops": tensor, "kernels": len(measured)}


def _top_ops(ev: Evidence, rows: Any, n: int = 3) -> str:
    by_op = rows.groupby("op")["duration_ns"].sum().sort_values(ascending=False).head(n)
    return ", ".join(f"{op or '?'} {100 * t / ev.total_ns:.1f} %" for op, t in by_op.items())


# -- the rules ----------------------------------------------------------------------------------------
def rnn_on_cudnn(ev: Evidence, ctx: Context) -> list[Finding]:
    paths = [p for p, t in ctx.module_types.items() if t in RNN_TYPES] if ctx.module_types else sorted(
        {m for m in ev.kernels["module"] if re.search(r"(^|\.)(lstm|gru|rnn)\w*$", m, re.IGNORECASE)})
    findings = []
    for path in paths:
        inside = ev.under(path)
        if not inside.any():
            # A compiled graph's kernels may carry the RNN call's FX node or source line without a module path.
            leaf = re.escape(path.rpartition(".")[2])
            inside = (ev.kernels["module"] == "") & (ev.kernels["fx_nodes"].str.contains(rf"\b{leaf}\b")
                                                     | ev.kernels["source_line"].str.contains(rf"\.{leaf}\("))
        rows = ev.select(inside)
        if rows.empty:
            continue
        opaque = rows[rows["opaque_backend"] != ""]
        if ev.share(opaque) >= 0.5 * ev.share(rows):
            backend = opaque["opaque_backend"].mode().iloc[0]
            findings.append(Finding("rnn_on_cudnn", [
                ev.describe(rows, f"module {path} ({ctx.module_types.get(path, 'RNN')})"),
                f"{100 * ev.share(opaque):.1f} % of kernel time inside the opaque backend '{backend}': the recurrence "
                "already runs as cuDNN's fused RNN; nothing to rewrite (TF32 for it is the precision tier's choice)"]))
            continue
        gemms = ev.select(inside & ev.gemms())
        per_step = len(gemms) / max(ctx.steps_in_profile, 1)
        if per_step < 32 or gemms["duration_ns"].mean() > 30_000:
            continue
        lines = [ev.describe(gemms, f"module {path}: GEMMs"),
                 f"{per_step:.0f} GEMMs per step: the compiler unrolled the recurrence into small GEMMs, one per time "
                 "step and layer at least; keeping the module on cuDNN runs it as one fused RNN call"]
        counters = ev.counters(gemms)
        if counters is not None:
            tensor = counters["tensor_flops"]
            lines.append(f"tensor pipe {counters['tensor_pipe_pct']:.1f} % active over those GEMMs (FP32 FLOPs "
                         f"{counters['fp32_flops']:.3g}, tensor-core FLOPs {'not measured' if tensor is None else f'{tensor:.3g}'})")
        findings.append(Finding("rnn_unrolled", lines, Step("rnn_cudnn", (path,))))
    return findings


def sibling_projections(ev: Evidence, ctx: Context) -> list[Finding]:
    children: dict[str, list[str]] = {}
    modules = ctx.module_types or {m: "" for m in set(ev.kernels["module"])}
    for path, type_name in modules.items():
        parent, _, leaf = path.rpartition(".")
        if (type_name == "Linear") if ctx.module_types else (leaf in _QKV_NAMES):
            children.setdefault(parent, []).append(path)
    findings = []
    for parent, paths in sorted(children.items()):
        seen = [p for p in sorted(paths) if not ev.select(ev.under(p) & ev.gemms()).empty]
        if len(seen) < 2:
            continue
        rows = ev.select(ev.kernels["module"].isin(seen) & ev.gemms())
        findings.append(Finding("separate_projections", [
            ev.describe(rows, f"{len(seen)} sibling linears under {parent or '<root>'} ({', '.join(p.rpartition('.')[2] for p in seen)})"),
            "one GEMM each; where they read the same input, one GEMM over the concatenated weights does the same "
            "work in fewer, larger launches"], Step("fuse_projections")))
    return findings


def hand_written_attention(ev: Evidence, ctx: Context) -> list[Finding]:
    softmax = ev.select(ev.fused("aten._softmax", "aten.softmax", "aten::softmax"))
    batched = ev.select(ev.fused("aten.bmm", "aten.matmul") | ev.kernels["op"].isin({"aten::bmm", "aten::matmul"}))
    findings = []
    if not softmax.empty and not batched.empty:
        findings.append(Finding("hand_written_attention", [
            ev.describe(softmax, "softmax kernels"), ev.describe(batched, "batched matmuls"),
            "attention computed in pieces: the score matrix is written to memory and read back between them; "
            "scaled_dot_product_attention computes it in one fused kernel"], Step("attention_to_sdpa")))
    attention = ev.select(ev.attention())
    if findings or not attention.empty:
        masks = ev.select(ev.fused(*_MASK_OPS))
        lines = [ev.describe(attention, "fused attention kernels") if not attention.empty
                 else "attention to be fused by attention_to_sdpa",
                 ev.describe(masks, "mask-building kernels (where / tril / triu / masked_fill / comparisons)"),
                 "an explicit mask costs a mask read per score and rules out the causal kernels; "
                 "where the mask is the causal one, is_causal=True does the same without it"]
        findings.append(Finding("explicit_mask", lines, Step("causal_sdpa")))
    return findings


def conv_layout(ev: Evidence, ctx: Context) -> list[Finding]:
    k = ev.kernels
    conv = ev.select(k["op"].str.contains("conv", case=False) | k["name"].str.contains("conv", case=False))
    if conv.empty:
        return []
    findings = []
    layout = ev.select(k["name"].str.contains(_LAYOUT_NAME))
    if ev.share(layout) >= 0.01:
        findings.append(Finding("layout_conversions", [
            ev.describe(conv, "convolution kernels"), ev.describe(layout, "layout conversions (NCHW <-> NHWC)"),
            "the tensor cores' convolutions want NHWC: channels_last keeps activations in it"], Step("channels_last")))
    bn = ev.select(ev.fused("aten._native_batch_norm_legit_no_training", "aten.batch_norm", "aten::batch_norm",
                            "aten::cudnn_batch_norm", "aten::native_batch_norm"))
    if not ctx.train and not bn.empty:
        findings.append(Finding("batchnorm_after_conv", [
            ev.describe(conv, "convolution kernels"), ev.describe(bn, "batch-norm kernels (eval)"),
            "in eval a BatchNorm is an affine map of the convolution's output: folded into its weight and bias it costs nothing"],
            Step("fold_batchnorm")))
    return findings


def constant_weights(ev: Evidence, ctx: Context) -> list[Finding]:
    if ctx.compile != "inductor" or ctx.train:
        return []
    return [Finding("constant_weights", [
        ev.describe(ev.select(ev.gemms()), "GEMMs reading weights"),
        "inference under Inductor: the weights never change, so freezing makes them constants (folded weight "
        "preprocessing, layouts chosen ahead of time)"], Step("freezing"))]


def launch_bound(ev: Evidence, ctx: Context) -> list[Finding]:
    if ctx.compile != "inductor" or ev.kernels.empty:
        return []
    steps = max(ctx.steps_in_profile, 1)
    per_step = len(ev.kernels) / steps
    median_us = float(ev.kernels["duration_ns"].median()) / 1e3
    kernel_ms = ev.total_ns / steps / 1e6
    tiny = ev.select(ev.kernels["duration_ns"] < 10_000)
    gap = None if ctx.wall_ms_per_step is None else 1.0 - kernel_ms / ctx.wall_ms_per_step
    if not ((per_step >= 50 and median_us < 10) or (gap is not None and gap > 0.3)):
        return []
    lines = [f"{per_step:.0f} kernels per step, median {median_us:.1f} us; {100 * len(tiny) / len(ev.kernels):.0f} % of "
             f"kernels under 10 us ({100 * ev.share(tiny):.1f} % of kernel time)"]
    if gap is not None:
        lines.append(f"wall {ctx.wall_ms_per_step:.3f} ms per step against {kernel_ms:.3f} ms of kernels: the GPU waits "
                     f"for launches {100 * max(gap, 0):.0f} % of the step")
    lines.append("a CUDA graph replays the step's launches at once (profiled kernel time stays; wall time is the test)")
    return [Finding("launch_bound", lines, Step("cuda_graphs"))]


def fp32_gemms(ev: Evidence, ctx: Context) -> list[Finding]:
    rows = ev.select(ev.gemms() | ev.attention())
    if ev.share(rows) < 0.10:
        return []
    lines = [ev.describe(rows, "GEMM and attention kernels") + f" ({_top_ops(ev, rows)})"]
    counters = ev.counters(rows)
    if counters is not None:
        pipe, tensor = counters["tensor_pipe_pct"], counters["tensor_flops"]
        line = (f"tensor pipe {pipe:.1f} % active (duration-weighted over {counters['kernels']} kernels with counters); "
                f"FP32 FLOPs on CUDA cores {counters['fp32_flops']:.3g}")
        if tensor is None:
            lines.append(line + "; tensor-core FLOPs not in this profile's metric set")
            in_use = pipe >= 10
        else:
            flops = counters["fp32_flops"] + tensor
            share = tensor / flops if flops else 0.0
            lines.append(line + f", on tensor cores {tensor:.3g} ({100 * share:.1f} %)")
            in_use = share > 0.5 and pipe >= 5
        if in_use:
            return []  # the tensor cores already do the work
    else:
        lines.append("no ncu counters in this profile: tensor-pipe use is not measured here")
    if ctx.allow_precision is None:
        return [Finding("fp32_gemms", lines + ["a lower precision would use the tensor cores: not tried "
                                               "(opt in with --allow-precision tf32|bf16|fp16)"])]
    rewrite = CATALOG[ctx.allow_precision]
    assert rewrite.tier == PRECISION
    lines.append(f"{rewrite.does} (precision tier, allowed by --allow-precision {ctx.allow_precision})")
    return [Finding("fp32_gemms", lines, Step(ctx.allow_precision))]


# In the order candidates are tried: structural rewrites first, then options, precision last (so the
# numerics-preserving gain is measured on its own before any precision change).
RULES: tuple[Callable[[Evidence, Context], list[Finding]], ...] = (
    rnn_on_cudnn, sibling_projections, hand_written_attention, conv_layout, constant_weights, launch_bound, fp32_gemms)


def run_rules(frames: Mapping[str, Any], ctx: Context) -> list[Finding]:
    ev = Evidence(frames)
    return [f for rule in RULES for f in rule(ev, ctx)]
