// The module tree: every path prefix a node, inclusive = self + children, the kernels without a module kept
// apart rather than listed as a module, children largest first in natural order, and the views of it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "opprof/report/module_tree.hpp"
#include "opprof/report/summary.hpp"
#include "opprof/store/profile_db.hpp"
#include "opprof/store/profile_reader.hpp"
#include "profile_fixture.hpp"

using namespace opprof;
using namespace opprof::testing;

namespace {

GroupStats module_group(const std::string& key, std::uint64_t kernels, std::int64_t time_ns,
                        const std::string& bottleneck = "") {
  GroupStats g;
  g.key = key;
  g.kernels = kernels;
  g.time_ns = time_ns;
  g.bottleneck = bottleneck;
  return g;
}

// A GPT-2-like tree: the top module has kernels of its own besides its children's.
std::vector<GroupStats> gpt2_like() {
  return {module_group("transformer.h.10.attn", 2, 300, "latency-bound"),
          module_group("transformer.h.2.attn", 2, 300),
          module_group("transformer.h.2.mlp.c_fc", 1, 700, "compute-bound"),
          module_group("transformer", 3, 40),
          module_group(std::string(kNoModuleKey), 4, 90),
          module_group("lm_head", 1, 500)};
}

// Checks inclusive = self + children on every node below node, and returns the node count.
std::size_t check_sums(const ModuleNode& node) {
  std::int64_t ns = node.self_ns;
  std::uint64_t kernels = node.self_kernels;
  std::size_t count = 1;
  for (const ModuleNode& c : node.children) {
    EXPECT_EQ(c.depth, node.depth + 1) << c.path;
    EXPECT_EQ(c.path, node.path + "." + c.name);
    ns += c.inclusive_ns;
    kernels += c.inclusive_kernels;
    count += check_sums(c);
  }
  EXPECT_EQ(node.inclusive_ns, ns) << node.path;
  EXPECT_EQ(node.inclusive_kernels, kernels) << node.path;
  return count;
}

std::vector<std::string> paths(const std::vector<const ModuleNode*>& nodes) {
  std::vector<std::string> out;
  for (const ModuleNode* n : nodes) out.push_back(n->path);
  return out;
}

}  // namespace

TEST(ModuleTree, EveryPrefixIsANodeWithInclusiveAndSelfTime) {
  const ModuleTree tree = build_module_tree(gpt2_like());
  ASSERT_EQ(tree.roots.size(), 2u);
  const ModuleNode& transformer = tree.roots[0];
  EXPECT_EQ(transformer.path, "transformer");
  EXPECT_EQ(transformer.depth, 1);
  EXPECT_EQ(transformer.self_ns, 40);
  EXPECT_EQ(transformer.self_kernels, 3u);
  EXPECT_EQ(transformer.inclusive_ns, 40 + 300 + 300 + 700);
  EXPECT_EQ(transformer.inclusive_kernels, 8u);
  EXPECT_EQ(tree.roots[1].path, "lm_head");
  EXPECT_EQ(tree.roots[1].inclusive_ns, 500);

  const ModuleNode* h = find_module(tree, "transformer.h");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->self_ns, 0);  // an intermediate module with no kernels of its own
  EXPECT_EQ(h->inclusive_ns, 1300);
  ASSERT_EQ(h->children.size(), 2u);
  EXPECT_EQ(h->children[0].name, "2");  // 1000 ns before 300 ns
  EXPECT_EQ(h->children[1].name, "10");
  const ModuleNode* c_fc = find_module(tree, "transformer.h.2.mlp.c_fc");
  ASSERT_NE(c_fc, nullptr);
  EXPECT_EQ(c_fc->depth, 5);
  EXPECT_EQ(c_fc->bottleneck, "compute-bound");
  EXPECT_TRUE(find_module(tree, "transformer.h.10.attn")->bottleneck == "latency-bound");
  EXPECT_EQ(find_module(tree, "transformer.h.1"), nullptr);  // a string prefix of h.10 is not a module
  EXPECT_EQ(find_module(tree, "nope"), nullptr);

  std::size_t nodes = 0;
  for (const ModuleNode& root : tree.roots) nodes += check_sums(root);
  EXPECT_EQ(tree.nodes, nodes);
  EXPECT_EQ(tree.nodes, 9u);  // transformer, h, 2, attn, mlp, c_fc, 10, attn, lm_head
}

TEST(ModuleTree, KernelsWithoutAModuleAreKeptApartNotAModule) {
  const ModuleTree tree = build_module_tree(gpt2_like());
  EXPECT_EQ(tree.no_module_ns, 90);
  EXPECT_EQ(tree.no_module_kernels, 4u);
  for (const ModuleNode* n : flatten_module_tree(tree)) EXPECT_NE(n->name, kNoModuleKey);
  EXPECT_EQ(tree.module_ns, 1340 + 500);
  EXPECT_EQ(tree.module_kernels, 9u);
}

