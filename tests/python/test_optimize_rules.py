"""opprof optimize's rules: profile evidence -> candidate rewrites with the figures that triggered them, on
synthetic kernel frames and on the committed H200 fixtures' profiles (compiled GPT-2: FP32 GEMMs with the
tensor pipe idle; the eager LSTM: the recurrence already inside cuDNN). Also the acceptance test of a
measured rewrite, the speedup split into its numerics-preserving and precision parts, and the saved code."""

import math
import subprocess
from pathlib import Path

import pytest

from conftest import REPO

pd = pytest.importorskip("pandas")

from opprof.optimize import driver, report  # noqa: E402
from opprof.optimize.measure import KernelTime, summarize  # noqa: E402
from opprof.optimize.rewrites import Step  # noqa: E402
from opprof.optimize.rules import FP32_INSTRUCTIONS, TENSOR_PIPE, Context, run_rules  # noqa: E402

ENGINE = REPO / "build" / "opprof"
FFMA = next(iter(FP32_INSTRUCTIONS))
TENSOR_BF16 = "sm__ops_path_tensor_src_bf16_dst_fp32.sum"


def frame(rows):
    """A kernels frame as opprof.load gives it, from (name, op, module, duration_ns, extra columns) rows."""
    records = []
    for name, op, module, ns, *extra in rows:
        record = {"kind": "kernel", "name": name, "op": op, "module": module, "fused_ops": None, "duration_ns": ns,
                  "opaque_backend": None}
        record.update(extra[0] if extra else {})
        records.append(record)
    return {"kernels": pd.DataFrame(records)}


def steps_of(findings):
    return [f.step for f in findings if f.step is not None]


def by_rule(findings, rule):
    (found,) = [f for f in findings if f.rule == rule]
    return found


def test_fp32_gemms_with_the_tensor_pipe_idle_propose_the_allowed_precision_only():
    gemm = {TENSOR_PIPE: 0.2, FFMA: 1e9, TENSOR_BF16: 0.0}
    frames = frame([("cutlass_80_simt_sgemm", "aten::mm", "fc", 90_000, gemm), ("triton_poi_fused_relu_0", "triton_poi", "", 10_000)])
    allowed = run_rules(frames, Context(compile="eager", allow_precision="bf16"))
    finding = by_rule(allowed, "fp32_gemms")
    assert finding.step == Step("bf16")
    assert "90.0 % of kernel time" in finding.evidence[0] and "tensor pipe 0.2 % active" in finding.evidence[1]
    # Without --allow-precision: the same evidence, no rewrite.
    assert by_rule(run_rules(frames, Context(compile="eager")), "fp32_gemms").step is None
    # Tensor cores already doing the work: nothing to propose.
    busy = frame([("sm90_xmma_gemm_bf16", "aten::mm", "fc", 90_000, {TENSOR_PIPE: 60.0, FFMA: 1e6, TENSOR_BF16: 1e12})])
    assert not [f for f in run_rules(busy, Context(compile="eager", allow_precision="bf16")) if f.rule == "fp32_gemms"]


def test_an_unrolled_rnn_proposes_keeping_it_on_cudnn_and_cudnn_itself_is_only_diagnosed():
    unrolled = frame([("cutlass_80_simt_sgemm_128x32", "aten::mm", "lstm", 4_000)] * 256
                     + [("triton_poi_fused_add_0", "triton_poi", "lstm", 1_500)] * 128 + [("gemv", "aten::addmm", "head", 3_000)])
    ctx = Context(compile="inductor", module_types={"lstm": "LSTM", "head": "Linear"})
    finding = by_rule(run_rules(unrolled, ctx), "rnn_unrolled")
    assert finding.step == Step("rnn_cudnn", ("lstm",))
    assert "256 kernels" in finding.evidence[0] and "256 GEMMs per step" in finding.evidence[1]
    on_cudnn = frame([("RNN_blockPersist_fp_LSTM", "aten::_cudnn_rnn", "lstm", 4_000, {"opaque_backend": "cuDNN RNN"})] * 100)
    diagnosis = by_rule(run_rules(on_cudnn, ctx), "rnn_on_cudnn")
    assert diagnosis.step is None and "cuDNN RNN" in diagnosis.evidence[1]


