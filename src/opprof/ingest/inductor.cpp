#include "opprof/ingest/inductor.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <set>
#include <string_view>
#include <system_error>
#include <utility>

#include "contract/opprof_contract.h"
#include "opprof/ingest/json_diagnose.hpp"
#include "opprof/ingest/python_lines.hpp"
#include "opprof/util/error.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kOutputCodeFile = "output_code.py";
constexpr std::string_view kProvenanceFile = "inductor_provenance_tracking_node_mappings.json";
constexpr std::string_view kFxTransformedFile = "fx_graph_transformed.py";
constexpr std::string_view kFxReadableFile = "fx_graph_readable.py";
constexpr std::string_view kModuleMapFile = OPPROF_FX_MODULES_FILE;
// Inductor's own log, captured into the graph directory when config.trace.debug_log / info_log are on.
constexpr std::string_view kInductorLogFiles[] = {"debug.log", "info.log"};

// ---------------------------------------------------------------------------------------------------------
// Files

// read_file() would hand back an empty string for a directory (an ifstream opens one on Linux and reads
// nothing), so everything read here is checked to be a file first.
std::string read_regular_file(const fs::path& file) {
  std::error_code ec;
  fs::file_status st = fs::status(file, ec);
  if (ec || !fs::exists(st)) throw InputError(file.string(), "no such file");
  if (!fs::is_regular_file(st)) throw InputError(file.string(), "not a regular file");
  return read_file(file.string());
}

bool is_present(const fs::path& file) {
  std::error_code ec;
  return fs::exists(fs::symlink_status(file, ec)) && !ec;
}


// ---------------------------------------------------------------------------------------------------------
// JSON

InputPosition position_of(std::string_view text, std::size_t offset) {
  InputPosition pos;
  pos.known = true;
  pos.byte_offset = offset;
  pos.line = 1;
  std::size_t line_start = 0;
  for (std::size_t k = 0; k < offset && k < text.size(); ++k) {
    if (text[k] == '\n') {
      ++pos.line;
      line_start = k + 1;
    }
  }
  pos.column = offset - line_start + 1;
  return pos;
}

// A JSON file whose document must be an object. The parser owns the parsed elements, so the file is
// read and parsed in place and lives as long as what is read from it.
struct JsonObjectFile {
  explicit JsonObjectFile(const fs::path& path) : file(path.string()), text(read_regular_file(path)) {
    simdjson::dom::element document;
    if (simdjson::error_code err = parser.parse(text).get(document)) {
      // simdjson says what is wrong but not where: the diagnoser finds the first byte where the grammar breaks.
      if (auto problem = detail::find_json_problem(text))
        throw InputError(file, "malformed JSON: " + problem->message, position_of(text, problem->offset));
      throw InputError(file, std::string("malformed JSON: ") + simdjson::error_message(err));
    }
    if (document.get_object().get(root)) throw InputError(file, "the document is not a JSON object");
  }

  const std::string file;
  const std::string text;
  simdjson::dom::parser parser;
  simdjson::dom::object root;
};

using NodeLists = std::map<std::string, std::vector<std::string>>;

// {"key": ["a", "b"], ...}, the shape of every map in the provenance JSON.
NodeLists read_node_lists(simdjson::dom::element el, const std::string& file, std::string_view what) {
  simdjson::dom::object obj;
  if (el.get_object().get(obj)) throw InputError(file, fmt::format("\"{}\" is not an object", what));
  NodeLists out;
  for (simdjson::dom::key_value_pair kv : obj) {
    simdjson::dom::array arr;
    if (kv.value.get_array().get(arr)) {
      throw InputError(file, fmt::format("\"{}\".\"{}\" is not a list", what, kv.key));
    }
    std::vector<std::string> names;
    names.reserve(arr.size());
    for (simdjson::dom::element item : arr) {
      std::string_view name;
      if (item.get_string().get(name)) {
        throw InputError(file, fmt::format("\"{}\".\"{}\" holds a value that is not a string", what, kv.key));
      }
      names.emplace_back(name);
    }
    out.emplace(std::string(kv.key), std::move(names));
  }
  return out;
}

