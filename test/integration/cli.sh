#!/usr/bin/env bash
# The m2g command on fixture files: what an admin types, what it prints,
# and its exit status. Needs no Slurm daemon.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
M2G=${M2G_BUILDDIR:-$SRC}/src/cli/m2g
FIX=$SRC/test/fixtures
DATA=${M2G_DATA:-$SRC/../shared/data}
T=$TB_TMP

# run CMD...: stdout in $out, stderr in $err, status in $rc.
run() { rc=0; "$@" >"$T/out" 2>"$T/err" || rc=$?; out=$(cat "$T/out"); err=$(cat "$T/err"); }
# json EXPR: EXPR of the JSON document the last run printed (as d), by python3.
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$T/out" "$1"; }

run "$M2G" topology validate "$FIX/nvl72-8rack.conf"
is "$rc:$out" "0:$FIX/nvl72-8rack.conf: ok: 144 nodes, 576 GPUs, 8 NVLink domains, 3 switches, 4 fault domains" \
	"validate: a good file says ok with counts"

run "$M2G" topology validate "$SRC/etc/m2g.conf.example"
is "$rc" 0 "validate: etc/m2g.conf.example is valid"
run "$M2G" topology show "$SRC/etc/m2g.conf.example"
is "$out" "$(cat "$FIX/nvl72-8rack.show")" "show: the shipped example is the 8-rack fixture's tree"

run "$M2G" topology show "$FIX/nvl72-8rack.conf"
is "$out" "$(cat "$FIX/nvl72-8rack.show")" "show: golden tree"

sed 's/^DomainName=nvl03 Nodes=r03n\[01-18\] Size=18/DomainName=nvl03 Nodes=r03n[01-18] Size=16/' \
	"$FIX/nvl72-8rack.conf" >"$T/bad.conf"
run "$M2G" topology validate "$T/bad.conf"
is "$rc:$err" "1:m2g: $T/bad.conf:19: DomainName=nvl03 has 18 nodes but Size=16; raise Size or move nodes to another domain" \
	"validate: a domain over its Size fails with file:line, exit 1"

printf 'NodeName=n[1-2] Gpus=4\nSwitchName=leaf1 Nodes=n[1-2] Speed=100\n' >"$T/unknown.conf"
run "$M2G" topology validate "$T/unknown.conf"
is "$rc:$err" "1:m2g: $T/unknown.conf:2: unknown key 'Speed' in a SwitchName line; accepted keys: Level, LinkGbps, Switches, Domains, Nodes" \
	"validate: unknown key names the accepted keys"

printf 'NodeName=n[1-3] Gpus=4\nSwitchName=leaf1 Nodes=n[1-2]\n' >"$T/warn.conf"
run "$M2G" topology validate "$T/warn.conf"
is "$rc:$err" "0:m2g: warning: $T/warn.conf: 1 node(s) are not reached by any switch: n3" \
	"validate: warnings go to stderr, exit 0"

run "$M2G" topology validate /nonexistent/m2g.conf
is "$rc:$err" "1:m2g: /nonexistent/m2g.conf: cannot open: No such file or directory" "validate: missing file"

# m2g.conf without FILE or --conf: $M2G_CONF, else beside $SLURM_CONF, else /etc/slurm.
mkdir -p "$T/etc"
cp "$FIX/nvl72-8rack.conf" "$T/etc/m2g.conf"
run env -u M2G_CONF SLURM_CONF="$T/etc/slurm.conf" "$M2G" topology validate
is "$rc:$out" "0:$T/etc/m2g.conf: ok: 144 nodes, 576 GPUs, 8 NVLink domains, 3 switches, 4 fault domains" \
	"validate: without FILE, the m2g.conf beside \$SLURM_CONF"
run env M2G_CONF="$T/warn.conf" SLURM_CONF="$T/etc/slurm.conf" "$M2G" topology validate
is "$rc:$out" "0:$T/warn.conf: ok: 3 nodes, 12 GPUs, 0 NVLink domains, 1 switches, 0 fault domains" \
	"validate: \$M2G_CONF comes before \$SLURM_CONF's directory"

# --json on the read commands: one object, parsed here.
run "$M2G" topology validate --json "$FIX/nvl72-8rack.conf"
is "$rc:$(json 'd["ok"], d["nodes"], d["gpus"], d["nvlink_domains"], d["switches"], d["fault_domains"], d["warnings"]')" \
	"0:(True, 144, 576, 8, 3, 4, [])" "validate --json: the counts as one object"
