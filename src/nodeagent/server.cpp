// m2g-nodeagent's HTTP server over libmicrohttpd: see server.hpp.
#include "nodeagent/server.hpp"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace m2g {
namespace nodeagent {

Listen parse_listen(const std::string& text)
{
    return m2g::parse_listen(text, 6830);
}

// One request as it arrives (libmicrohttpd calls the handler once for the
// headers, once per piece of body, once at the end).
struct HttpServer::Connection {
    std::string body;
    bool too_large = false;
};

namespace {

MHD_Result send(MHD_Connection* conn, const Response& resp)
{
    MHD_Response* r = MHD_create_response_from_buffer(resp.body.size(), const_cast<char*>(resp.body.data()),
                                                      MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    for (const auto& [k, v] : resp.headers)
        MHD_add_response_header(r, k.c_str(), v.c_str());
    const MHD_Result ret = MHD_queue_response(conn, static_cast<unsigned>(resp.status), r);
    MHD_destroy_response(r);
    return ret;
}

MHD_Result on_request(void* cls, MHD_Connection* conn, const char* url, const char* method, const char*,
                      const char* upload_data, size_t* upload_size, void** con_cls)
{
    auto* srv = static_cast<HttpServer*>(cls);
    auto* c = static_cast<HttpServer::Connection*>(*con_cls);
    if (!c) {
        *con_cls = new (std::nothrow) HttpServer::Connection();
        return *con_cls ? MHD_YES : MHD_NO;
    }
    if (*upload_size) {
        if (c->body.size() + *upload_size > kMaxBodyBytes)
            c->too_large = true;
        else
            c->body.append(upload_data, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    Request r;
    r.method = method ? method : "";
    r.path = url ? url : "";
    const char* auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    r.authorization = auth ? auth : "";
    r.body = std::move(c->body);
    r.body_too_large = c->too_large;
    Response resp;
    try {
        resp = srv->call(r);
    } catch (...) {
        resp = error_response(500, "internal error");
    }
    return send(conn, resp);
}

void on_completed(void*, MHD_Connection*, void** con_cls, MHD_RequestTerminationCode)
{
    delete static_cast<HttpServer::Connection*>(*con_cls);
    *con_cls = nullptr;
}

}  // namespace

HttpServer::HttpServer(const Listen& where, Handler handler) : handler_(std::move(handler))
{
    host_ = where.ipv6 ? "[" + where.host + "]" : where.host;
    daemon_ = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG | (where.ipv6 ? MHD_USE_IPv6 : 0),
        static_cast<uint16_t>(where.port), nullptr, nullptr, &on_request, this, MHD_OPTION_SOCK_ADDR,
        reinterpret_cast<const sockaddr*>(&where.addr), MHD_OPTION_NOTIFY_COMPLETED, &on_completed, nullptr,
        MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (!daemon_)
        throw Error("cannot listen on " + host_ + ":" + std::to_string(where.port) + ": " + std::strerror(errno) +
                    " (another process on that port? choose one with --listen)");
    const MHD_DaemonInfo* info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
    port_ = info && info->port ? info->port : where.port;
}

HttpServer::~HttpServer()
{
    if (daemon_)
        MHD_stop_daemon(daemon_);
}

std::string HttpServer::url() const
{
    return "http://" + host_ + ":" + std::to_string(port_);
}

}  // namespace nodeagent
}  // namespace m2g