void read_provenance_json(const fs::path& path, InductorGraph& graph) {
  const JsonObjectFile json(path);
  const std::string& file = json.file;
  // preToPost and postToCppCode are the inverses of what is kept; they are checked for shape only, so a
  // damaged file is noticed wherever the damage is. Other keys are left to later torch versions.
  for (simdjson::dom::key_value_pair kv : json.root) {
    if (kv.key == "cppCodeToPost") {
      graph.handle_to_post_nodes = read_node_lists(kv.value, file, kv.key);
    } else if (kv.key == "postToPre") {
      graph.post_to_pre_nodes = read_node_lists(kv.value, file, kv.key);
    } else if (kv.key == "preToPost" || kv.key == "postToCppCode") {
      read_node_lists(kv.value, file, kv.key);
    }
  }
  graph.has_provenance_json = true;
}

std::string json_string_field(simdjson::dom::object obj, std::string_view key, bool required,
                              const std::string& file, const std::string& where) {
  simdjson::dom::element el;
  if (obj.at_key(key).get(el)) {
    if (required) throw InputError(file, fmt::format("{}: \"{}\" is missing", where, key));
    return {};
  }
  std::string_view value;
  if (el.get_string().get(value)) throw InputError(file, fmt::format("{}.{}: expected a string", where, key));
  return std::string(value);
}

void read_module_map_json(const fs::path& path, std::vector<FxModuleMap>& out) {
  const JsonObjectFile json(path);
  const std::string& file = json.file;
  const simdjson::dom::object& obj = json.root;

  simdjson::dom::element version;
  if (obj.at_key("version").get(version)) throw InputError(file, "\"version\" is missing");
  std::int64_t version_number = 0;
  if (version.get_int64().get(version_number) || version_number != 1) {
    throw InputError(file, fmt::format("unsupported version {} (this opprof reads version 1)",
                                       simdjson::to_string(version)));
  }
  simdjson::dom::array graphs;
  simdjson::dom::element graphs_el;
  if (obj.at_key("graphs").get(graphs_el)) throw InputError(file, "\"graphs\" is missing");
  if (graphs_el.get_array().get(graphs)) throw InputError(file, "\"graphs\" is not a list");

  std::size_t index = 0;
  for (simdjson::dom::element graph_el : graphs) {
    const std::string where = fmt::format("graphs[{}]", index++);
    simdjson::dom::object graph_obj;
    if (graph_el.get_object().get(graph_obj)) throw InputError(file, where + ": expected an object");
    FxModuleMap map;
    map.compile_id = json_string_field(graph_obj, "compile_id", true, file, where);
    simdjson::dom::element nodes_el;
    simdjson::dom::object nodes;
    if (graph_obj.at_key("nodes").get(nodes_el)) throw InputError(file, where + ": \"nodes\" is missing");
    if (nodes_el.get_object().get(nodes)) throw InputError(file, where + ".nodes: expected an object");
    for (simdjson::dom::key_value_pair kv : nodes) {
      const std::string node_where = fmt::format("{}.nodes.\"{}\"", where, kv.key);
      simdjson::dom::object node_obj;
      if (kv.value.get_object().get(node_obj)) throw InputError(file, node_where + ": expected an object");
      FxNodeModule node;
      node.module_path = json_string_field(node_obj, "module", true, file, node_where);
      node.module_type = json_string_field(node_obj, "module_type", false, file, node_where);
      node.source = json_string_field(node_obj, "source", false, file, node_where);
      map.nodes.emplace(std::string(kv.key), std::move(node));
    }
    out.push_back(std::move(map));
  }
}

// ---------------------------------------------------------------------------------------------------------
// Python names

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::size_t ident_length(std::string_view s) {
  if (s.empty() || !is_ident_start(s[0])) return 0;
  std::size_t i = 1;
  while (i < s.size() && is_ident_char(s[i])) ++i;
  return i;
}

