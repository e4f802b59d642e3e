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

# m2g place: the engine select/m2g runs, on a described cluster state.
printf '{"busy": "r01n[01-10],r02n[03-12],r03n[05-14],r04n[09-18],r05n07"}\n' >"$T/state.json"
run "$M2G" place --topology "$FIX/nvl72-8rack.conf" --state "$T/state.json" --request nodes=36
is "$rc:$(sed -n 's/^reason: *//p' <<<"$out")" "0:2 NVLink domains (2 whole, lower bound 2) under leaf02" \
	"place: a 36-node job takes two whole domains on a fragmented cluster"
run "$M2G" place --topology "$FIX/nvl72-8rack.conf" --state "$T/state.json" --request gpus=72,topology=strict:nvlink --json
ok "[[ $rc == 0 && \$(cat $T/out) == '{\"ok\":true,\"meets_intent\":true,\"nodes\":\"r06n[01-18]\",\"node_count\":18,'* ]]" \
	"place --json: one object, a 72-GPU job in one whole rack"
printf '{"busy": "r0[1-8]n[01]"}\n' >"$T/full.json"
run "$M2G" place --topology "$FIX/nvl72-8rack.conf" --state "$T/full.json" --request nodes=18,topology=strict
is "$rc:$out" "3:waits: waiting for an NVLink domain with 18 free healthy nodes (best now: nvl01 with 17)" \
	"place: a strict job that would wait exits 3 with the reason"
run "$M2G" place --topology "$FIX/nvl72-8rack.conf" --request cores=4
is "$rc:$err" "1:m2g: request: unknown key 'cores'; accepted: nodes, gpus, segment, topology, fallback, spare (e.g. gpus=72,topology=strict:nvlink)" \
	"place: a bad request names what is accepted"
printf '{"busy": "r09n01"}\n' >"$T/bad-state.json"
run "$M2G" place --topology "$FIX/nvl72-8rack.conf" --state "$T/bad-state.json" --request nodes=1
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
run "$M2G" recipe show --catalog "$RECIPES" llama3-70b-finetune
is "$(tail -1 <<<"$out")" \
	"  expands to    topology=strict:nvlink class=finetune defer=ok model=llama-3.1-70b gpus=16 power_w_per_gpu=950 runtime_s=43200" \
	"recipe show: what the recipe expands to"
run "$M2G" recipe show --catalog "$RECIPES" llama3-8b
ok "[[ $rc == 1 && \$(cat $T/err) == *'no such recipe'*'known: llama3-70b-finetune'* ]]" "recipe show: an unknown name lists the known ones"
printf 'RecipeName=x Gpus=16 TP=8 PP=1 DP=1\n' >"$T/bad-recipes.conf"
run "$M2G" recipe validate "$T/bad-recipes.conf"
is "$rc:$err" "1:m2g: $T/bad-recipes.conf:1: RecipeName=x has Gpus=16 but TP*PP*DP = 8*1*1 = 8" \
	"recipe validate: a broken catalog fails with file:line"

run "$M2G" --version
is "$rc:$out" "0:m2g 0.1.0" "--version"
run "$M2G" topology
ok "[[ $rc == 2 ]]" "a missing subcommand is a usage error (exit 2)"
run "$M2G" topology show --help
ok "[[ $rc == 0 && \$(cat $T/out) == *'node and GPU counts'* ]]" "--help describes the subcommand"

done_testing
