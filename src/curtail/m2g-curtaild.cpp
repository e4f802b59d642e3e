// m2g-curtaild: the curtailment controller (issue 19, m2g-curtaild(8)).
//
// Every CurtailIntervalSec it reads the signals feed (the same SignalFeed
// the plugins use) and the running jobs through libslurm, and runs one
// pass of the core loop (core/power/curtail_tick.hpp: plan, act, re-plan
// after a cap that failed, restore, monitor; the simulator runs the same
// pass) with this actuator:
//   caps           PUT/DELETE on the m2g-nodeagent of each of the job's nodes
//                  (NodeAgentURL=, or --agent-map), which sets the NVML power
//                  limit on exactly the job's GPUs;
//   suspend/resume slurm_suspend()/slurm_resume();
//   requeue        the job's own --signal first (signal= in its annotation),
//                  slurm_requeue() CheckpointGraceSec later.
// Each action goes into the job's AdminComment (the curtail= part of the
// m2g segment, which sacct and `m2g explain` show) and into the audit log,
// one JSON object per line.
//
// Why a daemon beside slurmctld and not a thread inside job_submit/m2g:
// suspend, resume and requeue are RPCs *to* slurmctld, which a plugin
// thread would have to send to its own process (while slurmctld's locks may
// be held by the thread that called the plugin), and every cap is an HTTP
// round trip to a node, which must never stall scheduling. As a separate
// process it can fail, restart (its state file keeps what it curtailed) or
// be stopped without touching slurmctld; it needs only the operator
// privileges those RPCs need. It runs as SlurmUser under systemd
// (contrib/systemd/m2g-curtaild.service).
#include <CLI/CLI.hpp>
#include <json-c/json.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "m2g_config.h"
#include "nodeagent/agents.hpp"
#include "nodeagent/client.hpp"
#include "slurmapi/slurm_control.hpp"
#include "slurmapi/slurm_view.hpp"
#include "core/job/annotation.hpp"
#include "core/model/config.hpp"
#include "core/power/curtail.hpp"
#include "core/power/curtail_tick.hpp"
#include "core/base/error.hpp"
#include "core/base/json.hpp"
#include "core/base/text.hpp"
#include "core/power/signals.hpp"
#include "tools/net/daemon.hpp"
#include "tools/reports/status.hpp"
#include "core/base/keys.hpp"

