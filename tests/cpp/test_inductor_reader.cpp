#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "opprof/ingest/inductor.hpp"
#include "opprof/ingest/python_lines.hpp"
#include "opprof/util/error.hpp"

using namespace opprof;
namespace fs = std::filesystem;

namespace {

// Real Inductor debug directories from torch 2.11 on an H200: GPT-2 small inference and a 4-layer MLP
// forward (see tests/fixtures/inductor/README.md).
const fs::path kFixtures = fs::path(OPPROF_FIXTURES_DIR) / "inductor";
const fs::path kGpt2Dir = kFixtures / "gpt2";
const fs::path kMlpDir = kFixtures / "mlp";

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "opprof_inductor_XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

void write_text(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << file;
}

void copy_dir(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive);
}

// By value: callers pass the reader's result straight in, a temporary gone by the end of the statement.
InductorGraph only_graph(InductorArtifacts a) {
  if (a.graphs.size() != 1) throw std::runtime_error("expected one graph, got " + std::to_string(a.graphs.size()));
  return std::move(a.graphs.front());
}

// The message of the InputError that fn throws, or "" when it throws none.
template <typename Fn>
std::string input_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

std::vector<std::string> V(std::initializer_list<const char*> items) { return {items.begin(), items.end()}; }

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// GPT-2 (real capture)

TEST(InductorReader, Gpt2WrapperCallsComeInLaunchOrder) {
  const InductorGraph g = only_graph(read_inductor_artifacts(kGpt2Dir.string()));
  ASSERT_EQ(g.calls.size(), 133u);

  std::map<std::string, int> by_callee;
  int triton = 0;
  for (std::size_t i = 0; i < g.calls.size(); ++i) {
    const WrapperCall& c = g.calls[i];
    if (c.kind == WrapperCall::Kind::kTriton) {
      ++triton;
      EXPECT_EQ(c.callee.rfind("triton_", 0), 0u) << c.callee;
    } else {
      ++by_callee[c.callee];
    }
    // Inductor numbers the handles in the order it emits the calls: 1..133 here.
    std::string suffix = ":" + std::to_string(i + 1);
    ASSERT_GE(c.handle.size(), suffix.size()) << i;
    EXPECT_EQ(c.handle.substr(c.handle.size() - suffix.size()), suffix) << i << " " << c.handle;
    if (i > 0) {
      EXPECT_GT(c.line, g.calls[i - 1].line);
    }
  }
  EXPECT_EQ(triton, 73);
  EXPECT_EQ(by_callee["aten::mm"], 36);
  EXPECT_EQ(by_callee["aten::addmm"], 12);
  EXPECT_EQ(by_callee["aten::_scaled_dot_product_efficient_attention"], 12);
  EXPECT_EQ(by_callee.size(), 3u);

  EXPECT_EQ(g.calls[0].kind, WrapperCall::Kind::kTriton);
  EXPECT_EQ(g.calls[0].callee, "triton_red_fused_add_arange_embedding_native_layer_norm_unsqueeze_0");
  EXPECT_EQ(g.calls[0].handle, "triton_red_fused_add_arange_embedding_native_layer_norm_unsqueeze_0:1");
  EXPECT_EQ(g.calls[0].line, 970u);
  EXPECT_EQ(g.calls[1].kind, WrapperCall::Kind::kExtern);
  EXPECT_EQ(g.calls[1].callee, "aten::addmm");
  EXPECT_EQ(g.calls[1].handle, "extern_kernels.addmm:2");
  EXPECT_EQ(g.calls[1].line, 976u);
  EXPECT_EQ(g.calls[2].callee, "triton_poi_fused_cat_split_transpose_view_1");
  EXPECT_EQ(g.calls[5].kind, WrapperCall::Kind::kExtern);
  EXPECT_EQ(g.calls[5].callee, "aten::_scaled_dot_product_efficient_attention");
  EXPECT_EQ(g.calls[5].handle, "torch.ops.aten._scaled_dot_product_efficient_attention.default:6");
  EXPECT_EQ(g.calls[6].callee, "aten::mm");
  EXPECT_EQ(g.calls[6].handle, "extern_kernels.mm:7");
  EXPECT_EQ(g.calls.back().callee, "triton_per_fused_add_addmm_native_layer_norm_view_8");
  EXPECT_EQ(g.calls.back().line, 1776u);
  // Attention runs once per layer: calls 5, 16, ..., 126.
  for (std::size_t layer = 0; layer < 12; ++layer) {
    EXPECT_EQ(g.calls[5 + 11 * layer].callee, "aten::_scaled_dot_product_efficient_attention") << layer;
  }
  EXPECT_EQ(g.aot_id, "0_inference");
  EXPECT_EQ(g.graph_hash, "");  // torch 2.11 writes the cache key to none of these files
}

