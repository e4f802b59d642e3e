#!/usr/bin/env bash
# job_submit/m2g and select/m2g against a live signals feed on the real
# testbed (4 NVL72 racks, every m2g plugin). The test rewrites the feed while
# jobs run: a demand-response event defers deferrable work and lets
# non-deferrable work run; the event ends early and the deferred job starts
# within 30 s; a rack over its budget gets no new deferrable jobs; no job
# overlaps a maintenance window; corrupt, stale and missing feeds behave as
# doc/signals.md says; 1,000 submissions pass through job_submit/m2g.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

M2G=${M2G_BUILDDIR:?}/src/cli/m2g
T=$TB_TMP

cat >"$T/admission.conf" <<'EOF'
SignalsFile=@DIR@/run/signals.json
SignalsStatusFile=@DIR@/run/signals-status.json
SignalsPollSec=1
SignalsTTLSec=60
SignalsFailSafe=last
ReleaseCheckSec=2
DeferExemptAccounts=ops
NoDeferAction=reject
EOF
tb_up --racks 4 --conf-extra "$T/admission.conf"
FEED=$TB_DIR/run/signals.json
STATUS=$TB_DIR/run/signals-status.json
LOG=$TB_DIR/log/slurmctld.log
CTLD_PID=$(tb_ctld_pid)

# write_feed: the feed from $EVENTS, $RACKS, $MAINT (JSON) and $GEN (epoch
# seconds, default now), replaced atomically as an agent would.
write_feed() {
	local gen=${GEN:-$(date +%s)} racks=""
	[[ -z ${RACKS:-} ]] || racks=", \"racks\": $RACKS"
	local thermal=${THERMAL:-"{}"}
	cat >"$FEED.tmp" <<-EOF
		{"schema": "m2g.signals/v1", "generated_at": $gen, "source": "admission.sh",
		 "power": {"site": {"budget_kw": 2000, "draw_kw": 100}$racks},
		 "thermal": $thermal, "events": ${EVENTS:-[]}, "maintenance": ${MAINT:-[]}}
	EOF
	mv -f "$FEED.tmp" "$FEED"
}
# log_count PATTERN: lines of slurmctld.log matching (extended regex).
log_count() { grep -Ec -- "$1" "$LOG" || true; }
admin_comment() { squeue -h -t all -j "$1" -O admin_comment:600 | sed 's/ *$//'; }
reason() { squeue -h -j "$1" -o %r; }
job() { sbatch --parsable -N1 --gres=gpu:4 "$@"; }
ctld_alive() { tb_ctld_unbroken; }
# reconfigure DESC: scontrol reconfigure after an edit of m2g.conf, and a
# test that both plugins loaded it: select/m2g at the reconfigure,
# job_submit/m2g's release thread within ReleaseCheckSec (or, from 23.11 on,
# the new slurmctld).
ADM_LOADED='m2g: admission: m2g.conf (re)?loaded' SEL_LOADED='m2g: select: m2g.conf (re)?loaded'
loaded_since() {
	local a s
	a=$(log_count "$ADM_LOADED") s=$(log_count "$SEL_LOADED")
	echo "m2g.conf loads logged since the reconfigure: job_submit/m2g $((a - $1)), select/m2g $((s - $2))"
	((a > $1 && s > $2))
}
reconfigure() {
	local a0 s0
	a0=$(log_count "$ADM_LOADED") s0=$(log_count "$SEL_LOADED")
	scontrol reconfigure
	check "$1" tb_wait_for "both plugins load the edited m2g.conf" 30 loaded_since "$a0" "$s0"
}

# --- a missing feed at start, then a good one -----------------------------------
missing_logged() {
	local a s
	a=$(log_count 'm2g: admission: .*missing') s=$(log_count 'm2g: select: .*missing')
	echo "missing-feed warnings: job_submit/m2g $a, select/m2g $s"
	((a >= 1 && s >= 1))
}
tb_wait_for "both plugins warn of the missing feed" 10 missing_logged || true
ok "[[ \$(log_count 'm2g: admission: .*missing') == 1 ]]" "missing feed at start: one warning from job_submit/m2g"
ok "[[ \$(log_count 'm2g: select: .*missing') == 1 ]]" "missing feed at start: one warning from select/m2g (also across its reconfigure at startup)"
write_feed
tb_await_feed "$FEED" "$STATUS"
ok "grep -q '\"state\": *\"fresh\"' '$STATUS'" "the status file says the feed is fresh"
rc=0; "$M2G" signals show --status "$STATUS" >"$T/show" 2>&1 || rc=$?
ok "[[ $rc == 0 ]] && grep -qx 'state: *fresh' '$T/show'" "m2g signals show reports what job_submit/m2g believes (state: fresh)"
diag "$(head -n3 "$T/show")"

