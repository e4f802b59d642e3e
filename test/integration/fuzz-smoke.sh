#!/usr/bin/env bash
# The libFuzzer harnesses (test/fuzz/) build and run: contrib/m2g-fuzz --smoke
# compiles the core with clang++, ASan and UBSan and fuzzes every target
# briefly (20000 executions or 15 s each) from its seed corpus. One ok per
# target: it ran and found nothing (no crash, sanitizer report, escaped
# exception other than m2g::Error, hang or memory blow-up). The long runs
# are by hand (doc/results/fuzzing.md). Starts no Slurm daemon.
# Needs clang and libclang-rt-14-dev (contrib/m2g-bootstrap); skips without.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
FUZZ=$SRC/contrib/m2g-fuzz
TARGETS=(conf signals recipes options ibnet bridge)
export M2G_BUILDDIR=${M2G_BUILDDIR:-$SRC/build}
OUT=$M2G_BUILDDIR/fuzz

if ! command -v "${M2G_FUZZ_CXX:-clang++}" >/dev/null; then
	for t in "${TARGETS[@]}"; do skip "fuzz_$t" "no clang++ (contrib/m2g-bootstrap installs clang)"; done
	done_testing
	exit 0
fi

start=$(date +%s)
rc=0
# The fuzzers link clang's own ASan runtime: no GCC libasan preload.
tb_unsanitized "$FUZZ" --smoke --jobs 2 >"$TB_TMP/out" 2>"$TB_TMP/err" || rc=$?
diag "contrib/m2g-fuzz --smoke: exit $rc in $(($(date +%s) - start)) s"
if ((rc == 2)); then
	while IFS= read -r l; do diag "  $l"; done <"$TB_TMP/err"
fi
grep '^m2g-fuzz: built' "$TB_TMP/out" | while IFS= read -r l; do diag "$l"; done || true
for t in "${TARGETS[@]}"; do
	line=$(grep -E "^m2g-fuzz: $t +" "$TB_TMP/out" || true)
	[[ -n $line ]] && diag "${line#m2g-fuzz: }"
	status=1
	[[ $line =~ ^m2g-fuzz:\ $t\ +ok\  ]] && status=0
	ok "$status" "fuzz_$t: smoke run, no findings"
	if ((status != 0)); then
		diag "  libFuzzer log: $OUT/logs/$t.log; inputs: $OUT/findings/$t/"
		grep -E -A 8 '^==[0-9]+==ERROR|runtime error|m2g-fuzz: property|terminate called|^SUMMARY' "$OUT/logs/$t.log" 2>/dev/null |
			head -n 20 | while IFS= read -r l; do diag "  $l"; done
	fi
done
is "$rc" 0 "contrib/m2g-fuzz --smoke exits 0"
done_testing
