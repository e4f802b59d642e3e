#!/usr/bin/env bash
# Fault injection on the real testbed (2 NVL72 racks, every m2g plugin,
# slurmdbd): whatever breaks, slurmctld must not crash and no job may be
# lost. Each scenario checks that slurmctld still answers `scontrol ping`
# with the same PID (unless the test restarted it), that every job submitted
# so far is still known to squeue/sacct and not lost: waiting, running,
# requeued, COMPLETED, or CANCELLED by this script (FAILED, NODE_FAIL,
# TIMEOUT, OUT_OF_MEMORY, BOOT_FAIL, PREEMPTED, DEADLINE are reported by job
# id), and m2g's log lines.
#
#  1. the signals feed: corrupt in ways admission.sh does not try (empty, a
#     directory, binary, a name m2g.conf lacks), gone at run time under
#     SignalsFailSafe=last, going stale while nobody touches it, and
#     rewritten in place by a writer racing the poll (truncating, and
#     overwriting without truncation) while jobs are submitted: m2g never
#     acts on a half-written document;
#  2. m2g.conf broken at `scontrol reconfigure`: the previous config stays in
#     force in all three plugins, the error says file:line; fixed, it applies;
#  3. slurmctld SIGKILLed with jobs running, pending and deferred, restarted:
#     every job and its AdminComment survives, deferred jobs stay deferred;
#  4. a slurmd SIGKILLed under a running job: the node goes down, the job is
#     requeued, not lost; new work avoids the node; the slurmd comes back;
#  5. slurmdbd down while jobs run and end: their AdminComment reaches sacct
#     once it is back (slurmctld queues what it could not send);
#  6. a demand-response event ends early (its end moved to now): the jobs it
#     deferred, including those deferred before the slurmctld restart, are
#     released within ReleaseCheckSec + SignalsPollSec, saying why.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

T=$TB_TMP
TTL=20 POLL=1 RELEASE=2

cat >"$T/faults.conf" <<EOF
SignalsFile=@DIR@/run/signals.json
SignalsStatusFile=@DIR@/run/signals-status.json
SignalsPollSec=$POLL
SignalsTTLSec=$TTL
SignalsFailSafe=last
ReleaseCheckSec=$RELEASE
EOF
t_start=$SECONDS
# SlurmdTimeout=10: a dead slurmd makes its node DOWN in ~10 s, not 60.
tb_up --racks 2 --slurmd-timeout 10 --conf-extra "$T/faults.conf"
FEED=$TB_DIR/run/signals.json
STATUS=$TB_DIR/run/signals-status.json
LOG=$TB_DIR/log/slurmctld.log
CONF=$TB_DIR/etc/m2g.conf
CTLD_PID=$(tb_ctld_pid)
JOBS=()

# ---------------------------------------------------------------- helpers --

# feed_json: a feed from $EVENTS (JSON array) and $GEN (epoch, default now).
feed_json() {
	printf '{"schema": "m2g.signals/v1", "generated_at": %s, "source": "faults.sh",\n' "${GEN:-$(date +%s)}"
	printf ' "power": {"site": {"budget_kw": 2000, "draw_kw": 100}}, "events": %s}\n' "${EVENTS:-[]}"
}
# write_feed: replace the feed atomically, as an agent should.
write_feed() { feed_json >"$FEED.tmp" && mv -f "$FEED.tmp" "$FEED"; }
# dr_event ID END: a site-wide 50 % event that started a minute ago.
dr_event() { printf '[{"id": "%s", "start": %d, "end": %d, "curtail_pct": 50, "scope": "site"}]' "$1" $(($(date +%s) - 60)) "$2"; }
utc() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }

log_count() { grep -Ec -- "$1" "$LOG" || true; }
status_state() { sed -n 's/^ *"state": *"\([a-z_]*\)".*/\1/p' "$STATUS" 2>/dev/null; }
# wait_until SECONDS CMD...: poll CMD every 0.25 s (SECONDS times
# TB_TIMEOUT_SCALE, as lib.sh's waits).
wait_until() {
	local deadline=$((SECONDS + $1 * TB_TIMEOUT_SCALE)); shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || return 1
		sleep 0.25
	done
}
status_is() { [[ $(status_state) == "$1" ]]; }
# warned_since WHAT A0 S0: both plugins logged "signals feed WHAT" since the
# counts A0 (job_submit/m2g) and S0 (select/m2g); prints the counts.
warned_since() {
	local a s
	a=$(( $(log_count "m2g: admission: signals feed $1") - $2 )) s=$(( $(log_count "m2g: select: signals feed $1") - $3 ))
	echo "'signals feed $1' warnings since: job_submit/m2g $a, select/m2g $s"
	((a >= 1 && s >= 1))
}
# job_state_saved_after T: slurmctld's job state file was written after T.
job_state_saved_after() { (( $(stat -c %Y "$TB_DIR/state/job_state" 2>/dev/null || echo 0) > $1 )); }

