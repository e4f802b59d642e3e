#!/usr/bin/env bash
# calibrate.sh — the short calibration (contrib/m2g-calibrate --quick): one
# Philly-derived job list of 16 jobs replayed on fresh Slurm 26.05 testbeds
# (stock topology/block, and topology/m2g + select/m2g; contrib/m2g-compare
# --job-list) and through `m2g simulate` with each run's m2g.conf and the
# same time limits. The numbers are measurements (the page reports them
# against issue 28's targets; doc/results/calibration.md has the full
# study); this suite tests that the chain works: every job is submitted at
# its offset, completes, is matched to its simulated twin, and the page says
# per policy what agreed. Block is strict by construction on both sides, so
# its containment must be 100% in both. The series runs with
# --slurm-conf-extra (DebugFlags=Backfill, SlurmctldDebug=verbose), as one
# traces which reservation held a job, and the suite checks that the lines
# reached slurmctld. The testbed runs on base 63000
# (m2g-compare's own port rules) and is stopped by PID when anything fails.
# Output: TAP. Run as root, on a 26.05 build.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=${M2G_SRCDIR:-$TB_LIB_DIR/../..}
BUILD=${M2G_BUILDDIR:?}
BASE=63000

if [[ $(tb_slurm_release) != 26.05 ]]; then
	plan 1
	skip "the calibration runs Slurm 26.05's topology/block" "this build is for Slurm $(tb_slurm_release)"
	exit 0
fi
plan 14

W=$TB_TMP/cal
stop_cal_testbed() { "$M2G_TESTBED" down --remove --base "$BASE" >/dev/null 2>&1 || true; }
TB_CLEANUP_FUNCS+=(stop_cal_testbed)

rc=0
"$SRC/contrib/m2g-compare" --slurm-conf-extra "$TB_TMP/no-such-file" --configs block >"$TB_TMP/usage" 2>&1 || rc=$?
is "$rc" 2 "m2g-compare --slurm-conf-extra with a missing file is a usage error (status 2), before any testbed"
ok "grep -q 'slurm-conf-extra .*no such readable file' '$TB_TMP/usage'" "... and says which file and why"

printf '%s\n' '# trace the backfill plan' DebugFlags=Backfill SlurmctldDebug=verbose >"$TB_TMP/bf.extra"
t0=$SECONDS
rc=0
"$SRC/contrib/m2g-calibrate" --quick --work "$W" --base "$BASE" --slurm-conf-extra "$TB_TMP/bf.extra" \
	--build-26.05 "$BUILD" --build-22.05 "$BUILD" >"$TB_TMP/log" 2>&1 &
cal=$!
TB_CLEANUP_PIDS+=("$cal")
wait "$cal" || rc=$?
diag "m2g-calibrate --quick took $((SECONDS - t0)) s"
is "$rc" 0 "m2g-calibrate --quick exits 0: every testbed run completed and the page was written"
if ((rc != 0)); then
	while read -r line; do diag "  $line"; done < <(tail -n 25 "$TB_TMP/log")
fi
page=$W/calibration.md
ok "[[ -s $page ]]" "the page is written into the work directory (--quick writes no results page)"
ok "grep -q 'a --quick trial, not a results page' '$page'" "the page says it is a trial"
ok "grep -q 'slurm.conf also had .DebugFlags=Backfill; SlurmctldDebug=verbose.' '$page' &&
	grep -q 'BACKFILL: test for JobId=' '$W/testbed-philly/runs/m2g.1/slurmctld.run.log'" \
	"--slurm-conf-extra: the page quotes the lines and slurmctld logged each backfill test"

# One log line per policy and run: "philly POLICY run 1: jobs N, containment SIM/REAL, ..."
line_of() { grep -m1 "m2g-calibrate: philly $1 run 1: " "$TB_TMP/log" || true; }
for c in block m2g; do
	l=$(line_of "$c")
	diag "${l:-no line for $c}"
	is "$(sed -n 's/.* jobs \([0-9]*\),.*/\1/p' <<<"$l")" 16 "$c: all 16 jobs completed on the testbed and were matched to the simulator's"
done
is "$(sed -n 's/.* containment \([0-9.]*\/[0-9.]*\),.*/\1/p' <<<"$(line_of block)")" "100.0/100.0" \
	"block: every job of one domain or less in one domain, in the simulator and on Slurm"
tau=$(sed -n 's/.* tau \([-0-9.]*\),.*/\1/p' <<<"$(line_of m2g)")
ok "awk -v t='$tau' 'BEGIN { exit !(t != \"\" && t >= -1 && t <= 1) }'" "m2g: a Kendall tau-b of start times was measured ($tau)"
is "$(grep -c '^| \(block\|m2g\) | .* | \(yes\|\*\*no\*\*\) |$' "$page")" 8 \
	"the page judges the four targets for each policy"
is "$(grep -c '^| \(block\|m2g\) | containment, sim - testbed | .* | [0-9.]* points ([0-9., -]* s per job) | \(yes\|\*\*no\*\*\) |$' "$page")" 2 \
	"each policy's run was replayed again with Slurm's own time per job, measured from slurmctld's log"
# The job list was replayed at its offsets: the last job was submitted no
# earlier than its offset after the first (sacct's whole seconds).
last_off=$(awk 'END { print $6 }' "$W/jobs-philly.txt")
span=$(awk -F'|' 'NR == FNR { ids[$1] = 1; next } ($1 in ids) { s = $6 + 0; if (!lo || s < lo) lo = s; if (s > hi) hi = s }
	END { print hi - lo }' FS=' ' "$W/testbed-philly/runs/block.1/ids" FS='|' "$W/testbed-philly/runs/block.1/sacct")
ok "(( ${span:-0} >= $last_off - 1 ))" "jobs were submitted at their offsets (last at ${span:-?} s, list says $last_off s)"
ok "! '$M2G_TESTBED' status --base $BASE >/dev/null 2>&1" "no testbed left running on base $BASE"
