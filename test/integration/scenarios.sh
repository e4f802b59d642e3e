#!/usr/bin/env bash
# contrib/m2g-scenarios --quick: the scenario script runs the real
# simulator on the Philly trace, writes the results page with its tables,
# commands and goals, and draws PNG charts (pycairo). The full run
# (contrib/m2g-scenarios) writes doc/results/simulation.md the same way.
# Also checks what `m2g simulate` says about bad input. No Slurm daemon.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${M2G_BUILDDIR:-$SRC}
M2G=$BUILD/src/cli/m2g
DATA=${M2G_DATA:-$(cd "$SRC/.." && pwd)/shared/data}
T=$TB_TMP

# --- results pages: one check, contrib/lib/results.sh -----------------------------
# Every contrib script that writes doc/results/ sources it and refuses to start
# from a dirty tree.
for w in m2g-bench m2g-bench-admission m2g-bench-forecast m2g-bench-spank m2g-bench-testbed m2g-calibrate m2g-compare m2g-forecast-testbed m2g-scenarios; do
	check "contrib/$w checks the tree with contrib/lib/results.sh" \
		grep -q 'm2g_results_begin' "$SRC/contrib/$w"
done
# The helper on a scratch repository: a clean tree gives the full commit; a
# modified or untracked file is refused, naming it; doc/results/ and an
# untracked configured build tree do not count; HEAD moving during a run
# stops the page.
R=$T/repo
mkdir -p "$R/contrib/lib" "$R/doc/results"
cp "$SRC/contrib/lib/results.sh" "$R/contrib/lib/"
echo a >"$R/a.c"
git -C "$R" init -q && git -C "$R" add -A &&
	git -C "$R" -c user.name=t -c user.email=t@t commit -qm init
