#pragma once
// `opprof diff base.db new.db`: how the performance of a workload changed between two profiles (before
// and after a rewrite, eager and compiled): kernel time per operator, per module (inclusive, from the
// module tree) and per kernel family before and after, with the speedup; the kernel families added and
// removed; the counters that changed most; and the total speedup of profiled kernel time. Reads only the
// two databases. Profiles of different GPUs or metric sets are diffed as far as they are comparable,
// with a warning saying what is not. Two multi-process jobs are also compared rank by rank: each rank's
// kernel time, communication and exposed communication, and each operator's time on each rank.
#include <cstdint>
#include <string>
#include <vector>

#include "opprof/store/profile_reader.hpp"

namespace opprof {

// One group (operator, module path, kernel family) in the two profiles.
struct DiffRow {
  std::string key;
  bool in_base = false, in_new = false;
  std::int64_t base_ns = 0, new_ns = 0;
  std::uint64_t base_kernels = 0, new_kernels = 0;
  std::string base_bottleneck, new_bottleneck;
  // base_ns / new_ns: above 1 faster; NaN unless the group has time in both.
  double speedup() const;
};

// A counter of an operator present in both profiles, before and after.
struct CounterChange {
  std::string op;
  std::string metric;
  std::string unit;
  double base = 0, next = 0;
  // How much it matters: the relative change |new - base| / max(|base|, |new|) (for a percentage of peak
  // |new - base| / 100) times the operator's larger share of kernel time (0..1).
  double score = 0;
};

struct DiffSide {
  std::string path;
  std::int64_t kernel_time_ns = 0;
  std::uint64_t kernels = 0;
  std::vector<std::string> gpus;  // device names of the capture, by device
  std::string chip;
  bool has_ncu = false;
  std::vector<std::string> metrics;  // present metrics
};

// One rank of two multi-process jobs: matched by rank number, or by position among the processes that ran
// GPU work when either job's processes have no rank.
struct RankDiff {
  std::string label;  // "rank 0", or "process 1" when matched by position
  bool in_base = false, in_new = false;
  RankFigures base{}, next{};  // a side's figures; zero where that side lacks the rank or its timeline
  std::string base_status, new_status;  // processes.status (ok, truncated, missing, ...); "" where absent
  // base kernel time / new kernel time; NaN unless both have kernel time.
  double speedup() const;
};

// One operator on one rank of the two jobs.
struct RankOperatorDiff {
  std::string rank;  // RankDiff::label
  DiffRow row;
};

struct DiffOptions {
  std::size_t counters = 10;  // counter changes kept; 0: all
};

struct ProfileDiff {
  DiffSide base, next;
  std::vector<DiffRow> operators;  // every operator of either, larger time (of the two) first
  std::vector<DiffRow> modules;    // every module path and prefix of either, inclusive time; same order
  std::vector<DiffRow> families;   // every kernel family of either; same order
  std::vector<CounterChange> counters;  // largest score first
  // Both profiles multi-process jobs: their ranks, in rank order, and each operator on each rank, the
  // largest change in time first. Empty otherwise (a warning says why when only one is a job).
  std::vector<RankDiff> ranks;
  std::vector<RankOperatorDiff> rank_operators;
  std::vector<std::string> warnings;    // one sentence each: what is not comparable
  // base kernel time / new kernel time: above 1 the new profile is faster; NaN when either is 0.
  double speedup() const;
  // How much slower the new profile is, in percent of the base's kernel time (negative: faster).
  double slowdown_pct() const;
};

ProfileDiff diff_profiles(const ProfileReader& base, const ProfileReader& next, const DiffOptions& options = {});

}  // namespace opprof
