// hostlist-tool: line-oriented driver of m2g's hostlist library, used by
// test/integration/hostlist-vs-scontrol.sh to compare against scontrol.
//
//   hostlist-tool expand    each stdin line is a hostlist expression; prints
//                           the names separated by single spaces on one line
//   hostlist-tool compress  each stdin line is comma-separated names; prints
//                           the ranged string
//
// A line whose input is rejected prints ERROR (the message goes to stderr,
// prefixed with the 1-based input line number).
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "core/base/hostlist.hpp"

namespace {

std::vector<std::string> split_commas(const std::string& line) {
    std::vector<std::string> names;
    std::size_t pos = 0;
    for (;;) {
        const std::size_t comma = line.find(',', pos);
        if (comma == std::string::npos) {
            names.push_back(line.substr(pos));
            return names;
        }
        names.push_back(line.substr(pos, comma - pos));
        pos = comma + 1;
    }
}

int usage() {
    std::cerr << "usage: hostlist-tool expand|compress < lines\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) return usage();
    const bool expand = std::strcmp(argv[1], "expand") == 0;
    if (!expand && std::strcmp(argv[1], "compress") != 0) return usage();

    std::ios::sync_with_stdio(false);
    std::string line;
    unsigned long lineno = 0;
    while (std::getline(std::cin, line)) {
        ++lineno;
        try {
            if (expand) {
                const std::vector<std::string> names = m2g::hostlist_expand(line);
                std::string out;
                for (std::size_t i = 0; i < names.size(); ++i) {
                    if (i > 0) out += ' ';
                    out += names[i];
                }
                std::cout << out << '\n';
            } else {
                std::cout << m2g::hostlist_compress(split_commas(line)) << '\n';
            }
        } catch (const std::exception& e) {
            std::cout << "ERROR\n";
            std::cerr << "line " << lineno << ": " << e.what() << '\n';
        }
    }
    std::cout.flush();
    return std::cout ? 0 : 1;
}
