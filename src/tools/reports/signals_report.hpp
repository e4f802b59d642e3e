// m2g tools: what `m2g signals show` prints — the signals in force (a
// SignalsView: the feed as read now, or what job_submit/m2g believes, from
// its status file) as budgets, events, maintenance, health and thermal, for
// people or as one JSON object. Only the command reads it; the plugins
// never format the feed, so it lives here rather than in core/power.
#pragma once

#include <cstdint>
#include <string>

#include "core/model/model.hpp"
#include "core/power/signals.hpp"

namespace m2g {

// `m2g signals show`: a readable multi-line summary, or one JSON object.
std::string format_signals(const Model& m, const SignalsView& v, int64_t now, bool json);

}  // namespace m2g
