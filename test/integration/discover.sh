#!/usr/bin/env bash
# m2g discover, end to end with the real command (no Slurm daemon):
#   - `discover node` on this machine reports what the kernel sees (CPUs,
#     NUMA, no GPUs, no RDMA devices) and exits 0;
#   - 16 nodes described from the NVL72-node hwloc fixture and the fake NVML
#     library (one NVLink clique per leaf), merged with the ibnetdiscover
#     fixture of a two-level fat tree, give exactly the expected m2g.conf,
#     which `m2g topology export` turns into Slurm topology files;
#   - a node with inactive NVLinks reports the problem and a signals document
#     that `m2g signals validate` accepts against the merged m2g.conf;
#   - bad input names the file, the line and what is accepted.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${M2G_BUILDDIR:-$SRC}
M2G=$BUILD/src/cli/m2g
FAKE=$BUILD/test/fake-nvml/.libs/libfake-nvml.so
FIX=$SRC/test/fixtures/discover
T=$TB_TMP

run() { rc=0; "$@" >"$T/out" 2>"$T/err" || rc=$?; out=$(cat "$T/out"); err=$(cat "$T/err"); }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# ---- this machine -------------------------------------------------------------
# hwloc counts the NUMA nodes' memory (on this VM less than /proc/meminfo says).
# The VM's memory can change under load (balloon): discover again until the
# NUMA nodes' total is the same before and after.
numa_mem_kb() { cat /sys/devices/system/node/node*/meminfo | awk '/MemTotal:/ {s += $4} END {print s}'; }
for try in 1 2 3 4 5; do
	mem_before=$(numa_mem_kb)
	run "$M2G" discover node --json --nvml-library /nonexistent/libnvidia-ml.so.1
	mem_kb=$(numa_mem_kb)
	[[ $mem_before == "$mem_kb" ]] && break
	diag "the NUMA nodes' memory changed while discover ran ($mem_before -> $mem_kb kB): again"
done
is "$rc" 0 "discover node exits 0 on this machine"
cp "$T/out" "$T/live.json"
is "$(json "$T/live.json" 'd["cpu"]["pus"]')" "$(getconf _NPROCESSORS_ONLN)" "PUs equal the online CPUs"
numa=$(find /sys/devices/system/node -maxdepth 1 -name 'node[0-9]*' | wc -l)
is "$(json "$T/live.json" 'd["cpu"]["numa_nodes"]')" "$numa" "NUMA nodes equal /sys/devices/system/node ($numa)"
is "$(json "$T/live.json" 'd["cpu"]["memory_bytes"] // 1024')" "$mem_kb" \
	"memory equals the NUMA nodes' MemTotal in sysfs ($mem_kb kB)"