# sub VAR SBATCH-ARGS...: submit, remember the job for the "no job lost"
# checks, set VAR to its id.
sub() {
	local _sub_var=$1 _sub_id; shift
	_sub_id=$(sbatch --parsable -o /dev/null "$@") || return 1
	_sub_id=${_sub_id%%;*}
	JOBS+=("$_sub_id")
	printf -v "$_sub_var" %s "$_sub_id"
}
admin_comment() { squeue -h -t all -j "$1" -O admin_comment:800 2>/dev/null | sed 's/ *$//'; }
reason() { squeue -h -j "$1" -o %r 2>/dev/null; }

# ctld_same: slurmctld answers and neither crashed nor was restarted since
# the last mark (tb_up, or the deliberate restart below); reconfigures
# aside, which replace the process from Slurm 23.11 on.
ctld_same() {
	scontrol ping 2>/dev/null | grep -q 'is UP' && tb_ctld_unbroken
}
# States of a job that is not lost: still there (waiting, running,
# requeued) or ended as asked (COMPLETED). CANCELLED counts only for a job
# this script cancelled (cancel below). A job that ended FAILED, NODE_FAIL,
# TIMEOUT, OUT_OF_MEMORY, BOOT_FAIL, PREEMPTED or DEADLINE did not survive
# the fault: none of these jobs is meant to.
readonly KEPT='PENDING|RUNNING|SUSPENDED|COMPLETING|COMPLETED|REQUEUED|REQUEUE_HOLD|REQUEUE_FED|CONFIGURING|RESIZING'
declare -A CANCELLED=()
# cancel JOBID...: scancel, remembering that CANCELLED is this script's doing.
cancel() {
	local id
	for id; do CANCELLED[$id]=1; done
	scancel "$@"
}
# no_job_lost: every job submitted so far is known to slurmctld or slurmdbd
# in a state above; the others are listed as JobId:state.
no_job_lost() {
	local id st bad=""
	for id in "${JOBS[@]}"; do
		st=$(job_state "$id")
		[[ $st =~ ^($KEPT)$ ]] && continue
		[[ $st == CANCELLED && -n ${CANCELLED[$id]:-} ]] && continue
		bad+=" $id:${st:-unknown}"
	done
	[[ -z $bad ]] && return 0
	diag "jobs lost, failed or cancelled by someone else (JobId:state):$bad"
	return 1
}
# survived WHAT: the two invariants every scenario ends with.
survived() {
	ok ctld_same "$1: slurmctld answers scontrol ping and neither crashed nor restarted"
	check "$1: none of the ${#JOBS[@]} jobs submitted so far is lost or failed" no_job_lost
}
# lap: how long the previous part took (diagnostics only).
t_lap=$SECONDS
lap() { diag "(took $((SECONDS - t_lap)) s)"; t_lap=$SECONDS; }
gpu_job() { sub "$1" -N1 --gres=gpu:4 "${@:2}"; }

write_feed
ok "wait_until 10 status_is fresh" "setup: the feed is fresh"

lap
# ================================================ 1. the signals feed ====
# --- 1a. corrupt in several ways; the last good snapshot stays ------------
now=$(date +%s)
EVENTS=$(dr_event dr-keep $((now + 3600))) write_feed
wait_until 10 grep -q '"dr-keep"' "$STATUS"
e0=$(log_count 'm2g: admission: signals feed corrupt')
s0=$(log_count 'm2g: select: signals feed corrupt')
# logged_corrupt N: both plugins have logged N corrupt versions since e0/s0.
# Each plugin polls the feed on its own thread and only job_submit/m2g
# writes the status file, so the test waits for both log lines before it
# writes the next version (a loaded 2-core machine can delay a poll by
# seconds; a version replaced before a plugin looked is never read).
logged_corrupt() {
	(( $(log_count 'm2g: admission: signals feed corrupt') - e0 >= $1 &&
	   $(log_count 'm2g: select: signals feed corrupt') - s0 >= $1 ))
}
: >"$FEED.tmp"; mv -f "$FEED.tmp" "$FEED"                                  # empty
wait_until 20 logged_corrupt 1
ok "grep -q 'not valid JSON: the file is empty' '$STATUS'" "1a: an empty feed is corrupt, and the status says why"
head -c 3000 /dev/urandom >"$FEED.tmp"; mv -f "$FEED.tmp" "$FEED"        # binary garbage
wait_until 20 logged_corrupt 2
sed 's/"budget_kw": 2000/"budget_kw": 2000}, "racks": {"nvl77": {"draw_kw": 1}/' <(feed_json) >"$FEED.tmp"
mv -f "$FEED.tmp" "$FEED"                                                  # a rack m2g.conf lacks
wait_until 20 logged_corrupt 3
wait_until 5 grep -q 'nvl77' "$STATUS"
ok "grep -q 'no NVLink domain nvl77 in m2g.conf' '$STATUS'" "1a: a feed naming a rack m2g.conf lacks is refused with the name"
sleep 3   # time passing: several more polls of the unchanged corrupt file, none of which may log again
is "$(($(log_count 'm2g: admission: signals feed corrupt') - e0))/$(($(log_count 'm2g: select: signals feed corrupt') - s0))" \
	"3/3" "1a: each corrupt version is logged once by job_submit/m2g and once by select/m2g"
