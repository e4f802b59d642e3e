#!/usr/bin/env bash
# The Debian packages, installed as an admin installs them: contrib/m2g-deb
# builds slurm-m2g-plugins, m2g-tools and m2g-slinky (or M2G_DEB_DIR holds
# them already), apt installs them, the files are where README and
# slurm.conf.example say, the programs run, and a testbed whose PluginDir is
# the INSTALLED plugin directories (m2g-testbed --plugin-dir) loads all four
# plugins into slurmctld and runs a job that select/m2g places. The packages
# are purged at the end (and by the EXIT trap if the test dies), so the
# machine is left as it was; a machine where one of them was installed before
# is not touched (the test is skipped).
# The packages are a normal build whatever M2G_BUILDDIR is, so nothing here
# loads sanitizer-built code: no libasan preload, which dpkg-buildpackage's
# tools do not survive (dd's aligned_alloc fails ASan's stricter check).
M2G_SANITIZE=0
# The packages are built against, and depend on, Debian's Slurm (22.05):
# their testbed runs that Slurm, whichever release the build tree is for.
export M2G_SLURM=22.05
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
T=$TB_TMP
PKGS=(slurm-m2g-plugins m2g-tools m2g-slinky)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
STOCK_DIR=/usr/lib/$MULTIARCH/slurm-wlm
M2G_DIR=/usr/lib/$MULTIARCH/m2g/slurm
VERSION=$(sed -n 's/^AC_INIT(\[m2g\], *\[\([^]]*\)\].*/\1/p' "$SRC/configure.ac")
APT=(apt-get -y -q -o DPkg::Lock::Timeout=300)

installed() { dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q ' installed$'; }

if [[ $(id -u) != 0 ]]; then
	skip "Debian packages" "installing packages needs root"
	done_testing; exit 0
