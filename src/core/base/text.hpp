// m2g core: small text helpers every part shares — numbers as printf
// writes them, joining, counting nouns, the host's short name. One copy
// here instead of one per file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace m2g {

// printf's %.*f: fixed(2.345, 1) == "2.3"; fixed(400, 0) == "400".
std::string fixed(double v, int decimals);

// printf's %.*g: general(12.5) == "12.5", general(1e7) == "1e+07"; more
// digits for config files (10) or trace clocks (15).
std::string general(double v, int digits = 6);

// The parts with `sep` between them.
std::string join(const std::vector<std::string>& parts, std::string_view sep);

// "1 node", "3 nodes".
std::string plural(size_t n, std::string_view one, std::string_view many);

// gethostname() up to its first dot ("" when it fails): how Slurm names a
// node by default.
std::string short_hostname();

}  // namespace m2g