gpu_job c1 --hold --m2g-class=training --wrap true
ok "[[ '$(admin_comment "$c1")' == *cause=dr-keep* ]]" "1a: while corrupt, the last good snapshot's event still defers deferrable work"
rm -f "$FEED"; mkdir "$FEED"                                               # a directory
# A poll between rm and mkdir sees no file first: the status then follows
# the new cause at the next poll (the state stays missing).
wait_until 10 grep -q 'not a regular file' "$STATUS"
ok "status_is missing && grep -q 'not a regular file' '$STATUS'" "1a: a directory where the feed should be counts as missing"
rmdir "$FEED"
survived "1a corrupt feeds"

# --- 1b. the feed disappears at run time, SignalsFailSafe=last -------------
write_feed_keep() { EVENTS=$(dr_event dr-keep $((now + 3600))) write_feed; }
write_feed_keep
wait_until 10 status_is fresh
m0=$(log_count 'm2g: admission: signals feed missing')
ms0=$(log_count 'm2g: select: signals feed missing')
rm -f "$FEED"
ok "wait_until 5 status_is missing" "1b: removing the feed is noticed within the poll period"
tb_wait_for "both plugins warn of the missing feed" 10 warned_since missing "$m0" "$ms0" || true
sleep "$POLL"  # time passing: a poll more each, which must not warn again
is "$(($(log_count 'm2g: admission: signals feed missing') - m0))/$(($(log_count 'm2g: select: signals feed missing') - ms0))" \
	"1/1" "1b: one 'signals feed missing' warning per plugin"
gpu_job b1 --m2g-class=training --wrap true
gpu_job b2 --m2g-class=inference --wrap true
tb_wait_for "job $b1 deferred" 10 job_is "$b1" PENDING/BeginTime || true
ok "[[ '$(admin_comment "$b1")' == *cause=dr-keep* && '$(reason "$b1")' == BeginTime ]]" \
	"1b: fail-safe last: the last snapshot's event still defers deferrable work"
check "1b: non-deferrable work still runs" wait_job_state "$b2" "RUNNING|COMPLETED" 30
cancel "$b1" "$c1"
survived "1b missing feed"

# --- 1c. the agent dies: the feed goes stale with nobody touching it ----------
st0=$(log_count 'm2g: admission: signals feed stale')
sst0=$(log_count 'm2g: select: signals feed stale')
GEN=$(($(date +%s) - TTL + 4)) EVENTS=$(dr_event dr-old $((now + 3600))) write_feed
ok "wait_until 3 status_is fresh" "1c: a feed ${TTL}-4 s old is still fresh"
ok "wait_until 10 status_is stale" "1c: it turns stale by time alone (SignalsTTLSec=$TTL)"
tb_wait_for "both plugins warn of the stale feed" 10 warned_since stale "$st0" "$sst0" || true
sleep "$POLL"  # time passing: a poll more each, which must not warn again
is "$(($(log_count 'm2g: admission: signals feed stale') - st0))/$(($(log_count 'm2g: select: signals feed stale') - sst0))" \
	"1/1" "1c: one 'signals feed stale' warning per plugin"
gpu_job o1 --hold --m2g-class=training --wrap true
ok "[[ '$(admin_comment "$o1")' == *cause=dr-old* ]]" "1c: fail-safe last: the stale snapshot's event still applies"
cancel "$o1"
survived "1c stale feed"

