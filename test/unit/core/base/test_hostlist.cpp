// Unit tests of m2g's Slurm-compatible hostlist library. Every expected value
// below was checked against `scontrol show hostnames` / `scontrol show
// hostlist` of Slurm 22.05.8, except the cases marked "deviation", where
// Slurm yields wrong names, crashes or has no limit and m2g rejects the input.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/hostlist.hpp"

namespace {

using m2g::hostlist_compress;
using m2g::hostlist_expand;
using Names = std::vector<std::string>;

// Space-separated expansion, like `scontrol show hostnames | tr '\n' ' '`.
std::string expand(std::string_view expr) {
    std::string out;
    for (const std::string& name : hostlist_expand(expr)) {
        if (!out.empty()) out += ' ';
        out += name;
    }
    return out;
}

// Compression of comma-separated input, like `scontrol show hostlist`.
std::string compress(const std::string& csv) {
    Names names;
    std::stringstream in(csv);
    std::string item;
    while (std::getline(in, item, ',')) names.push_back(item);
    if (!csv.empty() && csv.back() == ',') names.emplace_back();
    return hostlist_compress(names);
}

// The ParseError message for expr, or "" when it does not throw.
std::string expand_error(std::string_view expr) {
    try {
        hostlist_expand(expr);
    } catch (const m2g::ParseError& e) {
        return e.what();
    }
    return "";
}

#define EXPECT_EXPAND_ERROR(expr) \
    EXPECT_THROW(hostlist_expand(expr), m2g::ParseError) << "expression: " << (expr)

// ---------------------------------------------------------------- expand

TEST(Hostlist, ExpandsSingleNamesAndRanges) {
    EXPECT_EQ(expand("n1"), "n1");
    EXPECT_EQ(expand("login"), "login");
    EXPECT_EQ(expand("n[1-3]"), "n1 n2 n3");
    EXPECT_EQ(expand("n[1,3,5-7]"), "n1 n3 n5 n6 n7");
    EXPECT_EQ(expand("[1-3]"), "1 2 3");
    EXPECT_EQ(expand("[1-3],[4-5]"), "1 2 3 4 5");
}

TEST(Hostlist, ExpandsTheBriefExampleInSlurmOrder) {
    const Names names = hostlist_expand("r[01-02]n[01-18],login1");
    ASSERT_EQ(names.size(), 37u);
    EXPECT_EQ(names[0], "r01n01");
    EXPECT_EQ(names[17], "r01n18");
    EXPECT_EQ(names[18], "r02n01");
    EXPECT_EQ(names[35], "r02n18");
    EXPECT_EQ(names[36], "login1");
}

TEST(Hostlist, WidthOfLowerBoundSetsZeroPadding) {
    EXPECT_EQ(expand("n[08-11]"), "n08 n09 n10 n11");
    EXPECT_EQ(expand("n[8-11]"), "n8 n9 n10 n11");
    EXPECT_EQ(expand("n[008-011]"), "n008 n009 n010 n011");
    EXPECT_EQ(expand("n[9-10]"), "n9 n10");
    EXPECT_EQ(expand("n[000001-3]"), "n000001 n000002 n000003");
    EXPECT_EQ(expand("n[1,01,001]"), "n1 n01 n001");
    EXPECT_EQ(expand("n000000000000000000000000000001"), "n000000000000000000000000000001");
}

TEST(Hostlist, MultipleBracketGroupsLastVariesFastest) {
    EXPECT_EQ(expand("r[01-02]n[01-03]"), "r01n01 r01n02 r01n03 r02n01 r02n02 r02n03");
    // With three groups Slurm loops over the middle group outermost.
    EXPECT_EQ(expand("a[1-2]b[1-2]c[1-2]"),
              "a1b1c1 a1b1c2 a2b1c1 a2b1c2 a1b2c1 a1b2c2 a2b2c1 a2b2c2");
    EXPECT_EQ(expand("r[1-2]-n[1-3]"), "r1-n1 r1-n2 r1-n3 r2-n1 r2-n2 r2-n3");
    EXPECT_EQ(expand("x[1,2]y[3]"), "x1y3 x2y3");
    EXPECT_EQ(expand("[01-02]x[1]"), "01x1 02x1");
    EXPECT_EQ(expand("n[1,2]-[3]"), "n1-3 n2-3");
    EXPECT_EQ(expand("a[1]x[2]"), "a1x2");
}

TEST(Hostlist, TextAfterTheLastBracketIsAnError) {
    EXPECT_EQ(expand_error("n[1-3]x"),
              "hostlist \"n[1-3]x\": unexpected text \"x\" after ']' at offset 6; a bracket group "
              "must end the name or be followed by another group, expected forms like "
              "r[01-08]n[1-18]");
    EXPECT_EXPAND_ERROR("n[1-3]-ib");
    EXPECT_EXPAND_ERROR("n[1-2]b");
    EXPECT_EXPAND_ERROR("n[1-2]]");
    EXPECT_EXPAND_ERROR("a[1[2]]");
    EXPECT_EXPAND_ERROR("a[1]]b[2]");
}

TEST(Hostlist, SeparatorsEmptyItemsAndWhitespace) {
    EXPECT_EQ(expand("a,b,c"), "a b c");
    EXPECT_EQ(expand("n[1-2],,n3"), "n1 n2 n3");
    EXPECT_EQ(expand(",n1,"), "n1");
    EXPECT_EQ(expand(",,,"), "");
    EXPECT_EQ(expand(""), "");
    EXPECT_EQ(expand(" "), "");
    EXPECT_EQ(expand("  a,,b  "), "a b");
    EXPECT_EQ(expand("n1 n2"), "n1 n2");
    EXPECT_EQ(expand("n1\tn2"), "n1 n2");
    EXPECT_EQ(expand("n[1-2] n[5-6],n7"), "n1 n2 n5 n6 n7");
    // Separators inside brackets do not split; the blank counts in the width.
    EXPECT_EQ(expand("n[1, 3]"), "n1 n03");
}

TEST(Hostlist, EmptyBracketElementsAreErrors) {
    EXPECT_EQ(expand_error("n[]"),
              "hostlist \"n[]\": empty element in bracket group at offset 3; expected a number "
              "or an ascending range lo-hi inside [], e.g. n[1-3,5]");
    EXPECT_EXPAND_ERROR("n[,]");
    EXPECT_EXPAND_ERROR("n[1,,2]");
    EXPECT_EXPAND_ERROR("n[1,]");
    EXPECT_EXPAND_ERROR("n[,1]");
    EXPECT_EXPAND_ERROR("a[1-2]b[]");
}

TEST(Hostlist, DescendingRangesAreErrors) {
    EXPECT_EQ(expand_error("n[3-1]"),
              "hostlist \"n[3-1]\": descending range \"3-1\" at offset 3; expected a number or "
              "an ascending range lo-hi inside [], e.g. n[1-3,5]");
    EXPECT_EXPAND_ERROR("n[10-9]");
    EXPECT_EXPAND_ERROR("n[010-9]");
    EXPECT_EXPAND_ERROR("n[1-2],m[2-1]");
}

TEST(Hostlist, DuplicatesAreKept) {
    EXPECT_EQ(expand("n1,n1"), "n1 n1");
    EXPECT_EQ(expand("n[1,1]"), "n1 n1");
    EXPECT_EQ(expand("n[1-3],n[2-4]"), "n1 n2 n3 n2 n3 n4");
}

TEST(Hostlist, NamesWithoutBrackets) {
    EXPECT_EQ(expand("node1,node2"), "node1 node2");
    EXPECT_EQ(expand("1,2,3"), "1 2 3");
    EXPECT_EQ(expand("007"), "007");
    EXPECT_EQ(expand("n1,n01"), "n1 n01");
    EXPECT_EQ(expand("a.b1,n-1"), "a.b1 n-1");
}

TEST(Hostlist, NumbersParseLikeStrtoul) {
    // Slurm reads bounds with strtoul(): the text left of '-' gives the width
    // even when it holds blanks, a '+' or trailing junk.
    EXPECT_EQ(expand("n[1a-3]"), "n01 n02 n03");
    EXPECT_EQ(expand("n[1-]"), "n1");
    EXPECT_EQ(expand("n[+1-2]"), "n01 n02");
    EXPECT_EQ(expand("n[1-+3]"), "n1 n2 n3");
    EXPECT_EQ(expand("n[ 1-2]"), "n01 n02");
    EXPECT_EQ(expand("n[1 -2]"), "n01 n02");
    EXPECT_EQ(expand("n[1- 3]"), "n1 n2 n3");
    EXPECT_EQ(expand("n[ +1]"), "n001");
    EXPECT_EQ(expand("n[0- -0]"), "n0");
    for (const char* bad : {"n[1--3]", "n[-1]", "n[0x1]", "n[1x]", "n[1-3a]", "n[a]", "n[1-2-3]",
                            "n[1-2 ]", "n[+-1]", "n[1-+ 3]", "n[1- -0]"})
        EXPECT_EXPAND_ERROR(bad);
    EXPECT_EQ(expand_error("n[1--3]"),
              "hostlist \"n[1--3]\": negative number in range \"1--3\" at offset 3; expected a "
              "number or an ascending range lo-hi inside [], e.g. n[1-3,5]");
}

TEST(Hostlist, ErrorsInEarlierGroupsAreErrors) {
    // Slurm logs "Invalid range" for these (and drops the hosts).
    EXPECT_EXPAND_ERROR("a[x]b[1-2]c[1-3]");
    EXPECT_EXPAND_ERROR("a[1-2]b[x]c[1-3]");
}

TEST(Hostlist, StrayClosingBracketsStayInTheName) {
    EXPECT_EQ(expand("n1]"), "n1]");
    EXPECT_EQ(expand("a]1"), "a]1");
    EXPECT_EQ(expand("a]b[1-2]"), "a]b1 a]b2");
}

TEST(Hostlist, UnclosedBracketIsAnError) {  // deviation: Slurm yields "r]"
    EXPECT_EQ(expand_error("r[01-"),
              "hostlist \"r[01-\": unclosed '[' at offset 2; expected forms like r[01-08]n[1-18]");
    EXPECT_EQ(expand_error("a[b[1-2]"),
              "hostlist \"a[b[1-2]\": unclosed '[' at offset 2; expected forms like "
              "r[01-08]n[1-18]");
    for (const char* bad : {"bad[12", "[12", "[", "a,[,b", "a[[1]", "n1,n[2"}) EXPECT_EXPAND_ERROR(bad);
}

TEST(Hostlist, SlurmRangeLimits) {
    EXPECT_EQ(hostlist_expand("n[0-65535]").size(), 65536u);
    EXPECT_EQ(hostlist_expand("n[70000-135535]").size(), 65536u);
    EXPECT_EQ(expand_error("n[0-65536]"),
              "hostlist \"n[0-65536]\": too many hosts (65537, at most 65536 per range) in "
              "\"0-65536\" at offset 3; expected a number or an ascending range lo-hi inside [], "
              "e.g. n[1-3,5]");
    // A group that is not the last may describe at most 65536 numbers.
    EXPECT_EQ(expand_error("a[0-65535,0]b[1]"),
              "hostlist \"a[0-65535,0]b[1]\": bracket group \"[0-65535,0]\" at offset 2 has 65537 "
              "numbers; at most 65536 are accepted in a group that is not the last one");
    EXPECT_EXPAND_ERROR("a[0-65536]b[1]");
    EXPECT_EXPAND_ERROR("a[0-65535,0]b[1]c[1]");  // deviation: Slurm drops hosts silently
}

TEST(Hostlist, MoreThanOneMillionHostsIsAnError) {  // deviation: Slurm has no limit
    const Names names = hostlist_expand("a[0-15]b[0-65535]");
    ASSERT_EQ(names.size(), m2g::kHostlistMaxHosts);
    EXPECT_EQ(names.back(), "a15b65535");
    EXPECT_EQ(expand_error("a[0-65535]b[0-16]"),
              "hostlist \"a[0-65535]b[0-16]\": describes more than 1048576 hosts; split it into "
              "smaller lists");
    std::string many;
    for (int i = 0; i < 17; ++i) many += "g" + std::to_string(i) + "n[0-65535],";
    EXPECT_EXPAND_ERROR(many);
    EXPECT_THROW(hostlist_compress({"a[0-65535]b[0-16]"}), m2g::ParseError);
}

TEST(Hostlist, MoreThan256MiBOfNamesIsAnError) {  // deviation: Slurm has no limit
    // 65536 names of 100003 characters each.
    const std::string padded = "n[" + std::string(100000, '0') + "1-65536]";
    EXPECT_NE(expand_error(padded).find("describes more than 268435456 bytes of host names; "
                                        "split it into smaller lists"),
              std::string::npos);
    EXPECT_THROW(hostlist_compress({padded}), m2g::ParseError);
    const std::string long_prefixes = "a[0-65535]" + std::string(5000, 'b') + "[1-2]";
    EXPECT_EXPAND_ERROR(long_prefixes);
    EXPECT_THROW(hostlist_compress({long_prefixes}), m2g::ParseError);
    const std::string wide_group = "a[" + std::string(100000, '0') + "0-65535]b[1]";
    EXPECT_EXPAND_ERROR(wide_group);
    // Exactly 256 MiB is accepted: 65536 names of 1 + 4095 characters
    // (compress counts the same bytes without building the names).
    const std::string at_limit = "x[" + std::string(4094, '0') + "1-65536]";
    EXPECT_TRUE(hostlist_compress({at_limit}) ==
                "x[" + std::string(4094, '0') + "1-" + std::string(4090, '0') + "65536]");
    EXPECT_THROW(hostlist_compress({"x[" + std::string(4095, '0') + "1-65536]"}), m2g::ParseError);
    EXPECT_THROW(hostlist_compress({at_limit, "y"}), m2g::ParseError);
}

TEST(Hostlist, TooManyElementsInOneGroupIsAnError) {  // Slurm: fatal()
    std::string expr = "n[";
    for (int i = 0; i < 262145; ++i) expr += i ? ",1" : "1";
    expr += "]";
    EXPECT_EXPAND_ERROR(expr);
}

TEST(Hostlist, VeryLargeNumbers) {
    EXPECT_EQ(expand("n[4294967295-4294967297]"), "n4294967295 n4294967296 n4294967297");
    EXPECT_EQ(expand("n18446744073709551614"), "n18446744073709551614");
    EXPECT_EQ(hostlist_expand("n[18446744073709551600-18446744073709551614]").size(), 15u);
    // deviation: Slurm clamps to 2^64-1, returns nothing or crashes.
    EXPECT_EQ(expand_error("n99999999999999999999999"),
              "hostlist \"n99999999999999999999999\": number in host name "
              "\"n99999999999999999999999\" at offset 1 is too large (the largest accepted is "
              "18446744073709551614)");
    for (const char* bad : {"n18446744073709551615", "n[99999999999999999999999]",
                            "n[0-99999999999999999999999]",
                            "n[18446744073709551614-18446744073709551615]"})
        EXPECT_EXPAND_ERROR(bad);
}

TEST(Hostlist, NulBytesAreErrors) {
    EXPECT_EXPAND_ERROR(std::string_view("n1\0n2", 5));
}

TEST(Hostlist, LongInputIsShortenedInMessages) {
    const std::string expr = std::string(200, 'a') + "[3-1]";
    const std::string msg = expand_error(expr);
    EXPECT_NE(msg.find("\"" + std::string(64, 'a') + "...\""), std::string::npos) << msg;
    EXPECT_LT(msg.size(), 300u);
}

// ---------------------------------------------------------------- compress

TEST(Hostlist, CompressesRuns) {
    EXPECT_EQ(compress("n1,n2,n3"), "n[1-3]");
    EXPECT_EQ(compress("node1,node2"), "node[1-2]");
    EXPECT_EQ(compress("n1,n3,n5"), "n[1,3,5]");
    EXPECT_EQ(compress("n1,n2,n4,n5"), "n[1-2,4-5]");
    EXPECT_EQ(compress("n0,n1"), "n[0-1]");
    EXPECT_EQ(compress("login1"), "login1");
    EXPECT_EQ(compress("login"), "login");
    EXPECT_EQ(compress("1,2,3"), "[1-3]");
    EXPECT_EQ(compress("n-1,n-2"), "n-[1-2]");
    EXPECT_EQ(compress("r01n01,r01n02,r02n01"), "r01n[01-02],r02n01");
    EXPECT_EQ(compress("n18446744073709551613,n18446744073709551614"),
              "n[18446744073709551613-18446744073709551614]");
}

TEST(Hostlist, CompressNeitherSortsNorDeduplicates) {
    EXPECT_EQ(compress("n3,n1,n2"), "n[3,1-2]");
    EXPECT_EQ(compress("n2,n1"), "n[2,1]");
    EXPECT_EQ(compress("n10,n9,n8"), "n[10,9,8]");
    EXPECT_EQ(compress("n1,n1"), "n[1,1]");
    EXPECT_EQ(compress("n1,n2,n1"), "n[1-2,1]");
    EXPECT_EQ(compress("a1,a1,a2"), "a[1,1-2]");
    EXPECT_EQ(compress("a2,a1,a1"), "a[2,1,1]");
    EXPECT_EQ(compress("a,a"), "a,a");
    // Only consecutive names with the same prefix share a bracket.
    EXPECT_EQ(compress("a,b,a1,a2,b1"), "a,b,a[1-2],b1");
    EXPECT_EQ(compress("a1,b1,a2"), "a1,b1,a2");
    EXPECT_EQ(compress("n1,m1,n2"), "n1,m1,n2");
    EXPECT_EQ(compress("gpu-a1,gpu-a2,gpu-b1"), "gpu-a[1-2],gpu-b1");
    // Digits followed by text are part of the prefix.
    EXPECT_EQ(compress("a1b,a2b"), "a1b,a2b");
}

TEST(Hostlist, CompressWidthRules) {
    EXPECT_EQ(compress("n1,n01"), "n[1,01]");
    EXPECT_EQ(compress("n01,n1"), "n[01,1]");
    EXPECT_EQ(compress("01,2"), "[01,2]");
    EXPECT_EQ(compress("0,00,000"), "[0,00,000]");
    // A run continues into more digits when no padding changes.
    EXPECT_EQ(compress("n9,n10"), "n[9-10]");
    EXPECT_EQ(compress("n8,n9,n10,n11"), "n[8-11]");
    EXPECT_EQ(compress("n99,n100,n101"), "n[99-101]");
    EXPECT_EQ(compress("n09,n10"), "n[09-10]");
    EXPECT_EQ(compress("n099,n100"), "n[099-100]");
    EXPECT_EQ(compress("n9,n010"), "n[9,010]");
    EXPECT_EQ(compress("n99,n0100"), "n[99,0100]");
    EXPECT_EQ(compress("n08,n9,n10"), "n[08,9-10]");
    EXPECT_EQ(compress("n010,n9"), "n[010,9]");
}

TEST(Hostlist, CompressAcceptsExpressionsLikeScontrol) {
    EXPECT_EQ(compress("n[1-2]b[1-2]"), "n1b[1-2],n2b[1-2]");
    EXPECT_EQ(compress("n[1-2],n[3-4]"), "n[1-4]");
    EXPECT_EQ(compress("n[1-3],n[2-5]"), "n[1-3,2-5]");
    EXPECT_EQ(compress("n[01-02],n[3-4]"), "n[01-02,3-4]");
    EXPECT_EQ(compress("n[ 1-2],n3"), "n[01-02,3]");
    EXPECT_EQ(compress("n[ 1-2],n03"), "n[01-03]");
    EXPECT_EQ(compress("x[1-2],[3]"), "x[1-2],3");
    EXPECT_EQ(compress("r[01-02]n[01-18],login1"), "r01n[01-18],r02n[01-18],login1");
    EXPECT_EQ(compress("n1 n2"), "n[1-2]");
    EXPECT_EQ(compress("n1]"), "n1]");
}

TEST(Hostlist, CompressEmptyInput) {
    EXPECT_EQ(hostlist_compress({}), "");
    EXPECT_EQ(hostlist_compress({"", ""}), "");
    EXPECT_EQ(compress("n1,,n2"), "n[1-2]");
}

TEST(Hostlist, CompressErrors) {
    EXPECT_THROW(compress("n[3-1]"), m2g::ParseError);
    EXPECT_THROW(compress("n[1-3]x"), m2g::ParseError);
    EXPECT_THROW(compress("r[01-"), m2g::ParseError);                    // deviation
    EXPECT_THROW(compress("n18446744073709551615,n0"), m2g::ParseError);  // deviation
    try {
        hostlist_compress({"n1", "n[5-2]"});
        ADD_FAILURE() << "no exception";
    } catch (const m2g::ParseError& e) {
        EXPECT_EQ(std::string(e.what()),
                  "hostlist \"n1,n[5-2]\": descending range \"5-2\" at offset 6; expected a "
                  "number or an ascending range lo-hi inside [], e.g. n[1-3,5]");
    }
}

TEST(Hostlist, RoundTripKeepsOrder) {
    for (const char* expr : {"r[01-02]n[01-18],login1", "n[3,1-2],x,n[10,9,8]", "a[1,1-2]",
                             "n[08,9-10]", "gpu-a[1-2],gpu-b1"}) {
        const Names names = hostlist_expand(expr);
        EXPECT_EQ(hostlist_expand(hostlist_compress(names)), names) << expr;
    }
}

// ---------------------------------------------------------------- speed

TEST(Hostlist, CompressOf100kNamesIsFast) {
    Names names;
    for (int i = 1; i <= 100000; ++i) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "cn%06d", i);
        names.emplace_back(buf);
    }
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(hostlist_compress(names), "cn[000001-100000]");
    Names shuffled = names;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(42));
    const std::string ranged = hostlist_compress(shuffled);
    EXPECT_EQ(hostlist_expand(ranged), shuffled);
    Names distinct;  // no shared prefixes at all
    for (int i = 0; i < 100000; ++i) distinct.push_back("h" + std::to_string(i) + "x");
    EXPECT_EQ(hostlist_expand(hostlist_compress(distinct)), distinct);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
    EXPECT_LT(ms, 5000) << "compress/expand of 100k names took " << ms << " ms";
}

TEST(Hostlist, PathologicalInputsStayLinear) {
    // Many unmatched ']' / many groups / long digit runs in prefixes.
    const auto t0 = std::chrono::steady_clock::now();
    std::string brackets;
    for (int i = 0; i < 50000; ++i) brackets += "a]" + std::to_string(i) + ",";
    EXPECT_EQ(hostlist_expand(brackets).size(), 50000u);
    std::string groups = "n";
    for (int i = 0; i < 5000; ++i) groups += "[1]";
    EXPECT_EQ(hostlist_expand(groups).size(), 1u);
    const std::string digits(100000, '7');
    EXPECT_EQ(hostlist_compress({digits + "x1", digits + "x2"}), digits + "x[1-2]");
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - t0)
                        .count();
    EXPECT_LT(ms, 5000) << ms << " ms";
}

}  // namespace
