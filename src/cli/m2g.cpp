// m2g: the command over the core. Works without a running Slurm, except
// explain/status/job, which read one through libslurm (src/slurmapi/).
//
//   m2g topology validate FILE
//   m2g topology show FILE
//   m2g topology export --format=tree|block|slurm-yaml|kueue|kai|volcano|labels [--name NAME] [-o FILE] FILE
//   m2g topology import --format=slurm|slurm-yaml|labels [--topology NAME] [--gpus-per-node N]
//                       [--leaf-as-domain] [-o FILE] FILE
//   m2g topology import-slurm [--gpus-per-node N] [--leaf-as-domain] FILE   (= import --format=slurm)
//   m2g topology locate FILE HOSTLIST
//   m2g recipe list|show NAME|validate [--catalog FILE]
//   m2g place --topology FILE [--state STATE.json] [--signals FEED] --request REQ [--json]
//   m2g simulate --topology FILE --trace FILE [--policy m2g|tree|tree-nvl|block|block-seg|firstfit]
//                [--backfill-reservation nodes|gpus] [--scale-gpus K] [--load L] [--seed S] [--signals-timeline FEED]
//                [--power-cdf CSV [--power-cluster C]] [--class CLASS] [--class-share CLASS=PCT]...
//                [--event-notice S] [--actuation-delay S] [--cap-speed R:S,...] [--checkpoint-interval S]
//                [--restart-overhead S] [--no-agent NODES] [--curtail-every-tick] [--no-baseline] [--job-log FILE]
//                [--power-log FILE] [--json]
//   m2g discover node [--json | --signals] [--hostname NAME] [--hwloc-xml FILE] [--nvml-library PATH]
//   m2g discover fabric FILE|- [--json]
//   m2g discover merge NODE.json... [--fabric FILE] [--slurm-names s/RE/REPL/] [--cluster-name NAME] [-o FILE]
//   m2g signals validate [--conf M2G.CONF] [--at TIME] FILE
//   m2g signals show [--conf M2G.CONF] [--status FILE | --file FEED] [--at TIME] [--json]
//   m2g explain JOBID [--json] [--conf M2G.CONF]          (a running Slurm: SLURM_CONF)
//   m2g status [--json] [--conf M2G.CONF] [--plot FILE.png]
//   m2g job JOBID [--json] [--conf M2G.CONF]
//
// Exit status: 0 success, 1 the input is wrong (message on stderr), 2 usage,
// 3 `m2g place`: the job would wait (the reason is printed).
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

int main(int argc, char** argv)
{
    using namespace m2g::cli;
    CLI::App app{"m2g: NVLink-, fabric- and power-aware scheduling for Slurm GPU clusters", "m2g"};
    app.set_version_flag("--version", std::string("m2g ") + PACKAGE_VERSION);
    app.require_subcommand(1);
    // In the order `m2g --help` lists them.
    const Command groups[] = {add_topology(app), add_recipe(app), add_place(app), add_simulate(app),
                              add_discover(app), add_signals(app), add_status(app)};

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // Help and version exit 0; every usage error exits 2.
        return app.exit(e) == 0 ? 0 : 2;
    }

    try {
        for (const Command& run : groups)
            if (const std::optional<int> status = run())
                return *status;
    } catch (const std::exception& e) {
        std::cerr << "m2g: " << e.what() << "\n";
        return kExitInput;
    }
    return 0;
}