// Length of the dotted name ("torch.ops.aten.mm.default") that starts s; 0 when s starts with none.
std::size_t dotted_name_length(std::string_view s) {
  std::size_t end = 0, i = 0;
  while (std::size_t n = ident_length(s.substr(i))) {
    i += n;
    end = i;
    if (i < s.size() && s[i] == '.') {
      ++i;
    } else {
      break;
    }
  }
  return end;
}

bool is_python_keyword(std::string_view name) {
  static const std::set<std::string_view> kKeywords = {
      "and",   "as",     "assert", "async", "await",  "break", "class",    "continue", "def",
      "del",   "elif",   "else",   "except", "finally", "for",  "from",     "global",   "if",
      "import", "in",    "is",     "lambda", "nonlocal", "not", "or",       "pass",     "raise",
      "return", "try",   "while",  "with",  "yield"};
  return kKeywords.count(name) != 0;
}

// "buf0 = x", "(buf0,) = x", "buf1, buf2 = x" -> "x"; a statement that assigns nothing comes back whole.
// A bracket right after a name makes the statement a call, whose "out=buf0" must not read as assignment.
std::string_view assignment_value(std::string_view s) {
  bool name_seen = false;
  bool after_name = false;
  for (std::size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == ' ' || c == '\t') {
      ++i;
    } else if (is_ident_start(c)) {
      if (after_name) return s;
      i += ident_length(s.substr(i));
      name_seen = after_name = true;
    } else if (c == '(' || c == '[') {
      if (after_name) return s;
      ++i;
    } else if (c == ')' || c == ']') {
      after_name = true;
      ++i;
    } else if (c == ',') {
      after_name = false;
      ++i;
    } else if (c == '=' && name_seen && (i + 1 >= s.size() || s[i + 1] != '=')) {
      return trim(s.substr(i + 1));
    } else {
      return s;
    }
  }
  return s;
}

// "a, , b" -> {"a", "", "b"}: Inductor prints an unnamed source node as nothing between two commas,
// and the position still counts.
std::vector<std::string> split_name_list(std::string_view inside) {
  std::vector<std::string> out;
  if (trim(inside).empty()) return out;
  for (std::string_view part : split(inside, ',')) out.emplace_back(trim(part));
  return out;
}

// Reads the "[...]" that follows `label` in text; nullopt when the label or its list is not there.
std::optional<std::vector<std::string>> labelled_list(std::string_view text, std::string_view label,
                                                      std::size_t* end_pos = nullptr) {
  std::size_t at = text.find(label);
  if (at == std::string_view::npos) return std::nullopt;
  std::size_t open = at + label.size();
  if (open >= text.size() || text[open] != '[') return std::nullopt;
  std::size_t close = text.find(']', open);
  if (close == std::string_view::npos) return std::nullopt;
  if (end_pos) *end_pos = close + 1;
  return split_name_list(text.substr(open + 1, close - open - 1));
}

// ---------------------------------------------------------------------------------------------------------
// output_code.py

struct Block {
  std::size_t begin = 0;  // index of the first line of the body in WrapperModule::lines
  std::size_t end = 0;    // one past the last
};

struct WrapperModule {
  std::vector<PythonLine> lines;
  std::map<std::string, Block, std::less<>> functions;  // module-level defs: partitions, subgraphs, call
  std::optional<Block> entry;                            // Runner.call, or the module-level call() of older torch
  std::set<std::string, std::less<>> generated_kernels;  // names bound to async_compile.triton/cpp_pybinding/...
  // Aliases of operator namespaces the wrapper defines ("aten = torch.ops.aten"). "aten" is always one.
  std::map<std::string, std::string, std::less<>> op_namespaces{{"aten", "aten"}};
  std::vector<std::string> partitions;  // Runner(partitions=[partition_0, ...]): self.partitions[i]
};

// The body of the block opened by lines[header]: the lines indented deeper than the header, up to the first
// statement that is not. Comments do not end a block (their indentation is free), but comments trailing it
// at the header's level or less belong to what follows.
Block block_after(const std::vector<PythonLine>& lines, std::size_t header) {
  const std::uint32_t base = lines[header].indent;
  Block b{header + 1, header + 1};
  for (std::size_t j = header + 1; j < lines.size(); ++j) {
    if (lines[j].indent > base) {
      b.end = j + 1;
    } else if (lines[j].kind == PythonLine::Kind::kStatement) {
      break;
    }
  }
  return b;
}