run "$M2G" topology validate --json "$T/warn.conf"
is "$rc:$(json 'd["warnings"]')" "0:['1 node(s) are not reached by any switch: n3']" "validate --json: the warnings too"
run "$M2G" topology show --json "$FIX/nvl72-8rack.conf"
is "$rc:$(json 'd["cluster"], d["gpus"], d["domains"][2], [s["name"] for s in d["switches"]], d["fault_domains"][0]["power_budget_kw"]')" \
	"0:('nvl72x8', 576, {'name': 'nvl03', 'switch': 'leaf01', 'nodes': 'r03n[01-18]', 'node_count': 18, 'size': 18, 'gpus': 72, 'nvlink_gbps': 14400.0, 'power_budget_kw': 132.0}, ['leaf01', 'leaf02', 'spine01'], 560.0)" \
	"show --json: domains, switches and fault domains"

run "$M2G" topology export "$FIX/nvl72-8rack.conf"
is "$out" "$(cat "$FIX/nvl72-8rack.tree")" "export: topology/tree golden"
run "$M2G" topology export --format=block -o "$T/block.conf" "$FIX/nvl72-8rack.conf"
is "$rc:$(cat "$T/block.conf")" "0:$(cat "$FIX/nvl72-8rack.block")" "export -o: topology/block golden"

run "$M2G" topology export --format=yaml "$FIX/nvl72-8rack.conf"
ok "[[ $rc == 2 && \$(cat $T/err) == *yaml* ]]" "export: an unknown --format is a usage error (exit 2) naming it"

# Round trip through Slurm's format: export, import as domains, export again.
"$M2G" topology export -o "$T/topology.conf" "$FIX/nvl72-8rack.conf"
run "$M2G" topology import-slurm --gpus-per-node 4 --leaf-as-domain -o "$T/back.conf" "$T/topology.conf"
"$M2G" topology export -o "$T/topology2.conf" "$T/back.conf"
ok "diff <(grep -v '^#' $T/topology.conf) <(grep -v '^#' $T/topology2.conf)" \
	"import-slurm --leaf-as-domain reads back what export writes"

run "$M2G" topology import-slurm --gpus-per-node 8 "$DATA/lingjun2023_topology.conf"
is "$rc:$(grep -c '^SwitchName=' <<<"$out"):$(grep '^NodeName=' <<<"$out")" \
	"0:123:NodeName=lj[000-846] Gpus=8" "import-slurm: the real Lingjun fabric, 123 switches, 847 hosts"
printf '%s\n' "$out" >"$T/lingjun.m2g.conf"
run "$M2G" topology show "$T/lingjun.m2g.conf"
is "$(head -2 <<<"$out")" "cluster (unnamed): 847 nodes, 6776 GPUs, 0 NVLink domains, 123 switches
G6  core  847 nodes, 6776 GPUs" "show: Lingjun's core switch holds all 847 hosts"

run "$M2G" topology locate "$FIX/nvl72-8rack.conf" 'r02n[01-18],r04n[01-18]'
is "$out" "36 nodes in 2 NVLink domains (nvl02 18/18, nvl04 18/18, all whole) under 1 leaf switch (leaf01)" \
	"locate: which domains a node list uses"
run "$M2G" topology locate --json "$FIX/nvl72-8rack.conf" 'r02n[01-18],r05n01'
is "$rc:$(json 'd["nodes"], d["domains"][1], d["whole_domains"], d["leaf_switches"], d["top_switch"]')" \
	"0:(19, {'name': 'nvl05', 'used': 1, 'size': 18, 'whole': False}, 1, ['leaf01', 'leaf02'], 'spine01')" \
	"locate --json: domains used, leaves, the joining switch"

# m2g place: the engine select/m2g runs, on a described cluster state.
printf '{"busy": "r01n[01-10],r02n[03-12],r03n[05-14],r04n[09-18],r05n07"}\n' >"$T/state.json"
run "$M2G" place --conf "$FIX/nvl72-8rack.conf" --state "$T/state.json" --request nodes=36
is "$rc:$(sed -n 's/^reason: *//p' <<<"$out")" "0:2 NVLink domains (2 whole, lower bound 2) under leaf02" \
	"place: a 36-node job takes two whole domains on a fragmented cluster"
run "$M2G" place --conf "$FIX/nvl72-8rack.conf" --state "$T/state.json" --request gpus=72,topology=strict:nvlink --json
ok "[[ $rc == 0 && \$(cat $T/out) == '{\"ok\":true,\"meets_intent\":true,\"nodes\":\"r06n[01-18]\",\"node_count\":18,'* ]]" \
	"place --json: one object, a 72-GPU job in one whole rack"
