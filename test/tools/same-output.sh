#!/usr/bin/env bash
# same-output.sh — whether two builds of m2g answer the same, byte for byte.
#
#   test/tools/same-output.sh M2G_A M2G_B [OUTDIR]
#
# Runs one list of read-only commands with each `m2g` binary and compares
# their outputs: `m2g simulate --json` (every policy, several seeds, loads
# and GPU scales, the job log, on the fixture clusters and the Philly and
# SWF traces of ../shared/data), with a signals timeline and curtailment;
# `m2g place` on every golden placement case; `m2g topology export` in every
# format and `show`/`locate`; `m2g signals show`; `m2g recipe list`. A
# refactor that claims to change nothing must pass this against the commit
# before it (contrib/m2g-same-output builds that commit and calls this).
# Prints one line per command that differs and a summary; exit 0 when every
# output is the same, 1 otherwise, 2 on bad usage.
set -uo pipefail

A=${1:?usage: same-output.sh M2G_A M2G_B [OUTDIR]}
B=${2:?usage: same-output.sh M2G_A M2G_B [OUTDIR]}
OUT=${3:-$(mktemp -d "${TMPDIR:-/tmp}/m2g-same-output.XXXXXX")}
[[ -x $A && -x $B ]] || { echo "same-output.sh: $A and $B must be m2g binaries" >&2; exit 2; }
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DATA=${M2G_DATA:-$(cd "$TOP/.." && pwd)/shared/data}
FIX=$TOP/test/fixtures
mkdir -p "$OUT/a" "$OUT/b" "$OUT/in"

# The inputs the list needs beyond the fixtures: a timeline with a
# demand-response event and budgets, an m2g.conf that curtails.
cat >"$OUT/in/timeline.json" <<'EOF'
{"schema": "m2g.signals/v1", "generated_at": 1767225600,
 "power": {"site": {"budget_kw": 200}},
 "events": [{"id": "dr-a", "start": 1768225600, "end": 1768236400, "curtail_pct": 25, "scope": "site"},
            {"id": "dr-b", "start": 1769225600, "end": 1769261600, "curtail_pct": 30, "scope": "site"}]}
EOF
head -n 601 "$DATA/philly_first20k.csv" >"$OUT/in/philly600.csv"
{
	cat "$FIX/nvl72-8rack.conf"
	printf '%s\n' "CurtailMode=enforce" "CurtailIntervalSec=600" \
		"ClassName=inference Deferrable=no PowerPerGpuW=350 Curtail=cap" \
		"ClassName=training Deferrable=yes PowerPerGpuW=600 Curtail=suspend"
} >"$OUT/in/curtail.conf"

