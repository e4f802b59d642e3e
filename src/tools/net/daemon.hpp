// m2g tools: what m2g's long-running daemons (m2g-exporter, m2g-nodeagent,
// m2g-curtaild) share around their work: their command line's --version and
// exit statuses, stopping on SIGTERM/SIGINT, and one thread that does the
// periodic part (a refresh, a reconcile) until they stop.
#pragma once

#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace CLI {
class App;
}

namespace m2g {

// Adds --version ("<prog> <version>"; the daemon gives its PACKAGE_VERSION)
// to `app` and parses the command line. Returns the exit status when the
// daemon is to exit now: 0 after --help or --version, 2 for a usage error
// (as for m2g(1)); nothing when it is to run.
std::optional<int> parse_daemon_args(CLI::App& app, const char* prog, const char* version, int argc, char** argv);

// SIGTERM and SIGINT blocked in the calling thread (construct it before
// any thread starts, so every thread inherits the mask) and taken by
// wait(); SIGPIPE ignored (a client that hangs up is not a crash).
class StopSignals {
  public:
    StopSignals();
    // Blocks until one arrives: "SIGTERM" or "SIGINT".
    std::string wait();

  private:
    sigset_t set_;
};

// `work` on a thread of its own every `interval` (first after one
// interval) until stop() or destruction; a call in progress finishes.
class Periodic {
  public:
    Periodic(std::chrono::seconds interval, std::function<void()> work);
    ~Periodic();
    Periodic(const Periodic&) = delete;
    Periodic& operator=(const Periodic&) = delete;
    void stop();

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace m2g