std::vector<std::string> names_in_list_after(std::string_view text, std::string_view label) {
  std::vector<std::string> out;
  std::size_t at = text.find(label);
  if (at == std::string_view::npos) return out;
  std::size_t open = text.find('[', at + label.size());
  std::size_t close = open == std::string_view::npos ? open : text.find(']', open);
  if (close == std::string_view::npos) return out;
  for (std::string_view part : split(text.substr(open + 1, close - open - 1), ',')) {
    part = trim(part);
    if (!part.empty()) out.emplace_back(part);
  }
  return out;
}

WrapperModule index_wrapper(std::string_view source) {
  WrapperModule m;
  m.lines = scan_python_lines(source);
  const auto& lines = m.lines;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const PythonLine& line = lines[i];
    if (line.kind != PythonLine::Kind::kStatement || line.indent != 0) continue;
    std::string_view t = line.text;
    if (starts_with(t, "def ")) {
      std::string_view rest = trim(t.substr(4));
      std::size_t n = ident_length(rest);
      if (n) m.functions.emplace(std::string(rest.substr(0, n)), block_after(lines, i));
      continue;
    }
    if (starts_with(t, "class ")) {
      std::string_view rest = trim(t.substr(6));
      if (rest.substr(0, ident_length(rest)) != "Runner") continue;
      Block cls = block_after(lines, i);
      for (std::size_t j = cls.begin; j < cls.end; ++j) {
        if (lines[j].kind == PythonLine::Kind::kStatement && starts_with(lines[j].text, "def call(")) {
          m.entry = block_after(lines, j);
        }
      }
      continue;
    }
    if (contains(t, "Runner(") && contains(t, "partitions")) {
      m.partitions = names_in_list_after(t, "partitions");
      continue;
    }
    std::string_view value = assignment_value(t);
    if (value.size() == t.size()) continue;
    std::string_view target = t.substr(0, ident_length(t));
    if (target.empty()) continue;
    if (starts_with(value, "async_compile.")) {
      m.generated_kernels.emplace(target);
    } else if (starts_with(value, "torch.ops.") && dotted_name_length(value) == value.size()) {
      std::string_view ns = value.substr(std::string_view("torch.ops.").size());
      if (ident_length(ns) == ns.size()) m.op_namespaces.emplace(std::string(target), std::string(ns));
    }
  }
  if (!m.entry) {
    auto it = m.functions.find("call");
    if (it != m.functions.end()) m.entry = it->second;
  }
  return m;
}

// How torch.profiler names the ATen operator behind extern_kernels.<name>.
std::string extern_kernel_callee(std::string_view name) {
  // Python helpers in torch/_inductor/kernel/ that run one ATen operator under another name.
  static const std::map<std::string_view, std::string_view> kHelpers = {
      {"bias_addmm", "addmm"},  // torch.addmm with a broadcast 1-D bias, for cuBLASLt's fused epilogue
      {"bmm_dtype", "bmm"},     // torch.bmm(..., out_dtype=)
      {"mm_dtype", "mm"},       // torch.mm(..., out_dtype=)
  };
  auto it = kHelpers.find(name);
  return fmt::format("aten::{}", it != kHelpers.end() ? it->second : name);
}

// The comments Inductor writes above a call in the wrapper, waiting for the call they describe.
struct PendingOrigin {
  bool has_nodes = false;
  std::vector<std::string> source_nodes;
  std::vector<std::string> aten_ops;
  std::string handle;
};

class CallCollector {
 public:
  CallCollector(const WrapperModule& module, std::vector<WrapperCall>& out) : m_(module), out_(out) {}

  void collect() {
    std::vector<std::string> inlined;
    walk(*m_.entry, inlined);
  }

 private:
  // Inlining nests no deeper than this; Inductor nests partition -> subgraph, two levels.
  static constexpr std::size_t kMaxInlineDepth = 16;

