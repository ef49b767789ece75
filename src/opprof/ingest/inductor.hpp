#pragma once
// Reader for what Inductor leaves behind about a compiled graph, and for the FX-node module map that
// opprof's in-process hook records:
//   <graph dir>/inductor_provenance_tracking_node_mappings.json  kernel handle -> post-grad -> pre-grad nodes
//   <graph dir>/output_code.py       the wrapper's calls in launch order, each with its provenance handle,
//                                    "Topologically Sorted Source Nodes" and "Original ATen" comments
//                                    (the fallback for torch versions without the provenance JSON)
//   <graph dir>/fx_graph_transformed.py  post-grad node -> ATen op target and user source line
//                                    (fx_graph_readable.py when the transformed graph is absent)
//   <graph dir>/debug.log, info.log  (optional) the FX graph cache key, see InductorGraph::graph_hash
//   opprof_fx_modules.json           pre-grad node -> module path (written by python/opprof)
// docs/formats.md describes what is taken from each file.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace opprof {

// One call in the compiled graph's wrapper (output_code.py's call()), in the order it runs.
struct WrapperCall {
  enum class Kind : std::uint8_t {
    // A kernel Inductor generated: triton_xxx.run(...) launches the Triton kernel named callee; on a CPU
    // compile, cpp_fused_xxx(...) runs the C++ kernel named callee (no GPU launch).
    kTriton = 0,
    kExtern = 1,  // extern_kernels.mm(...) or torch.ops.aten.x.default(...): a library op; callee "aten::mm"
  };
  Kind kind = Kind::kTriton;
  std::string callee;   // Triton kernel name, or the ATen operator as torch.profiler names it ("aten::mm")
  std::string handle;   // provenance handle "name:N", empty when output_code.py has none
  std::vector<std::string> source_nodes;  // pre-grad FX nodes ("Topologically Sorted Source Nodes")
  std::vector<std::string> aten_ops;      // "Original ATen" ("aten.addmm")
  std::uint32_t line = 0;                 // line in output_code.py
};

struct InductorGraph {
  std::string dir;                       // the graph's debug directory
  std::string graph_hash;                // CompiledFxGraph hash when known (matches "## Call CompiledFxGraph <hash> ##")
  std::string aot_id;                    // output_code.py's "# AOT ID: ['0_forward']" -> "0_forward"; empty if absent
  std::vector<WrapperCall> calls;        // from output_code.py
  // From the provenance JSON (empty when absent):
  std::map<std::string, std::vector<std::string>> handle_to_post_nodes;  // "triton_..._0:1" -> post-grad nodes
  std::map<std::string, std::vector<std::string>> post_to_pre_nodes;     // post-grad node -> pre-grad nodes
  // From fx_graph_transformed.py (post-grad graph) or fx_graph_readable.py:
  std::map<std::string, std::string> post_node_target;  // post-grad node -> "aten.addmm"
  std::map<std::string, std::string> post_node_source;  // post-grad node -> "modeling_gpt2.py:569 in forward"
  bool has_provenance_json = false;
};

// opprof_fx_modules.json, written by python/opprof's hook from each pre-grad graph Dynamo hands to Inductor
// (node.meta["nn_module_stack"], innermost entry):
//   {"version": 1,
//    "graphs": [{"compile_id": "0/0",
//                "nodes": {"<pre-grad node name>": {"module": "transformer.h.3.attn",
//                                                   "module_type": "GPT2Attention",
//                                                   "source": "modeling_gpt2.py:273"}}}]}
// "version" must be 1. Per graph, "compile_id" (string) and "nodes" (object) are required. Per node,
// "module" (string; "" for a node of the root module) is required, "module_type" and "source" are optional
// strings (empty when absent). Keys not named here are ignored, so later writers can add fields.
struct FxNodeModule {
  std::string module_path;  // "transformer.h.3.attn.c_attn"
  std::string module_type;  // "Conv1D"
  std::string source;       // "modeling_gpt2.py:569"
};

// Pre-grad FX node -> module, for one graph that Dynamo handed to Inductor.
struct FxModuleMap {
  std::string compile_id;  // "0/0", as in "Torch-Compiled Region: 0/0"
  std::map<std::string, FxNodeModule> nodes;
};

struct InductorArtifacts {
  std::vector<InductorGraph> graphs;
  std::vector<FxModuleMap> module_maps;  // empty when opprof_fx_modules.json is absent
};

// Reads a directory holding one graph's files, or any tree of such directories (TORCH_COMPILE_DEBUG_DIR,
// opprof's capture directory), plus opprof_fx_modules.json wherever it lies in that tree (or, when the
// tree has none, beside the directory: <capture>/opprof_fx_modules.json next to <capture>/inductor).
// Throws InputError on a missing directory, a directory with no graph in it, or malformed files.
InductorArtifacts read_inductor_artifacts(const std::string& path);

}  // namespace opprof
