// m2g core: the Slurm-style "Key=Value Key=Value" line format shared by
// m2g.conf, topology.conf and m2g-recipes.conf: comments, continuation,
// quoting, strict keys, typed values, and file:line in every message.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/source.hpp"

namespace m2g::conf {

std::string lower(std::string_view s);

// One Key=Value pair of a line, with the key as the user wrote it.
struct Pair {
    std::string key;
    std::string value;
};

struct Line {
    SourceLoc loc;
    std::vector<Pair> pairs;
};

// Split text into logical lines of Key=Value pairs. Handles '#' comments
// (a "\#" is a literal '#'), '\' line continuation, blank lines and
// double-quoted values (Key="two words"), as Slurm's own parser does.
std::vector<Line> tokenize(std::string_view text, const std::string& file);

// The keys one kind of line accepts, with their canonical spelling.
struct LineKind {
    const char* head;
    std::vector<const char*> keys;
};

template <typename List>
std::string join(const List& v)
{
    std::string out;
    for (const char* s : v) {
        if (!out.empty())
            out += ", ";
        out += s;
    }
    return out;
}

int parse_integer(const SourceLoc& loc, const char* key, const std::string& v, int min, int max);
double parse_number(const SourceLoc& loc, const char* key, const std::string& v);

// Values of one line by canonical key, after checking every key is known
// and given once.
class Fields {
  public:
    Fields(const Line& line, const LineKind& kind);
    bool has(const char* key) const { return values_.count(key) != 0; }
    std::string str(const char* key) const;
    int integer(const char* key, int def, int min, int max) const;
    double number(const char* key) const;
    std::vector<std::string> hostlist(const char* key) const;

  private:
    SourceLoc loc_;
    std::map<std::string, std::string> values_;
};

}  // namespace m2g::conf
