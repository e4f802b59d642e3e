#!/usr/bin/env bash
# topology/m2g loaded into a real slurmctld on the 8-rack NVL72 testbed:
# Slurm's switch records match m2g.conf, multi-node GPU jobs land on whole
# NVLink domains, reconfigure keeps the last good m2g.conf, and a broken one
# at start stops slurmctld with file:line in its log. On 25.05 and later, a
# slurmctld reads the slurm-yaml export as its topology.yaml.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

M2G=${M2G_BUILDDIR:?}/src/cli/m2g
T=$TB_TMP

# The caller's environment names another testbed's configuration, gone now
# (as after a suite's first testbed when its second lands on another base):
# the daemons must read this testbed's own (CI on cf33472 lost select-plugin.sh
# to a slurmctld that read the removed one's m2g.conf).
export SLURM_CONF=/tmp/m2g-testbed-gone/etc/slurm.conf M2G_CONF=/tmp/m2g-testbed-gone/etc/m2g.conf
tb_up --racks 8
CONF=$TB_DIR/etc/m2g.conf
ctld_env=$(tr '\0' '\n' <"/proc/$(cat "$TB_DIR/pids/slurmctld.pid")/environ" | grep -E '^(SLURM|M2G)_CONF=' | sort | tr '\n' ' ')
is "$ctld_env" "M2G_CONF=$CONF SLURM_CONF=$TB_DIR/etc/slurm.conf " \
	"slurmctld reads this testbed's slurm.conf and m2g.conf, not those the caller's environment named"
cp "$CONF" "$T/good.conf"

# sacct_nodelist JOBID NNODES: the job's NodeList once accounting has all
# NNODES of it (a job that starts and ends within a second can reach
# slurmdbd as "ended" before its start record with the full node list).
sacct_nodelist() {
	local deadline=$((SECONDS + 30)) line=""
	while ((SECONDS <= deadline)); do
		# NNodes can be right before NodeList is: count the names.
		line=$(sacct -n -X -P -j "$1" -o NodeList 2>/dev/null | head -n1)
		[[ -n $line && $(scontrol show hostnames "$line" | wc -l) == "$2" ]] && { echo "$line"; return 0; }
		sleep 0.5
	done
	diag "job $1: sacct still says '$line' after 30 s"
	echo "$line"
}

# where NODELIST: the core's description of a node list against m2g.conf.
where() { "$M2G" topology locate "$T/good.conf" "$1"; }
# squash_topology: "name level children linkspeed" per switch, from scontrol.
squash_topology() {
	scontrol show topology | sed -E 's/^SwitchName=([^ ]+) Level=([0-9]+) LinkSpeed=([0-9]+) Nodes=([^ ]+)( Switches=([^ ]+))?$/\1 \2 \4|\6 \3/' |
		awk '{ split($3, c, "|"); print $1, $2, ($2 == 0 ? c[1] : c[2]), $4 }'
}
# the same from `m2g topology export` of the testbed's m2g.conf.
squash_export() {
	"$M2G" topology export "$1" | grep -v '^#' |
		sed -E 's/^SwitchName=([^ ]+) (Nodes|Switches)=([^ ]+)( LinkSpeed=([0-9]+))?$/\1 \2 \3 \5/' |
		awk '{ print $1, ($2 == "Nodes" ? "leaf" : "up"), $3, ($4 == "" ? 0 : $4) }'
}

# --- the plugin is loaded and Slurm's switch records are m2g.conf's ---------
ok "scontrol show config | grep -Eq '^TopologyPlugin +=  *topology/m2g'" "slurmctld runs TopologyPlugin=topology/m2g"
is "$(squash_topology | awk '{ print $1, ($2 == 0 ? "leaf" : "up"), $3, $4 }')" "$(squash_export "$CONF")" \
	"scontrol show topology matches m2g.conf (names, children, link speeds)"
is "$(squash_topology | awk '{ print $1 "=" $2 }' | tr '\n' ' ')" \
	"nvl01=0 nvl02=0 nvl03=0 nvl04=0 nvl05=0 nvl06=0 nvl07=0 nvl08=0 leaf01=1 leaf02=1 spine01=2 " \
	"NVLink domains are level 0, leaves 1, the spine 2"

