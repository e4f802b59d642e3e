// m2g core: the shared Key=Value line format.
#include "core/base/conf_lines.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/base/error.hpp"
#include "core/base/hostlist.hpp"

namespace m2g::conf {

std::string lower(std::string_view s)
{
    std::string out(s);
    for (auto& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

namespace {

// Split one logical line into words: blanks separate words except inside
// double quotes, which are removed ("Description=\"two words\"").
std::vector<std::string> words_of(const std::string& logical, const SourceLoc& loc)
{
    std::vector<std::string> words;
    std::string word;
    bool in_word = false, quoted = false;
    for (char c : logical) {
        if (c == '"') {
            quoted = !quoted;
            in_word = true;
        } else if (!quoted && (c == ' ' || c == '\t')) {
            if (in_word)
                words.push_back(std::move(word));
            word.clear();
            in_word = false;
        } else {
            word += c;
            in_word = true;
        }
    }
    if (quoted)
        throw ParseError(loc.str() + ": a double quote is not closed");
    if (in_word)
        words.push_back(std::move(word));
    return words;
}

}  // namespace

std::vector<Line> tokenize(std::string_view text, const std::string& file)
{
    std::vector<Line> lines;
    int lineno = 0;
    size_t pos = 0;
    std::string logical;
    int logical_start = 0;
    while (pos <= text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string_view::npos)
            eol = text.size();
        std::string_view raw = text.substr(pos, eol - pos);
        pos = eol + 1;
        ++lineno;
        if (!raw.empty() && raw.back() == '\r')
            raw.remove_suffix(1);
        // Strip the comment: '#' outside quotes, unless written "\#".
        std::string stripped;
        bool quoted = false;
        for (size_t i = 0; i < raw.size(); ++i) {
            if (raw[i] == '\\' && i + 1 < raw.size() && raw[i + 1] == '#') {
                stripped += '#';
                ++i;
            } else if (raw[i] == '#' && !quoted) {
                break;
            } else {
                quoted ^= raw[i] == '"';
                stripped += raw[i];
            }
        }
        if (logical.empty())
            logical_start = lineno;
        bool cont = false;
        size_t end = stripped.find_last_not_of(" \t");
        if (end != std::string::npos && stripped[end] == '\\') {
            cont = true;
            stripped.erase(end);
        }
        logical += stripped;
        logical += ' ';
        if (cont && pos <= text.size())
            continue;

        Line line;
        line.loc = {file, logical_start};
        for (const std::string& word : words_of(logical, line.loc)) {
            size_t eq = word.find('=');
            if (eq == std::string::npos || eq == 0)
                throw ParseError(line.loc.str() + ": expected Key=Value, found \"" + word + "\"");
            line.pairs.push_back({word.substr(0, eq), word.substr(eq + 1)});
        }
        if (!line.pairs.empty())
            lines.push_back(std::move(line));
        logical.clear();
        if (eol == text.size())
            break;
    }
    return lines;
}

int parse_integer(const SourceLoc& loc, const char* key, const std::string& v, int min, int max)
{
    char* end = nullptr;
    errno = 0;
    long n = std::strtol(v.c_str(), &end, 10);
    if (errno || end == v.c_str() || *end || n < min || n > max)
        throw ParseError(loc.str() + ": " + key + "=" + v + " is not valid; expected a whole number from " +
                         std::to_string(min) + " to " + std::to_string(max));
    return static_cast<int>(n);
}

double parse_number(const SourceLoc& loc, const char* key, const std::string& v)
{
    char* end = nullptr;
    errno = 0;
    double d = std::strtod(v.c_str(), &end);
    if (errno || end == v.c_str() || *end || !std::isfinite(d) || d < 0 || d > 1e12)
        throw ParseError(loc.str() + ": " + key + "=" + v +
                         " is not valid; expected a non-negative number such as 400 or 12.5");
    return d;
}

Fields::Fields(const Line& line, const LineKind& kind) : loc_(line.loc)
{
    for (size_t i = 1; i < line.pairs.size(); ++i) {
        const Pair& p = line.pairs[i];
        const char* canon = nullptr;
        for (const char* k : kind.keys)
            if (lower(k) == lower(p.key))
                canon = k;
        if (!canon)
            throw ParseError(loc_.str() + ": unknown key '" + p.key + "' in a " + kind.head +
                             " line; accepted keys: " + join(kind.keys));
        if (values_.count(canon))
            throw ParseError(loc_.str() + ": key " + canon + " given twice");
        if (p.value.empty())
            throw ParseError(loc_.str() + ": " + canon + "= needs a value");
        values_[canon] = p.value;
    }
}

std::string Fields::str(const char* key) const
{
    auto it = values_.find(key);
    return it == values_.end() ? std::string() : it->second;
}

int Fields::integer(const char* key, int def, int min, int max) const
{
    auto it = values_.find(key);
    return it == values_.end() ? def : parse_integer(loc_, key, it->second, min, max);
}

double Fields::number(const char* key) const
{
    auto it = values_.find(key);
    return it == values_.end() ? 0 : parse_number(loc_, key, it->second);
}

std::vector<std::string> Fields::hostlist(const char* key) const
{
    auto it = values_.find(key);
    if (it == values_.end())
        return {};
    try {
        return hostlist_expand(it->second);
    } catch (const ParseError& e) {
        throw ParseError(loc_.str() + ": " + key + "=: " + e.what());
    }
}

}  // namespace m2g::conf
