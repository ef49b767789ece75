"""The optimization loop: profile, rules, then each candidate rewrite applied on top of those accepted so
far, checked for numerical agreement with the original model, measured (profiled kernel time and wall
time) and accepted only when it pays.

Numerics: the reference is the original model run eagerly in FP32. The unrewritten compiled model's own
deviation from it is the FP32 reassociation noise of this workload; an exact-tier step must stay within
max(--exact-tolerance, 10 x that noise), a precision-tier step within --tolerance.
"""

from __future__ import annotations

import gc
import math
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opprof.optimize import numerics, rewrites
from opprof.optimize.measure import KernelTime, Timing, kernel_time, wall_time
from opprof.optimize.rules import Context, Finding, run_rules

NOISE_FACTOR = 10.0
NOT_IN_GRAPH = "the pattern is not in the graph"
NOT_PAYING = "does not pay"


def log(message: str) -> None:
    print(f"[opprof optimize] {message}", file=sys.stderr, flush=True)


@dataclass
class Options:
    workload: str
    out: Path
    profile: str | None = None           # an existing profile of the workload; else `opprof profile` runs
    compile: str = "inductor"
    train: bool = False
    allow_precision: str | None = None
    tolerance: float = 1e-2              # precision tier: max relative error
    exact_tolerance: float = 1e-4        # exact tier: floor of the bound
    steps: int = 20                      # wall-time steps per variant
    profile_steps: int = 3               # steps in each in-process kernel profile
    min_gain: float = 0.02               # a rewrite pays when it is at least this much faster
    device: str | None = None
    skip_ncu: bool = False               # the baseline profile without counters
    metrics: str | None = None           # the baseline profile's metric set
    only: tuple[str, ...] = ()           # restrict the rewrites tried to these


@dataclass
class Measured:
    kernel: KernelTime | None  # None without a GPU
    wall: Timing

    def as_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel.as_dict() if self.kernel else None, "wall": self.wall.as_dict()}


@dataclass
class Trial:
    step: rewrites.Step
    finding: Finding
    verdict: str = ""          # applied, rejected
    reason: str = ""
    changes: list[str] = field(default_factory=list)
    agreement: numerics.Agreement | None = None
    bound: float | None = None
    measured: Measured | None = None
    kernel_speedup: float | None = None  # against the state before this step
    wall_speedup: float | None = None
    together: list[rewrites.Step] = field(default_factory=list)  # earlier steps retried with this one

    @property
    def steps(self) -> list[rewrites.Step]:
        return [*self.together, self.step]

    def as_dict(self) -> dict[str, Any]:
        return {"rewrite": str(self.step), "together_with": [str(t) for t in self.together],
                "tier": self.step.rewrite.tier, "mechanism": self.step.rewrite.mechanism,
                "finding": self.finding.as_dict(), "verdict": self.verdict, "reason": self.reason,
                "changes": self.changes, "numerics": self.agreement.as_dict() if self.agreement else None,
                "numerics_bound": self.bound, "measured": self.measured.as_dict() if self.measured else None,
                "kernel_speedup": self.kernel_speedup, "wall_speedup": self.wall_speedup}


@dataclass
class Outcome:
    options: Options
    baseline_profile: str
    findings: list[Finding]
    baseline: Measured
    noise: numerics.Agreement
    trials: list[Trial]
    applied: list[rewrites.Step]
    final: Measured
    exact_only: Measured             # after the applied exact-tier steps alone
    diff_text: str = ""              # `opprof diff` of the baseline and final kernel profiles, when available
    saved_code: str = ""


def speedup(before: float | None, after: float | None) -> float | None:
    return before / after if before and after else None


def run_baseline_profile(options: Options) -> str:
    """`opprof profile` of the unmodified workload (the evidence), unless one was given."""
    if options.profile:
        return options.profile
    from opprof.engine import find_engine

    out = options.out / "baseline"
    args = [str(find_engine()), "profile", options.workload, "--compile", options.compile, "-o", str(out),
            "--python", sys.executable]
    if options.train:
        args.append("--train")
    if options.skip_ncu:
        args.append("--skip-ncu")
    if options.metrics:
        args += ["--metrics", options.metrics]
    log("profiling the workload: " + " ".join(args))
    result = subprocess.run(args, stdout=sys.stderr, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"opprof profile exited {result.returncode}; its output is above")
    return str(out / "profile.db")


def reuse_compile_cache(options: Options, profile_path: str) -> None:
    """When this run's `opprof profile` just compiled the same model, its Inductor and Triton caches hold the
    kernels: compiling the variants against them saves their kernel compilation. Only before torch's import
    reads the variables, and never over the user's own."""
    cache = Path(profile_path).parent / "cache"
    if options.profile or not cache.is_dir() or "torch" in sys.modules:
        return
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache / "inductor"))
    os.environ.setdefault("TRITON_CACHE_DIR", str(cache / "triton"))