# --- 1d. a writer racing the poll: never act on a half-written document --------
# Two documents of the same length whose event id (near the start) and end
# (near the end) differ: a mix of the two parses, and would show up as
# dr-mid-b with A's end or dr-mid-a with B's.
now=$(date +%s)
END_A=$((now + 3000)) END_B=$((now + 5000))
mid_doc() {  # ID END
	printf '{"schema": "m2g.signals/v1", "generated_at": %d, "events": [{"id": "%s", "start": %d,\n' "$now" "$1" $((now - 60))
	printf ' "curtail_pct": 50, "x-pad": "%s",\n "end": %d}]}\n' "$(printf '%*s' 3000 '' | tr ' ' p)" "$2"
}
mid_doc dr-mid-a "$END_A" >"$T/doc-a"
mid_doc dr-mid-b "$END_B" >"$T/doc-b"
cp "$T/doc-a" "$FEED.tmp"; mv -f "$FEED.tmp" "$FEED"
wait_until 10 status_is fresh
cat >"$T/racer.py" <<'EOF'
# racer.py FEED DOC_A DOC_B MODE SECONDS: rewrite FEED in place, alternating
# the two documents, each in two writes 2 ms apart. MODE trunc: O_TRUNC
# first (a reader sees a prefix); inplace: overwrite without truncating (a
# reader sees the new first half and the old second half).
import os, sys, time
feed, a, b, mode, secs = sys.argv[1], open(sys.argv[2], 'rb').read(), open(sys.argv[3], 'rb').read(), sys.argv[4], float(sys.argv[5])
end, n, docs = time.monotonic() + secs, 0, (b, a)
while time.monotonic() < end:
    d = docs[n % 2]; n += 1; h = len(d) // 2
    fd = os.open(feed, os.O_WRONLY | (os.O_TRUNC if mode == 'trunc' else 0))
    os.pwrite(fd, d[:h], 0); time.sleep(0.002); os.pwrite(fd, d[h:], h); os.close(fd)
    time.sleep(0.0002)
print(n)
EOF
held_mid=()
race() {  # MODE SECONDS: run the racer while submitting a deferrable job every 0.5 s
	/usr/bin/python3 "$T/racer.py" "$FEED" "$T/doc-a" "$T/doc-b" "$1" "$2" >"$T/racer-$1.out" &
	local racer=$! id
	TB_CLEANUP_PIDS+=("$racer")
	while kill -0 "$racer" 2>/dev/null; do
		gpu_job id --hold --m2g-class=training --wrap true
		held_mid+=("$id")
		sleep 0.5
	done
	wait "$racer"
}
# Two deferred jobs the release thread re-decides at every pass as the end flips.
gpu_job r1 --m2g-class=training --wrap true
gpu_job r2 --m2g-class=training --wrap true
mc0=$(log_count 'signals feed corrupt')
race trunc 4
race inplace 4
diag "racer versions written: trunc $(cat "$T/racer-trunc.out"), in place $(cat "$T/racer-inplace.out"); ${#held_mid[@]} jobs submitted meanwhile"
diag "corrupt reads logged meanwhile: $(($(log_count 'signals feed corrupt') - mc0))"
final_at=$(date +%s)
now=$final_at mid_doc dr-mid-a "$END_A" >"$FEED.tmp"; mv -f "$FEED.tmp" "$FEED"   # the agent's final word, fresh
mixed_re="dr-mid-b[^;]*until $(utc "$END_A")|dr-mid-a[^;]*until $(utc "$END_B")"
whole_a="until=$(utc "$END_A") cause=dr-mid-a" whole_b="until=$(utc "$END_B") cause=dr-mid-b"
bad=""
for id in "${held_mid[@]}" "$r1" "$r2"; do
	ac=$(admin_comment "$id")
	if [[ $ac =~ $mixed_re ]] || [[ $ac != *"$whole_a"* && $ac != *"$whole_b"* ]]; then bad+=" $id=[$ac]"; fi
done
is "${bad:-none}" none "1d: every job submitted during the race was decided on a whole document (dr-mid-a/END_A or dr-mid-b/END_B)"
is "$(grep -Ec -- "$mixed_re" "$LOG")" 0 "1d: no log line shows a decision on a mix of the two documents"
# Wait for the final document itself (its generated_at), not any status
# naming dr-mid-a: the status before the race names it too, and under load
# the race outlives the TTL, so that older status may read stale.
on_final_a() { grep -q '"generated_at": '"$final_at"',' "$STATUS" && grep -q 'dr-mid-a' "$STATUS" && status_is fresh; }
ok "wait_until 10 on_final_a" "1d: once the writer stops, the feed is fresh again on document A"
ok "! grep -q 'refresh failed' '$LOG'" "1d: no refresh failure logged"
cancel "${held_mid[@]}" "$r1" "$r2"
survived "1d racing writer"

