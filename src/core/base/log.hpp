// m2g core: the injected log sink. The core never writes to a log itself:
// whoever owns a core object (a plugin, the CLI, a test) hands it a Logger,
// and the plugins route it to slurm_info/error with "m2g: <subsystem>: ".
#pragma once

#include <functional>
#include <string>

namespace m2g {

enum class LogLevel { Info, Warning, Error };
using Logger = std::function<void(LogLevel, const std::string&)>;

// The sinks a session (placement, admission) logs to: the Logger, and the
// plugin's verbose and debug levels.
struct SessionLog {
    Logger log;
    std::function<void(const std::string&)> verbose;
    std::function<void(const std::string&)> debug;
};

}  // namespace m2g
