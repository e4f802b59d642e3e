// m2g core: times as the feed, the annotation and the CLI write them (see time.hpp).
#include "core/base/time.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <string>

#include "core/base/error.hpp"

namespace m2g {

namespace {

int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

}  // namespace

// RFC 3339 date-time ("2026-11-29T21:00:00Z", "2026-11-29t22:00:00.25+01:00").
// Returns "" and sets *out, or says what is wrong.
std::string parse_rfc3339(const std::string& s, int64_t* out)
{
    size_t i = 0;
    auto digits = [&](int n, int* v) {
        if (i + n > s.size())
            return false;
        int x = 0;
        for (int k = 0; k < n; ++k) {
            const char c = s[i + k];
            if (c < '0' || c > '9')
                return false;
            x = x * 10 + (c - '0');
        }
        i += n;
        *v = x;
        return true;
    };
    auto lit = [&](char c) {
        if (i < s.size() && s[i] == c) {
            ++i;
            return true;
        }
        return false;
    };
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
    if (!(digits(4, &y) && lit('-') && digits(2, &mo) && lit('-') && digits(2, &d) && (lit('T') || lit('t')) &&
          digits(2, &h) && lit(':') && digits(2, &mi) && lit(':') && digits(2, &sec)))
        return "not a time";
    if (lit('.')) {
        const size_t from = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9')
            ++i;
        if (i == from)
            return "not a time";
    }
    int off = 0;
    if (lit('Z') || lit('z')) {
        off = 0;
    } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
        const int sign = s[i] == '-' ? -1 : 1;
        ++i;
        int oh = 0, om = 0;
        if (!(digits(2, &oh) && lit(':') && digits(2, &om)))
            return "not a time";
        if (oh > 23 || om > 59)
            return "UTC offset out of range";
        off = sign * (oh * 3600 + om * 60);
    } else {
        return i == s.size() ? "no UTC offset: end it with Z or +hh:mm" : "not a time";
    }
    if (i != s.size())
        return "not a time";
    static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12)
        return "month " + std::to_string(mo) + " out of range";
    const int dim = kDays[mo - 1] + (mo == 2 && leap(y) ? 1 : 0);
    if (d < 1 || d > dim)
        return "day " + std::to_string(d) + " out of range";
    if (h > 23 || mi > 59 || sec > 60)
        return "time of day out of range";
    *out = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 + mi * 60 +
           sec - off;
    return "";
}

const char* const kTimeAccepted =
    "accepted: RFC 3339 (\"2026-11-29T21:00:00Z\", \"2026-11-29T22:00:00+01:00\", fractional seconds allowed) "
    "or epoch seconds";

int64_t parse_signal_time(const std::string& text, const std::string& what)
{
    if (!text.empty() && text.size() <= 12 && text.find_first_not_of("0123456789") == std::string::npos) {
        const int64_t t = std::stoll(text);
        if (t > kMaxTime)
            throw ParseError(what + ": " + text + " is out of range for epoch seconds");
        return t;
    }
    int64_t t = 0;
    const std::string why = parse_rfc3339(text, &t);
    if (!why.empty())
        throw ParseError(what + ": \"" + text + "\" is not a valid time (" + why + "); " + kTimeAccepted);
    return t;
}

std::string format_utc(int64_t t)
{
    const time_t tt = static_cast<time_t>(t);
    struct tm tm {};
    if (!gmtime_r(&tt, &tm))
        return std::to_string(t);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

std::string parse_iso_duration(const std::string& s, double* seconds)
{
    if (s == "P9999Y") {
        *seconds = kForever;
        return "";
    }
    if (s.size() < 3 || s[0] != 'P')
        return "not an ISO 8601 duration; it starts with P, e.g. PT15M, PT1H, P1DT12H";
    double total = 0;
    bool in_time = false, any = false;
    std::string order = "WD";  // the designators still allowed, in order
    size_t i = 1;
    while (i < s.size()) {
        if (s[i] == 'T') {
            if (in_time || i + 1 == s.size())
                return "a misplaced T (it separates days from hours, minutes and seconds, and is followed by them)";
            in_time = true;
            order = "HMS";
            ++i;
            continue;
        }
        size_t j = i;
        while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.'))
            ++j;
        if (j == i || j == s.size())
            return "expected a number followed by " + std::string(in_time ? "H, M or S" : "W or D") + " at position " +
                   std::to_string(i + 1);
        const char unit = s[j];
        if (!in_time && (unit == 'Y' || unit == 'M'))
            return "years and months are not accepted (their length depends on the date); give weeks, days, hours, "
                   "minutes or seconds, or P9999Y for until further notice";
        const size_t at = order.find(unit);
        if (at == std::string::npos)
            return std::string("'") + unit + "' is not a designator here; accepted: " +
                   (in_time ? "H, M, S after T" : "W, D before T");
        const std::string num = s.substr(i, j - i);
        if (num.find('.') != std::string::npos && unit != 'S')
            return "only seconds may have a fraction";
        char* end = nullptr;
        const double v = std::strtod(num.c_str(), &end);
        if (*end || !std::isfinite(v))
            return "\"" + num + "\" is not a number";
        static const std::map<char, double> unit_s = {{'W', 604800}, {'D', 86400}, {'H', 3600}, {'M', 60}, {'S', 1}};
        total += v * unit_s.at(unit);
        order = order.substr(at + 1);
        any = true;
        i = j + 1;
    }
    if (!any)
        return "no amount; e.g. PT15M";
    *seconds = total;
    return "";
}

std::string format_iso_duration(int64_t seconds)
{
    if (seconds <= 0)
        return "PT0S";
    std::string out = "P";
    if (seconds >= 86400) {
        out += std::to_string(seconds / 86400) + "D";
        seconds %= 86400;
    }
    if (seconds == 0)
        return out;
    out += "T";
    if (seconds >= 3600)
        out += std::to_string(seconds / 3600) + "H";
    if (seconds % 3600 >= 60)
        out += std::to_string(seconds % 3600 / 60) + "M";
    if (seconds % 60)
        out += std::to_string(seconds % 60) + "S";
    return out;
}

}  // namespace m2g
