# shellcheck shell=bash
# lib.sh — sourced by the integration tests that run on the real Slurm testbed
# (contrib/m2g-testbed). Provides:
#
#   tb_up [m2g-testbed up args]  start a testbed on a free base port; a trap
#                                stops it on EXIT/INT/TERM, whatever happens
#   tb_down                      stop it now (idempotent)
#   plan N | done_testing        TAP plan up front, or computed at the end
#   ok COND DESC                 COND: an exit status (0 = pass) or a command
#                                string that is eval'ed
#   check DESC CMD [ARG...]      run CMD (not eval'ed); ok when it exits 0,
#                                not ok with its status otherwise; never
#                                trips set -e (use it, not `CMD; ok $? DESC`)
#   is GOT EXPECTED DESC         string equality; differences as "# " lines
#   skip DESC [REASON]           a test that was not run
#   diag MSG...                  a "# " line
#   wait_job_state JOBID STATES [TIMEOUT]   STATES like "COMPLETED" or
#                                "RUNNING|COMPLETED"; fails early when the job
#                                ends in another state
#   job_state JOBID              current state (scontrol, then sacct)
#   job_is JOBID STATE[/REASON]  the job is in STATE (and pends for REASON);
#                                prints what it is (a tb_wait_for check)
#   tb_comment_has JOBID TEXT    its AdminComment holds TEXT; prints it
#   tb_await_feed FEED STATUS [STATE]   wait until job_submit/m2g holds the
#                                signals feed FEED as written now (its status
#                                file STATUS says STATE, default fresh, and
#                                has FEED as its snapshot), then one poll
#                                period for select/m2g, which has no status
#   job_nodes JOBID              allocated nodes, one per line (scontrol)
#   job_nodelist JOBID           the same as one Slurm hostlist
#   sacct_field JOBID FIELD [TIMEOUT]  a field of the job's allocation line,
#                                once accounting has the job (and its end
#                                state, if slurmctld says it has ended)
#
#   tb_slurm_release / tb_slurm_reexecs / tb_slurm_sbin   the Slurm release
#                                under test (M2G_SLURM) and what differs
#   tb_ctld_pid / tb_pidfile FILE   the PID in slurmctld's (or FILE's) pid
#                                file: its first line (see tb_pidfile)
#   tb_ctld_mark / tb_ctld_unbroken   slurmctld neither crashed nor restarted
#                                since the mark (reconfigures aside)
#   tb_reconfigure_m2g [DESC]    scontrol reconfigure after editing m2g.conf,
#                                and a test that select/m2g reloaded it
#   tb_write FILE <TEXT          write FILE whole, atomically (a temporary file
#                                beside it, then rename): a daemon reading it
#                                meanwhile sees the old file or the new one,
#                                never half of it
#   tb_append FILE LINE...       append lines to FILE, atomically as tb_write
#   tb_await_server NAME PID LOG SEDEXPR [TIMEOUT]   wait until PID, a server
#                                the test started in the background, writes to
#                                LOG the line SEDEXPR (sed -n, with p) prints
#                                from (its port, say); print that. A server
#                                that exits first or stays silent fails with
#                                its name, status and LOG's last lines (on
#                                stderr: the caller captures stdout)
#   tb_wait_for WHAT TIMEOUT CMD [ARG...]   poll CMD (not eval'ed) until it
#                                exits 0, for at most TIMEOUT s (times
#                                TB_TIMEOUT_SCALE); silent when it does.
#                                Otherwise a diag "WHAT: not after N s" and
#                                what CMD printed at its last try (so CMD
#                                should print what it saw), and status 1.
#                                Use it, not a fixed sleep, before a test of
#                                a state that takes a while to come
#
# After tb_up: TB_DIR, TB_BASE, and SLURM_CONF/M2G_CONF exported (and, for an
# upstream release, PATH with its clients first).
# TB_TMP is a scratch directory removed at exit. TB_CLEANUP_PIDS: PIDs of
# helper processes to stop at exit; TB_CLEANUP_FUNCS: names of functions the
# EXIT trap calls after the testbed is down (to undo changes to the machine).
# Environment: M2G_TESTBED (path of m2g-testbed), TB_KEEP=1 keeps the testbed
# directory even when every test passed (it is always kept on failure, as
# /tmp/m2g-testbed-kept.SUITE.BASE.PID).
# Sanitizer builds (configure --enable-sanitizers; found by the plugins'
# undefined __asan_init, M2G_SANITIZE=0 turns it off): M2G_SANITIZE=1 and
# LD_PRELOAD of the plugins' ASan runtime (clang's libclang_rt.asan, or GCC's
# libasan and libubsan) are exported for everything the test runs (Slurm's
# clients load the plugins; contrib/lib/sanitizers.sh says why), reports go
# to $M2G_BUILDDIR/sanitizer-logs/<test>.<pid>/ and, once a testbed is up, to
# its log/ directory; the script fails when any report file appears there.
# The script exits 1 if any test failed, the plan was not met or the script
# died early; the TAP plan/summary is printed by the EXIT trap.

