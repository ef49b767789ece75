#include "opprof/report/module_tree.hpp"

#include <algorithm>
#include <cctype>

#include "opprof/util/text.hpp"

namespace opprof {
namespace {

// Module paths from opprof's hooks are dotted (transformer.h.0.attn); torch.profiler's own module stacks
// (with_modules, read from a plain trace) join the `nn.Module: <Class>_<n>` names with '/'.
char path_separator(std::string_view path) { return path.find('/') != std::string_view::npos ? '/' : '.'; }

ModuleNode& child_named(ModuleNode& parent, std::string_view name, char separator) {
  for (ModuleNode& c : parent.children)
    if (c.name == name) return c;
  ModuleNode& c = parent.children.emplace_back();
  c.name = std::string(name);
  c.path = parent.path.empty() ? c.name : parent.path + separator + c.name;
  c.depth = parent.depth + 1;
  return c;
}

// Sums inclusive time bottom-up, sorts the children and counts the nodes.
std::size_t finish(ModuleNode& node) {
  std::size_t nodes = 1;
  node.inclusive_ns = node.self_ns;
  node.inclusive_kernels = node.self_kernels;
  for (ModuleNode& c : node.children) {
    nodes += finish(c);
    node.inclusive_ns += c.inclusive_ns;
    node.inclusive_kernels += c.inclusive_kernels;
  }
  std::sort(node.children.begin(), node.children.end(), [](const ModuleNode& a, const ModuleNode& b) {
    return a.inclusive_ns != b.inclusive_ns ? a.inclusive_ns > b.inclusive_ns : natural_less(a.name, b.name);
  });
  return nodes;
}

// last_depth: the deepest node.depth listed; 0 for all.
void flatten(const ModuleNode& node, int last_depth, std::vector<const ModuleNode*>& out) {
  if (last_depth > 0 && node.depth > last_depth) return;
  out.push_back(&node);
  for (const ModuleNode& c : node.children) flatten(c, last_depth, out);
}

}  // namespace


ModuleTree build_module_tree(const std::vector<GroupStats>& modules) {
  ModuleTree tree;
  ModuleNode top;  // holds the roots while the tree is built: depth 0, empty path
  top.depth = 0;
  for (const GroupStats& g : modules) {
    if (g.key == kNoModuleKey) {
      tree.no_module_ns += g.time_ns;
      tree.no_module_kernels += g.kernels;
      continue;
    }
    ModuleNode* node = &top;
    const char separator = path_separator(g.key);
    for (std::string_view part : split(g.key, separator)) node = &child_named(*node, part, separator);
    node->self_ns += g.time_ns;
    node->self_kernels += g.kernels;
    node->bottleneck = g.bottleneck;
    node->bottleneck_why = g.bottleneck_why;
  }
  tree.nodes = finish(top) - 1;
  tree.roots = std::move(top.children);
  tree.module_ns = top.inclusive_ns;
  tree.module_kernels = top.inclusive_kernels;
  return tree;
}

const ModuleNode* find_module(const ModuleTree& tree, std::string_view path) {
  const std::vector<ModuleNode>* level = &tree.roots;
  const ModuleNode* found = nullptr;
  for (std::string_view part : split(path, path_separator(path))) {
    auto it = std::find_if(level->begin(), level->end(), [&](const ModuleNode& n) { return n.name == part; });
    if (it == level->end()) return nullptr;
    found = &*it;
    level = &it->children;
  }
  return found;
}

std::vector<const ModuleNode*> flatten_module_tree(const ModuleTree& tree, int max_depth, std::string_view prefix) {
  std::vector<const ModuleNode*> out;
  if (!prefix.empty()) {
    if (const ModuleNode* node = find_module(tree, prefix))
      flatten(*node, max_depth > 0 ? node->depth + max_depth - 1 : 0, out);
    return out;
  }
  for (const ModuleNode& root : tree.roots) flatten(root, max_depth, out);
  return out;
}

}  // namespace opprof
