# shellcheck shell=bash
# results.sh — sourced by every contrib script that writes a results page
# (doc/results/*.md): m2g-bench, m2g-bench-admission, m2g-bench-spank,
# m2g-bench-testbed, m2g-calibrate, m2g-compare, m2g-scenarios. A page says which code it
# measured: the exact commit (`git rev-parse HEAD`, all 40 digits), and only
# a clean one. A page written from uncommitted changes would name a commit
# whose code it did not run, and nobody could reproduce its numbers.
#
#   m2g_results_begin PROG TOP   before measuring: fail (status 1, a message
#                                on stderr saying what is uncommitted) unless
#                                TOP is a git checkout whose source tree is
#                                clean; sets and exports M2G_RESULTS_COMMIT
#   m2g_results_end PROG TOP     just before writing the page: the same check
#                                again, and HEAD still the commit measured
#                                (a long run must not stamp a commit made
#                                while it ran)
#   m2g_results_dirty TOP        what makes the tree dirty: porcelain lines
#
# Dirty means any line of `git status --porcelain` (staged, unstaged and
# untracked files) except under doc/results/ (the pages being rewritten are
# the output, not the source) and untracked configured build trees (a
# directory holding a config.status; build/ and build-*/ are also in
# .gitignore).

m2g_results_dirty() {
	local top=$1 line path st=0 out
	out=$(git -C "$top" status --porcelain --untracked-files=normal -- . ':!doc/results' 2>&1) || st=$?
	if ((st != 0)); then
		echo "git status failed: $out"
		return 1
	fi
	while IFS= read -r line; do
		[[ -n $line ]] || continue
		path=${line:3}
		if [[ ${line:0:2} == '??' && -d $top/$path && -e $top/${path%/}/config.status ]]; then
			continue # an untracked build tree
		fi
		echo "$line"
	done <<<"$out"
}

m2g_results_begin() {
	local prog=$1 top=$2 dirty
	if ! M2G_RESULTS_COMMIT=$(git -C "$top" rev-parse --verify -q HEAD 2>/dev/null); then
		echo "$prog: $top is not a git checkout with a commit: a results page names the exact commit it measured" >&2
		return 1
	fi
	if ! dirty=$(m2g_results_dirty "$top"); then
		echo "$prog: $dirty" >&2
		return 1
	fi
	if [[ -n $dirty ]]; then
		{
			echo "$prog: refusing to write a results page from a dirty source tree ($top, HEAD ${M2G_RESULTS_COMMIT:0:12}):"
			printf '%s\n' "$dirty" | head -n 20 | sed 's/^/    /'
			(($(wc -l <<<"$dirty") <= 20)) || echo "    ... ($(wc -l <<<"$dirty") paths in all)"
			echo "$prog: the page would name a commit whose code it did not measure; commit or stash these first"
		} >&2
		return 1
	fi
	export M2G_RESULTS_COMMIT
}

m2g_results_end() {
	local prog=$1 top=$2 was=${M2G_RESULTS_COMMIT:-}
	m2g_results_begin "$prog" "$top" || return 1
	if [[ -n $was && $M2G_RESULTS_COMMIT != "$was" ]]; then
		echo "$prog: HEAD moved from $was to $M2G_RESULTS_COMMIT during the run: not writing a page that would name either" >&2
		M2G_RESULTS_COMMIT=$was
		return 1
	fi
}
