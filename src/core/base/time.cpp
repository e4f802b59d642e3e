// m2g core: times as the feed, the annotation and the CLI write them (see time.hpp).
#include "core/base/time.hpp"

#include <ctime>
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

}  // namespace m2g
