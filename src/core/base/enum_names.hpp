// m2g core: the words an enum's values are written as, one table per enum.
//
//   constexpr auto kThermalNames = enum_names<ThermalState::Critical>({"ok", "warm", "hot", "critical"});
//   const char* to_string(ThermalState s) { return name_of(kThermalNames, s, "ok"); }
//   std::optional<ThermalState> t = enum_from(kThermalNames, "hot");
//
// names[i] names the enumerator whose value is i, so the enumerators count
// 0, 1, 2, ... in declaration order; the table is built with the last one
// named, and fails to compile unless it names every enumerator. "" names a
// value that is never written (WaitCause::None, Locality::Unset): enum_from
// never returns it. Tables of words other code also reads sit in keys.hpp
// as plain arrays (kw::kWaitCauses); enum_names() takes those too.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <type_traits>

namespace m2g {

template <typename E, std::size_t N>
struct EnumNames {
    std::array<const char*, N> names;  // names[i] names E(i)
};

template <auto Last, std::size_t N>
constexpr EnumNames<decltype(Last), N> enum_names(const std::array<const char*, N>& names)
{
    static_assert(std::is_enum_v<decltype(Last)>, "enum_names<E::Last>: Last is the enum's last enumerator");
    static_assert(N == static_cast<std::size_t>(Last) + 1, "one name per enumerator, in declaration order");
    return {names};
}

template <auto Last, std::size_t N>
constexpr EnumNames<decltype(Last), N> enum_names(const char* const (&names)[N])
{
    std::array<const char*, N> a{};
    for (std::size_t i = 0; i < N; ++i)
        a[i] = names[i];
    return enum_names<Last>(a);
}

// The name of `v`; `unknown` for a value outside the table.
template <typename E, std::size_t N>
constexpr const char* name_of(const EnumNames<E, N>& t, E v, const char* unknown = "?")
{
    const auto i = static_cast<std::size_t>(v);
    return i < N ? t.names[i] : unknown;
}

// The value `name` names, exactly (case included), or nullopt.
template <typename E, std::size_t N>
constexpr std::optional<E> enum_from(const EnumNames<E, N>& t, std::string_view name)
{
    for (std::size_t i = 0; i < N; ++i)
        if (*t.names[i] && name == t.names[i])
            return static_cast<E>(i);
    return std::nullopt;
}

}  // namespace m2g