TEST(InductorReader, Gpt2SourceNodeAndAtenListsAreParsed) {
  const InductorGraph g = only_graph(read_inductor_artifacts(kGpt2Dir.string()));
  ASSERT_GE(g.calls.size(), 10u);
  EXPECT_EQ(g.calls[0].source_nodes, V({"inputs_embeds", "arange", "position_ids", "position_ids_1", "position_embeds",
                                        "hidden_states", "hidden_states_2"}));
  EXPECT_EQ(g.calls[0].aten_ops,
            V({"aten.embedding", "aten.arange", "aten.add", "aten.unsqueeze", "aten.native_layer_norm"}));
  EXPECT_EQ(g.calls[1].aten_ops.back(), "aten.addmm");
  EXPECT_EQ(g.calls[5].source_nodes.size(), 13u);
  EXPECT_EQ(g.calls[5].aten_ops.back(), "aten._scaled_dot_product_efficient_attention");
  // "[transpose_3, reshape, view_6, ]": an unnamed node at the end still counts.
  EXPECT_EQ(g.calls[6].source_nodes, V({"transpose_3", "reshape", "view_6", ""}));
  // "[, x_5, mul, pow_1, ...]": and at the start.
  EXPECT_EQ(g.calls[9].source_nodes, V({"", "x_5", "mul", "pow_1", "mul_1", "add_5", "mul_2", "tanh", "add_6",
                                        "hidden_states_5"}));
  EXPECT_EQ(g.calls[9].aten_ops, V({"aten.addmm", "aten.view", "aten.mul", "aten.pow", "aten.add", "aten.tanh"}));
  for (const WrapperCall& c : g.calls) {
    EXPECT_FALSE(c.source_nodes.empty()) << c.handle;
    EXPECT_FALSE(c.aten_ops.empty()) << c.handle;
  }
}

TEST(InductorReader, Gpt2ProvenanceJsonAgreesWithTheWrapper) {
  const InductorGraph g = only_graph(read_inductor_artifacts(kGpt2Dir.string()));
  ASSERT_TRUE(g.has_provenance_json);
  EXPECT_EQ(g.handle_to_post_nodes.size(), 133u);  // cppCodeToPost
  EXPECT_EQ(g.post_to_pre_nodes.size(), 783u);     // postToPre
  for (const WrapperCall& c : g.calls) EXPECT_EQ(g.handle_to_post_nodes.count(c.handle), 1u) << c.handle;
  EXPECT_EQ(g.handle_to_post_nodes.at("extern_kernels.addmm:2"), V({"addmm"}));
  EXPECT_EQ(g.handle_to_post_nodes.at("triton_red_fused_add_arange_embedding_native_layer_norm_unsqueeze_0:1").size(),
            13u);
  EXPECT_EQ(g.post_to_pre_nodes.at("embedding"), V({"inputs_embeds"}));
}

TEST(InductorReader, Gpt2PostGradGraphGivesTargetsAndSourceLines) {
  const InductorGraph g = only_graph(read_inductor_artifacts(kGpt2Dir.string()));
  EXPECT_EQ(g.post_node_target.at("addmm"), "aten.addmm");
  EXPECT_EQ(g.post_node_target.at("iota"), "prims.iota");
  EXPECT_EQ(g.post_node_target.at("var_mean"), "aten.var_mean");  // a node FX prints without annotation
  EXPECT_EQ(g.post_node_target.at("getitem"), "getitem");         // var_mean[0]
  EXPECT_EQ(g.post_node_source.at("addmm"), "pytorch_utils.py:119 in forward");
  EXPECT_EQ(g.post_node_source.at("embedding"), "modeling_gpt2.py:569 in forward");
  EXPECT_EQ(g.post_node_source.at("getitem"), "modeling_gpt2.py:273 in forward");
  // Every post-grad node the provenance JSON knows is in the graph file, and nothing else is.
  ASSERT_EQ(g.post_node_target.size(), g.post_to_pre_nodes.size());
  for (const auto& [node, pre] : g.post_to_pre_nodes) EXPECT_EQ(g.post_node_target.count(node), 1u) << node;
  EXPECT_EQ(g.post_node_source.size(), g.post_node_target.size());
}

