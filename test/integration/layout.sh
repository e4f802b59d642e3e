#!/usr/bin/env bash
# layout.sh — the fences between the source folders hold (src/README.md):
#   - src/core/ (the engine) includes nothing of src/tools/, the plugins or
#     Slurm, and each of its wings includes only its own and lower wings:
#     base < job < model < obs < power < place;
#   - src/tools/ includes the engine and its own and lower wings
#     (net < formats < sim < reports), never a plugin or Slurm;
#   - a plugin includes only the engine and plugins/common/, and links only
#     libm2gcore (Makefile.am);
#   - every folder of src/core/ and src/tools/ says what lives there (a
#     README.md);
#   - no function in src/ or slinky/ is longer than 250 lines (Universal
#     Ctags finds where each ends).
# No build, no Slurm: reads the sources.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$SRC" || exit 1

# includes FILE: the project headers FILE includes ("dir/.../x.hpp"), one per line.
includes() { sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"; }
# system_slurm FILE: Slurm headers FILE includes (<slurm/...>, "slurm/...", "src/common/...").
slurm_headers() {
	grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](slurm/|src/(common|slurmctld|interfaces|plugins)/)' "$1" || true
}

rank_core() {
	case $1 in base) echo 0 ;; job) echo 1 ;; model) echo 2 ;; obs) echo 3 ;; power) echo 4 ;; place) echo 5 ;; *) echo 99 ;; esac
}
rank_tools() {
	case $1 in net) echo 0 ;; formats) echo 1 ;; sim) echo 2 ;; reports) echo 3 ;; *) echo 99 ;; esac
}

# ---- src/core ---------------------------------------------------------------------
bad=()
for f in src/core/*/*.[ch]pp; do
	wing=$(basename "$(dirname "$f")")
	r=$(rank_core "$wing")
	((r != 99)) || bad+=("$f: $wing is not a wing of src/core (base, job, model, obs, power, place)")
	while read -r inc; do
		case $inc in
			core/*/*)
				w=${inc#core/}; w=${w%%/*}
				(($(rank_core "$w") <= r)) || bad+=("$f includes $inc: $wing may include base..$wing only")
				;;
			*) bad+=("$f includes $inc: src/core includes only core/") ;;
		esac
	done < <(includes "$f")
	s=$(slurm_headers "$f")
	[[ -z $s ]] || bad+=("$f includes Slurm: $s")
done
is "$(printf '%s\n' "${bad[@]}")" "" "src/core includes nothing above its wing, nothing of src/tools, the plugins or Slurm"

# ---- src/tools --------------------------------------------------------------------
bad=()
for f in src/tools/*/*.[ch]pp; do
	wing=$(basename "$(dirname "$f")")
	r=$(rank_tools "$wing")
	((r != 99)) || bad+=("$f: $wing is not a wing of src/tools (net, formats, sim, reports)")
	while read -r inc; do
		case $inc in
			core/*/*) ;;
			tools/*/*)
				w=${inc#tools/}; w=${w%%/*}
				(($(rank_tools "$w") <= r)) || bad+=("$f includes $inc: $wing may include net..$wing only")
				;;
			*) bad+=("$f includes $inc: src/tools includes only core/ and tools/") ;;
		esac
	done < <(includes "$f")
	s=$(slurm_headers "$f")
	[[ -z $s ]] || bad+=("$f includes Slurm: $s")
done
is "$(printf '%s\n' "${bad[@]}")" "" "src/tools includes the engine and lower tools wings only, never a plugin or Slurm"

# ---- the plugins -------------------------------------------------------------------
bad=()
for f in src/plugins/*/*.[ch]pp; do
	while read -r inc; do
		case $inc in
			core/*/* | plugins/common/*) ;;
			config.h) ;;  # Slurm's own (--with-slurm-source), for its version macros
			slurm/* | src/common/* | src/slurmctld/* | src/interfaces/* | src/plugins/*) ;;  # Slurm's
			*) bad+=("$f includes $inc: a plugin includes only core/ and plugins/common/") ;;
		esac
	done < <(includes "$f")
done
is "$(printf '%s\n' "${bad[@]}")" "" "the plugins include only the engine (core/) and plugins/common/"
libs=$(sed -n 's/^src_plugins_[a-z0-9_]*_la_LIBADD = //p' Makefile.am | tr ' ' '\n' | grep '\.la$' | sort -u | tr '\n' ' ')
is "$libs" "src/core/libm2gcore.la " "the plugins link libm2gcore only (Makefile.am)"

# ---- READMEs ------------------------------------------------------------------------
missing=()
for d in src src/core src/core/*/ src/tools src/tools/*/ src/plugins; do
	[[ -s ${d%/}/README.md ]] || missing+=("${d%/}")
done
is "${missing[*]}" "" "every folder of src/core and src/tools says what lives there (README.md)"

# ---- function length -----------------------------------------------------------------
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
	skip "no function over 250 lines" "Universal Ctags is not installed (contrib/m2g-bootstrap installs universal-ctags)"
else
	long=$(ctags -R --languages=C++,C --kinds-C++=f --kinds-C=f --fields=+ne -x \
		--_xformat='%{end} %{line} %N %F' src slinky 2>/dev/null |
		awk '$1 != "" && $1 - $2 + 1 > 250 { printf "%s %s:%s (%d lines)\n", $3, $4, $2, $1 - $2 + 1 }')
	n=$(ctags -R --languages=C++,C --kinds-C++=f --kinds-C=f --fields=+ne -x --_xformat='%N' src slinky 2>/dev/null | wc -l)
	ok "(( n > 100 ))" "ctags finds the functions of src/ and slinky/ ($n)"
	is "$long" "" "no function in src/ or slinky/ over 250 lines"
fi

done_testing