printf '{"busy": "r0[1-8]n[01]"}\n' >"$T/full.json"
run "$M2G" place --conf "$FIX/nvl72-8rack.conf" --state "$T/full.json" --request nodes=18,topology=strict
is "$rc:$out" "3:waits: waiting for an NVLink domain with 18 free healthy nodes (best now: nvl01 with 17)" \
	"place: a strict job that would wait exits 3 with the reason"
run "$M2G" place --topology "$FIX/nvl72-8rack.conf" --state "$T/state.json" --request nodes=36
is "$rc:$(sed -n 's/^reason: *//p' <<<"$out")" "0:2 NVLink domains (2 whole, lower bound 2) under leaf02" \
	"place: --topology, the old name of --conf, still works"
run "$M2G" place --conf "$FIX/nvl72-8rack.conf" --request cores=4
is "$rc:$err" "1:m2g: request: unknown key 'cores'; accepted: nodes, gpus, segment, topology, fallback, spare (e.g. gpus=72,topology=strict:nvlink)" \
	"place: a bad request names what is accepted"
printf '{"busy": "r09n01"}\n' >"$T/bad-state.json"
run "$M2G" place --conf "$FIX/nvl72-8rack.conf" --state "$T/bad-state.json" --request nodes=1
is "$rc:$err" "1:m2g: $T/bad-state.json: \"busy\" names node r09n01, which m2g.conf does not declare" \
	"place: a state naming an unknown node is an error"

# Recipes: the shipped catalog, show, and a broken one.
RECIPES=$SRC/etc/m2g-recipes.conf.example
run "$M2G" recipe validate "$RECIPES"
is "$rc:$out" "0:$RECIPES: ok: 5 recipes" "recipe validate: the shipped example is valid"
run env M2G_RECIPES="$RECIPES" "$M2G" recipe list
is "$rc:$(sed -n '1p;3p' <<<"$out")" "0:RECIPE                      GPUS  CLASS      TOPOLOGY         MODEL          DESCRIPTION
llama3-405b-pretrain         512  training   strict:nvlink    llama-3.1-405b 405B pre-training, 128 nodes" \
	"recipe list: one line per recipe (catalog from \$M2G_RECIPES)"
run "$M2G" recipe show --catalog "$RECIPES" --gpus-per-node 4 llama3-70b-finetune
is "$(tail -3 <<<"$out")" \
	"  expands to    topology=strict:nvlink class=finetune defer=ok model=llama-3.1-70b gpus=16 power_w_per_gpu=950 runtime_s=43200 gpu_multiple=8
  sizes a job   -t 12:00:00 -N 4 --gres=gpu:4 (on 4-GPU nodes, when the job gives no size of its own)
  by hand       a multiple of 8 GPUs (one model replica, TP*PP)" \
	"recipe show: what the recipe expands to, and the size it gives a job"
run "$M2G" recipe show --catalog "$RECIPES" --conf "$SRC/test/fixtures/dgx-h100-pod.conf" llama3-405b-pretrain
ok "grep -q '^  sizes a job   -t 14-00:00:00 -N 64 --gres=gpu:8 (on 8-GPU nodes' <<<'$out'" \
	"recipe show: the size for the nodes m2g.conf declares (8-GPU DGX nodes)"
diag "$out"
run "$M2G" recipe show --catalog "$RECIPES" llama3-8b
ok "[[ $rc == 4 && \$(cat $T/err) == *'no such recipe'*'known: llama3-70b-finetune'* ]]" \
	"recipe show: an unknown name is not found (exit 4) and lists the known ones"
run "$M2G" recipe list --json --catalog "$RECIPES"
is "$rc:$(json 'd["catalog"], len(d["recipes"]), d["recipes"][0]["name"], d["recipes"][0]["gpus"], d["recipes"][0]["topology"]')" \
	"0:('$RECIPES', 5, 'llama3-70b-finetune', 16, 'strict:nvlink')" "recipe list --json: the catalog's recipes"
run "$M2G" recipe show --json --catalog "$RECIPES" llama3-70b-finetune
is "$rc:$(json 'd["name"], d["class"], d["gpus"], d["power_w_per_gpu"], d["expands_to"]')" \
	"0:('llama3-70b-finetune', 'finetune', 16, 950.0, 'topology=strict:nvlink class=finetune defer=ok model=llama-3.1-70b gpus=16 power_w_per_gpu=950 runtime_s=43200 gpu_multiple=8')" \
	"recipe show --json: what the recipe sets and expands to"
