// Test data for the unit tests: files under test/fixtures, and the real
// externally authored data in ../shared/data (M2G_DATA overrides where).
#pragma once

#include <cstdlib>
#include <string>

#include "core/model/config.hpp"  // read_text_file

namespace m2g::test {

inline std::string fixture(const std::string& name)
{
    return read_text_file(std::string(M2G_FIXTURES) + "/" + name);
}

// ../shared/data, as the build's test environment points at it.
inline std::string data_file(const std::string& name)
{
    const char* dir = std::getenv("M2G_DATA");
    return std::string(dir ? dir : M2G_FIXTURES "/../../../shared/data") + "/" + name;
}

}  // namespace m2g::test
