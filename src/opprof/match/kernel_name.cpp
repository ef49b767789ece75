// kernel_base_name and kernel_match_name (declared in ncu_match.hpp): the part of a kernel's name that its
// mangled form, torch.profiler's demangling and ncu's demangling agree on.
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "opprof/match/ncu_match.hpp"
#include "opprof/util/text.hpp"

namespace opprof {
namespace {

constexpr std::string_view kAnonymousNamespace = "(anonymous namespace)";
constexpr std::string_view kNcuAnonymousNamespace = "<unnamed>";
constexpr std::string_view kOperator = "operator";

// The demangled name when name is an Itanium-mangled symbol, else name itself. A name that looks mangled
// but does not demangle is kept as-is, so it still compares equal to itself.
std::string demangled(std::string_view name) {
  std::string text(trim(name));
  if (!starts_with(text, "_Z")) return text;
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> out(abi::__cxa_demangle(text.c_str(), nullptr, nullptr, &status),
                                                  &std::free);
  if (status != 0 || !out) return text;
  return std::string(out.get());
}

bool is_identifier_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

// The length of the operator symbol at s[j] ("()", "<=", "->", "<<=", ...), longest first, or 0. Demanglers
// put a space between an operator and template arguments that could fuse with it ("operator< <int>"), so the
// longest match is the symbol.
std::size_t operator_symbol_length(std::string_view s, std::size_t j) {
  static constexpr std::string_view kSymbols[] = {
      "<=>", "<<=", ">>=", "->*", "()", "[]", "<<", ">>", "<=", ">=", "->", "==", "!=", "&&", "||", "++", "--", "+=",
      "-=",  "*=",  "/=",  "%=",  "&=", "|=", "^=", "<",  ">",  "+",  "-",  "*",  "/",  "%",  "^",  "&",  "|",  "~",
      "!",   "=",   ","};
  for (std::string_view symbol : kSymbols) {
    if (s.substr(j, symbol.size()) == symbol) return symbol.size();
  }
  return 0;
}

// s[i..] is an identifier; returns its end. For "operator" the symbol that follows ("operator()", ncu's
// "operator ()", "operator<") is part of the name, so its brackets neither open nor close anything; the
// symbol, without the space, is appended to symbol when given.
std::size_t scan_identifier(std::string_view s, std::size_t i, std::string* symbol) {
  std::size_t e = i;
  while (e < s.size() && is_identifier_char(s[e])) ++e;
  if (s.substr(i, e - i) != kOperator) return e;
  std::size_t j = e;
  while (j < s.size() && s[j] == ' ') ++j;
  std::size_t length = operator_symbol_length(s, j);
  if (length == 0) return e;  // "operator new", a conversion operator: the next word is read as usual
  if (symbol) symbol->assign(s.substr(j, length));
  return j + length;
}

// The components of the function's qualified name: names at nesting depth 0 joined by "::" before the
// parameter list, skipping the return type (everything before the last space at depth 0) and template
// arguments. Anything nested in <>, (), [] or {} is skipped, which covers template arguments holding
// lambdas ("{lambda(float)#1}", ncu's "[lambda(float) (instance 1)]"), parameter lists of enclosing
// functions and ">>" closing two argument lists at once.
std::vector<std::string> qualified_name_components(std::string_view s) {
  std::vector<std::string> components;
  std::string current;
  bool word_ended = false;  // a space or pointer mark at depth 0 ended the return type's word
  std::vector<char> open;   // nesting openers

  auto start_name_if_word_ended = [&] {
    if (!word_ended) return;
    components.clear();
    current.clear();
    word_ended = false;
  };
  auto close = [&](char opener) {
    while (!open.empty()) {
      char top = open.back();
      open.pop_back();
      if (top == opener) return;
    }
  };

  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (!open.empty()) {
      if (is_identifier_char(c)) {
        i = scan_identifier(s, i, nullptr);
        continue;
      }
      switch (c) {
        case '<': case '(': case '[': case '{': open.push_back(c); break;
        case '>': if (open.back() == '<') open.pop_back(); break;  // a comparison inside () closes nothing
        case ')': close('('); break;
        case ']': close('['); break;
        case '}': close('{'); break;
        default: break;
      }
      ++i;
      continue;
    }
    if (s.substr(i, kAnonymousNamespace.size()) == kAnonymousNamespace ||
        s.substr(i, kNcuAnonymousNamespace.size()) == kNcuAnonymousNamespace) {
      start_name_if_word_ended();
      current = kAnonymousNamespace;
      i += s[i] == '(' ? kAnonymousNamespace.size() : kNcuAnonymousNamespace.size();
      continue;
    }
    if (s.substr(i, 2) == "::") {
      if (!current.empty()) components.push_back(std::move(current));
      current.clear();
      i += 2;
      continue;
    }
    switch (c) {
      case ' ': case '*': case '&':
        if (!current.empty() || !components.empty()) word_ended = true;
        ++i;
        continue;
      case '(':
        if (!current.empty()) {  // the parameter list: the name is complete
          components.push_back(std::move(current));
          return components;
        }
        open.push_back(c);  // a parenthesized declarator in the return type
        ++i;
        continue;
      case '<': case '[': case '{':
        open.push_back(c);
        ++i;
        continue;
      case '>': case ')': case ']': case '}': case ',':
        ++i;  // unbalanced at depth 0: nothing to close
        continue;
      default:
        break;
    }
    start_name_if_word_ended();
    if (is_identifier_char(c)) {
      std::string symbol;
      std::size_t e = scan_identifier(s, i, &symbol);
      if (symbol.empty()) {
        current.append(s.substr(i, e - i));
      } else {
        current.append(kOperator);
        current.append(symbol);
      }
      i = e;
    } else {
      current.push_back(c);  // names from other toolchains may hold '.', '-' and the like
      ++i;
    }
  }
  if (!current.empty()) components.push_back(std::move(current));
  return components;
}

}  // namespace

std::string kernel_base_name(std::string_view name) {
  std::string text = demangled(name);
  std::vector<std::string> components = qualified_name_components(text);
  if (components.empty()) return text;
  return join(components, "::");
}

std::string kernel_match_name(std::string_view name) {
  std::string text = demangled(name);
  std::vector<std::string> components = qualified_name_components(text);
  while (!components.empty() && components.back() == kAnonymousNamespace) components.pop_back();
  if (components.empty()) return text;
  return std::move(components.back());
}

}  // namespace opprof
