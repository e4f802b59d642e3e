#!/usr/bin/env bash
# forecast-testbed.sh — the short testbed backtest of `m2g forecast`
# (contrib/m2g-forecast-testbed --quick): 30 Philly-derived jobs submitted
# with plain sbatch on a fresh Slurm 26.05 testbed, and every 5 s while
# they wait `squeue --start` and `m2g forecast --json --history 1` side by
# side, scored against sacct's starts. The figures are measurements
# (doc/results/forecast-testbed.md has the full study); this suite tests the
# chain: every job completes, the forecast ran from the live state and
# learnt from accounting, it forecast the jobs squeue showed pending, and
# the page judges both goals. The testbed runs on base 64000 and is stopped
# when anything fails. Output: TAP. Run as root, on a 26.05 build.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=${M2G_SRCDIR:-$TB_LIB_DIR/../..}
BUILD=${M2G_BUILDDIR:?}
BASE=64000

if [[ $(tb_slurm_release) != 26.05 ]]; then
	plan 1
	skip "the forecast backtest runs the 26.05 testbed (m2g forecast's libslurm)" "this build is for Slurm $(tb_slurm_release)"
	exit 0
fi
plan 9

W=$TB_TMP/fct
stop_fct_testbed() { "$M2G_TESTBED" down --remove --base "$BASE" >/dev/null 2>&1 || true; }
TB_CLEANUP_FUNCS+=(stop_fct_testbed)

t0=$SECONDS
rc=0
"$SRC/contrib/m2g-forecast-testbed" --quick --work "$W" --base "$BASE" --build-26.05 "$BUILD" >"$TB_TMP/log" 2>&1 &
fct=$!
TB_CLEANUP_PIDS+=("$fct")
wait "$fct" || rc=$?
diag "m2g-forecast-testbed --quick took $((SECONDS - t0)) s"
is "$rc" 0 "m2g-forecast-testbed --quick exits 0: the run completed, every forecast answered, the page was written"
if ((rc != 0)); then
	while read -r line; do diag "  $line"; done < <(tail -n 25 "$TB_TMP/log")
fi
page=$W/forecast-testbed.md
ok "[[ -s $page ]]" "the page is written into the work directory (--quick writes no results page)"
ok "grep -q 'a --quick trial, not a results page' '$page'" "the page says it is a trial"
ok "grep -q 'run 1: 30 of 30 jobs completed' '$TB_TMP/log'" "all 30 jobs were submitted and completed"

# The raw run: snapshots, what each side predicted, accounting's starts.
facts=$(python3 - "$W/run1/run.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
snaps = d["snaps"]
pend = sum(len(s["slurm"]) for s in snaps)
seen = sum(1 for s in snaps for j in s["slurm"] if j in s["m2g"])
waited = sum(1 for v in d["acct"].values() if v["start"] > v["submit"])
hist = max((s["runtime_history"] for s in snaps), default=0)
print(len(snaps), pend, seen, waited, hist)
PY
) || facts="0 0 0 0 0"
read -r nsnap npend nseen nwaited nhist <<<"$facts"
diag "snapshots $nsnap, pending jobs in squeue $npend (in m2g's forecast $nseen), jobs that waited $nwaited, most jobs learnt from $nhist"
ok "(( nsnap >= 2 && nwaited >= 3 ))" "jobs waited and were forecast while they did ($nsnap snapshots, $nwaited jobs waited)"
ok "(( npend > 0 && nseen * 10 >= npend * 9 ))" "m2g forecast the pending jobs squeue showed ($nseen of $npend)"
ok "(( nhist >= 1 ))" "--history read the jobs that ended from slurmdbd ($nhist)"
is "$(grep -c '^| m2g\(-p50\)\? | .* | \(yes\|\*\*no\*\*\) | .* | \(yes\|\*\*no\*\*\) |$' "$page")" 2 \
	"the page judges both goals for m2g and m2g-p50"
ok "! '$M2G_TESTBED' status --base $BASE >/dev/null 2>&1" "no testbed left running on base $BASE"
