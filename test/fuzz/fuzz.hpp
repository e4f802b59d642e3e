// m2g fuzzing: what every libFuzzer harness in test/fuzz/ shares.
//
// Each harness feeds one input format to the production parser in
// src/core/ and src/tools/ (linked from the same sources as the libraries, never a copy).
// The contract under test: on any input a parser returns a value or throws
// m2g::Error (ParseError, ValidationError) carrying a message. Anything else
// — a crash, a sanitizer report, another exception type escaping, a hang,
// unbounded memory — is a finding. contrib/m2g-fuzz builds and runs them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/error.hpp"

namespace m2g_fuzz {

inline std::string text(const uint8_t* data, size_t size)
{
    return std::string(reinterpret_cast<const char*>(data), size);
}

// Split on '\n' (a trailing empty piece is kept: "a\n" -> {"a", ""}).
inline std::vector<std::string> lines(std::string_view s)
{
    std::vector<std::string> out;
    size_t start = 0;
    for (;;) {
        const size_t nl = s.find('\n', start);
        out.emplace_back(s.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
        if (nl == std::string_view::npos)
            return out;
        start = nl + 1;
    }
}

// An m2g::Error must say what was wrong: an empty message is a finding.
inline void check_message(const m2g::Error& e)
{
    if (e.what()[0] == '\0') {
        std::fprintf(stderr, "m2g-fuzz: an m2g::Error with an empty message\n");
        std::abort();
    }
}

// A property the harness checks (a round trip, an invariant) did not hold.
[[noreturn]] inline void violated(const char* what, const std::string& detail)
{
    std::fprintf(stderr, "m2g-fuzz: property violated: %s\n%s\n", what, detail.c_str());
    std::abort();
}

}  // namespace m2g_fuzz
