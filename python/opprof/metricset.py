"""The engine's curated ncu metric set, read from Python (no torch needed).

The file format and its semantics are the C++ engine's (src/opprof/metrics/metric_set.cpp); this module
mirrors them so that the capture scripts pass ncu exactly the names the engine will look for:

  tab-separated columns: metric, aggregate, axis, arch, replaces, reason; '#' starts a comment line.
  arch "*" rows form the default set. For one chip, rows whose arch is that chip are applied in file
  order: a row whose "replaces" names a metric of the set takes that metric's place, any other such row
  is appended.

Command line (prints one comma-separated list on stdout, for ``ncu --metrics``):

  python -m opprof.metricset --chip gh100
  python -m opprof.metricset --device-name "NVIDIA H200" --compute-capability 9.0
  python -m opprof.metricset --file my_metrics.tsv --chip gh100 --check
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

AGGREGATES = ("sum", "wmean", "max")
DEFAULT_METRIC_SET_FILENAME = "metrics_default.tsv"


class MetricSetError(ValueError):
    """A metric-set file that cannot be used, with the file and line in the message."""


@dataclass(frozen=True)
class MetricSpec:
    name: str
    aggregate: str
    axis: str
    arch: str = "*"
    replaces: str = ""
    reason: str = ""
    line: int = 0


@dataclass
class MetricSet:
    source: str
    metrics: list[MetricSpec] = field(default_factory=list)

    def names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def find(self, name: str) -> MetricSpec | None:
        for m in self.metrics:
            if m.name == name:
                return m
        return None

    def for_chip(self, chip: str) -> "MetricSet":
        """The set one chip collects: the "*" rows, with that chip's rows replacing what they name."""
        out = MetricSet(self.source, [m for m in self.metrics if m.arch == "*"])
        for m in self.metrics:
            if m.arch == "*" or m.arch != chip:
                continue
            index = next(
                (i for i, x in enumerate(out.metrics) if m.replaces and x.name == m.replaces),
                None,
            )
            if index is None:
                out.metrics.append(m)
            else:
                out.metrics[index] = m
        return out


def parse_metric_set(text: str, source: str) -> MetricSet:
    metric_set = MetricSet(source)
    for line_no, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        cols = [c.strip() for c in raw.split("\t")]
        where = f"{source}:{line_no}"
        if len(cols) < 3:
            raise MetricSetError(
                f"{where}: expected tab-separated columns: metric, aggregate, axis[, arch, replaces, reason]"
            )
        col = lambda i: cols[i] if i < len(cols) else ""  # noqa: E731 - short accessor for optional columns
        name, aggregate = col(0), col(1)
        if aggregate not in AGGREGATES:
            raise MetricSetError(
                f"{where}: unknown aggregate '{aggregate}' for {name} (expected sum, wmean or max)"
            )
        if not name or any(ch in name for ch in ' ,"'):
            raise MetricSetError(f"{where}: bad metric name '{name}'")
        spec = MetricSpec(
            name=name,
            aggregate=aggregate,
            axis=col(2),
            arch=col(3) or "*",
            replaces=col(4),
            reason=col(5),
            line=line_no,
        )
        if spec.arch == "*" and metric_set.find(name) is not None:
            raise MetricSetError(f"{where}: metric {name} is listed twice")
        metric_set.metrics.append(spec)
    if not metric_set.metrics:
        raise MetricSetError(f"{source}: the metric set names no metric")
    return metric_set


def data_dir_candidates() -> list[Path]:
    """Where the engine's data/ files may be, in the order they are tried.

    OPPROF_DATA_DIR wins (a user's override); then package data installed beside this module
    (opprof/data/); then the repository layout (python/opprof/ -> ../../data) for a source checkout
    used through PYTHONPATH=python; then <prefix>/share/opprof/data for an installed wheel that put the
    files there.
    """
    here = Path(__file__).resolve().parent
    candidates: list[Path] = []
    env = os.environ.get("OPPROF_DATA_DIR")
    if env:
        candidates.append(Path(env))
    candidates.append(here / "data")
    candidates.append(here.parent.parent / "data")
    candidates.append(Path(sys.prefix) / "share" / "opprof" / "data")
    return candidates


def find_data_file(filename: str) -> Path:
    tried = []
    for directory in data_dir_candidates():
        path = directory / filename
        tried.append(str(path))
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"opprof data file {filename} not found; looked in: {', '.join(tried)} "
        "(set OPPROF_DATA_DIR to the folder holding it)"
    )


