#include "tools/net/daemon.hpp"

#include <CLI/CLI.hpp>
#include <pthread.h>

#include <utility>

namespace m2g {

std::optional<int> parse_daemon_args(CLI::App& app, const char* prog, const char* version, int argc, char** argv)
{
    app.set_version_flag("--version", std::string(prog) + " " + version);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // Help and version exit 0; a usage error exits 2, as for m2g(1).
        return app.exit(e) == 0 ? 0 : 2;
    }
    return std::nullopt;
}

StopSignals::StopSignals()
{
    sigemptyset(&set_);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    signal(SIGPIPE, SIG_IGN);
}

std::string StopSignals::wait()
{
    int sig = 0;
    sigwait(&set_, &sig);
    return sig == SIGINT ? "SIGINT" : "SIGTERM";
}

Periodic::Periodic(std::chrono::seconds interval, std::function<void()> work)
{
    thread_ = std::thread([this, interval, work = std::move(work)] {
        std::unique_lock<std::mutex> lk(mu_);
        while (!cv_.wait_for(lk, interval, [this] { return stop_; })) {
            lk.unlock();
            work();
            lk.lock();
        }
    });
}

Periodic::~Periodic() { stop(); }

void Periodic::stop()
{
    {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable())
        thread_.join();
}

}  // namespace m2g
