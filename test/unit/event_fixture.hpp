// Hand-made curtailment events for the admission and status tests.
#pragma once

#include <cstdint>
#include <string>

#include "core/model/model.hpp"
#include "core/power/signals.hpp"

namespace m2g::test {

// A site event of `pct` percent.
inline CurtailmentEvent site_event(const std::string& id, int64_t start, int64_t end, double pct)
{
    CurtailmentEvent e;
    e.id = id;
    e.start = start;
    e.end = end;
    e.curtail_pct = pct;
    e.scope = EventScope::Site;
    e.scope_name = "site";
    return e;
}

// An event on rack (NVLink domain) `rack`: `pct` percent, or `kw` when pct is 0.
inline CurtailmentEvent rack_event(const Model& m, const std::string& id, const std::string& rack, int64_t start,
                                   int64_t end, double pct, double kw = 0)
{
    CurtailmentEvent e;
    e.id = id;
    e.start = start;
    e.end = end;
    e.curtail_pct = pct;
    e.curtail_kw = pct > 0 ? 0 : kw;
    e.scope = EventScope::Rack;
    e.scope_index = m.find_domain(rack);
    e.scope_name = rack;
    return e;
}

}  // namespace m2g::test