CMDS=()
add() { CMDS+=("$*"); }
PHILLY=$DATA/philly_first20k.csv
SWF=$(ls "$DATA"/swf/*.swf 2>/dev/null | head -n 1)
for p in m2g tree tree-nvl block block-seg firstfit; do
	for seed in 1 2; do
		add simulate --topology "$FIX/nvl72-8rack.conf" --trace "$PHILLY" --policy $p --scale-gpus 8 --load 0.8 --seed $seed --json
	done
	add simulate --topology "$FIX/nvl72-8rack.conf" --trace "$PHILLY" --policy $p --backfill-reservation gpus --scale-gpus 4 --load 0.9 --seed 3 --json
	add simulate --topology "$FIX/nvl72-64rack.conf" --trace "$PHILLY" --policy $p --scale-gpus 16 --load 0.8 --seed 1 --json
	[[ -n $SWF ]] && add simulate --topology "$FIX/nvl72-8rack.conf" --trace "$SWF" --policy $p --load 0.8 --seed 1 --json
	add simulate --topology "$FIX/sim/tiny.conf" --trace "$FIX/sim/placement.csv" --policy $p --json
	add simulate --topology "$FIX/sim/tiny.conf" --trace "$FIX/sim/tiny.swf" --policy $p
done
for t in backfill intent parity; do add simulate --topology "$FIX/sim/tiny.conf" --trace "$FIX/sim/$t.csv" --policy m2g --json; done
# @LOG@: a file of each side's own, appended to its output.
add simulate --topology "$FIX/nvl72-8rack.conf" --trace "$PHILLY" --policy m2g --scale-gpus 8 --load 0.8 --seed 1 \
	--job-log @LOG@
for mode in enforce; do
	add simulate --topology "$OUT/in/curtail.conf" --trace "$OUT/in/philly600.csv" --policy m2g --scale-gpus 8 --load 0.8 --seed 1 \
		--signals-timeline "$OUT/in/timeline.json" --power-cdf "$DATA/acme2023_power_thermal_cdf.csv" \
		--power-cluster seren --class-share inference=20 --json
	add simulate --topology "$OUT/in/curtail.conf" --trace "$OUT/in/philly600.csv" --policy m2g --scale-gpus 8 --load 0.8 --seed 2 \
		--signals-timeline "$OUT/in/timeline.json" --event-notice 600 --actuation-delay 5 --class-share inference=30 \
		--power-log @LOG@
done
add simulate --topology "$OUT/in/curtail.conf" --trace "$OUT/in/philly600.csv" --policy block --scale-gpus 8 --load 0.8 --seed 1 \
	--signals-timeline "$OUT/in/timeline.json" --json
# The golden placement cases (test/fixtures/placement/*.case), as `m2g place`
# runs them: their state goes through a file.
for c in "$FIX"/placement/*.case; do
	b=$(basename "$c" .case)
	topo=$(sed -n 's/^topology: *//p' "$c")
	[[ -n $topo ]] || continue  # topology-slurm: the unit tests import it
	req=$(sed -n 's/^request: *//p' "$c")
	state=$(sed -n 's/^state: *//p' "$c")
	if [[ -n $state ]]; then
		printf '%s\n' "$state" >"$OUT/in/$b.state.json"
		add place --topology "$FIX/$topo" --state "$OUT/in/$b.state.json" --request "$req" --json
	else
		add place --topology "$FIX/$topo" --request "$req"
	fi
done
for f in tree block slurm-yaml kueue kai volcano labels; do
	add topology export --format=$f "$FIX/nvl72-8rack.conf"
done
add topology show "$FIX/nvl72-8rack.conf"
add topology show "$FIX/dgx-h100-pod.conf"
add topology locate "$FIX/nvl72-8rack.conf" 'r0[1-2]n[01-18],r03n01'
add topology validate "$FIX/nvl72-64rack.conf"
add topology import-slurm --gpus-per-node 8 "$DATA/lingjun2023_topology.conf"
for s in "$FIX"/signals/good/*.json; do add signals show --conf "$FIX/nvl72-8rack.conf" --at 2026-11-29T21:00:00Z --file "$s"; done
add recipe list --catalog "$TOP/etc/m2g-recipes.conf.example"

n=0 differ=0
for cmd in "${CMDS[@]}"; do
	n=$((n + 1))
	for d in a b; do
		bin=$A; [[ $d == b ]] && bin=$B
		rm -f "$OUT/$d/$n.log"
		# shellcheck disable=SC2086 # the list is word-split on purpose
		"$bin" ${cmd//@LOG@/$OUT/$d/$n.log} >"$OUT/$d/$n.out" 2>"$OUT/$d/$n.err"
		echo "status $?" >>"$OUT/$d/$n.err"
		[[ -e $OUT/$d/$n.log ]] && cat "$OUT/$d/$n.log" >>"$OUT/$d/$n.out"
	done
	# Wall-clock figures of the simulator are not output in this sense.
	for d in a b; do
		sed -i -E 's/"(wall_s|sim_jobs_per_s)":[-0-9.e+]+/"\1":0/g; s/^(wall|simulated jobs\/s).*$/\1/;
		           s/^speed: .*$/speed: (time)/' "$OUT/$d/$n.out"
	done
	if ! cmp -s "$OUT/a/$n.out" "$OUT/b/$n.out" || ! cmp -s "$OUT/a/$n.err" "$OUT/b/$n.err"; then
		differ=$((differ + 1))
		echo "differs ($n): m2g $cmd"
	fi
done
# The simulator scenarios (contrib/m2g-scenarios --quick: placement and
# demand response with curtailment), their pages without the commit and
# the run time.
n=$((n + 1))
for d in a b; do
	bin=$A; [[ $d == b ]] && bin=$B
	M2G=$bin M2G_DATA=$DATA M2G_RESULTS=$OUT/$d/scenarios "$TOP/contrib/m2g-scenarios" --quick >"$OUT/$d/scenarios.log" 2>&1
	for f in simulation.md placement.md; do
		# The jobs/s column is the last of the placement tables.
		sed -E '/^- commit: /d; /simulations?, [0-9.]+ s of simulator wall time/d; s/[0-9.]+ jobs\/s/(speed)/g;
		        /jobs\/s \|$/,/^$/ s/\| [0-9.]+ \|$/| (speed) |/' "$OUT/$d/scenarios/$f" \
			>"$OUT/$d/scenarios-$f" 2>/dev/null
	done
done
if ! cmp -s "$OUT/a/scenarios-simulation.md" "$OUT/b/scenarios-simulation.md" ||
	! cmp -s "$OUT/a/scenarios-placement.md" "$OUT/b/scenarios-placement.md"; then
	differ=$((differ + 1))
	echo "differs ($n): contrib/m2g-scenarios --quick (simulation.md, placement.md)"
fi
echo "same-output: $((n - differ)) of $n commands answer the same ($OUT)"
((differ == 0))