  void walk(const Block& body, std::vector<std::string>& inlined) {
    PendingOrigin pending;
    for (std::size_t i = body.begin; i < body.end; ++i) {
      const PythonLine& line = m_.lines[i];
      if (line.kind == PythonLine::Kind::kComment) {
        absorb_comment(line.text, pending);
      } else {
        statement(line, pending, inlined);
      }
    }
  }

  static void absorb_comment(std::string_view text, PendingOrigin& pending) {
    if (starts_with(text, "Topologically Sorted Source Nodes:") || starts_with(text, "Unsorted Source Nodes:") ||
        starts_with(text, "Source Nodes:")) {
      // A new block of comments: whatever was pending and never met its call is dropped, not carried over.
      pending = PendingOrigin{};
      std::size_t after_nodes = 0;
      if (auto nodes = labelled_list(text, "Source Nodes: ", &after_nodes)) {
        pending.has_nodes = true;
        pending.source_nodes = std::move(*nodes);
        if (auto aten = labelled_list(text.substr(after_nodes), "Original ATen: ")) pending.aten_ops = std::move(*aten);
      }
      return;
    }
    constexpr std::string_view kHandleLabel = "[Provenance debug handles]";
    if (starts_with(text, kHandleLabel)) {
      if (!pending.handle.empty()) pending = PendingOrigin{};  // a second handle starts another call's block
      std::string_view rest = trim(text.substr(kHandleLabel.size()));
      std::size_t end = rest.find_first_of(" ,\t");
      pending.handle = std::string(rest.substr(0, end));
    }
  }

  // "aten.mm.default" and "torch.ops.aten.mm.default" name the same thing; handles use the latter.
  std::string canonical_target(std::string_view name) const {
    std::size_t n = ident_length(name);
    if (n < name.size() && name[n] == '.') {
      auto it = m_.op_namespaces.find(name.substr(0, n));
      if (it != m_.op_namespaces.end()) return fmt::format("torch.ops.{}{}", it->second, name.substr(n));
    }
    return std::string(name);
  }

  bool handle_names(std::string_view handle, std::string_view target) const {
    std::size_t colon = handle.rfind(':');
    std::string_view handle_name = colon == std::string_view::npos ? handle : handle.substr(0, colon);
    return canonical_target(handle_name) == canonical_target(target);
  }

  void inline_function(const std::string& name, std::vector<std::string>& inlined) {
    auto it = m_.functions.find(name);
    if (it == m_.functions.end() || inlined.size() >= kMaxInlineDepth) return;
    if (std::find(inlined.begin(), inlined.end(), name) != inlined.end()) return;  // recursion: not Inductor's
    inlined.push_back(name);
    walk(it->second, inlined);
    inlined.pop_back();
  }

