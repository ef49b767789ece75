"""Capture driver: runs a workload in this process and records one pass.

  python -m opprof.capture --pass timeline --out CAP --workload examples/gpt2.py --compile inductor
  ncu --profile-from-start off ... python -m opprof.capture --pass counters --out CAP --workload ...
  python -m opprof.capture --pass timeline --out CAP -- my_script.py --its --args

Pass "timeline" (A) records torch.profiler over the capture window and exports CAP/trace.json (or, with
--backend tracer, runs under the injected opprof tracer, which writes CAP/trace.opprof: the window is
cudaProfilerStart/Stop, operator ranges come from opprof.op_ranges (the torch observer library, else
emit_nvtx) and module ranges are NVTX ranges), with
module ranges ("nn.Module: <path>", opprof.hooks) in eager mode and the FX module map
(CAP/opprof_fx_modules.json, opprof.fx_modules) for compiled graphs. Pass "counters" (B) runs the same
iterations without torch.profiler and brackets the window with cudaProfilerStart/Stop for ncu; it
never writes to stdout (ncu's CSV may be read from there: the process's stdout is sent to stderr).
Window rules: opprof.window.

Both passes get the same environment, set here before torch is imported: TORCH_COMPILE_DEBUG=1 with
the debug directory CAP/inductor (pass A) or CAP/inductor_counters (pass B, so it does not overwrite
A's), and the Inductor and Triton caches under CAP/cache shared by the two passes, so that pass B loads
the kernels pass A compiled and kernel names agree. Pass A clears that cache first: on a cache hit
Inductor writes no output_code.py or provenance JSON, which the engine needs.

Writes CAP/capture.json (pass A) or CAP/capture_counters.json (pass B): versions, device, command,
window, wall times, SM clock, error, and the process (pid, rank, world size).

In a multi-process job (OPPROF_TRACE_PER_PROCESS=1: `opprof profile -- torchrun ...` runs this module in
every rank, `torchrun ... -m opprof.capture ... -- train.py`) CAP is the job's directory and each process
writes into CAP/rank<R>/ (RANK, else LOCAL_RANK), else CAP/pid<P>/, the folder its tracer log goes to. Exit status: 0 ok, 1 the workload failed (what was captured is
kept), 2 bad usage or environment, 3 the capture window never opened.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import gc
import importlib.util
import inspect
import os
import runpy
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from opprof import FX_MODULES_FILENAME, contract
from opprof.files import write_json_atomic
from opprof.window import (
    KIND_NEVER_OPENED,
    KIND_WHOLE_RUN,
    KIND_WORKLOAD,
    WINDOW_MODES,
)

EXIT_OK = 0
EXIT_WORKLOAD_FAILED = 1
EXIT_USAGE = 2
EXIT_NEVER_OPENED = 3

CAPTURE_FORMAT_VERSION = 1
TRACE_FILENAME = contract.TORCH_TRACE_FILE
TRACER_TRACE_FILENAME = contract.TRACER_TRACE_FILE

_STARTED = time.perf_counter()


def log(message: str) -> None:
    print(f"[opprof.capture +{time.perf_counter() - _STARTED:7.1f}s] {message}", file=sys.stderr, flush=True)


class UsageError(Exception):
    """Bad arguments or an environment the capture cannot run in (exit 2)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m opprof.capture",
        description="Run a PyTorch workload and record one opprof capture pass.",
        epilog="Give a script to run after '--': python -m opprof.capture --pass timeline --out CAP -- train.py --lr 1e-3",
    )
    parser.add_argument("--pass", dest="pass_", choices=("timeline", "counters"), required=True,
                        help="timeline: torch.profiler trace (pass A); counters: window for ncu (pass B)")
    parser.add_argument("--out", required=True, help="capture directory (created if missing)")
    parser.add_argument("--workload", help="Python file with get_model_and_input(device=...) -> (model, input)")
    parser.add_argument("--compile", choices=("eager", "inductor"), default="eager",
                        help="workload: run eagerly or through torch.compile (Inductor)")
    parser.add_argument("--compile-mode", default=None,
                        help="workload: torch.compile mode (default, reduce-overhead, max-autotune, ...)")
    parser.add_argument("--warmup", type=int, default=3, help="workload: iterations before the window (default 3)")
    parser.add_argument("--iters", type=int, default=1, help="workload: measured iterations in the window (default 1)")
    parser.add_argument("--train", action="store_true",
                        help="workload: forward + backward (of the output's loss, else output.sum()); default: forward under torch.no_grad()")
    parser.add_argument("--device", choices=("cuda", "cpu"), default=None,
                        help="workload device (default: cuda when available)")
    parser.add_argument("--window", choices=WINDOW_MODES, default="auto",
                        help="auto: the script's cudaProfilerStart/Stop window, else the whole run; "
                             "script: the script must open a window; whole: the whole run")
    parser.add_argument("--cache-dir", default=None, help="Inductor/Triton cache shared by both passes (default OUT/cache)")
    parser.add_argument("--inductor-debug-dir", default=None,
                        help="TORCH_COMPILE_DEBUG_DIR (default OUT/inductor in pass A, OUT/inductor_counters in pass B)")
    parser.add_argument("--keep-cache", action="store_true",
                        help="pass A: keep the existing compile cache (Inductor then writes no debug files on a hit)")
    parser.add_argument("--backend", choices=("torch", "tracer"), default="torch",
                        help="pass timeline: torch (torch.profiler -> trace.json) or tracer (the process runs with "
                             "libopprof_tracer.so injected, which writes OPPROF_TRACE_FILE; operator ranges from "
                             "libopprof_torch_observer.so (OPPROF_TORCH_OBSERVER_LIB) or emit_nvtx, module ranges "
                             "as NVTX)")
    parser.add_argument("--no-module-ranges", action="store_true", help="do not emit nn.Module ranges")
    parser.add_argument("--no-fx-map", action="store_true", help="do not record the FX module map")
    parser.add_argument("--no-structure", action="store_true",
                        help="do not record the model's structural classes (opprof_structure.json, for layer dedup)")
    return parser