namespace {

constexpr const char* kProg = "m2g-curtaild";
std::atomic<bool> g_stop{false};

void on_signal(int)
{
    g_stop = true;
}

std::string utc_now()
{
    return m2g::format_utc(std::time(nullptr));
}

void log(const std::string& line)
{
    std::fprintf(stderr, "%s %s: %s\n", utc_now().c_str(), kProg, line.c_str());
    std::fflush(stderr);
}

std::string read_text(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
        throw m2g::Error(path + ": " + std::strerror(errno));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Write `text` to `path` through a temporary file and rename(2).
void write_atomic(const std::string& path, const std::string& text)
{
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << text;
        if (!out.flush())
            throw m2g::Error(tmp + ": " + std::strerror(errno));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
        throw m2g::Error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
}

// What m2g-curtaild did to one job, kept across restarts.
struct Record {
    double cap_w = 0;
    bool suspended = false;
    int64_t signalled_at = 0;
    std::vector<m2g::CurtailChange> changes;
    std::string curtailed_for;
    uint64_t order = 0;
};

struct State {
    m2g::CurtailState plan;
    std::map<uint32_t, Record> jobs;
};

// A Record holds a CurtailJob's marks by the same names: one list of them
// serves both ways, job to record and record to job.
template <class To, class From>
void copy_marks(To& to, const From& from)
{
    to.cap_w = from.cap_w;
    to.suspended = from.suspended;
    to.signalled_at = from.signalled_at;
    to.changes = from.changes;
    to.curtailed_for = from.curtailed_for;
    to.order = from.order;
}

std::string state_json(const State& s)
{
    using namespace m2g;
    JsonPtr root = json_new_object();
    json_add_string(root.get(), "schema", "m2g.curtaild-state/v1");
    json_add_int(root.get(), "last_restore", s.plan.last_restore);
    json_add_int(root.get(), "next_order", static_cast<int64_t>(s.plan.next_order));
    JsonPtr jobs = json_new_object();
    for (const auto& [id, r] : s.jobs) {
        JsonPtr j = json_new_object();
        json_add_double(j.get(), "cap_w", r.cap_w);
        json_add_bool(j.get(), "suspended", r.suspended);
        json_add_int(j.get(), "signalled_at", r.signalled_at);
        // The feed-lag correction's history (curtail.hpp, CurtailJob::changes).
        JsonPtr changes = json_new_array();
        for (const m2g::CurtailChange& c : r.changes) {
            JsonPtr one = json_new_object();
            json_add_int(one.get(), "at", c.at);
            json_add_double(one.get(), "w_gpu_before", c.w_gpu_before);
            json_append(changes.get(), std::move(one));
        }
        json_add_value(j.get(), "changes", std::move(changes));
        json_add_string(j.get(), "curtailed_for", r.curtailed_for);
        json_add_int(j.get(), "order", static_cast<int64_t>(r.order));
        json_add_value(jobs.get(), std::to_string(id).c_str(), std::move(j));
    }
    json_add_value(root.get(), "jobs", std::move(jobs));
    return json_object_to_json_string_ext(root.get(), JSON_C_TO_STRING_PRETTY) + std::string("\n");
}

State read_state(const std::string& path)
{
    State s;
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0)
        return s;
    json_object* root = json_tokener_parse(read_text(path).c_str());
    if (!root || !json_object_is_type(root, json_type_object)) {
        if (root)
            json_object_put(root);
        throw m2g::Error(path + ": not an m2g.curtaild-state/v1 JSON object; move it away to start afresh (the "
                         "caps it recorded are lifted by each node agent when their jobs end)");
    }
    auto num = [](json_object* o, const char* k) {
        json_object* v = nullptr;
        return json_object_object_get_ex(o, k, &v) ? json_object_get_double(v) : 0.0;
    };
    s.plan.last_restore = static_cast<int64_t>(num(root, "last_restore"));
    s.plan.next_order = std::max<uint64_t>(1, static_cast<uint64_t>(num(root, "next_order")));
    json_object* jobs = nullptr;
    if (json_object_object_get_ex(root, "jobs", &jobs) && json_object_is_type(jobs, json_type_object)) {
        json_object_object_foreach(jobs, key, val)
        {
            char* end = nullptr;
            const unsigned long id = std::strtoul(key, &end, 10);
            if (!end || *end || id == 0 || !json_object_is_type(val, json_type_object))
                continue;
            Record r;
            r.cap_w = num(val, "cap_w");
            json_object* b = nullptr;
            r.suspended = json_object_object_get_ex(val, "suspended", &b) && json_object_get_boolean(b);
            r.signalled_at = static_cast<int64_t>(num(val, "signalled_at"));
            json_object* ch = nullptr;
            if (json_object_object_get_ex(val, "changes", &ch) && json_object_is_type(ch, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(ch); ++i) {
                    json_object* c = json_object_array_get_idx(ch, i);
                    if (c && json_object_is_type(c, json_type_object))
                        r.changes.push_back({static_cast<int64_t>(num(c, "at")), num(c, "w_gpu_before")});
                }
            } else if (num(val, "changed_at") > 0) {
                // A state file of an m2g-curtaild before the history: its last change.
                r.changes.push_back({static_cast<int64_t>(num(val, "changed_at")), num(val, "w_gpu_before")});
            }
            json_object* cf = nullptr;
            if (json_object_object_get_ex(val, "curtailed_for", &cf))
                r.curtailed_for = json_object_get_string(cf);
            r.order = static_cast<uint64_t>(num(val, "order"));
            s.jobs[static_cast<uint32_t>(id)] = r;
        }
    }
    json_object_put(root);
    return s;
}

class Controller {
  public:
    Controller(std::string conf, std::string state_path, std::string audit_path, std::string agent_map,
               std::string status_path)
        : conf_(std::move(conf)),
          state_path_(std::move(state_path)),
          audit_path_(std::move(audit_path)),
          agent_map_path_(std::move(agent_map)),
          status_path_(std::move(status_path))
    {
        state_ = read_state(state_path_);
        load_conf(true);
        if (!agent_map_path_.empty())
            agent_map_ = m2g::nodeagent::read_agent_map(agent_map_path_);
    }

    int interval() const { return model_ ? model_->admission.curtail_interval_sec : 5; }

    // One pass. Never throws.
    void tick()
    {
        try {
            load_conf(false);
            run(static_cast<int64_t>(std::time(nullptr)));
        } catch (const std::exception& e) {
            log(std::string("error: ") + e.what() + "; nothing changed this pass");
        }
    }