lap
# ======================================= 2. m2g.conf broken at reconfigure ====
cp "$CONF" "$T/m2g.conf.good"
{
	sed 's/spine01/spine99/g' "$T/m2g.conf.good"
	echo "Admission=monitor"
	echo "DomainName=nvl09 Nodes=r09n[01-18] Size=18"
} >"$T/m2g.conf.bad"
bad_line=$(wc -l <"$T/m2g.conf.bad")
ec_t=$(log_count "m2g: topology: .*m2g.conf:$bad_line: .*keeping the previous m2g.conf in force")
ec_s=$(log_count "m2g: select: .*m2g.conf:$bad_line: .*keeping the previous m2g.conf in force")
ec_a=$(log_count "m2g: admission: .*m2g.conf:$bad_line: .*keeping the previous m2g.conf in force")
ec_r=$(log_count "m2g: select: refusing this reconfigure")
tb_write "$CONF" <"$T/m2g.conf.bad"
rc=0
scontrol reconfigure 2>/dev/null || rc=$?
# broken_logged: every plugin that reads m2g.conf has logged the broken line
# (job_submit/m2g's release thread re-reads it within ReleaseCheckSec).
broken_logged() {
	local a t s r
	a=$(($(log_count "m2g: admission: .*m2g.conf:$bad_line: .*keeping the previous m2g.conf in force") - ec_a))
	t=$(($(log_count "m2g: topology: .*m2g.conf:$bad_line: .*keeping the previous m2g.conf in force") - ec_t))
	s=$(($(log_count "m2g: select: .*m2g.conf:$bad_line: ") - ec_s))
	r=$(($(log_count "m2g: select: refusing this reconfigure") - ec_r))
	echo "m2g.conf:$bad_line errors logged since: admission $a, topology $t, select $s, select refusals $r"
	((a >= 1 && s >= 1)) || return 1
	if tb_slurm_reexecs; then ((r >= 1)); else ((t >= 1)); fi
}
tb_wait_for "the plugins log the broken m2g.conf" 30 broken_logged || true
n_a=$(($(log_count "m2g: admission: .*m2g.conf:$bad_line: .*keeping the previous m2g.conf in force") - ec_a))
if tb_slurm_reexecs; then
	# 23.11+: reconfigure starts a new slurmctld. select/m2g (loaded first)
	# finds the file broken and fails its start, so Slurm abandons the
	# reconfigure and the running slurmctld keeps the last good m2g.conf.
	n_s=$(($(log_count "m2g: select: .*m2g.conf:$bad_line: ") - ec_s))
	n_r=$(($(log_count "m2g: select: refusing this reconfigure: the running slurmctld keeps the last good m2g.conf") - ec_r))
	ok "[[ $rc != 0 ]]" "2: scontrol reconfigure reports the reconfigure failed (status $rc)"
	ok "(( n_s >= 1 && n_r == 1 ))" "2: select/m2g logs the error with file:line ($bad_line) and refuses the reconfigure"
	ok "[[ \$(log_count 'Resuming operation, reconfigure failed') -ge 1 ]]" "2: the running slurmctld resumes with its configuration"
	diag "$(grep -m1 "m2g: select: .*m2g.conf:$bad_line" "$LOG" | sed 's/^\[[^]]*\] //')"
else
	n_t=$(($(log_count "m2g: topology: .*m2g.conf:$bad_line: .*keeping the previous m2g.conf in force") - ec_t))
	n_s=$(($(log_count "m2g: select: .*m2g.conf:$bad_line: .*keeping the previous m2g.conf in force") - ec_s))
	is "$rc" 0 "2: scontrol reconfigure succeeds (22.05 reconfigures in place)"
	ok "(( n_t >= 1 ))" "2: topology/m2g logs the error with file:line ($bad_line) and keeps the previous m2g.conf ($n_t lines)"
	ok "(( n_s >= 1 ))" "2: select/m2g logs it with file:line and keeps the previous m2g.conf ($n_s lines)"
	diag "$(grep -m1 "m2g: topology: .*m2g.conf:$bad_line" "$LOG" | sed 's/^\[[^]]*\] //')"
fi
# job_submit/m2g's release thread re-reads the file when it changes.
is "$n_a" 1 "2: job_submit/m2g logs it with file:line once and keeps the previous m2g.conf"
ok "scontrol show topology | grep -q spine01 && ! scontrol show topology | grep -q spine99" \
	"2: the switch tree of the previous m2g.conf is still in force"
