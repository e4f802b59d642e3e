// m2g-exporter: m2g's view of the cluster as Prometheus metrics (see
// m2g-exporter(1) and doc/metrics.md).
//
//   refresh thread   every --interval seconds: m2g.conf (re-read when it
//                    changed), Slurm's nodes and jobs through libslurm
//                    (slurmapi/), the signals feed (the status file
//                    job_submit/m2g writes, else the feed itself), the
//                    plugins' counters (StatsDir=) → compute_status() → one
//                    rendered exposition text, swapped in under a mutex.
//   HTTP             libmicrohttpd's internal polling thread serves that
//                    text; a scrape never talks to Slurm, so a scrape storm
//                    costs slurmctld nothing.
//   main thread      waits for SIGTERM/SIGINT, then stops both.
//
// Every metric name, type, label set and HELP text comes from
// kw::kMetrics (core/base/keys.hpp).
#include <CLI/CLI.hpp>
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "exporter/operator_page.hpp"
#include "m2g_config.h"
#include "slurmapi/slurm_view.hpp"
#include "core/model/config.hpp"
#include "core/base/error.hpp"
#include "tools/net/daemon.hpp"
#include "tools/net/listen.hpp"
#include "core/power/signals.hpp"
#include "core/obs/stats.hpp"
#include "tools/reports/forecast.hpp"
#include "tools/reports/status.hpp"
#include "tools/sim/sim.hpp"
#include "core/base/keys.hpp"

