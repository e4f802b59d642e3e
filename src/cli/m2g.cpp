// m2g: the command over the core. Works without a running Slurm, except
// explain/status/job, which read one through libslurm (src/slurmapi/).
//
//   m2g topology validate [FILE] [--json]
//   m2g topology show [FILE] [--json]
//   m2g topology export --format=tree|block|slurm-yaml|kueue|kai|volcano|labels [--name NAME] [-o FILE] [FILE]
//   m2g topology import --format=slurm|slurm-yaml|labels [--topology NAME] [--gpus-per-node N]
//                       [--leaf-as-domain] [-o FILE] FILE
//   m2g topology import-slurm [--gpus-per-node N] [--leaf-as-domain] FILE   (= import --format=slurm)
//   m2g topology locate FILE HOSTLIST [--json]
//   m2g recipe list|show NAME [--catalog FILE] [--json]
//   m2g recipe validate [FILE]
//   m2g place [--conf FILE] [--state STATE.json] [--signals FEED] --request REQ [--json]
//   m2g simulate [--conf FILE] --trace FILE [--policy m2g|tree|tree-nvl|block|block-seg|firstfit]
//                [--backfill-reservation nodes|gpus] [--scale-gpus K] [--load L] [--seed S] [--signals-timeline FEED]
//                [--power-cdf CSV [--power-cluster C]] [--class CLASS] [--class-share CLASS=PCT]...
//                [--event-notice S] [--actuation-delay S] [--cap-speed R:S,...] [--checkpoint-interval S]
//                [--restart-overhead S] [--no-agent NODES] [--curtail-every-tick] [--no-baseline] [--job-log FILE]
//                [--power-log FILE] [--json]
//   m2g discover node [--json | --signals] [--hostname NAME] [--hwloc-xml FILE] [--nvml-library PATH]
//   m2g discover fabric FILE|- [--json]
//   m2g discover merge NODE.json... [--fabric FILE] [--slurm-names s/RE/REPL/] [--cluster-name NAME] [-o FILE]
//                      [--json]
//   m2g signals validate [--conf FILE] [--at TIME] FILE
//   m2g signals show [--conf FILE] [--status FILE | --file FEED] [--at TIME] [--json]
//   m2g explain JOBID [--json] [--conf FILE]          (a running Slurm: SLURM_CONF)
//   m2g status [--json] [--conf FILE] [--plot FILE.png]
//   m2g job JOBID [--json] [--conf FILE]
//
// m2g.conf: --conf FILE (topology validate/show/export: FILE), else
// $M2G_CONF, else beside $SLURM_CONF, else /etc/slurm (resolve_conf_path).
// place and simulate also take --topology, --conf's old name.
//
// Exit status (commands.hpp): 0 success, 1 the input is wrong (message on
// stderr), 2 usage, 3 `m2g place`: the job would wait (the reason is
// printed), 4 not found (a job, a recipe), 5 Slurm cannot be reached.
//
// This file is main alone: it parses and dispatches. Each command group
// (topology, recipe, place, simulate, discover, signals, explain/status/job)
// has its own file in src/cli/ and adds its subcommands (commands.hpp).
#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>
#include <optional>
#include <string>

#include "m2g_config.h"
#include "cli/commands.hpp"
#include "core/base/error.hpp"

int main(int argc, char** argv)
{
    using namespace m2g::cli;
    CLI::App app{"m2g: NVLink-, fabric- and power-aware scheduling for Slurm GPU clusters", "m2g"};
    app.set_version_flag("--version", std::string("m2g ") + PACKAGE_VERSION);
    app.require_subcommand(1);
    // In the order `m2g --help` lists them.
    const Command groups[] = {add_topology(app), add_recipe(app), add_place(app), add_simulate(app), add_backtest(app),
                              add_discover(app), add_signals(app), add_status(app)};

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // Help and version exit 0; every usage error exits 2.
        return app.exit(e) == 0 ? kExitOk : kExitUsage;
    }

    try {
        for (const Command& run : groups)
            if (const std::optional<int> status = run())
                return *status;
    } catch (const m2g::NotFoundError& e) {
        std::cerr << "m2g: " << e.what() << "\n";
        return kExitNotFound;
    } catch (const m2g::UnreachableError& e) {
        std::cerr << "m2g: " << e.what() << "\n";
        return kExitUnreachable;
    } catch (const std::exception& e) {
        std::cerr << "m2g: " << e.what() << "\n";
        return kExitInput;
    }
    return kExitOk;
}