sub s1 -N4 --exclusive --gres=gpu:4 --m2g-topology=strict:nvlink --m2g-class=inference --wrap 'sleep 30'
wait_job_state "$s1" RUNNING 30
ok "[[ \$(job_nodes $s1 | cut -c1-3 | sort -u | wc -l) == 1 ]]" "2: a strict:nvlink job still lands in one NVLink domain ($(job_nodelist "$s1"))"
gpu_job a1 --hold --m2g-class=inference --wrap true
ac=$(admin_comment "$a1")
ok "[[ '$ac' == *admission=* && '$ac' != *'monitor would'* ]]" "2: admission still enforces (the broken file's Admission=monitor is not applied)"
survived "2 broken m2g.conf"
# Fixed: the good file plus the two valid changes.
# loaded_since MODE A0: job_submit/m2g logged a load of m2g.conf with
# admission MODE since the count A0, and the switch tree shows spine01 or
# spine99 as that file has.
loaded_since() {
	local a want=$3
	a=$(($(log_count "m2g: admission: m2g.conf (re)?loaded: admission $1") - $2))
	echo "job_submit/m2g loads with admission $1 since: $a; scontrol show topology has $want: $(scontrol show topology 2>/dev/null | grep -c "$want")"
	((a >= 1)) && scontrol show topology 2>/dev/null | grep -q "$want"
}
l0=$(log_count 'm2g: admission: m2g.conf (re)?loaded: admission monitor')
head -n $((bad_line - 1)) "$T/m2g.conf.bad" | tb_write "$CONF"
scontrol reconfigure
tb_wait_for "the fixed m2g.conf in force" 30 loaded_since monitor "$l0" spine99 || true
ok "scontrol show topology | grep -q spine99" "2: fixed and reconfigured: the new switch tree is in force"
# (Re-read in place by the release thread, or loaded by the new slurmctld of
# a 23.11+ reconfigure.)
ok "[[ \$(log_count 'm2g: admission: m2g.conf (re)?loaded: admission monitor') -ge 1 ]]" "2: job_submit/m2g logs the reload"
gpu_job a2 --hold --m2g-class=inference --wrap true
ok "[[ '$(admin_comment "$a2")' == *'monitor would'* ]]" "2: the new Admission=monitor applies to new jobs"
l0=$(log_count 'm2g: admission: m2g.conf (re)?loaded: admission enforce')
tb_write "$CONF" <"$T/m2g.conf.good"
scontrol reconfigure
tb_wait_for "the good m2g.conf back in force" 30 loaded_since enforce "$l0" spine01 || true
cancel "$s1" "$a1" "$a2"
survived "2 fixed m2g.conf"

lap
# ============================================ 3. slurmctld SIGKILL ====
now=$(date +%s)
END_DR=$((now + 3600))
EVENTS=$(dr_event dr-crash "$END_DR") write_feed
# The new event must be what job_submit/m2g holds before the jobs come (the
# status is already "fresh" from the previous feed).
wait_until 10 grep -q '"dr-crash"' "$STATUS"
sub run1 -N2 --exclusive --gres=gpu:4 --m2g-class=inference --wrap 'sleep 600'
sub run2 -N1 --gres=gpu:4 --m2g-class=inference --m2g-topology=prefer --wrap 'sleep 600'
sub pend1 -N36 --exclusive --gres=gpu:4 --m2g-class=inference --wrap true
gpu_job def1 --m2g-class=training --wrap 'sleep 2'
gpu_job def2 --m2g-class=batch --m2g-defer=ok --wrap 'sleep 2'
wait_job_state "$run1" RUNNING 30
wait_job_state "$run2" RUNNING 30
# The pending jobs as the test below expects them: deferred on their begin
# time, and the 36-node job tried by the scheduler (its reason set).
tried() { local r; r=$(reason "$1"); echo "job $1: $(job_state "$1")/$r"; [[ -n $r && $r != None ]]; }
for id in "$def1" "$def2"; do tb_wait_for "job $id deferred" 10 job_is "$id" PENDING/BeginTime || true; done
tb_wait_for "the scheduler tries job $pend1" 30 tried "$pend1" || true
crash_jobs=("$run1" "$run2" "$pend1" "$def1" "$def2")
# id, state, and AdminComment: all of it for running jobs, m2g's admission
# part for pending ones (select/m2g's placement part of a pending job says
# what it waits for, which may change).
snapshot_jobs() {
	local id st ac
	for id in "${crash_jobs[@]}"; do
		st=$(job_state "$id") ac=$(admin_comment "$id")
		[[ $st == RUNNING ]] || ac="admission=${ac#*admission=}"
		printf '%s %s %s\n' "$id" "$st" "$ac"
	done
}
snapshot_jobs >"$T/before"
# Starts of job_submit/m2g so far (a 23.11+ reconfigure starts a new slurmctld too).
active_before=$(log_count 'm2g: admission: job_submit/m2g active')
is "$(awk '{print $2}' "$T/before" | tr '\n' ' ')/$(reason "$def1")/$(reason "$def2")" \
	"RUNNING RUNNING PENDING PENDING PENDING /BeginTime/BeginTime" \
	"3: before the crash: 2 running, 1 pending (36 nodes), 2 deferred by m2g"