  void statement(const PythonLine& line, PendingOrigin& pending, std::vector<std::string>& inlined) {
    std::string_view expr = assignment_value(line.text);

    // Graph partitions (cudagraph-able pieces): "(buf1,) = self.partitions[0](partition0_args)" runs the
    // module-level def that Runner(partitions=[...]) lists at that index.
    constexpr std::string_view kPartitionCall = "self.partitions[";
    if (starts_with(expr, kPartitionCall)) {
      std::size_t close = expr.find(']');
      std::string_view index_text = trim(expr.substr(kPartitionCall.size(), close - kPartitionCall.size()));
      std::size_t index = 0;
      bool numeric = !index_text.empty();
      for (char c : index_text) {
        numeric = numeric && c >= '0' && c <= '9';
        index = index * 10 + static_cast<std::size_t>(c - '0');
      }
      pending = PendingOrigin{};
      if (numeric && index < m_.partitions.size()) inline_function(m_.partitions[index], inlined);
      return;
    }

    std::size_t n = dotted_name_length(expr);
    if (n == 0 || n >= expr.size() || expr[n] != '(') return;
    std::string_view name = expr.substr(0, n);
    if (is_python_keyword(name)) return;
    std::vector<std::string_view> parts = split(name, '.');

    WrapperCall call;
    std::string_view target = name;  // the text a provenance handle names
    bool is_call = true;
    if (parts.size() == 2 && parts[1] == "run") {
      call.kind = WrapperCall::Kind::kTriton;  // CachingAutotuner.run: a Triton launch
      call.callee = std::string(parts[0]);
      target = parts[0];
    } else if (parts.size() == 1 &&
               (m_.generated_kernels.count(name) || starts_with(name, "cpp_fused_") || starts_with(name, "triton_"))) {
      call.kind = WrapperCall::Kind::kTriton;  // a generated kernel called directly (C++ on CPU compiles)
      call.callee = std::string(name);
    } else if (parts.size() == 1 && m_.functions.count(name)) {
      pending = PendingOrigin{};  // "# subgraph: name" and the like describe no single kernel
      inline_function(std::string(name), inlined);
      return;
    } else if (parts.size() == 2 && parts[0] == "extern_kernels") {
      call.kind = WrapperCall::Kind::kExtern;
      call.callee = extern_kernel_callee(parts[1]);
    } else if (parts.size() >= 4 && parts[0] == "torch" && parts[1] == "ops") {
      call.kind = WrapperCall::Kind::kExtern;  // a fallback op: torch.ops.<ns>.<op>.<overload>(...)
      call.callee = fmt::format("{}::{}", parts[2], parts[3]);
    } else if (parts.size() >= 2 && m_.op_namespaces.count(parts[0])) {
      call.kind = WrapperCall::Kind::kExtern;  // the same through an alias: aten.<op>.<overload>(...)
      call.callee = fmt::format("{}::{}", m_.op_namespaces.find(parts[0])->second, parts[1]);
    } else if (parts.size() == 2 && parts[1] == "copy_") {
      call.kind = WrapperCall::Kind::kExtern;  // buf.copy_(src): device copies and mutated inputs
      call.callee = "aten::copy_";
    } else if (!pending.handle.empty() && handle_names(pending.handle, name)) {
      // A form this reader does not know, which Inductor's own handle says is a kernel call.
      call.kind = parts.size() == 1 ? WrapperCall::Kind::kTriton : WrapperCall::Kind::kExtern;
      call.callee = std::string(name);
    } else {
      is_call = false;
    }
    if (!is_call) return;

    // The comments go with this call unless their handle names another one: then they described a
    // statement that is not a call here, and giving them to this call would be a guess.
    if (pending.handle.empty() || handle_names(pending.handle, target)) {
      call.handle = std::move(pending.handle);
      call.source_nodes = std::move(pending.source_nodes);
      call.aten_ops = std::move(pending.aten_ops);
    }
    pending = PendingOrigin{};
    call.line = line.line;
    out_.push_back(std::move(call));
  }

  const WrapperModule& m_;
  std::vector<WrapperCall>& out_;
};

std::string parse_aot_id(const std::vector<PythonLine>& lines) {
  for (const PythonLine& line : lines) {
    if (line.kind != PythonLine::Kind::kComment) break;  // it is the file's first line
    constexpr std::string_view kLabel = "AOT ID:";
    if (!starts_with(line.text, kLabel)) continue;
    std::string_view rest = line.text;
    std::size_t open = rest.find_first_of("'\"", kLabel.size());
    if (open == std::string_view::npos) return {};
    std::size_t close = rest.find(rest[open], open + 1);
    if (close == std::string_view::npos) return {};
    return std::string(rest.substr(open + 1, close - open - 1));
  }
  return {};
}

void read_wrapper(const std::string& file, std::string_view source, InductorGraph& graph) {
  WrapperModule module = index_wrapper(source);
  if (!module.entry) {
    throw InputError(file,
                     "no call() function in it: not a Python wrapper (cpp_wrapper and AOTInductor output are "
                     "not read)");
  }
  graph.aot_id = parse_aot_id(module.lines);
  CallCollector(module, graph.calls).collect();
}

// ---------------------------------------------------------------------------------------------------------
// fx_graph_transformed.py / fx_graph_readable.py