def test_hand_written_attention_and_its_mask():
    frames = frame([("void gemm_bmm", "aten::bmm", "attn", 30_000), ("void gemm_bmm", "aten::bmm", "attn", 30_000),
                    ("triton_per_fused__softmax_masked_fill_0", "triton_per", "attn", 40_000,
                     {"fused_ops": "aten.div,aten.masked_fill,aten._softmax"})])
    findings = run_rules(frames, Context(compile="inductor"))
    assert steps_of(findings)[:2] == [Step("attention_to_sdpa"), Step("causal_sdpa")]
    assert "softmax kernels: 1 kernels" in by_rule(findings, "hand_written_attention").evidence[0]
    assert "mask-building kernels" in by_rule(findings, "explicit_mask").evidence[1]
    # No attention in the profile: neither rule fires.
    none = run_rules(frame([("void gemm", "aten::mm", "fc", 1000)]), Context(compile="eager"))
    assert not {"hand_written_attention", "explicit_mask"} & {f.rule for f in none}


def test_sibling_projections_need_two_linears_with_kernels_under_one_parent():
    frames = frame([("gemm", "aten::addmm", f"blk.{p}", 10_000) for p in ("q_proj", "k_proj", "v_proj")]
                   + [("gemm", "aten::addmm", "blk.out_proj", 10_000)])
    types = {"blk": "Block", "blk.q_proj": "Linear", "blk.k_proj": "Linear", "blk.v_proj": "Linear", "blk.out_proj": "Linear"}
    finding = by_rule(run_rules(frames, Context(compile="eager", module_types=types)), "separate_projections")
    assert finding.step == Step("fuse_projections") and "4 sibling linears under blk" in finding.evidence[0]
    lone = {"blk": "Block", "blk.q_proj": "Linear", "blk.other": "Conv2d"}
    assert "separate_projections" not in {f.rule for f in run_rules(frames, Context(compile="eager", module_types=lone))}


def test_convolution_rules_layout_conversions_and_eval_batchnorm():
    frames = frame([("sm80_xmma_fprop_implicit_gemm", "aten::cudnn_convolution", "conv", 50_000),
                    ("nchwToNhwcKernel", "aten::cudnn_convolution", "conv", 5_000),
                    ("triton_poi_fused__native_batch_norm_legit_no_training_relu_0", "triton_poi", "bn", 8_000,
                     {"fused_ops": "aten._native_batch_norm_legit_no_training,aten.relu"})])
    steps = steps_of(run_rules(frames, Context(compile="eager")))
    assert Step("channels_last") in steps and Step("fold_batchnorm") in steps
    assert Step("fold_batchnorm") not in steps_of(run_rules(frames, Context(compile="eager", train=True)))


def test_freezing_is_for_inference_under_inductor_and_cuda_graphs_for_launch_bound_steps():
    tiny = frame([("triton_poi_fused_add_0", "triton_poi", "m", 3_000)] * 200)
    steps = steps_of(run_rules(tiny, Context(compile="inductor", wall_ms_per_step=2.0)))
    assert Step("freezing") in steps and Step("cuda_graphs") in steps
    assert not steps_of(run_rules(tiny, Context(compile="eager")))
    assert Step("freezing") not in steps_of(run_rules(tiny, Context(compile="inductor", train=True)))
    big = frame([("gemm", "aten::mm", "m", 500_000)] * 4)  # few long kernels, GPU-bound wall time
    assert Step("cuda_graphs") not in steps_of(run_rules(big, Context(compile="inductor", wall_ms_per_step=2.1)))


def test_candidates_come_structural_first_and_precision_last():
    frames = frame([("gemm", "aten::mm", "lstm", 4_000, {TENSOR_PIPE: 0.0, FFMA: 1e6})] * 64)
    names = [s.name for s in steps_of(run_rules(frames, Context(allow_precision="tf32", module_types={"lstm": "LSTM"})))]
    assert names[0] == "rnn_cudnn" and names[-1] == "tf32"


@pytest.fixture(scope="module")
def fixture_profiles(tmp_path_factory):
    if not ENGINE.is_file():
        pytest.skip("build/opprof not built (make build)")
    import opprof

    out = tmp_path_factory.mktemp("rules")
    fixtures = REPO / "tests" / "fixtures"
    subprocess.run([str(ENGINE), "attribute", "-q", "--trace", str(fixtures / "gpt2_compiled" / "trace.json.gz"),
                    "--ncu", str(fixtures / "gpt2_compiled" / "ncu.csv.gz"), "--inductor",
                    str(fixtures / "gpt2_compiled" / "inductor"), "-o", str(out / "gpt2.db")], check=True)
    subprocess.run([str(ENGINE), "attribute", "-q", "--trace", str(fixtures / "lstm" / "trace.json.gz"),
                    "--ncu", str(fixtures / "lstm" / "ncu.csv.gz"), "-o", str(out / "lstm.db")], check=True)
    return {name: opprof.load(out / f"{name}.db") for name in ("gpt2", "lstm")}


