#!/usr/bin/env bash
# The Slurm features sites use, each with every m2g plugin loaded, on a
# 2-rack testbed (two NVLink domains of 18 nodes x 4 GPUs): that Slurm's
# meaning holds and how select/m2g places the job. Each block names the row
# of doc/compatibility.md it proves.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

M2G=${M2G_BUILDDIR:?}/src/cli/m2g
T=$TB_TMP
tb_up --racks 2
cd "$T"

# sub ID_VAR ARGS...: sbatch, output discarded; the job id into ID_VAR.
sub() { tb_submit "$@"; }
# racks_of HOSTLIST: the racks (rNN) it spans, one line each.
racks_of() { scontrol show hostnames "$1" | cut -c1-3 | sort -u; }
# one_domain JOBID: its nodes lie in one rack (one NVLink domain); prints them.
one_domain() {
	local nl
	nl=$(job_nodelist "$1") || { echo "job $1: no nodes"; return 1; }
	echo "job $1: $nl"
	(($(racks_of "$nl" | wc -l) == 1))
}
# placed_by_m2g JOBID: select/m2g placed it (its AdminComment names domains).
placed_by_m2g() {
	local c
	c=$(sacct -n -X -P -j "$1" -o AdminComment 2>/dev/null | head -n1)
	[[ -n $c ]] || c=$(squeue -h -t all -j "$1" -O admin_comment:1000 2>/dev/null)
	echo "job $1 AdminComment: $c"
	[[ $c == *"m2g:["*"domains=nvl"* ]]
}
alloc_gpus() { sacct_field "$1" AllocTRES | tr ',' '\n' | sed -n 's|^gres/gpu=||p'; }
node_count() { scontrol show hostnames "$(job_nodelist "$1")" | wc -l; }
done_ok() { wait_job_state "$1" COMPLETED 60; }

# --- job arrays --------------------------------------------------------------
sub arr --array=0-3 -N2 --exclusive --gres=gpu:4 --wrap 'sleep 1'
for i in 0 1 2 3; do
	check "array task ${arr}_$i completes" done_ok "${arr}_$i"
	ok "one_domain ${arr}_$i && placed_by_m2g ${arr}_$i" "array task ${arr}_$i: placed by select/m2g in one NVLink domain"
done

# --- heterogeneous jobs ------------------------------------------------------
sub het -N2 --exclusive --gres=gpu:4 --wrap 'sleep 1' : -N1 --gres=gpu:1
check "heterogeneous job completes" done_ok "$het+0"
for c in 0 1; do
	ok "one_domain $het+$c && placed_by_m2g $het+$c" "heterogeneous component $c: placed by select/m2g in one domain"
done
is "$(node_count "$het+0")/$(node_count "$het+1")" "2/1" "heterogeneous components keep their own sizes"

# --- --exclusive and shared nodes --------------------------------------------
sub s1 -N1 --gres=gpu:1 --wrap 'sleep 6'
wait_job_state "$s1" RUNNING 30 || true
sub s2 -N1 --gres=gpu:1 --wrap 'sleep 1'
sub s3 -N1 --gres=gpu:1 --exclusive --wrap 'sleep 1'
done_ok "$s2"; done_ok "$s3"
is "$(job_nodelist "$s2")" "$(job_nodelist "$s1")" "shared: a second 1-GPU job fills the node the first holds (best fit)"
ok "[[ '$(job_nodelist "$s3")' != '$(job_nodelist "$s1")' ]]" "--exclusive: a 1-GPU job gets a node of its own"
is "$(sacct_field "$s3" AllocCPUS)" 8 "--exclusive: the job holds every CPU of its node"
wait_job_state "$s1" COMPLETED 30 || true
# A node whose memory another job holds: cons_tres refuses it for a second
# job of all a node's memory, and select/m2g (which weighs GPUs, not memory)
# must then offer another node, not keep the job waiting for that one
# (found by Slurm's own test_114_4 in contrib/m2g-slurm-atf).
sub m1 -N1 --mem=0 --oversubscribe --wrap 'sleep 8'
wait_job_state "$m1" RUNNING 30 || true
sub m2 -N1 --mem=0 --oversubscribe --wrap 'sleep 1'
check "shared, --mem=0: a second job of all a node's memory runs while the first holds its node" \
	wait_job_state "$m2" "RUNNING|COMPLETED" 20