set -euo pipefail

TB_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
M2G_TESTBED=${M2G_TESTBED:-$TB_LIB_DIR/../../contrib/m2g-testbed}
# The testbeds this suite brings up are its own: m2g-testbed refuses another
# suite's `up` on the directory and its `down` while this shell runs.
export M2G_TESTBED_CALLER=$$
TB_DIR="" TB_BASE="" _TB_RUNNING=0
_TAP_N=0 _TAP_FAILED=0 _TAP_PLAN="" _TAP_DONE=0

# Keep a caller's Slurm job environment (SLURM_JOB_ID, ...) out of the tests.
while read -r _v; do unset "$_v"; done < <(compgen -e | grep '^SLURM_' || true)
unset _v

# ------------------------------------------------------------------- TAP --

diag() { printf '# %s\n' "$@"; }

plan() {
	_TAP_PLAN=$1
	echo "1..$1"
}

done_testing() {
	_TAP_DONE=1
	[[ -n $_TAP_PLAN ]] || echo "1..$_TAP_N"
}

# _tap_result STATUS DESC [DIRECTIVE]
_tap_result() {
	_TAP_N=$((_TAP_N + 1))
	if (($1 == 0)); then
		echo "ok $_TAP_N - $2${3:+ # $3}"
	else
		echo "not ok $_TAP_N - $2"
		_TAP_FAILED=$((_TAP_FAILED + 1))
	fi
}

ok() {
	local cond=$1 desc=$2 status
	if [[ $cond =~ ^[0-9]+$ ]]; then
		status=$cond
	else
		status=0
		eval "$cond" >/dev/null 2>&1 || status=$?
	fi
	_tap_result "$status" "$desc"
	((status == 0)) || diag "  failed: $cond"
	return 0
}

is() {
	local got=$1 expected=$2 desc=$3
	if [[ $got == "$expected" ]]; then
		_tap_result 0 "$desc"
		return 0
	fi
	_tap_result 1 "$desc"
	if [[ $got == *$'\n'* || $expected == *$'\n'* ]]; then
		diff -u --label expected --label got <(printf '%s\n' "$expected") <(printf '%s\n' "$got") |
			sed 's/^/#   /' || true
	else
		diag "       got: '$got'" "  expected: '$expected'"
	fi
	return 0
}

skip() {
	_tap_result 0 "$1" "SKIP${2:+ $2}"
}

