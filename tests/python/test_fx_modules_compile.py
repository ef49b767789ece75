"""The FX module map for a model compiled with Inductor on the CPU (one compile for the whole file).

Checks that the map's node names cover the pre-grad names of Inductor's provenance JSON (the names the
engine joins on), that paths and types come out as named_modules() spells them, and that module-range
hooks left installed during compilation neither break the graph nor leak ranges into it.
"""

import importlib.util
import json
import re
from pathlib import Path

import pytest
import torch

from conftest import EXAMPLES_DIR
from opprof import FX_MODULES_FILENAME
from opprof.fx_modules import FxModuleRecorder
from opprof.hooks import ModuleRangeHooks

pytestmark = [
    pytest.mark.slow,
    # Expected here: the hooks stay installed while torch.compile wraps the model, as in a profiled script.
    pytest.mark.filterwarnings("ignore:Using `torch.compile\\(module\\)` when there are global hooks:UserWarning"),
]


def load_example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inductor_debug_patches(debug_root):
    """Config equivalent of TORCH_COMPILE_DEBUG=1 for a process where torch is already imported, with
    the FX graph cache off so that this compile really runs and writes its debug files."""
    import torch._inductor.config as inductor_config

    patches = {"trace.enabled": True, "fx_graph_cache": False}
    if hasattr(inductor_config.trace, "provenance_tracking_level"):
        patches["trace.provenance_tracking_level"] = 1
    elif hasattr(inductor_config.trace, "provenance_tracking"):
        patches["trace.provenance_tracking"] = True
    if hasattr(inductor_config, "autograd_cache"):
        patches["autograd_cache"] = False
    return inductor_config.patch(patches)


@pytest.fixture(scope="module")
def compiled_mlp(tmp_path_factory):
    import torch._dynamo
    import torch._dynamo.config as dynamo_config

    out = tmp_path_factory.mktemp("fxmap")
    debug_root = out / "inductor"
    mlp = load_example("mlp")
    model, x = mlp.get_model_and_input("cpu")
    known_paths = [name for name, _ in model.named_modules()]
    torch._dynamo.reset()
    hooks = ModuleRangeHooks()
    try:
        with inductor_debug_patches(debug_root), dynamo_config.patch(debug_dir_root=str(debug_root / "torch_compile_debug")):
            with hooks, FxModuleRecorder(out, known_paths, debug_root=debug_root) as recorder, torch.no_grad():
                compiled = torch.compile(model)
                y_compiled = compiled(x)
                ranges_for_compiled_call = hooks.ranges_opened
                y_eager = model(x)
    finally:
        torch._dynamo.reset()
    return {
        "out": out,
        "recorder": recorder,
        "map": json.loads((out / FX_MODULES_FILENAME).read_text()),
        "close": torch.allclose(y_compiled, y_eager, atol=1e-4, rtol=1e-4),
        "ranges_for_compiled_call": ranges_for_compiled_call,
    }


def test_one_graph_with_compile_id(compiled_mlp):
    fx_map = compiled_mlp["map"]
    assert fx_map["version"] == 1
    assert len(fx_map["graphs"]) == 1, "the installed hooks must not split the graph"
    assert re.fullmatch(r"\d+/\d+", fx_map["graphs"][0]["compile_id"])
    assert compiled_mlp["recorder"].errors == []


def test_compiled_result_and_hooks(compiled_mlp):
    assert compiled_mlp["close"]
    # The compiled call emits one range, for the torch.compile wrapper; none from inside the graph.
    assert compiled_mlp["ranges_for_compiled_call"] == 1


def test_nodes_carry_module_paths_types_and_sources(compiled_mlp):
    nodes = compiled_mlp["map"]["graphs"][0]["nodes"]
    by_module = {}
    for name, info in nodes.items():
        by_module.setdefault(info["module"], []).append((name, info))
    for index in range(3):
        (fc_name, fc), = by_module[f"blocks.{index}.fc"]
        assert fc["module_type"] == "Linear"
        assert re.fullmatch(r"mlp\.py:\d+", fc["source"]), fc
        assert by_module[f"blocks.{index}.act"][0][1]["module_type"] == "GELU"
        assert by_module[f"blocks.{index}.norm"][0][1]["module_type"] == "LayerNorm"
    assert by_module["head"][0][1]["module_type"] == "Linear"


def test_node_names_cover_the_provenance_pre_grad_names(compiled_mlp):
    graph = compiled_mlp["map"]["graphs"][0]
    assert graph["inductor_debug_dirs"], "the compile's Inductor debug directory was not recorded"
    debug_dir = compiled_mlp["out"] / graph["inductor_debug_dirs"][0]
    assert (debug_dir / "output_code.py").is_file()
    provenance = debug_dir / "inductor_provenance_tracking_node_mappings.json"
    if not provenance.is_file():
        pytest.skip(f"this torch ({torch.__version__}) wrote no provenance JSON")
    pre_grad = set(json.loads(provenance.read_text())["preToPost"])
    assert pre_grad, "empty preToPost"
    missing = pre_grad - set(graph["nodes"])
    assert not missing, f"pre-grad names missing from the FX map: {sorted(missing)}"
    # The same names head the kernels' "Topologically Sorted Source Nodes" comments in output_code.py.
    code = (debug_dir / "output_code.py").read_text()
    for listed in re.findall(r"Topologically Sorted Source Nodes: \[([^\]]*)\]", code):
        for name in (n.strip() for n in listed.split(",") if n.strip()):
            assert name in graph["nodes"], name