# --- a demand-response event: deferrable work waits, the rest runs ----------------
now=$(date +%s)
EVENTS="[{\"id\": \"dr-test\", \"start\": $((now - 60)), \"end\": $((now + 3600)), \"curtail_pct\": 50, \"scope\": \"site\"}]"
write_feed
tb_await_feed "$FEED" "$STATUS"
d1=$(job --m2g-class=training --wrap 'sleep 5')
n1=$(job --m2g-class=inference --wrap 'sleep 60')
check "during the event, a non-deferrable (inference) job runs" wait_job_state "$n1" RUNNING 60
check "during the event, a deferrable (training) job pends on its begin time" \
	tb_wait_for "job $d1 PENDING/BeginTime" 10 job_is "$d1" PENDING/BeginTime
ac=$(admin_comment "$d1")
ok "[[ '$ac' == *'admission=defer'*'dr-test'* ]]" "its AdminComment names the deferral and the event"
diag "AdminComment: $ac"
rc=0; sbatch --parsable -N1 --gres=gpu:4 --m2g-class=training --m2g-defer=no --wrap true >"$T/out" 2>"$T/err" || rc=$?
ok "[[ $rc != 0 ]] && grep -q 'm2g-defer=no' '$T/err' && grep -q 'dr-test' '$T/err'" \
	"--m2g-defer=no from an account without an exemption is rejected with the event and what to do"
diag "$(grep -m2 m2g "$T/err")"
e1=$(job --account=ops --m2g-class=training --m2g-defer=no --wrap 'sleep 2')
check "an exempt account (DeferExemptAccounts=ops) runs with --m2g-defer=no" wait_job_state "$e1" "RUNNING|COMPLETED" 60
rc=0; sbatch --parsable -N1 --gres=gpu:4 --m2g-class=batch --m2g-explain --wrap true >"$T/out" 2>"$T/err" || rc=$?
x1=$(cat "$T/out")
ok "[[ $rc == 0 ]] && grep -q 'm2g: .*defer' '$T/err'" "--m2g-explain prints the admission decision at submission"
diag "$(grep -m1 'm2g: .*defer' "$T/err")"

# --- the event ends early: deferred work starts within 30 s ------------------------
EVENTS="[]"
t0=$SECONDS
write_feed
wait_job_state "$d1" "RUNNING|COMPLETED" 45
waited=$((SECONDS - t0))
ok "(( $waited <= 30 ))" "after the event ends early, the deferred job starts within 30 s (took ${waited} s)"
ok "[[ '$(admin_comment "$d1")' == *'released'* ]]" "its AdminComment says it was released"
check "the other deferred job starts too" wait_job_state "$x1" "RUNNING|COMPLETED" 45
scancel "$n1"

# --- a rack over its budget gets no new deferrable jobs -------------------------------
# Fill nvl01 but one node, so nvl01 is every 1-node job's best fit.
f1=$(sbatch --parsable -N17 -w 'r01n[01-17]' --exclusive --gres=gpu:4 --m2g-class=inference --wrap 'sleep 300')
wait_job_state "$f1" RUNNING 60
RACKS='{"nvl01": {"budget_kw": 50, "draw_kw": 60}}'
write_feed
tb_await_feed "$FEED" "$STATUS"
dr=$(job --m2g-class=training --m2g-topology=prefer --wrap 'sleep 30')
wait_job_state "$dr" RUNNING 60
ok "[[ \$(job_nodelist $dr) != r01* ]]" "a deferrable job avoids the rack over budget (ran on $(job_nodelist "$dr"))"
ok "[[ '$(admin_comment "$dr")' == *nvl01* ]]" "its AdminComment says which rack it avoided"
diag "AdminComment: $(admin_comment "$dr")"
nd=$(job --m2g-class=inference --m2g-topology=prefer --wrap 'sleep 30')
wait_job_state "$nd" RUNNING 60
is "$(job_nodelist "$nd")" "r01n18" "a non-deferrable job still takes the rack's best-fit node"
scancel "$f1" "$dr" "$nd"
RACKS=""