def per_process() -> bool:
    """Whether this process is one of a job's (opprof profile -- torchrun ...): each writes its own capture."""
    return os.environ.get(contract.ENV_TRACE_PER_PROCESS, "0") not in ("", "0")


def launcher_rank() -> str | None:
    """This process's rank as its launcher set it (RANK, else LOCAL_RANK), as written there; None without one
    that is a number."""
    rank = os.environ.get("RANK") or os.environ.get("LOCAL_RANK")
    return rank if rank and rank.isdigit() else None


def counters_window_wanted() -> bool:
    """Pass B of a job with cross-rank dedup (OPPROF_COUNTERS_RANKS, "0,1"): whether this process's window
    opens ncu's range. Ranks not listed run without one and take the representative's counters; a process
    without a rank, or a list that cannot be read, is replayed."""
    wanted = os.environ.get(contract.ENV_COUNTERS_RANKS, "")
    rank = launcher_rank()
    if not per_process() or not wanted or rank is None:
        return True
    ranks = [r.strip() for r in wanted.split(",")]
    if not all(r.isdigit() for r in ranks):
        return True
    return int(rank) in {int(r) for r in ranks}


def process_dir_name() -> str:
    """This process's capture folder in a job, named as the tracer names it: rank<R> from RANK (else
    LOCAL_RANK), pid<P> without one."""
    rank = launcher_rank()
    if rank is not None:
        return f"{contract.RANK_DIR_PREFIX}{rank}"
    return f"{contract.PROCESS_DIR_PREFIX}{os.getpid()}"


def process_identity() -> dict[str, Any]:
    def number(name: str) -> int | None:
        value = os.environ.get(name, "")
        return int(value) if value.isdigit() else None

    return {"pid": os.getpid(), "rank": number("RANK"), "local_rank": number("LOCAL_RANK"),
            "world_size": number("WORLD_SIZE"), "local_world_size": number("LOCAL_WORLD_SIZE"),
            "host": os.uname().nodename}


def split_script_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    if "--" in argv:
        index = argv.index("--")
        return argv[:index], argv[index + 1:]
    return argv, []


def keep_stdout_clean() -> None:
    """Sends this process's stdout (fd 1, so C and Triton output too) to stderr: under ncu, the target's
    stdout is ncu's stdout, where the CSV goes."""
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), 1)


def _clear_dir(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)


