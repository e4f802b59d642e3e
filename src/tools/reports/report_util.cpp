// m2g tools: the words `m2g status`, `m2g explain` and `m2g job` share —
// numbers, times, hostlists, events and JSON written one way in all three
// (see report_util.hpp).
#include "tools/reports/report_util.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/base/hostlist.hpp"

namespace m2g {
namespace reports {

// ---- text ---------------------------------------------------------------------

std::string fmt(const char* f, double d)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, f, d);
    std::string s = buf;
    if (s == "-0.0" || s == "-0.00" || s == "-0")
        s.erase(0, 1);
    return s;
}

std::string kw1(double d) { return fmt("%.1f", d); }

std::string num(double d) { return fmt("%g", d); }

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string class_label(WorkloadClass c) { return c == WorkloadClass::Unset ? "none" : to_string(c); }

std::string about(double seconds)
{
    const double in = std::max(0.0, seconds);
    return in < 2 * 3600 ? "about " + std::to_string(static_cast<int64_t>((in + 59) / 60)) + " min"
                         : "about " + kw1(in / 3600.0) + " h";
}

std::string elapsed(double seconds)
{
    int64_t s = static_cast<int64_t>(std::max(0.0, seconds));
    const int64_t d = s / 86400;
    s %= 86400;
    char buf[64];
    if (d > 0)
        std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", static_cast<long long>(d),
                      static_cast<long long>(s / 3600), static_cast<long long>(s % 3600 / 60),
                      static_cast<long long>(s % 60));
    else
        std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
                      static_cast<long long>(s % 3600 / 60), static_cast<long long>(s % 60));
    return buf;
}

std::string event_cut(const CurtailmentEvent& e)
{
    return event_cut_text(e);
}

std::string event_scope(const CurtailmentEvent& e)
{
    switch (e.scope) {
    case EventScope::Site:
        return "site";
    case EventScope::Row:
        return "row " + e.scope_name;
    case EventScope::Rack:
        return "rack " + e.scope_name;
    }
    return "site";
}

// ---- JSON ---------------------------------------------------------------------

json_object* jnum(double d, int decimals)
{
    char f[8];
    std::snprintf(f, sizeof f, "%%.%df", decimals);
    std::string s = fmt(f, d);
    while (s.find('.') != std::string::npos && s.size() > 2 && s.back() == '0' && s[s.size() - 2] != '.')
        s.pop_back();
    return json_object_new_double_s(std::strtod(s.c_str(), nullptr), s.c_str());
}

json_object* jstr(const std::string& s) { return json_object_new_string_len(s.data(), static_cast<int>(s.size())); }

std::string json_text(json_object* o)
{
    return std::string(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)) +
           "\n";
}

void add(json_object* o, const char* k, json_object* v) { json_object_object_add(o, k, v); }

}  // namespace reports
}  // namespace m2g
