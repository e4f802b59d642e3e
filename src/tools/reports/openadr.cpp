// m2g tools: the forecast as OpenADR 3 reportRequest objects (openadr.hpp).
// What maps and what does not is in doc/forecast.md.
#include "tools/reports/openadr.hpp"

#include <json-c/json.h>

#include <cctype>
#include <cmath>

#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/base/time.hpp"
#include "tools/reports/report_util.hpp"

namespace m2g {

using namespace reports;

namespace {

json_object* descriptor(const char* type, const char* reading, const char* units)
{
    json_object* d = json_object_new_object();
    add(d, "objectType", jstr("REPORT_PAYLOAD_DESCRIPTOR"));
    add(d, "payloadType", jstr(type));
    add(d, "readingType", jstr(reading));
    add(d, "units", jstr(units));
    return d;
}

json_object* payload(const char* type, double v)
{
    json_object* p = json_object_new_object();
    add(p, "type", jstr(type));
    json_object* vals = json_object_new_array();
    json_object_array_add(vals, jnum(v, 3));
    add(p, "values", vals);
    return p;
}

json_object* period(int64_t start, int64_t duration_s)
{
    json_object* p = json_object_new_object();
    add(p, "start", jstr(format_utc(start)));
    add(p, "duration", jstr(format_iso_duration(duration_s)));
    return p;
}

json_object* report(const OpenADRReportOptions& o, const std::string& name, json_object* descriptors,
                    json_object* resources)
{
    json_object* r = json_object_new_object();
    add(r, "eventID", jstr(o.event_id));
    add(r, "clientName", jstr(o.client_name));
    add(r, "reportName", jstr(name));
    add(r, "payloadDescriptors", descriptors);
    add(r, "resources", resources);
    return r;
}

// An OpenADR resourceName: 1 to 128 characters.
std::string resource_name(const std::string& s) { return s.substr(0, 128); }

}  // namespace

void check_openadr_object_id(std::string_view id, const char* what)
{
    bool ok = !id.empty() && id.size() <= 128;
    for (char c : id)
        ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
    if (!ok)
        throw Error(std::string(what) + " '" + std::string(id) +
                    "' is not an OpenADR object ID; accepted: 1 to 128 letters, digits, '_' and '-'");
}

std::string openadr_reports(const Model& m, const Forecast& f, const OpenADRReportOptions& opt)
{
    OpenADRReportOptions o = opt;
    check_openadr_object_id(o.event_id, "--openadr-event");
    if (o.client_name.empty())
        o.client_name = m.cluster_name.empty() ? "m2g" : m.cluster_name;
    o.client_name = o.client_name.substr(0, 128);
    const std::string site = resource_name(m.cluster_name.empty() ? "site" : m.cluster_name);
    const int64_t step = static_cast<int64_t>(std::llround(f.step_s));
    const double step_h = f.step_s / 3600.0;
    const JsonPtr root(json_object_new_array());

    // USAGE_FORECAST: energy in each step at the P50 draw; the band's edges
    // as m2g's own payload types (OpenADR allows private ones).
    json_object* d = json_object_new_array();
    json_object_array_add(d, descriptor("USAGE_FORECAST", "FORECAST", "KWH"));
    if (f.samples > 1) {
        json_object_array_add(d, descriptor("M2G_USAGE_FORECAST_P10", "FORECAST", "KWH"));
        json_object_array_add(d, descriptor("M2G_USAGE_FORECAST_P90", "FORECAST", "KWH"));
    }
    json_object* res = json_object_new_array();
    for (const ForecastBand& b : f.bands) {
        json_object* r = json_object_new_object();
        add(r, "resourceName", jstr(resource_name(b.scope == "site" ? site : b.scope + ":" + b.name)));
        add(r, "intervalPeriod", period(f.made_at, step));
        json_object* ivs = json_object_new_array();
        for (size_t k = 0; k < b.p50.size(); ++k) {
            json_object* iv = json_object_new_object();
            add(iv, "id", json_object_new_int(static_cast<int>(k)));
            json_object* pl = json_object_new_array();
            json_object_array_add(pl, payload("USAGE_FORECAST", b.p50[k] * step_h));
            if (f.samples > 1) {
                json_object_array_add(pl, payload("M2G_USAGE_FORECAST_P10", b.p10[k] * step_h));
                json_object_array_add(pl, payload("M2G_USAGE_FORECAST_P90", b.p90[k] * step_h));
            }
            add(iv, "payloads", pl);
            json_object_array_add(ivs, iv);
        }
        add(r, "intervals", ivs);
        json_object_array_add(res, r);
    }
    json_object_array_add(root.get(), report(o, "m2g usage forecast " + format_utc(f.made_at) + " (GPU power, " +
                                                    f.power_source + ")",
                                             d, res));

    // One report per offer: BASELINE (the draw without the event) and
    // LOAD_SHED_DELTA_AVAILABLE (the change in load with it: negative, a
    // decrease), per step of the window.
    for (const FlexOffer& x : f.flex) {
        json_object* fd = json_object_new_array();
        json_object_array_add(fd, descriptor("BASELINE", "FORECAST", "KW"));
        json_object_array_add(fd, descriptor("LOAD_SHED_DELTA_AVAILABLE", "FORECAST", "KW"));
        json_object* r = json_object_new_object();
        add(r, "resourceName", jstr(site));
        add(r, "intervalPeriod", period(x.req.start, step));
        json_object* ivs = json_object_new_array();
        for (size_t k = 0; k < x.baseline_kw.size(); ++k) {
            json_object* iv = json_object_new_object();
            add(iv, "id", json_object_new_int(static_cast<int>(k)));
            const int64_t a = x.req.start + static_cast<int64_t>(k) * step;
            if (a + step > x.end)  // a shorter last step says so
                add(iv, "intervalPeriod", period(a, x.end - a));
            json_object* pl = json_object_new_array();
            json_object_array_add(pl, payload("BASELINE", x.baseline_kw[k]));
            json_object_array_add(pl, payload("LOAD_SHED_DELTA_AVAILABLE", -std::max(0.0, x.shed_kw[k])));
            add(iv, "payloads", pl);
            json_object_array_add(ivs, iv);
        }
        add(r, "intervals", ivs);
        json_object* rs = json_object_new_array();
        json_object_array_add(rs, r);
        json_object_array_add(root.get(),
                              report(o,
                                     "m2g flexibility " + num(x.req.depth_pct) + "% for " +
                                         num(x.req.duration_s / 3600.0) + " h from " + format_utc(x.req.start) +
                                         (x.met ? "" : " (not met)"),
                                     fd, rs));
    }
    return json_text(root.get());
}

}  // namespace m2g