ok "grep -q 'admission=defer.*cause=dr-crash' <(grep '^$def1 ' '$T/before')" "3: the deferred job's AdminComment names the event"
# Slurm saves job state in the background, a while after a change: jobs not
# saved yet when slurmctld is killed are lost, as Slurm intends (seen under
# load: the five newest were). Make a change now and wait for the save that
# follows it, so every job is on disk before the kill.
mark=$(date +%s)
sleep 1  # time passing: the save must have a later mtime (whole seconds) than the mark
scontrol update jobid="$run1" comment=m2g-crash-test
ok "wait_until 90 job_state_saved_after $mark" "3: slurmctld saved its job state after the last submission"
"$M2G_TESTBED" stop slurmctld --signal KILL --dir "$TB_DIR" >/dev/null
ok "! scontrol ping 2>/dev/null | grep -q 'is UP'" "3: slurmctld is down after SIGKILL"
ok "pgrep -f 'slurmstepd: \\[$run1\\.batch\\]' >/dev/null" "3: the running job's step keeps running without slurmctld"
CTLD_PID=$("$M2G_TESTBED" start slurmctld --dir "$TB_DIR")
tb_ctld_mark
diag "slurmctld restarted as PID $CTLD_PID"
# It answers ping once it listens; job queries may take longer on a loaded
# machine (seen at load 19 on 2 cores).
ok "wait_until 60 squeue -h -j '$run1'" "3: the restarted slurmctld answers job queries"
# The jobs as they were (running ones confirmed by their nodes' slurmd).
as_before() { snapshot_jobs >"$T/after"; diff "$T/before" "$T/after"; }
tb_wait_for "the jobs as they were before the crash" 30 as_before || true
snapshot_jobs >"$T/after"
is "$(cat "$T/after")" "$(cat "$T/before")" "3: after the restart every job has the same state and m2g AdminComment"
is "$(reason "$def1")/$(reason "$def2")" "BeginTime/BeginTime" "3: the deferred jobs are still deferred on their begin time"
ok "[[ \$(log_count 'm2g: admission: job_submit/m2g active') == $((active_before + 1)) ]]" "3: job_submit/m2g started again in the new slurmctld"
sleep $((RELEASE + 1))  # time passing: a release pass, which must not release them
is "$(job_state "$def1")/$(reason "$def1")" "PENDING/BeginTime" "3: a release pass later the deferred jobs are still deferred (the event goes on)"
survived "3 slurmctld SIGKILL"
cancel "$pend1" "$run1" "$run2"

lap
# ================================================= 4. slurmd SIGKILL ====
sub n1 -N1 -w r02n05 --gres=gpu:4 --m2g-class=inference --wrap 'sleep 600'
wait_job_state "$n1" RUNNING 30
"$M2G_TESTBED" stop r02n05 --signal KILL --dir "$TB_DIR" >/dev/null
node_down() { [[ $(sinfo -h -n r02n05 -o %T) == down* ]]; }
t0=$SECONDS
rc=0; wait_until 40 node_down || rc=$?
ok "$rc" "4: the node of the killed slurmd goes down ($((SECONDS - t0)) s, SlurmdTimeout=10)"
diag "r02n05: $(sinfo -h -n r02n05 -o '%T %E')"
# Requeued, the job is PENDING (or REQUEUED) again; NODE_FAIL would mean
# Slurm ended it instead (slurmctld shows NODE_FAIL only for a job it did
# not requeue).
settled() { [[ ! $(job_state "$n1") =~ ^(RUNNING|COMPLETING)$ ]]; }
wait_until 20 settled || diag "JobId=$n1 still $(job_state "$n1") after 20 s"
st=$(job_state "$n1")
ok "[[ '$st' =~ ^(PENDING|REQUEUED)$ ]]" "4: its job is requeued (JobRequeue=1), not lost: $st"
sub n2 -N18 --exclusive --gres=gpu:4 --m2g-topology=strict:nvlink --m2g-class=inference --wrap 'sleep 20'
sub n3 -N4 --gres=gpu:4 --m2g-topology=prefer --m2g-class=inference --wrap 'sleep 20'
wait_job_state "$n2" RUNNING 30
wait_job_state "$n3" RUNNING 30
ok "[[ \$(job_nodelist $n2) == 'r01n[01-18]' ]]" "4: an 18-node strict:nvlink job takes the intact domain ($(job_nodelist "$n2"))"
ok "! job_nodes $n3 | grep -qx r02n05" "4: new work avoids the down node ($(job_nodelist "$n3"))"
survived "4 slurmd SIGKILL"
"$M2G_TESTBED" start r02n05 --dir "$TB_DIR" >/dev/null
ok "[[ \$(sinfo -h -n r02n05 -o %T) =~ ^(idle|mixed|allocated|completing)$ ]]" "4: restarted, the node returns ($(sinfo -h -n r02n05 -o %T))"
cancel "$n1" "$n2" "$n3"

