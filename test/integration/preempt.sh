#!/usr/bin/env bash
# preempt.sh — preemption by QOS with select/m2g (select_m2g(8),
# PREEMPTION): a 2-rack testbed (two NVLink domains of 18 nodes x 4 GPUs)
# with PreemptType=preempt/qos and PreemptMode=REQUEUE, a QOS `low`
# (training) that QOS `high` may preempt.
#   1. Low-priority training fills both racks: one rack with nine 2-node
#      jobs, the other, a few seconds later, with one 18-node job. The
#      nine are given the lowest priority, so the preempt plugin lists them
#      first (cons_tres's own order would clear their rack). A strict
#      18-node job of QOS high arrives: select/m2g clears the rack whose
#      eviction loses the least work (the younger 18-node job), the other
#      rack's nine jobs keep running, and the AdminComment and
#      `m2g explain` name the job evicted.
#   2. A job of locality any keeps Slurm's own preemption (cons_tres with
#      the plugin's candidates).
#   3. A job that may not preempt (QOS low) still waits for its domain.
#   4. PreemptMode=CANCEL (QOS lowc): of two 18-node jobs, the younger is
#      cancelled and the older runs on.
#   5. PreemptType=preempt/partition_prio: a job of a partition of a
#      higher PriorityTier clears the younger of two 18-node jobs (22.05:
#      after a slurmctld restart, which is how it takes a new PreemptType).
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

M2G=${M2G_BUILDDIR:?}/src/cli/m2g
T=$TB_TMP
cat >"$T/preempt.conf" <<'EOF'
PreemptType=preempt/qos
PreemptMode=REQUEUE
EOF
tb_up --racks 2 --slurm-conf-extra "$T/preempt.conf"
cd "$T"

sub() { tb_submit "$@"; }
rack_of() { job_nodelist "$1" | cut -c1-3; }
admin_comment() { squeue -h -t all -j "$1" -O admin_comment:2000 2>/dev/null | sed 's/ *$//'; }

check "QOS low and high (high preempts low, low is requeued)" \
	eval 'sacctmgr -i add qos low PreemptMode=requeue >/dev/null &&
		sacctmgr -i add qos high Preempt=low >/dev/null &&
		sacctmgr -i modify user root set qos+=low,high >/dev/null'

# --- 1. the rack whose eviction loses the least work ----------------------------
small=()
for _ in 1 2 3 4 5 6 7 8 9; do
	sub id --qos=low -N2 --gres=gpu:4 --m2g-topology=strict:nvlink --wrap 'sleep 900'
	small+=("$id")
done
for id in "${small[@]}"; do wait_job_state "$id" RUNNING 60 || true; done
small_rack=$(rack_of "${small[0]}")
same=1
for id in "${small[@]}"; do [[ $(rack_of "$id") == "$small_rack" ]] || same=0; done
ok "$((same ? 0 : 1))" "nine 2-node training jobs run in one rack ($small_rack)"
sleep 6  # the 18-node job is younger: less work lost when it goes
sub big --qos=low -N18 --gres=gpu:4 --m2g-topology=strict:nvlink --wrap 'sleep 900'
check "an 18-node training job runs in the other rack" wait_job_state "$big" RUNNING 60
big_rack=$(rack_of "$big")
ok "[[ -n $big_rack && $big_rack != $small_rack ]]" "the 18-node job is in $big_rack, the 2-node jobs in $small_rack"
# The preempt plugin lists the lowest priority first: the nine.
for id in "${small[@]}"; do scontrol update jobid="$id" priority=1; done
scontrol update jobid="$big" priority=100

sub hi --qos=high -N18 --gres=gpu:4 --m2g-topology=strict:nvlink --wrap 'sleep 120'
check "the strict 18-node high-QOS job starts by preemption" wait_job_state "$hi" RUNNING 90
is "$(rack_of "$hi")" "$big_rack" "it cleared $big_rack, where eviction loses the least work"
ok "[[ \$(scontrol show hostnames \$(job_nodelist $hi) | wc -l) == 18 ]]" "one NVLink domain, all 18 nodes"
st=$(job_state "$big")
ok "[[ $st == PENDING || $st == REQUEUED* || $st == COMPLETING ]]" "the 18-node training job was requeued (state $st)"
running=0
for id in "${small[@]}"; do [[ $(job_state "$id") == RUNNING ]] && running=$((running + 1)); done
is "$running" 9 "the nine 2-node jobs in $small_rack keep running (no wasted eviction)"
c=$(admin_comment "$hi")
diag "AdminComment: $c"
ok "[[ '$c' == *'preempted=$big '* ]]" "AdminComment names the job evicted (preempted=$big)"
ok "[[ '$c' == *evicted_gpu_h=* && '$c' == *'to clear nvl'* ]]" "AdminComment gives the work lost and the domain cleared"
explain=$("$M2G" explain "$hi" 2>&1)
diag "$explain"
ok "grep -q 'preempted job $big to make room' <<<\"\$explain\"" "m2g explain names the job evicted"
rc=0
grep -q "preempted JobId=$big has been requeued to reclaim resources for JobId=$hi" "$TB_DIR/log/slurmctld.log" || rc=$?
ok "$rc" "slurmctld requeued that job for it"
ok "! grep -Eq 'preempted JobId=($(IFS='|'; echo "${small[*]}")) ' '$TB_DIR/log/slurmctld.log'" \
	"slurmctld preempted none of the nine"

# --- 2. locality any: Slurm's own preemption ----------------------------------------
sub anyjob --qos=high -N2 --gres=gpu:4 --m2g-topology=any --wrap 'sleep 30'
check "a high-QOS job of locality any starts by Slurm's own preemption" wait_job_state "$anyjob" RUNNING 90
c=$(admin_comment "$anyjob")
ok "[[ '$c' != *preempted=* ]]" "cons_tres chose its victims (no m2g preemption record): $c"

