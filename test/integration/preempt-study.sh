#!/usr/bin/env bash
# preempt-study.sh — the short preemption study (contrib/m2g-preempt-study
# --quick --with-nospank): one run of each configuration (stock cons_tres +
# topology/block, every m2g plugin, m2g without any SPANK plugin) on fresh
# 2-rack Slurm 26.05 testbeds, the same seeded victims in each, two QOS-high
# preemptors (18 nodes, then 9). The figures are measurements
# (doc/results/preempt.md has the 5-run study); this suite tests the chain:
# every preemptor starts in one NVLink domain, m2g wastes no eviction and
# loses no more work than block where the victims allow it, slurmctld's log
# gave every split the page reports, and the page compares like for like.
# The testbeds run on base 62000 (above the ephemeral port range) and are
# stopped when anything fails. Output: TAP. Run as root, on a 26.05 build.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=${M2G_SRCDIR:-$TB_LIB_DIR/../..}
BUILD=${M2G_BUILDDIR:?}
BASE=62000

if [[ $(tb_slurm_release) != 26.05 ]]; then
	plan 1
	skip "the study runs Slurm 26.05's topology/block" "this build is for Slurm $(tb_slurm_release)"
	exit 0
fi
plan 12

W=$TB_TMP/study
stop_study_testbed() { "$M2G_TESTBED" down --remove --base "$BASE" >/dev/null 2>&1 || true; }
TB_CLEANUP_FUNCS+=(stop_study_testbed)

t0=$SECONDS
rc=0
"$SRC/contrib/m2g-preempt-study" --quick --with-nospank --work "$W" --base "$BASE" --build "$BUILD" \
	>"$TB_TMP/log" 2>&1 &
study=$!
TB_CLEANUP_PIDS+=("$study")
wait "$study" || rc=$?
diag "m2g-preempt-study --quick took $((SECONDS - t0)) s"
is "$rc" 0 "m2g-preempt-study --quick exits 0: every configuration's run completed and the page was written"
if ((rc != 0)); then
	while read -r line; do diag "  $line"; done < <(tail -n 25 "$TB_TMP/log")
fi
page=$W/preempt.md
ok "[[ -s $page ]]" "the page is written into the work directory"
ok "grep -q 'a --quick trial, not a results page' '$page'" "the page says it is a trial"

# results.tsv: config run size job state wait racks evicted lost wasted victims work ...
R=$W/results.tsv
rows() { awk -F'\t' -v c="$1" '$1 == c' "$R"; }
for c in block m2g m2g-nospank; do
	is "$(rows "$c" | awk -F'\t' '$5 == "RUNNING" && $7 == 1' | wc -l)" 2 \
		"$c: both preemptors (18 and 9 nodes) run, each in one NVLink domain"
done
is "$(awk -F'\t' '$1 != "block" && $10 != 0' "$R" | wc -l)" 0 \
	"m2g, with and without spank_m2g: no wasted eviction (every victim gave the preemptor nodes)"
# Column 21: the least work any choice of victims in one domain could lose
# at the workload clock (column 12): m2g's choice is that least.
is "$(awk -F'\t' '$1 != "block" && $3 == 18 && $21 != "-" && $12 > $21 + 0.5' "$R" | wc -l)" 0 \
	"18 nodes: m2g clears the rack whose jobs lose the least work (the workload clock)"
is "$(awk -F'\t' '$1 == "m2g" && $22 == "-"' "$R" | wc -l)" 0 \
	"slurmctld.log gave each m2g preemptor's first eviction to first requeue"
ok "grep -q '^| 18 nodes | m2g-nospank | 1 of 1 | 1 of 1 |' '$page'" \
	"the page's summary has the configuration without SPANK"
ok "grep -q '^- 18-node preemptor, m2g, like for like ' '$page'" \
	"the page compares m2g with block like for like (same path, as many jobs evicted)"
ok "grep -q \"^- 18-node preemptor, spank_m2g's share (m2g against m2g-nospank, 1 run)\" '$page'" \
	"the page gives spank_m2g's share of the time to allocation"
