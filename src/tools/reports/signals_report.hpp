// m2g tools: what `m2g signals show` and `m2g signals validate` print —
// the signals in force (a SignalsView: the feed as read now, or what
// job_submit/m2g believes, from its status file) as budgets, events,
// maintenance, health and thermal, for people or as one JSON object; and a
// good feed's counts. Only the command prints them; the plugins never
// format the feed, so this lives here rather than in core/power.
#pragma once

#include <cstdint>
#include <string>

#include "core/model/model.hpp"
#include "core/power/signals.hpp"

namespace m2g {

// `m2g signals show`: a readable multi-line summary, or one JSON object.
std::string format_signals(const Model& m, const SignalsView& v, int64_t now, bool json);

// `m2g signals validate`: one line of counts for a good feed, judged at
// `now` ("generated ... (30 s ago), 2 events (1 active), ...").
std::string summarize_feed(const Signals& s, int64_t now);

}  // namespace m2g