# check DESC CMD [ARG...]: CMD's exit status as a test. `CMD; ok $? DESC`
# cannot fail under set -e: a failing CMD ends the script before ok runs
# (and ok then always sees 0). Here CMD runs in a `||` list, so a failure is
# a "not ok" and the script goes on; CMD's stdout (wait_job_state's "# "
# lines) is passed through, so CMD must print nothing else there. set -e is
# off inside CMD, as in any `||` list: functions must return their failures
# (the lib.sh wait helpers do). DESC is expanded before CMD runs: a value
# known only afterwards (an elapsed time) goes in a diag, or use
# `rc=0; CMD || rc=$?; ok "$rc" DESC`.
check() {
	local desc=$1 status=0
	shift
	"$@" || status=$?
	_tap_result "$status" "$desc"
	((status == 0)) || diag "  failed (status $status): $*"
	return 0
}

# TB_TMP: a scratch directory for the test, removed by the EXIT trap (tests
# must not install EXIT traps of their own: the trap's first command has to
# see the script's exit status).
TB_TMP=$(mktemp -d)
TB_CLEANUP_PIDS=()  # tests append PIDs of helper processes to stop at exit
TB_CLEANUP_FUNCS=() # and names of functions to call once the testbed is down

# ------------------------------------------------------------ sanitizers --

# shellcheck source=contrib/lib/sanitizers.sh
. "$TB_LIB_DIR/../../contrib/lib/sanitizers.sh"
TB_SAN_DIR=""
if [[ ${M2G_SANITIZE:-} != 0 ]] &&
	_tb_preload=$(m2g_sanitizer_preload "${M2G_BUILDDIR:-$TB_LIB_DIR/../..}"/src/plugins/*/.libs/*.so); then
	TB_SAN_DIR=${M2G_BUILDDIR:-$TB_LIB_DIR/../..}/sanitizer-logs/$(basename "$0" .sh).$$
	mkdir -p "$TB_SAN_DIR"
	export M2G_SANITIZE=1 LD_PRELOAD=$_tb_preload
	eval "$(m2g_sanitizer_options "$TB_SAN_DIR")"
fi
unset _tb_preload
# Time limits of the wait helpers below are multiplied by TB_TIMEOUT_SCALE:
# M2G_TIMEOUT_SCALE, else 4 in a sanitizer build (every slurmstepd then runs
# with libasan preloaded: an `srun true` over 18 nodes took 68 s on 2 cores),
# else 1.
TB_TIMEOUT_SCALE=${M2G_TIMEOUT_SCALE:-$([[ -n $TB_SAN_DIR ]] && echo 4 || echo 1)}
export M2G_TESTBED_TIMEOUT=${M2G_TESTBED_TIMEOUT:-$((120 * TB_TIMEOUT_SCALE))}

# tb_unsanitized CMD...: run CMD without the sanitizer preload and options,
# for programs that load no m2g code and are no business of this test's
# sanitizer check (groff's troff has its own alloc-dealloc mismatch) or that
# carry their own, incompatible runtime (the clang-built fuzzers).
tb_unsanitized() { env -u LD_PRELOAD -u ASAN_OPTIONS -u UBSAN_OPTIONS "$@"; }
# With GCC 12's libasan preloaded, curl and pgrep (first full sanitizer run) hung for
# ever at start, in a futex: glibc's _nl_state_lock in textdomain(), before
# any m2g code could run. The tools the tests use that load no m2g code run
# without it.
if [[ -n $TB_SAN_DIR ]]; then
	curl() { tb_unsanitized curl "$@"; }
	pgrep() { tb_unsanitized pgrep "$@"; }
	pkill() { tb_unsanitized pkill "$@"; }
	ps() { tb_unsanitized ps "$@"; }
fi

# _tb_sanitizer_reports: show every ASan/UBSan report this test caused (its
# own directory, the testbed's log/); fail when there is one.
_tb_sanitizer_reports() {
	[[ -n $TB_SAN_DIR ]] || return 0
	local -a reports
	mapfile -t reports < <(m2g_sanitizer_reports "$TB_SAN_DIR" ${TB_DIR:+"$TB_DIR/log"})
	if ((${#reports[@]} == 0)); then
		rmdir -- "$TB_SAN_DIR" 2>/dev/null
		return 0
	fi
	local f
	for f in "${reports[@]}"; do
		diag "sanitizer report $f:"
		head -n 60 -- "$f" | sed 's/^/#   /'
	done
	diag "${#reports[@]} ASan/UBSan report(s): failing"
	return 1
}

# _tb_state_diag: when a suite stops early, what the cluster was doing (the
# jobs, slurmctld's last errors), as diag lines a CI log keeps.
_tb_state_diag() {
	((_TB_RUNNING)) || return 0
	squeue -a -h -o '%i %j %T %r %N' 2>/dev/null | head -n 12 | sed 's/^/# squeue: /'
	grep -E 'error|fatal|Killing|NODE_FAIL' "$TB_DIR/log/slurmctld.log" 2>/dev/null | tail -n 6 | sed 's/^/# slurmctld: /'
}

# _tb_core_dumps: a daemon that dumped core (the daemons run in the
# testbed's log directory) fails the suite, with its backtrace when gdb is
# installed. Killing with -9 leaves no core; an abort or a crash does.
_tb_core_dumps() {
	[[ -n ${TB_DIR:-} && -d $TB_DIR ]] || return 0
	local -a cores
	mapfile -t cores < <(find "$TB_DIR" -maxdepth 3 -type f -name 'core*' 2>/dev/null)
	((${#cores[@]} > 0)) || return 0
	local c exe
	for c in "${cores[@]}"; do
		exe=$(strings -n 8 "$c" 2>/dev/null | grep -m1 -E '^/[^ ]*/s?bin/(slurm[a-z]*|m2g[a-z-]*)$' || true)
		diag "core dump $c${exe:+ of $exe}"
		if [[ -n $exe ]] && command -v gdb >/dev/null; then
			timeout 60 gdb -batch -ex bt "$exe" "$c" 2>/dev/null | grep -E '^#[0-9]+ ' | awk '!seen[$0]++' | head -n 14 | sed 's/^/#   /'
		fi
	done
	diag "${#cores[@]} core dump(s) from the testbed's daemons: failing"
	return 1
}