namespace {

namespace kw = m2g::kw;

constexpr const char* kProg = "m2g-exporter";
constexpr const char* kDefaultListen = "127.0.0.1:9842";
constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

void log(const std::string& msg) { std::fprintf(stderr, "%s: %s\n", kProg, msg.c_str()); }

int64_t now_s() { return static_cast<int64_t>(std::time(nullptr)); }

// ---- the text exposition format 0.0.4 ---------------------------------------------

// A sample value: integers as integers, other numbers in their shortest
// round-trip form; NaN and infinities as Prometheus spells them.
std::string fmt_value(double v)
{
    if (std::isnan(v))
        return "NaN";
    if (std::isinf(v))
        return v > 0 ? "+Inf" : "-Inf";
    if (v == std::floor(v) && std::fabs(v) < 1e15)
        return std::to_string(static_cast<int64_t>(v));
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
    return std::string(buf, r.ptr);
}

// Label values: backslash, double quote and line feed escaped.
std::string escape_label(const std::string& v)
{
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

// HELP text: backslash and line feed escaped.
std::string escape_help(const char* v)
{
    std::string out;
    for (const char* p = v; *p; ++p) {
        if (*p == '\\')
            out += "\\\\";
        else if (*p == '\n')
            out += "\\n";
        else
            out += *p;
    }
    return out;
}

using Labels = std::vector<std::pair<const char*, std::string>>;

// Builds the exposition one metric family at a time: HELP and TYPE once,
// right before the family's first sample, and its samples together.
class Exposition {
  public:
    void sample(const kw::Metric& m, const Labels& labels, double value) { line(m, m.name, labels, value); }

    // A histogram from per-bucket (non-cumulative) counts; bounds and sum
    // divided by `unit` (microseconds → seconds: 1e6; a division keeps
    // 10 us exactly "1e-05", where * 1e-6 would give 9.999999999999999e-06).
    void histogram(const kw::Metric& m, const Labels& labels, const m2g::HistogramData& h, double unit)
    {
        const std::string base = m.name;
        for (size_t i = 0; i <= h.bounds.size(); ++i) {
            Labels with = labels;
            with.emplace_back(kw::kLabelLe, i < h.bounds.size() ? fmt_value(h.bounds[i] / unit) : "+Inf");
            line(m, base + "_bucket", with, static_cast<double>(h.cumulative(i)));
        }
        line(m, base + "_sum", labels, h.sum / unit);
        line(m, base + "_count", labels, static_cast<double>(h.count()));
    }

    const std::string& text() const { return out_; }

  private:
    void line(const kw::Metric& m, const std::string& name, const Labels& labels, double value)
    {
        if (current_ != &m) {
            current_ = &m;
            out_ += std::string("# HELP ") + m.name + " " + escape_help(m.help) + "\n";
            out_ += std::string("# TYPE ") + m.name + " " + m.type + "\n";
        }
        out_ += name;
        if (!labels.empty()) {
            out_ += '{';
            for (size_t i = 0; i < labels.size(); ++i)
                out_ += (i ? "," : "") + std::string(labels[i].first) + "=\"" + escape_label(labels[i].second) + "\"";
            out_ += '}';
        }
        out_ += ' ' + fmt_value(value) + '\n';
    }

    std::string out_;
    const kw::Metric* current_ = nullptr;
};

// ---- what one refresh learnt, rendered ---------------------------------------------

struct Self {
    bool up = false;
    int64_t last_ok = 0;
    uint64_t errors = 0;
    double duration_s = 0;
};

const char* class_label(m2g::WorkloadClass c)
{
    return c == m2g::WorkloadClass::Unset ? "none" : m2g::to_string(c);
}

std::string event_scope(const m2g::CurtailmentEvent& e)
{
    switch (e.scope) {
    case m2g::EventScope::Site:
        return kw::kSigScopeSite;
    case m2g::EventScope::Row:
        return kw::kSigScopeRow + e.scope_name;
    case m2g::EventScope::Rack:
        return kw::kSigScopeRack + e.scope_name;
    }
    return kw::kSigScopeSite;
}

// `st`: the status (its cluster part only when `have_cluster`).
std::string render(const m2g::Model& m, const m2g::Status& st, bool have_cluster,
                   const std::optional<m2g::StatsSnapshot>& sel, const std::optional<m2g::StatsSnapshot>& adm,
                   const Self& self, int64_t now)
{
    Exposition x;
    if (have_cluster) {
        // Every class and state, zeros included, so series do not vanish.
        constexpr m2g::WorkloadClass kClasses[] = {
            m2g::WorkloadClass::Unset,     m2g::WorkloadClass::Training,  m2g::WorkloadClass::Finetune,
            m2g::WorkloadClass::Inference, m2g::WorkloadClass::Batch,     m2g::WorkloadClass::Benchmark,
            m2g::WorkloadClass::Dataproc,  m2g::WorkloadClass::Agentic};
        for (m2g::WorkloadClass c : kClasses) {
            m2g::ClassQueue q;
            for (const m2g::ClassQueue& cq : st.queues)
                if (cq.cls == c)
                    q = cq;
            const std::string cls = class_label(c);
            x.sample(kw::kMetricQueueJobs, {{kw::kLabelClass, cls}, {kw::kLabelState, "running"}}, q.running);
            x.sample(kw::kMetricQueueJobs, {{kw::kLabelClass, cls}, {kw::kLabelState, "pending"}},
                     q.pending - q.deferred);
            x.sample(kw::kMetricQueueJobs, {{kw::kLabelClass, cls}, {kw::kLabelState, "deferred"}}, q.deferred);
        }
        for (const auto& [reason, n] : st.pending_by_reason)
            x.sample(kw::kMetricPendingJobs, {{kw::kLabelReason, reason}}, n);
        x.sample(kw::kMetricDeferredJobs, {}, st.deferred_jobs);
        for (const m2g::DomainStatus& d : st.domains) {
            const std::string& name = m.domains[d.domain].name;
            x.sample(kw::kMetricDomainGpus, {{kw::kLabelDomain, name}, {kw::kLabelState, "used"}}, d.gpus_used);
            x.sample(kw::kMetricDomainGpus, {{kw::kLabelDomain, name}, {kw::kLabelState, "free"}}, d.gpus_free);
            x.sample(kw::kMetricDomainGpus, {{kw::kLabelDomain, name}, {kw::kLabelState, "degraded"}},
                     d.gpus_degraded);
        }
        for (const m2g::DomainStatus& d : st.domains)
            x.sample(kw::kMetricDomainDegraded, {{kw::kLabelDomain, m.domains[d.domain].name}},
                     d.nvlink_fault || d.gpus_degraded > 0 ? 1 : 0);
        x.sample(kw::kMetricWholeFreeDomains, {}, st.whole_free_domains);
        x.sample(kw::kMetricFragmentation, {}, st.fragmentation);
    }

    // Power, events and signals come from the feed: served also when Slurm
    // cannot be reached.
    const auto scope = [](const m2g::PowerStatus& p) {
        return Labels{{kw::kLabelScope, p.scope}, {kw::kLabelName, p.name}};
    };
    for (const m2g::PowerStatus& p : st.power)
        if (p.budget_kw >= 0)
            x.sample(kw::kMetricPowerBudget, scope(p), p.budget_kw);
    for (const m2g::PowerStatus& p : st.power)
        if (p.effective_kw >= 0)
            x.sample(kw::kMetricPowerEffective, scope(p), p.effective_kw);
    for (const m2g::PowerStatus& p : st.power)
        if (p.draw_kw >= 0)
            x.sample(kw::kMetricPowerDraw, scope(p), p.draw_kw);
    for (const m2g::PowerStatus& p : st.power)
        if (p.effective_kw >= 0 && p.draw_kw >= 0)
            x.sample(kw::kMetricPowerHeadroom, scope(p), p.effective_kw - p.draw_kw);

    x.sample(kw::kMetricActiveEvents, {}, static_cast<double>(st.active_events.size()));
    for (const m2g::CurtailmentEvent* e : st.active_events)
        x.sample(kw::kMetricEventInfo, {{kw::kLabelId, e->id}, {kw::kLabelScope, event_scope(*e)}}, 1);
    for (const m2g::CurtailmentEvent* e : st.active_events)
        x.sample(kw::kMetricEventEnd, {{kw::kLabelId, e->id}, {kw::kLabelScope, event_scope(*e)}},
                 static_cast<double>(e->end));

    const m2g::SignalsView& v = st.signals;
    if (v.snap && v.age_s >= 0)
        x.sample(kw::kMetricSignalsAge, {}, static_cast<double>(v.age_s));
    x.sample(kw::kMetricSignalsTtl, {}, m.admission.signals_ttl_sec);
    for (m2g::FeedState s : {m2g::FeedState::NotConfigured, m2g::FeedState::Fresh, m2g::FeedState::Stale,
                             m2g::FeedState::Missing, m2g::FeedState::Corrupt})
        x.sample(kw::kMetricSignalsState, {{kw::kLabelState, m2g::to_string(s)}}, v.state == s ? 1 : 0);

    // The plugins' counters.
    if (sel) {
        x.histogram(kw::kMetricPlacementDomains, {}, sel->placement_domains, 1);
        x.sample(kw::kMetricNvlinkFitOne, {}, static_cast<double>(sel->fit_one_domain));
        x.sample(kw::kMetricNvlinkContained, {}, static_cast<double>(sel->contained));
        if (sel->fit_one_domain > 0)
            x.sample(kw::kMetricNvlinkContainment, {},
                     static_cast<double>(sel->contained) / static_cast<double>(sel->fit_one_domain));
    }
    const std::pair<const char*, const std::optional<m2g::StatsSnapshot>*> plugins[] = {
        {kw::kPluginSelect, &sel}, {kw::kPluginAdmission, &adm}};
    for (const auto& [name, snap] : plugins)
        if (*snap)
            x.histogram(kw::kMetricDecisionDuration, {{kw::kLabelPlugin, name}}, (*snap)->latency_us, 1e6);
    for (const auto& [name, snap] : plugins)
        if (*snap)
            for (const auto& [verdict, n] : (*snap)->decisions)
                x.sample(kw::kMetricDecisions, {{kw::kLabelPlugin, name}, {kw::kLabelVerdict, verdict}},
                         static_cast<double>(n));
    for (const auto& [name, snap] : plugins)
        if (*snap)
            x.sample(kw::kMetricStatsAge, {{kw::kLabelPlugin, name}},
                     static_cast<double>(std::max<int64_t>(0, now - (*snap)->written_at)));

    x.sample(kw::kMetricExporterUp, {}, self.up ? 1 : 0);
    if (self.last_ok > 0)
        x.sample(kw::kMetricExporterLastRefresh, {}, static_cast<double>(self.last_ok));
    x.sample(kw::kMetricExporterRefreshErrors, {}, static_cast<double>(self.errors));
    x.sample(kw::kMetricExporterRefreshDuration, {}, self.duration_s);
    return x.text();
}

// The forecast's metrics: the bands a few steps ahead, the starts, the
// flexibility curve. Served with the refresh's, from the last forecast.
std::string render_forecast(const m2g::Forecast& f)
{
    Exposition x;
    const std::pair<const char*, double> kAhead[] = {{"1h", 3600}, {"6h", 21600}, {"24h", 86400}};
    for (const m2g::ForecastBand& b : f.bands)
        for (const auto& [label, ahead] : kAhead) {
            const size_t k = static_cast<size_t>(std::llround(ahead / f.step_s));
            if (k >= b.p50.size())
                continue;
            for (const auto& [q, v] : {std::pair<const char*, double>{"0.1", b.p10[k]}, {"0.5", b.p50[k]},
                                       {"0.9", b.p90[k]}})
                x.sample(kw::kMetricForecastPower,
                         {{kw::kLabelScope, b.scope}, {kw::kLabelName, b.name}, {kw::kLabelQuantile, q},
                          {kw::kLabelAhead, label}},
                         v);
        }
    for (const auto& [label, ahead] : kAhead) {
        int n = 0;
        for (const m2g::ForecastJob& j : f.jobs)
            n += j.start >= 0 && j.start <= f.made_at + static_cast<int64_t>(ahead);
        x.sample(kw::kMetricForecastStarts, {{kw::kLabelWithin, label}}, n);
    }
    int never = 0;
    for (const m2g::ForecastJob& j : f.jobs)
        never += j.start < 0;
    x.sample(kw::kMetricForecastStarts, {{kw::kLabelWithin, "never"}}, never);
    auto flex_labels = [](const m2g::FlexOffer& o) {
        return Labels{{kw::kLabelDepthPct, fmt_value(o.req.depth_pct)},
                      {kw::kLabelDurationH, fmt_value(o.req.duration_s / 3600.0)}};
    };
    for (const m2g::FlexOffer& o : f.flex)
        x.sample(kw::kMetricFlexAvailable, flex_labels(o), o.shed_mean_kw);
    for (const m2g::FlexOffer& o : f.flex)
        x.sample(kw::kMetricFlexMet, flex_labels(o), o.met ? 1 : 0);
    for (const m2g::FlexOffer& o : f.flex)
        x.sample(kw::kMetricFlexDelay, flex_labels(o), o.deferrable_delay_gpu_h + o.nondeferrable_delay_gpu_h);
    for (const m2g::FlexOffer& o : f.flex)
        if (o.priced) {
            Labels l = flex_labels(o);
            l.emplace_back(kw::kLabelCurrency, o.currency);
            x.sample(kw::kMetricFlexCost, l, o.delay_cost);
        }
    x.sample(kw::kMetricForecastTimestamp, {}, static_cast<double>(f.made_at));
    x.sample(kw::kMetricForecastDuration, {}, f.wall_s);
    return x.text();
}

// ---- the refresh ------------------------------------------------------------------

// Logs a condition when it starts, changes or ends; not once per refresh.
class Condition {
  public:
    explicit Condition(std::string what) : what_(std::move(what)) {}
    void set(const std::string& error)
    {
        if (error == last_)
            return;
        if (!error.empty())
            log(error);
        else
            log(what_ + ": ok again");
        last_ = error;
    }

  private:
    std::string what_;
    std::string last_;
};

class Refresher {
  public:
    explicit Refresher(std::string conf) : conf_(std::move(conf)) {}

    // Load m2g.conf the first time; throws so the exporter does not start
    // on a broken configuration.
    void load_first()
    {
        conf_text_ = m2g::read_text_file(conf_);
        model_ = std::make_shared<const m2g::Model>(m2g::build_model(m2g::parse_m2g_conf(conf_text_, conf_)));
    }

    const m2g::Model& model() const { return *model_; }

    // One refresh; never throws. Returns the exposition text.
    std::string refresh()
    {
        const auto t0 = std::chrono::steady_clock::now();
        const int64_t now = now_s();
        bool failed = false;
        reload_conf(failed);
        const m2g::Model& m = *model_;

        std::string err;
        m2g::ClusterView cv;
        try {
            cv = m2g::load_cluster_view(m, &err);
        } catch (const std::exception& e) {
            err = e.what();
        }
        if (err.empty() && cv.taken_at == 0)
            err = "no state from Slurm";
        slurm_cond_.set(err.empty() ? "" : "cannot read Slurm's state: " + err);
        self_.up = err.empty();
        failed = failed || !self_.up;

        const m2g::SignalsView v = signals_view(m, now);
        const m2g::Status st = m2g::compute_status(m, self_.up ? cv : m2g::ClusterView{}, v, now);
        if (self_.up) {
            std::lock_guard<std::mutex> lk(last_mu_);
            last_ = std::make_shared<const State>(State{model_, std::move(cv), v, now});
        }
        std::optional<m2g::StatsSnapshot> sel = read_stats(m, kw::kPluginSelect, sel_cond_, failed);
        std::optional<m2g::StatsSnapshot> adm = read_stats(m, kw::kPluginAdmission, adm_cond_, failed);

        {
            auto js = std::make_shared<const std::string>(m2g::format_status(m, st, true));
            std::lock_guard<std::mutex> lk(last_mu_);
            status_json_ = std::move(js);
        }
        if (failed)
            ++self_.errors;
        else
            self_.last_ok = now;
        self_.duration_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return render(m, st, self_.up, sel, adm, self_, now);
    }

    bool up() const { return self_.up; }

    // What the last refresh that reached Slurm saw, for the forecast
    // thread (null before the first): the model it was read against too.
    struct State {
        std::shared_ptr<const m2g::Model> model;
        m2g::ClusterView cluster;
        m2g::SignalsView signals;
        int64_t at = 0;
    };
    std::shared_ptr<const State> last() const
    {
        std::lock_guard<std::mutex> lk(last_mu_);
        return last_;
    }
    // The last refresh's status, as `m2g status --json` prints it.
    std::shared_ptr<const std::string> status_json() const
    {
        std::lock_guard<std::mutex> lk(last_mu_);
        return status_json_;
    }

  private:
    void reload_conf(bool& failed)
    {
        try {
            std::string text = m2g::read_text_file(conf_);
            if (text != conf_text_) {
                auto m = std::make_shared<const m2g::Model>(m2g::build_model(m2g::parse_m2g_conf(text, conf_)));
                feed_.reset();  // it refers to the old model
                model_ = std::move(m);
                conf_text_ = std::move(text);
                log(conf_ + " reloaded");
            }
            conf_cond_.set("");
        } catch (const std::exception& e) {
            conf_cond_.set(std::string(e.what()) + "; keeping the previous m2g.conf in force");
            failed = true;
        }
    }

    // What job_submit/m2g believes (SignalsStatusFile=) when it is there,
    // else the feed as this exporter reads it.
    m2g::SignalsView signals_view(const m2g::Model& m, int64_t now)
    {
        const m2g::AdmissionPolicy& ap = m.admission;
        if (!ap.signals_status_file.empty() && ::access(ap.signals_status_file.c_str(), R_OK) == 0) {
            try {
                m2g::SignalsView v = m2g::read_feed_status(ap.signals_status_file, m, ap.signals_ttl_sec, now);
                status_cond_.set("");
                return v;
            } catch (const std::exception& e) {
                status_cond_.set(std::string(e.what()) + "; reading the feed itself instead");
            }
        }
        if (ap.signals_file.empty())
            return {};
        if (!feed_)
            feed_ = std::make_unique<m2g::SignalFeed>(ap.signals_file, ap.signals_ttl_sec, ap.failsafe, m,
                                                      [](m2g::LogLevel, const std::string& msg) { log(msg); });
        feed_->refresh(now);
        return feed_->view(now);
    }

    std::optional<m2g::StatsSnapshot> read_stats(const m2g::Model& m, const char* plugin, Condition& cond,
                                                 bool& failed)
    {
        if (m.admission.stats_dir.empty())
            return std::nullopt;
        const std::string path = m2g::stats_path(m.admission.stats_dir, plugin);
        struct stat sb {};
        if (::stat(path.c_str(), &sb) != 0)
            return std::nullopt;  // the plugin is not loaded or has not published yet
        try {
            m2g::StatsSnapshot s = m2g::read_stats_file(path);
            cond.set("");
            return s;
        } catch (const std::exception& e) {
            cond.set(e.what());
            failed = true;
            return std::nullopt;
        }
    }

    const std::string conf_;
    std::string conf_text_;
    std::shared_ptr<const m2g::Model> model_;
    mutable std::mutex last_mu_;
    std::shared_ptr<const State> last_;
    std::shared_ptr<const std::string> status_json_;
    std::unique_ptr<m2g::SignalFeed> feed_;
    Self self_;
    Condition conf_cond_{"m2g.conf"}, slurm_cond_{"Slurm"}, status_cond_{"signals status file"},
        sel_cond_{"select/m2g counters"}, adm_cond_{"job_submit/m2g counters"};
};

// ---- serving ----------------------------------------------------------------------

struct Server {
    std::mutex mu;
    std::shared_ptr<const std::string> metrics;  // the last rendered exposition
    std::shared_ptr<const std::string> status_json;  // the last refresh's status
    std::shared_ptr<const std::string> forecast_metrics, forecast_json;  // the last forecast's
    std::string forecast_off;  // why /forecast.json has nothing ("" once one is made)
};

const char* const kNotFound = "Not found. Metrics are at /metrics.\n";

MHD_Result respond(MHD_Connection* conn, unsigned status, const std::string& body, const char* type)
{
    MHD_Response* r =
        MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    const MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

MHD_Result handle(void* cls, MHD_Connection* conn, const char* url, const char* method, const char*,
                  const char*, size_t* upload_size, void** con_cls)
{
    auto* srv = static_cast<Server*>(cls);
    if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 && std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        // Answer once the (ignored) request body is read.
        if (*con_cls == nullptr) {
            *con_cls = srv;
            return MHD_YES;
        }
        if (*upload_size) {
            *upload_size = 0;
            return MHD_YES;
        }
        return respond(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "Only GET and HEAD.\n", "text/plain; charset=utf-8");
    }
    const std::string path = url ? url : "";
    if (path == "/metrics") {
        std::shared_ptr<const std::string> text, fc;
        {
            std::lock_guard<std::mutex> lk(srv->mu);
            text = srv->metrics;
            fc = srv->forecast_metrics;
        }
        return respond(conn, MHD_HTTP_OK, (text ? *text : std::string()) + (fc ? *fc : std::string()), kContentType);
    }
    if (path == "/status.json") {
        std::shared_ptr<const std::string> js;
        {
            std::lock_guard<std::mutex> lk(srv->mu);
            js = srv->status_json;
        }
        return respond(conn, MHD_HTTP_OK, js ? *js : std::string("{}\n"), "application/json");
    }
    if (path == "/forecast.json") {
        std::shared_ptr<const std::string> js;
        std::string why;
        {
            std::lock_guard<std::mutex> lk(srv->mu);
            js = srv->forecast_json;
            why = srv->forecast_off;
        }
        if (!js)
            return respond(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "No forecast: " + why + "\n", "text/plain; charset=utf-8");
        return respond(conn, MHD_HTTP_OK, *js, "application/json");
    }
    if (path == "/")  // the operator page (operator_page.hpp), drawn from the two JSON above
        return respond(conn, MHD_HTTP_OK, m2g_exporter::kOperatorPage, "text/html; charset=utf-8");
    return respond(conn, MHD_HTTP_NOT_FOUND, kNotFound, "text/plain; charset=utf-8");
}

// One forecast from what the last refresh saw, with the flexibility curve
// from then: its metrics and its JSON (m2g forecast --json's).
std::pair<std::string, std::string> forecast_once(const Refresher::State& st, const m2g::ForecastOptions& base)
{
    m2g::ForecastOptions o = base;
    o.flex = m2g::flex_curve(st.at);
    const m2g::Forecast f = m2g::make_forecast(*st.model, st.cluster, st.signals, st.at, o);
    return {render_forecast(f), m2g::format_forecast(*st.model, f, true)};
}

void list_metrics()
{
    for (const kw::Metric* m : kw::kMetrics)
        std::printf("%s\t%s\t%s\t%s\n", m->name, m->type, *m->labels ? m->labels : "-", m->help);
}

}  // namespace

int main(int argc, char** argv)
{
    std::string listen = kDefaultListen, conf, power_cdf, power_cluster = "kalos";
    int interval = 15, forecast_interval = 60, samples = 20, forecast_threads = 1;
    bool once = false, list = false;
    CLI::App app{"m2g-exporter: m2g's view of the cluster (queues, NVLink domains, power, demand-response events, "
                 "signals, plugin decisions) as Prometheus metrics. See m2g-exporter(1) and doc/metrics.md."};
    app.add_option("--listen", listen, "address:port to serve on (default " + std::string(kDefaultListen) +
                                           ", loopback only; 0 as port picks a free one)");
    app.add_option("--conf", conf, m2g::kConfOptionHelp)->type_name("FILE");
    app.add_option("--interval", interval, "refresh Slurm's state at most every this many seconds (default 15)")
        ->check(CLI::Range(1, 3600));
    app.add_flag("--once", once, "refresh once, print the metrics on standard output and exit (5 when Slurm "
                                 "could not be read)");
    app.add_flag("--list-metrics", list, "print every metric (name, type, labels, help) and exit");
    app.add_option("--forecast-interval", forecast_interval,
                   "run m2g forecast (with the flexibility curve) at most every this many seconds, from the last "
                   "refresh, and serve it (default 60; 0: no forecast)")
        ->check(CLI::Range(0, 86400));
    app.add_option("--power-cdf", power_cdf,
                   "the forecast's per-GPU power distribution (the Acme CSV), for P10/P90 bands with width; "
                   "default: the classes' estimates")
        ->type_name("CSV");
    app.add_option("--power-cluster", power_cluster, "the CDF's cluster column (kalos or seren)");
    app.add_option("--samples", samples, "the forecast's runs with drawn power (default 20)")
        ->check(CLI::Range(1, 1000));
    app.add_option("--forecast-threads", forecast_threads,
                   "the forecast's runs at once, each on a thread of its own (default 1: it shares the host "
                   "with slurmctld; the forecast is the same for any count)")
        ->check(CLI::Range(1, 1024));
    if (const std::optional<int> exit_now = m2g::parse_daemon_args(app, kProg, PACKAGE_VERSION, argc, argv))
        return *exit_now;

    if (list) {
        list_metrics();
        return 0;
    }
    try {
        const m2g::Listen where = m2g::parse_listen(listen, 9842);
        conf = m2g::resolve_conf_path(conf);
        Refresher refresher(conf);
        refresher.load_first();
        m2g::PowerCdf cdf;
        m2g::ForecastOptions fo;
        fo.samples = samples;
        fo.threads = forecast_threads;
        if (!power_cdf.empty()) {
            cdf = m2g::read_power_cdf(power_cdf, power_cluster);
            fo.power = &cdf;
        }
        if (once) {
            std::cout << refresher.refresh() << std::flush;
            if (forecast_interval > 0)
                if (const auto st = refresher.last())
                    std::cout << forecast_once(*st, fo).first << std::flush;
            return refresher.up() ? 0 : 5;  // Slurm cannot be reached, as for m2g(1)
        }

        m2g::StopSignals stop_signals;  // before any thread starts

        Server srv;
        srv.metrics = std::make_shared<const std::string>(refresher.refresh());
        srv.status_json = refresher.status_json();

        MHD_Daemon* d = MHD_start_daemon(
            MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG | (where.ipv6 ? MHD_USE_IPv6 : 0),
            static_cast<uint16_t>(where.port), nullptr, nullptr, &handle, &srv, MHD_OPTION_SOCK_ADDR,
            reinterpret_cast<const sockaddr*>(&where.addr), MHD_OPTION_CONNECTION_LIMIT, 64u,
            MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
        if (!d)
            throw m2g::Error("cannot listen on " + listen + ": " + std::strerror(errno) +
                             " (another process on that port? choose one with --listen)");
        const MHD_DaemonInfo* info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        const int port = info ? info->port : where.port;
        const std::string host = where.ipv6 ? "[" + where.host + "]" : where.host;
        log("serving http://" + host + ":" + std::to_string(port) + "/metrics (m2g.conf " + conf + ", refresh every " +
            std::to_string(interval) + " s)");
        if (!where.loopback)
            log("note: " + where.host + " is not a loopback address: whoever reaches it can read these metrics");

        m2g::Periodic refresh(std::chrono::seconds(interval), [&] {
            auto text = std::make_shared<const std::string>(refresher.refresh());
            auto status = refresher.status_json();
            std::lock_guard<std::mutex> lk(srv.mu);
            srv.metrics = std::move(text);
            srv.status_json = std::move(status);
        });
        // The forecast: its own thread, from the last refresh, so that a
        // scrape never waits for it and never recomputes it.
        srv.forecast_off = forecast_interval > 0 ? "none made yet" : "off (--forecast-interval 0)";
        std::unique_ptr<m2g::Periodic> forecast;
        if (forecast_interval > 0) {
            auto cond = std::make_shared<Condition>("forecast");
            std::function<void()> work = [&srv, &refresher, fo, cond] {
                const auto st = refresher.last();
                if (!st)
                    return;  // Slurm not read yet
                try {
                    auto [metrics, json] = forecast_once(*st, fo);
                    auto m = std::make_shared<const std::string>(std::move(metrics));
                    auto j = std::make_shared<const std::string>(std::move(json));
                    std::lock_guard<std::mutex> lk(srv.mu);
                    srv.forecast_metrics = std::move(m);
                    srv.forecast_json = std::move(j);
                    srv.forecast_off.clear();
                    cond->set("");
                } catch (const std::exception& e) {
                    cond->set(std::string("forecast failed: ") + e.what() + "; serving the last one");
                }
            };
            work();  // the first at once, while /metrics is already served
            forecast = std::make_unique<m2g::Periodic>(std::chrono::seconds(forecast_interval), work);
        }
        log("stopping on " + stop_signals.wait());
        MHD_stop_daemon(d);
        if (forecast)
            forecast->stop();
        refresh.stop();
        return 0;
    } catch (const std::exception& e) {
        log(std::string("error: ") + e.what());
        return 1;
    }
}