# --- racks partly busy; a 2-rack job lands on two whole NVLink domains ------
# Every rack under leaf01 has 10 nodes busy (32 free under leaf01, not enough
# for 36) and one node of nvl05 is busy: the job must go to leaf02 and take
# two of its whole domains, not a scatter of free nodes.
busy=()
for w in 'r01n[01-10]' 'r02n[03-12]' 'r03n[05-14]' 'r04n[09-18]' 'r05n07'; do
	n=$(scontrol show hostnames "$w" | wc -l)
	busy+=("$(sbatch --parsable -J busy -N"$n" -w "$w" --exclusive --gres=gpu:4 --wrap 'sleep 600')")
done
started=0
for j in "${busy[@]}"; do wait_job_state "$j" RUNNING 60 && started=$((started + 1)); done
is "$started" "${#busy[@]}" "background jobs hold parts of racks r01-r05 (all ${#busy[@]} run)"

big=$(sbatch --parsable -J two-racks -N36 --exclusive --gres=gpu:4 -o "$T/two-racks.out" \
	--wrap 'srun -l bash -c "echo \$SLURMD_NODENAME \$CUDA_VISIBLE_DEVICES"; sleep 20')
wait_job_state "$big" RUNNING 60
nl=$(job_nodelist "$big")
diag "36-node job $big: $nl"
is "$(where "$nl")" \
	"36 nodes in 2 NVLink domains (nvl06 18/18, nvl07 18/18, all whole) under 1 leaf switch (leaf02)" \
	"36-node job: exactly two whole NVLink domains under one leaf (scontrol)"

# With nvl06/nvl07 taken, one rack's worth goes to the one whole domain left.
one=$(sbatch --parsable -J one-rack -N18 --exclusive --gres=gpu:4 --wrap 'srun true')
wait_job_state "$one" COMPLETED 90
is "$(where "$(sacct_nodelist "$one" 18)")" \
	"18 nodes in 1 NVLink domain (nvl08 18/18, whole) under 1 leaf switch (leaf02)" \
	"18-node job: one whole NVLink domain (sacct)"

wait_job_state "$big" COMPLETED 90
is "$(where "$(sacct_nodelist "$big" 36)")" \
	"36 nodes in 2 NVLink domains (nvl06 18/18, nvl07 18/18, all whole) under 1 leaf switch (leaf02)" \
	"36-node job: sacct records the same two whole domains"
is "$(wc -l <"$T/two-racks.out"):$(awk '{print $3}' "$T/two-racks.out" | sort -u | tr '\n' ' ')" "36:0,1,2,3 " \
	"every task of the 36-node job ran and saw 4 GPUs"
scancel -n busy

# --- reconfigure ------------------------------------------------------------
# A broken m2g.conf: the previous one stays in force, the error is logged.
sed 's/^DomainName=nvl03 Nodes=r03n\[01-18\] Size=18/DomainName=nvl03 Nodes=r03n[01-18] Size=17/' \
	"$T/good.conf" | tb_write "$CONF"
before=$(scontrol show topology)
why='m2g: topology: '$CONF':6: DomainName=nvl03 has 18 nodes but Size=17; raise Size or move nodes to another domain'
rc=0
scontrol reconfigure 2>"$T/reconf.err" || rc=$?
if tb_slurm_reexecs; then
	# 23.11+: reconfigure starts a new slurmctld, which stops on the broken
	# file; Slurm tells scontrol and the running slurmctld carries on.
	ok "[[ $rc != 0 ]]" "reconfigure with a broken m2g.conf: scontrol reports it failed (status $rc: $(tr '\n' ' ' <"$T/reconf.err"))"
	# The first m2g plugin the new slurmctld starts refuses (select/m2g when
	# it is loaded, else topology/m2g when it builds the tree).
	ok "grep -qF '${why#m2g: topology: }' '$TB_DIR/log/slurmctld.log' &&
	    grep -qE 'm2g: (select|topology): .*refusing this reconfigure: the running slurmctld keeps the last good m2g.conf' '$TB_DIR/log/slurmctld.log'" \
		"reconfigure with a broken m2g.conf: file:line error logged, reconfigure refused"
	ok "grep -q 'Resuming operation, reconfigure failed' '$TB_DIR/log/slurmctld.log'" \
		"reconfigure with a broken m2g.conf: the running slurmctld resumes"
else
	is "$rc" 0 "reconfigure with a broken m2g.conf: scontrol reconfigure succeeds"
	ok "grep -qF '$why; keeping the previous m2g.conf in force' '$TB_DIR/log/slurmctld.log'" \
		"reconfigure with a broken m2g.conf: file:line error logged, previous kept"
