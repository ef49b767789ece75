"""The optimizer's report (terminal text and JSON) and the applied rewrites saved as code the user adopts."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

from opprof.files import write_json_atomic

SAVED_CODE_FILE = "opprof_optimized.py"
REPORT_TEXT_FILE = "optimize_report.txt"
REPORT_JSON_FILE = "optimize_report.json"


def _x(value: float | None) -> str:
    return f"{value:.3f}x" if value else "n/a"


def _measured_text(m: Any) -> str:
    kernel = f"kernel {m.kernel.ns_per_step / 1e3:.1f} us/step ({m.kernel.kernels_per_step:.0f} kernels)" if m.kernel \
        else "kernel time not measured (no GPU)"
    return f"{kernel}; wall {m.wall.text()}"


def render_text(outcome: Any) -> str:
    from opprof.optimize.driver import overall

    o = outcome.options
    lines = [f"opprof optimize {o.workload} ({o.compile}, {'training step' if o.train else 'inference'})",
             f"  evidence: {outcome.baseline_profile}",
             f"  precision: {'--allow-precision ' + o.allow_precision + f' within max rel {o.tolerance:g}' if o.allow_precision else 'none allowed (numerics-preserving rewrites only)'}",
             f"  baseline: {_measured_text(outcome.baseline)}",
             f"  FP32 noise: the unrewritten {o.compile} model against eager FP32: {outcome.noise.text()}", ""]
    lines.append("Findings (profile evidence -> candidate)")
    for f in outcome.findings:
        lines.append(f"  {f.rule} -> {f.step or 'no rewrite'}")
        lines += [f"      {e}" for e in f.evidence]
    lines += ["", "Rewrites tried (each on top of those applied before it)"]
    for t in outcome.trials:
        r = t.step.rewrite
        together = f" together with {', '.join(map(str, t.together))}" if t.together else ""
        lines.append(f"  [{t.verdict}] {t.step}{together} ({r.tier} tier, {r.mechanism}): {t.reason}")
        lines += [f"      change: {c}" for c in t.changes]
        if t.agreement is not None:
            lines.append(f"      numerics: {t.agreement.text()} (bound: max rel {t.bound:.3g})")
        if t.measured is not None:
            lines.append(f"      measured: {_measured_text(t.measured)}")
            lines.append(f"      speedup over the previous state: kernel time {_x(t.kernel_speedup)}, wall {_x(t.wall_speedup)}")
    totals = overall(outcome)
    lines += ["", "Result"]
    lines.append(f"  applied: {', '.join(map(str, outcome.applied)) or 'nothing'}")
    lines.append(f"  final: {_measured_text(outcome.final)}")
    for key, label in (("kernel", "profiled kernel time"), ("wall", "wall time")):
        s = totals[key]
        if s["total"] is None:
            continue
        share = f"; precision's share {100 * s['precision_share']:.0f} % (of the log speedup)" if s["precision_share"] is not None else ""
        lines.append(f"  {label}: {_x(s['total'])} total = {_x(s['exact_only'])} numerics-preserving x "
                     f"{_x(s['precision_factor'])} precision{share}")
    if outcome.saved_code:
        lines.append(f"  saved: {outcome.saved_code}")
    if outcome.diff_text:
        lines += ["", "opprof diff (baseline -> final kernel profile)", outcome.diff_text.rstrip()]
    return "\n".join(lines) + "\n"


def as_json(outcome: Any) -> dict[str, Any]:
    from opprof.optimize.driver import overall

    o = outcome.options
    return {
        "workload": o.workload, "compile": o.compile, "train": o.train, "allow_precision": o.allow_precision,
        "tolerance": o.tolerance, "exact_tolerance": o.exact_tolerance, "evidence_profile": outcome.baseline_profile,
        "baseline": outcome.baseline.as_dict(), "noise": outcome.noise.as_dict(),
        "findings": [f.as_dict() for f in outcome.findings], "trials": [t.as_dict() for t in outcome.trials],
        "applied": [str(s) for s in outcome.applied], "final": outcome.final.as_dict(),
        "exact_only": outcome.exact_only.as_dict(), "speedup": overall(outcome), "saved_code": outcome.saved_code,
    }


def write_reports(outcome: Any) -> str:
    text = render_text(outcome)
    out = outcome.options.out
    tmp = out / (REPORT_TEXT_FILE + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out / REPORT_TEXT_FILE)
    write_json_atomic(out / REPORT_JSON_FILE, as_json(outcome))
    return text


def code_for(steps: list[Any], compile: str, header: str) -> str:
    """Python source that applies the steps: ``optimize(model)`` returns the model to call (compiled when
    compile is inductor); TF32, where applied, is switched on globally by it."""
    literal = ", ".join(f"Step({s.name!r}, {s.targets!r})" if s.targets else f"Step({s.name!r})" for s in steps)
    tf32 = any(s.name == "tf32" for s in steps)
    body = [
        f'"""{header}"""', "", "import torch", "", "from opprof.optimize.rewrites import Step, apply", "",
        f"STEPS = [{literal}]", "", "",
        "def optimize(model, example_input=None):",
        '    """The model with the applied rewrites: call the result instead of torch.compile(model)."""',
    ]
    if tf32:
        body += ["    torch.backends.cuda.matmul.allow_tf32 = True", "    torch.backends.cudnn.allow_tf32 = True"]
    body += [f"    return apply(model, example_input, STEPS, compile={compile!r}, copy_model=False).runner", ""]
    return "\n".join(body)


def save_code(outcome: Any) -> str:
    o = outcome.options
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [f"Rewrites opprof optimize applied to {o.workload} ({stamp}), each measured and checked:"]
    for t in outcome.trials:
        if t.verdict == "applied":
            lines.append(f"  {' + '.join(map(str, t.steps))}: {t.step.rewrite.does}; kernel time {_x(t.kernel_speedup)}, wall {_x(t.wall_speedup)}; "
                         f"{t.agreement.text() if t.agreement else ''}")
    if not outcome.applied:
        lines.append("  none paid; optimize(model) compiles the model unchanged")
    lines.append("Channels-last inputs: pass them through opprof.optimize.rewrites.to_channels_last."
                 if any(s.name == "channels_last" for s in outcome.applied) else "")
    path = Path(o.out) / SAVED_CODE_FILE
    tmp = path.with_suffix(".py.tmp")
    tmp.write_text(code_for(outcome.applied, o.compile, "\n".join(lines).rstrip() + "\n"), encoding="utf-8")
    tmp.replace(path)
    return str(path)
