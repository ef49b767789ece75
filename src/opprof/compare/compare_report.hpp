#pragma once
// The output of `opprof compare-attribution`: a terminal report, or one JSON object for scripts and CI.
#include <string>

#include "opprof/compare/profile_compare.hpp"

namespace opprof {

// The comparison as text for a terminal, ending in a newline: the two profiles, the alignment, agreement of
// operator, top-level operator and module (share of A's aligned kernel time), ncu matching, and the largest
// disagreements with both sides' attribution.
std::string render_comparison_text(const ProfileComparison& c);

// The comparison as one pretty-printed JSON object, ending in a newline. Keys:
//   a, b {path, source, kernels, time_ns, unaligned, unaligned_ns,
//         unaligned_names [{kernel, kernels, time_ns}], has_ncu, ncu_matched}
//   activity ("kernel" | "all"), aligned, aligned_ns_a, aligned_ns_b, ordered
//   agreement {operator, top_operator, module: {pairs, time_ns, pct}}   pct: of A's aligned time, 0..100
//   ncu {both_matched, both_matched_ns, same_row, same_row_ns, same_row_pct, only_a, only_b, differences,
//        first_differences [{kernel, id_a, id_b, row_a, row_b, ncu_id_a, ncu_id_b, time_ns}]}
//   disagreements {pairs, time_ns, pct, groups,
//                  top [{kernel, kernels, time_ns, pct, op_a, op_b, top_op_a, top_op_b, module_a, module_b,
//                        first_id_a, first_id_b}]}
// Percentages of no time, unknown sources and names, and rows of unmatched kernels are null.
std::string render_comparison_json(const ProfileComparison& c);

}  // namespace opprof