// ---------------------------------------------------------------------------------------------------------
// MLP (real capture, every file of the debug directory)

TEST(InductorReader, MlpForwardGraph) {
  const InductorGraph g = only_graph(read_inductor_artifacts(kMlpDir.string()));
  EXPECT_EQ(g.aot_id, "0_forward");
  ASSERT_EQ(g.calls.size(), 3u);
  EXPECT_EQ(g.calls[0].callee, "aten::addmm");
  EXPECT_EQ(g.calls[0].handle, "extern_kernels.addmm:1");
  EXPECT_EQ(g.calls[0].source_nodes, V({"input_1"}));
  EXPECT_EQ(g.calls[0].aten_ops, V({"aten.t", "aten.addmm"}));
  EXPECT_EQ(g.calls[1].kind, WrapperCall::Kind::kTriton);
  EXPECT_EQ(g.calls[1].callee, "triton_per_fused_gelu_native_layer_norm_0");
  EXPECT_EQ(g.calls[1].handle, "triton_per_fused_gelu_native_layer_norm_0:2");
  EXPECT_EQ(g.calls[1].source_nodes, V({"input_2", "input_3"}));
  EXPECT_EQ(g.calls[2].handle, "extern_kernels.addmm:3");
  EXPECT_EQ(g.handle_to_post_nodes.size(), 3u);
  EXPECT_EQ(g.post_to_pre_nodes.size(), 18u);
  EXPECT_EQ(g.post_node_target.at("addmm_1"), "aten.addmm");
  EXPECT_EQ(g.post_node_target.size(), 18u);
  // "# No stacktrace found for following nodes": no source line is made up.
  EXPECT_TRUE(g.post_node_source.empty());
}

// ---------------------------------------------------------------------------------------------------------
// Directory handling

TEST(InductorReader, TreeWalkFindsEveryGraphInInductorsOrder) {
  TempDir tmp;
  const fs::path inductor = tmp.path() / "torch_compile_debug" / "run_2024_01_01" / "torchinductor";
  // Numbered so that a plain string sort would put .10 before .2.
  copy_dir(kMlpDir, inductor / "model__0_inference_10.10");
  copy_dir(kGpt2Dir, inductor / "model__0_inference_2.2");
  write_text(tmp.path() / "torch_compile_debug" / "notes.txt", "not a graph\n");

  InductorArtifacts a = read_inductor_artifacts(tmp.path().string());
  ASSERT_EQ(a.graphs.size(), 2u);
  EXPECT_EQ(fs::path(a.graphs[0].dir).filename(), "model__0_inference_2.2");
  EXPECT_EQ(a.graphs[0].calls.size(), 133u);
  EXPECT_EQ(fs::path(a.graphs[1].dir).filename(), "model__0_inference_10.10");
  EXPECT_EQ(a.graphs[1].calls.size(), 3u);
  EXPECT_TRUE(a.module_maps.empty());

  // A path to output_code.py itself reads that one graph.
  InductorArtifacts one = read_inductor_artifacts((inductor / "model__0_inference_10.10" / "output_code.py").string());
  ASSERT_EQ(one.graphs.size(), 1u);
  EXPECT_EQ(one.graphs[0].calls.size(), 3u);
}

TEST(InductorReader, GraphWithoutOptionalFilesReadsTheWrapperAlone) {
  TempDir tmp;
  fs::copy_file(kMlpDir / "output_code.py", tmp.path() / "output_code.py");
  const InductorGraph g = only_graph(read_inductor_artifacts(tmp.path().string()));
  EXPECT_EQ(g.calls.size(), 3u);
  EXPECT_FALSE(g.has_provenance_json);
  EXPECT_TRUE(g.handle_to_post_nodes.empty());
  EXPECT_TRUE(g.post_node_target.empty());
  // The handles in the wrapper's comments still hold without the JSON.
  EXPECT_EQ(g.calls[1].handle, "triton_per_fused_gelu_native_layer_norm_0:2");
}

