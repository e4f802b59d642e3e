// m2g core: times as the signals feed, the AdminComment annotation and
// the command line write them: RFC 3339 in UTC, or epoch seconds.
#pragma once

#include <cstdint>
#include <string>

namespace m2g {

// Latest time accepted anywhere: 9999-12-31T23:59:59Z.
constexpr int64_t kMaxTime = 253402300799;

// What a time may look like, for messages: "accepted: RFC 3339 (...) or epoch seconds".
extern const char* const kTimeAccepted;

// RFC 3339 date-time ("2026-11-29T21:00:00Z", "2026-11-29t22:00:00.25+01:00").
// Returns "" and sets *out, or says what is wrong.
std::string parse_rfc3339(const std::string& s, int64_t* out);

// Parse an RFC 3339 time ("2026-11-29T21:00:00Z", "...+01:00", fractional
// seconds allowed) or decimal epoch seconds. Throws ParseError naming `what`.
int64_t parse_signal_time(const std::string& text, const std::string& what);
std::string format_utc(int64_t t);  // "2026-11-29T21:00:00Z"

// ISO 8601 durations as OpenADR 3 writes them: "PT15M", "P1DT2H",
// "PT0.5S", "P2W"; years and months are refused (their length depends on
// the date) except OpenADR's "P9999Y", "until further notice", read as
// kForever. Returns "" and sets *seconds, or says what is wrong.
constexpr double kForever = 1e12;
std::string parse_iso_duration(const std::string& s, double* seconds);
// 900 -> "PT15M", 5400 -> "PT1H30M", 0 -> "PT0S" (whole seconds).
std::string format_iso_duration(int64_t seconds);

}  // namespace m2g