# _tb_retire RC: the directory of a testbed that is down. Removed when RC is
# 0 and TB_KEEP is not 1 (`down --remove` deletes it under the testbed's
# lock: another suite may be starting a testbed on the same base right now);
# else kept for a look under a name no later suite's tb_up picks (`up` on a
# stopped testbed's base starts over in its directory).
_tb_retire() {
	[[ -n $TB_DIR && -d $TB_DIR ]] || return 0
	if (($1 == 0)) && [[ ${TB_KEEP:-0} != 1 ]]; then
		"$M2G_TESTBED" down --remove --dir "$TB_DIR" >/dev/null 2>&1 ||
			diag "m2g-testbed down --remove --dir $TB_DIR failed"
		return 0
	fi
	local kept
	kept=/tmp/m2g-testbed-kept.$(basename "$0" .sh).$TB_BASE.$$
	if mv -- "$TB_DIR" "$kept" 2>/dev/null; then diag "testbed files kept in $kept"
	else diag "testbed files kept in $TB_DIR"; fi
}

# The EXIT trap: stop the testbed, settle the plan, choose the exit status.
_tb_on_exit() {
	local rc=$?
	set +e
	# Helper processes a test started (servers on loopback): stopped by PID.
	local pid
	for pid in "${TB_CLEANUP_PIDS[@]}"; do kill "$pid" 2>/dev/null; done
	if ((rc != 0)) && ((_TAP_DONE == 0)); then
		_tap_result 1 "script exited early with status $rc${_TB_ERR_LINE:+ (line $_TB_ERR_LINE)}"
		_tb_state_diag
	fi
	tb_down
	local fn
	for fn in "${TB_CLEANUP_FUNCS[@]}"; do "$fn"; done
	# Last: the cleanup functions may write there (package.sh's purge log).
	[[ -n ${TB_TMP:-} ]] && rm -rf -- "$TB_TMP"
	# After tb_down: daemons write their reports as they stop.
	_tb_sanitizer_reports || rc=1
	_tb_core_dumps || rc=1
	if [[ -n $_TAP_PLAN ]]; then
		if ((_TAP_N != _TAP_PLAN)); then
			diag "planned $_TAP_PLAN tests but ran $_TAP_N"
			rc=1
		fi
	elif ((_TAP_DONE == 0)); then
		echo "1..$_TAP_N"
	fi
	((_TAP_FAILED == 0)) || { diag "failed $_TAP_FAILED of $_TAP_N"; rc=1; }
	# m2g-check prints this beside the suite's counts (where CI time goes).
	diag "suite time: $SECONDS s"
	_tb_retire "$rc"
	exit $((rc == 0 ? 0 : 1))
}
trap '_TB_ERR_LINE=$LINENO' ERR
trap _tb_on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --------------------------------------------------------------- testbed --

