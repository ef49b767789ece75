#pragma once
// The table each kind of group lives in. Every other name the database stores is the enumeration's own
// name table (kActivityKindNames, kRangeKindNames, kAttributionPathNames, ... next to each enum), which is
// part of the database's contract (docs/schema.md).
#include <array>
#include <string_view>

#include "opprof/metrics/aggregate.hpp"

namespace opprof::schema {

inline constexpr std::array<const char*, 3> kGroupTables = {"operators", "modules", "kernel_families"};
static_assert(kGroupTables.size() == kGroupByNames.size(), "one table per GroupBy");
inline std::string_view group_table(GroupBy g) { return enum_name(kGroupTables, g); }

}  // namespace opprof::schema