TEST(InductorReader, FxGraphReadableIsTheFallbackForTheTransformedGraph) {
  TempDir tmp;
  copy_dir(kMlpDir, tmp.path());
  fs::remove(tmp.path() / "fx_graph_transformed.py");
  const InductorGraph g = only_graph(read_inductor_artifacts(tmp.path().string()));
  EXPECT_EQ(g.post_node_target.at("addmm"), "aten.addmm");
}

TEST(InductorReader, GraphHashComesFromInductorsLogWhenOneIsThere) {
  TempDir tmp;
  copy_dir(kMlpDir, tmp.path() / "g");
  write_text(tmp.path() / "g" / "info.log",
             "[codecache.py:1348 INFO] fx graph cache miss for key "
             "fixcfmfn3ts7f2hlr6ieyc2j3g2ewah5i5kdrjvpdj63e3wfc6ak\n");
  EXPECT_EQ(only_graph(read_inductor_artifacts(tmp.path().string())).graph_hash,
            "fixcfmfn3ts7f2hlr6ieyc2j3g2ewah5i5kdrjvpdj63e3wfc6ak");
  // Two different keys: no way to tell which one is this graph's, so none is given.
  write_text(tmp.path() / "g" / "debug.log",
             "fx graph cache hit for key fbw5qb3vcxxuww5voxu4sfj4yu265pj65q7w6ux4ihato3twzjzo\n");
  EXPECT_EQ(only_graph(read_inductor_artifacts(tmp.path().string())).graph_hash, "");
}

// ---------------------------------------------------------------------------------------------------------
// opprof_fx_modules.json

TEST(InductorReader, ModuleMapJsonIsReadFromAnywhereInTheTree) {
  TempDir tmp;
  copy_dir(kMlpDir, tmp.path() / "torchinductor" / "model__0_forward_0.0");
  write_text(tmp.path() / "opprof" / "opprof_fx_modules.json", R"({
  "version": 1,
  "graphs": [
    {"compile_id": "0/0",
     "nodes": {
       "input_1": {"module": "0", "module_type": "Linear", "source": "mlp.py:12"},
       "input_2": {"module": "1", "module_type": "GELU", "extra": [1, 2]},
       "x": {"module": ""}
     }},
    {"compile_id": "1/0", "nodes": {}, "future_field": true}
  ]
})");
  InductorArtifacts a = read_inductor_artifacts(tmp.path().string());
  ASSERT_EQ(a.graphs.size(), 1u);
  ASSERT_EQ(a.module_maps.size(), 2u);
  const FxModuleMap& m = a.module_maps[0];
  EXPECT_EQ(m.compile_id, "0/0");
  ASSERT_EQ(m.nodes.size(), 3u);
  EXPECT_EQ(m.nodes.at("input_1").module_path, "0");
  EXPECT_EQ(m.nodes.at("input_1").module_type, "Linear");
  EXPECT_EQ(m.nodes.at("input_1").source, "mlp.py:12");
  EXPECT_EQ(m.nodes.at("input_2").module_type, "GELU");
  EXPECT_EQ(m.nodes.at("input_2").source, "");
  EXPECT_EQ(m.nodes.at("x").module_path, "");
  EXPECT_EQ(a.module_maps[1].compile_id, "1/0");
  EXPECT_TRUE(a.module_maps[1].nodes.empty());
}

