#pragma once
// One name table per enumeration, as Kineto keeps its ActivityType names: an array of names indexed by
// the enum's value, next to the enum, with a static_assert that it has one name per enumerator. The same
// table serves printing and parsing, so a name is spelled once. Where the names are part of the profile
// database's contract (docs/schema.md), changing one changes the schema.
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace opprof {

template <typename Enum, std::size_t N>
constexpr const char* enum_name(const std::array<const char*, N>& names, Enum value) {
  const auto i = static_cast<std::size_t>(value);
  return i < N ? names[i] : "unknown";
}

template <typename Enum, std::size_t N>
constexpr std::optional<Enum> enum_from_name(const std::array<const char*, N>& names, std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (name == names[i]) return static_cast<Enum>(i);
  return std::nullopt;
}

}  // namespace opprof
