// Names that differ between the Slurm releases the adapters build against:
// 22.05 (Debian 12) and 23.11 or later (tested with 26.05). Include after
// Slurm's own headers, inside no namespace. Only spellings live here, no
// behaviour: where a release changed what a call does, the adapter says so
// where it calls it.
#pragma once

#include <cstdlib>

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
#define M2G_SLURM_NEW_API 1
// 23.11 made list_t/list_itr_t/hostlist_t the types, not pointer typedefs.
typedef list_t* m2g_list_t;
typedef list_itr_t* m2g_list_itr_t;
typedef hostlist_t* m2g_hostlist_t;
// A function only Slurm's daemons and internal clients have (libslurmfull):
// 23.11 made running_in_slurmctld() a macro over run_in_daemon().
#define M2G_DAEMON_PROBE_SYMBOL "run_in_daemon"
#else
#define M2G_SLURM_NEW_API 0
typedef List m2g_list_t;
typedef ListIterator m2g_list_itr_t;
typedef hostlist_t m2g_hostlist_t;
#define M2G_DAEMON_PROBE_SYMBOL "running_in_slurmctld"
#endif

// Whether this daemon is the new process of an `scontrol reconfigure`.
// Since 23.11 reconfigure starts a fresh slurmctld (SLURMCTLD_RECONF=1 in
// its environment) and a fresh slurmd (SLURMD_RECONF=1), and the running
// one carries on with its old configuration when the new one fails to
// start (slurmd logs "Resuming operation, reconfigure failed"). A plugin
// that finds m2g.conf broken there fails its start, so the cluster keeps
// the last good m2g.conf instead of running without m2g's policy. 22.05
// reconfigures in place: the plugins keep their previous model themselves.
enum class M2gDaemon { Slurmctld, Slurmd };
inline bool m2g_reconfigure_child(M2gDaemon d = M2gDaemon::Slurmctld)
{
#if M2G_SLURM_NEW_API
    return std::getenv(d == M2gDaemon::Slurmd ? "SLURMD_RECONF" : "SLURMCTLD_RECONF") != nullptr;
#else
    (void)d;
    return false;
#endif
}

// The error line for a reconfigure refused that way.
#define M2G_RECONF_REFUSED "refusing this reconfigure: the running slurmctld keeps the last good m2g.conf"
#define M2G_SLURMD_RECONF_REFUSED "refusing this reconfigure: the running slurmd keeps the last good m2g.conf"