fi
for p in "${PKGS[@]}"; do
	if dpkg-query -W "$p" >/dev/null 2>&1 && [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$p") != "un "* ]]; then
		skip "Debian packages" "$p is already on this machine; the test would not leave it as it found it"
		done_testing; exit 0
	fi
done

# --- build (or reuse) the packages ---------------------------------------------------------
debs=()
if [[ -n ${M2G_DEB_DIR:-} ]]; then
	for p in "${PKGS[@]}"; do
		f=$(ls "$M2G_DEB_DIR/${p}_${VERSION}_"*.deb 2>/dev/null | head -n1) || true
		[[ -n $f ]] && debs+=("$f")
	done
	((${#debs[@]} == ${#PKGS[@]})) || { diag "M2G_DEB_DIR=$M2G_DEB_DIR lacks some of ${PKGS[*]} at $VERSION; building"; debs=(); }
fi
if ((${#debs[@]} == 0)); then
	t0=$SECONDS
	rc=0
	# (Not `mapfile < <(m2g-deb)`: mapfile's status is its own, never m2g-deb's.)
	# What is checked is the packaging, not the optimiser: noopt (-O0)
	# compiles faster. DEB_BUILD_OPTIONS set by the caller wins.
	DEB_BUILD_OPTIONS=${DEB_BUILD_OPTIONS:-nocheck noopt parallel=2} \
		"$SRC/contrib/m2g-deb" --out "$T/deb" >"$T/m2g-deb.out" 2>"$T/m2g-deb.err" || rc=$?
	mapfile -t built <"$T/m2g-deb.out"
	ok "$rc" "contrib/m2g-deb builds the packages"
	((rc == 0)) || sed 's/^/#   /' "$T/m2g-deb.err"
	diag "contrib/m2g-deb: $((SECONDS - t0)) s; $(grep -o 'built .*' "$T/m2g-deb.err" || echo 'no timing line')"
	for p in "${PKGS[@]}"; do
		for f in "${built[@]}"; do [[ ${f##*/} == "${p}_${VERSION}_"*.deb ]] && debs+=("$f"); done
	done
fi
is "${#debs[@]}" "${#PKGS[@]}" "one .deb each for ${PKGS[*]} at version $VERSION (configure.ac)"
((${#debs[@]} == ${#PKGS[@]})) || { done_testing; exit 1; }

# --- what the plugins package promises -----------------------------------------------------
slurm_version=$(dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins)
ok "dpkg-deb -f '${debs[0]}' Depends | grep -Fq 'slurm-wlm-basic-plugins (= $slurm_version)'" \
	"slurm-m2g-plugins depends on exactly the Slurm it was built for ($slurm_version)"
ok "! for f in ${debs[*]}; do dpkg-deb -c \$f; done | awk '{ print \$6 }' | grep -E '^\\./etc/|\\.la\$'" \
	"no package ships files under /etc (examples only) or libtool .la files"

# --- install: the admin's command ----------------------------------------------------------
purge_packages() {
	local p left=()
	for p in "${PKGS[@]}"; do installed "$p" && left+=("$p"); done
	((${#left[@]})) || return 0
	"${APT[@]}" purge "${left[@]}" >"$T/purge.log" 2>&1 || { echo "# apt-get purge ${left[*]} failed:"; sed 's/^/#   /' "$T/purge.log"; }
}
TB_CLEANUP_FUNCS+=(purge_packages)
slurm_conf_before=$(sha256sum /etc/slurm/slurm.conf 2>/dev/null || echo none)
rc=0
DEBIAN_FRONTEND=noninteractive "${APT[@]}" install --no-install-recommends "${debs[@]}" >"$T/install.log" 2>&1 || rc=$?
ok "$rc" "apt-get install ./slurm-m2g-plugins_*.deb ./m2g-tools_*.deb ./m2g-slinky_*.deb"
((rc == 0)) || { sed 's/^/#   /' "$T/install.log" | tail -20; done_testing; exit 1; }
is "$(sha256sum /etc/slurm/slurm.conf 2>/dev/null || echo none)" "$slurm_conf_before" "the site's slurm.conf is untouched"

# --- files where the documentation says -----------------------------------------------------
for so in "$STOCK_DIR/topology_m2g.so" "$STOCK_DIR/job_submit_m2g.so" "$STOCK_DIR/spank_m2g.so" "$STOCK_DIR/spank_m2g_jobmap.so" \
	"$M2G_DIR/select_cons_tres.so"; do
	ok "[[ -f '$so' ]] && dpkg -S '$so' | grep -q '^slurm-m2g-plugins:'" "slurm-m2g-plugins installs $so"
done
ok "[[ ! -e $STOCK_DIR/select_m2g.so && \$(ls '$M2G_DIR') == select_cons_tres.so ]]" \
	"select/m2g is only in m2g's directory (the stock select_cons_tres.so stays Slurm's)"
for prog in m2g m2g-exporter m2g-slinky; do
	is "$("/usr/bin/$prog" --version 2>&1)" "$prog $VERSION" "/usr/bin/$prog --version"
done
for prog in m2g-nodeagent m2g-curtaild; do
	is "$("/usr/sbin/$prog" --version 2>&1)" "$prog $VERSION" "/usr/sbin/$prog --version"
	ok "grep -q '^ExecStart=/usr/sbin/$prog ' /lib/systemd/system/$prog.service" \
		"$prog.service runs the installed /usr/sbin/$prog"
done
for page in 1:m2g 1:m2g-exporter 5:m2g.conf 5:m2g-recipes.conf 8:select_m2g 8:topology_m2g 8:job_submit_m2g \
	8:spank_m2g 8:m2g-slinky 8:m2g-nodeagent 8:m2g-curtaild; do
	ok "[[ -f /usr/share/man/man${page%%:*}/${page#*:}.${page%%:*}.gz ]]" "man ${page%%:*} ${page#*:} is installed"
done
EX=/usr/share/doc/m2g-tools/examples
ok "[[ -f $EX/slurm.conf.example && -f $EX/plugstack.conf.example && -f $EX/m2g.conf.example && -f $EX/m2g-recipes.conf.example ]]" \
	"example configuration in $EX"
ok "grep -q '^ExecStart=/usr/bin/m2g-exporter ' /lib/systemd/system/m2g-exporter.service" \
	"m2g-exporter.service runs the installed /usr/bin/m2g-exporter"
ok "[[ -f /usr/share/m2g/grafana/m2g-dashboard.json && -f /usr/share/m2g/prometheus/m2g-alerts.yml && -f /usr/share/m2g-slinky/deploy/kustomization.yaml && -f /usr/share/m2g-slinky/deploy/topology-writers/volcano.yaml ]]" \
	"Grafana dashboard, Prometheus rules and the Slinky manifests (with topology-writers/) are installed"
ok "/usr/bin/m2g topology validate $EX/m2g.conf.example" "the installed m2g validates the shipped example m2g.conf"

# --- a testbed that loads the installed plugins -------------------------------------------
tb_up --racks 1 --no-dbd --plugin-dir "$M2G_DIR:$STOCK_DIR"
LOG=$TB_DIR/log/slurmctld.log
CTLD_PID=$(tb_ctld_pid)
plugindir=$(scontrol show config | sed -n 's/^PluginDir *= *//p' | sed 's/ *$//')
is "$plugindir" "$M2G_DIR:$STOCK_DIR" "slurmctld runs with PluginDir=<m2g dir>:<Slurm's dir>"
ok "grep -q 'm2g: select: select/m2g active, wrapping $STOCK_DIR/select_cons_tres.so' '$LOG'" \
	"slurmctld.log: select/m2g active, wrapping the stock cons_tres"
ok "grep -q 'm2g: admission: job_submit/m2g active' '$LOG'" "slurmctld.log: job_submit/m2g active"
ok "scontrol show config | grep -Eq '^TopologyPlugin += topology/m2g\$' && scontrol show topology | grep -q '^SwitchName=nvl01 Level=0'" \
	"topology/m2g is in force: the NVLink domain nvl01 is a level-0 switch"
for so in "$M2G_DIR/select_cons_tres.so" "$STOCK_DIR/topology_m2g.so" "$STOCK_DIR/job_submit_m2g.so"; do
	ok "grep -Fq ' $so' /proc/$CTLD_PID/maps" "slurmctld mapped the installed ${so##*/} ($so)"
done
# (sbatch's help captured first: `sbatch --help | grep -q` can fail under
# pipefail when grep exits before sbatch has written everything.)
sbatch_help=$(sbatch --help 2>&1 || true)
ok "grep -q '^required $STOCK_DIR/spank_m2g.so ' '$TB_DIR/etc/plugstack.conf' && grep -q -- '--m2g-class' <<<\"\$sbatch_help\"" \
	"sbatch loads the installed spank_m2g.so (--m2g-class in its help)"
ok "grep -q '^required $STOCK_DIR/spank_m2g_jobmap.so dcgm_dir=' '$TB_DIR/etc/plugstack.conf'" \
	"plugstack.conf names the installed spank_m2g_jobmap.so with its dcgm_dir="

j=$(sbatch --parsable -N2 --gres=gpu:4 --m2g-class=training --wrap 'sleep 4')
check "a 2-node GPU job starts" wait_job_state "$j" RUNNING 60
ac=$(squeue -h -t all -j "$j" -O admin_comment:600 | sed 's/ *$//')
ok "[[ '$ac' == 'm2g:[domains=nvl01 '* ]]" "its AdminComment has select/m2g's placement segment"
diag "AdminComment: $ac"
ok "/usr/bin/m2g explain $j | grep -q nvl01" "the installed m2g explains it (libslurm of the running Slurm)"
check "the job completes" wait_job_state "$j" COMPLETED 60
tb_down

# --- removal leaves nothing behind --------------------------------------------------------
rc=0; "${APT[@]}" purge "${PKGS[@]}" >"$T/purge.log" 2>&1 || rc=$?
ok "$rc" "apt-get purge ${PKGS[*]}"
ok "[[ ! -e $STOCK_DIR/topology_m2g.so && ! -e /usr/lib/$MULTIARCH/m2g && ! -e /usr/bin/m2g && ! -e /usr/share/m2g ]]" \
	"purge removes the plugins, m2g's plugin directory and the programs"
ok "[[ -f $STOCK_DIR/select_cons_tres.so ]]" "Slurm's own select_cons_tres.so is still there"
done_testing
