"""``python -m opprof.optimize WORKLOAD [options]``: profile-guided optimization of a workload module
(get_model_and_input() -> (model, input)); ``opprof optimize`` runs this."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from opprof.optimize.rewrites import CATALOG


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m opprof.optimize",
        description="Profile a workload, turn the profile's evidence into candidate rewrites, and apply, check "
                    "and measure each; keep those that pay.")
    p.add_argument("workload", help="Python file with get_model_and_input(device=...) -> (model, input)")
    p.add_argument("-o", "--out", default=None, help="output directory (default opprof-optimize-<workload>)")
    p.add_argument("--profile", help="an existing opprof profile of the workload (default: run opprof profile)")
    p.add_argument("--compile", choices=("inductor", "eager"), default="inductor",
                   help="how the workload runs (default inductor)")
    p.add_argument("--train", action="store_true", help="optimize a training step (forward + backward)")
    p.add_argument("--allow-precision", choices=("tf32", "bf16", "fp16"), default=None,
                   help="allow this lower matmul precision (precision tier); default: numerics-preserving only")
    p.add_argument("--tolerance", type=float, default=1e-2,
                   help="precision tier: max relative error of outputs (and gradients) (default 1e-2)")
    p.add_argument("--exact-tolerance", type=float, default=1e-4,
                   help="exact tier: the least bound on relative error; the bound is the larger of this and 10x "
                        "the compiled model's own FP32 deviation (default 1e-4)")
    p.add_argument("--steps", type=int, default=20, help="wall-time steps per variant, median reported (default 20)")
    p.add_argument("--profile-steps", type=int, default=3, help="steps in each kernel profile (default 3)")
    p.add_argument("--min-gain", type=float, default=0.02,
                   help="a rewrite is kept when it is at least this much faster (default 0.02: 2 %%)")
    p.add_argument("--skip-ncu", action="store_true", help="baseline profile without ncu counters")
    p.add_argument("--metrics", help="metric-set file for the baseline profile")
    p.add_argument("--only", default="", help=f"comma-separated rewrites to try, of: {', '.join(CATALOG)}")
    p.add_argument("--device", choices=("cuda", "cpu"), default=None, help="default: cuda when available")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not Path(args.workload).is_file():
        print(f"opprof optimize: error: {args.workload}: no such workload file", file=sys.stderr)
        return 2
    only = tuple(n for n in args.only.split(",") if n)
    unknown = [n for n in only if n not in CATALOG]
    if unknown or args.steps < 1 or args.profile_steps < 1 or not 0 < args.tolerance:
        print(f"opprof optimize: error: {'unknown rewrite ' + ', '.join(unknown) if unknown else 'bad counts or tolerance'}",
              file=sys.stderr)
        return 2
    from opprof.optimize.driver import Options, optimize
    from opprof.optimize.report import write_reports

    out = Path(args.out or f"opprof-optimize-{Path(args.workload).stem}").resolve()
    options = Options(workload=args.workload, out=out, profile=args.profile, compile=args.compile, train=args.train,
                      allow_precision=args.allow_precision, tolerance=args.tolerance,
                      exact_tolerance=args.exact_tolerance, steps=args.steps, profile_steps=args.profile_steps,
                      min_gain=args.min_gain, device=args.device, skip_ncu=args.skip_ncu, metrics=args.metrics,
                      only=only)
    try:
        outcome = optimize(options)
    except RuntimeError as exc:  # the baseline profile failed (its output is above)
        print(f"opprof optimize: error: {exc}", file=sys.stderr)
        return 1
    print(write_reports(outcome), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
