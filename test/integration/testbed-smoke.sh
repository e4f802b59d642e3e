#!/usr/bin/env bash
# testbed-smoke.sh — the real-Slurm testbed works end to end, with stock Slurm
# only (--stock: topology/tree, no m2g plugin): 2 racks = 36 nodes come up
# idle, a 4-node GPU batch job and an srun step run with CUDA_VISIBLE_DEVICES
# set, accounting records them COMPLETED, `scontrol show topology` shows the
# NVL72 shape, a second `up` is refused, the daemons' munge default socket is
# the testbed's (reconfigures under load lose no message; doc/testbed.md),
# and `down` leaves no process behind (checked by PID, including a running
# job's slurmstepd and task), and `down --remove` deletes a testbed only, under
# its lock.
# Output: TAP. Run as root.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

plan 24

host_run_munge=$([[ -e /run/munge ]] && echo present || echo absent)
tb_up --racks 2 --stock
jobs_dir=$TB_DIR/jobs
mkdir -p "$jobs_dir"

# ---- the cluster ----------------------------------------------------------
is "$(sinfo -h -N -o '%N %T' | awk '$2 == "idle"' | wc -l)" 36 "36 nodes idle"
is "$(scontrol show config | awk '$1 == "TopologyPlugin" {print $3}')" topology/tree \
	"--stock runs topology/tree"
is "$(scontrol -o show node r02n18 | grep -o 'Gres=[^ ]*')" "Gres=gpu:4" "nodes have 4 GPUs"

rc=0; "$M2G_TESTBED" up --racks 2 --stock --dir "$TB_DIR" 2>/dev/null || rc=$?
is "$rc" 3 "a second 'up' on a running testbed is refused (exit 3)"
# Another suite (another M2G_TESTBED_CALLER, here PID 1, always alive) may
# not stop this suite's testbed, nor take its directory over once its
# daemons are gone (fc4's select-plugin.sh lost its testbed to a spank.sh
# on the same base).
rc=0; M2G_TESTBED_CALLER=1 "$M2G_TESTBED" down --remove --dir "$TB_DIR" 2>"$TB_TMP/other.err" || rc=$?
ok "[[ $rc != 0 ]] && grep -q 'belongs to process $$' '$TB_TMP/other.err' && scontrol ping >/dev/null" \
	"another suite's 'down' is refused, naming the owning suite ($$); the testbed still runs"

# ---- a 4-node GPU batch job that runs an srun step --------------------------
# Each task prints its node and CUDA_VISIBLE_DEVICES.
# shellcheck disable=SC2016 # expanded by the job, not here
jid=$(sbatch --parsable -N4 --gres=gpu:4 -t 5 -o "$jobs_dir/gpu-%j.out" \
	--wrap 'srun bash -c "echo \$SLURMD_NODENAME CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES"')
ok "[[ $jid =~ ^[0-9]+\$ ]]" "sbatch -N4 --gres=gpu:4 accepted (job $jid)"
ok "wait_job_state $jid COMPLETED 60" "batch job COMPLETED"
is "$(sacct_field "$jid" State)" COMPLETED "sacct: batch job COMPLETED"
is "$(sacct_field "$jid" AllocTRES | grep -o 'gres/gpu=[0-9]*')" "gres/gpu=16" "sacct: 16 GPUs allocated"
nodes=$(job_nodes "$jid" | sort)
is "$(wc -l <<<"$nodes")" 4 "job got 4 nodes"
# topology/tree places 4 nodes under one lowest-level switch: one rack.
is "$(cut -c1-3 <<<"$nodes" | sort -u | wc -l)" 1 "topology/tree packs the job into one NVL domain"
out=$(sort "$jobs_dir/gpu-$jid.out")
expected=$(awk '{print $0 " CUDA_VISIBLE_DEVICES=0,1,2,3"}' <<<"$nodes")
is "$out" "$expected" "each task saw CUDA_VISIBLE_DEVICES=0,1,2,3"

# ---- srun from the "login node" ---------------------------------------------
# Each task prints its job id and CUDA_VISIBLE_DEVICES.
# shellcheck disable=SC2016 # expanded by the job, not here
out=$(srun -N2 --gres=gpu:2 -t 5 bash -c 'echo $SLURM_JOB_ID CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES' 2>&1 | sort)
srun_id=$(awk 'NR == 1 {print $1}' <<<"$out")
is "$(cut -d' ' -f2- <<<"$out")" $'CUDA_VISIBLE_DEVICES=0,1\nCUDA_VISIBLE_DEVICES=0,1' \
	"srun -N2 --gres=gpu:2 got 2 GPUs per node"
is "$(sacct_field "$srun_id" State)" COMPLETED "sacct: srun job ${srun_id:-?} COMPLETED"

# ---- topology ---------------------------------------------------------------
topo=$(scontrol show topology)
is "$(grep -o '^SwitchName=[^ ]*' <<<"$topo" | sort | tr '\n' ' ')" \
	"SwitchName=leaf01 SwitchName=leaf02 SwitchName=nvl01 SwitchName=nvl02 SwitchName=spine01 " \
	"scontrol show topology: nvl01-02, leaf01-02, spine01"

# ---- munge's default socket, as the daemons see it ---------------------------
# Inside the daemons' mount namespace /run/munge is the testbed's socket
# directory: a credential made through the default socket by a job decodes
# with the testbed's munged.
cred=$jobs_dir/cred
mjob=$(sbatch --parsable -N1 -t 2 -o /dev/null --wrap "munge -n >$cred")
wait_job_state "$mjob" COMPLETED 30 || true
check "a job's munge default socket is the testbed's munged (private mount namespace)" \
	unmunge --socket="$TB_DIR/run/munge/munge.socket.2" --input="$cred" --output=/dev/null
