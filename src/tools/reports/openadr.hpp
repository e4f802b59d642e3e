// m2g tools: the forecast as OpenADR 3 reports (`m2g forecast --openadr`,
// doc/forecast.md "OpenADR 3"), for a site to hand to its utility or
// aggregator (the VTN): reportRequest objects of the OpenADR 3.1.0
// definition, one with the site's, rows' and racks' USAGE_FORECAST, and
// one per flexibility offer with its BASELINE and LOAD_SHED_DELTA_AVAILABLE.
#pragma once

#include <string>
#include <string_view>

#include "core/model/model.hpp"
#include "tools/reports/forecast.hpp"

namespace m2g {

struct OpenADRReportOptions {
    std::string event_id = "m2g-forecast";  // the VTN event (or program) the reports answer: an OpenADR objectID
    std::string client_name;                // the VEN's name; "" : m2g.conf's ClusterName=, else "m2g"
};

// Throws Error when `id` is not an OpenADR objectID (1-128 of A-Z, a-z,
// 0-9, '_' and '-'), saying so.
void check_openadr_object_id(std::string_view id, const char* what);

// A JSON array of reportRequest objects, one line.
std::string openadr_reports(const Model& m, const Forecast& f, const OpenADRReportOptions& o);

}  // namespace m2g