ok "[[ '$(job_nodelist "$m2")' != '$(job_nodelist "$m1")' ]]" "--mem=0: on another node ($(job_nodelist "$m2"), not $(job_nodelist "$m1"))"
ok "one_domain $m2" "--mem=0: one node, left to cons_tres among the others once m2g's choice was refused"
scancel "$m1" 2>/dev/null || true

# --- --gpus, --gpus-per-node, --gpus-per-task ----------------------------------
sub g1 --gpus=8 --wrap 'sleep 1'
sub g2 -N3 --gpus-per-node=4 --wrap 'sleep 1'
sub g3 -n4 --gpus-per-task=2 --wrap 'sleep 1'
sub g4 -N1-3 --gpus=10 --wrap 'sleep 1'
for j in "$g1" "$g2" "$g3" "$g4"; do check "GPU request job $j completes" done_ok "$j"; done
is "$(alloc_gpus "$g1")/$(node_count "$g1")" "8/2" "--gpus=8 without -N: 8 GPUs on 2 nodes, as stock cons_tres"
is "$(alloc_gpus "$g2")/$(node_count "$g2")" "12/3" "--gpus-per-node=4 -N3: 12 GPUs on 3 nodes"
is "$(alloc_gpus "$g3")/$(node_count "$g3")" "8/2" "-n4 --gpus-per-task=2: 8 GPUs on 2 nodes"
is "$(alloc_gpus "$g4")/$(node_count "$g4")" "10/3" "-N1-3 --gpus=10: 10 GPUs on 3 nodes"
for j in "$g1" "$g2" "$g3" "$g4"; do
	ok "one_domain $j && placed_by_m2g $j" "GPU request job $j: placed by select/m2g in one domain"
done

# --- tasks over several nodes, and node ranges (Slurm's test_113_2, test_116_42) --
cpus=$(scontrol show node r01n01 | sed -n 's/.*CPUTot=\([0-9]*\).*/\1/p')
sub t1 -n $((3 * cpus)) --exclusive --wrap 'sleep 1'
check "-n $((3 * cpus)) --exclusive without -N ($cpus CPUs a node): accepted and completes" done_ok "$t1"
is "$(node_count "$t1")" 3 "it ran on 3 nodes, as stock cons_tres spreads the tasks"
ok "one_domain $t1 && placed_by_m2g $t1" "placed by select/m2g in one domain"
sub t2 -N2-64 --wrap 'sleep 1'
check "-N2-64 on a 36-node cluster: completes (it took what is free, not 64)" done_ok "$t2"
ok "(( \$(node_count $t2) >= 2 ))" "it ran on $(node_count "$t2") nodes (at least 2)"

# --- --constraint --------------------------------------------------------------
scontrol update NodeName='r02n[15-18]' AvailableFeatures=hbm ActiveFeatures=hbm
sub c1 -C hbm -N2 --exclusive --gres=gpu:4 --wrap 'sleep 1'
done_ok "$c1"
is "$(scontrol show hostnames "$(job_nodelist "$c1")" | grep -cE '^r02n(15|16|17|18)$')" 2 "--constraint=hbm: both nodes carry the feature"
ok "placed_by_m2g $c1" "--constraint: placed by select/m2g among the nodes Slurm offered"
rc=0; err=$(sbatch -o /dev/null -C hbm -N5 --exclusive --gres=gpu:4 --wrap true 2>&1) || rc=$?
ok "((rc != 0)) && [[ '$err' == *'Requested node configuration is not available'* ]]" "--constraint: 5 nodes of 4 with the feature are refused at submit, as stock"

# --- reservations ----------------------------------------------------------------
scontrol create reservation ReservationName=maint StartTime=now Duration=30 Nodes='r01n[01-18]' Users=root Flags=MAINT,IGNORE_JOBS >/dev/null
sub m1 -N2 --exclusive --gres=gpu:4 --wrap 'sleep 1'
sub m2 --reservation=maint -N2 --exclusive --gres=gpu:4 --wrap 'sleep 1'
done_ok "$m1"; done_ok "$m2"
is "$(racks_of "$(job_nodelist "$m1")")" r02 "MAINT reservation on rack 1: a job outside it runs on rack 2"
is "$(racks_of "$(job_nodelist "$m2")")" r01 "MAINT reservation: a job in it runs on its rack"
ok "placed_by_m2g $m2" "MAINT reservation: the job in it placed by select/m2g"
scontrol delete ReservationName=maint
scontrol create reservation ReservationName=flex StartTime=now Duration=30 Nodes='r02n[01-04]' Users=root Flags=FLEX >/dev/null
sub f1 --reservation=flex -N6 --exclusive --gres=gpu:4 --wrap 'sleep 1'
done_ok "$f1"
fl=$(job_nodelist "$f1")
is "$(scontrol show hostnames "$fl" | grep -cE '^r02n0[1-4]$')/$(racks_of "$fl")" "4/r02" \
	"FLEX reservation of 4 nodes, 6-node job: all 4 reserved nodes and 2 more of their domain ($fl)"