nv=0
for v in /sys/bus/pci/devices/*/vendor; do [[ $(cat "$v") == 0x10de ]] && nv=$((nv + 1)); done
is "$(json "$T/live.json" 'len(d["gpus"])')" "$nv" "GPUs equal the NVIDIA PCI devices in sysfs ($nv)"
is "$(json "$T/live.json" 'd["nvml"]["ok"]')" "False" "NVML unavailable is reported, not fatal"
ok "grep -q 'cannot load NVML: /nonexistent/libnvidia-ml.so.1' $T/live.json" "and says why"
ib=0
[[ -d /sys/class/infiniband ]] && ib=$(find /sys/class/infiniband -mindepth 1 -maxdepth 1 | wc -l)
is "$(json "$T/live.json" 'len(d["hcas"])')" "$ib" "HCAs equal /sys/class/infiniband ($ib)"
if ((ib == 0)); then
	is "$(json "$T/live.json" 'd["ibverbs"]["ok"]')" "False" "no RDMA devices: ibverbs unavailable, with a reason"
fi
run "$M2G" discover node --nvml-library /nonexistent/libnvidia-ml.so.1
is "$rc" 0 "the text form exits 0 too"
ok "grep -q '^cpu: .* PUs, .* NUMA nodes' $T/out" "and prints the CPU line: $(grep '^cpu:' "$T/out")"

# ---- 16 NVL72-shaped nodes, the fat tree, the merge --------------------------------
for i in $(seq 1 16); do
	n=$(printf 'node%03d' "$i")
	FAKE_NVML_CLIQUE=$(((i - 1) / 4 + 1)) "$M2G" discover node --json --hostname "$n" \
		--hwloc-xml "$FIX/nvl72-node.xml" --nvml-library "$FAKE" >"$T/$n.json" || echo "node $n failed"
done
is "$(json "$T/node005.json" 'len(d["gpus"]), d["gpus"][0]["fabric"]["clique_id"], d["gpus"][3]["closest_nic"]')" \
	"(4, 2, 'mlx5_3')" "a node file has 4 GPUs, its clique and each GPU's closest NIC"
run "$M2G" discover fabric "$FIX/fat-tree-2level.ibnet"
is "$rc" 0 "discover fabric reads the ibnetdiscover fixture"
is "$(tail -1 "$T/out")" "6 switches (leaves 4, spines 2), 16 hosts, 31 links, 6 SHARP aggregation nodes" \
	"and counts its switches, hosts and links"
rc=0
"$M2G" discover fabric - <"$FIX/fat-tree-2level.ibnet" >"$T/stdin.out" 2>&1 || rc=$?
is "$rc:$(tail -1 "$T/stdin.out")" "0:$(tail -1 "$T/out")" "and the same from standard input"
run "$M2G" discover merge "$T"/node*.json --fabric "$FIX/fat-tree-2level.ibnet" --cluster-name fattree -o "$T/m2g.conf"
is "$rc" 0 "discover merge writes m2g.conf"
is "$(cat "$T/m2g.conf")" "$(cat "$FIX/fat-tree-2level.conf")" "the merged m2g.conf is the expected one"
is "$err" "m2g: warning: switches spine01, spine02 share the switches below them (a fat tree); m2g.conf, like Slurm's topology/tree, joins them as spine01" \
	"the fat tree's spines are joined, with a warning"
run "$M2G" topology validate "$T/m2g.conf"
is "$out" "$T/m2g.conf: ok: 16 nodes, 64 GPUs, 4 NVLink domains, 5 switches, 0 fault domains" "it validates"
run "$M2G" discover merge "$T"/node*.json --fabric "$FIX/fat-tree-2level.ibnet" --cluster-name fattree --json
printf '%s\n' "$out" >"$T/merge.json"
is "$rc:$(json "$T/merge.json" 'd["cluster"], d["nodes"], d["gpus"], d["nvlink_domains"], d["switches"], len(d["warnings"])')" \
	"0:('fattree', 16, 64, 4, 5, 1)" "discover merge --json: the counts and the warning as one object"
is "$(json "$T/merge.json" 'd["conf"]')" "$(cat "$T/m2g.conf")" "discover merge --json: conf is the m2g.conf text"
run "$M2G" topology export "$T/m2g.conf"
ok "grep -qx 'SwitchName=nvl02 Nodes=node\[005-008\]' $T/out" "topology export: each clique is a lowest switch"
ok "grep -qx 'SwitchName=spine01 Switches=leaf\[01-04\]' $T/out" "topology export: the spine above the leaves"
run "$M2G" topology export --format=block "$T/m2g.conf"
ok "grep -qx 'BlockName=nvl01 Nodes=node\[001-004\]' $T/out" "topology export --format=block: cliques as blocks"
run "$M2G" discover merge "$T"/node*.json --slurm-names 's/^node0*([0-9]+)$/gb\1/'
ok "grep -qx 'DomainName=nvl04 Nodes=gb\[13-16\] Size=4 .*' $T/out" "--slurm-names renames the hosts"

# ---- health into the signals feed --------------------------------------------------
FAKE_NVML_CLIQUE=2 FAKE_NVML_INACTIVE_LINKS=1:3,1:4 "$M2G" discover node --json --hostname node005 \
	--hwloc-xml "$FIX/nvl72-node.xml" --nvml-library "$FAKE" >"$T/sick.json"
is "$(json "$T/sick.json" 'd["problems"]')" "['GPU 1 (0009:03:00.0): 2 of 18 NVLinks inactive']" \
	"inactive NVLinks are a problem"
FAKE_NVML_CLIQUE=2 FAKE_NVML_INACTIVE_LINKS=1:3,1:4 "$M2G" discover node --signals --hostname node005 \
	--hwloc-xml "$FIX/nvl72-node.xml" --nvml-library "$FAKE" >"$T/sick-signals.json"
is "$(json "$T/sick-signals.json" 'd["health"]["degraded"]')" "node005" "--signals names the node degraded"
run "$M2G" signals validate --conf "$T/m2g.conf" "$T/sick-signals.json"
is "$rc" 0 "m2g signals validate accepts it against the merged m2g.conf"

FAKE_NVML_CLIQUE=3 FAKE_NVML_FABRIC=in_progress "$M2G" discover node --json --hostname node009 \
	--hwloc-xml "$FIX/nvl72-node.xml" --nvml-library "$FAKE" >"$T/reg.json"
is "$(json "$T/reg.json" 'd["problems"][0]')" "GPU 0 (0008:03:00.0): NVLink fabric registration in_progress" \
	"a fabric registration still in progress is a problem"
FAKE_NVML_CLIQUE=3 FAKE_NVML_FABRIC=in_progress "$M2G" discover node --signals --hostname node009 \
	--hwloc-xml "$FIX/nvl72-node.xml" --nvml-library "$FAKE" >"$T/reg-signals.json"
run "$M2G" signals validate --conf "$T/m2g.conf" "$T/reg-signals.json"
is "$rc" 0 "and its signals document (node009 degraded) validates too"
mkdir -p "$T/reg"
cp "$T"/node*.json "$T/reg/"
cp "$T/reg.json" "$T/reg/node009.json"
run "$M2G" discover merge "$T"/reg/node*.json --fabric "$FIX/fat-tree-2level.ibnet"
ok "grep -q 'host node009: NVLink fabric registration in_progress on GPU 0 (0008:03:00.0); it is left out of any NVLink domain' $T/err" \
	"merge warns that a host still registering is left out of its domain"
ok "grep -qx 'DomainName=nvl03 Nodes=node\[010-012\] Size=3 .*' $T/out" "and the domain has the other three"

# ---- bad input ----------------------------------------------------------------
run "$M2G" discover fabric "$FIX/bad-undefined-peer.ibnet"
is "$rc" 1 "a fabric linking to an undefined GUID is rejected"
ok "grep -q 'bad-undefined-peer.ibnet:14: .*which no Switch, Ca or Rt record in the file defines' $T/err" \
	"naming the line: $err"
run "$M2G" discover merge "$T/node001.json" "$T/node001.json"
is "$rc:$err" "1:m2g: host node001 is given twice; give each node's facts once" "a host given twice is an error"
echo '{"schema":"m2g.node/v1","hostname":"x","hwloc":{"ok":true,"detail":""},"ibverbs":{"ok":true,"detail":""},"nvml":{"ok":true,"detail":""},"gpus":[{"index":"0"}]}' >"$T/bad.json"
run "$M2G" discover merge "$T/bad.json"
is "$rc:$err" "1:m2g: $T/bad.json: gpus[0].index: expected a whole number or null" "a bad node file names the path"
run "$M2G" discover node --hwloc-xml "$T/nope.xml"
is "$rc" 1 "an unreadable hwloc XML is an error"
ok "grep -q 'nope.xml' $T/err" "naming the file: $err"
done_testing
