#!/usr/bin/env bash
# select/m2g on the real 144-node testbed, against stock cons_tres with
# topology/tree in the same test: where a rack-sized job lands on a busy
# cluster, strict waiting, health, backfill, stock clients, a slurmctld
# crash with jobs running, and jobs that take part of a node.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

M2G=${M2G_BUILDDIR:?}/src/cli/m2g
T=$TB_TMP

where() { "$M2G" topology locate "$TB_DIR/etc/m2g.conf" "$1"; }
# A realistic start: small jobs hold the first 10 nodes of rack 1.
make_busy() { sbatch --parsable -J busy -N10 -w 'r01n[01-10]' --exclusive --gres=gpu:4 --wrap 'sleep 600'; }
rack_job() {  # a 72-GPU job: 18 nodes x 4 GPUs
	sbatch --parsable -J rack -N18 --exclusive --gres=gpu:4 "$@" --wrap 'srun true; sleep 5'
}
# Predicates for tb_wait_for: each prints what it saw.
# topology_has SWITCH...: slurmctld's topology lists these switches.
topology_has() {
	local t sw
	t=$(scontrol show topology 2>&1) || { echo "$t"; return 1; }
	echo "$t"
	for sw; do grep -q "SwitchName=$sw " <<<"$t" || return 1; done
}
# job_field_has JOBID TEXT: `scontrol show job` holds TEXT; prints the
# AdminComment and SchedNodeList lines.
job_field_has() {
	local j
	j=$(scontrol show job "$1" 2>&1)
	grep -E 'AdminComment=|SchedNodeList=|JobState=' <<<"$j"
	grep -qF -- "$2" <<<"$j"
}
# planned_on JOBID: backfill has planned it somewhere (SchedNodeList).
planned_on() {
	local p
	p=$(scontrol show job "$1" | sed -n 's/.*SchedNodeList=\([^ ]*\).*/\1/p')
	echo "job $1: SchedNodeList=${p:-none}"
	[[ -n $p && $p != "(null)" ]]
}
# saved_after EPOCH: slurmctld's job state file was written after EPOCH.
saved_after() {
	local m
	m=$(stat -c %Y "$TB_DIR/state/job_state" 2>/dev/null || echo 0)
	echo "job_state written at $m, wanted after $1"
	((m > $1))
}
# registered NODE: the node has registered with slurmctld (not UNKNOWN or
# NOT_RESPONDING).
registered() {
	local st
	st=$(scontrol show node "$1" | sed -n 's/.* State=\([^ ]*\).*/\1/p')
	echo "$1: State=${st:-none}"
	[[ -n $st && $st != UNKNOWN* && $st != *NOT_RESPONDING* ]]
}
# idle_cluster: no job is running or completing.
idle_cluster() {
	local q
	q=$(squeue -h -t RUNNING,COMPLETING -o '%i %j %T')
	echo "running or completing: ${q:-none}"
	[[ -z $q ]]
}

# --- (a) stock cons_tres + topology/tree of the InfiniBand fabric ----------
# What a site without m2g runs: the leaf switches know their nodes, nothing
# knows the NVLink racks.
tb_up --racks 8 --stock
tb_write "$TB_DIR/etc/topology.conf" <<EOT
SwitchName=leaf01 Nodes=r0[1-4]n[01-18]
SwitchName=leaf02 Nodes=r0[5-8]n[01-18]
SwitchName=spine01 Switches=leaf[01-02]
EOT
scontrol reconfigure
tb_wait_for "topology/tree reads the new topology.conf" 30 topology_has leaf01 leaf02 spine01 || true
b=$(make_busy); wait_job_state "$b" RUNNING 60
j=$(rack_job); wait_job_state "$j" COMPLETED 120
stock_where=$(where "$(job_nodelist "$j")")
diag "stock cons_tres: $stock_where"
ok "[[ '$stock_where' != *'in 1 NVLink domain'* ]]" "stock cons_tres+topology/tree splits the 72-GPU job across racks"
tb_down