// "/site-packages/transformers/models/gpt2/modeling_gpt2.py:569 in forward, code: x = ..." ->
// "modeling_gpt2.py:569 in forward" (torch before 2.1 writes no " in <function>").
std::string parse_file_comment(std::string_view text) {
  std::size_t code = text.find(", code:");
  std::string_view where = trim(text.substr(0, code));
  std::string_view function;
  std::size_t in = where.rfind(" in ");
  if (in != std::string_view::npos) {
    function = trim(where.substr(in + 4));
    where = where.substr(0, in);
  }
  std::string_view path = where, line_number;
  std::size_t colon = where.rfind(':');
  if (colon != std::string_view::npos) {
    std::string_view digits = where.substr(colon + 1);
    if (!digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      path = where.substr(0, colon);
      line_number = digits;
    }
  }
  std::size_t slash = path.find_last_of("/\\");
  std::string out(slash == std::string_view::npos ? path : path.substr(slash + 1));
  if (!line_number.empty()) out += fmt::format(":{}", line_number);
  if (!function.empty()) out += fmt::format(" in {}", function);
  return out;
}

// What a node's right-hand side calls, named as FX names the target: "torch.ops.aten.addmm.default(...)"
// -> "aten.addmm", "var_mean[0]" -> "getitem". Empty for what is no node (symbolic arithmetic, "None").
std::string fx_target(std::string_view rhs) {
  std::size_t n = dotted_name_length(rhs);
  if (n == 0 || n >= rhs.size()) return {};
  std::string_view name = rhs.substr(0, n);
  if (rhs[n] == '[' && ident_length(name) == n) return "getitem";
  if (rhs[n] != '(') return {};
  std::vector<std::string_view> parts = split(name, '.');
  if (parts.size() >= 4 && parts[0] == "torch" && parts[1] == "ops") return fmt::format("{}.{}", parts[2], parts[3]);
  return std::string(name);
}

