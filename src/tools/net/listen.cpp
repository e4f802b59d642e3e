// m2g tools: --listen parsing (see listen.hpp).
#include "tools/net/listen.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdlib>
#include <string>

#include "core/base/error.hpp"

namespace m2g {

Listen parse_listen(const std::string& text, int example_port)
{
    const std::string ex = std::to_string(example_port);
    const std::string usage = "--listen " + text + ": expected HOST:PORT with a numeric address, e.g. 127.0.0.1:" +
                              ex + ", [::1]:" + ex + " or 0.0.0.0:" + ex + " (all addresses)";
    Listen l;
    std::string port;
    if (!text.empty() && text[0] == '[') {
        const auto close = text.find("]:");
        if (close == std::string::npos)
            throw Error(usage);
        l.host = text.substr(1, close - 1);
        port = text.substr(close + 2);
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string::npos || text.find(':') != colon)
            throw Error(usage);
        l.host = text.substr(0, colon);
        port = text.substr(colon + 1);
    }
    if (l.host == "localhost")
        l.host = "127.0.0.1";
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
        throw Error(usage + " (the port '" + port + "' is not a number; it is 0 to 65535, 0 picks a free one)");
    const long p = std::strtol(port.c_str(), nullptr, 10);
    if (p > 65535)
        throw Error(usage + " (port " + port + " is out of range; it is 0 to 65535, 0 picks a free one)");
    l.port = static_cast<int>(p);
    auto* v4 = reinterpret_cast<sockaddr_in*>(&l.addr);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&l.addr);
    if (inet_pton(AF_INET, l.host.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(static_cast<uint16_t>(l.port));
        l.loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
    } else if (inet_pton(AF_INET6, l.host.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(static_cast<uint16_t>(l.port));
        l.ipv6 = true;
        l.loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
    } else {
        throw Error(usage + " ('" + l.host + "' is not a numeric IPv4 or IPv6 address)");
    }
    return l;
}

}  // namespace m2g
