#include "opprof/ingest/communication_args.hpp"

#include <simdjson.h>

#include "contract/opprof_contract.h"
#include "opprof/util/text.hpp"

#include <array>
#include <string>
#include <utility>

namespace opprof {
namespace {

static_assert(kCommArgsMarkPrefix == OPPROF_COMM_ARGS_MARK);
static_assert(kProcessGroupMarkPrefix == OPPROF_PROCESS_GROUP_MARK);

namespace od = simdjson::ondemand;

// Calls field(key, value) for each member of the JSON object text; false when it is none.
template <typename Field>
bool for_each_field(std::string_view text, Field&& field) {
  const simdjson::padded_string json(text);
  od::parser parser;
  od::document doc;
  if (parser.iterate(json).get(doc) != simdjson::SUCCESS) return false;
  od::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return false;
  for (auto member : obj) {
    od::field f;
    if (std::move(member).get(f) != simdjson::SUCCESS) return false;
    std::string_view key;
    if (f.unescaped_key().get(key) != simdjson::SUCCESS) return false;
    field(key, f.value());  // by reference: the field's value is read in place
  }
  return true;
}

void read_int(od::value& v, std::int64_t& out) {
  std::int64_t n = 0;
  if (v.get_int64().get(n) == simdjson::SUCCESS && n >= 0) out = n;
}
void read_text(od::value& v, std::string& out) {
  std::string_view s;
  if (v.get_string().get(s) == simdjson::SUCCESS) out = std::string(s);
}
// [0, 1] -> "0,1"; ranks that are not non-negative integers leave it empty.
void read_ranks(od::value& v, std::string& out) {
  od::array a;
  if (v.get_array().get(a) != simdjson::SUCCESS) return;
  std::string ranks;
  for (auto element : a) {
    std::int64_t r = 0;
    if (element.get_int64().get(r) != simdjson::SUCCESS || r < 0) return;
    if (!ranks.empty()) ranks += ',';
    ranks += std::to_string(r);
  }
  out = std::move(ranks);
}

}  // namespace

std::optional<CommArgsMark> parse_comm_args_mark(std::string_view text) {
  CommArgsMark m;
  if (!starts_with(text, kCommArgsMarkPrefix)) return std::nullopt;
  const bool ok = for_each_field(text.substr(kCommArgsMarkPrefix.size()), [&](std::string_view key, od::value& v) {
    if (key == "elements") read_int(v, m.elements);
    else if (key == "bytes") read_int(v, m.bytes);
    else if (key == "group_size") read_int(v, m.group_size);
    else if (key == "dtype") read_text(v, m.dtype);
    else if (key == "process_group") read_text(v, m.process_group);
    else if (key == "process_group_desc") read_text(v, m.process_group_desc);
    else if (key == "collective") read_text(v, m.collective);
  });
  if (!ok) return std::nullopt;
  return m;
}

std::optional<ProcessGroupMark> parse_process_group(std::string_view json) {
  ProcessGroupMark m;
  const bool ok = for_each_field(json, [&](std::string_view key, od::value& v) {
    if (key == "pg_name") read_text(v, m.name);
    else if (key == "pg_desc") read_text(v, m.desc);
    else if (key == "backend_config") read_text(v, m.backend);
    else if (key == "pg_size") read_int(v, m.size);
    else if (key == "ranks") read_ranks(v, m.ranks);
  });
  if (!ok || m.name.empty()) return std::nullopt;
  return m;
}

std::optional<ProcessGroupMark> parse_process_group_mark(std::string_view text) {
  if (!starts_with(text, kProcessGroupMarkPrefix)) return std::nullopt;
  return parse_process_group(text.substr(kProcessGroupMarkPrefix.size()));
}

int element_bytes(std::string_view dtype) {
  // c10::toString(ScalarType) names, then caffe2::TypeMeta names (torch.profiler's "Input type").
  static constexpr std::array<std::pair<std::string_view, int>, 46> kSizes = {{
      {"Float", 4}, {"BFloat16", 2}, {"Half", 2}, {"Double", 8}, {"Long", 8}, {"Int", 4}, {"Short", 2},
      {"Char", 1}, {"Byte", 1}, {"Bool", 1}, {"ComplexHalf", 4}, {"ComplexFloat", 8}, {"ComplexDouble", 16},
      {"UInt16", 2}, {"UInt32", 4}, {"UInt64", 8}, {"Float8_e5m2", 1}, {"Float8_e4m3fn", 1},
      {"Float8_e5m2fnuz", 1}, {"Float8_e4m3fnuz", 1}, {"QInt8", 1}, {"QUInt8", 1}, {"QInt32", 4},
      {"float", 4}, {"c10::BFloat16", 2}, {"c10::Half", 2}, {"double", 8}, {"long int", 8}, {"long", 8},
      {"int", 4}, {"short int", 2}, {"signed char", 1}, {"unsigned char", 1}, {"bool", 1},
      {"c10::complex<c10::Half>", 4}, {"c10::complex<float>", 8}, {"c10::complex<double>", 16},
      {"unsigned short", 2}, {"unsigned int", 4}, {"unsigned long", 8}, {"c10::Float8_e5m2", 1},
      {"c10::Float8_e4m3fn", 1}, {"c10::Float8_e5m2fnuz", 1}, {"c10::Float8_e4m3fnuz", 1},
      {"c10::qint8", 1}, {"c10::quint8", 1},
  }};
  for (const auto& [name, bytes] : kSizes)
    if (name == dtype) return bytes;
  return 0;
}

namespace {

constexpr std::int64_t kMaxElements = std::int64_t{1} << 56;  // beyond any tensor: a corrupt trace

// The product of a list of non-negative dims; -1 when it is not one or overflows kMaxElements.
std::int64_t product_of_dims(simdjson::dom::element dims) {
  simdjson::dom::array a;
  if (dims.get_array().get(a) != simdjson::SUCCESS) return -1;
  std::int64_t n = 1;
  for (simdjson::dom::element d : a) {
    std::int64_t v = 0;
    if (d.get_int64().get(v) != simdjson::SUCCESS || v < 0) return -1;
    if (v != 0 && n > kMaxElements / v) return -1;
    n *= v;
  }
  return n;
}

}  // namespace

InputTensors input_tensors(std::string_view input_dims_json, std::string_view input_types_json) {
  InputTensors out;
  simdjson::dom::parser dims_parser, types_parser;
  simdjson::dom::array dims, types;
  if (dims_parser.parse(simdjson::padded_string(input_dims_json)).get_array().get(dims) != simdjson::SUCCESS ||
      types_parser.parse(simdjson::padded_string(input_types_json)).get_array().get(types) != simdjson::SUCCESS)
    return out;
  std::int64_t elements = 0, bytes = 0;
  bool any = false, bytes_known = true;
  auto add = [&](std::int64_t n, int size) {
    if (n < 0 || elements > kMaxElements - n) return false;
    elements += n;
    if (size == 0) bytes_known = false;
    else bytes += n * size;
    any = true;
    return true;
  };
  auto type_it = types.begin();
  for (simdjson::dom::element d : dims) {
    if (type_it == types.end()) break;
    std::string_view type;
    if ((*type_it).get_string().get(type) != simdjson::SUCCESS) type = {};
    ++type_it;
    if (const int size = element_bytes(type); size != 0) {
      if (!add(product_of_dims(d), size)) return InputTensors{};
      out.dtype = out.dtype.empty() || out.dtype == type ? std::string(type) : "mixed";
    } else if (type == "TensorList" || type == "GenericList") {
      simdjson::dom::array list;
      if (d.get_array().get(list) != simdjson::SUCCESS) continue;
      for (simdjson::dom::element t : list)
        if (!add(product_of_dims(t), 0)) return InputTensors{};
    }
  }
  if (!any) return out;
  out.elements = elements;
  out.bytes = bytes_known ? bytes : -1;
  if (!bytes_known) out.dtype.clear();
  return out;
}

std::vector<ProcessGroupMark> process_groups_of_distributed_info(std::string_view json) {
  std::vector<ProcessGroupMark> out;
  simdjson::dom::parser parser;
  simdjson::dom::array configs;
  if (parser.parse(simdjson::padded_string(json))["pg_config"].get_array().get(configs) != simdjson::SUCCESS) return out;
  for (simdjson::dom::element c : configs)
    if (auto g = parse_process_group(simdjson::to_string(c))) out.push_back(std::move(*g));
  return out;
}

}  // namespace opprof