lap
# ================================================ 5. slurmdbd down ====
ctld_lines0=$(wc -l <"$LOG")
"$M2G_TESTBED" stop slurmdbd --dir "$TB_DIR" >/dev/null
ok "! sacct -n -j 1 >/dev/null 2>&1" "5: slurmdbd is down"
dbd_jobs=()
for i in 1 2 3; do
	sub id -N1 --gres=gpu:4 --m2g-class=inference --m2g-topology=prefer --wrap 'sleep 1'
	dbd_jobs+=("$id")
done
for id in "${dbd_jobs[@]}"; do wait_job_state "$id" COMPLETED 40; done
# (Not any 'accounting_storage' line: slurmctld logs one at every start,
# "accounting_storage/slurmdbd: ...: Registering slurmctld at port ...".)
dbd_queue=$(sdiag 2>/dev/null | sed -n 's/^DBD Agent queue size: *\([0-9][0-9]*\).*/\1/p') || dbd_queue=""
dbd_errors=$(tail -n +"$((ctld_lines0 + 1))" "$LOG" |
	grep -cE 'error: .*(slurmdbd|persistent connection|PersistInit|DBD_[A-Z_]+)' || true)
ok "(( ${dbd_queue:-0} >= 1 || dbd_errors >= 1 ))" \
	"5: slurmctld noticed slurmdbd is gone (sdiag: ${dbd_queue:-no} records queued for it; $dbd_errors errors about it logged since it stopped)"
ok ctld_same "5: slurmctld runs on while slurmdbd is down"
"$M2G_TESTBED" start slurmdbd --dir "$TB_DIR" >/dev/null
acct_ok() {
	local id ac
	for id in "${dbd_jobs[@]}"; do
		ac=$(sacct -n -X -P -j "$id" -o State,AdminComment 2>/dev/null | head -n1)
		[[ $ac =~ ^COMPLETED\|.*m2g:\[[^\;]+\;\ admission=admit ]] || return 1
	done
}
t0=$SECONDS
rc=0; wait_until 60 acct_ok || rc=$?
ok "$rc" "5: after slurmdbd returns, sacct has the 3 jobs COMPLETED with m2g's admission and placement segments ($((SECONDS - t0)) s)"
diag "sacct: $(sacct -n -X -P -j "${dbd_jobs[0]}" -o JobID,State,AdminComment | head -n1)"
survived "5 slurmdbd down"

lap
# ======================================== 6. a DR event ends early ====
gpu_job def3 --m2g-class=finetune --wrap 'sleep 2'
check "6: a job deferred after the restart waits for the event too" \
	tb_wait_for "job $def3 deferred" 10 job_is "$def3" PENDING/BeginTime
deferred=("$def1" "$def2" "$def3")
all_started() {
	local id
	for id in "${deferred[@]}"; do [[ $(job_state "$id") =~ ^(RUNNING|COMPLETING|COMPLETED)$ ]] || return 1; done
}
t0=$SECONDS t_end=$(date +%s)
EVENTS=$(dr_event dr-crash "$t_end") write_feed
rc=0; wait_until 30 all_started || rc=$?
ok "$rc" "6: with the event's end moved to now, the 3 deferred jobs start ($((SECONDS - t0)) s)"
rel=$(admin_comment "$def1" | sed -n 's/.*released at \([^ ]*\):.*/\1/p')
took=$(($(date -u -d "${rel:-1970-01-01T00:00:00Z}" +%s) - t_end))
ok "(( took >= 0 && took <= RELEASE + POLL + 1 ))" \
	"6: released within ReleaseCheckSec + SignalsPollSec (+1 s): after ${took} s, not at the event's old end $(utc "$END_DR")"
# slurmdbd stores AdminComment when a job ends (job_comp), so wait for that.
bad=""
for id in "${deferred[@]}"; do
	wait_job_state "$id" COMPLETED 30
	ac=$(sacct_field "$id" AdminComment 30)
	[[ $ac == *'released at '* ]] || bad+=" $id=[$ac]"
done
is "${bad:-none}" none "6: each says in AdminComment that it was released, and when"
diag "AdminComment: $(admin_comment "$def1")"
ok "[[ \$(log_count 'm2g: admission: JobId=($def1|$def2|$def3) released') == 3 ]]" "6: slurmctld.log has one release line per job"
survived "6 DR event ended early"

lap
diag "faults.sh ran $((SECONDS - t_start)) s"
done_testing