# --- the same sequence with select/m2g -----------------------------------------
tb_up --racks 8
ok "scontrol show config | grep -Eq '^SelectType +=  *select/cons_tres'" "SelectType stays select/cons_tres (m2g shadows it)"
ok "grep -q 'm2g: select: select/m2g active' '$TB_DIR/log/slurmctld.log'" "slurmctld loaded select/m2g"
b=$(make_busy); wait_job_state "$b" RUNNING 60
j=$(rack_job); wait_job_state "$j" COMPLETED 120
is "$(where "$(job_nodelist "$j")")" "18 nodes in 1 NVLink domain (nvl02 18/18, whole) under 1 leaf switch (leaf01)" \
	"select/m2g keeps the 72-GPU job in one whole NVLink domain"
ac=$(sacct_field "$j" AdminComment)
ok "[[ '$ac' == 'm2g:[domains=nvl02 leaves=leaf01 policy=prefer:nvlink score=0 reason=nvl02, best fit (0 of 18 nodes left free there)'[\;\]]* ]]" \
	"sacct shows the m2g: placement segment in AdminComment"
diag "AdminComment: $ac"
scancel -n busy

# --- (b) a strict job waits for a whole domain, (d) backfill goes around it ---
# The partition's default intent becomes strict (m2g.conf PartitionName=),
# one node is busy in every rack for a while, and rack 3's frees first.
tb_append "$TB_DIR/etc/m2g.conf" "PartitionName=gpu DefaultTopology=strict:nvlink"
tb_reconfigure_m2g "select/m2g reloaded m2g.conf (the partition's strict default)"
holders=()
for r in 1 2 4 5 6 7 8; do holders+=("$(sbatch --parsable -J hold -N1 -w "r0${r}n01" --exclusive --gres=gpu:4 --wrap 'sleep 600')"); done
short=$(sbatch --parsable -J hold3 -N1 -w r03n01 --exclusive --gres=gpu:4 -t 1 --wrap 'sleep 45')
for h in "${holders[@]}" "$short"; do wait_job_state "$h" RUNNING 60; done
strict=$(rack_job -t 10)  # no --m2g-topology: the partition default applies
# Slurm tries it at submission, or (while another job completes) at the
# next scheduling pass: wait for its first run-now test.
tb_wait_for "select/m2g's first verdict on job $strict" 30 job_field_has "$strict" 'AdminComment=m2g:[waiting' || true
is "$(job_state "$strict")" PENDING "a strict 18-node job (partition default) waits while no rack is whole"
ac=$(scontrol show job "$strict" | sed -n 's/.*AdminComment=\(m2g:.*\)$/\1/p')
ok "[[ '$ac' == 'm2g:[waiting policy=strict:nvlink wait=nvlink-domain need=18 reason=waiting for an NVLink domain with 18 free healthy nodes (best now: nvl01 with 17)'[\;\]]* ]]" \
	"its AdminComment says what it waits for"
diag "AdminComment: $ac"
# Slurm's backfill plans the waiting job on the nodes select/m2g's will-run
# answer gave it: one whole rack, the one that frees first by the running
# jobs' time limits (hold3's -t 1 against the others' 30-minute default),
# not the first in rank order (SchedNodeList).
tb_wait_for "backfill plans job $strict" 30 planned_on "$strict" || true
planned=$(scontrol show job "$strict" | sed -n 's/.*SchedNodeList=\([^ ]*\).*/\1/p') || planned=
is "$(where "$planned")" "18 nodes in 1 NVLink domain (nvl03 18/18, whole) under 1 leaf switch (leaf01)" \
	"backfill plans it on one whole rack, the one that frees first (SchedNodeList=${planned:-none})"
small=$(sbatch --parsable -J small -N2 --exclusive --gres=gpu:4 -t 2 --wrap 'sleep 3')
check "a small job starts around the waiting strict job" wait_job_state "$small" "RUNNING|COMPLETED" 30
is "$(job_state "$strict")" PENDING "and the strict job still waits"
wait_job_state "$strict" "RUNNING|COMPLETED" 120
is "$(where "$(job_nodelist "$strict")")" "18 nodes in 1 NVLink domain (nvl03 18/18, whole) under 1 leaf switch (leaf01)" \
	"it starts on the rack that freed, whole"
wait_job_state "$strict" COMPLETED 60
scancel -n hold