fi
ok "scontrol ping | grep -q 'is UP'" "reconfigure with a broken m2g.conf: slurmctld stays up"
is "$(scontrol show topology)" "$before" "reconfigure with a broken m2g.conf: topology unchanged"

# A valid change takes effect: leaf02 ranks first, leaf01 gets a new speed.
sed 's/^SwitchName=spine01 Level=spine Switches=leaf\[01-02\]/SwitchName=spine01 Level=spine Switches=leaf02,leaf01/;
     s/^\(SwitchName=leaf01 .*\)LinkGbps=28800/\1LinkGbps=30000/' "$T/good.conf" | tb_write "$CONF"
scontrol reconfigure
is "$(squash_topology | grep -E '^(leaf01|spine01) ')" "leaf01 1 nvl[01-04] 30000
spine01 2 leaf[02,01] 57600" "reconfigure with a valid change: new switch records"
is "$(scontrol -o show nodes | head -1 | cut -d' ' -f1)" "NodeName=r05n01" \
	"node ranking follows the NVLink domains in fabric order (leaf02's first)"
tb_write "$CONF" <"$T/good.conf"
scontrol reconfigure
# Every slurmd reconfigures too (from 23.11 on each starts a new process);
# let them settle before one of them is tested alone.
sleep 5

# --- one slurmd and a broken, empty or half-written m2g.conf ----------------
# slurmd builds the topology at start and at every reconfigure, and goes on
# to use it whatever the build returned (26.05: _set_topo_info in
# slurmd.c). A refused file must never leave it on a topology it failed to
# build: on SIGHUP the running slurmd keeps the last good m2g.conf (26.05:
# the new process stops with the reason, the old one resumes; 22.05: in
# place), and a slurmd started on a refused file stops with the reason.
NODE=r08n16
SLOG=$TB_DIR/log/slurmd-$NODE.log
STEPD=$(tb_slurm_sbin)/slurmstepd
good_bytes=$(wc -c <"$T/good.conf")
: >"$T/empty.conf"
sed 's/^DomainName=nvl03 Nodes=r03n\[01-18\] Size=18/DomainName=nvl03 Nodes=r03n[01-18] Size=17/' \
	"$T/good.conf" >"$T/broken.conf"
# Half of the file, cut inside a line: what a reader sees while an editor
# rewrites it in place.
half=$((good_bytes / 2))
head -c "$half" "$T/good.conf" >"$T/half.conf"
# reason FILE: the file:line reason the core gives for FILE, with the path
# the daemons read it under ($CONF).
reason() {
	cp "$1" "$T/reason.conf"
	{ "$M2G" topology validate "$T/reason.conf" 2>&1 >/dev/null || true; } |
		sed -n "1{s/^m2g: //;s|$T/reason.conf|$CONF|g;p}"
}
# log_after N PATTERN: PATTERN (fixed string) in the slurmd log after its first N lines.
# grep reads all of tail's output (not -q): under pipefail, tail's SIGPIPE on a
# log larger than a pipe's buffer would fail the check when grep stops early.
log_after() { tail -n +"$(($1 + 1))" "$SLOG" | grep -F -- "$2" >/dev/null; }
# wait_log N PATTERN [TIMEOUT]
wait_log() {
	local deadline=$((SECONDS + ${3:-60} * TB_TIMEOUT_SCALE))
	while ((SECONDS <= deadline)); do log_after "$1" "$2" && return 0; sleep 0.3; done
	diag "slurmd-$NODE.log has no '$2' after line $1; its last lines:" "$(tail -n 6 "$SLOG")"
	return 1
}
if tb_slurm_reexecs; then
	KEPT='refusing this reconfigure: the running slurmd keeps the last good m2g.conf'
else
	KEPT='keeping the previous m2g.conf in force'