TEST(InductorReader, ModuleMapJsonProblemsAreInputErrors) {
  TempDir tmp;
  copy_dir(kMlpDir, tmp.path() / "g");
  const fs::path file = tmp.path() / "opprof_fx_modules.json";
  auto error_for = [&](const std::string& json) {
    write_text(file, json);
    return input_error_of([&] { read_inductor_artifacts(tmp.path().string()); });
  };
  std::string e = error_for(R"({"version": 2, "graphs": []})");
  EXPECT_NE(e.find("unsupported version 2"), std::string::npos) << e;
  e = error_for(R"({"graphs": []})");
  EXPECT_NE(e.find("\"version\" is missing"), std::string::npos) << e;
  e = error_for(R"({"version": 1, "graphs": [{"compile_id": "0/0", "nodes": {"a": {"module_type": "X"}}}]})");
  EXPECT_NE(e.find("graphs[0].nodes.\"a\": \"module\" is missing"), std::string::npos) << e;
  e = error_for(R"({"version": 1, "graphs": [{"nodes": {}}]})");
  EXPECT_NE(e.find("graphs[0]: \"compile_id\" is missing"), std::string::npos) << e;
  e = error_for("{\"version\": 1,\n \"graphs\": [{\"compile_id\": \"0/0\" \"nodes\": {}}]}");
  EXPECT_NE(e.find("opprof_fx_modules.json:2:34: malformed JSON: expected ',' or '}'"), std::string::npos) << e;
}

// ---------------------------------------------------------------------------------------------------------
// Errors

TEST(InductorReader, MissingPathIsAnInputError) {
  std::string e = input_error_of([] { read_inductor_artifacts("/nonexistent/opprof/inductor"); });
  EXPECT_EQ(e, "/nonexistent/opprof/inductor: no such file or directory");
}