  private:
    void load_conf(bool first)
    {
        struct stat st {};
        if (::stat(conf_.c_str(), &st) != 0) {
            if (first)
                throw m2g::Error(conf_ + ": " + std::strerror(errno));
            return;
        }
        const int64_t mtime = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
        if (!first && mtime == conf_mtime_)
            return;
        conf_mtime_ = mtime;
        try {
            auto m = std::make_unique<m2g::Model>(m2g::load_model(conf_));
            feed_.reset();
            model_ = std::move(m);
            const m2g::AdmissionPolicy& ap = model_->admission;
            if (!ap.signals_file.empty()) {
                feed_ = std::make_unique<m2g::SignalFeed>(
                    ap.signals_file, ap.signals_ttl_sec, ap.failsafe, *model_, [](m2g::LogLevel, const std::string& l) {
                        log(l);
                    });
                feed_->refresh(std::time(nullptr));
                feed_->start(ap.signals_poll_sec);
            }
            token_ = m2g::nodeagent::read_token(ap.node_agent_token_file);
            log("m2g.conf " + conf_ + " loaded: CurtailMode=" + m2g::to_string(ap.curtail_mode) + ", " +
                std::to_string(model_->nodes.size()) + " nodes, every " + std::to_string(ap.curtail_interval_sec) +
                " s" + (ap.signals_file.empty() ? ", no SignalsFile (m2g.conf budgets only)" : ", signals " +
                                                                                                 ap.signals_file));
        } catch (const std::exception& e) {
            if (first || !model_)
                throw;
            log(std::string("m2g.conf not reloaded, keeping the previous one: ") + e.what());
        }
    }

    std::string agent_url(const std::string& node)
    {
        if (auto it = agent_map_.find(node); it != agent_map_.end())
            return it->second;
        if (addrs_.empty() || !addrs_.count(node))
            addrs_ = m2g::node_addresses();
        const auto a = addrs_.find(node);
        return m2g::nodeagent::expand_url(model_->admission.node_agent_url, node, a == addrs_.end() ? node : a->second);
    }

    void audit(const m2g::CurtailAction& a, const std::string& mode, const std::string& result, int64_t now)
    {
        json_object* o = json_object_new_object();
        json_object_object_add(o, "time", json_object_new_string(m2g::format_utc(now).c_str()));
        json_object_object_add(o, "mode", json_object_new_string(mode.c_str()));
        json_object_object_add(o, "job", json_object_new_int64(a.job));
        json_object_object_add(o, "step", json_object_new_string(m2g::to_string(a.step)));
        if (a.step == m2g::CurtailStep::Cap || a.step == m2g::CurtailStep::Uncap)
            json_object_object_add(o, "cap_w", json_object_new_double(a.cap_w));
        json_object_object_add(o, "delta_kw", json_object_new_double(a.delta_kw));
        json_object_object_add(o, "scope", json_object_new_string(a.scope.c_str()));
        json_object_object_add(o, "cause", json_object_new_string(a.cause.c_str()));
        json_object_object_add(o, "reason", json_object_new_string(a.reason.c_str()));
        json_object_object_add(o, "result", json_object_new_string(result.c_str()));
        const std::string line = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        json_object_put(o);
        log("JobId=" + std::to_string(a.job) + " " + m2g::to_string(a.step) +
            (a.step == m2g::CurtailStep::Cap ? " to " + std::to_string(static_cast<int>(a.cap_w)) + " W" : "") +
            (mode == "monitor" ? " (monitor: not applied)" : "") + ": " + a.reason + " [" + result + "]");
        if (audit_path_.empty())
            return;
        if (FILE* f = std::fopen(audit_path_.c_str(), "a")) {
            std::fprintf(f, "%s\n", line.c_str());
            std::fclose(f);
        } else if (!audit_failed_) {
            log("cannot append to the audit log " + audit_path_ + ": " + std::strerror(errno));
            audit_failed_ = true;
        }
    }

    // The actions' way out: caps through the node agents of the job's
    // nodes, the rest through libslurm.
    class Actuator : public m2g::CurtailActuator {
      public:
        explicit Actuator(Controller& c) : c_(c) {}