fi
restart_node() { "$M2G_TESTBED" start "$NODE" --dir "$TB_DIR" >/dev/null; }
for kind in broken empty half; do
	why=$(reason "$T/$kind.conf")
	check "$kind m2g.conf: the core refuses it (${why:-no reason})" test -n "$why"
	pid=$(tb_pidfile "$TB_DIR/pids/slurmd-$NODE.pid")
	mark=$(wc -l <"$SLOG")
	if [[ $kind == half ]]; then
		# The one deliberate in-place rewrite: the file is truncated and
		# half written, held open while the slurmd reads it, then finished.
		exec 7>"$CONF"
		cat "$T/half.conf" >&7
		kill -HUP "$pid"
		check "half-written m2g.conf (in place): SIGHUP'd slurmd refuses it with the reason" \
			wait_log "$mark" "$why; $KEPT"
		tail -c +"$((half + 1))" "$T/good.conf" >&7
		exec 7>&-
		check "half-written m2g.conf: the rewrite finished, the file is whole again" cmp -s "$CONF" "$T/good.conf"
	else
		tb_write "$CONF" <"$T/$kind.conf"
		kill -HUP "$pid"
		check "$kind m2g.conf: SIGHUP'd slurmd refuses it with the reason" wait_log "$mark" "$why; $KEPT"
	fi
	if tb_slurm_reexecs; then
		check "$kind m2g.conf: the running slurmd resumes (reconfigure failed)" \
			wait_log "$mark" "Resuming operation, reconfigure failed" 30
	fi
	tb_write "$CONF" <"$T/good.conf"
	check "$kind m2g.conf: the slurmd that was running still runs (pid $pid)" kill -0 "$pid"
	check "$kind m2g.conf: a job step runs on $NODE afterwards" timeout 60 srun -N1 -w "$NODE" true

	# Started on the refused file: slurmd stops at start with the reason.
	"$M2G_TESTBED" stop "$NODE" --dir "$TB_DIR" >/dev/null
	if [[ $kind == half ]]; then cat "$T/half.conf" >"$CONF"; else tb_write "$CONF" <"$T/$kind.conf"; fi
	mark=$(wc -l <"$SLOG")
	rc=0
	env SLURM_CONF="$SLURM_CONF" timeout 60 "$(tb_slurm_sbin)/slurmd" -D -N "$NODE" -f "$SLURM_CONF" -d "$STEPD" \
		</dev/null >"$T/slurmd-$kind.out" 2>&1 || rc=$?
	ok "[[ $rc != 0 && $rc != 124 ]]" "$kind m2g.conf: slurmd started on it exits (status $rc)"
	check "$kind m2g.conf: its log has the fatal reason" \
		log_after "$mark" "fatal: m2g: topology: $why; slurmd does not start without the topology"
	tb_write "$CONF" <"$T/good.conf"
	check "$kind m2g.conf: fixed, the slurmd starts again" restart_node
done

# --- a broken m2g.conf at start stops slurmctld with file:line --------------
# A second slurmctld on its own port and state directory, sharing only the
# testbed's munge, with no accounting; its m2g.conf is broken.
mkdir -p "$T/ctld/state"
grep -vE '^(SlurmctldPort|StateSaveLocation|SlurmctldPidFile|SlurmctldLogFile|AccountingStorage|JobComp)' \
	"$TB_DIR/etc/slurm.conf" >"$T/ctld/slurm.conf"
cat >>"$T/ctld/slurm.conf" <<EOT
SlurmctldPort=$((TB_BASE + 99))
StateSaveLocation=$T/ctld/state
SlurmctldPidFile=$T/ctld/slurmctld.pid
SlurmctldLogFile=$T/ctld/slurmctld.log
EOT
cp "$TB_DIR/etc/gres.conf" "$T/ctld/"
sed 's/^DomainName=nvl02 Nodes=r02n\[01-18\]/DomainName=nvl02 Nodes=r02n[01-18],r01n01/' "$T/good.conf" >"$T/ctld/m2g.conf"
rc=0
env -u M2G_CONF timeout 60 "$(tb_slurm_sbin)/slurmctld" -D -i -f "$T/ctld/slurm.conf" >"$T/ctld/stderr" 2>&1 || rc=$?
ok "[[ $rc != 0 && $rc != 124 ]]" "slurmctld with a broken m2g.conf exits at start (status $rc)"
ok "grep -q 'fatal: m2g: topology: $T/ctld/m2g.conf:5: node r01n01 is in DomainName=nvl02 and already in DomainName=nvl01 ($T/ctld/m2g.conf:4); a node belongs to one NVLink domain' '$T/ctld/slurmctld.log'" \
	"its log has the file:line reason"

# --- Slurm's own parser reads `m2g topology export --format=slurm-yaml` -----
# (topology.yaml: Slurm 25.05 and later.) A third slurmctld, as above, whose
# directory holds the exported topology.yaml and a partition that picks the
# block topology; Slurm reads topology.yaml instead of TopologyPlugin=.
if [[ $(tb_slurm_release) == 22.05 ]]; then
	skip "slurmctld loads the slurm-yaml export" "topology.yaml needs Slurm 25.05 or later"
	skip "scontrol show topoconf lists both topologies" "Slurm 22.05"
	skip "the tree topology's switches are m2g.conf's" "Slurm 22.05"
	skip "the block topology has the eight NVLink domains" "Slurm 22.05"
	skip "a partition with Topology=<name>-block" "Slurm 22.05"
