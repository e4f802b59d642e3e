// m2g core: where text comes from — a file:line for messages, and a whole
// file read at once.
#pragma once

#include <string>

namespace m2g {

// Where a spec item came from, for messages: "m2g.conf:12".
struct SourceLoc {
    std::string file;
    int line = 0;
    std::string str() const;
};

// The whole file. Throws Error "<path>: cannot open: <why>".
std::string read_text_file(const std::string& path);

}  // namespace m2g
