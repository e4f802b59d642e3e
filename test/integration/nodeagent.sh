#!/usr/bin/env bash
# m2g-nodeagent end to end with the real daemon (no Slurm daemon): it runs
# on 127.0.0.1 on a free port with the fake NVML (test/fake-nvml, limits kept
# in FAKE_NVML_STATE_DIR like a driver keeps them, draw following the
# dcgm-exporter job mapping files) and a temporary mapping directory, and
# curl checks:
#   - idle draw; a job on GPUs 0,1 makes them busy; a 300 W cap limits
#     exactly those two (draw follows), GPUs 2,3 untouched;
#   - clamping to the GPUs' range, with a note; bad JSON, bad ids, unknown
#     jobs, paths and methods get a JSON error saying what is accepted;
#   - a restarted agent knows its caps (--state-dir); an NVML failure
#     (FAKE_NVML_SET_LIMIT_ERROR) is a 502 with NVML's text and changes
#     nothing;
#   - --token-file: refused when group/other readable, then 401 without or
#     with a wrong bearer token;
#   - the reconcile tick lifts the cap of a job gone from the mapping, once;
#   - DELETE restores the default and is idempotent; garbage never kills it;
#   - bad --listen values are refused with a clear message.
# Every agent is stopped by its PID, by the EXIT trap also on failure.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${M2G_BUILDDIR:-$SRC}
AGENT=$BUILD/src/nodeagent/m2g-nodeagent
FAKE=$BUILD/test/fake-nvml/.libs/libfake-nvml.so
T=$TB_TMP
NODE=tnode01
MAP=$T/jobs-$NODE   # --job-map-dir "$T/jobs-%n"
mkdir -p "$MAP" "$T/nvml"
for v in $(compgen -e | grep '^FAKE_NVML_' || true); do unset "$v"; done
export FAKE_NVML_STATE_DIR=$T/nvml FAKE_NVML_JOBMAP_DIR=$MAP