# --- (b2) every rack busy: fewer nodes free than a strict job needs -------------
# Slurm's offer holds fewer nodes than the job asks for; the record says
# what it waits for in the engine's words (issue 30: it once said nothing,
# and explain printed "is waiting: ;").
full=$(sbatch --parsable -J full -N140 --exclusive --gres=gpu:4 --wrap 'sleep 300')
wait_job_state "$full" RUNNING 90
few=$(sbatch --parsable -J few -N10 --exclusive --gres=gpu:4 -t 5 --wrap 'true')
tb_wait_for "select/m2g's verdict on job $few" 30 job_field_has "$few" 'AdminComment=m2g:[waiting' || true
ac=$(scontrol show job "$few" | sed -n 's/.*AdminComment=\(m2g:.*\)$/\1/p')
diag "AdminComment: ${ac:-none}"
if [[ -n $ac ]]; then
	ok "[[ '$ac' == 'm2g:[waiting policy=strict:nvlink wait=nodes need=10 reason=waiting for 10 free healthy nodes under one switch (usable now: 4)'[\;\]]* ]]" \
		"a strict 10-node job with 4 nodes free waits for nodes, and its AdminComment says so"
else
	skip "a strict 10-node job with 4 nodes free says what it waits for" "Slurm $(tb_slurm_release) tested no node selection for it"
fi
explained=$($M2G explain "$few" 2>&1) || true
diag "$explained"
ok '[[ $explained == *"Job $few is "* && $explained != *"waiting: ;"* ]]' "m2g explain gives its cause"
scancel "$few" "$full"

# --- (c) a drained node and a degraded node are avoided ------------------------
echo '{"degraded": "r04n05"}' | tb_write "$TB_DIR/etc/health.json"
tb_append "$TB_DIR/etc/m2g.conf" "HealthFile=$TB_DIR/etc/health.json"
tb_reconfigure_m2g "select/m2g reloaded m2g.conf (HealthFile=), reading the health feed at once"
scontrol update nodename=r05n03 state=drain reason=m2g-test
fill=()
for r in 1 2 3 6 7 8; do fill+=("$(sbatch --parsable -J fill -N18 -w "r0${r}n[01-18]" --exclusive --gres=gpu:4 --wrap 'sleep 600')"); done
for f in "${fill[@]}"; do wait_job_state "$f" RUNNING 60; done
h1=$(sbatch --parsable -J h1 -N17 --exclusive --gres=gpu:4 --m2g-topology=strict:leaf --wrap 'sleep 300')
h2=$(sbatch --parsable -J h2 -N17 --exclusive --gres=gpu:4 --m2g-topology=strict --wrap 'sleep 300')
wait_job_state "$h1" RUNNING 60
wait_job_state "$h2" RUNNING 60
used="$(job_nodes "$h1")
$(job_nodes "$h2")"
ok "! grep -qx 'r04n05' <<<'$used'" "the node degraded in the health feed is not used"
grep -qx 'r04n05' <<<"$used" && diag "h1: $(job_nodelist "$h1"), h2: $(job_nodelist "$h2")"
ok "! grep -qx 'r05n03' <<<'$used'" "the drained node is not used"
is "$(where "$(job_nodelist "$h1")" | grep -o 'in 1 NVLink domain')" "in 1 NVLink domain" "each 17-node job stays in one rack"
ok "scontrol show job $h1 | grep -q 'AdminComment=m2g:\[domains=nvl0[45] leaves=leaf0[12] policy=strict:leaf '" \
	"--m2g-topology reaches select/m2g through spank_job_env (policy=strict:leaf)"

# --- (e) stock clients and CoreCnt reservations ---------------------------------
ok "sinfo -h -o '%D %T' | grep -q ." "sinfo works"
ok "squeue -h -j $h1 -o %T | grep -q RUNNING" "squeue works"
ok "scontrol show node r01n01 | grep -q 'Gres=gpu:4'" "scontrol show node works"
ok "scontrol create reservation reservationname=m2gcores starttime=now+1hour duration=60 users=root nodes=r08n18 corecnt=2 flags=ignore_jobs" \
	"a CoreCnt reservation is accepted (plugin id 109)"
scontrol delete reservationname=m2gcores >/dev/null 2>&1 || true