is "$([[ -e /run/munge ]] && echo present || echo absent)" "$host_run_munge" \
	"the host's /run is untouched (/run/munge $host_run_munge before, as after)"
# Reconfigures while jobs end: no message checked against another munged,
# every job finishes.
burst=()
for ((i = 0; i < 24; i++)); do burst+=("$(sbatch --parsable -N1 -t 2 -o /dev/null --wrap 'srun true')"); done
for ((i = 0; i < 4; i++)); do sleep 0.5; scontrol reconfigure; done
# A job whose end crossed a reconfigure can stay COMPLETING until slurmctld
# resends its TERMINATE_JOB: Slurm 22.05 does that from _list_find_job_old()
# (job_mgr.c) once KillWait + 2 x MessageTimeout (here 65 s) have passed,
# checked every MinJobAge (10 s here; controller.c's purge_job_interval):
# up to 75 s. Waiting 150 s lets Slurm's own recovery finish; a job still
# queued after that was lost.
burst_ids=$(IFS=,; echo "${burst[*]}")
t0=$SECONDS
for ((i = 0; i < 300; i++)); do
	[[ -z $(squeue -h -j "$burst_ids" 2>/dev/null) ]] && break
	sleep 0.5
done
left=$(squeue -h -j "$burst_ids" -o '%i %T %R' 2>/dev/null || true)
if [[ -n $left ]]; then
	while read -r line; do diag "  still queued: $line"; done <<<"$left"
elif ((SECONDS - t0 > 30)); then
	diag "the burst took $((SECONDS - t0)) s to leave the queue (a COMPLETING job waited for slurmctld's resend)"
fi
is "$(grep -c . <<<"$left" || true):$(cat "$TB_DIR"/log/slurmctld.log "$TB_DIR"/log/slurmd-*.log | grep -c 'Failed to access "/run/munge' || true)" "0:0" \
	"4 reconfigures during 24 jobs: every job ends, no credential sent to a munged not the testbed's"

# ---- down, with a job running -----------------------------------------------
# The job records its shell's PID; that shell's parent is the slurmstepd.
long=$(sbatch --parsable -N1 -t 5 -o /dev/null --wrap "echo \$\$ > $jobs_dir/long.pid; exec sleep 600")
wait_job_state "$long" RUNNING 30 || true
for ((i = 0; i < 50; i++)); do [[ -s $jobs_dir/long.pid ]] && break; sleep 0.1; done
task_pid=$(cat "$jobs_dir/long.pid" 2>/dev/null || echo "")
stepd_pid=$(awk '{print $4}' "/proc/$task_pid/stat" 2>/dev/null || echo "")
is "$(cat "/proc/$stepd_pid/comm" 2>/dev/null || echo none)" slurmstepd "a running job has a slurmstepd (pid ${stepd_pid:-?})"

# alive PID: exists and is not a zombie (PID 1 may reap late); a zombie
# leader with live threads (a multi-threaded daemon exiting) is alive.
alive() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) && [[ -n $stat ]] || return 1
	stat=${stat##*) }      # drop "pid (comm) ", leaving "state ppid ..."
	[[ ${stat%% *} != Z ]] ||
		(($(find "/proc/$1/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l) > 1))
}
pids=()
for f in "$TB_DIR"/pids/*.pid; do pids+=("$(tb_pidfile "$f")"); done
pids+=("$task_pid" "$stepd_pid")
tb_down
left=()
for pid in "${pids[@]}"; do
	if [[ -n $pid ]] && alive "$pid"; then left+=("$pid"); fi
done
is "${left[*]}" "" "down stopped all ${#pids[@]} processes (daemons, slurmstepd, job task)"
if ((${#left[@]})); then
	while read -r line; do diag "  $line"; done < <(ps -o pid,ppid,stat,etime,args -p "${left[*]}")
fi
ok "$M2G_TESTBED down --dir $TB_DIR" "a second down succeeds (idempotent)"
rc=0; M2G_TESTBED_CALLER=1 "$M2G_TESTBED" up --racks 2 --stock --dir "$TB_DIR" 2>"$TB_TMP/other.err" || rc=$?
ok "[[ $rc == 3 ]] && grep -q 'belongs to process $$' '$TB_TMP/other.err'" \
	"another suite's 'up' on this suite's stopped testbed is refused (exit 3) while this suite runs"

# ---- down --remove: the directory goes under the testbed's lock ---------------
# lib.sh removes a passed suite's testbed this way: another suite may be
# starting a testbed on the same base at that moment, and it must find either
# the old directory (and wait for its lock) or none, never half of one.
fake=$TB_TMP/fake-testbed
mkdir -p "$fake/etc" && : >"$fake/testbed.env"
( exec 9<"$fake"; flock 9; sleep 2 ) &
holder=$!
sleep 0.3
t0=$SECONDS
rc=0; "$M2G_TESTBED" down --remove --dir "$fake" >/dev/null 2>&1 || rc=$?
is "$rc:$([[ -e $fake ]] && echo kept || echo removed):$((SECONDS - t0 >= 1))" "0:removed:1" \
	"down --remove waits for the testbed's lock, then deletes the directory"
wait "$holder" || true
other=$TB_TMP/not-a-testbed
mkdir -p "$other" && echo keep >"$other/data"
rc=0; "$M2G_TESTBED" down --remove --dir "$other" >/dev/null 2>"$TB_TMP/remove.err" || rc=$?
is "$rc:$(cat "$other/data" 2>/dev/null)" "1:keep" \
	"down --remove refuses a directory that is not a testbed: $(head -n 1 "$TB_TMP/remove.err")"