printf 'RecipeName=x Gpus=16 TP=8 PP=1 DP=1\n' >"$T/bad-recipes.conf"
run "$M2G" recipe validate "$T/bad-recipes.conf"
is "$rc:$err" "1:m2g: $T/bad-recipes.conf:1: RecipeName=x has Gpus=16 but TP*PP*DP = 8*1*1 = 8" \
	"recipe validate: a broken catalog fails with file:line"

run "$M2G" --version
is "$rc:$out" "0:m2g 0.1.0" "--version"
run "$M2G" topology
ok "[[ $rc == 2 ]]" "a missing subcommand is a usage error (exit 2)"
run env M2G_CONF="$FIX/nvl72-8rack.conf" SLURM_CONF="$T/nonexistent/slurm.conf" "$M2G" status
ok "[[ $rc == 5 && \$(cat $T/err) == *SLURM_CONF=$T/nonexistent/slurm.conf* ]]" \
	"status without a readable slurm.conf: Slurm cannot be reached (exit 5), naming SLURM_CONF"
run "$M2G" topology show --help
ok "[[ $rc == 0 && \$(cat $T/out) == *'node and GPU counts'* ]]" "--help describes the subcommand"

# m2g signals: the live signals feed (doc/signals.md), checked against m2g.conf.
CONF=$FIX/nvl72-8rack.conf
SIG=$FIX/signals
run "$M2G" signals validate --conf "$CONF" --at 2026-11-29T21:00:30Z "$SRC/etc/signals.example.json"
is "$rc:$out:$err" "0:$SRC/etc/signals.example.json: ok: generated 2026-11-29T21:00:00Z (30 s ago), 2 events (1 active), 1 maintenance window (0 active), 3 thermal readings, health: 2 degraded, 1 down, 1 NVLink fault, 1 link down:" \
	"signals validate: the shipped example is valid, with counts"
run env M2G_CONF="$CONF" "$M2G" signals validate --at 2026-11-29T21:05:00Z "$SIG/good/minimal.json"
is "$rc:$out" "0:$SIG/good/minimal.json: ok: generated 2026-11-29T20:55:00Z (600 s ago), 0 events (0 active), 0 maintenance windows (0 active), 0 thermal readings, health: nothing reported" \
	"signals validate: m2g.conf from \$M2G_CONF"
is "$err" "m2g: warning: $SIG/good/minimal.json: generated 600 s ago, more than SignalsTTLSec=300: the plugins would treat it as stale (SignalsFailSafe=last)" \
	"signals validate: an old feed is valid, with a warning that the plugins would call it stale"
run "$M2G" signals validate --conf "$CONF" "$SIG/bad/unknown-rack.json"
is "$rc:$err" "1:m2g: $SIG/bad/unknown-rack.json: power.racks.nvl99: no NVLink domain nvl99 in m2g.conf" \
	"signals validate: an unknown rack names the JSON path, exit 1"
run "$M2G" signals validate --conf "$CONF" "$SIG/bad/future.json"
ok "[[ $rc == 1 && \$(cat $T/err) == *'generated_at: 2999-01-01T00:00:00Z is '*'s in the future'*'clock skew'* ]]" \
	"signals validate: generated_at in the future is clock skew"
run "$M2G" signals validate --conf "$CONF" "$T/absent.json"
is "$rc:$err" "1:m2g: $T/absent.json: cannot open: No such file or directory" "signals validate: a missing feed, exit 1"
run "$M2G" signals validate --conf "$CONF"
is "$rc" 2 "signals validate: no FILE is a usage error (exit 2)"

run "$M2G" signals show --conf "$CONF" --file "$SRC/etc/signals.example.json" --at 2026-11-29T21:00:12Z
is "$rc:$(sed -n '1,5p;7p;17,19p' <<<"$out")" "0:from:      $SRC/etc/signals.example.json as read now by this command, not the plugin's belief (--file given)
state:     fresh
detail:    fresh: generated 2026-11-29T21:00:00Z (12 s ago) by bms-agent on mgmt01
fail-safe: not in effect
POWER (kW)           BUDGET  EFFECTIVE       DRAW   HEADROOM
row row1              560.0      560.0      300.0      260.0
events:    2 active or upcoming
  active    dr-2026-11-29-1  site -25%  2026-11-29T21:00:00Z .. 2026-11-29T23:00:00Z (ends in 119 min)
  upcoming  dr-2026-11-30-row2  row:row2 -120 kW  2026-11-30T16:00:00Z .. 2026-11-30T18:00:00Z (starts in 18 h 59 min)" \
	"signals show --file: state, budgets after events, events; says it is the file, not the plugin's belief"
