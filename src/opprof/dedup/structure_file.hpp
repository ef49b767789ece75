#pragma once
// The structure file pass A writes in the capture directory (python/opprof/structure.py,
// opprof_structure.json, format version 1): the structural classes of the model's module instances, each a
// maximal repeated subtree, instances in the model's order (the first is the representative).
#include <string>
#include <vector>

namespace opprof {

struct StructuralClass {
  std::string signature;               // digest of type, tensors, children and what the module ran on
  std::string type;                    // module class name of the instances ("GPT2Block")
  std::vector<std::string> instances;  // module paths, model order
};

struct ModelStructure {
  std::string root;     // the model's class name
  std::string runtime;  // what the runtime part of the signatures came from: eager_inputs, fx_graph, static
  std::vector<StructuralClass> classes;
};

inline constexpr int kStructureFormatVersion = 1;

// Throws InputError naming the file for one that is not a structure file of this version.
ModelStructure read_structure_file(const std::string& path);
ModelStructure parse_structure(std::string_view json, const std::string& path);

}  // namespace opprof