# --- (f) slurmctld killed with running jobs, and started again ------------------
# Slurm saves job state in the background, a while after a change; a job
# that started just before a crash may not be in it yet (it is then
# requeued, as Slurm intends). Make a change now and wait for the save
# that follows it, so the running jobs are on disk before the kill.
mark=$(date +%s)
sleep 1  # time passing: the save must have a later mtime (whole seconds) than the mark
scontrol update jobid="$h1" comment=m2g-crash-test
check "slurmctld saved its job state after the jobs started" tb_wait_for "a job state save" 90 saved_after "$mark"
"$M2G_TESTBED" stop slurmctld --signal KILL --dir "$TB_DIR" >/dev/null
# Started as the testbed starts it (in the daemons' mount namespace); it
# waits until slurmctld answers.
rc=0
"$M2G_TESTBED" start slurmctld --dir "$TB_DIR" >/dev/null || rc=$?
ok "[[ $rc == 0 ]] && scontrol ping | grep -q 'is UP'" "slurmctld is back after SIGKILL"
is "$(squeue -h -j "$h1,$h2" -o %T | sort -u)" RUNNING "the running jobs survived the crash"
ok "scontrol show job $h1 | grep -q 'AdminComment=m2g:\[domains=nvl0[45]'" "their m2g annotation survived"
# Every healthy node is busy now; free one rack's worth for a new job.
scancel "$h2"
wait_job_state "$h2" CANCELLED 60
after=$(sbatch --parsable -J after -N1 --exclusive --gres=gpu:4 --wrap true)
wait_job_state "$after" COMPLETED 60
ok "[[ \$(sacct_field $after AdminComment) == m2g:* ]]" "jobs placed after the restart are annotated"
for n in fill h1 h2; do scancel -n "$n"; done  # one name each: a repeated -n keeps only the last

# --- (g) the prefer wait counts from when the job could first have started ----
# PreferWaitSec=20. A prefer job queues 30 s with nothing free at all (no
# placement of any kind): that is not prefer wait. Then every rack frees
# but for one node each, so only a two-rack placement is free: its wait
# starts then, and it still holds out for a whole rack for 20 s, saying
# since when in AdminComment, before it takes the two racks.
sed -e 's/^PartitionName=gpu .*/PartitionName=gpu DefaultTopology=prefer:nvlink PreferWaitSec=20/' \
	-e '/^HealthFile=/d' "$TB_DIR/etc/m2g.conf" | tb_write "$TB_DIR/etc/m2g.conf"
# The drain from (c) is in slurmctld's saved node state only if it was saved
# before the SIGKILL in (f); resume it if it is still there. Slurm refuses
# to resume a node that has not registered with the new slurmctld yet
# (until then its state is UNKNOWN: "Invalid node state specified 0").
tb_wait_for "r05n03 registers with the restarted slurmctld" 30 registered r05n03 || true
if scontrol show node r05n03 | grep -q 'State=[A-Z+]*DRAIN'; then
	check "(g) the drained node registered again and is resumed" scontrol update nodename=r05n03 state=resume
fi
tb_reconfigure_m2g "select/m2g reloaded m2g.conf (PreferWaitSec=20, no HealthFile)"
tb_wait_for "the jobs of (f) to end" 90 idle_cluster || true
is "$(squeue -h -t RUNNING,COMPLETING -o %i | wc -l)" 0 "(g) starts on an idle cluster"
holders=()
for r in 1 2 3 4 5 6 7 8; do holders+=("$(sbatch --parsable -J hold -N1 -w "r0${r}n01" --exclusive --gres=gpu:4 --wrap 'sleep 600')"); done
wall=$(sbatch --parsable -J wall -N136 -w 'r0[1-8]n[02-18]' --exclusive --gres=gpu:4 --wrap 'sleep 600')
for h in "${holders[@]}" "$wall"; do wait_job_state "$h" RUNNING 60; done
pj=$(rack_job -t 10)
# Time passing: 30 s with nothing free, longer than PreferWaitSec, must not
# start its prefer wait nor the job.
sleep 30
is "$(job_state "$pj")" PENDING "a prefer job with nothing free for 30 s (PreferWaitSec=20) still pends"
ok "! scontrol show job $pj | grep -q prefer_since=" "its prefer wait has not started: no placement of any kind was free"
freed=$(date +%s)
scancel "$wall"
tb_wait_for "job $pj's prefer wait to start" 10 job_field_has "$pj" 'prefer_since=' || true
ac=$(scontrol show job "$pj" | sed -n 's/.*AdminComment=\(m2g:[^ ]* .*\)$/\1/p')
since=$(scontrol show job "$pj" | grep -o 'prefer_since=[0-9]*' | cut -d= -f2)
diag "AdminComment: $ac"
ok "[[ -n '$since' ]] && (( ${since:-0} >= freed - 1 && ${since:-0} <= freed + 20 ))" \
	"the wait starts when a two-rack placement is free (prefer_since=${since:-none}, freed at $freed)"