# --- maintenance windows -----------------------------------------------------------
now=$(date +%s)
MAINT="[{\"id\": \"mw-test\", \"start\": $((now + 600)), \"end\": $((now + 4200)), \"racks\": \"nvl02\", \"reason\": \"PDU swap\"}]"
write_feed
tb_await_feed "$FEED" "$STATUS"
long=$(sbatch --parsable -N18 --exclusive --gres=gpu:4 --time=30 --m2g-topology=strict:nvlink --wrap 'sleep 20')
short=$(sbatch --parsable -N18 --exclusive --gres=gpu:4 --time=5 --m2g-topology=strict:nvlink -w 'r02n[01-18]' --wrap 'sleep 20')
wait_job_state "$long" RUNNING 60
ok "[[ \$(job_nodelist $long) != r02* ]]" "a 30-minute job stays off the rack whose maintenance starts in 10 minutes ($(job_nodelist "$long"))"
check "a 5-minute job may use that rack: it ends before the window" wait_job_state "$short" RUNNING 60
all=$(sbatch --parsable -N72 --exclusive --gres=gpu:4 --time=30 --wrap true)
check "a job that needs every rack for 30 minutes is deferred past the window" \
	tb_wait_for "job $all PENDING/BeginTime" 10 job_is "$all" PENDING/BeginTime
ok "[[ '$(admin_comment "$all")' == *'mw-test'* ]]" "its AdminComment names the maintenance window"
bt=$(scontrol -o show job "$all" | sed -n 's/.* StartTime=\([^ ]*\).*/\1/p')
diag "deferred job StartTime=$bt; AdminComment: $(admin_comment "$all")"
scancel "$long" "$short"

# --- cooler racks first ---------------------------------------------------------------
THERMAL='{"r01n01": {"gpu_temp_c": 84, "state": "hot"}, "r02n01": {"gpu_temp_c": 71, "state": "warm"},
  "r03n01": {"gpu_temp_c": 66, "state": "ok"}, "r04n01": {"gpu_temp_c": 41, "state": "ok"}}'
write_feed
tb_await_feed "$FEED" "$STATUS"
cool=$(job --m2g-class=training --m2g-topology=prefer -t 5 --wrap 'sleep 5')
wait_job_state "$cool" "RUNNING|COMPLETED" 60
ok "[[ \$(job_nodelist $cool) == r04* ]]" "among equally good racks the coolest wins ($(job_nodelist "$cool"): nvl04 at 41 C)"
THERMAL=""

# --- a corrupt feed: the last good snapshot stays, one error ----------------------------
printf '{"schema": "m2g.signals/v1", "generated_at": ' >"$FEED.tmp"; mv -f "$FEED.tmp" "$FEED"
tb_await_feed "$FEED" "$STATUS" corrupt
# Time passing: 4 more polls (SignalsPollSec=1) of the unchanged corrupt
# file, none of which may log it again.
sleep 4
ok "[[ \$(log_count 'm2g: admission: .*(corrupt|not valid JSON|JSON)') == 1 ]]" "a corrupt feed is logged once by job_submit/m2g (5 polls later)"
ok "grep -q '\"state\": *\"corrupt\"' '$STATUS'" "the status file says corrupt"
all2=$(sbatch --parsable -N72 --exclusive --gres=gpu:4 --time=30 --wrap true)
check "the last good snapshot (its maintenance window) stays in force" \
	tb_wait_for "job $all2's AdminComment names mw-test" 10 tb_comment_has "$all2" mw-test
scancel "$all" "$all2"
ok ctld_alive "slurmctld survived the corrupt feed"

