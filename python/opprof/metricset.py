"""The engine's curated ncu metric set, as the engine reads it (no torch needed).

The engine owns the format and its semantics (src/opprof/metrics/metric_set.cpp); this module asks it
(``opprof metrics --json``, see opprof.engine for where the executable is found), so that the capture
scripts pass ncu exactly the names the engine will look for.

Command line (prints one comma-separated list on stdout, for ``ncu --metrics``):

  python -m opprof.metricset --chip gh100
  python -m opprof.metricset --device-name "NVIDIA H200" --compute-capability 9.0
  python -m opprof.metricset --file my_metrics.tsv --chip gh100 --check
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from opprof.engine import EngineError, EngineNotFound, run_engine

CHIP_INDEPENDENT = "*"


class MetricSetError(ValueError):
    """A metric-set file the engine rejected, with its file:line message."""


def describe(chip: str = CHIP_INDEPENDENT, path: str | os.PathLike | None = None, device_name: str = "",
             compute_capability: str = "") -> dict[str, Any]:
    """The engine's ``opprof metrics --json`` document: the set for ``chip`` ("" or "*": the chip-independent
    set), or for the chip of a device when ``device_name`` or ``compute_capability`` ("9.0") is given."""
    args = ["metrics", "--json", "--chip", chip or CHIP_INDEPENDENT]
    if path:
        args += ["--metrics", os.fspath(path)]
    if device_name or compute_capability:
        args += ["--device-name", device_name, "--compute-capability", compute_capability]
    try:
        return json.loads(run_engine(args))
    except EngineError as exc:
        raise MetricSetError(str(exc)) from exc


def metric_names_for_chip(chip: str, path: str | os.PathLike | None = None) -> list[str]:
    """Metric names for ``ncu --metrics`` on ``chip`` ("" or "*" for the chip-independent set)."""
    return [m["name"] for m in describe(chip, path)["metrics"]]


def chip_for_device(device_name: str, compute_major: int = 0, compute_minor: int = 0) -> str:
    """The ncu chip name for a GPU (the engine's chip_for_device), "" when the engine knows none."""
    doc = describe(device_name=device_name, compute_capability=f"{compute_major}.{compute_minor}")
    return doc.get("device_chip", "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m opprof.metricset",
        description="Print the engine's ncu metric set for one chip as a comma-separated list.",
    )
    parser.add_argument("--file", help="metric-set TSV (default: the engine's built-in set)")
    parser.add_argument("--chip", default="", help="ncu chip name (gh100, ga100, ...)")
    parser.add_argument("--device-name", default="", help="GPU name, used to find the chip when --chip is absent")
    parser.add_argument("--compute-capability", default="", help="major.minor, used to find the chip")
    parser.add_argument(
        "--check", action="store_true", help="fail when a name is not in the chip's ncu catalog"
    )
    parser.add_argument("--separator", default=",", help="separator between names (default ',')")
    args = parser.parse_args(argv)

    by_device = not args.chip and (args.device_name or args.compute_capability)
    try:
        doc = describe(args.chip, args.file, *((args.device_name, args.compute_capability) if by_device else ()))
    except (MetricSetError, EngineNotFound) as exc:
        print(f"opprof.metricset: {exc}", file=sys.stderr)
        return 1
    if by_device and "device_chip" not in doc:
        print(
            f"opprof.metricset: no chip known for '{args.device_name}' cc {args.compute_capability}; "
            "using the chip-independent set",
            file=sys.stderr,
        )
    if doc["problems"]:
        print(
            f"opprof.metricset: not in the {doc['chip']} ncu catalog (ncu would drop them silently):\n  "
            + "\n  ".join(doc["problems"]),
            file=sys.stderr,
        )
        if args.check:
            return 1
    print(args.separator.join(m["name"] for m in doc["metrics"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