def _is_inside(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


def configure_environment(args: argparse.Namespace, out: Path) -> dict[str, str]:
    """Environment for Inductor's debug files and the shared caches; must run before torch is imported."""
    cache_dir = Path(args.cache_dir).resolve() if args.cache_dir else out / "cache"
    debug_dir = Path(args.inductor_debug_dir).resolve() if args.inductor_debug_dir else (
        out / (contract.INDUCTOR_DIR if args.pass_ == "timeline" else "inductor_counters"))
    if args.pass_ == "timeline" and not args.keep_cache:
        if _is_inside(cache_dir, out):
            _clear_dir(cache_dir)
        elif cache_dir.exists() and any(cache_dir.iterdir()):
            log(f"warning: compile cache {cache_dir} is not empty and lies outside the capture directory, so it is "
                "kept; graphs found there are not recompiled and get no Inductor debug files")
    _clear_dir(debug_dir)  # stale run_* folders from an earlier capture would mix with this one's
    env = {
        "TORCH_COMPILE_DEBUG": "1",
        "TORCH_COMPILE_DEBUG_DIR": str(debug_dir),
        "TORCHINDUCTOR_CACHE_DIR": str(cache_dir / "inductor"),
        "TRITON_CACHE_DIR": str(cache_dir / "triton"),
        # Provenance tracking (kernel -> FX nodes) follows TORCH_COMPILE_DEBUG in recent releases; the
        # explicit switch covers releases where it is separate. Must be an integer: torch parses it.
        "INDUCTOR_PROVENANCE": "1",
        "OPPROF_CAPTURE_PASS": args.pass_,
    }
    for name, value in env.items():
        previous = os.environ.get(name)
        if previous is not None and previous != value and name not in ("OPPROF_CAPTURE_PASS",):
            log(f"note: overriding {name}={previous!r} with {value!r}")
        os.environ[name] = value
    (cache_dir / "inductor").mkdir(parents=True, exist_ok=True)
    (cache_dir / "triton").mkdir(parents=True, exist_ok=True)
    if "torch" in sys.modules:
        log("warning: torch was imported before opprof.capture set the environment; "
            "Inductor debug settings are applied through torch's config instead")
    return env


def apply_inductor_config(debug_dir: str, counters_pass: bool = False) -> dict[str, Any]:
    """Makes sure Inductor writes debug files with provenance even where the environment was read
    before we set it, or where the flag has another name (trace.provenance_tracking in older releases).
    In the counters pass, compiles run in the process (unless TORCHINDUCTOR_COMPILE_THREADS says otherwise)."""
    applied: dict[str, Any] = {}
    try:
        import torch._dynamo.config as dynamo_config
        import torch._inductor.config as inductor_config
    except Exception as exc:
        return {"error": repr(exc)}
    if counters_pass and "TORCHINDUCTOR_COMPILE_THREADS" not in os.environ and hasattr(inductor_config, "compile_threads"):
        # Pass B loads the graphs and kernels pass A compiled into the shared cache (compile_threads is not part of
        # the cache key). A worker pool would only cost there: Inductor starts it at the first compile, after ncu's
        # attach, and its workers, each importing torch, are waited for at exit. A graph that still has to be
        # compiled is compiled in the process, more slowly but with the same result.
        inductor_config.compile_threads = 1
        applied["compile_threads"] = 1
    trace = getattr(inductor_config, "trace", None)
    if trace is not None:
        if hasattr(trace, "enabled") and not trace.enabled:
            trace.enabled = True
            applied["trace.enabled"] = True
        if hasattr(trace, "provenance_tracking_level"):
            if int(trace.provenance_tracking_level) < 1:
                trace.provenance_tracking_level = 1
                applied["trace.provenance_tracking_level"] = 1
        elif hasattr(trace, "provenance_tracking") and not trace.provenance_tracking:
            trace.provenance_tracking = True
            applied["trace.provenance_tracking"] = True
    wanted_root = os.path.join(debug_dir, "torch_compile_debug")
    if hasattr(dynamo_config, "debug_dir_root") and dynamo_config.debug_dir_root != wanted_root:
        dynamo_config.debug_dir_root = wanted_root
        applied["dynamo.debug_dir_root"] = wanted_root
    return applied


def load_workload(path: Path) -> Any:
    if not path.is_file():
        raise UsageError(f"workload file not found: {path}")
    sys.path.insert(0, str(path.parent))  # let the workload import files beside it
    spec = importlib.util.spec_from_file_location(f"opprof_workload_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    if not callable(getattr(module, "get_model_and_input", None)):
        raise UsageError(f"{path} has no get_model_and_input() function")
    return module


def call_get_model_and_input(module: Any, device: str) -> tuple[Any, Any]:
    factory = module.get_model_and_input
    try:
        parameters = inspect.signature(factory).parameters
        takes_device = "device" in parameters or any(p.kind == p.VAR_KEYWORD for p in parameters.values())
    except (TypeError, ValueError):
        takes_device = False
    result = factory(device=device) if takes_device else factory()
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise UsageError("get_model_and_input() must return (model, input)")
    model, inputs = result
    if not callable(model):
        raise UsageError(f"get_model_and_input() returned a model that is not callable: {type(model).__name__}")
    return model, inputs


def call_model(model: Any, inputs: Any) -> Any:
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def _first_tensor(value: Any) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, (tuple, list)):
        items = list(value)
    elif hasattr(value, "to_tuple"):
        items = list(value.to_tuple())
    else:
        return None
    for item in items:
        found = _first_tensor(item)
        if found is not None:
            return found
    return None


def backward_target(output: Any) -> Any:
    """The scalar --train differentiates: the output's loss when it has one, else the first tensor's sum."""
    import torch

    loss = output.get("loss") if isinstance(output, dict) else getattr(output, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss if loss.dim() == 0 else loss.sum()
    tensor = _first_tensor(output)
    if tensor is None:
        raise RuntimeError("--train: the model's output holds no tensor to call backward() on")
    return tensor.sum()


def error_record(exc: BaseException, phase: str) -> dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "phase": phase,
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
    }


class Capture:
    def __init__(self, args: argparse.Namespace, script_argv: list[str], out: Path, argv: list[str]):
        self.args = args
        self.script_argv = script_argv
        self.out = out
        self.torch: Any = None
        self.device = "cpu"
        self.phase = "setup"
        self.record_path = out / (contract.CAPTURE_RECORD_FILE if args.pass_ == "timeline"
                                  else contract.COUNTERS_RECORD_FILE)
        # With the tracer the trace is the injected library's log, written where OPPROF_TRACE_FILE says.
        self.tracer = args.pass_ == "timeline" and args.backend == "tracer"
        tracer_file = os.environ.get(contract.ENV_TRACE_FILE) if self.tracer else None
        if tracer_file and per_process():  # the tracer writes into this process's folder (out already is it)
            tracer_file = str(out / Path(tracer_file).name)
        self.trace_path = Path(tracer_file).resolve() if tracer_file else out / (
            TRACER_TRACE_FILENAME if self.tracer else TRACE_FILENAME)
        self.record: dict[str, Any] = {
            "opprof_capture_version": CAPTURE_FORMAT_VERSION,
            "status": "running",
            "pass": args.pass_,
            "command": [sys.executable, "-m", "opprof.capture", *argv],
            "cwd": os.getcwd(),
            "mode": "workload" if args.workload else "script",
            "workload": str(Path(args.workload).resolve()) if args.workload else None,
            "script": script_argv or None,
            "compile": args.compile if args.workload else None,
            "compile_mode": args.compile_mode,
            "train": bool(args.train),
            "backend": args.backend if args.pass_ == "timeline" else None,
            "warmup": args.warmup if args.workload else None,
            "iters": args.iters if args.workload else None,
            "window": None,
            "window_info": None,
            "wall_s": {},
            "sm_clock": {},
            "versions": None,
            "device": None,
            "environment": None,
            "artifacts": {},
            "module_ranges": None,
            "fx_map": None,
            "stdout_redirected_to_stderr": args.pass_ == "counters",
            "error": None,
            "exit_code": None,
            # Which process of a job this is (the rank the launcher gave it), so that the engine pairs
            # pass A's and pass B's processes of one rank; the pids differ between the passes.
            "process": process_identity(),
        }
        self.fx_recorder: Any = None
        self.hooks: Any = None
        self.structure: Any = None  # pass A: opprof.structure.StructureRecorder of a workload's model
        self.dedup_selection: Any = None  # pass B: opprof.dedup_select hooks of the engine's plan
        self.root_watcher: Any = None  # scripts: finds the model for the two above

    # -- bookkeeping --------------------------------------------------------------------------------
    def save(self) -> None:
        write_json_atomic(self.record_path, self.record)

    def sync(self) -> None:
        torch = self.torch
        if torch is not None and self.device == "cuda" and torch.cuda.is_initialized():
            torch.cuda.synchronize()

    def sample_clock(self, label: str) -> None:
        from opprof.environment import sm_clock_mhz

        sample = sm_clock_mhz(self.device)
        if sample is not None:
            self.record["sm_clock"][label] = sample

    # -- top level ----------------------------------------------------------------------------------
    def run(self) -> int:
        started = time.perf_counter()
        self.save()
        code = EXIT_OK
        try:
            self.setup()
            if self.args.workload:
                code = self.run_workload()
            else:
                code = self.run_script()
        except UsageError as exc:
            log(f"error: {exc}")
            self.record["error"] = error_record(exc, self.phase)
            code = EXIT_USAGE
        except BaseException as exc:  # the workload failed: keep what was captured, say why
            log(f"error: the workload failed in phase '{self.phase}': {type(exc).__name__}: {exc}")
            traceback.print_exc(file=sys.stderr)
            self.record["error"] = error_record(exc, self.phase)
            code = EXIT_WORKLOAD_FAILED
        finally:
            self.teardown()
            self.record["wall_s"]["total"] = time.perf_counter() - started
            if self.args.pass_ == "timeline" and (self.tracer or self.trace_path.is_file()):
                # The tracer writes its log until the process exits: name it even though it is not final yet.
                self.record["artifacts"]["trace"] = os.path.relpath(self.trace_path, self.out)
            if code == EXIT_OK:
                self.record["status"] = "ok"
            elif code == EXIT_NEVER_OPENED:
                self.record["status"] = KIND_NEVER_OPENED
            else:
                self.record["status"] = "error"
            self.record["exit_code"] = code
            self.save()
        log(f"wrote {self.record_path} (status {self.record['status']})")
        return code

    def setup(self) -> None:
        args = self.args
        env = configure_environment(args, self.out)
        self.record["environment"] = {**env, "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES")}
        self.record["artifacts"].update({
            "inductor_debug_dir": os.path.relpath(env["TORCH_COMPILE_DEBUG_DIR"], self.out),
            "cache_dir": os.path.relpath(os.path.dirname(env["TORCHINDUCTOR_CACHE_DIR"]), self.out),
        })
        log("importing torch")
        t0 = time.perf_counter()
        import torch

        self.torch = torch
        self.record["wall_s"]["import_torch"] = time.perf_counter() - t0
        log(f"torch {torch.__version__} (CUDA {torch.version.cuda}) imported in {time.perf_counter() - t0:.1f} s")

        if args.pass_ == "counters":
            # Pass B calls no CUDA API before the workload's own first one: opprof may start it under
            # `ncu --mode launch`, which holds the process at that call until pass A is done, so that the
            # imports and the model's construction on the CPU overlap pass A (docs/dedup.md). Its device
            # is checked once the workload is imported (torch.cuda.is_available() asks NVML then, with
            # PYTORCH_NVML_BASED_CUDA_CHECK=1) and described once the model is built.
            self.device = "cuda"
            os.environ["OPPROF_DEVICE"] = self.device
        else:
            self.check_device()
            self.describe_device()

        uses_compile = (args.workload and args.compile == "inductor") or not args.workload
        if uses_compile:
            self.record["inductor_config_applied"] = apply_inductor_config(env["TORCH_COMPILE_DEBUG_DIR"],
                                                                           args.pass_ == "counters")
        if args.workload and args.compile == "inductor":
            # torch.compile() imports Inductor's compiler (2-3 s of Python) when it wraps the model; done here,
            # before the workload's first CUDA call, it overlaps pass A when pass B starts early.
            t0 = time.perf_counter()
            import torch._inductor.compile_fx  # noqa: F401

            log(f"Inductor imported in {time.perf_counter() - t0:.1f} s")

    def check_device(self) -> None:
        """The device the passes run on; pass B's must be CUDA."""
        args, torch = self.args, self.torch
        cuda_available = torch.cuda.is_available()
        if self.tracer:
            self.check_tracer_environment(cuda_available)
        if args.workload:
            self.device = args.device or ("cuda" if cuda_available else "cpu")
        else:
            self.device = "cuda" if cuda_available else "cpu"
        os.environ["OPPROF_DEVICE"] = self.device
        if self.device == "cuda" and not cuda_available:
            raise UsageError("--device cuda was asked for but torch.cuda.is_available() is False")
        if args.pass_ == "counters" and self.device != "cuda":
            raise UsageError("pass 'counters' brackets GPU kernels for ncu and needs a CUDA device "
                             f"(device here: {self.device})")

    def describe_device(self) -> None:
        """Versions and the device's facts in the record (CUDA calls on a GPU)."""
        from opprof.environment import device_info, versions

        self.record["versions"] = versions()
        self.record["device"] = device_info(self.device)
        if self.device == "cuda":
            d = self.record["device"]
            log(f"device: {d.get('name')} (cc {d.get('compute_capability')}, chip {d.get('chip') or '?'})")

    def check_tracer_environment(self, cuda_available: bool) -> None:
        """--backend tracer records nothing unless the process was started with the library injected."""
        missing = [name for name in ("CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH") if not os.environ.get(name)]
        if missing:
            raise UsageError(f"--backend tracer: {', '.join(missing)} not set; start this process with both pointing at "
                             "libopprof_tracer.so (opprof profile --backend tracer does)")
        if not cuda_available:
            raise UsageError("--backend tracer records CUDA activity and needs a CUDA device")
        self.record["tracer"] = {
            "library": os.environ["CUDA_INJECTION64_PATH"],
            "trace_file": str(self.trace_path),
            "window_only": os.environ.get(contract.ENV_TRACE_WINDOW, "0"),
        }

    def teardown(self) -> None:
        if self.root_watcher is not None:
            self.root_watcher.uninstall()
        if self.dedup_selection is not None:
            self.dedup_selection.uninstall()
            self.record["dedup_selection"] = self.dedup_selection.info()
        if self.hooks is not None:
            self.hooks.uninstall()
            if hasattr(self.hooks, "modules_wrapped"):
                self.record["module_ranges"] = {"method": self.hooks.method,
                                                "modules_wrapped": self.hooks.modules_wrapped,
                                                "roots": self.hooks.roots_seen}
            else:
                self.record["module_ranges"] = {"method": "global_hooks",
                                                "ranges_opened": self.hooks.ranges_opened,
                                                "roots": self.hooks.resolver.roots_seen}
        if self.fx_recorder is not None:
            self.fx_recorder.uninstall()
            debug_dir = Path(os.environ.get("TORCH_COMPILE_DEBUG_DIR", self.out / contract.INDUCTOR_DIR))
            output_code = sorted(os.path.relpath(p, self.out) for p in debug_dir.rglob("output_code.py")) \
                if debug_dir.is_dir() else []
            self.record["fx_map"] = {
                "file": FX_MODULES_FILENAME,
                "graphs": len(self.fx_recorder.graphs),
                "output_code_files": output_code,
                "errors": self.fx_recorder.errors,
            }
            self.record["artifacts"]["fx_modules"] = FX_MODULES_FILENAME
            compiled_workload = bool(self.args.workload) and self.args.compile == "inductor"
            if compiled_workload and not self.fx_recorder.graphs and self.record.get("error") is None:
                log("warning: nothing went through torch._inductor.compile_fx, so the FX module map is empty")
            elif self.fx_recorder.graphs and not output_code:
                log(f"warning: Inductor wrote no output_code.py under {debug_dir} (compile-cache hit?); "
                    "the engine cannot attribute the compiled kernels without it")
            else:
                log(f"FX module map: {len(self.fx_recorder.graphs)} graph(s); {len(output_code)} output_code.py file(s)")
        if self.structure is not None:
            self.write_structure()

    def write_structure(self) -> None:
        """opprof_structure.json: the structural classes the engine's dedup plan starts from."""
        self.structure.uninstall()
        if self.fx_recorder is not None:
            for graph in self.fx_recorder.graphs:
                self.structure.runtime_from_fx(graph.get("module_graphs", {}))
        try:
            self.structure.write(self.out)
        except Exception as exc:  # dedup then falls back; the capture itself stands
            log(f"warning: writing {contract.STRUCTURE_FILE} failed: {exc!r}")
            return
        classes = self.structure.classes()
        self.record["artifacts"]["structure"] = contract.STRUCTURE_FILE
        self.record["structure"] = {"runtime": self.structure.runtime_kind, "classes": len(classes),
                                    "instances": sum(len(c["instances"]) for c in classes)}
        log(f"structure: {len(classes)} repeated class(es), "
            f"{sum(len(c['instances']) for c in classes)} instances ({self.structure.runtime_kind})")

    def install_structure(self, model: Any) -> None:
        """Pass A: the model's structural classes; eager runs record each module's first inputs. Without
        a model (a script), the first module the script calls outside any other is taken as the model."""
        if self.args.pass_ != "timeline" or self.args.no_structure:
            return
        from opprof.structure import RootWatcher, StructureRecorder, is_compiled_module

        def adopt(root: Any, args: Any = (), compiled: bool | None = None) -> None:
            self.structure = StructureRecorder(root)
            if not (compiled if compiled is not None else is_compiled_module(root)):
                self.structure.install()
                self.structure.record_root_call(args)

        if model is None:
            self.root_watcher = RootWatcher(adopt).install()
        elif hasattr(model, "named_modules"):
            adopt(model, compiled=self.args.compile == "inductor")

    def install_dedup_selection(self, model: Any) -> None:
        """Pass B: the hooks that mark what the engine's dedup plan skips (OPPROF_DEDUP_PLAN); in a script,
        on the first module it calls outside any other."""
        plan = os.environ.get(contract.ENV_DEDUP_PLAN)
        if self.args.pass_ != "counters" or not plan:
            return
        from opprof.dedup_select import DedupSelection
        from opprof.structure import RootWatcher

        def adopt(root: Any, _args: Any = ()) -> None:
            self.dedup_selection = DedupSelection.from_file(plan, root).install()
            log(f"dedup: {self.dedup_selection.describe()}")

        if model is None:
            self.root_watcher = RootWatcher(adopt).install()
        else:
            adopt(model)

    def install_fx_recorder(self, known_paths: list[str] | None) -> None:
        if self.args.pass_ != "timeline" or self.args.no_fx_map:
            return
        from opprof.fx_modules import FxModuleRecorder

        log("installing the FX module-map recorder (imports Inductor)")
        self.fx_recorder = FxModuleRecorder(self.out / FX_MODULES_FILENAME, known_paths,
                                            debug_root=os.environ.get("TORCH_COMPILE_DEBUG_DIR"))
        self.fx_recorder.install()

    def install_module_ranges(self, root: Any) -> None:
        if self.args.pass_ != "timeline" or self.args.no_module_ranges:
            return
        from opprof.hooks import ModuleForwardRanges, ModuleRangeHooks, NvtxEmitter

        if self.tracer and root is not None:
            # A known root under the tracer: sys.monitoring on Module._call_impl where the extension loads
            # (no Python frame per module call), else forward wrappers; both far cheaper than global hooks.
            from opprof.call_ranges import module_ranges_for

            self.hooks, fallback_reason = module_ranges_for(root)
            try:
                self.hooks.install()
            except RuntimeError as exc:  # every sys.monitoring tool id taken, or another watch active
                fallback_reason = str(exc)
                self.hooks = ModuleForwardRanges(root).install()
            log(f"module ranges: {self.hooks.method}, {self.hooks.modules_wrapped} modules"
                + (f" (opprof_call_ranges: {fallback_reason})" if fallback_reason else ""))
            return
        emitter = NvtxEmitter() if self.tracer else None
        self.hooks = ModuleRangeHooks(root, emitter).install()

    def window_backend(self) -> Any:
        from opprof.window import Backend, CudaProfilerBackend, TorchProfilerBackend, TracerBackend

        if self.tracer:
            return TracerBackend()
        if self.args.pass_ == "timeline":
            return TorchProfilerBackend(str(self.trace_path), with_cuda=self.torch.cuda.is_available())
        if not counters_window_wanted():
            log(f"cross-rank dedup: rank {launcher_rank()} runs without ncu's "
                f"window ({contract.ENV_COUNTERS_RANKS}={os.environ.get(contract.ENV_COUNTERS_RANKS)}); it takes the "
                "representative rank's counters")
            return Backend()
        return CudaProfilerBackend()

    def discard_stale_trace(self) -> None:
        # Only pass A writes the trace. Pass B shares the capture directory and must leave pass A's
        # trace alone: it is the timeline its counters get attributed to.
        # The tracer's log is already open for writing (by this process's injected library): keep it.
        if self.args.pass_ == "timeline" and not self.tracer and self.trace_path.exists():
            self.trace_path.unlink()

    # -- workload modules ---------------------------------------------------------------------------
    def run_workload(self) -> int:
        args, torch = self.args, self.torch
        from opprof.window import CaptureWindow

        self.discard_stale_trace()
        path = Path(args.workload).resolve()
        log(f"loading workload {path} on {self.device}")
        t0 = time.perf_counter()
        module = load_workload(path)
        if args.pass_ == "counters":
            self.check_device()
        model, inputs = call_get_model_and_input(module, self.device)
        if args.pass_ == "counters":
            self.describe_device()
        self.record["wall_s"]["setup"] = time.perf_counter() - t0
        log(f"model {type(model).__name__} ready in {time.perf_counter() - t0:.1f} s")

        known_paths = [name for name, _ in model.named_modules()] if hasattr(model, "named_modules") else None
        self.install_structure(model)
        self.install_dedup_selection(model)
        runner = model
        if args.compile == "inductor":
            self.install_fx_recorder(known_paths)
            runner = torch.compile(model, mode=args.compile_mode) if args.compile_mode else torch.compile(model)
        else:
            self.install_module_ranges(model if hasattr(model, "named_modules") else None)

        backend = self.window_backend()
        window = CaptureWindow(backend, self.sync)
        whole = args.window == "whole"
        self.record["window"] = KIND_WHOLE_RUN if whole else KIND_WORKLOAD

        def step() -> None:
            if args.train:
                if hasattr(model, "zero_grad"):
                    model.zero_grad(set_to_none=True)  # every iteration the same kernels, none accumulating
                backward_target(call_model(runner, inputs)).backward()
            else:
                call_model(runner, inputs)

        grad_mode = contextlib.nullcontext() if args.train else torch.no_grad()
        try:
            with grad_mode:
                self.sample_clock("before_warmup")
                if whole:
                    window.open("opprof (whole run)")
                self.phase = "warmup"
                t0 = time.perf_counter()
                # Tracer + compile: CUDA graphs (mode="reduce-overhead") are captured during warm-up, and a
                # replayed kernel leads back to the NVTX ranges open at its capture; operator ranges must be
                # on then.
                if self.tracer and args.compile == "inductor":
                    from opprof.op_ranges import OperatorRanges

                    warmup_ranges = OperatorRanges()
                else:
                    warmup_ranges = contextlib.nullcontext()
                with warmup_ranges:
                    for i in range(args.warmup):
                        t_iter = time.perf_counter()
                        step()
                        self.sync()
                        log(f"warm-up {i + 1}/{args.warmup}: {time.perf_counter() - t_iter:.2f} s")
                self.record["wall_s"]["warmup"] = time.perf_counter() - t0

                self.phase = "measured"
                if not whole:
                    log(f"opening the window ({backend.name})")
                    window.open("opprof")
                t0 = time.perf_counter()
                for _ in range(args.iters):
                    step()
                self.sync()
                self.record["wall_s"]["measured"] = time.perf_counter() - t0
                self.sample_clock("after_measured")
                log(f"{args.iters} measured iteration(s): {self.record['wall_s']['measured'] * 1e3:.1f} ms "
                    f"(including {'profiler' if args.pass_ == 'timeline' else 'ncu'} overhead)")
                self.phase = "closing"
                window.close("opprof")
        finally:
            if window.is_open:  # the workload raised inside the window: keep what was recorded
                self._close_after_error(window)
            self.record["window_info"] = window.info()
        return EXIT_OK

    def _close_after_error(self, window: Any) -> None:
        log("closing the window after the error (exporting what was recorded)")
        try:
            window.close("error")
        except Exception as exc:
            log(f"closing the window failed too: {exc!r}")
            self.record["window_close_error"] = repr(exc)

    # -- scripts ------------------------------------------------------------------------------------
    def run_script(self) -> int:
        args, torch = self.args, self.torch
        from opprof.window import (
            Backend,
            ScriptWindowPolicy,
            TorchProfilerBackend,
            cuda_success_code,
            patch_cuda_profiler_api,
            real_cudart,
        )

        script = Path(self.script_argv[0]).resolve()
        if not script.is_file():
            raise UsageError(f"script not found: {script}")
        self.discard_stale_trace()

        timeline = args.pass_ == "timeline"
        if timeline:
            backend_factory = self.window_backend
            # The tracer records from the start anyway (its window is the cudaProfilerStart/Stop it logs);
            # only torch.profiler needs a preliminary whole-run window.
            prelim_factory = (lambda: TorchProfilerBackend(str(self.trace_path), torch.cuda.is_available())) \
                if args.window == "auto" and not self.tracer else None
        else:
            # Pass B with --window whole: ncu records from the start; the script's calls must not
            # stop it, so they are ignored and the window is a no-op.
            backend_factory = Backend if args.window == "whole" else self.window_backend
            prelim_factory = None
        policy = ScriptWindowPolicy(args.window, backend_factory, prelim_factory, self.sync)

        def on_start() -> Any:
            policy.on_script_start()
            return cuda_success_code(real_cudart)

        def on_stop() -> Any:
            policy.on_script_stop()
            return cuda_success_code(real_cudart)

        self.install_fx_recorder(None)
        self.install_module_ranges(None)
        self.install_structure(None)
        self.install_dedup_selection(None)
        undo_patch = patch_cuda_profiler_api(on_start, on_stop)
        saved_argv, saved_path0 = list(sys.argv), list(sys.path)
        sys.argv = [str(script), *self.script_argv[1:]]
        sys.path.insert(0, str(script.parent))
        failure: BaseException | None = None
        t0 = time.perf_counter()
        self.phase = "script"
        try:
            policy.begin()
            log(f"running {script} {' '.join(self.script_argv[1:])}")
            try:
                runpy.run_path(str(script), run_name="__main__")
            except SystemExit as exc:
                if exc.code not in (None, 0):
                    failure = exc
            except BaseException as exc:
                failure = exc
        finally:
            self.record["wall_s"]["script"] = time.perf_counter() - t0
            self.phase = "closing"
            try:
                kind = policy.finish("error" if failure is not None else "exit")
            finally:
                undo_patch()
                sys.argv, sys.path[:] = saved_argv, saved_path0
            self.record["window"] = kind
            self.record["window_info"] = policy.info()
            window = policy.window or policy.prelim
            if window is not None and window.open_time is not None and window.close_time is not None:
                self.record["wall_s"]["window"] = window.close_time - window.open_time
        if args.pass_ == "counters":
            # Only now: the script's first CUDA call, not the runner's, is where `ncu --mode launch` holds
            # pass B (setup).
            self.check_device()
            self.describe_device()
        if failure is not None:
            self.phase = "script"
            if isinstance(failure, SystemExit):
                # Reported as a workload failure (exit 1) whatever the script's own status, so that
                # opprof's exit statuses keep one meaning; the script's status is in the record.
                log(f"error: the script exited with status {failure.code}")
                self.record["error"] = error_record(failure, "script")
                self.record["error"]["script_exit_status"] = failure.code
                return EXIT_WORKLOAD_FAILED
            raise failure
        if kind == KIND_NEVER_OPENED:
            log("error: the script never opened a profiler window (torch.cuda.profiler.start() / "
                "cudaProfilerStart) and --window script requires one; nothing was captured")
            self.record["error"] = {"type": "WindowNeverOpened", "phase": "script", "traceback": "",
                                    "message": "the script never called torch.cuda.profiler.start()"}
            return EXIT_NEVER_OPENED
        if kind == KIND_WHOLE_RUN and not timeline and args.window == "auto":
            log("note: the script opened no profiler window; ncu must run with --profile-from-start on")
        return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    options, script_argv = split_script_argv(argv)
    parser = build_parser()
    args = parser.parse_args(options)
    if bool(args.workload) == bool(script_argv):
        parser.error("give either --workload FILE or a script after '--' (exactly one)")
    if args.warmup < 0 or args.iters < 1:
        parser.error("--warmup must be >= 0 and --iters >= 1")
    target = args.workload or script_argv[0]
    if not Path(target).is_file():  # before the slow torch import
        parser.error(f"{'workload' if args.workload else 'script'} file not found: {target}")
    if args.pass_ == "counters":
        keep_stdout_clean()
    out = Path(args.out).resolve()
    if per_process():
        out = out / process_dir_name()
    out.mkdir(parents=True, exist_ok=True)
    log(f"pass {args.pass_} -> {out}")
    # Registered before torch's, so it runs after them: what the exit costs past this line is the CUDA and ncu
    # libraries' teardown (docs/dedup.md times the parts of pass B from these lines).
    atexit.register(log, "exit: the atexit handlers are done")
    code = Capture(args, script_argv, out, argv).run()
    if args.workload:
        # Everything is written. The interpreter's last garbage collection at exit walks every object torch,
        # Inductor and the model made (1.5 s of a compiled model's exit, measured): frozen, they are skipped.
        # atexit handlers and the CUDA and ncu libraries' exit still run. A script's objects may want their
        # finalizers, so only a workload module's runner does this.
        gc.freeze()
    log(f"exit {code}: the files are written")
    return code


if __name__ == "__main__":
    sys.exit(main())
