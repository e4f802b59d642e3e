// m2g-nodeagent: GPU power caps on exactly the GPUs of a Slurm job, one
// daemon per node (m2g-nodeagent(8)).
//
//   HTTP thread      libmicrohttpd's polling thread: GET /v1/power,
//                    PUT/DELETE /v1/jobs/<id>/cap → NodeAgent::handle.
//   reconcile thread every --reconcile-sec: caps of jobs gone from the
//                    dcgm-exporter job mapping directory end.
//   main thread      waits for SIGTERM/SIGINT, then stops both. The caps
//                    stay in force (and in --state-dir) across a restart.
#include <CLI/CLI.hpp>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

#include "m2g_config.h"
#include "nodeagent/agent.hpp"
#include "nodeagent/nvml_power.hpp"
#include "nodeagent/server.hpp"
#include "core/base/error.hpp"
#include "core/obs/telemetry.hpp"
#include "core/base/text.hpp"
#include "tools/net/daemon.hpp"

namespace {

namespace na = m2g::nodeagent;

std::mutex log_mu;

void log_line(const std::string& msg)
{
    std::lock_guard<std::mutex> lk(log_mu);
    std::fprintf(stderr, "%s: %s\n", na::kProg, msg.c_str());
    std::fflush(stderr);
}


// --state-dir: created (0700) when missing; must be a directory.
std::string state_file(const std::string& dir)
{
    if (dir.empty())
        return "";
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
        if (errno != ENOENT || ::mkdir(dir.c_str(), 0700) != 0)
            throw m2g::Error("--state-dir " + dir + ": " + std::strerror(errno));
    } else if (!S_ISDIR(st.st_mode)) {
        throw m2g::Error("--state-dir " + dir + " is not a directory");
    }
    return dir + "/" + na::kStateFile;
}

}  // namespace

int main(int argc, char** argv)
{
    std::string node, listen = na::kDefaultListen, job_map, nvml = na::kDefaultNvml, token_file, state_dir;
    int reconcile_sec = na::kDefaultReconcileSec;
    CLI::App app{"m2g-nodeagent: applies GPU power caps through NVML on exactly the GPUs of a Slurm job on this "
                 "node, over a small HTTP API (GET /v1/power, PUT and DELETE /v1/jobs/<id>/cap). See "
                 "m2g-nodeagent(8)."};
    app.add_option("--node", node, "this node's Slurm name (default: the short host name)");
    app.add_option("--listen", listen,
                   "address:port to serve on (default " + std::string(na::kDefaultListen) +
                       "; 0 as port picks a free one)");
    app.add_option("--job-map-dir", job_map,
                   "dcgm-exporter HPC job mapping directory (spank_m2g dcgm_dir=) telling which job uses which GPU; "
                   "%n is replaced by --node")
        ->required();
    app.add_option("--nvml", nvml, "NVML library to load (default " + std::string(na::kDefaultNvml) + ")");
    app.add_option("--token-file", token_file,
                   "require 'Authorization: Bearer <token>' with the token on this file's first line (the file "
                   "must not be accessible by group or others)");
    app.add_option("--state-dir", state_dir,
                   "directory where the agent records the caps it applied, so a restarted agent knows them "
                   "(default: none, caps are kept in memory only)");
    app.add_option("--reconcile-sec", reconcile_sec,
                   "seconds between reconcile ticks that end the caps of finished jobs (default " +
                       std::to_string(na::kDefaultReconcileSec) + ")")
        ->check(CLI::Range(1, 3600));
    if (const std::optional<int> exit_now = m2g::parse_daemon_args(app, na::kProg, PACKAGE_VERSION, argc, argv))
        return *exit_now;

    try {
        const na::Listen where = na::parse_listen(listen);
        if (node.empty())
            node = m2g::short_hostname();
        na::AgentOptions o;
        o.node = node;
        o.job_map_dir = m2g::node_dir(job_map, node);
        if (o.job_map_dir.empty() || o.job_map_dir[0] != '/')
            throw m2g::Error("--job-map-dir " + o.job_map_dir + " must be an absolute path");
        if (!token_file.empty())
            o.token = na::read_token_file(token_file);
        o.state_file = state_file(state_dir);
        o.log = log_line;

        m2g::StopSignals stop_signals;  // before any thread starts

        na::NvmlPower power(nvml);
        na::NodeAgent agent(power, o);
        agent.adopt();
        na::HttpServer server(where, [&agent](const na::Request& r) { return agent.handle(r); });
        log_line("node " + node + ": serving " + server.url() + " (NVML " + power.describe() + ", job map " +
            o.job_map_dir + ", state " + (o.state_file.empty() ? "in memory only" : o.state_file) + ", " +
            (o.token.empty() ? "no token" : "bearer token required") + ", reconcile every " +
            std::to_string(reconcile_sec) + " s)");
        if (!where.loopback && o.token.empty())
            log_line("note: " + where.host + " is not a loopback address and no --token-file is set: whoever reaches "
                "it can change this node's GPU power limits");

        m2g::Periodic reconcile(std::chrono::seconds(reconcile_sec), [&agent] { agent.reconcile(); });
        log_line("stopping on " + stop_signals.wait() + "; caps in force stay");
        reconcile.stop();
        return 0;
    } catch (const std::exception& e) {
        log_line(std::string("error: ") + e.what());
        return 1;
    }
}
