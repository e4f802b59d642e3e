# shellcheck shell=bash
# Sourced by contrib/m2g-testbed and test/integration/lib.sh: what a
# `configure --enable-sanitizers` build (ASan + UBSan) needs at run time.
#
# The plugins are dlopen()ed by Slurm programs that are not built with ASan
# (slurmctld, slurmd, slurmstepd, sbatch, srun, salloc, scontrol, sinfo...:
# every client that reads node information loads select/m2g). ASan refuses to
# run unless its runtime comes first in the link order, so those programs
# need LD_PRELOAD of the libasan (and libubsan) the plugins were linked with.
#
#   m2g_sanitizer_preload SO...   print the runtime(s) to preload and succeed
#                                 when an SO is ASan-built; fail when none is.
#                                 The compiler that built it (its .comment
#                                 section) picks them: clang-N's
#                                 libclang_rt.asan (UBSan included), else GCC's
#                                 libasan:libubsan ($CXX or g++)
#   m2g_sanitizer_options DIR [PRELOAD]  print ASAN_OPTIONS and UBSAN_OPTIONS
#                                 lines (shell-quoted exports) logging to DIR;
#                                 for clang-N's runtime (PRELOAD, default
#                                 $LD_PRELOAD) also its llvm-symbolizer
#   m2g_sanitizer_reports DIR...  print the report files under each DIR
#
# Options, and why:
#   detect_leaks=0      Slurm's daemons and clients free little at exit (and
#                       the testbed KILLs slurmstepd); leak reports would be
#                       Slurm's. Unit tests run with leak detection on.
#   abort_on_error=1    a report ends the process at once, so the test that
#                       caused it fails where it happened.
#   disable_coredump=1  no multi-terabyte core files from the shadow memory.
#   log_path=DIR/asan   reports go to DIR/asan.<pid> (daemons have no
#                       terminal); the tests fail when such a file appears.
#   halt_on_error=1, print_stacktrace=1 (UBSan): fatal, with a stack; the
#                       build also has -fno-sanitize-recover=undefined.
#   suppressions        contrib/lib/sanitizers.supp (findings in Slurm or
#                       system libraries, each one commented).

M2G_SANITIZER_SUPP=${M2G_SANITIZER_SUPP:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/sanitizers.supp}

m2g_sanitizer_preload() {
	local so asan ubsan clang major
	for so in "$@"; do
		[[ -e $so ]] || continue
		# libtool links C++ shared libraries with -nostdlib, so an ASan-built
		# plugin has no NEEDED libasan, only undefined __asan_* symbols
		# (which is why the Slurm program must preload the runtime).
		# (Not `nm | grep -q`: grep's early exit can kill nm with SIGPIPE,
		# and under pipefail an ASan-built plugin then looks plain.)
		grep -qw __asan_init <<<"$(nm -D --undefined-only "$so" 2>/dev/null)" || continue
		# A clang build's .comment names clang (beside GCC's crt files).
		if [[ $(readelf -p .comment "$so" 2>/dev/null) =~ clang\ version\ ([0-9]+) ]]; then
			major=${BASH_REMATCH[1]}
			clang=$(command -v "clang-$major" || echo "/usr/lib/llvm-$major/bin/clang")
			asan=$("$clang" -print-file-name="libclang_rt.asan-$(uname -m).so" 2>/dev/null)
			if [[ ! -e $asan ]]; then
				echo "m2g: $so is built with clang $major's ASan but its runtime libclang_rt.asan-$(uname -m).so is not installed; install libclang-rt-$major-dev" >&2
				return 1
			fi
			readlink -f "$asan"
			return 0
		fi
		asan=$(readlink -f "$(${CXX:-g++} -print-file-name=libasan.so)")
		ubsan=$(readlink -f "$(${CXX:-g++} -print-file-name=libubsan.so)")
		if [[ ! -e $asan ]]; then
			echo "m2g: $so is built with ASan but ${CXX:-g++} -print-file-name finds no libasan.so; install the compiler's libasan" >&2
			return 1
		fi
		echo "$asan${ubsan:+:$ubsan}"
		return 0
	done
	return 1
}

m2g_sanitizer_options() {
	local dir=$1 preload=${2:-${LD_PRELOAD:-}} sym=""
	# Debian's clang-N runtime looks for a plain llvm-symbolizer, which is
	# another release's or none; without one, report stacks have no names.
	if [[ $preload =~ /usr/lib/llvm-([0-9]+)/ ]] &&
		[[ -x /usr/lib/llvm-${BASH_REMATCH[1]}/bin/llvm-symbolizer ]]; then
		sym=":external_symbolizer_path=/usr/lib/llvm-${BASH_REMATCH[1]}/bin/llvm-symbolizer"
	fi
	printf 'export ASAN_OPTIONS=%q\n' \
		"detect_leaks=0:abort_on_error=1:disable_coredump=1:log_path=$dir/asan:suppressions=$M2G_SANITIZER_SUPP$sym"
	printf 'export UBSAN_OPTIONS=%q\n' \
		"print_stacktrace=1:halt_on_error=1:log_path=$dir/ubsan$sym"
}

m2g_sanitizer_reports() {
	local d
	for d in "$@"; do
		[[ -d $d ]] || continue
		find "$d" -maxdepth 1 -type f \( -name 'asan.*' -o -name 'ubsan.*' \) -size +0 2>/dev/null
	done | sort
	return 0
}