        m2g::ActResult cap(const m2g::CurtailJob& j, double w_gpu) override { return set_caps(j, w_gpu, true); }
        m2g::ActResult uncap(const m2g::CurtailJob& j, double w_gpu) override { return set_caps(j, w_gpu, false); }
        m2g::ActResult suspend(const m2g::CurtailJob& j) override
        {
            return slurm([&] { m2g::suspend_job(j.id); });
        }
        m2g::ActResult resume(const m2g::CurtailJob& j) override
        {
            return slurm([&] { m2g::resume_job(j.id); });
        }
        m2g::ActResult signal(const m2g::CurtailJob& j) override
        {
            return slurm([&] { m2g::signal_job(j.id, j.checkpoint_signal, j.checkpoint_batch_only); });
        }
        m2g::ActResult requeue(const m2g::CurtailJob& j) override
        {
            return slurm([&] { m2g::requeue_job(j.id); });
        }

      private:
        template <class F>
        static m2g::ActResult slurm(F f)
        {
            try {
                f();
            } catch (const std::exception& e) {
                return m2g::ActResult::failed(e.what());
            }
            return m2g::ActResult::done();
        }

        // PUT (w_gpu > 0) or DELETE the cap on every node of the job.
        m2g::ActResult set_caps(const m2g::CurtailJob& cj, double w_gpu, bool capping)
        {
            const long timeout_ms = 3000;
            std::vector<std::string> done;
            try {
                for (int n : cj.nodes) {
                    const std::string url = c_.agent_url(c_.model_->nodes[n].name);
                    try {
                        if (w_gpu > 0)
                            m2g::nodeagent::set_cap(url, c_.token_, cj.id, w_gpu, timeout_ms);
                        else
                            m2g::nodeagent::clear_cap(url, c_.token_, cj.id, timeout_ms);
                        done.push_back(url);
                    } catch (const std::exception& e) {
                        // A cap on some nodes only is no cap: take back what was set.
                        if (capping)
                            for (const std::string& u : done) {
                                try {
                                    if (cj.cap_w > 0)
                                        m2g::nodeagent::set_cap(u, c_.token_, cj.id, cj.cap_w, timeout_ms);
                                    else
                                        m2g::nodeagent::clear_cap(u, c_.token_, cj.id, timeout_ms);
                                } catch (const std::exception&) {
                                }
                            }
                        return m2g::ActResult::failed(e.what());
                    }
                }
            } catch (const std::exception& e) {
                return m2g::ActResult::failed(e.what());
            }
            return m2g::ActResult::done();
        }

        Controller& c_;
    };

    void annotate(const m2g::JobView& job, const m2g::CurtailAnnotation& part)
    {
        const std::string next = m2g::write_annotation(job.admin_comment, part);
        if (next == job.admin_comment)
            return;
        try {
            m2g::set_admin_comment(job.id, next);
        } catch (const std::exception& e) {
            log(std::string("annotation not written: ") + e.what());
        }
    }