def test_compiled_gpt2_fixture_fp32_gemms_on_idle_tensor_cores(fixture_profiles):
    findings = run_rules(fixture_profiles["gpt2"], Context(compile="inductor", allow_precision="bf16", wall_ms_per_step=5.4))
    gemms = by_rule(findings, "fp32_gemms")
    assert gemms.step == Step("bf16")
    # 90 % of the step is aten::mm and aten::addmm on the CUDA cores (report_at_capture.txt: tensor% 0.0).
    assert "aten::mm 70.0 %, aten::addmm 20.4 %" in gemms.evidence[0]
    assert "tensor pipe 0.9 % active" in gemms.evidence[1]
    assert [s.name for s in steps_of(findings)] == ["causal_sdpa", "freezing", "cuda_graphs", "bf16"]


def test_eager_lstm_fixture_is_diagnosed_as_already_on_cudnn(fixture_profiles):
    findings = run_rules(fixture_profiles["lstm"], Context(compile="eager", module_types={"lstm": "LSTM", "head": "Linear"}))
    diagnosis = by_rule(findings, "rnn_on_cudnn")
    assert diagnosis.step is None and "98.9 % of kernel time inside the opaque backend 'cuDNN RNN'" in diagnosis.evidence[1]
    assert Step("rnn_cudnn", ("lstm",)) not in steps_of(findings)


def measured(kernel_us, wall_ms, spread=0.01):
    samples = [wall_ms * (1 + spread * d) for d in (-1, -0.5, 0, 0.5, 1)]
    kernel = KernelTime(kernel_us * 1e3, 10, 3, "") if kernel_us is not None else None
    return driver.Measured(kernel, summarize(samples, "cuda events"))


def test_a_rewrite_pays_in_kernel_time_or_beyond_the_spread_of_wall_time():
    before = measured(1000, 2.0)
    assert driver.pays(before, measured(900, 2.0), 0.02)[0]
    assert not driver.pays(before, measured(990, 2.0), 0.02)[0]  # 1 %: below the bar
    assert not driver.pays(before, measured(900, 2.5), 0.02)[0]  # kernels faster, the step slower
    assert driver.pays(before, measured(1000, 1.5), 0.02)[0]  # CUDA graphs: same kernels, less waiting
    assert not driver.pays(measured(1000, 2.0, spread=0.5), measured(1000, 1.8, spread=0.5), 0.02)[0]  # within noise


def outcome(tmp_path, steps, baseline, exact, final):
    options = driver.Options(workload="w.py", out=tmp_path, compile="eager")
    trials = [driver.Trial(s, None, verdict="applied") for s in steps]
    return driver.Outcome(options, "p.db", [], baseline, None, trials, steps, final, exact)


def test_speedup_splits_into_numerics_preserving_and_precision(tmp_path):
    o = outcome(tmp_path, [Step("causal_sdpa"), Step("bf16")], measured(1000, 4.0), measured(800, 3.5), measured(250, 2.0))
    kernel = driver.overall(o)["kernel"]
    assert kernel["total"] == pytest.approx(4.0) and kernel["exact_only"] == pytest.approx(1.25)
    assert kernel["precision_factor"] == pytest.approx(3.2)
    assert kernel["precision_share"] == pytest.approx(math.log(3.2) / math.log(4.0))