# --- a stale feed: fail-safe last keeps the last snapshot's event in force ------------------
now=$(date +%s)
MAINT="[]"
EVENTS="[{\"id\": \"dr-stale\", \"start\": $((now - 600)), \"end\": $((now + 3600)), \"curtail_pct\": 25}]"
GEN=$((now - 300)) write_feed
tb_await_feed "$FEED" "$STATUS" stale
ok "[[ \$(log_count 'm2g: admission: .*stale') -ge 1 ]]" "a stale feed is reported"
st1=$(log_count 'm2g: admission: .*stale')
s1=$(job --m2g-class=training --wrap true)
check "fail-safe last: the stale snapshot's event still defers deferrable work" \
	tb_wait_for "job $s1's AdminComment names dr-stale" 10 tb_comment_has "$s1" dr-stale
# Time passing: 4 more polls of the still stale feed, none of which may warn.
sleep 4
is "$(log_count 'm2g: admission: .*stale')" "$st1" "the stale warning is not repeated while it stays stale"
scancel "$s1"

# --- a missing feed with fail-safe defer: deferrable work holds, the rest runs -------------
sed 's/^SignalsFailSafe=last/SignalsFailSafe=defer/' "$TB_DIR/etc/m2g.conf" | tb_write "$TB_DIR/etc/m2g.conf"
reconfigure "both plugins load m2g.conf with SignalsFailSafe=defer"
EVENTS="[]"
write_feed
tb_await_feed "$FEED" "$STATUS"
rm -f "$FEED"
tb_await_feed "$FEED" "$STATUS" missing
m1=$(job --m2g-class=training --wrap 'sleep 2')
m2=$(job --m2g-class=inference --wrap 'sleep 2')
check "missing feed, fail-safe defer: non-deferrable work runs" wait_job_state "$m2" "RUNNING|COMPLETED" 60
ok "[[ '$(job_state "$m1")' == PENDING && '$(admin_comment "$m1")' == *failsafe* ]]" \
	"missing feed, fail-safe defer: deferrable work is held, and says why"
diag "AdminComment: $(admin_comment "$m1")"
t0=$SECONDS
write_feed
wait_job_state "$m1" "RUNNING|COMPLETED" 45
ok "(( SECONDS - t0 <= 30 ))" "the feed is back: the held job starts within 30 s (took $((SECONDS - t0)) s)"
ok ctld_alive "slurmctld survived missing and stale feeds"

# --- pacing during curtailment: at most 4 GPUs start per interval, for every job ----------
tb_append "$TB_DIR/etc/m2g.conf" PaceGpusPerInterval=4 PaceIntervalSec=3600
reconfigure "both plugins load m2g.conf with PaceGpusPerInterval=4"
# Keep clear of an interval boundary (intervals are aligned to the hour).
(( $(date +%s) % 3600 > 3540 )) && sleep $((3600 - $(date +%s) % 3600 + 2))
now=$(date +%s)
EVENTS="[{\"id\": \"dr-pace\", \"start\": $((now - 60)), \"end\": $((now + 3600)), \"curtail_pct\": 10}]"
write_feed
tb_await_feed "$FEED" "$STATUS"
p1=$(job --m2g-class=inference --wrap 'sleep 30')
wait_job_state "$p1" RUNNING 60
p2=$(job --m2g-class=inference --wrap 'sleep 30')
check "pacing: a second 4-GPU start in the same interval waits, and its AdminComment says pacing" \
	tb_wait_for "job $p2 held by pacing" 10 tb_comment_has "$p2" 'pacing: 4 GPUs already started this interval'
is "$(job_state "$p2")" PENDING "pacing: that job is pending (PaceGpusPerInterval=4)"
diag "AdminComment: $(admin_comment "$p2")"
EVENTS="[]"
write_feed
check "the curtailment ends: the paced job starts" wait_job_state "$p2" RUNNING 45
scancel "$p1" "$p2"

# --- 1,000 submissions through job_submit/m2g ---------------------------------------------
t0=$SECONDS
seq 1000 | xargs -P 4 -I{} sbatch --parsable --hold -J load -N1 --gres=gpu:1 --m2g-class=batch --wrap true \
	>"$T/load.out" 2>"$T/load.err" || true
took=$((SECONDS - t0))
is "$(grep -cE '^[0-9]+$' "$T/load.out")" 1000 "1,000 submissions through job_submit/m2g are all accepted (${took} s)"
is "$(squeue -h -n load -O admin_comment:300 | grep -c 'admission=')" 1000 "and every one carries its admission decision"
scancel -n load
ok ctld_alive "slurmctld is still up"

done_testing
