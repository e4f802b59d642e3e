#!/usr/bin/env bash
# The man pages are complete: every command, subcommand and option the
# programs accept (as their own --help lists them), every m2g.conf key (as
# the parser lists them), every --m2g-* option and every plugstack.conf
# argument of spank_m2g appears in its page, and every page renders without
# groff warnings. Needs no testbed.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${M2G_BUILDDIR:-$SRC}
M2G=$BUILD/src/cli/m2g
T=$TB_TMP

# render PAGE: the page as plain text, as man shows it (no hyphenation, wide).
render() { tb_unsanitized groff -man -Tutf8 -rHY=0 -rLL=200n "$SRC/doc/$1" 2>/dev/null | col -bx; }
# missing PAGE WORD...: the words the rendered page lacks.
missing() {
	local page=$1 text w out=""
	shift
	text=$(render "$page")
	for w in "$@"; do grep -qF -- "$w" <<<"$text" || out+=" $w"; done
	echo "${out# }"
}
# opts: the long options in a --help text (CLI11 layout), --help/--version left out.
opts() { grep -oE -- '^ +(-[A-Za-z],)?--[a-z][a-z0-9-]+' | grep -oE -- '--[a-z0-9-]+' | grep -vxE -- '--(help|version)' | sort -u; }
# subs: the subcommand names of a CLI11 --help text.
subs() { sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'; }

for page in man1/m2g.1 man1/m2g-exporter.1 man5/m2g.conf.5 man5/m2g-recipes.conf.5 \
	man8/m2g-slinky.8 man8/m2g-nodeagent.8 man8/m2g-curtaild.8 man8/topology_m2g.8 man8/spank_m2g.8 man8/select_m2g.8 \
	man8/job_submit_m2g.8; do
	warn=$(tb_unsanitized groff -man -ww -z "$SRC/doc/$page" 2>&1 | head -3)
	is "$warn" "" "$page renders without groff warnings"
done

# m2g: every subcommand, sub-subcommand and option.
words=()
for s in $("$M2G" --help | subs); do
	words+=("$s")
	help=$("$M2G" "$s" --help)
	mapfile -t o < <(opts <<<"$help")
	words+=("${o[@]}")
	for ss in $(subs <<<"$help"); do
		words+=("$ss")
		mapfile -t o < <("$M2G" "$s" "$ss" --help | opts)
		words+=("${o[@]}")
	done
done
ok "[[ ${#words[@]} -gt 40 ]]" "m2g --help lists its commands and options (${#words[@]} names)"
is "$(missing man1/m2g.1 "${words[@]}")" "" "m2g(1) names every subcommand and option m2g accepts"

for prog in src/exporter/m2g-exporter:man1/m2g-exporter.1 slinky/src/m2g-slinky:man8/m2g-slinky.8 \
	src/nodeagent/m2g-nodeagent:man8/m2g-nodeagent.8 src/curtail/m2g-curtaild:man8/m2g-curtaild.8; do
	bin=$BUILD/${prog%%:*} page=${prog#*:}
	mapfile -t o < <("$bin" --help | opts)
	ok "[[ ${#o[@]} -gt 2 ]]" "$(basename "$bin") --help lists its options"
	is "$(missing "$page" "${o[@]}")" "" "$page names every option $(basename "$bin") accepts"
done

# m2g.conf: the keys, as the parser itself lists them for an unknown key.
printf 'NodeName=n1\nNoSuchKey=1\n' >"$T/bad.conf"
msg=$("$M2G" topology validate "$T/bad.conf" 2>&1 || true)
mapfile -t keys < <(sed -n 's/.*a line starts with one of \(.*\)/\1/p' <<<"$msg" | tr -d ' ' | tr ',' '\n' |
	sed 's/^orisoneof//; /^$/d')
ok "[[ ${#keys[@]} -gt 30 ]]" "the m2g.conf parser lists its keys (${#keys[@]})"
[[ ${#keys[@]} -gt 30 ]] || diag "$msg"
is "$(missing man5/m2g.conf.5 "${keys[@]}")" "" "m2g.conf(5) documents every key the parser accepts"

# spank_m2g: the --m2g-* options and the plugstack.conf arguments (keys.hpp).
mapfile -t spank < <(sed -n 's/.*kOpt[A-Za-z]* = "\(m2g-[a-z-]*\)".*/--\1/p' "$SRC/src/core/base/keys.hpp")
ok "[[ ${#spank[@]} -ge 7 ]]" "keys.hpp lists the --m2g-* options (${#spank[@]})"
is "$(missing man8/spank_m2g.8 "${spank[@]}")" "" "spank_m2g(8) documents every --m2g-* option"
mapfile -t args < <(sed -n 's/.*kArg[A-Za-z]* = "\([a-z_]*\)".*/\1=/p' "$SRC/src/core/base/keys.hpp")
ok "[[ ${#args[@]} -ge 3 ]]" "keys.hpp lists spank_m2g's plugstack.conf arguments (${#args[@]})"
is "$(missing man8/spank_m2g.8 "${args[@]}")" "" "spank_m2g(8) documents every plugstack.conf argument"
done_testing