def test_saved_code_applies_the_steps(tmp_path):
    torch = pytest.importorskip("torch")
    o = outcome(tmp_path, [Step("fuse_projections")], measured(None, 4.0), measured(None, 3.0), measured(None, 3.0))
    path = Path(report.save_code(o))
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - the file the user would import
    assert namespace["STEPS"] == [Step("fuse_projections")]

    class TwoHeads(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = torch.nn.Linear(4, 2), torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.a(x) + self.b(x)

    model, x = TwoHeads(), torch.randn(3, 4)
    expected = model(x)
    torch._dynamo.reset()
    assert torch.allclose(namespace["optimize"](model)(x), expected, atol=1e-6)
    torch._dynamo.reset()


def test_the_loop_retries_a_rewrite_together_with_the_one_that_makes_its_pattern(tmp_path, monkeypatch):
    """attention_to_sdpa alone does not pay (measured), causal_sdpa alone finds no SDPA; together they pay.
    The workload and the numerics are real (CPU, Dynamo with the eager backend); the profile, the rules'
    findings and the measured times are given."""
    import opprof
    from opprof.optimize.rules import Finding

    workload = tmp_path / "tiny_attention.py"
    workload.write_text(
        "import sys\nsys.path.insert(0, %r)\nimport attention_block\n\n"
        "def get_model_and_input(device=None):\n"
        "    return attention_block.get_model_and_input('cpu', batch=2, seq=16, width=32, heads=4)\n" % str(REPO / "examples"))
    kernel_us = {(): 1000, ("attention_to_sdpa",): 1000, ("attention_to_sdpa", "causal_sdpa"): 600}

    class NoProfile:
        meta = {}

        def __getitem__(self, name):
            return pd.DataFrame({"kind": [], "duration_ns": []})

        def close(self):
            pass

    monkeypatch.setattr(driver, "run_baseline_profile", lambda options: "given.db")
    monkeypatch.setattr(opprof, "load", lambda path: NoProfile())
    monkeypatch.setattr(driver, "run_rules", lambda frames, ctx: [
        Finding("hand_written_attention", ["given"], Step("attention_to_sdpa")),
        Finding("explicit_mask", ["given"], Step("causal_sdpa"))])
    monkeypatch.setattr(driver.Session, "measure",
                        lambda self, built, label: measured(kernel_us[tuple(s.name for s in built.steps)], 1.0))
    o = driver.optimize(driver.Options(workload=str(workload), out=tmp_path / "out", compile="eager", device="cpu",
                                       steps=2, profile_steps=1))
    verdicts = [(str(t.step), [str(s) for s in t.together], t.verdict, t.reason.split(":")[0]) for t in o.trials]
    assert verdicts == [("attention_to_sdpa", [], "rejected", "does not pay"),
                        ("causal_sdpa", [], "rejected", "the pattern is not in the graph"),
                        ("causal_sdpa", ["attention_to_sdpa"], "applied", "kernel time 1.667x, wall 1.000x")]
    assert [str(s) for s in o.applied] == ["attention_to_sdpa", "causal_sdpa"]
    assert o.trials[-1].agreement.within(1e-5)
    assert "together with attention_to_sdpa" in report.write_reports(o)
    torch_ = pytest.importorskip("torch")
    torch_._dynamo.reset()


H200 = REPO / "tests" / "fixtures" / "optimizer"  # kernels of the baseline profiles the H200 run took (README)


def h200_kernels(name):
    return {"kernels": pd.read_csv(H200 / f"{name}_baseline_kernels.csv", keep_default_na=True)}


def test_h200_unrolled_lstm_is_found_and_sent_back_to_cudnn():
    findings = run_rules(h200_kernels("lstm"), Context(compile="inductor", allow_precision="tf32",
                                                      module_types={"lstm": "LSTM", "head": "Linear"}))
    unrolled = by_rule(findings, "rnn_unrolled")
    assert unrolled.step == Step("rnn_cudnn", ("lstm",))
    assert unrolled.evidence[0] == "module lstm: GEMMs: 258 kernels, 1453.4 us (86.8 % of kernel time), mean 5.6 us"
    assert [s.name for s in steps_of(findings)] == ["rnn_cudnn", "freezing", "cuda_graphs", "tf32"]


def test_h200_attention_block_findings_in_order_with_the_tensor_pipe_idle():
    types = {"q_proj": "Linear", "k_proj": "Linear", "v_proj": "Linear", "out_proj": "Linear", "norm": "LayerNorm"}
    findings = run_rules(h200_kernels("attention"), Context(compile="inductor", allow_precision="bf16",
                                                            module_types=types, wall_ms_per_step=0.611))
    assert [s.name for s in steps_of(findings)] == ["fuse_projections", "attention_to_sdpa", "causal_sdpa", "freezing",
                                                   "cuda_graphs", "bf16"]
    gemms = by_rule(findings, "fp32_gemms").evidence
    assert "85.1 % of kernel time" in gemms[0] and "(aten::mm 54.8 %, aten::bmm 30.3 %)" in gemms[0]
    assert gemms[1].startswith("tensor pipe 0.0 % active") and "on tensor cores 0 (0.0 %)" in gemms[1]
    assert "softmax kernels: 1 kernels, 33.8 us" in by_rule(findings, "hand_written_attention").evidence[0]


def test_h200_gpt2_without_counters_still_proposes_the_allowed_precision():
    findings = run_rules(h200_kernels("gpt2"), Context(compile="inductor", allow_precision="bf16", wall_ms_per_step=4.59))
    gemms = by_rule(findings, "fp32_gemms")
    assert gemms.step == Step("bf16") and "no ncu counters in this profile" in gemms.evidence[1]
    assert [s.name for s in steps_of(findings)] == ["causal_sdpa", "freezing", "cuda_graphs", "bf16"]
