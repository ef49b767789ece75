#pragma once
// `opprof compare-attribution A.db B.db`: whether two profiles of the same workload (captured by two backends, say
// torch.profiler and the opprof tracer) attribute their kernels alike. Each profile's kernels are taken in
// start order and the two sequences are aligned by kernel name (kernel_match_name, the spelling-independent
// name the ncu matcher uses) with the longest-common-subsequence alignment of opprof/match; never by
// timestamps, which belong to two different captures. Grid and block are left out of the identity: two
// captures are two processes, and autotuning may launch a kernel of one name with another configuration.
// Each aligned pair then compares operator, top-level operator, module path and ncu row. Where a kernel
// name repeats and one side lacks one occurrence, the alignment may pair a neighbour of the same name
// instead; that shows as a disagreement of the pair.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "opprof/store/profile_reader.hpp"

namespace opprof {

struct CompareOptions {
  bool all_activity = false;  // also memcpy and memset (aligned by kind and copy direction)
  std::size_t top = 10;       // disagreement groups and ncu differences to list; 0: all
};

// How many aligned pairs agree on one attribute, weighted by A's kernel durations. Agreeing is having the
// same text as stored, so two kernels that both lack the attribute (unattributed on both sides) agree.
struct Agreement {
  std::size_t pairs = 0;     // aligned pairs that agree
  std::int64_t time_ns = 0;  // A's kernel time of those pairs
  double pct = std::numeric_limits<double>::quiet_NaN();  // of A's aligned kernel time; NaN without aligned time
};

// Kernels of one name that only one side has.
struct UnalignedName {
  std::string kernel;  // kernel_base_name of the name
  std::size_t kernels = 0;
  std::int64_t time_ns = 0;
};

struct CompareSide {
  std::string path;
  std::string source;         // meta timeline.source (kineto, tracer, nsys); "" when unknown
  std::size_t kernels = 0;    // activities compared (kind kernel, or all with all_activity)
  std::int64_t time_ns = 0;
  std::size_t unaligned = 0;  // activities without a counterpart in the other profile
  std::int64_t unaligned_ns = 0;
  std::vector<UnalignedName> unaligned_names;  // largest first, at most CompareOptions::top
  bool has_ncu = false;       // the profile has ncu rows
  std::size_t ncu_matched = 0;  // compared activities matched to an ncu row
};

// Aligned pairs with the same kernel name and the same attribution differences, summed.
struct Disagreement {
  std::string kernel;  // kernel_base_name of A's name
  std::string op_a, op_b, top_op_a, top_op_b, module_a, module_b;  // "" when none
  std::size_t kernels = 0;
  std::int64_t time_ns = 0;  // A's durations
  std::int64_t first_id_a = 0, first_id_b = 0;  // kernels.id of the first such pair in each profile
};

// An aligned pair that ncu matching treated differently: matched on one side only, or to another row.
struct NcuDifference {
  std::string kernel;  // kernel_base_name of A's name
  std::int64_t id_a = 0, id_b = 0;  // kernels.id
  std::int64_t row_a = -1, row_b = -1;  // ncu_rows.row; -1 when unmatched
  std::int64_t ncu_id_a = -1, ncu_id_b = -1;  // ncu's ID column; -1 when unmatched
  std::int64_t time_ns = 0;  // A's duration
};

struct ProfileComparison {
  CompareSide a, b;
  bool all_activity = false;
  std::size_t aligned = 0;         // pairs
  std::int64_t aligned_ns_a = 0;   // A's kernel time of the pairs: the denominator of every agreement
  std::int64_t aligned_ns_b = 0;
  bool ordered = true;  // false: too different to align in order; the k-th occurrences of each name were paired
  Agreement op, top_op, module;

  // ncu, over aligned pairs.
  std::size_t ncu_both_matched = 0;    // pairs matched to an ncu row in both profiles
  std::int64_t ncu_both_matched_ns = 0;  // A's time of those pairs
  std::size_t ncu_same_row = 0;        // of those, matched to the same row (ncu_rows.row: the position in
                                       // ncu's invocation order, so also comparable across two CSVs)
  std::int64_t ncu_same_row_ns = 0;    // A's time of the same-row pairs
  std::size_t ncu_only_a = 0;          // pairs matched in A only
  std::size_t ncu_only_b = 0;          // pairs matched in B only
  std::size_t ncu_differences_total = 0;  // pairs in the three disagreeing classes
  std::vector<NcuDifference> ncu_differences;  // the first ones in A's order, at most CompareOptions::top

  std::size_t disagreeing_pairs = 0;       // pairs that differ in operator, top-level operator or module
  std::int64_t disagreeing_ns = 0;
  std::size_t disagreement_groups = 0;
  std::vector<Disagreement> disagreements;  // largest A time first, at most CompareOptions::top
};

// part as a percentage of whole; NaN when whole is not positive (printed as "-").
double pct_of(std::int64_t part, std::int64_t whole);

// Throws InputError (naming the file) when a database cannot be read.
ProfileComparison compare_profiles(const ProfileReader& a, const ProfileReader& b, const CompareOptions& options = {});

}  // namespace opprof
