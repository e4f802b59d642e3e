#include "core/base/text.hpp"

#include <unistd.h>

#include <cstdio>

namespace m2g {

std::string fixed(double v, int decimals)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string general(double v, int digits)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    return buf;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep)
{
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (i)
            out += sep;
        out += parts[i];
    }
    return out;
}

std::string plural(size_t n, std::string_view one, std::string_view many)
{
    std::string out = std::to_string(n);
    out += ' ';
    out += n == 1 ? one : many;
    return out;
}

std::string short_hostname()
{
    char buf[256] = {0};
    if (gethostname(buf, sizeof buf - 1) != 0)
        return "";
    std::string h = buf;
    const auto dot = h.find('.');
    return dot == std::string::npos ? h : h.substr(0, dot);
}

}  // namespace m2g
