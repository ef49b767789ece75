#pragma once
// Operators that hand a whole computation to a library whose internal kernels cannot be attributed any
// finer (cuDNN's RNN: one operator, many kernels for gates and time steps). The list is data
// (data/opaque_backends.tsv, compiled in); a user's file of the same format replaces it.
#include <string>
#include <string_view>
#include <unordered_map>

namespace opprof {

class OpaqueBackends {
 public:
  static OpaqueBackends builtin();
  static OpaqueBackends parse(std::string_view text, const std::string& source);
  // The backend an operator hands its work to, or "" when the operator is not opaque.
  std::string_view backend_of(std::string_view op) const;
  std::size_t size() const { return by_op_.size(); }

 private:
  std::unordered_map<std::string, std::string> by_op_;
};

}  // namespace opprof
