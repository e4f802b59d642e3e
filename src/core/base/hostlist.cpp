// m2g core: Slurm-compatible hostlist expansion and compression.
// See hostlist.hpp for the behaviour; this is an independent implementation
// written to reproduce what scontrol 22.05 prints (1-dimensional clusters).
#include "core/base/hostlist.hpp"

#include <cstdint>
#include <limits>
#include <utility>

#include "core/base/error.hpp"

namespace m2g {
namespace {

// Limits Slurm enforces (errors there, errors here).
constexpr std::uint64_t kMaxHostsPerRange = 65536;  // one lo-hi range
constexpr std::uint64_t kMaxPrefixHosts = 65536;    // one non-last group
constexpr std::size_t kMaxGroupElements = 262144;   // elements in one [...]
// Our own limits: numbers Slurm mishandles and absurd expansions.
constexpr std::uint64_t kMaxNumber = std::numeric_limits<std::uint64_t>::max() - 1;
constexpr std::uint64_t kMaxBytes = kHostlistMaxNameBytes;

constexpr const char* kForms = "expected forms like r[01-08]n[1-18]";
constexpr const char* kRangeForms =
    "expected a number or an ascending range lo-hi inside [], e.g. n[1-3,5]";

bool is_separator(char c) { return c == ',' || c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_c_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// Quote a piece of user input for an error message: escaped, and shortened
// when long so that a 100k-name list does not end up in one message.
std::string quoted(std::string_view s) {
    constexpr std::size_t kShown = 64;
    static const char kHex[] = "0123456789abcdef";
    std::string out = "\"";
    const std::size_t n = s.size() < kShown ? s.size() : kShown;
    for (std::size_t i = 0; i < n; ++i) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c >= 0x7f) {
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 15];
        } else {
            out += static_cast<char>(c);
        }
    }
    if (n < s.size()) out += "...";
    out += '"';
    return out;
}

// Append v in decimal, left-padded with zeros to at least `width` digits
// (printf "%0*lu").
void append_number(std::string& out, std::uint64_t v, std::size_t width) {
    char digits[24];
    std::size_t n = 0;
    do {
        digits[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v != 0);
    if (width > n) out.append(width - n, '0');
    while (n > 0) out += digits[--n];
}

std::size_t decimal_digits(std::uint64_t v) {
    std::size_t n = 1;
    while ((v /= 10) != 0) ++n;
    return n;
}

std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
    return a > std::numeric_limits<std::uint64_t>::max() - b ? std::numeric_limits<std::uint64_t>::max()
                                                             : a + b;
}

std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a)
        return std::numeric_limits<std::uint64_t>::max();
    return a * b;
}

// Number of zeros printing `v` with `width` adds.
std::size_t zero_padding(std::uint64_t v, std::size_t width) {
    const std::size_t n = decimal_digits(v);
    return width > n ? width - n : 0;
}

// Total length of the numbers lo..hi printed with zero padding to width.
std::uint64_t number_chars(std::uint64_t lo, std::uint64_t hi, std::size_t width) {
    std::uint64_t total = 0;
    std::uint64_t decade_lo = 0, decade_hi = 9;  // numbers with `digits` digits
    for (std::size_t digits = 1;; ++digits) {
        if (hi >= decade_lo && lo <= decade_hi) {
            const std::uint64_t from = lo > decade_lo ? lo : decade_lo;
            const std::uint64_t to = hi < decade_hi ? hi : decade_hi;
            total = sat_add(total, sat_mul(to - from + 1, width > digits ? width : digits));
        }
        if (decade_hi >= hi || digits == 20) return total;
        decade_lo = decade_hi + 1;
        decade_hi = digits == 19 ? std::numeric_limits<std::uint64_t>::max() : decade_lo * 10 - 1;
    }
}

// Slurm's width compatibility test for two numbers n (width wn) and m
// (width wm): equal widths, or one width can be applied to both numbers
// without changing the zero padding of either. On success the width that
// would change a padding is replaced by the other one.
bool widths_compatible(std::uint64_t n, std::size_t& wn, std::uint64_t m, std::size_t& wm) {
    if (wn == wm) return true;
    const bool n_changes = zero_padding(n, wn) != zero_padding(n, wm);
    const bool m_changes = zero_padding(m, wm) != zero_padding(m, wn);
    if (n_changes && m_changes) return false;
    if (n_changes)
        wm = wn;
    else
        wn = wm;
    return true;
}

