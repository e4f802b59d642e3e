// m2g tools: a job's GPU-hours, energy and cost — `m2g job`: its runtime
// times its GPUs times the power per GPU m2g assumes for it, priced at
// m2g.conf's EnergyPricePerKWh=. An estimate from m2g's own figures, not a
// meter. Slurm-free: the job is a JobView (status.hpp).
#pragma once

#include <cstdint>
#include <string>

#include "core/model/model.hpp"
#include "tools/reports/status.hpp"

namespace m2g {

struct EnergyPrice {
    double per_kwh = 0;        // EnergyPricePerKWh= in m2g.conf (0: no cost shown)
    std::string currency = "EUR";  // EnergyCurrency=
};

struct JobEnergy {
    uint32_t job = 0;
    double runtime_s = 0;      // so far for running jobs
    double gpu_hours = 0;
    double power_w_per_gpu = 0;
    std::string power_source;  // "recipe", "class training default (Acme p95)", "PowerPerGpuW (m2g.conf)", ...
    double energy_kwh = 0;
    double cost = 0;           // 0 when no price configured
    std::string currency;
    double price_per_kwh = 0;  // the price applied (0: none configured)
};

// The price m2g.conf sets (EnergyPricePerKWh=, EnergyCurrency=).
EnergyPrice energy_price(const Model& m);

JobEnergy job_energy(const Model& m, const JobView& job, const EnergyPrice& price, int64_t now);
std::string format_job_energy(const JobEnergy& e, const JobView& job, bool json);

}  // namespace m2g
