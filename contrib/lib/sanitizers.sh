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
#   m2g_sanitizer_preload SO...   print "LIBASAN:LIBUBSAN" (the compiler's
#                                 runtimes, $CXX or g++) and succeed when an SO
#                                 is ASan-built; fail when none is
#   m2g_sanitizer_options DIR     print ASAN_OPTIONS and UBSAN_OPTIONS lines
#                                 (shell-quoted exports) logging to DIR
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
	local so asan ubsan
	for so in "$@"; do
		[[ -e $so ]] || continue
		# libtool links C++ shared libraries with -nostdlib, so an ASan-built
		# plugin has no NEEDED libasan, only undefined __asan_* symbols
		# (which is why the Slurm program must preload the runtime).
		nm -D --undefined-only "$so" 2>/dev/null | grep -qw __asan_init || continue
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
	local dir=$1
	printf 'export ASAN_OPTIONS=%q\n' \
		"detect_leaks=0:abort_on_error=1:disable_coredump=1:log_path=$dir/asan:suppressions=$M2G_SANITIZER_SUPP"
	printf 'export UBSAN_OPTIONS=%q\n' \
		"print_stacktrace=1:halt_on_error=1:log_path=$dir/ubsan"
}

m2g_sanitizer_reports() {
	local d
	for d in "$@"; do
		[[ -d $d ]] || continue
		find "$d" -maxdepth 1 -type f \( -name 'asan.*' -o -name 'ubsan.*' \) -size +0 2>/dev/null
	done | sort
	return 0
}