# tb_up [ARGS]: bring up a testbed on the first free base. Bases are
# 20000 + 500*k (k = 0..23), below the kernel's ephemeral ports; each holds up
# to 22 racks of slurmd ports. The start slot comes from $$ so parallel tests
# rarely try the same one; `m2g-testbed up` exits 3 when a base is taken
# (ports in use or a testbed running there) and we move on.
tb_up() {
	local k slot rc=0 base
	# A second testbed in one suite: the first one's directory goes (or is
	# kept when a test failed on it) before TB_DIR names the new one.
	((_TB_RUNNING)) || _tb_retire $((_TAP_FAILED > 0 ? 1 : 0))
	slot=$(($$ % 24))
	for ((k = 0; k < 24; k++)); do
		base=$((20000 + 500 * ((slot + k) % 24)))
		TB_BASE=$base TB_DIR=/tmp/m2g-testbed-$base
		_TB_RUNNING=1     # from here on the EXIT trap runs `down`
		rc=0
		"$M2G_TESTBED" up --base "$base" "$@" >"$TB_TMP/up.out" 2>&1 || rc=$?
		cat "$TB_TMP/up.out" >&2
		((rc == 3)) && { _TB_RUNNING=0 TB_DIR=""; continue; }
		if ((rc != 0)); then
			# Its reasons as diagnostics: a CI summary shows only those.
			diag "m2g-testbed up --base $base $* failed (status $rc):"
			tail -n 12 "$TB_TMP/up.out" | sed 's/^/#   /'
			return 1
		fi
		eval "$("$M2G_TESTBED" env --dir "$TB_DIR")"
		tb_ctld_mark
		diag "testbed up: base $TB_BASE, dir $TB_DIR"
		return 0
	done
	diag "no free testbed base found"
	return 1
}

# The Slurm release under test (M2G_SLURM, set by make check from configure):
# tb_slurm_reexecs: true from 23.11 on, where `scontrol reconfigure` starts a
# new slurmctld instead of re-reading the configuration in place;
# tb_slurm_sbin: the directory of that release's daemons.
tb_slurm_release() { echo "${M2G_SLURM:-22.05}"; }
tb_slurm_reexecs() { [[ $(tb_slurm_release) != 22.05 ]]; }
tb_slurm_sbin() {
	if [[ $(tb_slurm_release) == 22.05 ]]; then echo /usr/sbin
	else echo "${M2G_SLURM_PREFIX:-/opt/slurm-$(tb_slurm_release)}/sbin"; fi
}