TEST(ModuleTree, ChildrenOfEqualTimeInNaturalOrder) {
  std::vector<GroupStats> groups;
  for (const char* layer : {"10", "2", "1", "0", "11"}) groups.push_back(module_group(std::string("h.") + layer, 1, 5));
  const ModuleTree tree = build_module_tree(groups);
  EXPECT_EQ(paths(flatten_module_tree(tree)), (std::vector<std::string>{"h", "h.0", "h.1", "h.2", "h.10", "h.11"}));
  EXPECT_TRUE(natural_less("h.2", "h.10"));
  EXPECT_FALSE(natural_less("h.10", "h.2"));
  EXPECT_TRUE(natural_less("h.2", "h.2.attn"));
  EXPECT_TRUE(natural_less("a", "b"));
  EXPECT_FALSE(natural_less("x", "x"));
  EXPECT_TRUE(natural_less("h.02", "h.3"));
}

TEST(ModuleTree, FlattenedToADepthAndBelowAPrefix) {
  const ModuleTree tree = build_module_tree(gpt2_like());
  EXPECT_EQ(paths(flatten_module_tree(tree, 1)), (std::vector<std::string>{"transformer", "lm_head"}));
  EXPECT_EQ(paths(flatten_module_tree(tree, 3)),
            (std::vector<std::string>{"transformer", "transformer.h", "transformer.h.2", "transformer.h.10", "lm_head"}));
  EXPECT_EQ(paths(flatten_module_tree(tree, 0, "transformer.h.2")),
            (std::vector<std::string>{"transformer.h.2", "transformer.h.2.mlp", "transformer.h.2.mlp.c_fc",
                                      "transformer.h.2.attn"}));
  // Levels count from the prefix's node.
  EXPECT_EQ(paths(flatten_module_tree(tree, 2, "transformer.h.2")),
            (std::vector<std::string>{"transformer.h.2", "transformer.h.2.mlp", "transformer.h.2.attn"}));
  EXPECT_TRUE(flatten_module_tree(tree, 0, "transformer.h.1").empty());
  EXPECT_TRUE(flatten_module_tree(ModuleTree{}).empty());
}

TEST(ModuleTree, TheReportSummaryHoldsTheTreeOfTheProfile) {
  TestProfile p;
  build_test_profile(p);
  p.agg.modules.push_back(group(std::string(kNoModuleKey), 3, 1500, {}, -1, ""));
  TempDir dir;
  write_profile_db(dir.file("p.db"), p.inputs());
  const ProfileReader reader(dir.file("p.db"));
  ReportOptions options;
  options.top = 1;  // the tree holds every module, whatever the top lists
  const ReportSummary s = summarize_profile(reader, options);
  EXPECT_EQ(s.modules.size(), 1u);
  const ModuleTree& tree = s.module_tree;
  ASSERT_EQ(tree.roots.size(), 1u);
  EXPECT_EQ(tree.roots[0].path, "h");
  EXPECT_EQ(tree.roots[0].inclusive_ns, p.cov.module_attributed_ns);
  EXPECT_EQ(tree.module_ns + tree.no_module_ns, p.cov.kernel_time_ns);
  const ModuleNode* mlp = find_module(tree, "h.0.mlp");
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(mlp->self_ns, 0);
  EXPECT_EQ(mlp->inclusive_ns, 4500);
  ASSERT_EQ(mlp->children.size(), 3u);
  EXPECT_EQ(mlp->children[2].name, "act");
  EXPECT_EQ(mlp->children[2].bottleneck, "dram bandwidth");
  EXPECT_EQ(mlp->children[0].name, "c_fc");  // 2000 ns each: c_fc before c_proj
  EXPECT_EQ(mlp->children[1].name, "c_proj");
}

// torch.profiler's own module stacks (a plain with_modules trace) join their names with '/', not '.'.
TEST(ModuleTree, SlashJoinedModuleStacksNestToo) {
  const ModuleTree tree = build_module_tree({module_group("GPT2LMHeadModel_0/GPT2Model_0/GPT2Block_0", 3, 300),
                                             module_group("GPT2LMHeadModel_0/GPT2Model_0/GPT2Block_1", 2, 200),
                                             module_group("GPT2LMHeadModel_0/Linear_0", 1, 50)});
  ASSERT_EQ(tree.roots.size(), 1u);
  EXPECT_EQ(tree.roots[0].name, "GPT2LMHeadModel_0");
  EXPECT_EQ(tree.roots[0].inclusive_ns, 550);
  const ModuleNode* block = find_module(tree, "GPT2LMHeadModel_0/GPT2Model_0/GPT2Block_1");
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(block->path, "GPT2LMHeadModel_0/GPT2Model_0/GPT2Block_1");
  EXPECT_EQ(block->depth, 3);
  EXPECT_EQ(block->self_ns, 200);
}