wait_job_state "$f1" COMPLETED 30 || true
scontrol delete ReservationName=flex
scontrol create reservation ReservationName=cores StartTime=now Duration=30 Nodes=r02n10 CoreCnt=4 Users=root >/dev/null
sub k1 --reservation=cores -n2 --gres=gpu:1 --wrap 'sleep 1'
done_ok "$k1"
is "$(job_nodelist "$k1")" r02n10 "CoreCnt reservation: the job in it runs on the reserved node's cores"
scontrol delete ReservationName=cores

# --- --switches, --contiguous, --nodelist, --exclude -------------------------------
sub w1 --switches=1 -N4 --exclusive --gres=gpu:4 --wrap 'sleep 1'
sub ct --contiguous -N3 --exclusive --gres=gpu:4 --wrap 'sleep 1'
sub n1 -w r02n05 -N2 --exclusive --gres=gpu:4 --wrap 'sleep 1'
sub x1 -x 'r01n[01-18]' -N2 --exclusive --gres=gpu:4 --wrap 'sleep 1'
for j in "$w1" "$ct" "$n1" "$x1"; do check "job $j completes" done_ok "$j"; done
ok "one_domain $w1 && placed_by_m2g $w1" "--switches=1: placed by select/m2g in one domain (under one leaf switch)"
ctn=$(scontrol show hostnames "$(job_nodelist "$ct")" | sed 's/.*n//; s/^0//' | paste -sd' ')
read -r a b c <<<"$ctn"
ok "((b == a + 1 && c == b + 1))" "--contiguous: Slurm's contiguous nodes ($(job_nodelist "$ct"))"
ok "! placed_by_m2g $ct" "--contiguous: Slurm decides alone (no m2g placement)"
ok "scontrol show hostnames '$(job_nodelist "$n1")' | grep -qx r02n05" "--nodelist=r02n05: the job has r02n05"
is "$(racks_of "$(job_nodelist "$x1")")" r02 "--exclude rack 1: the job runs on rack 2"

# --- node weights ------------------------------------------------------------------
scontrol update NodeName='r01n[01-18]' Weight=100
sub wt1 -N2 --exclusive --gres=gpu:4 --wrap 'sleep 1'
done_ok "$wt1"
is "$(racks_of "$(job_nodelist "$wt1")")" r02 "Weight=100 on rack 1: the job goes to the lighter rack 2"
scontrol update NodeName='r01n[01-18]' Weight=1
scontrol update NodeName='r02n[01-18]' Weight=100
sub wt2 -N2 --exclusive --gres=gpu:4 --wrap 'sleep 1'
done_ok "$wt2"
is "$(racks_of "$(job_nodelist "$wt2")")" r01 "Weight=100 on rack 2: the job goes to rack 1"
scontrol update NodeName='r02n[01-18]' Weight=1

# --- overlapping partitions -----------------------------------------------------------
scontrol create PartitionName=half Nodes='r02n[01-18]' MaxTime=60 State=UP
scontrol create PartitionName=all2 Nodes=ALL MaxTime=60 State=UP
sub p1 -p half -N2 --exclusive --gres=gpu:4 --wrap 'sleep 1'
sub p2 -p half,all2 -N3 --exclusive --gres=gpu:4 --wrap 'sleep 1'
done_ok "$p1"; done_ok "$p2"
is "$(racks_of "$(job_nodelist "$p1")")" r02 "partition half (rack 2 only): the job stays in it"
ok "one_domain $p2 && placed_by_m2g $p2" "-p half,all2 (overlapping partitions): placed by select/m2g in one domain"

