"""Pass B's side of layer dedup: marks what the engine's dedup plan skips, for ncu's NVTX filter.

The engine (src/opprof/dedup) writes the plan, dedup_plan.json, and names it in OPPROF_DEDUP_PLAN; ncu runs
with `--nvtx --nvtx-exclude "opprof.dup/"`, so every kernel launched inside an `opprof.dup` push/pop range
is not replayed. The plan (format version 1):

  {"format": "opprof-dedup-plan", "version": 1,
   "mechanism": "nvtx_modules",
   "range": "opprof.dup",
   "skip_modules": ["transformer.h.1", ..., "transformer.h.11"],
   "backward": true}

nvtx_modules: the range is pushed around the forward of every module in skip_modules (a forward pre-hook
and an always-called forward hook) and, with "backward", around its backward (a full backward pre-hook
and a full backward hook, which run on autograd's thread: ncu's --nvtx-push-pop-scope process lets a range
pushed there exclude the kernels launched there). docs/dedup.md says which capture kinds use it and why.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opprof.contract import DEDUP_RANGE

PLAN_FORMAT = "opprof-dedup-plan"
PLAN_VERSION = 1
MECHANISMS = ("nvtx_modules",)


class PlanError(Exception):
    """A plan this side cannot follow (the capture then fails: pass B would replay the wrong kernels)."""


class DedupSelection:
    def __init__(self, plan: dict[str, Any], model: Any, push: Any = None, pop: Any = None):
        if plan.get("format") != PLAN_FORMAT or plan.get("version") != PLAN_VERSION:
            raise PlanError(f"not an {PLAN_FORMAT} version {PLAN_VERSION} file: format {plan.get('format')!r}, "
                            f"version {plan.get('version')!r}")
        self.mechanism = plan.get("mechanism")
        if self.mechanism not in MECHANISMS:
            raise PlanError(f"unknown dedup selection mechanism {self.mechanism!r} (this side knows {MECHANISMS})")
        self.range = plan.get("range", DEDUP_RANGE)
        self.skip_modules = list(plan.get("skip_modules", []))
        self.backward = bool(plan.get("backward", False))
        from opprof.hooks import _unwrap_compiled

        self.root = _unwrap_compiled(model)
        if push is None or pop is None:
            import torch

            push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
        self._push, self._pop = push, pop
        self._handles: list[Any] = []
        self.missing: list[str] = []
        self.forward_ranges = 0
        self.backward_ranges = 0

    @classmethod
    def from_file(cls, path: str | Path, model: Any) -> "DedupSelection":
        try:
            plan = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise PlanError(f"{path}: cannot read the dedup plan: {exc}") from exc
        return cls(plan, model)

    def install(self) -> "DedupSelection":
        modules = dict(self.root.named_modules())
        for path in self.skip_modules:
            module = modules.get(path)
            if module is None:
                self.missing.append(path)
                continue
            self._handles.append(module.register_forward_pre_hook(self._enter_forward))
            self._handles.append(module.register_forward_hook(self._exit_forward, always_call=True))
            if self.backward:
                self._handles.append(module.register_full_backward_pre_hook(self._enter_backward))
                self._handles.append(module.register_full_backward_hook(self._exit_backward))
        if self.missing:
            raise PlanError(f"the dedup plan names modules the model does not have: {', '.join(self.missing[:5])}")
        return self

    def _enter_forward(self, *_: Any) -> None:
        self._push(self.range)
        self.forward_ranges += 1

    def _exit_forward(self, *_: Any) -> None:
        self._pop()

    def _enter_backward(self, *_: Any) -> None:
        self._push(self.range)
        self.backward_ranges += 1

    def _exit_backward(self, *_: Any) -> None:
        self._pop()

    def uninstall(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def describe(self) -> str:
        return (f"{self.mechanism}: {len(self.skip_modules)} module instance(s) marked {self.range!r}"
                f"{' in forward and backward' if self.backward else ''}")

    def info(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "skip_modules": len(self.skip_modules), "backward": self.backward,
                "forward_ranges": self.forward_ranges, "backward_ranges": self.backward_ranges}