class Session:
    """The workload loaded once in this process; variants are built from its model."""

    def __init__(self, options: Options, profile_path: str):
        reuse_compile_cache(options, profile_path)
        import torch

        from opprof.capture import call_get_model_and_input, load_workload

        self.options = options
        self.device = options.device or ("cuda" if torch.cuda.is_available() else "cpu")
        os.environ["OPPROF_DEVICE"] = self.device
        module = load_workload(Path(options.workload).resolve())
        self.model, self.inputs = call_get_model_and_input(module, self.device)
        self.module_types = {name: type(m).__name__ for name, m in self.model.named_modules() if name}

    def step_fn(self, runner: Any, model: Any, inputs: Any) -> Any:
        import torch

        from opprof.capture import backward_target, call_model

        def step() -> Any:
            if self.options.train:
                model.zero_grad(set_to_none=True)
                output = call_model(runner, inputs)
                backward_target(output).backward()
                return output
            with torch.no_grad():
                return call_model(runner, inputs)

        return step

    def outputs(self, built: rewrites.Built) -> tuple[Any, list[Any] | None]:
        with built.flags():
            output = self.step_fn(built.runner, built.model, built.inputs)()
        grads = [p.grad for _, p in built.model.named_parameters()] if self.options.train else None
        return output, grads

    def measure(self, built: rewrites.Built, label: str) -> Measured:
        step = self.step_fn(built.runner, built.model, built.inputs)
        with built.flags():
            wall = wall_time(step, self.device, steps=self.options.steps)
            kernel = kernel_time(step, self.options.out / "profiles" / label, self.options.profile_steps) \
                if self.device == "cuda" else None
        return Measured(kernel, wall)


def _release() -> None:
    import torch

    torch._dynamo.reset()
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _kernel_ns(m: Measured) -> float | None:
    return m.kernel.ns_per_step if m.kernel else None


def pays(before: Measured, after: Measured, min_gain: float) -> tuple[bool, str]:
    """Faster in profiled kernel time (wall time not worse), or, where kernel time stays, in wall time
    beyond both measurements' spread."""
    k = speedup(_kernel_ns(before), _kernel_ns(after))
    w = speedup(before.wall.median_ms, after.wall.median_ms)
    if k is not None and k >= 1 + min_gain and w >= 1 - min_gain:
        return True, f"kernel time {k:.3f}x, wall {w:.3f}x"
    separated = after.wall.p75_ms < before.wall.p25_ms
    if w >= 1 + min_gain and separated and (k is None or k >= 1 - min_gain):
        return True, f"wall {w:.3f}x (interquartile ranges apart)" + (f", kernel time {k:.3f}x" if k else "")
    figures = f"kernel time {k:.3f}x, wall {w:.3f}x" if k is not None else f"wall {w:.3f}x"
    return False, f"{NOT_PAYING}: {figures} (needs >= {1 + min_gain:.2f}x)"


def optimize(options: Options) -> Outcome:
    import opprof

    options.out.mkdir(parents=True, exist_ok=True)
    profile_path = run_baseline_profile(options)
    profile = opprof.load(profile_path)
    session = Session(options, profile_path)
    log(f"workload {options.workload} on {session.device} ({options.compile}, {'train' if options.train else 'inference'})")

    reference = session.outputs(rewrites.apply(session.model, session.inputs, [], compile="eager"))
    baseline_built = rewrites.apply(session.model, session.inputs, [], compile=options.compile)
    outputs, grads = session.outputs(baseline_built)
    noise = numerics.compare(reference[0], outputs, reference[1], grads)
    exact_bound = max(options.exact_tolerance, NOISE_FACTOR * noise.worst_rel)
    log(f"baseline ({options.compile}) against eager FP32: {noise.text()}; exact-tier bound {exact_bound:.3g}")
    baseline = session.measure(baseline_built, "00_baseline")
    del baseline_built, outputs, grads
    _release()

    ctx = Context(compile=options.compile, train=options.train, allow_precision=options.allow_precision,
                  module_types=session.module_types, steps_in_profile=int(profile.meta.get("capture.iters", "1") or 1),
                  wall_ms_per_step=baseline.wall.median_ms)
    findings = run_rules({name: profile[name] for name in ("kernels",)}, ctx)
    profile.close()
    for f in findings:
        log(f"finding {f.rule}: {f.step or 'no rewrite'}")

    applied: list[rewrites.Step] = []
    current = exact_only = baseline
    trials = []
    interrupted = False
    deferred: list[rewrites.Step] = []  # FX rewrites that agreed numerically but did not pay alone
    for index, finding in enumerate(f for f in findings if f.step is not None):
        step = finding.step
        trial = Trial(step, finding)
        trials.append(trial)
        if interrupted:
            trial.verdict, trial.reason = "skipped", "interrupted before it was tried"
            continue
        if options.only and step.name not in options.only:
            trial.verdict, trial.reason = "skipped", "not in --only"
            continue
        label = f"{index + 1:02d}_{step.name}"
        log(f"trying {step} on top of [{', '.join(map(str, applied))}]")
        try:
            current, exact_only = _try(session, trial, reference, applied, current, exact_only, exact_bound, label)
            if trial.verdict == "rejected" and trial.reason.startswith(NOT_IN_GRAPH) and deferred:
                # The pattern an earlier rewrite makes (causal_sdpa needs attention_to_sdpa's SDPA): the two
                # may pay together where the first alone did not.
                retry = Trial(step, finding, together=list(deferred))
                trials.append(retry)
                log(f"trying {step} together with [{', '.join(map(str, deferred))}]")
                _release()
                current, exact_only = _try(session, retry, reference, applied, current, exact_only, exact_bound,
                                           label + "_together")
                if retry.verdict == "applied":
                    deferred.clear()
            elif trial.verdict == "rejected" and trial.reason.startswith(NOT_PAYING) and step.rewrite.mechanism == "FX pass":
                deferred.append(step)
        except KeyboardInterrupt:  # a time limit: report what was measured so far
            interrupted = True
            trial.verdict, trial.reason = "skipped", "interrupted while it was tried"
        _release()

    outcome = Outcome(options, profile_path, findings, baseline, noise, trials, applied, current, exact_only)
    outcome.diff_text = diff_profiles(baseline, current)
    from opprof.optimize.report import save_code

    outcome.saved_code = save_code(outcome)
    return outcome