    void run(int64_t now)
    {
        const m2g::Model& m = *model_;
        std::string err;
        const m2g::ClusterView cv = m2g::load_cluster_view(m, &err);
        if (!err.empty()) {
            log(err + "; no action until slurmctld answers");
            return;
        }
        // The running jobs, merged with what this controller did to them.
        std::vector<m2g::CurtailJob> jobs;
        std::map<uint32_t, const m2g::JobView*> views;
        std::set<uint32_t> seen;
        for (const m2g::JobView& j : cv.jobs) {
            if (j.state != m2g::JobState::Running || j.node_idx.empty() || j.gpus <= 0)
                continue;
            seen.insert(j.id);
            auto rec = state_.jobs.find(j.id);
            if (j.suspended && (rec == state_.jobs.end() || !rec->second.suspended))
                continue;  // suspended by someone else: not ours to resume
            if (rec != state_.jobs.end() && rec->second.suspended && !j.suspended) {
                log("JobId=" + std::to_string(j.id) + " was resumed outside m2g-curtaild; it is running again");
                rec->second.suspended = false;
            }
            m2g::CurtailJob c;
            c.id = j.id;
            c.intent = j.intent;
            // w_gpu= is the job's own draw or its class's estimate: only
            // the first is a fact about the job.
            c.intent.power_w_per_gpu = m2g::own_w_gpu(m.admission, j.intent);
            c.nodes = j.node_idx;
            c.gpus_per_node = (j.gpus + static_cast<int>(j.node_idx.size()) - 1) / static_cast<int>(j.node_idx.size());
            c.w_gpu = c.intent.power_w_per_gpu;
            c.start_time = j.start_time;
            c.checkpoint_signal = j.warn_signal;
            c.checkpoint_batch_only = j.warn_batch_only;
            if (rec != state_.jobs.end())
                copy_marks(c, rec->second);
            jobs.push_back(c);
            views[j.id] = &j;
        }
        // Pending jobs select/m2g holds until there is room for them
        // (wait=power-room): the plan makes it, while their wait lasts.
        std::set<uint32_t> waiting;
        std::vector<std::string> new_waiters;
        for (const m2g::JobView& j : cv.jobs) {
            if (j.state != m2g::JobState::Pending || j.gpus <= 0)
                continue;
            const m2g::PlacementAnnotation pl =
                m2g::parse_placement(m2g::get_annotation(j.admin_comment, m2g::AnnotationPart::Placement));
            if (pl.state != m2g::PlacementState::Waiting || pl.wait != m2g::WaitCause::PowerRoom ||
                pl.room_since <= 0 || now - pl.room_since >= m.admission.curtail_start_wait_sec)
                continue;
            m2g::CurtailJob c;
            c.id = j.id;
            c.intent = j.intent;
            c.intent.power_w_per_gpu = m2g::own_w_gpu(m.admission, j.intent);
            c.waiting_gpus = j.gpus;
            c.start_time = now;
            jobs.push_back(c);
            if (!room_logged_.count(j.id))
                new_waiters.push_back("JobId=" + std::to_string(j.id) + " (" + std::to_string(j.gpus) +
                                      " GPUs) waits for room under the site's budget (select/m2g, wait=power-room, "
                                      "since " + m2g::format_utc(pl.room_since) + ")");
            waiting.insert(j.id);
        }
        room_logged_ = std::move(waiting);
        // Jobs that ended or left (requeued, cancelled): forget them. Their
        // node agents lift any cap when the job leaves the node.
        for (auto it = state_.jobs.begin(); it != state_.jobs.end();)
            it = seen.count(it->first) ? std::next(it) : state_.jobs.erase(it);

        const m2g::SignalsView v = feed_ ? feed_->view(now) : m2g::SignalsView{};
        Actuator act(*this);
        const m2g::CurtailTickResult t = tick_.run(m, v, jobs, state_.plan, act, now);
        for (const std::string& w : new_waiters) {
            std::string site;
            for (const m2g::CurtailScope& sc : t.plan.scopes)
                if (sc.scope == m2g::EventScope::Site)
                    site = ": the site with it " + m2g::fixed(sc.draw_kw, 1) + " kW of " + m2g::fixed(sc.budget_kw, 1) +
                           " kW, " + m2g::fixed(sc.after_kw, 1) + " kW after this plan";
            log(w + site);
        }
        std::set<uint32_t> acted;
        for (const m2g::CurtailOutcome& o : t.outcomes) {
            audit(o.action, o.mode, o.result(), now);
            if (o.annotation)
                annotate(*views[o.action.job], *o.annotation);
            if (o.done)
                acted.insert(o.action.job);
        }
        for (const m2g::CurtailJob& j : jobs)
            if (acted.count(j.id))
                record(j);
        if (t.planned)
            save();
        report(t.plan, v, now);
    }

    void record(const m2g::CurtailJob& j)
    {
        if (j.curtailed_for.empty() && !j.suspended && j.cap_w <= 0 && j.signalled_at == 0) {
            state_.jobs.erase(j.id);
            return;
        }
        copy_marks(state_.jobs[j.id], j);
    }

    void save()
    {
        if (state_path_.empty())
            return;
        try {
            write_atomic(state_path_, state_json(state_));
        } catch (const std::exception& e) {
            log(std::string("state not saved: ") + e.what());
        }
    }