# tb_ctld_mark: remember the running slurmctld (after tb_up or a deliberate
# restart). tb_ctld_unbroken: slurmctld has not crashed or been restarted
# since. On 22.05 that is the same PID. From 23.11 on every `scontrol
# reconfigure` replaces the process, so: the PID in the pid file is alive,
# answers, and every slurmctld start logged since the mark was a reconfigure.
# tb_pidfile FILE: the PID a daemon's pid file names. Its first line only:
# from 23.11 on, the slurmctld a reconfigure starts rewrites the file in
# place without truncating it, so a PID with fewer digits than the old one
# (PIDs wrap at pid_max) leaves the old one's tail on a second line.
tb_pidfile() { local pid=""; read -r pid <"$1" || [[ -n $pid ]] || return 1; echo "$pid"; }
tb_ctld_pid() { tb_pidfile "$TB_DIR/pids/slurmctld.pid"; }
_CTLD_MARK_PID="" _CTLD_MARK_STARTS=0 _CTLD_MARK_RECONF=0
_ctld_count() { grep -c "$1" "$TB_DIR/log/slurmctld.log" 2>/dev/null || true; }
tb_ctld_mark() {
	_CTLD_MARK_PID=$(tb_ctld_pid)
	_CTLD_MARK_STARTS=$(_ctld_count 'slurmctld version .* started')
	_CTLD_MARK_RECONF=$(_ctld_count 'Attempting to reconfigure')
}
tb_ctld_unbroken() {
	local pid
	pid=$(tb_ctld_pid 2>/dev/null) && kill -0 "$pid" 2>/dev/null || return 1
	if ! tb_slurm_reexecs; then
		[[ $pid == "$_CTLD_MARK_PID" ]]
		return
	fi
	scontrol ping 2>/dev/null | grep -q 'is UP' || return 1
	(( $(_ctld_count 'slurmctld version .* started') - _CTLD_MARK_STARTS ==
	   $(_ctld_count 'Attempting to reconfigure') - _CTLD_MARK_RECONF ))
}

# tb_reconfigure_m2g [DESC]: `scontrol reconfigure` after a change to
# m2g.conf, then a test that select/m2g has the change in force: its
# "m2g.conf reloaded" log line (from 23.11 on the reconfigure starts a new
# slurmctld, which says "loaded").
_M2G_LOADED='m2g: select: m2g.conf \(re\)\?loaded'
_m2g_loaded_since() {
	local n
	n=$(_ctld_count "$_M2G_LOADED")
	echo "select/m2g's m2g.conf (re)loaded lines: $n, $1 before the reconfigure"
	((n > $1))
}
# Since 23.11 a reconfigure starts a new slurmctld, which loads the plugins
# (and m2g.conf) while the old one still serves; the old one then logs
# "Relinquishing control to new slurmctld process", or "Resuming operation,
# reconfigure failed." and carries on with the configuration it had. Until
# one of the two, a job submitted goes to the old process and its old
# m2g.conf: wait for the hand-over, and fail saying why when it failed.
_RELINQUISHED='Relinquishing control to new slurmctld process'
_RECONF_FAILED='Resuming operation, reconfigure failed'
_reconfigure_settled() {
	local done failed
	done=$(_ctld_count "$_RELINQUISHED") failed=$(_ctld_count "$_RECONF_FAILED")
	echo "hand-overs: $done ($1 before), failed reconfigures: $failed ($2 before)"
	((done > $1 || failed > $2))
}
tb_reconfigure_m2g() {
	local before relinquished failed
	before=$(_ctld_count "$_M2G_LOADED")
	relinquished=$(_ctld_count "$_RELINQUISHED") failed=$(_ctld_count "$_RECONF_FAILED")
	scontrol reconfigure
	check "${1:-select/m2g reloaded m2g.conf at scontrol reconfigure}" \
		tb_wait_for "select/m2g reloading m2g.conf" 30 _m2g_loaded_since "$before"
	[[ $(tb_slurm_release) == 22.05 ]] && return 0 # 22.05 reconfigures in place
	tb_wait_for "the old slurmctld handing over to the new one" 30 _reconfigure_settled "$relinquished" "$failed" ||
		true
	if (($(_ctld_count "$_RECONF_FAILED") > failed)); then
		diag "the new slurmctld of this reconfigure failed; the old one keeps its configuration. slurmctld.log:"
		grep -v "debug" "$TB_DIR/log/slurmctld.log" | tail -n 40 | sed "s/^/#   /"
		_tap_result 1 "scontrol reconfigure took effect (the new slurmctld started)"
	fi
}

