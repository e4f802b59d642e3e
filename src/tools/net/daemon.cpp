#include "tools/net/daemon.hpp"

#include <pthread.h>

#include <utility>

namespace m2g {

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
