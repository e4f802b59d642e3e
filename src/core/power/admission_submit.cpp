// m2g core: a submission and a modification through the admission session
// (see admission_session.hpp): every rule job_submit/m2g applies at
// job_submit() and job_modify(), in one place, so the plugin only maps
// Slurm's job description to a Submission and applies the SubmitAnswer,
// and the simulator submits its jobs the same way.
#include <algorithm>
#include <exception>
#include <utility>

#include "core/base/keys.hpp"
#include "core/job/annotation.hpp"
#include "core/job/intent.hpp"
#include "core/power/admission_session.hpp"
#include "core/base/text.hpp"

namespace m2g {

namespace {


// NoDeferAction=convert: the job's own intent says --m2g-defer=ok from now
// on (M2G_DEFER=..., or with the SPANK_ prefixes decode_intent accepts), so
// select/m2g and the release thread treat it as deferrable too.
void convert_to_deferrable(std::vector<std::string>& env)
{
    const std::string key = std::string(kw::kEnvDefer) + "=";
    for (std::string& entry : env) {
        const auto at = entry.find(key);
        if (at == std::string::npos ||
            (at != 0 && entry.compare(0, at, "SPANK_") != 0 && entry.compare(0, at, "SLURM_SPANK_") != 0))
            continue;
        entry = entry.substr(0, at + key.size()) + "ok";
    }
}

// "a,b", or "none".
std::string none_or(const std::vector<std::string>& names) { return names.empty() ? "none" : join(names, ","); }

bool has_m2g_env(const std::vector<std::string>& env)
{
    for (const std::string& e : env)
        if (e.rfind("M2G_", 0) == 0)
            return true;
    return false;
}

}  // namespace

void AdmissionSession::audit(const std::string& msg) const
{
    if (audit_)
        audit_(msg);
}

// A job slurm-bridge submits for Kubernetes pods names them in its
// AdminComment ({"pods": [...]}; only an administrator can set AdminComment
// at submit, Slurm checks that before job_submit plugins run). It gets the
// intent m2g-slinky resolved from the pods' m2g.slurm.net/* annotations,
// as the M2G_* variables spank_m2g gives an sbatch job, so admission and
// select/m2g treat both alike. A job's own M2G_* variables win.
bool AdmissionSession::apply_bridge_intent(const AdmissionPolicy& ap, const Submission& s,
                                           std::vector<std::string>& env, SubmitAnswer& a)
{
    if (ap.bridge_intents_file.empty() || s.admin_comment.empty())
        return true;
    const std::vector<std::string> pods = bridge_pods(s.admin_comment);
    if (pods.empty())
        return true;
    const std::string first = pods.front() + (pods.size() > 1 ? " (+" + std::to_string(pods.size() - 1) + ")" : "");
    if (has_m2g_env(env)) {
        info("slurm-bridge job for pod " + first + " carries its own M2G_* variables; " + ap.bridge_intents_file +
             " not consulted");
        return true;
    }
    const auto doc = bridge_.get(ap.bridge_intents_file, [this](const std::string& m) { error(m); });
    if (!doc) {
        info("slurm-bridge job for pod " + first + ": no readable " + ap.bridge_intents_file +
             "; m2g.conf's defaults apply");
        return true;
    }
    const bool enforce = ap.mode == AdmissionMode::Enforce;
    const BridgeResolution r = resolve_bridge_intent(*doc, pods);
    if (!r.intent.error.empty()) {
        error("slurm-bridge job: " + r.intent.error +
              (enforce ? "; refused" : "; Admission=monitor: admitted with m2g.conf's defaults"));
        if (!enforce)
            return true;
        a.refusal = SubmitAnswer::Refusal::Invalid;
        a.message = "m2g: " + r.intent.error;
        return false;
    }
    if (!r.unknown.empty())
        info(std::string("slurm-bridge pod") + (r.unknown.size() == 1 ? "" : "s") + " " + join(r.unknown, ", ") +
             " not in " + ap.bridge_intents_file + " (generated at " + std::to_string(doc->generated_at) +
             "): " + (r.intent.env.empty() ? "m2g.conf's defaults apply" : "the other pods' intent applies"));
    if (r.intent.env.empty())
        return true;
    std::string said;
    for (const auto& [k, v] : r.intent.env) {
        env.push_back(k + "=" + v);
        // sbatch also hands the SPANK variables to the batch script as
        // SLURM_SPANK_M2G_* (spank_m2g reads them back on the nodes).
        if (s.batch)
            a.batch_env_add.push_back("SLURM_SPANK_" + k + "=" + v);
        said += (said.empty() ? "" : " ") + k + "=" + v;
    }
    a.spank_env = env;
    info("slurm-bridge job for pod " + first + ": " + said);
    return true;
}

// The tenant is the job's Slurm account: a job that names none gets its
// account as `tenant=` (in spank_job_env, which the prolog's telemetry
// labels and every step read, and in the batch script's SLURM_SPANK_M2G_TAGS);
// one that names another is refused unless PrivilegedTags= lists `tenant`
// and its account or a Unix group of its user is privileged. True when it
// refuses (a.refusal set). Without a known account (no accounting) the
// tags stay as given. An intent m2g cannot read is decide()'s to refuse.
bool AdmissionSession::bind_tenant(const AdmissionPolicy& ap, const Submission& s, std::vector<std::string>& env,
                                   SubmitAnswer& a)
{
    if (!s.account || (s.intent && !a.spank_env))
        return false;  // the simulator: no accounts
    JobIntent intent;
    try {
        intent = decode_intent(env);
    } catch (const std::exception&) {
        return false;
    }
    AdmissionRequest who;
    who.account = s.account();
    if (who.account.empty())
        return false;
    const std::string claimed = intent.tag(kw::kTagTenant);
    if (claimed == who.account)
        return false;
    if (!claimed.empty()) {
        const bool reserved = std::find(ap.privileged_tags.begin(), ap.privileged_tags.end(), kw::kTagTenant) !=
                              ap.privileged_tags.end();
        who.user = s.user_name ? s.user_name() : std::to_string(s.uid);
        if (reserved && !ap.privileged_groups.empty() && s.groups)
            who.groups = s.groups(who.user);
        const std::string by = reserved ? privileged_for(ap, who) : "";
        const std::string on = "uid " + std::to_string(s.uid) + " (" + who.user + ") account " + who.account + ": ";
        if (!by.empty()) {
            audit(on + "tag tenant=" + claimed + " (not its account) allowed for " + by);
            return false;
        }
        a.refusal = SubmitAnswer::Refusal::Denied;
        a.message = "m2g: --" + std::string(kw::kOptTag) + "=" + kw::kTagTenant + "=" + claimed +
                    ": a job's tenant is its Slurm account (" + who.account +
                    "); naming another is reserved for privileged accounts (" + none_or(ap.privileged_accounts) +
                    ") and Unix groups (" + none_or(ap.privileged_groups) + ") with PrivilegedTags=" +
                    kw::kTagTenant +
                    " in m2g.conf. Submit without the tag, or with --account=" + claimed +
                    " if you may charge that account.";
        a.counted = AdmissionVerdict::Reject;
        audit(on + "refused: tag tenant=" + claimed + " is not its account");
        info("job from uid " + std::to_string(s.uid) + " refused: tenant=" + claimed + " is not its account " +
             who.account);
        return true;
    }
    intent.tags.emplace_back(kw::kTagTenant, who.account);
    std::string tags;
    for (const Tag& t : intent.tags)
        tags += (tags.empty() ? "" : ",") + t.first + "=" + t.second;
    const std::string key = std::string(kw::kEnvTags) + "=";
    bool replaced = false;  // the job's M2G_TAGS, as spank_m2g or a client wrote it
    for (std::string& e : env)
        for (const std::string prefix : {"", "SPANK_", "SLURM_SPANK_"})
            if (e.rfind(prefix + key, 0) == 0) {
                e = prefix + key + tags;
                replaced = true;
                break;
            }
    if (!replaced)
        env.push_back(key + tags);
    a.spank_env = env;
    if (s.batch)
        a.batch_env_add.push_back("SLURM_SPANK_" + key + tags);
    return false;
}

// The size a recipe gives the job (size_from_recipe), into `a.size` and
// the figures admission weighs; true when it refuses the job (a.refusal
// set). An intent m2g cannot read is decide()'s to refuse, not this.
bool AdmissionSession::size_job(const Model& m, const Submission& s, const std::vector<std::string>& env,
                                SubmitAnswer& a, int& nodes, int& gpus, int64_t& time_limit_s) const
{
    JobIntent intent;
    try {
        intent = s.intent && !a.spank_env ? *s.intent : decode_intent(env);
    } catch (const std::exception&) {
        return false;
    }
    if (intent.recipe.empty())
        return false;
    const int node_gpus = m.usual_node_gpus(s.candidate_nodes ? s.candidate_nodes(m) : std::vector<int>{});
    RecipeSize size = size_from_recipe(intent, s.asked, node_gpus);
    if (!size.refusal.empty()) {
        info("job from uid " + std::to_string(s.uid) + " refused: " + size.refusal);
        a.refusal = SubmitAnswer::Refusal::Invalid;
        a.message = size.refusal;
        a.counted = AdmissionVerdict::Reject;
        return true;
    }
    if (size.nodes)
        nodes = size.nodes;
    if (size.nodes || size.gpus_per_node)
        gpus = (size.nodes ? size.nodes : nodes) * (size.gpus_per_node ? size.gpus_per_node : s.asked.gpus_per_node);
    if (size.time_limit_s)
        time_limit_s = size.time_limit_s;
    if (size.sets()) {
        info("job from uid " + std::to_string(s.uid) + ": sized from recipe " + intent.recipe + ": " + size.said);
        a.message = "m2g: sized from --" + std::string(kw::kOptRecipe) + "=" + intent.recipe + ": " + size.said;
    }
    a.size = std::move(size);
    return false;
}

SubmitAnswer AdmissionSession::submit(const Submission& s, int64_t now)
{
    try {
        return submit_impl(s, now);
    } catch (const std::exception& e) {
        // Never lose a job to an m2g fault: admit it and say so.
        error("job from uid " + std::to_string(s.uid) + ": " + e.what() + "; admitted without m2g policy");
    } catch (...) {
        error("job from uid " + std::to_string(s.uid) + ": unexpected error; admitted without m2g policy");
    }
    SubmitAnswer a;
    a.counted = AdmissionVerdict::Admit;
    return a;
}

SubmitAnswer AdmissionSession::submit_impl(const Submission& s, int64_t now)
{
    SubmitAnswer a;
    const AdmissionContext c = current(now);
    if (!c.model)
        return a;
    const AdmissionPolicy& ap = c.model->admission;
    std::vector<std::string> env = s.spank_env;
    // Before Admission=off returns: the intent carries placement too.
    if (!apply_bridge_intent(ap, s, env, a))
        return a;
    // Who the job is comes before what it may do: in every Admission mode.
    if (bind_tenant(ap, s, env, a))
        return a;
    // A recipe sizes the job that gave no size of its own, in every
    // Admission mode; admission then weighs the job as it will run.
    int nodes = std::max(1, s.nodes), gpus = s.gpus;
    int64_t time_limit_s = s.time_limit_s;
    if (s.asked_known && size_job(*c.model, s, env, a, nodes, gpus, time_limit_s))
        return a;
    if (ap.mode == AdmissionMode::Off)
        return a;
    const bool enforce = ap.mode == AdmissionMode::Enforce;

    AdmissionRequest r;
    try {
        r.intent = s.intent && !a.spank_env ? *s.intent : decode_intent(env);
    } catch (const std::exception& e) {
        // Only a client without spank_m2g (or a forged environment) gets here.
        a.refusal = SubmitAnswer::Refusal::Invalid;
        a.message = std::string("m2g: ") + e.what();
        a.counted = AdmissionVerdict::Reject;
        return a;
    }
    r.nodes = nodes;
    r.gpus = gpus != 0 ? gpus : r.intent.gpus;
    r.time_limit_s = time_limit_s;
    r.now = now;
    r.user_begin = s.begin_time > now ? s.begin_time : 0;
    if (s.account)
        r.account = s.account();
    const bool reserved = !reserved_uses(ap, r.intent, r.account).empty();
    auto user = [&] {
        if (r.user.empty())
            r.user = s.user_name ? s.user_name() : std::to_string(s.uid);
        return r.user;
    };
    if (reserved)
        user();  // named in a refusal and in the audit line
    if ((r.intent.defer == DeferConsent::No && !ap.defer_exempt_groups.empty()) ||
        (reserved && !ap.privileged_groups.empty())) {
        // NSS: only when an exemption may hang on it.
        if (s.groups)
            r.groups = s.groups(user());
    }
    if (s.candidate_nodes)
        r.candidate_nodes = s.candidate_nodes(*c.model);
    cap_by_slurm_deadline(r, ap, s.deadline);

    // No pacer here: submissions include --test-only probes and jobs that
    // later fail validation; select/m2g paces real starts.
    a.decision = decide(*c.model, c.view, r, nullptr);
    const Decision& d = a.decision;
    const std::string who = "uid " + std::to_string(s.uid) + " (" + user() + ") account " +
                            (r.account.empty() ? "(default)" : r.account) + ": ";
    for (const std::string& line : d.audit)
        audit(who + line + (enforce ? "" : " [Admission=monitor]"));
    if (!d.refused_reserved.empty())
        audit(who + "refused: " + d.reason);
    a.counted = counted_as(d.verdict);  // Admission=monitor: what m2g would do
    if (enforce && d.converted) {
        convert_to_deferrable(env);
        a.spank_env = env;
    }
    if (d.verdict == Verdict::Reject && enforce) {
        info("job from uid " + std::to_string(s.uid) + " rejected: " + d.reason);
        a.refusal = SubmitAnswer::Refusal::Denied;
        a.message = d.message;
        return a;
    }
    if (enforce && (d.verdict == Verdict::Defer || d.verdict == Verdict::Pace) && d.begin_time > s.begin_time)
        a.begin_time = d.begin_time;
    AdmissionAnnotation note = admission_annotation(d, r.intent, ap, r.user_begin, !enforce);
    // The job's --signal: m2g-curtaild, outside slurmctld, cannot see it
    // and sends it as the checkpoint request before a requeue.
    note.checkpoint_signal = s.checkpoint_signal;
    a.admin_comment = write_annotation(s.admin_comment, note);
    if (r.intent.explain)
        a.message = d.message;
    if (log_.debug)
        log_.debug(d.reason);
    return a;
}

ModifyAnswer AdmissionSession::modify(const Modification& mod) const
{
    ModifyAnswer a;
    if (mod.requested_begin == 0)
        return a;
    const std::string part = get_annotation(mod.admin_comment, AnnotationPart::Admission);
    const bool waiting = parse_admission(part).waits();
    const bool earlier = waiting && mod.pending && mod.requested_begin < mod.begin_time;
    if (!earlier)
        return a;
    const std::string name = mod.user_name ? mod.user_name() : std::to_string(mod.uid);
    if (mod.operator_) {
        audit("JobId=" + std::to_string(mod.job_id) + ": operator uid " + std::to_string(mod.uid) + " (" + name +
              ") moved its begin time from " + std::to_string(mod.begin_time) + " to " +
              std::to_string(mod.requested_begin) + ", before m2g's (" + part + ")");
        return a;
    }
    info("JobId=" + std::to_string(mod.job_id) + ": uid " + std::to_string(mod.uid) +
         " may not move its begin time before m2g's (" + part + ")");
    a.denied = true;
    a.message = "m2g: this job waits for " + part + "; only an operator or admin may move its start time earlier";
    return a;
}

}  // namespace m2g
