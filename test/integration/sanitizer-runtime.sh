#!/usr/bin/env bash
# contrib/lib/sanitizers.sh finds the runtime that Slurm's programs must
# preload for sanitizer-built plugins: from the compiler that built them
# (clang-N: libclang_rt.asan; GCC: libasan and libubsan), nothing for a
# plain plugin, and the same answer however long nm's output is (a
# `nm | grep -q` under pipefail once took an ASan plugin for a plain one when
# grep's early exit killed nm). Builds small shared objects with gcc and
# clang; needs no testbed.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=contrib/lib/sanitizers.sh
. "$SRC/contrib/lib/sanitizers.sh"
T=$TB_TMP

# The compilers and nm run without a sanitizer build's preload; the
# functions run under pipefail, as in m2g-testbed and lib.sh.
cc_so() { # COMPILER OUT FLAGS... < source
	local cc=$1 out=$2
	shift 2
	tb_unsanitized "$cc" -x c -shared -fPIC -o "$out" "$@" - 2>"$T/cc.err"
}
preload() { tb_unsanitized bash -c 'set -o pipefail; . "$1"; shift; m2g_sanitizer_preload "$@"' _ "$SRC/contrib/lib/sanitizers.sh" "$@"; }
options() { tb_unsanitized bash -c 'set -o pipefail; . "$1"; shift; m2g_sanitizer_options "$@"' _ "$SRC/contrib/lib/sanitizers.sh" "$@"; }

echo 'int m2g_probe(int x) { int a[4] = {0}; return a[x & 3]; }' >"$T/probe.c"

# A plain plugin needs nothing.
cc_so gcc "$T/plain.so" -O1 <"$T/probe.c"
got=$(preload "$T/plain.so") && st=0 || st=$?
is "$st:$got" "1:" "a plugin built without sanitizers needs no preload"
is "$(preload "$T/missing.so" "$T/plain.so" 2>&1; echo "status $?")" "status 1" \
	"a missing file is passed over"

# GCC: its libasan and libubsan, and no symbolizer option.
if cc_so gcc "$T/gcc-asan.so" -fsanitize=address,undefined <"$T/probe.c"; then
	want="$(readlink -f "$(gcc -print-file-name=libasan.so)"):$(readlink -f "$(gcc -print-file-name=libubsan.so)")"
	is "$(preload "$T/plain.so" "$T/gcc-asan.so")" "$want" "GCC-built: GCC's libasan:libubsan, after a plain plugin"
	opts=$(options "$T/log" "$want")
	ok "[[ '$opts' != *external_symbolizer_path* ]]" "GCC's runtime: no symbolizer option"
	ok "[[ '$opts' == *log_path=$T/log/asan* && '$opts' == *log_path=$T/log/ubsan* ]]" "reports go to the directory given"
else
	skip "GCC-built: GCC's libasan:libubsan" "gcc cannot build with ASan: $(head -n 1 "$T/cc.err")"
	skip "GCC's runtime: no symbolizer option"
	skip "reports go to the directory given"
fi

# clang (contrib/m2g-bootstrap installs Debian's clang and its runtime): its
# own libclang_rt.asan, which carries UBSan too, and its llvm-symbolizer.
CLANG=${M2G_FUZZ_CXX:-clang++}
CLANG=${CLANG%++}
if command -v "$CLANG" >/dev/null && cc_so "$CLANG" "$T/clang-asan.so" -fsanitize=address,undefined <"$T/probe.c"; then
	major=$(tb_unsanitized "$CLANG" -dumpversion | cut -d. -f1)
	want=$(readlink -f "$(tb_unsanitized "$CLANG" -print-file-name="libclang_rt.asan-$(uname -m).so")")
	is "$(preload "$T/plain.so" "$T/clang-asan.so")" "$want" "clang-built: clang $major's libclang_rt.asan"
	opts=$(options "$T/log" "$want")
	sym=/usr/lib/llvm-$major/bin/llvm-symbolizer
	if [[ $want == /usr/lib/llvm-$major/* && -x $sym ]]; then
		ok "[[ '$opts' == *external_symbolizer_path=$sym* ]]" "clang $major's runtime: its own llvm-symbolizer"
	else
		ok "[[ '$opts' != *external_symbolizer_path* ]]" "clang $major's runtime: no symbolizer option (llvm-$major has none here)"
	fi

	# Thousands of undefined symbols: nm writes far more than a pipe holds,
	# so a reader that stops at the first match would cut it off.
	{
		for i in $(seq 4000); do echo "extern void zz_m2g_undefined_symbol_$i(void);"; done
		echo 'void m2g_calls(void) {'
		for i in $(seq 4000); do echo "zz_m2g_undefined_symbol_$i();"; done
		echo '}'
	} >"$T/many.c"
	cc_so "$CLANG" "$T/many.so" -fsanitize=address -O0 <"$T/many.c"
	bytes=$(nm -D --undefined-only "$T/many.so" | wc -c)
	found=0
	for _ in $(seq 20); do
		[[ $(preload "$T/many.so") == "$want" ]] && found=$((found + 1))
	done
	is "$found" 20 "an ASan plugin with $bytes bytes of nm output is found every time (20 of 20)"
else
	for d in "clang-built: clang's libclang_rt.asan" "clang's runtime: its llvm-symbolizer" "a plugin with long nm output"; do
		skip "$d" "no clang with ASan (contrib/m2g-bootstrap installs clang and libclang-rt-14-dev)"
	done
fi

# A clang plugin whose runtime is not installed: a clear error.
if [[ -e $T/clang-asan.so ]]; then
	cp "$T/clang-asan.so" "$T/clang999.so"
	tb_unsanitized objcopy --remove-section .comment "$T/clang999.so"
	echo -n "Debian clang version 999.0.0" >"$T/comment"
	tb_unsanitized objcopy --add-section .comment="$T/comment" "$T/clang999.so"
	err=$(preload "$T/clang999.so" 2>&1) && st=0 || st=$?
	[[ $st == 1 && $err == *"install libclang-rt-999-dev"* ]] && st=0 || diag "status $st: $err"
	ok "$st" "a clang plugin without its runtime installed: an error naming the package"
else
	skip "a clang plugin without its runtime installed: an error naming the package" "no clang-built plugin"
fi

done_testing
