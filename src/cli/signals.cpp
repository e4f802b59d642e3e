// m2g CLI: `m2g signals` — validate a live signals feed against m2g.conf, and
// show what job_submit/m2g believes of it (doc/signals.md); also where
// explain and status read the signals (read_shown_signals).
#include <CLI/CLI.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/base/source.hpp"
#include "core/model/config.hpp"
#include "core/power/signals.hpp"
#include "tools/reports/signals_report.hpp"

namespace m2g {
namespace cli {
namespace {

// The options of both subcommands (only one is parsed), and which one that is.
struct SignalsArgs {
    std::string conf, feed_file, status_file, at;
    bool as_json = false;
    CLI::App *validate = nullptr, *show = nullptr;
};

std::optional<int> run(const SignalsArgs& a)
{
    if (!*a.validate && !*a.show)
        return std::nullopt;
    const std::string conf = resolve_conf_path(a.conf);
    const int64_t now = a.at.empty() ? static_cast<int64_t>(std::time(nullptr)) : parse_signal_time(a.at, "--at");
    std::vector<std::string> warnings;
    Model m = load_model(conf, &warnings);
    print_warnings(warnings, conf);
    const AdmissionPolicy& ap = m.admission;
    if (*a.validate) {
        const Signals s = parse_signals(read_text_file(a.feed_file), a.feed_file, m, now);
        std::cout << a.feed_file << ": ok: " << summarize_feed(s, now) << "\n";
        if (now - s.generated_at > ap.signals_ttl_sec)
            std::cerr << "m2g: warning: " << a.feed_file << ": generated " << now - s.generated_at
                      << " s ago, more than SignalsTTLSec=" << ap.signals_ttl_sec
                      << ": the plugins would treat it as stale (SignalsFailSafe=" << to_string(ap.failsafe) << ")\n";
    } else {
        const ShownSignals src = read_shown_signals(m, conf, a.status_file, a.feed_file, now);
        const std::string body = format_signals(m, src.view, now, a.as_json);
        if (!a.as_json) {
            std::cout << "from:      " << src.note << "\n" << body;
        } else {
            std::cout << with_from(body, src.from, "format_signals", &src.path);
        }
    }
    return 0;
}

}  // namespace

ShownSignals read_shown_signals(const Model& m, const std::string& conf, const std::string& status_file,
                                const std::string& feed_file, int64_t now)
{
    const AdmissionPolicy& ap = m.admission;
    const std::string status = !status_file.empty() ? status_file : ap.signals_status_file;
    const bool use_status =
        !status_file.empty() || (feed_file.empty() && !status.empty() && ::access(status.c_str(), R_OK) == 0);
    ShownSignals src;
    if (use_status) {
        src.view = read_feed_status(status, m, ap.signals_ttl_sec, now);
        src.from = "status";
        src.path = status;
        struct stat st {};
        src.note = "status file " + status + ": what job_submit/m2g believes";
        if (::stat(status.c_str(), &st) == 0)
            src.note += " (written " + format_utc(st.st_mtime) + ")";
        return src;
    }
    src.path = feed_file.empty() ? ap.signals_file : feed_file;
    SignalFeed feed(src.path, ap.signals_ttl_sec, ap.failsafe, m, nullptr);
    feed.refresh(now);
    src.view = feed.view(now);
    if (src.path.empty()) {
        src.from = "none";
        src.note = "no feed: no SignalsFile= in " + conf + " and no --file";
    } else {
        src.from = "file";
        src.note = src.path + " as read now by this command, not the plugin's belief (" +
                   (!feed_file.empty() ? std::string("--file given")
                    : status.empty()   ? "no SignalsStatusFile= in " + conf
                                       : "status file " + status + " not readable") +
                   ")";
    }
    return src;
}

Command add_signals(CLI::App& app)
{
    auto a = std::make_shared<SignalsArgs>();
    auto* sig = app.add_subcommand("signals", "Validate and show the live signals feed (doc/signals.md)");
    sig->require_subcommand(1);
    a->validate = sig->add_subcommand("validate", "Check a signals feed against m2g.conf; print where it is wrong");
    a->validate->add_option("FILE", a->feed_file, "the feed (JSON, schema m2g.signals/v1)")->required();
    a->show = sig->add_subcommand(
        "show", "What job_submit/m2g believes (its status file), else the feed as read now: budgets, events, health");
    auto* status_opt = a->show->add_option(
        "--status", a->status_file, "status file written by job_submit/m2g (default: SignalsStatusFile= in m2g.conf)");
    a->show->add_option("--file", a->feed_file, "read this feed now instead (default: SignalsFile= in m2g.conf)")
        ->excludes(status_opt);
    add_json_flag(a->show, a->as_json);
    for (auto* sub : {a->validate, a->show}) {
        add_conf_option(sub, a->conf);
        sub->add_option("--at", a->at, "judge the feed as if it were TIME (RFC 3339 or epoch seconds), not now");
    }
    return [a] { return run(*a); };
}

}  // namespace cli
}  // namespace m2g