def _try(session: Session, trial: Trial, reference: tuple[Any, Any], applied: list[rewrites.Step],
         current: Measured, exact_only: Measured, exact_bound: float, label: str) -> tuple[Measured, Measured]:
    """Builds, checks and measures one step on top of the applied ones, appending it to applied when it
    pays. Returns the (current, exact-only) measurements after it."""
    options, step = session.options, trial.step
    try:
        built = rewrites.apply(session.model, session.inputs, [*applied, *trial.steps], compile=options.compile)
        outputs, grads = session.outputs(built)
    except Exception as exc:  # a rewrite that does not compile or run is rejected, with the reason
        trial.verdict, trial.reason = "rejected", f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        log(trial.reason)
        return current, exact_only
    def changes_of(s: rewrites.Step) -> list[str]:
        return built.changes.get(s.name, []) if s.rewrite.mechanism == "FX pass" else [s.rewrite.does]

    trial.changes = [c for s in trial.steps for c in changes_of(s)]
    if not changes_of(step):
        trial.verdict, trial.reason = "rejected", NOT_IN_GRAPH + ": the pass changed nothing"
        return current, exact_only
    trial.agreement = numerics.compare(reference[0], outputs, reference[1], grads)
    trial.bound = exact_bound if step.rewrite.tier == rewrites.EXACT else options.tolerance
    if not trial.agreement.within(trial.bound):
        trial.verdict = "rejected"
        trial.reason = (f"numerics: max rel {trial.agreement.worst_rel:.3g} exceeds the {step.rewrite.tier}-tier "
                        f"bound {trial.bound:.3g}")
        return current, exact_only
    del outputs, grads
    trial.measured = session.measure(built, label)
    trial.kernel_speedup = speedup(_kernel_ns(current), _kernel_ns(trial.measured))
    trial.wall_speedup = speedup(current.wall.median_ms, trial.measured.wall.median_ms)
    ok, why = pays(current, trial.measured, options.min_gain)
    trial.verdict, trial.reason = ("applied" if ok else "rejected"), why
    log(f"{step}: {trial.verdict}: {why}; {trial.agreement.text()}")
    if not ok:
        return current, exact_only
    applied.extend(trial.steps)
    return trial.measured, (trial.measured if step.rewrite.tier == rewrites.EXACT else exact_only)


def diff_profiles(before: Measured, after: Measured) -> str:
    """`opprof diff` of the two kernel profiles, where this engine has the command."""
    if before.kernel is None or after.kernel is None or before.kernel.database == after.kernel.database:
        return ""
    from opprof.engine import EngineError, run_engine

    try:
        return run_engine(["diff", before.kernel.database, after.kernel.database])
    except EngineError as exc:
        return "" if "unknown command" in str(exc) else f"opprof diff failed: {exc}"


def overall(outcome: Outcome) -> dict[str, Any]:
    """Total speedups, the numerics-preserving part alone, and the share precision contributes (on a log
    scale: the fraction of log(total speedup) that the precision steps make)."""
    out: dict[str, Any] = {}
    for key, pick in (("kernel", _kernel_ns), ("wall", lambda m: m.wall.median_ms)):
        total = speedup(pick(outcome.baseline), pick(outcome.final))
        exact = speedup(pick(outcome.baseline), pick(outcome.exact_only))
        share = None
        if total and exact and total > 1:
            share = max(0.0, min(1.0, math.log(total / exact) / math.log(total)))
        out[key] = {"total": total, "exact_only": exact, "precision_factor": (total / exact) if total and exact else None,
                    "precision_share": share}
    return out
