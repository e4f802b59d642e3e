// m2g tools: `m2g job` — a job's GPU-hours, energy and cost, and the power
// per GPU m2g assumes for a job (which `m2g explain` quotes too); see
// energy.hpp.
#include "tools/reports/energy.hpp"

#include <json-c/json.h>

#include <algorithm>
#include <sstream>

#include "core/power/admission.hpp"  // power_w_per_gpu, class_power_defaults
#include "tools/reports/report_util.hpp"

namespace m2g {

using namespace reports;  // the words every report writes alike

// ---- the job's power per GPU (report_util.hpp) --------------------------------------

std::pair<double, std::string> reports::job_power(const Model& m, const JobView& job, const AdmissionAnnotation& a)
{
    if (job.intent.power_w_per_gpu > 0) {
        if (a.w_gpu > 0 || job.intent.recipe.empty())
            return {job.intent.power_w_per_gpu, "m2g admission (w_gpu)"};
        return {job.intent.power_w_per_gpu, "recipe " + job.intent.recipe};
    }
    JobIntent in = job.intent;
    if (in.workload_class == WorkloadClass::Unset)
        in.workload_class = a.workload_class.value_or(WorkloadClass::Unset);
    const double w = power_w_per_gpu(m.admission, in);
    const int ci = std::clamp(static_cast<int>(in.workload_class), 0, 7);
    const std::string cls = class_label(in.workload_class);
    if (m.admission.classes[ci].power_w_per_gpu > 0)
        return {w, "PowerPerGpuW of class " + cls + " (m2g.conf)"};
    if (m.admission.default_power_w_per_gpu > 0)
        return {w, "DefaultPowerPerGpuW (m2g.conf)"};
    for (const ClassPowerDefault& d : class_power_defaults())
        if (d.cls == in.workload_class)
            return {w, "class " + cls + " default (Acme p" + num(d.quantile_pct) + ")"};
    return {w, "built-in default"};
}

// ---- per-job energy -------------------------------------------------------------------

EnergyPrice energy_price(const Model& m)
{
    EnergyPrice p;
    p.per_kwh = m.energy_price_per_kwh;
    p.currency = m.energy_currency.empty() ? "EUR" : m.energy_currency;
    return p;
}

JobEnergy job_energy(const Model& m, const JobView& job, const EnergyPrice& price, int64_t now)
{
    JobEnergy e;
    e.job = job.id;
    if (job.start_time > 0) {
        const bool ended = job.state == JobState::Done || job.state == JobState::Completing;
        const int64_t end = ended && job.end_time > 0 ? job.end_time : now;
        e.runtime_s = static_cast<double>(std::max<int64_t>(0, end - job.start_time));
    }
    e.gpu_hours = std::max(0, job.gpus) * e.runtime_s / 3600.0;
    const AdmissionAnnotation a = read_annotation(job.admin_comment).admission.value_or(AdmissionAnnotation{});
    const auto [w, src] = job_power(m, job, a);
    e.power_w_per_gpu = w;
    e.power_source = src;
    e.energy_kwh = e.gpu_hours * w / 1000.0;
    e.price_per_kwh = price.per_kwh > 0 ? price.per_kwh : 0;
    e.cost = e.energy_kwh * e.price_per_kwh;
    e.currency = price.currency;
    return e;
}

std::string format_job_energy(const JobEnergy& e, const JobView& job, bool json)
{
    if (json) {
        JsonPtr o(json_object_new_object());
        add(o.get(), "job", json_object_new_int64(e.job));
        add(o.get(), "name", jstr(job.name));
        add(o.get(), "state", json_object_new_string(to_string(job.state)));
        add(o.get(), "gpus", json_object_new_int(std::max(0, job.gpus)));
        add(o.get(), "runtime_s", json_object_new_int64(static_cast<int64_t>(e.runtime_s)));
        add(o.get(), "gpu_hours", jnum(e.gpu_hours, 3));
        add(o.get(), "power_w_per_gpu", jnum(e.power_w_per_gpu));
        add(o.get(), "power_source", jstr(e.power_source));
        add(o.get(), "energy_kwh", jnum(e.energy_kwh, 3));
        add(o.get(), "price_per_kwh", e.price_per_kwh > 0 ? jnum(e.price_per_kwh, 4) : nullptr);
        add(o.get(), "cost", e.price_per_kwh > 0 ? jnum(e.cost, 2) : nullptr);
        add(o.get(), "currency", jstr(e.currency));
        return json_text(o.get());
    }
    std::ostringstream out;
    out << "job " << e.job << (job.name.empty() ? "" : " (" + job.name + ")") << ": " << to_string(job.state) << ", "
        << elapsed(e.runtime_s) << " on " << std::max(0, job.gpus) << " GPUs = " << fmt("%.2f", e.gpu_hours)
        << " GPU-hours\n";
    out << "power:  " << num(e.power_w_per_gpu) << " W per GPU (" << e.power_source << ")\n";
    out << "energy: " << fmt("%.2f", e.energy_kwh) << " kWh (estimate: GPU-hours x power per GPU)\n";
    if (e.price_per_kwh > 0)
        out << "cost:   " << fmt("%.2f", e.cost) << " " << e.currency << " at " << num(e.price_per_kwh) << " "
            << e.currency << "/kWh\n";
    else
        out << "cost:   not shown (no EnergyPricePerKWh= in m2g.conf)\n";
    return out.str();
}

}  // namespace m2g