    // The status file: the last plan's scopes and what is curtailed.
    void report(const m2g::CurtailPlan& plan, const m2g::SignalsView& v, int64_t now)
    {
        if (plan.summary != last_summary_ && !plan.summary.empty()) {
            log(plan.summary);
            last_summary_ = plan.summary;
        }
        if (status_path_.empty())
            return;
        json_object* root = json_object_new_object();
        json_object_object_add(root, "schema", json_object_new_string("m2g.curtaild-status/v1"));
        json_object_object_add(root, "time", json_object_new_string(m2g::format_utc(now).c_str()));
        json_object_object_add(root, "mode", json_object_new_string(m2g::to_string(model_->admission.curtail_mode)));
        json_object_object_add(root, "feed", json_object_new_string(m2g::to_string(v.state)));
        json_object_object_add(root, "summary", json_object_new_string(plan.summary.c_str()));
        json_object* scopes = json_object_new_array();
        for (const m2g::CurtailScope& s : plan.scopes) {
            json_object* o = json_object_new_object();
            json_object_object_add(o, "name", json_object_new_string(s.name.c_str()));
            json_object_object_add(o, "budget_kw", json_object_new_double(s.budget_kw));
            json_object_object_add(o, "target_kw", json_object_new_double(s.target_kw));
            json_object_object_add(o, "draw_kw", json_object_new_double(s.draw_kw));
            json_object_object_add(o, "after_kw", json_object_new_double(s.after_kw));
            json_object_object_add(o, "cause", json_object_new_string(s.cause.c_str()));
            json_object_array_add(scopes, o);
        }
        json_object_object_add(root, "scopes", scopes);
        json_object* cur = json_object_new_object();
        for (const auto& [id, r] : state_.jobs) {
            json_object* o = json_object_new_object();
            json_object_object_add(o, "cap_w", json_object_new_double(r.cap_w));
            json_object_object_add(o, "suspended", json_object_new_boolean(r.suspended));
            json_object_object_add(o, "signalled", json_object_new_boolean(r.signalled_at > 0));
            json_object_object_add(o, "scope", json_object_new_string(r.curtailed_for.c_str()));
            json_object_object_add(cur, std::to_string(id).c_str(), o);
        }
        json_object_object_add(root, "curtailed", cur);
        const std::string text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY) + std::string("\n");
        json_object_put(root);
        try {
            write_atomic(status_path_, text);
        } catch (const std::exception& e) {
            log(std::string("status not written: ") + e.what());
        }
    }

    std::string conf_, state_path_, audit_path_, agent_map_path_, status_path_;
    int64_t conf_mtime_ = 0;
    std::unique_ptr<m2g::Model> model_;
    std::unique_ptr<m2g::SignalFeed> feed_;
    std::string token_;
    std::map<std::string, std::string> agent_map_, addrs_;
    State state_;
    std::set<uint32_t> room_logged_;  // pending jobs waiting for room, logged once each
    m2g::CurtailTick tick_;  // the loop's pass; keeps failed caps and what monitor reported
    std::string last_summary_;
    bool audit_failed_ = false;
};

}  // namespace

int main(int argc, char** argv)
{
    std::string conf, state = "/var/lib/m2g/curtaild-state.json", audit, agent_map, status;
    bool once = false;
    CLI::App app{"m2g-curtaild: keeps every power scope under its budget during demand-response events by capping, "
                 "suspending or requeueing running jobs as m2g.conf allows, and gives the power back when they end. "
                 "See m2g-curtaild(8)."};
    app.add_option("--conf", conf, m2g::kConfOptionHelp)->type_name("FILE");
    app.add_option("--state", state, "where it keeps what it curtailed across restarts (default "
                                     "/var/lib/m2g/curtaild-state.json; \"\" none)");
    app.add_option("--audit-log", audit, "append every action as one JSON object per line to this file");
    app.add_option("--status", status, "write the last plan (scopes, draw, what is curtailed) to this JSON file");
    app.add_option("--agent-map", agent_map, "file of \"NODE URL\" lines overriding NodeAgentURL= (nodes sharing "
                                             "an address, e.g. test clusters)");
    app.add_flag("--once", once, "one pass, then exit");
    if (const std::optional<int> exit_now = m2g::parse_daemon_args(app, kProg, PACKAGE_VERSION, argc, argv))
        return *exit_now;
    try {
        conf = m2g::resolve_conf_path(conf);
        struct sigaction sa {};
        sa.sa_handler = on_signal;
        sigaction(SIGTERM, &sa, nullptr);
        sigaction(SIGINT, &sa, nullptr);
        signal(SIGPIPE, SIG_IGN);
        Controller c(conf, state, audit, agent_map, status);
        if (once) {
            c.tick();
            return 0;
        }
        log("running (pid " + std::to_string(::getpid()) + ")");
        while (!g_stop) {
            c.tick();
            for (int i = 0; i < c.interval() * 10 && !g_stop; ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        log("stopping");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", kProg, e.what());
        return 1;
    }
}
