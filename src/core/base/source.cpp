// m2g core: SourceLoc and read_text_file (see source.hpp).
#include "core/base/source.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/base/error.hpp"

namespace m2g {

std::string SourceLoc::str() const
{
    return file + ":" + std::to_string(line);
}

std::string read_text_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error(path + ": cannot open: " + std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad())
        throw Error(path + ": read error");
    return ss.str();
}

}  // namespace m2g