# --- scontrol update of a pending job's size; hold, release, requeue --------------------
sub u1 --hold -N2 --exclusive --gres=gpu:4 --wrap 'sleep 1'
scontrol update JobId="$u1" NumNodes=5-5   # min-max: 22.05 reads "5" as the minimum alone
scontrol release "$u1"
done_ok "$u1"
is "$(node_count "$u1")" 5 "scontrol update NumNodes=5 of a held job: it runs on 5 nodes"
ok "one_domain $u1 && placed_by_m2g $u1" "the resized job: placed by select/m2g in one domain"
sub q1 -N3 --exclusive --gres=gpu:4 --wrap 'sleep 30'
wait_job_state "$q1" RUNNING 30 || true
scontrol requeue "$q1"
tb_wait_for "the requeued job pends" 20 job_is "$q1" PENDING || true
scontrol update JobId="$q1" StartTime=now   # Slurm holds a requeued job back a while
check "requeued job runs again" wait_job_state "$q1" RUNNING 60
is "$(_scontrol_job_field "$q1" Restarts)" 1 "requeue: Restarts=1"
ok "one_domain $q1 && placed_by_m2g $q1" "requeue: placed again by select/m2g in one domain"
scancel "$q1"

# --- power saving: SuspendProgram/ResumeProgram, powered-down nodes -----------------------
# A "boot" here restarts the node's slurmd in a new time namespace whose
# boot time is now: slurmctld takes a node as powered up only once it
# reports a boot after the resume request (waiting_for_node_boot() in
# node_mgr.c), and every fake node shares this machine's real boot time.
# The boot it reports is up to 2 s before the moment the script reads
# /proc/uptime (whole seconds, twice): the script waits 2 s first. The
# slurmd carries the testbed's owner mark, so that m2g-testbed down stops it.
PWR=$TB_DIR/log/power.log
SBIN=$(tb_slurm_sbin)
tb_write "$TB_DIR/etc/suspend.sh" <<EOT
#!/bin/bash
echo "suspend \$1" >>$PWR
EOT
tb_write "$TB_DIR/etc/resume.sh" <<EOT
#!/bin/bash
echo "resume \$1" >>$PWR
sleep 2
for n in \$(scontrol show hostnames "\$1"); do
	pkill -f "slurmd -N \$n -f $SLURM_CONF"
	while pgrep -f "slurmd -N \$n -f $SLURM_CONF" >/dev/null; do sleep 0.1; done
	up=\$(cut -d. -f1 /proc/uptime)
	M2G_TESTBED_OWNER=$TB_DIR setsid unshare --fork --time --boottime=-\$up $SBIN/slurmd -N \$n -f $SLURM_CONF -d $SBIN/slurmstepd </dev/null >>$PWR 2>&1 &
done
wait  # until each slurmd has daemonized: slurmctld ends the program's processes when it exits
EOT
chmod +x "$TB_DIR/etc/suspend.sh" "$TB_DIR/etc/resume.sh"
tb_append "$SLURM_CONF" "SuspendProgram=$TB_DIR/etc/suspend.sh" "ResumeProgram=$TB_DIR/etc/resume.sh" \
	SuspendTime=3600 SuspendTimeout=5 ResumeTimeout=60
has_resume_program() { scontrol show config | grep '^ResumeProgram'; scontrol show config | grep -q '^ResumeProgram .*resume.sh'; }
scontrol reconfigure
tb_wait_for "slurmctld reads the power saving settings" 30 has_resume_program || true
# powered_down NODES: every one of them is powered down (idle~).
powered_down() {
	local st
	st=$(sinfo -h -N -n "$1" -o '%T' | sort | uniq -c | paste -sd' ')
	echo "$1: $st"
	[[ $(sinfo -h -N -n "$1" -o '%T' | sort -u) == 'idle~' ]]
}
scontrol update NodeName='r01n[01-18]' State=POWER_DOWN
check "rack 1 powers down (SuspendProgram, SuspendTimeout)" tb_wait_for "rack 1 powered down" 60 powered_down 'r01n[01-18]'
sub pw1 -N2 --exclusive --gres=gpu:4 --wrap 'sleep 1'
done_ok "$pw1"
is "$(racks_of "$(job_nodelist "$pw1")")" r02 "rack 1 powered down: a job goes to the powered-up rack 2 (Slurm weighs powered-down nodes last)"
sub pw2 -N18 --exclusive --gres=gpu:4 --wrap 'sleep 30'
wait_job_state "$pw2" RUNNING 30 || true
sub pw3 -N4 --exclusive --gres=gpu:4 --wrap 'sleep 1'
check "rack 2 full: a 4-node job resumes powered-down nodes and completes" wait_job_state "$pw3" COMPLETED 120
ok "grep -q '^resume r01n' '$PWR'" "ResumeProgram ran for rack 1's nodes"
ok "one_domain $pw3 && placed_by_m2g $pw3" "the job on resumed nodes: placed by select/m2g in one domain"
scancel "$pw2"

ok "tb_ctld_unbroken" "slurmctld neither crashed nor restarted"
tb_down
done_testing