AGENT_PID="" URL="" LOG="" _N=0
# start_agent [ARGS...]: start one agent; sets AGENT_PID, URL and LOG (its
# stderr). Fails when it exits or does not serve within 10 s.
start_agent() {
	_N=$((_N + 1))
	LOG=$T/agent.$_N.log
	"$AGENT" --node "$NODE" --listen 127.0.0.1:0 --job-map-dir "$T/jobs-%n" --nvml "$FAKE" \
		--state-dir "$T/state" --reconcile-sec 1 "$@" 2>"$LOG" &
	AGENT_PID=$!
	TB_CLEANUP_PIDS+=("$AGENT_PID")  # lib.sh's EXIT trap stops it, also on failure
	local port
	port=$(tb_await_server "m2g-nodeagent $_N" "$AGENT_PID" "$LOG" 's|.*serving http://127\.0\.0\.1:\([0-9]*\) .*|\1|p') ||
		return 1
	URL=http://127.0.0.1:$port
}
# stop_agent: SIGTERM by PID; its exit status in $stopped (not in a
# subshell: only this shell can wait for it).
stop_agent() {
	stopped=0
	kill -TERM "$AGENT_PID" 2>/dev/null || true
	wait "$AGENT_PID" || stopped=$?
}
AUTH=()  # curl arguments req adds (an Authorization header)
# req METHOD PATH [BODY]: the answer's status in $code, its body in $body.
req() {
	local p=$2 args=(-s -o "$T/body" -w '%{http_code}' --max-time 10 -X "$1")
	(($# > 2)) && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	: >"$T/body"
	code=$(curl "${args[@]}" "${AUTH[@]}" "$URL$p") || code="curl failed"
	body=$(cat "$T/body")
}
# j FILTER: jq on the last answer (compact).
j() { jq -c "$1" <<<"$body" 2>/dev/null || echo "(not JSON: $body)"; }
jr() { jq -r "$1" <<<"$body" 2>/dev/null || echo "(not JSON: $body)"; }  # raw strings
# contains TEXT PART DESC
contains() {
	local s=0
	[[ $1 == *"$2"* ]] || s=1
	ok "$s" "$3"
	((s == 0)) || diag "  '$2' is not in: $1"
}
# is_error STATUS TEXT DESC: the last answer is STATUS and exactly
# {"error": "..."} with TEXT in the message.
is_error() {
	local err
	err=$(jq -r 'if type == "object" and keys == ["error"] and (.error | type == "string") then .error
		else "not an error document: \(.)" end' <<<"$body" 2>/dev/null) || err="not JSON: $body"
	is "$code" "$1" "$3: HTTP $1"
	contains "$err" "$2" "$3: {\"error\": \"...$2...\"}"
}
limits() { req GET /v1/power; j '[.gpus[].limit_w]'; }
draws() { req GET /v1/power; j '[.gpus[].draw_w]'; }

# ---- options ----------------------------------------------------------------------
rc=0; "$AGENT" --listen 127.0.0.1:http --job-map-dir "$MAP" --nvml "$FAKE" 2>"$T/err" || rc=$?
is "$rc" 1 "--listen 127.0.0.1:http is refused"
ok "grep -q \"the port 'http' is not a number; it is 0 to 65535\" '$T/err'" "and says the port must be a number: $(cat "$T/err")"
rc=0; "$AGENT" --listen 127.0.0.1:70000 --job-map-dir "$MAP" --nvml "$FAKE" 2>"$T/err" || rc=$?
is "$rc" 1 "--listen 127.0.0.1:70000 is refused"
ok "grep -q 'port 70000 is out of range' '$T/err'" "and says the port is out of range"
rc=0; "$AGENT" --listen 127.0.0.1:0 2>"$T/err" || rc=$?
ok "((rc != 0)) && grep -q -- '--job-map-dir is required' '$T/err'" "--job-map-dir is required"
rc=0; "$AGENT" --listen 127.0.0.1:0 --job-map-dir "$MAP" --nvml /nonexistent/libnvidia-ml.so.1 2>"$T/err" || rc=$?
ok "((rc == 1)) && grep -q 'cannot load NVML: /nonexistent/libnvidia-ml.so.1' '$T/err'" \
	"an NVML that does not load stops it with the reason"

# ---- idle, busy, cap -----------------------------------------------------------------
check "the agent serves on a free loopback port (--listen 127.0.0.1:0)" start_agent
[[ -n $URL ]] || exit 1  # the rest talks to it
diag "agent at $URL"
req GET /v1/power
is "$code" 200 "GET /v1/power"
is "$(j '[.schema, .node, (.gpus | length), .draw_w]')" '["m2g.nodeagent-power/v1","tnode01",4,360]' \
	"schema, node, 4 GPUs, idle node draw 360 W"
is "$(j '.gpus[0]')" \
	'{"index":0,"draw_w":90,"limit_w":1200,"default_limit_w":1200,"min_limit_w":200,"max_limit_w":1200,"jobs":[]}' \
	"an idle GPU: 90 W, limit 1200 W (default, range 200-1200 W), no job"

printf '101\n' >"$MAP/0"
printf '101\n' >"$MAP/1"
req GET /v1/power
is "$(j '[.gpus[].draw_w]')" '[1000,1000,90,90]' "job 101 on GPUs 0,1 (mapping files): they draw 1000 W"
is "$(j '[.gpus[].jobs]')" '[[101],[101],[],[]]' "and list the job"

req PUT /v1/jobs/101/cap '{"limit_w": 300}'
is "$code" 200 "PUT /v1/jobs/101/cap {\"limit_w\": 300}"
is "$(j '[.job, .requested_w, .limit_w, [.gpus[] | [.index, .limit_w, .clamped]]]')" \
	'[101,300,300,[[0,300,false],[1,300,false]]]' "the answer says 300 W applied on GPUs 0 and 1"
is "$(limits)" '[300,300,1200,1200]' "limits: 300 W on GPUs 0,1 only; GPUs 2,3 keep 1200 W"
is "$(draws)" '[300,300,90,90]' "draw follows: 300 W on the capped GPUs, 2,3 still idle"
req GET /v1/power
is "$(j '.caps')" '{"101":{"limit_w":300,"requested_w":300,"gpus":[0,1]}}' "GET /v1/power lists the cap"
is "$(cat "$T/nvml/0.limit" "$T/nvml/1.limit")" $'300000\n300000' "the driver (fake NVML state) holds 300000 mW on GPUs 0,1"
ok "[[ ! -e '$T/nvml/2.limit' && ! -e '$T/nvml/3.limit' ]]" "and was never asked to set GPUs 2,3"
ok "grep -q 'cap job 101 GPUs 0,1: 300 W (requested 300 W; GPU 0 300 W, GPU 1 300 W)' '$LOG'" \
	"the agent logs the action: $(grep 'cap job 101' "$LOG" | head -1)"

# ---- clamping ---------------------------------------------------------------------------
req PUT /v1/jobs/101/cap '{"limit_w": 50}'
is "$code|$(j '[.limit_w, [.gpus[] | [.limit_w, .clamped]]]')" '200|[200,[[200,true],[200,true]]]' \
	"50 W is clamped to the GPUs' minimum, 200 W"
contains "$(jr .note)" "below the lowest limit GPUs 0,1 accept: raised to the minimum" "with a note saying so"
req PUT /v1/jobs/101/cap '{"limit_w": 5000}'
is "$code|$(j '[.gpus[] | [.limit_w, .clamped]]')" '200|[[1200,true],[1200,true]]' "5000 W is clamped to the maximum, 1200 W"
req PUT /v1/jobs/101/cap '{"limit_w": 300}'
is "$(limits)" '[300,300,1200,1200]' "back to 300 W"

# ---- bad requests ---------------------------------------------------------------------------
req PUT /v1/jobs/101/cap '{"limit_w": '
is_error 400 "the body is not JSON" "truncated JSON"
contains "$(jr .error)" '{"limit_w": 300}' "the message shows the accepted form"
req PUT /v1/jobs/101/cap '{"watts": 300}'
is_error 400 'the body has no "limit_w"' "a body without limit_w"
req PUT /v1/jobs/101/cap '{"limit_w": "300"}'
is_error 400 "must be a number of watts" "limit_w as a string"
req PUT /v1/jobs/101/cap '{"limit_w": -3}'
is_error 400 "is not a GPU power limit" "a negative limit"
req PUT /v1/jobs/12x/cap '{"limit_w": 300}'
is_error 400 "job id '12x' is not valid; expected a Slurm job id" "a bad job id"
req PUT /v1/jobs/999/cap '{"limit_w": 300}'
is_error 404 "job 999 has no GPU on node tnode01" "a job with no GPU on this node"
req GET /v1/nothing
is_error 404 "the agent serves GET /v1/power, PUT /v1/jobs/<id>/cap and DELETE /v1/jobs/<id>/cap" "an unknown path"
req POST /v1/jobs/101/cap '{"limit_w": 300}'
is_error 405 "use PUT, DELETE" "POST on a cap"
req PUT /v1/jobs/101/cap "$(head -c 5000 /dev/zero | tr '\0' ' ')"
is_error 413 "larger than 4096 bytes" "a body over 4096 bytes"
is "$(limits)" '[300,300,1200,1200]' "none of that changed a limit"

# ---- restart, NVML failure ------------------------------------------------------------------
stop_agent
is "$stopped" 0 "SIGTERM stops the agent (by PID), exit status 0"
ok "grep -q 'stopping on SIGTERM' '$LOG'" "and it says so"
printf '102\n' >"$MAP/2"
printf '102\n' >"$MAP/3"
FAKE_NVML_SET_LIMIT_ERROR=4 start_agent
req GET /v1/power
is "$(j '.caps | keys')" '["101"]' "a restarted agent knows the cap it set (--state-dir)"
req PUT /v1/jobs/102/cap '{"limit_w": 300}'
is_error 502 "Insufficient Permissions (4)" "NVML refusing the set (FAKE_NVML_SET_LIMIT_ERROR=4)"
contains "$(jr .error)" "NVML could not set the power limit of GPU 2 to 300 W (GPU 2: \
nvmlDeviceSetPowerManagementLimit: Insufficient Permissions (4)); no GPU was changed" \
	"the error names the GPU, the limit, the NVML call and what was left"
is "$(limits)" '[300,300,1200,1200]' "nothing half-applied: GPUs 2,3 keep 1200 W, 0,1 keep their cap"
req GET /v1/power
is "$(j '.caps | keys')" '["101"]' "and job 102 has no cap"
stop_agent
is "$stopped" 0 "stopped"

# ---- bearer token ------------------------------------------------------------------------------
printf 'm2g-test-token\n' >"$T/token"
chmod 644 "$T/token"
rc=0; "$AGENT" --node "$NODE" --listen 127.0.0.1:0 --job-map-dir "$MAP" --nvml "$FAKE" --token-file "$T/token" \
	2>"$T/err" || rc=$?
is "$rc" 1 "a group/other-readable --token-file is refused"
ok "grep -q 'is accessible by group or others (mode 0644)' '$T/err'" "with the reason: $(cat "$T/err")"
chmod 600 "$T/token"
start_agent --token-file "$T/token"
req GET /v1/power
is_error 401 "no Authorization header; this agent requires 'Authorization: Bearer <token>'" "no token"
AUTH=(-H "Authorization: Bearer wrong")
req GET /v1/power
is_error 401 "wrong bearer token" "a wrong token"
req PUT /v1/jobs/101/cap '{"limit_w": 250}'
is "$code" 401 "a PUT with a wrong token is refused too"
is "$(cat "$T/nvml/0.limit")" 300000 "and changes nothing"
AUTH=(-H "Authorization: Bearer m2g-test-token")
req GET /v1/power
is "$code|$(j '.caps | keys')" '200|["101"]' "the right token is accepted"
req PUT /v1/jobs/101/cap '{"limit_w": 300}'
is "$code" 200 "also for a PUT"
AUTH=()
stop_agent
is "$stopped" 0 "stopped"

# ---- reconcile, DELETE ------------------------------------------------------------------------------
start_agent
req DELETE /v1/jobs/555/cap
is "$code|$(j '[.job, .restored, .gpus]')" '200|[555,false,[]]' "DELETE of a job never capped: 200, nothing to restore"
req PUT /v1/jobs/102/cap '{"limit_w": 400}'
is "$code|$(limits)" '200|[300,300,400,400]' "job 102 capped at 400 W on GPUs 2,3 (NVML works again)"
rm -f "$MAP/0" "$MAP/1"   # job 101 ended: spank_m2g's epilog removed it from the mapping
for _ in $(seq 1 50); do
	[[ $(limits) == '[1200,1200,400,400]' ]] && break
	sleep 0.2
done
is "$(limits)" '[1200,1200,400,400]' "the reconcile tick gives job 101's GPUs the default limit back"
req GET /v1/power
is "$(j '.caps | keys')" '["102"]' "and forgets its cap"
sleep 2.2   # two more ticks
is "$(grep -c 'reconcile: job 101 is no longer in' "$LOG")" 1 "logged once: $(grep 'reconcile: job 101' "$LOG")"
req DELETE /v1/jobs/102/cap
is "$code|$(j '[.restored, [.gpus[] | [.index, .limit_w]]]')" '200|[true,[[2,1200],[3,1200]]]' \
	"DELETE restores the default limit on the job's GPUs"
is "$(limits)" '[1200,1200,1200,1200]' "every GPU at its default again"
req DELETE /v1/jobs/102/cap
is "$code|$(j .restored)" '200|false' "DELETE again: 200 (idempotent)"
ok "grep -q 'clear job 102 GPUs 2,3: cap removed (GPU 2 1200 W, GPU 3 1200 W)' '$LOG'" "DELETE is logged"

# ---- garbage never kills it ------------------------------------------------------------------
for p in '/v1/jobs/%00/cap' '/v1/jobs/-1/cap' '/v1/jobs/99999999999999/cap' '/../../etc/passwd' '/v1/power?x=1'; do
	curl -s -o /dev/null --max-time 5 -X PUT --data-binary $'\xff\xfe{' "$URL$p" || true
done
printf 'GARBAGE / HTTP/9\r\n\r\n' >"$T/garbage"
curl -s -o /dev/null --max-time 5 --data-binary @"$T/garbage" -X BREW "$URL/v1/power" || true
req GET /v1/power
is "$code" 200 "still serving after malformed requests"
ok "kill -0 $AGENT_PID" "the agent is alive"
pid=$AGENT_PID
stop_agent
is "$stopped" 0 "stopped by PID"
ok "! kill -0 $pid" "and gone"
done_testing
