// m2g CLI: what main (m2g.cpp) asks of each command group, one file each
// (topology.cpp, recipe.cpp, place.cpp, simulate.cpp, discover.cpp,
// signals.cpp, status.cpp), and the few helpers the groups share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/model/model.hpp"
#include "core/power/signals.hpp"

namespace CLI {
class App;
}

namespace m2g {
namespace cli {

// Exit status, the same for every command (m2g(1), EXIT STATUS). main
// maps what a command throws: NotFoundError 4, UnreachableError 5, any
// other exception 1; CLI11's parse errors are 2.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInput = 1;        // the input is wrong (a file, a value): main prints the exception
inline constexpr int kExitUsage = 2;        // the command line is wrong
inline constexpr int kExitWouldWait = 3;    // `m2g place`: the job would wait
inline constexpr int kExitNotFound = 4;     // what was named (a job, a recipe) does not exist
inline constexpr int kExitUnreachable = 5;  // Slurm (slurmctld, slurmdbd, slurm.conf) cannot be reached

// A group's part of the command line, once parsed: runs the subcommand
// chosen and gives the exit status, or gives nothing when the choice is
// another group's. Owns the values its options were bound to, so it must
// outlive the parse. Throws std::exception on bad input (main: exit 1).
using Command = std::function<std::optional<int>()>;

// Each adds its group's subcommands and their options to `app`; main calls
// them in the order `m2g --help` lists the subcommands.
Command add_topology(CLI::App& app);  // topology validate|show|export|import|import-slurm|locate
Command add_recipe(CLI::App& app);    // recipe list|show|validate
Command add_place(CLI::App& app);     // place
Command add_simulate(CLI::App& app);  // simulate
Command add_backtest(CLI::App& app);  // backtest (simulate.cpp)
Command add_discover(CLI::App& app);  // discover node|fabric|merge
Command add_signals(CLI::App& app);   // signals validate|show
Command add_status(CLI::App& app);    // explain, status, job: a running Slurm

// Adds --conf FILE (m2g.conf; resolve_conf_path gives the default) to `sub`,
// bound to `conf`: the one spelling of every command that reads m2g.conf.
// `alias`: an older spelling still accepted ("" none).
void add_conf_option(CLI::App* sub, std::string& conf, const char* alias = "");

// --json, bound to `as_json`: one JSON object on standard output.
void add_json_flag(CLI::App* sub, bool& as_json);

// Write to stdout, or to FILE when -o FILE was given.
void emit(const std::string& text, const std::string& output);

void print_warnings(const std::vector<std::string>& warnings, const std::string& file);

// "1 job", "2 jobs".
std::string plural(size_t n, const std::string& one, const std::string& many);

// A core JSON object with "from" (and "path", when given: null when empty)
// added: where the command read what it reports.
std::string with_from(const std::string& body, const std::string& from, const char* writer,
                      const std::string* path = nullptr);

// Where the signals came from, for `m2g signals show`, `m2g explain` and
// `m2g status`: what job_submit/m2g believes (its status file) when that is
// there, else the feed itself, read once now by this command.
struct ShownSignals {
    SignalsView view;
    std::string from;  // "status", "file" or "none"
    std::string path;  // the file read ("" for none)
    std::string note;  // one line for people
};

// `status_file` / `feed_file`: --status / --file of `m2g signals show` ("" when
// not given: the SignalsStatusFile= / SignalsFile= of `conf`).
ShownSignals read_shown_signals(const Model& m, const std::string& conf, const std::string& status_file,
                                const std::string& feed_file, int64_t now);

}  // namespace cli
}  // namespace m2g