results() { (cd "$R" && . contrib/lib/results.sh && "$@"); }
got=$(results bash -c '. contrib/lib/results.sh; m2g_results_begin t "$PWD" && echo "$M2G_RESULTS_COMMIT"' 2>&1)
is "$got" "$(git -C "$R" rev-parse HEAD)" "results.sh: a clean tree: M2G_RESULTS_COMMIT is git rev-parse HEAD (40 digits)"
echo page >"$R/doc/results/p.md"
mkdir "$R/build-x" && : >"$R/build-x/config.status"
check "results.sh: doc/results/ and an untracked configured build tree do not make it dirty" results m2g_results_begin t "$R"
echo b >>"$R/a.c"
rc=0; out=$(results m2g_results_begin t "$R" 2>&1) || rc=$?
[[ $rc == 1 && $out == *'refusing to write a results page from a dirty source tree'*' M a.c'* ]] && r=0 || r=1
ok "$r" "results.sh: a modified file is refused, and named"
git -C "$R" checkout -q a.c
echo n >"$R/new.c"
rc=0; out=$(results m2g_results_begin t "$R" 2>&1) || rc=$?
[[ $rc == 1 && $out == *'?? new.c'* ]] && r=0 || r=1
ok "$r" "results.sh: an untracked source file is refused, and named"
rm "$R/new.c"
rc=0; out=$(results bash -c '. contrib/lib/results.sh; m2g_results_begin t "$PWD" &&
	git -c user.name=t -c user.email=t@t commit -q --allow-empty -m later && m2g_results_end t "$PWD"' 2>&1) || rc=$?
[[ $rc == 1 && $out == *'HEAD moved from'* ]] && r=0 || r=1
ok "$r" "results.sh: HEAD moving during the run stops the page"
rc=0; out=$(cd "$T" && . "$SRC/contrib/lib/results.sh" && m2g_results_begin t "$T" 2>&1) || rc=$?
[[ $rc == 1 && $out == *'not a git checkout'* ]] && r=0 || r=1
ok "$r" "results.sh: outside a git checkout, no page"

if [[ ! -r $DATA/philly_first20k.csv ]]; then
	skip "scenarios" "no ../shared/data (M2G_DATA) here"
	exit 0
fi

rc=0
M2G=$M2G M2G_DATA=$DATA M2G_RESULTS=$T/out "$SRC/contrib/m2g-scenarios" --quick >"$T/log" 2>&1 || rc=$?
is "$rc" 0 "m2g-scenarios --quick exits 0"
[[ $rc == 0 ]] || diag "$(tail -20 "$T/log")"
md=$T/out/simulation.md
ok "[[ -s $md ]]" "it writes simulation.md"
ok "grep -Eq '^- commit: ([0-9a-f]{7,}|unknown \(not a git checkout\))' $md" "the page names the commit"
ok "grep -q '^m2g simulate --topology test/fixtures/nvl72-8rack.conf --trace ../shared/data/philly_first20k.csv --policy tree' $md" \
	"the page gives the exact commands, with paths as a reader types them"
for p in m2g block block-seg tree-nvl tree firstfit; do
	ok "grep -Eq '^\| $p \| 0\.80 \| [0-9.]+% \| [0-9.]+ \|' $md" "placement row for $p at load 0.80"
done
ok "grep -q '^| 0 s over budget after 30 s (worst seed) |' $md" "the goals table reports the DR response goal"
ok "grep -q '^| non-deferrable throughput loss < 1%' $md" "and the non-deferrable throughput goal"
ok "grep -q 'dr-25pct-3h' $md" "the DR feed is shown"
# The DR table: with curtailment on, m2g is under the budget 30 s into the
# event and stays there; without it (off), running jobs keep their power.
row() { awk -F'|' -v m="$1" '$2 ~ /^ m2g $/ && $3 == " " m " " { gsub(/ /, ""); print $6, $9 }' "$md" | head -1; }
read -r off_over off_kwh <<<"$(row off)"
read -r enf_over enf_kwh <<<"$(row enforce)"
diag "DR event: over budget after 30 s: off ${off_over:-?} s, enforce ${enf_over:-?} s; energy in the event: off ${off_kwh:-?}, enforce ${enf_kwh:-?} kWh"
is "${enf_over:-none}" 0 "with CurtailMode=enforce m2g is 0 s over the event's budget after 30 s"
# Whether `off` goes over depends on where the event lands and on what
# admission's pre-event ramp already held back (seed 1 with the node
# reservation: it does not); curtailment never makes the event draw more.
ok "awk 'BEGIN { exit !(${enf_kwh:-1e9} + 0 <= ${off_kwh:-0} + 0 && ${off_over:--1} + 0 >= 0) }'" \
	"curtailment draws no more energy in the event than off"

# The placement study (issue 20) in small: every policy on Philly x8 and a
# synthetic NVL72 mix, load 0.8, two seeds, with the spread and the goals.
pmd=$T/out/placement.md
ok "[[ -s $pmd ]]" "it writes placement.md"
for p in m2g block block-seg tree-nvl tree firstfit; do
	ok "grep -Eq '^\| (\*\*)?$p(\*\*)? \| 0\.80 \| [0-9.]+( ± [0-9.]+ \([0-9.]+&ndash;[0-9.]+\))? \|' $pmd" \
		"placement.md has a row for $p with mean (and spread) over the seeds"
done
ok "grep -q '^## synth-nvl72-training on 8 racks' $pmd" "including the synthetic NVL72 mix"
ok "grep -Eq '^\| philly-x8 \| 8 \| (\*\*yes\*\*|no): ' $pmd" "and says plainly which goals are met"
# EASY against Slurm's backfill plan (issue 28) in small: Philly x8, load
# 0.8, two seeds, both queues per policy, and how far apart they are.
bmd=$T/out/backfill.md
ok "[[ -s $bmd ]]" "it writes backfill.md"
for p in m2g block block-seg tree-nvl; do
	ok "grep -Eq '^\| philly-x8 \| 0\.80 \| (\*\*)?$p(\*\*)? \| [0-9.]+.* \| [0-9.]+.* \| [0-9.]+ \|' $bmd" \
		"backfill.md has easy's and slurm's mean delay for $p, and their ratio"
done
ok "grep -q '^Mean delay under Slurm.s backfill over EASY.s: from ' $bmd" "and says the range of the ratio"
ok "grep -q -- '--backfill slurm' $bmd" "with the exact commands"
# The forecast's backtest (issue 30) in small: KTH, 12 hourly forecasts,
# two seeds; m2g, Slurm's estimate and the naive one scored side by side,
# and the goals said plainly.
fmd=$T/out/forecast-backtest.md
ok "[[ -s $fmd ]]" "it writes forecast-backtest.md"
for meth in m2g m2g-p50 slurm naive; do
	ok "grep -Eq '^\| $meth \| [0-9]+.* \| [0-9]+.* \| [0-9.]+%.* \| [0-9.]+%.* \|' $fmd" \
		"forecast-backtest.md scores $meth's start (median, p90, within 1 and 10 min)"
done
ok "grep -Eq '^\| measured, 1 h ahead \| [0-9.]+%' $fmd" "and the site power forecast 1 h ahead"
ok "grep -Eq '^\| swf-kth \| m2g-p50: within 10 min >= 2x Slurm.s \| .* \| (\*\*yes\*\*|no) \|' $fmd" \
	"and says whether each goal is met"
ok "grep -q -- '^m2g backtest --topology test/fixtures/nvl72-8rack.conf --trace ../shared/data/swf/KTH' $fmd" \
	"with the exact commands"
# Preemption by QOS (issue 29) in small: the synthetic NVL72 mix, two seeds,
# block against m2g with and without checkpoints, and block's victims on
# m2g's own state beside m2g's.
qmd=$T/out/preempt-sim.md
ok "[[ -s $qmd ]]" "it writes preempt-sim.md"
for p in block '\*\*m2g\*\*' m2g-untold; do
	ok "grep -Eq '^\| $p( \| [0-9][^|]*){11} \|$' $qmd" "preempt-sim.md has a row for $p"
done
ok "grep -Eq '^\| m2g \| [0-9]+ \| [0-9]+ / [0-9]+ \| [0-9]+ / [0-9]+ \| [0-9]+ / [0-9]+ \(\*\*[0-9.]+x\*\*\)' $qmd" \
	"and the paired comparison on the same state"
ok "grep -Eq '^\| synth-nvl72-training \| 30 min \| [0-9.]+% \| .* \| (\*\*yes\*\*|no.*) \|$' $qmd" \
	"and says whether the goals are met"
ok "grep -q -- '--preempt-share 5 --checkpoint-interval 1800' $qmd" "with the exact commands"
run_q() { "$M2G" simulate --conf "$SRC/test/fixtures/sim/tiny.conf" --trace "$SRC/test/fixtures/sim/placement.csv" "$@"; }
rc=0
run_q --preempt-share 101 >"$T/o" 2>"$T/e" || rc=$?
ok "[[ $rc != 0 ]] && grep -q 'preempt-share' $T/e" "--preempt-share above 100 fails: $(head -1 "$T/e")"

for png in sim-placement-8rack.png sim-dr-25pct-3h.png; do
	ok "[[ \$(head -c 8 $T/out/$png | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]]" "$png is a PNG"
	w=$(od -An -tu1 -j16 -N8 "$T/out/$png" | awk '{print $3*256+$4 "x" $7*256+$8}')
	is "$w" "1600x900" "$png is 1600x900"
done

# Bad input says what is wrong and what is accepted.
run() { rc=0; "$@" >"$T/o" 2>"$T/e" || rc=$?; }
run "$M2G" simulate --conf "$SRC/test/fixtures/sim/tiny.conf" --trace "$SRC/test/fixtures/sim/placement.csv" \
	--power-cdf "$DATA/acme2023_power_thermal_cdf.csv" --power-cluster nope
is "$rc" 1 "an unknown power cluster fails"
ok "grep -q \"no gpu_power rows for cluster 'nope'; clusters with them: kalos, seren\" $T/e" "and names the clusters there are"
echo '{"schema":"m2g.signals/v1","generated_at":1767225600,"health":{"down":"zz9"}}' >"$T/bad.json"
run "$M2G" simulate --conf "$SRC/test/fixtures/sim/tiny.conf" --trace "$SRC/test/fixtures/sim/placement.csv" \
	--signals-timeline "$T/bad.json"
is "$rc" 1 "a timeline naming an unknown node fails"
ok "grep -q 'zz9' $T/e" "and names it: $(head -1 "$T/e")"
run "$M2G" simulate --conf "$SRC/test/fixtures/sim/tiny.conf" --trace "$SRC/test/fixtures/sim/placement.csv" \
	--class nosuch
is "$rc" 1 "an unknown class fails"
ok "grep -q 'training' $T/e" "and lists the classes: $(head -1 "$T/e")"
run "$M2G" simulate --conf "$SRC/test/fixtures/sim/tiny.conf" --trace "$SRC/test/fixtures/sim/placement.csv" \
	--job-log "$T/jobs.csv"
is "$rc" 0 "--job-log runs"
is "$(cat "$T/jobs.csv")" 'id,gpus,nodes,submit,eligible,start,end,domains,domain_lb,leaves,w_gpu,admission,nodelist
a,4,1,0,0,0,100,1,1,1,413,,"n1"
b,8,2,0,0,0,100,1,1,1,413,,"n[3-4]"
c,12,3,0,0,0,100,2,2,1,413,,"n[5-7]"' "and writes one line per job with its nodes"

# --- contrib/m2g-bench-forecast, short: the forecast bench runs and reports ---------
# Its seconds and a digest of what the forecast says; one thread or one per
# core, the forecast is the same (ForecastOptions::threads). No time asserted.
BENCH=$BUILD/bench/m2g-bench-forecast
if [[ -x $BENCH ]]; then
	out=$("$BENCH" --benchmark_filter='BM_Forecast/8/1000|BM_ForecastThreads/8/1000' 2>&1)
	one=$(sed -n 's|^BM_Forecast/8/1000/.* digest=\([0-9.k]*\).*|\1|p' <<<"$out")
	many=$(sed -n 's|^BM_ForecastThreads/8/1000/.* digest=\([0-9.k]*\).*|\1|p' <<<"$out")
	check "m2g-bench-forecast: a 1,000-pending forecast reports its seconds" grep -q 's_per_forecast=[0-9]' <<<"$out"
	check "m2g-bench-forecast: and a digest of its answers ($one)" test -n "$one"
	is "$many" "$one" "m2g-bench-forecast: the forecast on one thread per core is the one on one thread (digest)"
else
	skip "bench/m2g-bench-forecast not built (make check builds it)"
fi
done_testing