// Equality under Slurm's natural string order (strnatcmp() == 0): whitespace
// is ignored between characters, but runs of digits must match exactly.
bool natural_equal(std::string_view a, std::string_view b) {
    std::size_t i = 0, j = 0;
    for (;;) {
        while (i < a.size() && is_c_space(a[i])) ++i;
        while (j < b.size() && is_c_space(b[j])) ++j;
        const bool a_end = i >= a.size(), b_end = j >= b.size();
        if (a_end || b_end) return a_end && b_end;
        if (is_digit(a[i]) && is_digit(b[j])) {
            std::size_t k = 0;
            while (i + k < a.size() && j + k < b.size() && is_digit(a[i + k]) &&
                   is_digit(b[j + k]) && a[i + k] == b[j + k])
                ++k;
            const bool a_more = i + k < a.size() && is_digit(a[i + k]);
            const bool b_more = j + k < b.size() && is_digit(b[j + k]);
            if (a_more || b_more) return false;
            i += k;
            j += k;
            continue;
        }
        if (a[i] != b[j]) return false;
        ++i;
        ++j;
    }
}

// C strtoul(s, &end, 10) on a string_view: optional leading whitespace,
// optional sign, digits; overflow saturates, '-' negates modulo 2^64.
struct ParsedNumber {
    std::uint64_t value = 0;
    std::size_t end = 0;  // 0: nothing converted
};

ParsedNumber c_strtoul(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size() && is_c_space(s[i])) ++i;
    bool negative = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
        negative = s[i] == '-';
        ++i;
    }
    if (i >= s.size() || !is_digit(s[i])) return {};
    constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t v = 0;
    bool overflow = false;
    for (; i < s.size() && is_digit(s[i]); ++i) {
        const std::uint64_t d = static_cast<std::uint64_t>(s[i] - '0');
        if (v > (kMax - d) / 10) overflow = true;
        v = v * 10 + d;
    }
    if (overflow) return {kMax, i};
    return {negative ? (0 - v) : v, i};
}

// One lo-hi element of a bracket group.
struct NumRange {
    std::uint64_t lo;
    std::uint64_t hi;
    std::size_t width;
};

std::uint64_t number_chars(const NumRange& r) { return number_chars(r.lo, r.hi, r.width); }

// A run of hosts sharing a prefix: prefix + number(lo..hi, zero padded to
// width), or a single host without numeric suffix (`single`).
struct HostRange {
    std::string prefix;
    std::uint64_t lo = 0;
    std::uint64_t hi = 0;
    std::size_t width = 0;
    bool single = false;

    std::uint64_t count() const { return single ? 1 : hi - lo + 1; }
};

bool same_prefix(const HostRange& a, const HostRange& b) {
    return a.single == b.single && natural_equal(a.prefix, b.prefix);
}

// Both ranges go into one bracket of the ranged string.
bool same_bracket(const HostRange& a, const HostRange& b) {
    return !a.single && !b.single && natural_equal(a.prefix, b.prefix);
}

// First position >= from of one character, for queries whose `from` never
// decreases (keeps tokenizing linear).
class ForwardFinder {
  public:
    ForwardFinder(std::string_view s, char c) : s_(s), c_(c) {}
    std::size_t next(std::size_t from) {
        if (!valid_ || pos_ < from) {
            pos_ = s_.find(c_, from);
            valid_ = true;
        }
        return pos_;
    }

  private:
    std::string_view s_;
    char c_;
    std::size_t pos_ = 0;
    bool valid_ = false;
};

class Parser {
  public:
    explicit Parser(std::string_view expr) : expr_(expr) {}

    std::vector<HostRange> parse() {
        const std::size_t nul = expr_.find('\0');
        if (nul != std::string_view::npos)
            fail("NUL byte at offset " + std::to_string(nul + 1) +
                 "; host names are printable text, " + kForms);
        tokenize();
        return std::move(ranges_);
    }

    std::uint64_t host_count() const { return nhosts_; }

  private:
    [[noreturn]] void fail_bytes() const {
        fail("describes more than " + std::to_string(kMaxBytes) +
             " bytes of host names; split it into smaller lists");
    }

    [[noreturn]] void fail(const std::string& what) const {
        throw ParseError("hostlist " + quoted(expr_) + ": " + what);
    }