# --- 3. no candidates, no preemption ------------------------------------------------
sub lowjob --qos=low -N18 --gres=gpu:4 --m2g-topology=strict:nvlink --wrap 'sleep 30'
sleep 8
is "$(job_state "$lowjob")" PENDING "a low-QOS strict job may preempt nobody: it waits"
ok "[[ \$(admin_comment $lowjob) == *'m2g:[waiting'* ]]" "and says what it waits for"

# --- 4. PreemptMode=CANCEL (a QOS whose jobs are cancelled, not requeued) ---------
scancel -u "$(id -un)" 2>/dev/null || true
check "QOS lowc (cancelled when preempted), which high may preempt" \
	eval 'sacctmgr -i add qos lowc PreemptMode=cancel >/dev/null &&
		sacctmgr -i modify qos high set Preempt=low,lowc >/dev/null &&
		sacctmgr -i modify user root set qos+=lowc >/dev/null'
all_idle() { [[ $(sinfo -h -t idle -o %D | awk '{ s += $1 } END { print s + 0 }') == 36 ]]; }
check "every node idle again" tb_wait_for "36 idle nodes" 60 all_idle
sub old --qos=lowc -N18 --gres=gpu:4 --m2g-topology=strict:nvlink --wrap 'sleep 900'
wait_job_state "$old" RUNNING 60 || true
sleep 4
sub young --qos=lowc -N18 --gres=gpu:4 --m2g-topology=strict:nvlink --wrap 'sleep 900'
check "two 18-node lowc jobs fill both racks" wait_job_state "$young" RUNNING 60
sub hi2 --qos=high -N18 --gres=gpu:4 --m2g-topology=strict:nvlink --wrap 'sleep 30'
check "a strict 18-node high-QOS job starts by cancelling one" wait_job_state "$hi2" RUNNING 90
is "$(rack_of "$hi2")" "$(rack_of "$young")" "it took the younger job's rack"
ok "[[ \$(sacct -n -X -P -j $young -o State | head -n1) =~ ^(PREEMPTED|CANCELLED) ]]" \
	"the younger job was cancelled (PreemptMode=CANCEL): $(sacct -n -X -P -j "$young" -o State | head -n1)"
is "$(job_state "$old")" RUNNING "the older one runs on"
ok "[[ \$(admin_comment $hi2) == *'preempted=$young '* ]]" "AdminComment names it"

# --- 5. PreemptType=preempt/partition_prio (a partition of a higher PriorityTier) -----
# The preempt plugin hands select the same candidate list. From 23.11 on a
# reconfigure starts a new slurmctld, which takes the new PreemptType; 22.05
# keeps the one it started with until it is restarted, so there slurmctld is
# stopped and started again on the new slurm.conf (it recovers its state).
scancel -u "$(id -un)" 2>/dev/null || true
check "every node idle again" tb_wait_for "36 idle nodes" 60 all_idle
tb_write "$TB_DIR/etc/slurm.conf" < <(sed 's|^PreemptType=.*|PreemptType=preempt/partition_prio|' \
	"$TB_DIR/etc/slurm.conf"
	echo "PartitionName=lo Nodes=ALL PriorityTier=1 PreemptMode=REQUEUE State=UP"
	echo "PartitionName=hi Nodes=ALL PriorityTier=10 State=UP")
if tb_slurm_reexecs; then
	tb_reconfigure_m2g "slurmctld reconfigured with preempt/partition_prio and partitions lo and hi"
else
	check "slurmctld restarted with preempt/partition_prio and partitions lo and hi" \
		eval '"$M2G_TESTBED" stop slurmctld --dir "$TB_DIR" >/dev/null &&
			"$M2G_TESTBED" start slurmctld --dir "$TB_DIR" >/dev/null'
	# The slurmds keep the old slurm.conf: partitions and PreemptType are
	# slurmctld's alone. Make them read the new one so no node is flagged
	# for a configuration that differs.
	scontrol reconfigure >/dev/null 2>&1 || true
fi
is "$(scontrol show config | awk '$1 == "PreemptType" { print $3 }')" preempt/partition_prio \
	"slurmctld runs preempt/partition_prio"
check "partitions lo and hi are up" tb_wait_for "partitions lo and hi" 30 \
	eval 'sinfo -h -p lo,hi -o %P | sort | tr "\n" " " | grep -q "hi lo"'
sub p_old -p lo -N18 --gres=gpu:4 --m2g-topology=strict:nvlink --wrap 'sleep 900'
wait_job_state "$p_old" RUNNING 60 || true
sleep 4
sub p_young -p lo -N18 --gres=gpu:4 --m2g-topology=strict:nvlink --wrap 'sleep 900'
check "two 18-node jobs of partition lo fill both racks" wait_job_state "$p_young" RUNNING 60
young_rack=$(rack_of "$p_young")
sub p_hi -p hi -N18 --gres=gpu:4 --m2g-topology=strict:nvlink --wrap 'sleep 30'
check "a strict 18-node job of partition hi starts by preemption" wait_job_state "$p_hi" RUNNING 90
is "$(rack_of "$p_hi")" "$young_rack" "it took the younger job's rack (the least work lost)"
st=$(job_state "$p_young")
ok "[[ $st == PENDING || $st == REQUEUED* || $st == COMPLETING ]]" "the younger lo job was requeued (state $st)"
is "$(job_state "$p_old")" RUNNING "the older lo job runs on"
ok "[[ \$(admin_comment $p_hi) == *'preempted=$p_young '* ]]" "AdminComment names the job evicted"

scancel -u "$(id -un)" 2>/dev/null || true
done_testing
