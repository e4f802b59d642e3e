# Sourced by contrib/m2g-demo and contrib/m2g-check: install what is
# missing, then configure and build m2g out of tree in $M2G_BUILDDIR
# (default <repo>/build). Defines m2g_build; exits through `die` on error.
# M2G_CONFIGURE_EXTRA: more configure arguments (m2g-check --sanitizers:
# --enable-sanitizers), added to those of an already configured directory.

M2G_TOP=${M2G_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
M2G_BUILDDIR=${M2G_BUILDDIR:-$M2G_TOP/build}
export M2G_BUILDDIR
M2G_CONFIGURE_EXTRA=${M2G_CONFIGURE_EXTRA:-}
# ../shared/data beside the repository (CI lays it at the same place).
M2G_DATA=${M2G_DATA:-$(cd "$M2G_TOP/.." && pwd)/shared/data}
export M2G_DATA

# m2g_build LOG [RELEASE]: bootstrap, autogen, configure (once), make.
# Output to LOG. RELEASE (default $M2G_SLURM, else 22.05): the Slurm to
# build against: 22.05 is Debian's packages; another release is built from
# its tarball by `m2g-bootstrap --slurm RELEASE` and used with --with-slurm.
m2g_build() {
  local log=$1 rel=${2:-${M2G_SLURM:-22.05}} slurm_src slurm_prefix=""
  : >"$log"
  if [ "$rel" = 22.05 ]; then
    slurm_src=$("$M2G_TOP/contrib/m2g-bootstrap" 2>>"$log") || return 1
  else
    slurm_src=$("$M2G_TOP/contrib/m2g-bootstrap" --slurm "$rel" 2>>"$log") || return 1
    slurm_prefix=$("$M2G_TOP/contrib/m2g-bootstrap" --slurm "$rel" --print-slurm-prefix 2>>"$log") || return 1
  fi
  {
    if [ ! -x "$M2G_TOP/configure" ] || [ "$M2G_TOP/configure.ac" -nt "$M2G_TOP/configure" ] ||
       [ "$M2G_TOP/Makefile.am" -nt "$M2G_TOP/Makefile.in" ]; then
      (cd "$M2G_TOP" && ./autogen.sh)
    fi
    mkdir -p "$M2G_BUILDDIR"
    cd "$M2G_BUILDDIR" || return 1
    # A configured directory keeps its options (m2g-demo run from a test in
    # build-asan/ must not drop --enable-sanitizers); M2G_CONFIGURE_EXTRA's
    # are added to them.
    local reconf=no arg
    if [ -f config.status ]; then
      eval "set -- $(./config.status --config)"
    else
      set -- --with-slurm-source="$slurm_src" ${slurm_prefix:+--with-slurm="$slurm_prefix"} --enable-werror
    fi
    for arg in $M2G_CONFIGURE_EXTRA; do
      case " $* " in *" $arg "*) ;; *) set -- "$@" "$arg"; reconf=yes ;; esac
    done
    if [ ! -f Makefile ] || [ "$M2G_TOP/configure" -nt config.status ] || [ $reconf = yes ]; then
      "$M2G_TOP/configure" "$@" || return 1
      # New options (another compiler, sanitizers) change every object,
      # and make only compares timestamps: start from clean.
      [ $reconf = no ] || make clean
    fi
    make -j2
  } >>"$log" 2>&1
}
