#include "opprof/dedup/structure_file.hpp"

#include <fmt/format.h>

// GCC 12 reports a false -Wdangling-pointer inside simdjson's DOM parser once it is inlined here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdangling-pointer"
#include <simdjson.h>
#pragma GCC diagnostic pop

#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {

ModelStructure read_structure_file(const std::string& path) { return parse_structure(read_file(path), path); }

ModelStructure parse_structure(std::string_view json, const std::string& path) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (simdjson::error_code err = parser.parse(json.data(), json.size()).get(doc))
    throw InputError(path, std::string("malformed JSON: ") + simdjson::error_message(err));
  std::string_view format;
  std::int64_t version = 0;
  if (doc["format"].get(format) != simdjson::SUCCESS || format != "opprof-structure")
    throw InputError(path, "not an opprof structure file (its \"format\" is not \"opprof-structure\")");
  if (doc["version"].get(version) != simdjson::SUCCESS || version != kStructureFormatVersion)
    throw InputError(path, fmt::format("structure file version {}; this opprof reads version {}", version,
                                       kStructureFormatVersion));
  ModelStructure out;
  std::string_view text;
  if (doc["root"].get(text) == simdjson::SUCCESS) out.root = std::string(text);
  if (doc["runtime"].get(text) == simdjson::SUCCESS) out.runtime = std::string(text);
  simdjson::dom::array classes;
  if (doc["classes"].get(classes) != simdjson::SUCCESS) throw InputError(path, "no \"classes\" array");
  for (simdjson::dom::element c : classes) {
    StructuralClass sc;
    if (c["signature"].get(text) == simdjson::SUCCESS) sc.signature = std::string(text);
    if (c["type"].get(text) == simdjson::SUCCESS) sc.type = std::string(text);
    simdjson::dom::array instances;
    if (c["instances"].get(instances) != simdjson::SUCCESS)
      throw InputError(path, fmt::format("class {} has no \"instances\" array", out.classes.size()));
    for (simdjson::dom::element i : instances) {
      if (i.get(text) != simdjson::SUCCESS)
        throw InputError(path, fmt::format("class {}: an instance is not a module path", out.classes.size()));
      sc.instances.emplace_back(text);
    }
    out.classes.push_back(std::move(sc));
  }
  return out;
}

}  // namespace opprof
