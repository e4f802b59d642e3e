#!/usr/bin/env bash
# The simulator and select/m2g choose the same nodes for the same state: one
# job trace (test/fixtures/sim/parity.csv) and one topology (the testbed's
# own m2g.conf) fed to both `m2g simulate --policy m2g` and a real slurmctld
# with select/m2g on the 4-rack testbed.
#
# The trace's jobs arrive a second apart and run far longer than the test,
# so nothing ends and each placement sees exactly the jobs before it:
# sub-node jobs sharing a node, whole-node and multi-node jobs in one NVLink
# domain, best fit once domains are partly used, a job larger than a domain
# spanning two under one leaf, a 2-node job of 3 GPUs a node.
# On Slurm each job is submitted as the simulator models it (G GPUs:
# ceil(G/P) nodes, P the largest Gpus= in m2g.conf, ceil(G/nodes) GPUs per
# node), with the default topology intent and no signals feed, and started
# before the next one is submitted. Then the node lists must be equal, job
# by job.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

M2G=${M2G_BUILDDIR:?}/src/cli/m2g
SRC=${M2G_SRCDIR:-$TB_LIB_DIR/../..}
TRACE=$SRC/test/fixtures/sim/parity.csv
T=$TB_TMP

# The trace in file order: "id gpus" per job (columns found by name, as the
# simulator's Philly reader does).
mapfile -t TRACE_JOBS < <(awk -F, '
	NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
	NF > 1  { print $col["job_id"], $col["num_gpus"] }' "$TRACE")
NJOBS=${#TRACE_JOBS[@]}
((NJOBS > 0)) || { echo "no jobs in $TRACE" >&2; exit 1; }
plan $((NJOBS + 6))

tb_up --racks 4
CONF=$TB_DIR/etc/m2g.conf

# Neutral state for both sides: no signals feed, no health feed, and no
# partition policy (select/m2g reads PartitionName= lines, the simulator
# only the cluster's DefaultTopology=).
ok "! grep -Eq '^[[:space:]]*(SignalsFile|HealthFile|PartitionName)=' '$CONF'" \
	"the testbed's m2g.conf has no signals feed, health feed or partition policy"

# --- the simulator -------------------------------------------------------------
status=0
"$M2G" simulate --conf "$CONF" --trace "$TRACE" --policy m2g --job-log "$T/sim.csv" >"$T/sim.out" 2>&1 ||
	status=$?
ok "$status" "m2g simulate --policy m2g on the testbed's m2g.conf and the trace"
((status == 0)) || sed 's/^/#   /' "$T/sim.out"

# P: the largest Gpus= of any node, as the simulator rounds jobs to nodes.
P=$(grep -E '^[[:space:]]*NodeName=' "$CONF" | grep -oE '(^|[[:space:]])Gpus=[0-9]+' | cut -d= -f2 | sort -n | tail -n1) || true
((${P:-0} > 0)) || { diag "no Gpus= on the NodeName lines of $CONF"; exit 1; }
declare -A SIM_NL SIM_NODES SIM_OK
late=""
while IFS= read -r line; do
	IFS=, read -r id _gpus nodes submit _eligible start _rest <<<"$line"
	nl=${line#*,\"}   # the last field, a quoted hostlist (nothing before it has ,")
	SIM_NL[$id]=${nl%\"}
	SIM_NODES[$id]=$nodes
	[[ $start == "$submit" ]] && SIM_OK[$id]=1 || late+=" $id(submit $submit, start $start)"
done < <(tail -n +2 "$T/sim.csv" 2>/dev/null)
missing=""
for j in "${TRACE_JOBS[@]}"; do [[ -n ${SIM_OK[${j% *}]:-} ]] || missing+=" ${j% *}"; done
is "${#SIM_OK[@]}:${missing# }" "$NJOBS:" "the simulator started all $NJOBS jobs at their submit time (nothing queued)"
[[ -z $late ]] || diag "started late or never:$late"

# What Slurm is asked for: G GPUs -> ceil(G/P) nodes x ceil(G/nodes) GPUs,
# the simulator's rounding (its job log's nodes column must agree).
declare -A NODES GPN
want="" got=""
for j in "${TRACE_JOBS[@]}"; do
	id=${j% *} g=${j#* }
	NODES[$id]=$(((g + P - 1) / P))
	GPN[$id]=$(((g + NODES[$id] - 1) / NODES[$id]))
	want+="$id:${NODES[$id]} " got+="$id:${SIM_NODES[$id]:-none} "
done
is "$got" "$want" "the simulator modelled each job as submitted: ceil(G/$P) nodes"

# --- select/m2g on the testbed -------------------------------------------------
declare -A SLURM_NL
ids=() unplaced=""
for j in "${TRACE_JOBS[@]}"; do
	id=${j% *} nodes=${NODES[${j% *}]} gpn=${GPN[${j% *}]}
	jid=$(sbatch --parsable -J "$id" -N "$nodes" --gpus-per-node="$gpn" -t 120 -o /dev/null --wrap 'sleep 3600') ||
		{ diag "job $id: sbatch failed"; continue; }
	ids+=("$jid")
	if wait_job_state "$jid" RUNNING 60; then
		SLURM_NL[$id]=$(squeue -h -j "$jid" -o %N)
		# select/m2g's record of the placement, not cons_tres deciding alone.
		info=$(scontrol -o show job "$jid") || info=""
		[[ $info == *" AdminComment=m2g:[domains="* ]] || unplaced+=" $id"
	else
		diag "job $id (Slurm job $jid): $(scontrol -o show job "$jid" | grep -oE '(JobState|Reason|AdminComment)=[^ ]*' | paste -sd' ')"
	fi
done

is "${unplaced# }" "" "select/m2g placed every job (AdminComment m2g:[domains=...])"

# --- job by job ------------------------------------------------------------------
compared=0
for j in "${TRACE_JOBS[@]}"; do
	id=${j% *}
	sim=${SIM_NL[$id]:-} slurm=${SLURM_NL[$id]:-}
	if [[ -z $sim || -z $slurm ]]; then
		ok 1 "job $id: select/m2g ${slurm:-placed nothing}, simulator ${sim:-placed nothing}"
		continue
	fi
	compared=$((compared + 1))
	# A list that does not expand is a difference, never an empty match.
	sim_names=$(scontrol show hostnames "$sim" | paste -sd' ') || sim_names="(simulator's $sim does not expand)"
	slurm_names=$(scontrol show hostnames "$slurm" | paste -sd' ') || slurm_names="(select/m2g's $slurm does not expand)"
	desc="job $id: $sim"
	[[ $slurm_names == "$sim_names" ]] || desc="job $id: select/m2g $slurm, simulator $sim"
	is "$slurm_names" "$sim_names" "$desc"
done
is "$compared" "$NJOBS" "compared the node lists of all $NJOBS jobs"

((${#ids[@]} == 0)) || scancel "${ids[@]}" || diag "scancel ${ids[*]} failed"
done_testing