void read_fx_graph(const fs::path& path, InductorGraph& graph) {
  const std::string source = read_regular_file(path);
  // FX prints "# File: ..." once above a run of nodes from the same source line and "# No stacktrace found
  // for following nodes" above a run without one; the latest such comment holds for every node below it.
  std::string current_source;
  for (const PythonLine& line : scan_python_lines(source)) {
    if (line.kind == PythonLine::Kind::kComment) {
      if (starts_with(line.text, "File: ")) {
        current_source = parse_file_comment(line.text.substr(6));
      } else if (starts_with(line.text, "No stacktrace found")) {
        current_source.clear();
      }
      continue;
    }
    // 'addmm: "f32[512, 2304]" = torch.ops.aten.addmm.default(...)' (the annotation string reads '' here)
    // or 'var_mean = torch.ops.aten.var_mean.correction(...)'.
    std::string_view t = line.text;
    std::size_t n = ident_length(t);
    if (n == 0 || is_python_keyword(t.substr(0, n))) continue;
    std::string_view rest = trim(t.substr(n));
    if (starts_with(rest, ":")) {
      rest = trim(rest.substr(1));
      if (!starts_with(rest, "''")) continue;
      rest = trim(rest.substr(2));
    }
    if (!starts_with(rest, "=") || starts_with(rest, "==")) continue;
    std::string target = fx_target(trim(rest.substr(1)));
    if (target.empty()) continue;
    std::string name(t.substr(0, n));
    // The first definition wins: nested subgraph modules, printed after forward(), may reuse names.
    graph.post_node_target.emplace(name, std::move(target));
    if (!current_source.empty()) graph.post_node_source.emplace(std::move(name), current_source);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Graph hash

// The FX graph cache key, which torch.profiler shows as "## Call CompiledFxGraph <key> ##". torch 2.11's
// debug directory holds it only in Inductor's log ("fx graph cache miss for key <key>"), when that log is
// captured there; a file naming the region's annotation itself counts too.
void collect_graph_keys(std::string_view text, std::set<std::string>& keys) {
  static constexpr std::string_view kMarkers[] = {"## Call CompiledFxGraph ", "fx graph cache miss for key ",
                                                  "fx graph cache hit for key "};
  for (std::string_view marker : kMarkers) {
    for (std::size_t at = text.find(marker); at != std::string_view::npos; at = text.find(marker, at + 1)) {
      std::size_t begin = at + marker.size(), end = begin;
      while (end < text.size() && is_ident_char(text[end])) ++end;
      // Cache keys are 52 base32 characters; anything much shorter is not one ("None" when caching is off).
      if (end - begin >= 16) keys.emplace(text.substr(begin, end - begin));
    }
  }
}

std::string find_graph_hash(const fs::path& dir, std::string_view output_code) {
  std::set<std::string> keys;
  collect_graph_keys(output_code, keys);
  for (std::string_view log : kInductorLogFiles) {
    fs::path file = dir / log;
    if (is_present(file)) collect_graph_keys(read_regular_file(file), keys);
  }
  // Two keys in one directory's files would mean the log saw two graphs: no way to tell which is this one.
  return keys.size() == 1 ? *keys.begin() : std::string();
}

// ---------------------------------------------------------------------------------------------------------

InductorGraph read_graph_dir(const fs::path& dir) {
  InductorGraph graph;
  graph.dir = dir.string();
  const fs::path output_code = dir / kOutputCodeFile;
  const std::string source = read_regular_file(output_code);
  read_wrapper(output_code.string(), source, graph);
  graph.graph_hash = find_graph_hash(dir, source);
  if (is_present(dir / kProvenanceFile)) read_provenance_json(dir / kProvenanceFile, graph);
  if (is_present(dir / kFxTransformedFile)) {
    read_fx_graph(dir / kFxTransformedFile, graph);
  } else if (is_present(dir / kFxReadableFile)) {
    read_fx_graph(dir / kFxReadableFile, graph);
  }
  return graph;
}

void sort_paths(std::vector<fs::path>& paths) {
  std::sort(paths.begin(), paths.end(),
            [](const fs::path& a, const fs::path& b) { return natural_less(a.generic_string(), b.generic_string()); });
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
}

}  // namespace

InductorArtifacts read_inductor_artifacts(const std::string& path) {
  std::error_code ec;
  const fs::path root(path);
  fs::file_status st = fs::status(root, ec);
  if (ec || !fs::exists(st)) throw InputError(path, "no such file or directory");

  std::vector<fs::path> graph_dirs;
  std::vector<fs::path> module_maps;
  if (fs::is_regular_file(st)) {
    // A path to output_code.py itself means the one graph in its directory.
    if (root.filename() != kOutputCodeFile) {
      throw InputError(path, "not a directory: expected an Inductor debug directory or a tree holding them");
    }
    graph_dirs.push_back(root.parent_path().empty() ? fs::path(".") : root.parent_path());
  } else if (fs::is_directory(st)) {
    fs::recursive_directory_iterator it(root, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      // A dangling link is no file; its own error must not end the walk.
      std::error_code entry_ec;
      if (!it->is_regular_file(entry_ec)) continue;
      const fs::path& file = it->path();
      if (file.filename() == kOutputCodeFile) graph_dirs.push_back(file.parent_path());
      if (file.filename() == kModuleMapFile) module_maps.push_back(file);
    }
    if (ec) {
      throw InputError(path, fmt::format("cannot read the directory tree: {}", ec.message()));
    }
  } else {
    throw InputError(path, "not a directory: expected an Inductor debug directory or a tree holding them");
  }
  if (graph_dirs.empty()) {
    throw InputError(path, "no Inductor graph found under this directory (no output_code.py in it or below it)");
  }
  // opprof's capture directory keeps the FX module map beside inductor/, not inside it.
  if (module_maps.empty() && fs::is_directory(st)) {
    fs::path beside = fs::absolute(root, ec).parent_path() / kModuleMapFile;
    if (!ec && fs::is_regular_file(beside, ec)) module_maps.push_back(beside);
  }
  sort_paths(graph_dirs);
  sort_paths(module_maps);

  InductorArtifacts out;
  out.graphs.reserve(graph_dirs.size());
  for (const fs::path& dir : graph_dirs) out.graphs.push_back(read_graph_dir(dir));
  for (const fs::path& file : module_maps) read_module_map_json(file, out.module_maps);
  return out;
}

}  // namespace opprof
