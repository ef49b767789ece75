"""The FX module map: which nn.Module each node of a compiled graph came from.

Inductor's provenance JSON maps kernels to post-grad and pre-grad FX node names, and output_code.py
names the pre-grad nodes of each kernel, but neither knows module paths: those live only in the
pre-grad graph's node.meta["nn_module_stack"] inside the compiling process. This module records them
by wrapping torch._inductor.compile_fx.compile_fx (the "inductor" backend and torch.compile's
Inductor wrapper import it at call time, so user scripts that call torch.compile themselves go through
the wrapper too) and writes, in the capture directory, opprof_fx_modules.json:

  {"version": 1,
   "graphs": [{"compile_id": "0/0",
               "inductor_debug_dirs": ["inductor/torch_compile_debug/run_.../torchinductor/model__0_inference_0.0"],
               "nodes": {"<pre-grad node name>": {"module": "transformer.h.3.attn",
                                                   "module_type": "GPT2Attention",
                                                   "source": "modeling_gpt2.py:273"}},
               "module_graphs": {"transformer.h.3": "<digest of the module's nodes>"}}]}

"module" is the innermost module's dotted path as root.named_modules() spells it ("" for the compiled
root itself or for a node outside any module), "source" the last frame of node.meta["stack_trace"] as
"file_basename:line" ("" when Dynamo recorded no stack, e.g. for torch-internal code).
"module_graphs" gives, per module on any node's nn_module_stack, a digest of the module's nodes (target, output
shape and dtype, in graph order): the runtime part of the module's structural signature (opprof.structure).
"inductor_debug_dirs" are the Inductor debug directories (TORCH_COMPILE_DEBUG) created while that graph
compiled, relative to the map's directory when inside it; a backward graph compiled later, at the first
backward call, is not listed there.

The file is rewritten atomically (temp file + os.replace) after every graph, so a reader never sees a
half-written file and a crash keeps every graph compiled so far.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
from pathlib import Path
from typing import Any, Iterable

from opprof import FX_MODULES_FILENAME
from opprof.files import write_json_atomic

FX_MODULES_VERSION = 1

# The root of a Dynamo source path: L['self'], G['model'], L["fn"], or a bare "self" (older releases).
_ROOT_RE = re.compile(r"""^(?:[LG]\[(?P<q>['"])(?P<name>.*?)(?P=q)\]|self(?=$|[.\[]))""")
# One step of an attribute/index path: .name, .0, [3], ['key'], ["key"].
_STEP_RE = re.compile(r"""\.(?P<attr>[A-Za-z0-9_]+)|\[(?P<index>-?\d+)\]|\[(?P<q>['"])(?P<key>.*?)(?P=q)\]""")
# getattr(X, 'name') as Dynamo writes attributes that are not identifiers.
_GETATTR_RE = re.compile(r"""getattr\((?P<obj>[^()]*),\s*(?P<q>['"])(?P<name>[^'"]*)(?P=q)\)""")
# Mangled form used as nn_module_stack keys by older releases: L__self___transformer_h_3_attn.
_MANGLED_RE = re.compile(r"^(?P<scope>[LG])__(?P<root>[A-Za-z0-9]+(?:_[A-Za-z0-9]+)*?)__(?:_(?P<rest>.*))?$")
_FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)')


def _flatten_for_match(path: str) -> str:
    """Every run of non-alphanumerics to one "_": how a mangled name and a dotted path compare."""
    return re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_")


def normalize_module_path(raw: str, known_paths: Iterable[str] | None = None) -> str:
    """Dynamo's spelling of a module path -> the named_modules() dotted path.

    "L['self'].transformer.h[3].attn", "L['self'].transformer.h.3.attn",
    "L['self']._modules['transformer']...", "self.transformer.h.3.attn" -> "transformer.h.3.attn";
    the root alone ("L['self']") -> "". The mangled key style "L__self___transformer_h_3_attn" cannot be
    split back into names in general ("c_attn" vs "c.attn"), so it is resolved against `known_paths`
    (the root's named_modules() names) when given; without a match it is returned flattened
    ("transformer_h_3_attn"), visibly not a dotted path, rather than guessed.
    """
    text = raw.strip()
    mangled = _MANGLED_RE.match(text)
    if mangled and "." not in text and "[" not in text:
        rest = mangled.group("rest") or ""
        if not rest:
            return ""
        if known_paths is not None:
            wanted = _flatten_for_match(rest)
            for candidate in known_paths:
                if candidate and _flatten_for_match(candidate) == wanted:
                    return candidate
        return rest

    while True:  # getattr(getattr(L['self'].h, '0'), 'attn') -> L['self'].h.0.attn, innermost first
        rewritten = _GETATTR_RE.sub(lambda m: f"{m.group('obj')}['{m.group('name')}']", text)
        if rewritten == text:
            break
        text = rewritten

    root = _ROOT_RE.match(text)
    rest = text[root.end():] if root else "." + text
    steps: list[str] = []
    position = 0
    while position < len(rest):
        step = _STEP_RE.match(rest, position)
        if step is None:
            return raw.strip()  # a spelling this parser does not know: keep it verbatim, never guess
        position = step.end()
        if step.group("attr") is not None:
            steps.append(step.group("attr"))
        elif step.group("index") is not None:
            steps.append(step.group("index"))
        else:
            key = step.group("key")
            if steps and steps[-1] in ("_modules", "_parameters", "_buffers"):
                steps.pop()  # ._modules['h'] is the attribute h
            steps.append(key)
    return ".".join(steps)


def _type_name(module_type: Any) -> str:
    if isinstance(module_type, type):
        return module_type.__name__
    text = str(module_type)
    quoted = re.search(r"'([^']+)'", text)  # "<class 'transformers...GPT2Attention'>"
    if quoted:
        text = quoted.group(1)
    return text.rsplit(".", 1)[-1]


def innermost_module(nn_module_stack: Any, known_paths: Iterable[str] | None = None) -> tuple[str, str] | None:
    """(path, type name) of the innermost module in a node's nn_module_stack, or None when it is empty.

    The stack is an ordered dict, outermost first; values are (path, type). Keys differ across releases
    (module ids, or mangled paths in older ones); a key is used only when the value has no usable path.
    """
    if not nn_module_stack:
        return None
    items = list(nn_module_stack.items()) if hasattr(nn_module_stack, "items") else list(nn_module_stack)
    key, value = items[-1]
    if isinstance(value, (tuple, list)) and value:
        raw_path, module_type = value[0], (value[1] if len(value) > 1 else "")
    else:
        raw_path, module_type = value, ""
    if not isinstance(raw_path, str) or not raw_path:
        raw_path = str(key)
    return normalize_module_path(raw_path, known_paths), _type_name(module_type) if module_type else ""


def source_location(stack_trace: str | None) -> str:
    """The last frame of a node's stack_trace as "file_basename:line", "" without one."""
    if not stack_trace:
        return ""
    frames = _FRAME_RE.findall(stack_trace)
    if not frames:
        return ""
    file, line = frames[-1]
    return f"{os.path.basename(file)}:{line}"


def graph_node_map(graph_module: Any, known_paths: Iterable[str] | None = None) -> dict[str, dict[str, str]]:
    """{node name: {"module", "module_type", "source"}} for every computing node of an FX graph."""
    known = list(known_paths) if known_paths is not None else None
    nodes: dict[str, dict[str, str]] = {}
    for node in graph_module.graph.nodes:
        if node.op in ("placeholder", "output"):
            continue
        innermost = innermost_module(node.meta.get("nn_module_stack"), known)
        module, module_type = innermost if innermost else ("", "")
        nodes[node.name] = {
            "module": module,
            "module_type": module_type,
            "source": source_location(node.meta.get("stack_trace")),
        }
    return nodes


def current_compile_id() -> str:
    try:
        from torch._guards import CompileContext

        compile_id = CompileContext.current_compile_id()
    except Exception:
        return ""
    return "" if compile_id is None else str(compile_id)


def _debug_dirs(debug_root: Path | None) -> set[str]:
    """Inductor debug directories (those holding one graph's files) under the debug root."""
    if debug_root is None or not debug_root.is_dir():
        return set()
    found = set()
    for dirpath, dirnames, _ in os.walk(debug_root):
        if os.path.basename(os.path.dirname(dirpath)) in ("torchinductor", "aot_torchinductor"):
            found.add(dirpath)
            dirnames.clear()
    return found


class FxModuleRecorder:
    """Wraps compile_fx and writes the FX module map; install()/uninstall() or a context manager."""

    def __init__(
        self,
        out_path: str | os.PathLike,
        known_paths: Iterable[str] | None = None,
        debug_root: str | os.PathLike | None = None,
    ):
        self.out_path = Path(out_path)
        if self.out_path.is_dir():
            self.out_path = self.out_path / FX_MODULES_FILENAME
        self.known_paths = list(known_paths) if known_paths is not None else None
        if debug_root is None and os.environ.get("TORCH_COMPILE_DEBUG_DIR"):
            debug_root = os.environ["TORCH_COMPILE_DEBUG_DIR"]
        self.debug_root = Path(debug_root) if debug_root else None
        self.graphs: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._depth = threading.local()
        self._original: Any = None
        self._wrapper: Any = None
        self.errors: list[str] = []

    def record(self, graph_module: Any, compile_id: str | None = None) -> dict[str, Any]:
        from opprof.structure import fx_module_graph_signatures

        entry = {
            "compile_id": compile_id if compile_id is not None else current_compile_id(),
            "inductor_debug_dirs": [],
            "nodes": graph_node_map(graph_module, self.known_paths),
            # Per module path, a digest of its nodes (targets, shapes): the runtime part of its structural
            # signature (opprof.structure).
            "module_graphs": fx_module_graph_signatures(graph_module, self.known_paths),
        }
        with self._lock:
            self.graphs.append(entry)
            self.write()
        return entry

    def write(self) -> None:
        write_json_atomic(self.out_path, {"version": FX_MODULES_VERSION, "graphs": self.graphs})

    def _relative(self, path: str) -> str:
        try:
            return os.path.relpath(path, self.out_path.parent) if Path(path).is_relative_to(self.out_path.parent) else path
        except (ValueError, AttributeError):
            return path

    def _wrap(self, original: Any) -> Any:
        recorder = self

        @functools.wraps(original)
        def compile_fx_recording_modules(model_: Any, example_inputs_: Any, *args: Any, **kwargs: Any) -> Any:
            depth = getattr(recorder._depth, "value", 0)
            entry = None
            dirs_before: set[str] = set()
            # compile_fx calls itself (config patches, cpp wrapper) through the module global we
            # replaced: record only at the outermost call, which sees the graph Dynamo produced.
            if depth == 0 and hasattr(model_, "graph"):
                try:
                    dirs_before = _debug_dirs(recorder.debug_root)
                    entry = recorder.record(model_)
                except Exception as exc:  # a map problem must never break the user's compile
                    recorder.errors.append(repr(exc))
                    print(f"opprof: recording the FX module map failed: {exc!r}", file=sys.stderr)
            recorder._depth.value = depth + 1
            try:
                return original(model_, example_inputs_, *args, **kwargs)
            finally:
                recorder._depth.value = depth
                if entry is not None:
                    try:
                        new_dirs = sorted(_debug_dirs(recorder.debug_root) - dirs_before)
                        if new_dirs:
                            with recorder._lock:
                                entry["inductor_debug_dirs"] = [recorder._relative(d) for d in new_dirs]
                                recorder.write()
                    except Exception as exc:
                        recorder.errors.append(repr(exc))

        compile_fx_recording_modules.__opprof_original__ = original  # type: ignore[attr-defined]
        return compile_fx_recording_modules

    def install(self) -> "FxModuleRecorder":
        import torch._inductor.compile_fx as compile_fx_module

        if self._wrapper is not None:
            return self
        current = compile_fx_module.compile_fx
        if getattr(current, "__opprof_original__", None) is not None:
            raise RuntimeError("an opprof FX module recorder is already installed")
        self._original = current
        self._wrapper = self._wrap(current)
        compile_fx_module.compile_fx = self._wrapper
        self.write()  # an empty map from the start: "nothing compiled" is then visible as such
        return self

    def uninstall(self) -> None:
        if self._wrapper is None:
            return
        import torch._inductor.compile_fx as compile_fx_module

        if compile_fx_module.compile_fx is self._wrapper:
            compile_fx_module.compile_fx = self._original
        self._wrapper = None
        self._original = None

    def __enter__(self) -> "FxModuleRecorder":
        return self.install()

    def __exit__(self, *exc: Any) -> None:
        self.uninstall()