is "$(sed -n 6p <<<"$out")" "site                 1200.0      900.0      800.0      100.0" \
	"signals show: a 25% site event takes the 1200 kW budget to 900 kW"
run "$M2G" signals show --conf "$CONF" --file "$SRC/etc/signals.example.json" --at 2026-11-29T21:10:00Z --json
ok "[[ $rc == 0 && \$(cat $T/out) == '{\"state\":\"stale\",\"failsafe\":true,\"hold\":false,\"age_s\":600,'*'\"from\":\"file\",\"path\":\"$SRC/etc/signals.example.json\"}' ]]" \
	"signals show --json: one object; stale after the TTL"
run "$M2G" signals show --conf "$CONF" --file "$SIG/bad/curtail-both.json"
is "$rc:$(sed -n 2p <<<"$out")" "0:state:     corrupt" "signals show: a broken feed is corrupt"
ok "[[ \$(sed -n 3p $T/out) == 'detail:    corrupt since '*': $SIG/bad/curtail-both.json: events[0]: more than one of curtail_pct, curtail_kw and limit_kw; give exactly one; no good snapshot yet; fail-safe last: no snapshot to use, no power policy' ]]" \
	"signals show: a corrupt feed shows the parse error and the fail-safe"
run "$M2G" signals show --conf "$CONF"
is "$rc:$(head -2 <<<"$out")" "0:from:      no feed: no SignalsFile= in $CONF and no --file
state:     not_configured" "signals show: nothing configured says so"
run "$M2G" signals show --conf "$CONF" --file "$SIG/good/full.json" --status "$T/status.json"
is "$rc" 2 "signals show: --status and --file exclude each other (exit 2)"

# What job_submit/m2g believes: its status file (SignalsStatusFile=) holds the
# state and the last good snapshot; show recomputes staleness for --at.
cat >"$T/status.json" <<EOF
{
  "schema": "m2g.signals-status/v1",
  "file": "/run/m2g/signals.json",
  "state": "corrupt",
  "detail": "(recomputed by the reader)",
  "checked_at": "2026-11-29T21:00:20Z",
  "failsafe": "defer",
  "ttl_sec": 300,
  "error": "/run/m2g/signals.json: not valid JSON: unexpected end of input (a truncated file?)",
  "corrupt_since": "2026-11-29T21:00:20Z",
  "snapshot": $(cat "$SIG/good/minimal.json")
}
EOF
run "$M2G" signals show --conf "$CONF" --status "$T/status.json" --at 2026-11-29T21:00:30Z
is "$rc:$(sed -n 2,4p <<<"$out")" "0:state:     corrupt
detail:    corrupt since 2026-11-29T21:00:20Z: /run/m2g/signals.json: not valid JSON: unexpected end of input (a truncated file?); last good snapshot is 330 s old (TTL 300 s); fail-safe defer: deferrable work waits
fail-safe: in effect, deferrable work waits" \
	"signals show --status: the plugin's belief, staleness recomputed (corrupt, last good too old: defer holds)"
ok "[[ \$(head -1 $T/out) == 'from:      status file $T/status.json: what job_submit/m2g believes (written '*')' ]]" \
	"signals show --status: says it is the plugin's belief"
run "$M2G" signals show --conf "$CONF" --status "$T/absent-status.json"
is "$rc:$err" "1:m2g: $T/absent-status.json: cannot open: No such file or directory" "signals show: an unreadable --status is an error"

{ cat "$CONF"; echo "SignalsFile=$SRC/etc/signals.example.json"; echo "SignalsStatusFile=$T/status.json"; echo "SignalsTTLSec=900"; } >"$T/signals.conf"
run "$M2G" signals show --conf "$T/signals.conf" --at 2026-11-29T21:00:30Z
is "$rc:$(sed -n 2p <<<"$out")" "0:state:     corrupt" "signals show: SignalsStatusFile= of m2g.conf, when readable, is the default"
sed -i "s|^SignalsStatusFile=.*|SignalsStatusFile=$T/absent-status.json|" "$T/signals.conf"
run "$M2G" signals show --conf "$T/signals.conf" --at 2026-11-29T21:10:00Z
is "$rc:$(sed -n 1,3p <<<"$out")" "0:from:      $SRC/etc/signals.example.json as read now by this command, not the plugin's belief (status file $T/absent-status.json not readable)
state:     fresh
detail:    fresh: generated 2026-11-29T21:00:00Z (600 s ago) by bms-agent on mgmt01" \
	"signals show: else SignalsFile= of m2g.conf, read now, judged with its SignalsTTLSec="

done_testing