    static std::string at(std::size_t offset) { return " at offset " + std::to_string(offset + 1); }

    // Items are split at ',', ' ' and '\t', except where the separator lies
    // between a '[' and the first ']' after it.
    void tokenize() {
        ForwardFinder open(expr_, '['), close(expr_, ']');
        const std::size_t n = expr_.size();
        std::size_t pos = 0;
        for (;;) {
            while (pos < n && is_separator(expr_[pos])) ++pos;
            if (pos >= n) return;
            const std::size_t begin = pos;
            std::size_t scan = pos;  // brackets before `scan` are accounted for
            for (;;) {
                while (pos < n && !is_separator(expr_[pos])) ++pos;
                bool extended = false;
                for (;;) {
                    const std::size_t ob = open.next(scan);
                    if (ob == std::string_view::npos || ob > pos) break;
                    const std::size_t cb = close.next(scan);
                    if (cb == std::string_view::npos || cb < ob) break;
                    if (cb < pos) {
                        scan = cb + 1;
                        continue;
                    }
                    pos = cb;  // the item runs at least to this ']'
                    extended = true;
                    break;
                }
                if (!extended) break;
            }
            item(begin, pos);
        }
    }

    void item(std::size_t begin, std::size_t end) {
        const std::string_view tok = expr_.substr(begin, end - begin);
        const std::size_t lb = tok.rfind('[');
        if (lb == std::string_view::npos) {
            push_host(tok, begin);
            return;
        }
        const std::size_t rb = tok.find(']', lb + 1);
        if (rb == std::string_view::npos) fail("unclosed '['" + at(begin + lb) + "; " + kForms);
        if (rb + 1 != tok.size())
            fail("unexpected text " + quoted(tok.substr(rb + 1)) + " after ']'" +
                 at(begin + rb) +
                 "; a bracket group must end the name or be followed by another "
                 "group, " +
                 kForms);
        std::vector<NumRange> last = parse_group(tok.substr(lb + 1, rb - lb - 1), begin + lb + 1);
        push_groups(tok.substr(0, lb), begin, last);
    }

    // "1-3,5,07-09" -> ranges; `offset` is the position of the text.
    std::vector<NumRange> parse_group(std::string_view text, std::size_t offset) const {
        std::vector<NumRange> out;
        std::size_t pos = 0;
        for (;;) {
            const std::size_t comma = text.find(',', pos);
            const std::size_t len = comma == std::string_view::npos ? text.size() - pos : comma - pos;
            if (out.size() == kMaxGroupElements)
                fail("bracket group" + at(offset - 1) + " has more than " +
                     std::to_string(kMaxGroupElements) + " elements; " + kRangeForms);
            out.push_back(parse_element(text.substr(pos, len), offset + pos));
            if (comma == std::string_view::npos) return out;
            pos = comma + 1;
        }
    }

    NumRange parse_element(std::string_view el, std::size_t offset) const {
        auto bad = [&](const std::string& what) {
            fail(what + " " + quoted(el) + at(offset) + "; " + kRangeForms);
        };
        if (el.empty()) fail("empty element in bracket group" + at(offset) + "; " + kRangeForms);
        if (el.find('x') != std::string_view::npos) bad("invalid range");
        const std::size_t dash = el.find('-');
        const std::string_view lo_text = el.substr(0, dash);
        const std::string_view hi_text =
            dash == std::string_view::npos ? std::string_view() : el.substr(dash + 1);
        if (!hi_text.empty() && hi_text[0] == '-') bad("negative number in range");
        const ParsedNumber lo = c_strtoul(lo_text);
        if (lo.end == 0) bad("invalid range");
        std::uint64_t hi = lo.value;
        if (!hi_text.empty()) {
            const ParsedNumber h = c_strtoul(hi_text);
            if (h.end == 0 || h.end != hi_text.size()) bad("invalid range");
            hi = h.value;
        } else if (lo.end != lo_text.size()) {
            bad("invalid range");
        }
        if (lo.value > kMaxNumber || hi > kMaxNumber)
            bad("number too large (the largest accepted is " + std::to_string(kMaxNumber) + ") in");
        if (lo.value > hi) bad("descending range");
        if (hi - lo.value + 1 > kMaxHostsPerRange)
            bad("too many hosts (" + std::to_string(hi - lo.value + 1) + ", at most " +
                std::to_string(kMaxHostsPerRange) + " per range) in");
        return {lo.value, hi, lo_text.size()};
    }