sleep 8  # time passing: within PreferWaitSec (20 s) it must not start
is "$(job_state "$pj")" PENDING "8 s later it still holds out for a whole rack"
ok "$M2G explain $pj | grep -q 'prefer takes the best placement free from'" "m2g explain says when it falls back"
check "then it takes the best placement free" wait_job_state "$pj" "RUNNING|COMPLETED" 120
start=$(date -d "$(sacct_field "$pj" Start)" +%s 2>/dev/null) || start=0
ok "(( start >= ${since:-0} + 20 ))" "no earlier than PreferWaitSec after its wait began ($(( start - ${since:-0} )) s)"
is "$(where "$(job_nodelist "$pj")" | grep -o 'in [0-9] NVLink domains')" "in 2 NVLink domains" "on two racks"
scancel -n hold
scancel "$pj"

# --- (h) jobs that take part of a node ------------------------------------------
# A one-GPU job goes to the node it leaves the fewest GPUs free on, so whole
# nodes stay whole: r01n05 has 3 of its 4 GPUs taken, and rack 1 is the
# first of equal racks.
tb_wait_for "the jobs of (g) to end" 90 idle_cluster || true
part=$(sbatch --parsable -J part -N1 -w r01n05 --gres=gpu:3 -t 10 --wrap 'sleep 600')
wait_job_state "$part" RUNNING 60
one=$(sbatch --parsable -J one -N1 --gres=gpu:1 -t 5 --wrap 'sleep 600')
wait_job_state "$one" RUNNING 60
is "$(job_nodelist "$one")" r01n05 "a one-GPU job fills the node with one GPU left, not an empty node"
scancel "$part" "$one"
tb_wait_for "jobs part and one to end" 60 idle_cluster || true
# Backfill plans a one-GPU job where one GPU frees first, not where a
# whole node does: r08n18's one-GPU job ends by its 1-minute limit (its
# three-GPU neighbour runs 10 minutes), r08n17 is whole after 5 minutes,
# every other node after 30.
e5=$(sbatch --parsable -J pn -N1 -w r08n17 --exclusive --gres=gpu:4 -t 5 --wrap 'sleep 600')
b1=$(sbatch --parsable -J pn -N1 -w r08n18 --gres=gpu:1 -t 1 --wrap 'sleep 600')
c3=$(sbatch --parsable -J pn -N1 -w r08n18 --gres=gpu:3 -t 10 --wrap 'sleep 600')
wall=$(sbatch --parsable -J pn -N142 -w 'r0[1-7]n[01-18],r08n[01-16]' --exclusive --gres=gpu:4 -t 30 --wrap 'sleep 600')
for h in "$e5" "$b1" "$c3" "$wall"; do wait_job_state "$h" RUNNING 60; done
one=$(sbatch --parsable -J one -N1 --gres=gpu:1 -t 2 --wrap 'sleep 5')
tb_wait_for "backfill plans job $one" 30 planned_on "$one" || true
planned=$(scontrol show job "$one" | sed -n 's/.*SchedNodeList=\([^ ]*\).*/\1/p') || planned=
is "$planned" r08n18 "backfill plans a one-GPU job where a GPU frees first (SchedNodeList=${planned:-none})"
b1_end=$(date -d "$(scontrol show job "$b1" | sed -n 's/.*EndTime=\([^ ]*\).*/\1/p')" +%s 2>/dev/null) || b1_end=0
planned_start=$(date -d "$(scontrol show job "$one" | sed -n 's/.*StartTime=\([^ ]*\).*/\1/p')" +%s 2>/dev/null) || planned_start=0
ok "(( b1_end > 0 && planned_start <= b1_end + 60 ))" \
	"its expected start is when that GPU frees (start $planned_start, the one-GPU job's end $b1_end)"
check "it starts there once the one-GPU job's limit is up" wait_job_state "$one" "RUNNING|COMPLETED" 150
is "$(job_nodelist "$one")" r08n18 "on r08n18, beside the three-GPU job"
scancel -n pn
done_testing