TEST(InductorReader, DirectoryWithoutAGraphIsAnInputError) {
  TempDir tmp;
  write_text(tmp.path() / "sub" / "fx_graph_readable.py", "");
  std::string e = input_error_of([&] { read_inductor_artifacts(tmp.path().string()); });
  EXPECT_NE(e.find("no Inductor graph found under"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
  e = input_error_of([&] { read_inductor_artifacts((tmp.path() / "sub" / "fx_graph_readable.py").string()); });
  EXPECT_NE(e.find("not a directory"), std::string::npos) << e;
}

TEST(InductorReader, MalformedProvenanceJsonNamesFileLineAndColumn) {
  TempDir tmp;
  copy_dir(kMlpDir, tmp.path());
  const fs::path json = tmp.path() / "inductor_provenance_tracking_node_mappings.json";
  write_text(json,
             "{\"preToPost\": {\"input_1\": [\"permute\", \"addmm\"]},\n"
             " \"postToPre\": {\"addmm\": [\"input_1\"}}");
  std::string e = input_error_of([&] { read_inductor_artifacts(tmp.path().string()); });
  EXPECT_EQ(e, json.string() + ":2:35: malformed JSON: expected ',' or ']' after a value in an array, found '}'");

  write_text(json, "{\"cppCodeToPost\": {\"extern_kernels.addmm:1\": [\"addmm\"");  // truncated
  e = input_error_of([&] { read_inductor_artifacts(tmp.path().string()); });
  EXPECT_NE(e.find(":1:54: malformed JSON: expected ',' or ']' after a value in an array, found the end of the text"),
            std::string::npos)
      << e;

  write_text(json, R"({"cppCodeToPost": {"extern_kernels.addmm:1": "addmm"}})");  // valid JSON, wrong shape
  e = input_error_of([&] { read_inductor_artifacts(tmp.path().string()); });
  EXPECT_NE(e.find("\"cppCodeToPost\".\"extern_kernels.addmm:1\" is not a list"), std::string::npos) << e;
}

TEST(InductorReader, DirectoryWhereAFileShouldBeIsAnInputError) {
  TempDir tmp;
  copy_dir(kMlpDir, tmp.path());
  const fs::path json = tmp.path() / "inductor_provenance_tracking_node_mappings.json";
  fs::remove(json);
  fs::create_directory(json);
  std::string e = input_error_of([&] { read_inductor_artifacts(tmp.path().string()); });
  EXPECT_EQ(e, json.string() + ": not a regular file");
}

TEST(InductorReader, FileWithoutReadPermissionIsAnInputError) {
  TempDir tmp;
  copy_dir(kMlpDir, tmp.path());
  const fs::path code = tmp.path() / "output_code.py";
  fs::permissions(code, fs::perms::none);
  if (access(code.c_str(), R_OK) == 0) GTEST_SKIP() << "running as a user whom permissions do not stop (root)";
  std::string e = input_error_of([&] { read_inductor_artifacts(tmp.path().string()); });
  EXPECT_NE(e.find(code.string() + ": cannot open"), std::string::npos) << e;
}

TEST(InductorReader, WrapperWithoutCallFunctionIsAnInputError) {
  TempDir tmp;
  write_text(tmp.path() / "output_code.py", "cpp_wrapper_src = '''\nvoid inductor_entry_impl() {}\n'''\n");
  std::string e = input_error_of([&] { read_inductor_artifacts(tmp.path().string()); });
  EXPECT_NE(e.find("output_code.py: no call() function"), std::string::npos) << e;
}

// ---------------------------------------------------------------------------------------------------------
// Wrapper forms the real fixtures do not show, written the way torch 2.11 writes them.

TEST(InductorReader, CpuCompileCallsGeneratedCppKernels) {
  TempDir tmp;
  write_text(tmp.path() / "output_code.py", R"PY(# AOT ID: ['0_inference']
import torch
aten = torch.ops.aten
inductor_ops = torch.ops.inductor
async_compile = AsyncCompile()


# Topologically Sorted Source Nodes: [log2], Original ATen: [aten.log2]
cpp_fused_log2_0 = async_compile.cpp_pybinding(['const float*', 'float*'], '''
#include <torch/csrc/inductor/cpp_prefix.h>
extern "C" void kernel(const float* in_ptr0, float* out_ptr0)
{
    // def call(args): is not code here
    out_ptr0[0] = std::log2(in_ptr0[0]);
}
''')


# Topologically Sorted Source Nodes: [ceil, to], Original ATen: [aten.add, aten.clamp]
cpp_fused__to_copy_add_clamp_1 = async_compile.cpp_pybinding(['const float*', 'uint8_t*'], '''
extern "C" void kernel(const float* in_ptr0, uint8_t* out_ptr0) {}
''')


async_compile.wait(globals())
del async_compile

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def call(self, args):
        arg0_1, = args
        args.clear()
        buf0 = empty_strided_cpu((7, ), (1, ), torch.float32)
        # [Provenance debug handles] cpp_fused_log2_0:1
        cpp_fused_log2_0(arg0_1, buf0)
        del arg0_1
        # Topologically Sorted Source Nodes: [log2, ceil], Original ATen: [aten.log2, aten.ceil]
        # [Provenance debug handles] torch.ops.aten.ceil.default:2
        buf1 = torch.ops.aten.ceil.default(buf0)
        assert_alignment(buf1, 16, 'torch.ops.aten.ceil.default')
        del buf0
        buf2 = empty_strided_cpu((7, ), (1, ), torch.uint8)
        # [Provenance debug handles] cpp_fused__to_copy_add_clamp_1:3
        cpp_fused__to_copy_add_clamp_1(buf1, buf2)
        buf3 = aten.sort.stable(buf2, stable=True, dim=0)
        inductor_ops.resize_storage_bytes_(buf3, 0)
        return (buf2, )

runner = Runner(partitions=[])
call = runner.call


def get_args():
    arg0_1 = rand_strided((7, ), (1, ), device='cpu', dtype=torch.float32)
    return [arg0_1]


def benchmark_compiled_module(args, times=10, repeat=10):
    fn = lambda: call(list(args))
    return print_performance(fn, times=times, repeat=repeat)
)PY");
  const InductorGraph g = only_graph(read_inductor_artifacts(tmp.path().string()));
  ASSERT_EQ(g.calls.size(), 5u);
  EXPECT_EQ(g.calls[0].kind, WrapperCall::Kind::kTriton);
  EXPECT_EQ(g.calls[0].callee, "cpp_fused_log2_0");
  EXPECT_EQ(g.calls[0].handle, "cpp_fused_log2_0:1");
  // Comments above the kernel's definition are not this call's.
  EXPECT_TRUE(g.calls[0].source_nodes.empty());
  EXPECT_EQ(g.calls[0].line, 37u);
  EXPECT_EQ(g.calls[1].kind, WrapperCall::Kind::kExtern);
  EXPECT_EQ(g.calls[1].callee, "aten::ceil");
  EXPECT_EQ(g.calls[1].handle, "torch.ops.aten.ceil.default:2");
  EXPECT_EQ(g.calls[1].source_nodes, V({"log2", "ceil"}));
  EXPECT_EQ(g.calls[2].callee, "cpp_fused__to_copy_add_clamp_1");
  EXPECT_EQ(g.calls[2].handle, "cpp_fused__to_copy_add_clamp_1:3");
  EXPECT_EQ(g.calls[3].callee, "aten::sort");  // through the module's "aten" alias
  EXPECT_EQ(g.calls[3].handle, "");
  EXPECT_EQ(g.calls[4].callee, "inductor::resize_storage_bytes_");
}

TEST(InductorReader, GraphPartitionsAndSubgraphsAreInlinedInCallOrder) {
  TempDir tmp;
  write_text(tmp.path() / "output_code.py", R"PY(# AOT ID: ['3_inference']
triton_poi_fused_relu_1 = async_compile.triton('triton_poi_fused_relu_1', '''
@triton.jit
def triton_poi_fused_relu_1(in_out_ptr0, xnumel, XBLOCK : tl.constexpr):
    tl.store(in_out_ptr0 + (x0), tmp2, xmask)
''', device_str='cuda')

def decompose_k_mm_64_split_5(args):
    decompose_k_mm_64_split_5_arg0_1, decompose_k_mm_64_split_5_arg1_1 = args
    args.clear()
    with torch.cuda._DeviceGuard(0):
        decompose_k_mm_64_split_5_buf0 = empty_strided_cuda((64, 16, 16), (256, 16, 1), torch.float32)
        # Unsorted Source Nodes: [mm], Original ATen: [aten.mm]
        extern_kernels.bmm_dtype(reinterpret_tensor(decompose_k_mm_64_split_5_arg0_1, (64, 16, 512),
            (512, 32768, 1), 0), decompose_k_mm_64_split_5_arg1_1, out=decompose_k_mm_64_split_5_buf0)
        # Unsorted Source Nodes: [mm], Original ATen: [aten.mm]
        stream0 = get_raw_stream(0)
        triton_per_fused_mm_0.run(decompose_k_mm_64_split_5_buf0, decompose_k_mm_64_split_5_buf2, 256, 64,
                                  stream=stream0)
    return (decompose_k_mm_64_split_5_buf2, )

def partition_0(args):
    arg0_1, arg1_1 = args
    args.clear()
    with torch.cuda._DeviceGuard(0):
        # subgraph: decompose_k_mm_64_split_5
        decompose_k_mm_64_split_5_args = [arg0_1, arg1_1]
        (buf0,) = decompose_k_mm_64_split_5(decompose_k_mm_64_split_5_args)
        buf1 = buf0; del buf0  # reuse
        # Topologically Sorted Source Nodes: [relu], Original ATen: [aten.relu]
        # [Provenance debug handles] triton_poi_fused_relu_1:4
        raw_stream0 = get_raw_stream(0)
        triton_poi_fused_relu_1.run(buf1, 256, stream=raw_stream0)
    return (buf1, )

def partition_1(args):
    buf1, = args
    # Topologically Sorted Source Nodes: [add], Original ATen: [aten.add]
    # [Provenance debug handles] triton_poi_fused_add_2:5
    triton_poi_fused_add_2.run(buf1, 256, stream=raw_stream0)
    return (buf1, )


async_compile.wait(globals())

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def call(self, args):
        arg0_1, arg1_1 = args
        partition0_args = [arg0_1, arg1_1]
        (buf1,) = self.partitions[0](partition0_args)
        # Topologically Sorted Source Nodes: [item], Original ATen: [aten._local_scalar_dense]
        # [Provenance debug handles] my_custom_launcher:6
        buf2 = my_custom_launcher(buf1)
        buf1.copy_(buf2)
        # A stale block whose handle names another kernel must not be given to the next call.
        # [Provenance debug handles] triton_poi_fused_gone_9:7
        (buf3,) = self.partitions[1]([buf1])
        return (buf3, )

runner = Runner(
    partitions=[
        partition_0,
        partition_1,
    ]
)
call = runner.call
)PY");
  const InductorGraph g = only_graph(read_inductor_artifacts(tmp.path().string()));
  EXPECT_EQ(g.aot_id, "3_inference");
  ASSERT_EQ(g.calls.size(), 6u);
  EXPECT_EQ(g.calls[0].callee, "aten::bmm");  // extern_kernels.bmm_dtype runs torch.bmm(out_dtype=)
  EXPECT_EQ(g.calls[0].source_nodes, V({"mm"}));  // "Unsorted Source Nodes" is the same comment
  EXPECT_EQ(g.calls[0].line, 14u);
  EXPECT_EQ(g.calls[1].callee, "triton_per_fused_mm_0");
  EXPECT_EQ(g.calls[1].handle, "");
  EXPECT_EQ(g.calls[2].callee, "triton_poi_fused_relu_1");
  EXPECT_EQ(g.calls[2].handle, "triton_poi_fused_relu_1:4");
  EXPECT_EQ(g.calls[3].callee, "my_custom_launcher");  // unknown form, recognised by its own handle
  EXPECT_EQ(g.calls[3].handle, "my_custom_launcher:6");
  EXPECT_EQ(g.calls[4].callee, "aten::copy_");
  EXPECT_EQ(g.calls[4].handle, "");
  EXPECT_EQ(g.calls[5].callee, "triton_poi_fused_add_2");
  EXPECT_EQ(g.calls[5].handle, "triton_poi_fused_add_2:5");
  EXPECT_EQ(g.calls[5].source_nodes, V({"add"}));
}

TEST(InductorReader, CommentsWhoseHandleNamesAnotherKernelAreNotGivenAway) {
  TempDir tmp;
  write_text(tmp.path() / "output_code.py", R"PY(
def call(args):
    # Topologically Sorted Source Nodes: [x], Original ATen: [aten.sin]
    # [Provenance debug handles] triton_poi_fused_sin_0:1
    weird_statement_this_reader_does_not_know
    triton_poi_fused_cos_1.run(buf0, 16, stream=stream0)
    # Topologically Sorted Source Nodes: [y], Original ATen: [aten.mm]
    extern_kernels.mm(buf0, buf1, out=buf2)
)PY");
  const InductorGraph g = only_graph(read_inductor_artifacts(tmp.path().string()));
  ASSERT_EQ(g.calls.size(), 2u);
  EXPECT_EQ(g.calls[0].callee, "triton_poi_fused_cos_1");
  EXPECT_EQ(g.calls[0].handle, "");
  EXPECT_TRUE(g.calls[0].source_nodes.empty());
  EXPECT_EQ(g.calls[1].callee, "aten::mm");
  EXPECT_EQ(g.calls[1].source_nodes, V({"y"}));
  EXPECT_EQ(g.calls[1].handle, "");
}

// ---------------------------------------------------------------------------------------------------------
// The Python line scanner

TEST(PythonLines, StringsBracketsAndSemicolons) {
  std::vector<PythonLine> lines = scan_python_lines(
      "x = f('''\n"
      "def call(args):  # not code\n"
      "''', \"a#b\")  # trailing\n"
      "    # a comment\n"
      "\n"
      "buf5 = g(1,\n"
      "         2); del buf4  # reuse\n"
      "y = 1 + \\\n"
      "    2\n"
      "\tz = 'it\\'s'\n");
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0].kind, PythonLine::Kind::kStatement);
  EXPECT_EQ(lines[0].text, "x = f('', '')");
  EXPECT_EQ(lines[0].line, 1u);
  EXPECT_EQ(lines[1].kind, PythonLine::Kind::kComment);
  EXPECT_EQ(lines[1].text, "a comment");
  EXPECT_EQ(lines[1].line, 4u);
  EXPECT_EQ(lines[1].indent, 4u);
  EXPECT_EQ(lines[2].text, "buf5 = g(1,          2)");
  EXPECT_EQ(lines[2].line, 6u);
  EXPECT_EQ(lines[3].text, "del buf4");
  EXPECT_EQ(lines[3].line, 7u);
  EXPECT_EQ(lines[4].text, "y = 1 +      2");
  EXPECT_EQ(lines[4].line, 8u);
  EXPECT_EQ(lines[5].text, "z = ''");
  EXPECT_EQ(lines[5].line, 10u);
  EXPECT_EQ(lines[5].indent, 8u);
}

TEST(PythonLines, UnterminatedInputEndsWhereTheSourceEnds) {
  std::vector<PythonLine> lines = scan_python_lines("a = f(1,\n  '''never closed\n");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].text, "a = f(1,   ''");
}