    void check_budget(std::uint64_t more) const {
        if (more > kHostlistMaxHosts - nhosts_)
            fail("describes more than " + std::to_string(kHostlistMaxHosts) +
                 " hosts; split it into smaller lists");
    }

    void check_bytes(std::uint64_t more) {
        if (more > kMaxBytes - bytes_) fail_bytes();
        bytes_ += more;
    }

    // prefix: the item left of its last '[' (may hold further groups);
    // last: the ranges of the last group.
    void push_groups(std::string_view prefix, std::size_t begin, const std::vector<NumRange>& last) {
        struct Level {
            std::vector<NumRange> ranges;
            std::string_view after;  // text up to the next group
            std::uint64_t count = 0;  // numbers in the group
            std::uint64_t chars = 0;  // their formatted length
            std::vector<std::string> values;  // formatted numbers
        };
        // Peel groups off the prefix from the right. The rightmost group is
        // the outermost loop, the leftmost the innermost one.
        std::vector<Level> levels;
        std::uint64_t combos = 1;
        std::uint64_t fixed = 0;  // name characters outside the groups
        std::string_view rest = prefix;
        for (;;) {
            const std::size_t ob = rest.rfind('[');
            if (ob == std::string_view::npos) break;
            const std::size_t cb = rest.rfind(']');
            if (cb == std::string_view::npos || cb < ob)
                fail("unclosed '['" + at(begin + ob) + "; " + kForms);
            Level level;
            level.ranges = parse_group(rest.substr(ob + 1, cb - ob - 1), begin + ob + 1);
            for (const NumRange& r : level.ranges) {
                level.count += r.hi - r.lo + 1;
                level.chars = sat_add(level.chars, number_chars(r));
            }
            if (level.count > kMaxPrefixHosts)
                fail("bracket group " + quoted(rest.substr(ob, cb - ob + 1)) + at(begin + ob) +
                     " has " + std::to_string(level.count) + " numbers; at most " +
                     std::to_string(kMaxPrefixHosts) +
                     " are accepted in a group that is not the last one");
            combos *= level.count;  // each factor <= 65536, and combos <= 2^20 before
            if (combos > kHostlistMaxHosts) check_budget(combos);
            level.after = rest.substr(cb + 1);
            fixed += level.after.size();
            levels.push_back(std::move(level));
            rest = rest.substr(0, ob);
        }
        fixed += rest.size();
        std::uint64_t per_name = 0, last_chars = 0;
        for (const NumRange& r : last) {
            per_name += r.hi - r.lo + 1;
            last_chars = sat_add(last_chars, number_chars(r));
        }
        if (per_name > kHostlistMaxHosts) check_budget(per_name);
        check_budget(per_name * combos);  // both factors <= 2^20 here

        // Exact size of the expansion, before anything is built:
        // per_name * (sum of name lengths over combos) + combos * last_chars.
        std::uint64_t name_chars = sat_mul(combos, fixed);
        for (const Level& level : levels)
            name_chars = sat_add(name_chars, sat_mul(combos / level.count, level.chars));
        check_bytes(sat_add(sat_mul(per_name, name_chars), sat_mul(combos, last_chars)));

        for (Level& level : levels) {
            level.values.reserve(level.count);
            for (const NumRange& r : level.ranges) {
                for (std::uint64_t v = r.lo;; ++v) {
                    std::string text;
                    append_number(text, v, r.width);
                    level.values.push_back(std::move(text));
                    if (v == r.hi) break;
                }
            }
        }
        std::vector<std::size_t> index(levels.size(), 0);
        for (;;) {
            std::string name(rest);
            for (std::size_t l = levels.size(); l-- > 0;) {
                name += levels[l].values[index[l]];
                name += levels[l].after;
            }
            for (const NumRange& r : last) {
                HostRange hr;
                hr.prefix = name;
                hr.lo = r.lo;
                hr.hi = r.hi;
                hr.width = r.width;
                push(std::move(hr));
            }
            std::size_t l = levels.size();
            for (;;) {
                if (l == 0) return;
                --l;
                if (++index[l] < levels[l].values.size()) break;
                index[l] = 0;
            }
        }
    }

