// m2g core: a string as a double-quoted JSON (and YAML) scalar.
#pragma once

#include <string>
#include <string_view>

namespace m2g {

// `s` between double quotes, with '"' and '\' escaped: a JSON string for
// text without control characters, and a YAML double-quoted scalar (names
// and hostlists, where ':', '[' and ',' must stay literal).
inline std::string json_quote(std::string_view s)
{
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\')
            out += '\\';
        out += c;
    }
    return out + "\"";
}

}  // namespace m2g
