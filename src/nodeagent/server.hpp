// m2g-nodeagent on a socket: libmicrohttpd with its own polling thread,
// handing each complete request (method, path, Authorization, body) to a
// handler, NodeAgent::handle in the daemon.
#pragma once

#include <sys/socket.h>

#include <functional>
#include <string>

#include "nodeagent/agent.hpp"
#include "tools/net/listen.hpp"

struct MHD_Daemon;

namespace m2g {
namespace nodeagent {

// --listen for the agent: m2g::parse_listen (tools/net/listen.hpp) with the
// agent's port in its examples.
using m2g::Listen;
Listen parse_listen(const std::string& text);

class HttpServer {
  public:
    using Handler = std::function<Response(const Request&)>;
    // Starts serving; throws Error when it cannot listen there.
    HttpServer(const Listen& where, Handler handler);
    ~HttpServer();  // stops serving
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    int port() const { return port_; }  // the bound port (port 0 resolved)
    // "http://127.0.0.1:6830"
    std::string url() const;

    // libmicrohttpd's callbacks; not for callers.
    struct Connection;
    Response call(const Request& r) { return handler_(r); }

  private:
    Handler handler_;
    MHD_Daemon* daemon_ = nullptr;
    std::string host_;
    int port_ = 0;
};

}  // namespace nodeagent
}  // namespace m2g