    // A plain name: trailing digits are its number, the rest its prefix.
    void push_host(std::string_view name, std::size_t begin) {
        std::size_t d = name.size();
        while (d > 0 && is_digit(name[d - 1])) --d;
        check_bytes(name.size());
        HostRange hr;
        if (d == name.size()) {
            hr.prefix = std::string(name);
            hr.single = true;
        } else {
            const ParsedNumber num = c_strtoul(name.substr(d));
            if (num.value > kMaxNumber)
                fail("number in host name " + quoted(name) + at(begin) +
                     " is too large (the largest accepted is " + std::to_string(kMaxNumber) + ")");
            hr.prefix = std::string(name.substr(0, d));
            hr.lo = hr.hi = num.value;
            hr.width = name.size() - d;
        }
        push(std::move(hr));
    }

    // Append a range; like Slurm, join it onto the previous one when it
    // continues it directly with the same prefix and compatible padding.
    void push(HostRange hr) {
        const std::uint64_t n = hr.count();
        check_budget(n);
        nhosts_ += n;
        if (!ranges_.empty()) {
            HostRange& tail = ranges_.back();
            if (tail.hi == hr.lo - 1 && same_prefix(tail, hr) &&
                widths_compatible(tail.lo, tail.width, hr.lo, hr.width)) {
                tail.hi = hr.hi;
                return;
            }
        }
        ranges_.push_back(std::move(hr));
    }

    std::string_view expr_;
    std::vector<HostRange> ranges_;
    std::uint64_t nhosts_ = 0;
    std::uint64_t bytes_ = 0;  // length of all names described so far
};

}  // namespace

std::vector<std::string> hostlist_expand(std::string_view expr) {
    Parser parser(expr);
    const std::vector<HostRange> ranges = parser.parse();
    std::vector<std::string> names;
    names.reserve(static_cast<std::size_t>(parser.host_count()));
    for (const HostRange& r : ranges) {
        if (r.single) {
            names.push_back(r.prefix);
            continue;
        }
        for (std::uint64_t v = r.lo;; ++v) {
            std::string name = r.prefix;
            append_number(name, v, r.width);
            names.push_back(std::move(name));
            if (v == r.hi) break;
        }
    }
    return names;
}

std::string hostlist_compress(const std::vector<std::string>& names) {
    std::string joined;
    std::size_t total = 0;
    for (const std::string& s : names) total += s.size() + 1;
    joined.reserve(total);
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) joined += ',';
        joined += names[i];
    }
    const std::vector<HostRange> ranges = Parser(joined).parse();

    // Consecutive ranges with the same prefix share one bracket, which is
    // written when it holds more than one host.
    std::string out;
    for (std::size_t i = 0; i < ranges.size();) {
        if (i > 0) out += ',';
        const HostRange& first = ranges[i];
        const bool bracket = first.count() > 1 ||
                             (i + 1 < ranges.size() && same_bracket(first, ranges[i + 1]));
        out += first.prefix;
        if (bracket) out += '[';
        std::size_t j = i;
        do {
            const HostRange& r = ranges[j];
            if (j > i) out += ',';
            if (!r.single) {
                append_number(out, r.lo, r.width);
                if (r.lo < r.hi) {
                    out += '-';
                    append_number(out, r.hi, r.width);
                }
            }
            ++j;
        } while (j < ranges.size() && same_bracket(ranges[j], ranges[j - 1]));
        if (bracket) out += ']';
        i = j;
    }
    return out;
}

bool natural_less(const std::string& a, const std::string& b)
{
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const bool da = std::isdigit(static_cast<unsigned char>(a[i]));
        const bool db = std::isdigit(static_cast<unsigned char>(b[j]));
        if (da && db) {
            size_t ei = i, ej = j;
            while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei])))
                ++ei;
            while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej])))
                ++ej;
            std::string_view na(a.data() + i, ei - i), nb(b.data() + j, ej - j);
            while (na.size() > 1 && na.front() == '0')
                na.remove_prefix(1);
            while (nb.size() > 1 && nb.front() == '0')
                nb.remove_prefix(1);
            if (na.size() != nb.size())
                return na.size() < nb.size();
            if (na != nb)
                return na < nb;
            if (ei - i != ej - j)
                return ei - i < ej - j;
            i = ei;
            j = ej;
        } else {
            if (a[i] != b[j])
                return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

}  // namespace m2g
