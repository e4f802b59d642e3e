// m2g core: Slurm-compatible hostlist expressions.
//
// hostlist_expand() and hostlist_compress() reproduce what Slurm 22.05
// (1-dimensional clusters, i.e. every non-Cray, non-3D cluster) yields for
// `scontrol show hostnames EXPR` and `scontrol show hostlist NAMES`.
// Behaviour summary (verified against scontrol 22.05.8):
//
//  * Items are separated by ',', ' ' or '\t'; separators inside [...] do not
//    split an item; empty items are skipped. Other characters, including
//    stray ']' and other whitespace, are part of a name.
//  * A name's trailing digits are its number ("node007": prefix "node",
//    number 7, width 3); names without trailing digits are kept as they are.
//  * A bracket group holds comma-separated numbers or ascending ranges lo-hi.
//    The width of the text left of '-' is the zero-padding width for every
//    number of that range ("n[08-10]" -> n08 n09 n10, "n[8-10]" -> n8 n9 n10).
//    Like Slurm's strtoul, a number may carry leading whitespace or '+', both
//    counted in the width ("n[ 1-2]" -> n01 n02).
//  * With several groups the last one varies fastest; the earlier ones vary
//    from the first (fastest) to the one before the last (slowest):
//    "r[1-2]n[1-3]" -> r1n1 r1n2 r1n3 r2n1 ..., "a[1-2]b[1-2]c[1-2]" ->
//    a1b1c1 a1b1c2 a2b1c1 a2b1c2 a1b2c1 ... Text between groups is kept
//    ("r[1-2]-n[1-3]"); text after the last ']' is an error ("n[1-3]x").
//  * Descending ranges, empty elements ("n[1,,2]"), "-1", "1--2", hex ("0x1"),
//    more than 65536 hosts in one range or in one group that is not the last,
//    and more than 262144 elements in one group are errors.
//  * Expansion keeps duplicates and order ("n[1-3],n[2-4]" -> n1 n2 n3 n2 ...).
//  * Compression keeps the input order: it never sorts and never removes
//    duplicates. It only joins a name or range onto the previous one when
//    both have the same prefix, the number continues the previous range by
//    exactly one and the zero padding is compatible; consecutive ranges with
//    the same prefix share one bracket: "n3,n1,n2" -> "n[3,1-2]",
//    "n1,n1" -> "n[1,1]", "n1,n01" -> "n[1,01]", "n9,n10" -> "n[9-10]",
//    "n08,n9" -> "n[08,9]", "a,b,a1,a2" -> "a,b,a[1-2]". Prefixes compare
//    like Slurm's strnatcmp(): whitespace in them is ignored.
//
// Deliberate deviations, where Slurm silently produces wrong names, drops
// hosts, crashes or has no limit (all are ParseError here):
//  * an unclosed '[' ("r[01-"; Slurm would yield the host "r]");
//  * numbers of 18446744073709551615 (2^64-1) or more (Slurm clamps them to
//    2^64-1, returns nothing or crashes on ranges ending there);
//  * a group before the second-to-last one with more than 65536 numbers
//    (Slurm silently drops the hosts past the limit);
//  * more than 1,048,576 hosts, or more than 256 MiB of host name text, in
//    total (Slurm has no total limit); checked before anything is built;
//  * NUL bytes in the input.
// Errors Slurm only logs (a bad element in a group before the second-to-last
// one: "a[x]b[1-2]c[1]" yields nothing but an error line) are errors here too.
// `scontrol show hostlist` reads a file when its argument starts with '/';
// hostlist_compress() never reads files.
//
// Error messages are one sentence naming the offending part; offsets in them
// are 1-based character positions within the expression.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"  // ParseError, thrown by both functions

namespace m2g {

// Largest number of hosts one expression may describe (expand or compress).
inline constexpr std::size_t kHostlistMaxHosts = 1048576;
// Largest total length, in bytes, of the names one expression may describe.
inline constexpr std::size_t kHostlistMaxNameBytes = std::size_t{256} << 20;

// Expand a Slurm hostlist expression ("r[01-02]n[01-18],login1") into names,
// in the order Slurm yields them. Throws m2g::ParseError.
std::vector<std::string> hostlist_expand(std::string_view expr);

// Compress names into the ranged string `scontrol show hostlist` prints for
// the same input (the names joined with ','). Throws m2g::ParseError.
std::string hostlist_compress(const std::vector<std::string>& names);

// Natural order of names: digit runs compare as numbers ("n2" < "n10",
// "mlx5_2" < "mlx5_10"); equal numbers with more leading zeros sort later.
bool natural_less(const std::string& a, const std::string& b);

}  // namespace m2g