else
	Y=$T/yaml
	mkdir -p "$Y/state"
	grep -vE '^(SlurmctldPort|StateSaveLocation|SlurmctldPidFile|SlurmctldLogFile|AccountingStorage|JobComp|TopologyPlugin)' \
		"$TB_DIR/etc/slurm.conf" >"$Y/slurm.conf"
	cat >>"$Y/slurm.conf" <<EOT
SlurmctldPort=$((TB_BASE + 98))
StateSaveLocation=$Y/state
SlurmctldPidFile=$Y/slurmctld.pid
SlurmctldLogFile=$Y/slurmctld.log
PartitionName=blocks Nodes=ALL Topology=nvl72x8-block
EOT
	cp "$TB_DIR/etc/gres.conf" "$T/good.conf" "$Y/"
	mv "$Y/good.conf" "$Y/m2g.conf"
	"$M2G" topology export --format=slurm-yaml --name nvl72x8 -o "$Y/topology.yaml" "$Y/m2g.conf"
	env -u M2G_CONF SLURM_CONF="$Y/slurm.conf" setsid "$(tb_slurm_sbin)/slurmctld" -i -f "$Y/slurm.conf" \
		</dev/null >"$Y/stderr" 2>&1
	up=1
	for _ in $(seq 1 60); do
		SLURM_CONF=$Y/slurm.conf scontrol ping 2>/dev/null | grep -q 'is UP' && { up=0; break; }
		sleep 0.5
	done
	[[ -s $Y/slurmctld.pid ]] && TB_CLEANUP_PIDS+=("$(tb_pidfile "$Y/slurmctld.pid")")
	ok "$up" "slurmctld starts with the slurm-yaml export as its topology.yaml"
	((up == 0)) || diag "slurmctld.log: $(tail -5 "$Y/slurmctld.log" 2>/dev/null | tr "\n" "|")"
	SLURM_CONF=$Y/slurm.conf scontrol show topoconf >"$Y/topoconf" 2>&1 || true
	SLURM_CONF=$Y/slurm.conf scontrol show topology nvl72x8-tree >"$Y/topo" 2>&1 || true
	SLURM_CONF=$Y/slurm.conf scontrol show topology nvl72x8-block >"$Y/blocks" 2>&1 || true
	diag "scontrol show topology nvl72x8-block (first lines): $(head -2 "$Y/blocks" | tr '\n' '|')"
	ok "grep -q '^- topology: nvl72x8-tree' '$Y/topoconf' && grep -q '^- topology: nvl72x8-block' '$Y/topoconf'" \
		"scontrol show topoconf lists both exported topologies"
	ok "grep -E 'SwitchName=spine01 .*Switches=leaf\[01-02\]' '$Y/topo' && grep -Eq 'SwitchName=nvl03 .*Nodes=r03n\[01-18\]' '$Y/topo'" \
		"the tree topology's switches are m2g.conf's (spine01 over leaf01-02, nvl03 holds r03n01-18)"
	ok "[[ \$(grep -c '^BlockName=nvl0[1-8] .*BlockSize=18' '$Y/blocks') == 8 ]]" \
		"the block topology has the eight NVLink domains as blocks of 18"
	ok "SLURM_CONF=$Y/slurm.conf scontrol show partition blocks | grep -q 'Topology=nvl72x8-block'" \
		"a partition with Topology=nvl72x8-block is accepted"
	if [[ -s $Y/slurmctld.pid ]]; then
		kill "$(tb_pidfile "$Y/slurmctld.pid")" 2>/dev/null || true
	fi
fi

# --- a slurmd with topology/m2g stops cleanly ---------------------------------
# slurmd frees the topology's config on the way out (_slurmd_fini); a bad
# free there aborted every slurmd on 26.05 before it logged its last line.
pid=$(tb_pidfile "$TB_DIR/pids/slurmd-r08n18.pid")
kill -TERM "$pid"
for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
ok "! kill -0 $pid 2>/dev/null && grep -q 'Slurmd shutdown completing' '$TB_DIR/log/slurmd-r08n18.log'" \
	"a slurmd stopped with SIGTERM finishes its shutdown (topology/m2g's config freed cleanly)"

done_testing