# tb_write FILE: standard input becomes FILE, renamed into place.
tb_write() {
	local tmp
	tmp=$(mktemp "$1.tmp.XXXXXX") || return 1
	cat >"$tmp" && chmod 0644 "$tmp" && mv -f -- "$tmp" "$1"
}
# tb_append FILE LINE...: FILE with the lines added, renamed into place.
tb_append() {
	local f=$1
	shift
	{ cat -- "$f"; printf '%s\n' "$@"; } | tb_write "$f"
}

tb_await_server() {
	local name=$1 pid=$2 log=$3 expr=$4 timeout=$((${5:-10} * TB_TIMEOUT_SCALE)) got="" rc=0
	local deadline=$((SECONDS + timeout))
	while ((SECONDS <= deadline)); do
		# The server's redirection may not exist yet: it is made by the
		# forked child, which a loaded machine runs late.
		[[ -r $log ]] && got=$(sed -n "$expr" "$log" | head -n 1)
		[[ -n $got ]] && { echo "$got"; return 0; }
		if ! kill -0 "$pid" 2>/dev/null; then
			# It may have written the line just before it exited.
			got=$(sed -n "$expr" "$log" 2>/dev/null | head -n 1)
			[[ -n $got ]] && { echo "$got"; return 0; }
			wait "$pid" 2>/dev/null || rc=$?
			{ diag "$name (pid $pid) exited with status $rc before it served; last lines of $log:"
			  tail -n 15 "$log" 2>/dev/null | sed 's/^/#   /'; } >&2
			return 1
		fi
		sleep 0.1
	done
	{ diag "$name (pid $pid) is not serving after ${timeout} s; last lines of $log:"
	  tail -n 15 "$log" 2>/dev/null | sed 's/^/#   /'; } >&2
	return 1
}

tb_wait_for() {
	local what=$1 timeout=$(($2 * TB_TIMEOUT_SCALE)) out="" rc=0
	shift 2
	local deadline=$((SECONDS + timeout))
	while :; do
		rc=0
		out=$("$@" 2>&1) || rc=$?
		((rc == 0)) && return 0
		((SECONDS < deadline)) || break
		sleep 0.25
	done
	diag "$what: not after ${timeout} s (status $rc); the last check said:"
	[[ -n $out ]] && printf '%s\n' "$out" | tail -n 12 | sed 's/^/#   /'
	return 1
}

tb_down() {
	((_TB_RUNNING)) || return 0
	"$M2G_TESTBED" down --dir "$TB_DIR" >&2 || diag "m2g-testbed down failed"
	_TB_RUNNING=0
}

# ------------------------------------------------------------------ jobs --

readonly _TB_TERMINAL='BOOT_FAIL|CANCELLED|COMPLETED|DEADLINE|FAILED|NODE_FAIL|OUT_OF_MEMORY|PREEMPTED|TIMEOUT'

# _scontrol_job_field JOBID FIELD: a field of `scontrol -o show job`, or fail
# when slurmctld no longer knows the job (purged after MinJobAge).
_scontrol_job_field() {
	local line
	line=$(scontrol -o show job "$1" 2>/dev/null) || return 1
	[[ " $line " =~ \ $2=([^ ]*)\  ]] || return 1
	echo "${BASH_REMATCH[1]}"
}

job_state() {
	local st
	if st=$(_scontrol_job_field "$1" JobState); then echo "$st"; return 0; fi
	st=$(sacct -n -X -P -j "$1" -o State 2>/dev/null | head -n1)
	echo "${st%% *}"        # "CANCELLED by 0" -> CANCELLED
}

