// m2g tools: what m2g's long-running daemons (m2g-exporter, m2g-nodeagent)
// share around their work: stopping on SIGTERM/SIGINT, and one thread that
// does the periodic part (a refresh, a reconcile) until they stop.
#pragma once

#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace m2g {

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
