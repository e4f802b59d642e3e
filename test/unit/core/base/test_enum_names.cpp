// Unit tests of core/base/enum_names.hpp: one table per enum, read both ways.
#include <gtest/gtest.h>

#include "core/base/enum_names.hpp"

namespace {

enum class Colour { None, Red, Green };
constexpr auto kColourNames = m2g::enum_names<Colour::Green>({"", "red", "green"});

TEST(EnumNames, NameOfEveryValueAndAFallbackOutside)
{
    static_assert(m2g::name_of(kColourNames, Colour::Red)[0] == 'r', "usable at compile time");
    EXPECT_STREQ(m2g::name_of(kColourNames, Colour::None), "");
    EXPECT_STREQ(m2g::name_of(kColourNames, Colour::Green), "green");
    EXPECT_STREQ(m2g::name_of(kColourNames, static_cast<Colour>(7)), "?");
    EXPECT_STREQ(m2g::name_of(kColourNames, static_cast<Colour>(-1), "none"), "none");
}

TEST(EnumNames, EnumFromIsExactAndNeverReturnsTheUnwrittenValue)
{
    EXPECT_EQ(m2g::enum_from(kColourNames, "red"), Colour::Red);
    EXPECT_EQ(m2g::enum_from(kColourNames, "green"), Colour::Green);
    EXPECT_FALSE(m2g::enum_from(kColourNames, "Red"));
    EXPECT_FALSE(m2g::enum_from(kColourNames, ""));
    EXPECT_FALSE(m2g::enum_from(kColourNames, "blue"));
}

}  // namespace