wait_job_state() {
	local id=$1 want=$2 timeout=$((${3:-60} * TB_TIMEOUT_SCALE)) st=""
	local deadline=$((SECONDS + timeout))
	while ((SECONDS <= deadline)); do
		st=$(job_state "$id")
		if [[ -n $st && $st =~ ^($want)$ ]]; then return 0; fi
		if [[ -n $st && $st =~ ^($_TB_TERMINAL)$ ]]; then
			diag "job $id ended $st while waiting for $want"
			return 1
		fi
		sleep 0.5
	done
	diag "job $id still '${st:-unknown}' after ${timeout}s waiting for $want"
	return 1
}

job_is() {
	local got
	got=$(job_state "$1")
	[[ $2 == */* ]] && got+="/$(squeue -h -j "$1" -o %r 2>/dev/null)"
	echo "job $1: $got"
	[[ $got == "$2" ]]
}

tb_comment_has() {
	local c
	c=$(squeue -h -t all -j "$1" -O admin_comment:1000 2>/dev/null | sed 's/ *$//')
	echo "job $1 AdminComment: $c"
	[[ $c == *"$2"* ]]
}

# tb_feed_held FEED STATUS [STATE]: job_submit/m2g has judged the feed as it
# is now: STATUS says STATE and, when FEED is there and is JSON, holds it as
# its snapshot (compared as JSON). Prints what STATUS says otherwise.
tb_feed_held() {
	python3 - "$1" "$2" "${3:-fresh}" <<'PY'
import json, sys
feed_path, status_path, want = sys.argv[1:]
try:
    st = json.load(open(status_path))
except (OSError, ValueError) as e:
    sys.exit("status file: %s" % e)
try:
    feed = json.load(open(feed_path))
except (OSError, ValueError):
    feed = None  # missing or corrupt: only the state can say
snap = st.get("snapshot")
if st.get("state") != want or (feed is not None and snap != feed):
    sys.exit("status file: state %s (want %s), failsafe %s, detail: %s; its snapshot %s the feed as written"
             % (st.get("state"), want, st.get("failsafe"), st.get("detail"), "is" if snap == feed else "is not"))
PY
}
tb_await_feed() {
	tb_wait_for "job_submit/m2g holds the feed just written (${3:-fresh})" 10 tb_feed_held "$@" || return 0
	# Time passing: select/m2g polls the same file on its own thread
	# (SignalsPollSec=1 in every suite that writes a feed) and writes no
	# status to wait on: one poll period.
	sleep 1.2
}

# tb_submit VAR SBATCH-ARGS...: sbatch, its output discarded; the job id
# (a heterogeneous job's leader) into VAR.
tb_submit() {
	local _tb_sub_id
	_tb_sub_id=$(sbatch --parsable -o /dev/null "${@:2}") || return 1
	printf -v "$1" %s "${_tb_sub_id%%;*}"
}

job_nodelist() {
	local nl
	nl=$(_scontrol_job_field "$1" NodeList) ||
		nl=$(sacct -n -X -P -j "$1" -o NodeList 2>/dev/null | head -n1)
	[[ -n $nl && $nl != "(null)" && $nl != "None assigned" ]] || return 1
	echo "$nl"
}

job_nodes() {
	local nl
	nl=$(job_nodelist "$1") || return 1
	scontrol show hostnames "$nl"
}

sacct_field() {
	local id=$1 field=$2 timeout=$((${3:-30} * TB_TIMEOUT_SCALE)) line ctld
	local deadline=$((SECONDS + timeout))
	while ((SECONDS <= deadline)); do
		line=$(sacct -n -X -P -j "$id" -o "State,$field" 2>/dev/null | head -n1)
		if [[ -n $line ]]; then
			# Done unless slurmctld has ended the job and accounting lags.
			ctld=$(_scontrol_job_field "$id" JobState) || ctld=""
			if ! [[ $ctld =~ ^($_TB_TERMINAL)$ ]] || [[ ${line%%|*} =~ ^($_TB_TERMINAL) ]]; then
				echo "${line#*|}"
				return 0
			fi
		fi
		sleep 0.5
	done
	diag "job $id not in accounting after ${timeout}s"
	return 1
}