def load_metric_set(path: str | os.PathLike | None = None) -> MetricSet:
    """The metric set in `path`, or the engine's default set when `path` is None."""
    resolved = Path(path) if path else find_data_file(DEFAULT_METRIC_SET_FILENAME)
    try:
        text = resolved.read_text(encoding="utf-8")
    except OSError as exc:
        raise MetricSetError(f"cannot read metric set {resolved}: {exc}") from exc
    return parse_metric_set(text, str(resolved))


def chip_for_device(device_name: str, compute_major: int = 0, compute_minor: int = 0) -> str:
    """The ncu chip name for a GPU (same table as the engine's chip_for_device), "" when unknown."""
    by_capability = {
        70: "gv100",
        75: "tu102",
        80: "ga100",
        86: "ga102",
        87: "ga102",
        89: "ad102",
        90: "gh100",
        100: "gb100",
        120: "gb202",
    }
    chip = by_capability.get(compute_major * 10 + compute_minor)
    if chip:
        return chip
    if any(tag in device_name for tag in ("H100", "H200", "H800")):
        return "gh100"
    if any(tag in device_name for tag in ("A100", "A800", "A30")):
        return "ga100"
    return ""


def metric_names_for_chip(chip: str, path: str | os.PathLike | None = None) -> list[str]:
    """Metric names for ``ncu --metrics`` on `chip` ("" or "*" for the chip-independent default set)."""
    metric_set = load_metric_set(path)
    if chip and chip != "*":
        metric_set = metric_set.for_chip(chip)
    return metric_set.names()


def unknown_metrics(names: list[str], chip: str) -> list[str]:
    """Names whose base is not in the chip's ncu catalog (data/ncu_catalog_<chip>.tsv).

    ncu silently drops metric names it does not know, so a typo would only show up as a missing column
    after a long replay; checking before the run is cheap. Returns [] when no catalog exists for the chip.
    launch__* and device__attribute_* are always collectable and not in the catalog.
    """
    try:
        catalog_path = find_data_file(f"ncu_catalog_{chip}.tsv")
    except FileNotFoundError:
        return []
    bases = set()
    for line in catalog_path.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        base = line.split("\t", 1)[0]
        bases.add(base.rsplit(".", 1)[-1])  # grouped names ("CTC.TriageCompute.x") count by their last part
    problems = []
    for name in names:
        if name.startswith(("launch__", "device__attribute_")):
            continue
        if name.split(".", 1)[0] not in bases:
            problems.append(name)
    return problems


def _parse_compute_capability(text: str) -> tuple[int, int]:
    try:
        major, _, minor = text.partition(".")
        return int(major), int(minor or 0)
    except ValueError:
        raise SystemExit(f"opprof.metricset: bad --compute-capability '{text}' (expected e.g. 9.0)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m opprof.metricset",
        description="Print the engine's ncu metric set for one chip as a comma-separated list.",
    )
    parser.add_argument("--file", help="metric-set TSV (default: the engine's data/metrics_default.tsv)")
    parser.add_argument("--chip", default="", help="ncu chip name (gh100, ga100, ...)")
    parser.add_argument("--device-name", default="", help="GPU name, used to find the chip when --chip is absent")
    parser.add_argument("--compute-capability", default="", help="major.minor, used to find the chip")
    parser.add_argument(
        "--check", action="store_true", help="fail when a name is not in the chip's ncu catalog"
    )
    parser.add_argument("--separator", default=",", help="separator between names (default ',')")
    args = parser.parse_args(argv)

    chip = args.chip
    if not chip and (args.device_name or args.compute_capability):
        major, minor = _parse_compute_capability(args.compute_capability) if args.compute_capability else (0, 0)
        chip = chip_for_device(args.device_name, major, minor)
        if not chip:
            print(
                f"opprof.metricset: no chip known for '{args.device_name}' cc {args.compute_capability}; "
                "using the chip-independent set",
                file=sys.stderr,
            )
    try:
        names = metric_names_for_chip(chip, args.file)
    except (MetricSetError, FileNotFoundError) as exc:
        print(f"opprof.metricset: {exc}", file=sys.stderr)
        return 1
    if chip:
        bad = unknown_metrics(names, chip)
        if bad:
            print(
                f"opprof.metricset: not in the {chip} ncu catalog (ncu would drop them silently): "
                + ", ".join(bad),
                file=sys.stderr,
            )
            if args.check:
                return 1
    print(args.separator.join(names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
