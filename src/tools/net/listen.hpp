// m2g tools: the --listen HOST:PORT option of m2g's HTTP daemons
// (m2g-exporter, m2g-nodeagent), parsed once.
#pragma once

#include <sys/socket.h>

#include <string>

namespace m2g {

// HOST:PORT or [HOST]:PORT, HOST numeric ("localhost" is 127.0.0.1), PORT 0
// to 65535 (0: a free one). Throws Error with the option, what was wrong
// and the accepted forms (examples with `example_port`, the daemon's own).
struct Listen {
    sockaddr_storage addr{};
    bool ipv6 = false;
    bool loopback = false;
    std::string host;
    int port = 0;
};
Listen parse_listen(const std::string& text, int example_port);

}  // namespace m2g
