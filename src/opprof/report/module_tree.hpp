#pragma once
// The module tree of a profile: kernel time per nn.Module path with inclusive time (the module and all
// modules below it) and self time (kernels attributed to exactly that path). The module groups of the
// profile database hold self time per leaf path only ("transformer" alone shows 0.4 % while it holds
// 83 %); the tree puts every path prefix in as a node. Kernel time without a module ("[no module]") is
// not a module: it is kept apart as the unattributed remainder.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "opprof/metrics/aggregate.hpp"
#include "opprof/util/text.hpp"  // natural_less, used with the tree

namespace opprof {

struct ModuleNode {
  std::string name;  // last component of the path: "attn"
  std::string path;  // the full module path: "transformer.h.3.attn"
  int depth = 1;     // 1 for a top-level module
  std::int64_t self_ns = 0;       // kernels attributed to exactly this path
  std::int64_t inclusive_ns = 0;  // self_ns + the children's inclusive_ns
  std::uint64_t self_kernels = 0;
  std::uint64_t inclusive_kernels = 0;
  // The bottleneck class and reason of the node's own kernels (its module group); "" when the node has
  // no kernels of its own or no counters.
  std::string bottleneck;
  std::string bottleneck_why;
  std::vector<ModuleNode> children;  // largest inclusive time first; ties in natural order (h.2 before h.10)
};

struct ModuleTree {
  std::vector<ModuleNode> roots;  // top-level modules, largest inclusive time first
  std::int64_t module_ns = 0;     // kernel time with a module: the roots' inclusive time
  std::uint64_t module_kernels = 0;
  std::int64_t no_module_ns = 0;  // kernel time without a module (the "[no module]" group)
  std::uint64_t no_module_kernels = 0;
  std::size_t nodes = 0;          // nodes in the tree, all depths
};

// The tree of the module groups (GroupBy::kModule, all of them; order does not matter). Paths split at
// '.'; a group keyed kNoModuleKey becomes the no-module remainder.
ModuleTree build_module_tree(const std::vector<GroupStats>& modules);

// The node of that path, or nullptr.
const ModuleNode* find_module(const ModuleTree& tree, std::string_view path);

// The nodes in depth-first order (each node before its children, children largest first), max_depth
// levels of them (0: all). With prefix, only the subtree of the node of that path (whole components:
// "h.1" is not a prefix of "h.10"; empty when there is no such node), its levels counted from that node.
std::vector<const ModuleNode*> flatten_module_tree(const ModuleTree& tree, int max_depth = 0,
                                                   std::string_view prefix = "");

}  // namespace opprof
