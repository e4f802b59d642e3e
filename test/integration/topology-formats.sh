#!/usr/bin/env bash
# `m2g topology export` for other schedulers and `m2g topology import` back:
#   - every export of every fixture cluster passes the schema of the project
#     that reads it (test/schemas: m2g's encodings of the Kueue, KAI and
#     Volcano CRD OpenAPI schemas, core/v1 Node labels, and topology.yaml(5)),
#     plus the CEL and webhook rules JSON Schema cannot say
#     (test/tools/validate-topology-export.py);
#   - the validator is not vacuous: broken copies of the exports fail it,
#     each for the rule it breaks;
#   - -o writes the golden files; the imports round-trip through m2g.conf;
#   - bad input is an error that says what and where, with exit status 1.
# Slurm's own parser reads the slurm-yaml export in topology-plugin.sh
# (Slurm 26.05). Needs no Slurm daemon; needs python3-yaml and
# python3-jsonschema (contrib/m2g-bootstrap).
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
M2G=${M2G_BUILDDIR:-$SRC}/src/cli/m2g
FIX=$SRC/test/fixtures
SCHEMAS=$SRC/test/schemas
VALIDATE=$SRC/test/tools/validate-topology-export.py
DATA=${M2G_DATA:-$SRC/../shared/data}
T=$TB_TMP
FORMATS="slurm-yaml kueue kai volcano labels"

# run CMD...: stdout in $T/out, stderr in $err, status in $rc.
run() { rc=0; "$@" >"$T/out" 2>"$T/err" || rc=$?; err=$(cat "$T/err"); }
diag_lines() { while IFS= read -r l; do diag "  $l"; done <<<"$1"; }
# valid FORMAT FILE: the validator's verdict (its output as diag on failure).
valid() {
	local out st=0
	out=$(python3 "$VALIDATE" "$SCHEMAS" "$1" "$2" 2>&1) || st=$?
	((st == 0)) || diag_lines "$out"
	return $st
}
# invalid FORMAT FILE PATTERN: the validator rejects FILE, saying PATTERN.
invalid() {
	local out st=0
	out=$(python3 "$VALIDATE" "$SCHEMAS" "$1" "$2" 2>&1) || st=$?
	if ((st == 1)) && grep -q -- "$3" <<<"$out"; then return 0; fi
	diag "  status $st, wanted 1 and '$3' in:"
	diag_lines "$out"
	return 1
}

for s in "$SCHEMAS"/*.json; do
	check "${s#"$SRC/"} is a valid JSON Schema 2020-12 document" \
		python3 -c 'import json, sys, jsonschema; jsonschema.Draft202012Validator.check_schema(json.load(open(sys.argv[1])))' "$s"
done

# ---- every format, every fixture cluster: valid for its reader ---------------
for conf in nvl72-8rack dgx-h100-pod nvl72-64rack; do
	for f in $FORMATS; do
		run "$M2G" topology export --format="$f" -o "$T/$conf.$f" "$FIX/$conf.conf"
		if ((rc != 0)); then
			ok 1 "export --format=$f $conf.conf"
			diag_lines "$err"
			continue
		fi
		check "export --format=$f of $conf.conf passes its schema and rules" valid "$f" "$T/$conf.$f"
	done
done

# ---- -o writes the golden files of every fixture cluster ----------------------
# (The unit tests hold nvl72-8rack's too.) A missing golden fails: a new
# fixture cluster comes with its goldens.
for conf in nvl72-8rack dgx-h100-pod nvl72-64rack; do
	for pair in slurm-yaml:topology.yaml kueue:kueue.yaml kai:kai.yaml volcano:volcano.yaml labels:labels.yaml; do
		g=$FIX/$conf.${pair#*:}
		if [[ ! -f $g ]]; then
			ok 1 "export --format=${pair%%:*} of $conf.conf has a golden file"
			diag "  no ${g#"$SRC/"}: write it with m2g topology export --format=${pair%%:*} -o ${g#"$SRC/"} test/fixtures/$conf.conf"
			continue
		fi
		check "export --format=${pair%%:*} -o matches test/fixtures/$conf.${pair#*:}" \
			cmp -s "$g" "$T/$conf.${pair%%:*}"
	done
done
run "$M2G" topology export --format=kai --name fabric-a "$FIX/nvl72-8rack.conf"
check "--name names the KAI Topology" grep -qx '  name: "fabric-a"' "$T/out"
run "$M2G" topology export --format=labels --name fabric-a "$FIX/nvl72-8rack.conf"
check "--name names the Slurm topologies in Slinky's annotation" \
	grep -q 'topology.slinky.slurm.net/spec: "fabric-a-tree:spine01:leaf01:nvl01,fabric-a-block:nvl01"' "$T/out"

# ---- the validator fails broken copies, each for its rule ---------------------
# An exporter that wrote nothing, or left out an object kind the reader needs,
# must not pass.
: >"$T/empty"
printf '# nothing but a comment\n---\n' >"$T/comment-only"
for f in $FORMATS; do
	check "validator: an empty --format=$f output is refused" invalid "$f" "$T/empty" "the output is empty"
done
check "validator: a file of comments and document markers only is refused (kueue)" \
	invalid kueue "$T/comment-only" "the output is empty"
printf '[]\n' >"$T/empty-list"
check "validator: an empty topology list is refused (slurm-yaml)" invalid slurm-yaml "$T/empty-list" "the output is empty"
printf '{"apiVersion": "v1", "kind": "List", "items": []}\n' >"$T/empty-items"
check "validator: a v1 List with no items is refused (labels)" invalid labels "$T/empty-items" "the output is empty"
# Missing kinds: the Kueue export without its Topology, then without its
# ResourceFlavor; one format's objects given as another's.
python3 - "$T/nvl72-8rack.kueue" "$T/k-notopo" "$T/k-noflavor" <<'EOF'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
yaml.safe_dump_all([d for d in docs if d["kind"] != "Topology"], open(sys.argv[2], "w"))
yaml.safe_dump_all([d for d in docs if d["kind"] != "ResourceFlavor"], open(sys.argv[3], "w"))
EOF
check "validator: a Kueue export with no Topology is refused, naming the kind" \
	invalid kueue "$T/k-notopo" "no Topology object (kueue.x-k8s.io/v1beta2)"
check "validator: a Kueue export with no ResourceFlavor is refused, naming the kind" \
	invalid kueue "$T/k-noflavor" "no ResourceFlavor object (kueue.x-k8s.io/v1beta2)"
check "validator: Kueue objects given as --format=volcano: no HyperNode, refused" \
	invalid volcano "$T/nvl72-8rack.kueue" "no HyperNode object (topology.volcano.sh/v1alpha1)"
check "validator: Volcano objects given as --format=kai: no KAI Topology, refused" \
	invalid kai "$T/nvl72-8rack.volcano" "no Topology object (kai.scheduler/v1alpha1)"
echo 'just text' >"$T/scalar"
check "validator: a YAML scalar is not a Kubernetes object" invalid kai "$T/scalar" "is not a Kubernetes object"
K=$T/nvl72-8rack.kueue
# hostname not last (CEL), a duplicate level (CEL), a bad label key (pattern)
python3 - "$K" "$T/k1" "$T/k2" "$T/k3" <<'EOF'
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
def write(path, mutate):
    d = [yaml.safe_load(yaml.safe_dump(x)) for x in docs]
    mutate(d)
    yaml.safe_dump_all(d, open(path, "w"))
def swap(d):
    lv = d[0]["spec"]["levels"]; lv[-1], lv[0] = lv[0], lv[-1]
write(sys.argv[2], swap)
write(sys.argv[3], lambda d: d[0]["spec"]["levels"].insert(0, dict(d[0]["spec"]["levels"][0])))
write(sys.argv[4], lambda d: d[0]["spec"]["levels"][0].update(nodeLabel="Bad Label/"))
EOF
check "validator: kubernetes.io/hostname above the lowest level is refused (Kueue CEL)" \
	invalid kueue "$T/k1" "can only be the lowest level"
check "validator: a repeated level is refused (Kueue CEL)" invalid kueue "$T/k2" "must be unique"
check "validator: a label key that is not a qualified name is refused (CRD pattern)" \
	invalid kueue "$T/k3" "does not match"
sed 's/^  topologyName: .*/  topologyName: "other"/' "$K" >"$T/k4"
check "validator: a ResourceFlavor naming no Topology in the file is refused" \
	invalid kueue "$T/k4" "names no Topology"
python3 - "$T/nvl72-8rack.volcano" "$T/v1" "$T/v2" <<'EOF'
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
docs[0]["spec"]["members"][0]["selector"]["regexMatch"] = {"pattern": "r01n.*"}
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))
docs = list(yaml.safe_load_all(open(sys.argv[1])))
docs[-1]["spec"]["tier"] = 1
yaml.safe_dump_all(docs, open(sys.argv[3], "w"))
EOF
check "validator: a HyperNode selector with exactMatch and regexMatch is refused (Volcano CEL)" \
	invalid volcano "$T/v1" "is valid under each of"
check "validator: a HyperNode whose member is not in a lower tier is refused" \
	invalid volcano "$T/v2" "is not in a lower tier"
sed '0,/accelerator.topograph.run\/domain: "nvl01"/s//accelerator.topograph.run\/domain: "'"$(printf 'x%.0s' {1..64})"'"/' \
	"$T/nvl72-8rack.labels" >"$T/l1"
check "validator: a label value over 63 characters is refused" invalid labels "$T/l1" "is too long"
sed 's/^      - 36$/      - 40/' "$T/nvl72-8rack.slurm-yaml" >"$T/s1"
check "validator: block_sizes that are not the base times a power of two are refused (topology/block)" \
	invalid slurm-yaml "$T/s1" "not the base times a power of two"
sed '0,/cluster_default: false/s//cluster_default: true/' "$T/nvl72-8rack.slurm-yaml" >"$T/s2"
check "validator: two cluster_default topologies are refused" invalid slurm-yaml "$T/s2" "more than one"

# ---- imports round-trip --------------------------------------------------------
run "$M2G" topology import --format=slurm-yaml --leaf-as-domain --gpus-per-node 4 -o "$T/back.conf" \
	"$T/nvl72-8rack.slurm-yaml"
is "$rc" 0 "import --format=slurm-yaml reads the export"
run "$M2G" topology export --format=tree "$T/back.conf"
cp "$T/out" "$T/back.tree"
run "$M2G" topology export --format=tree "$FIX/nvl72-8rack.conf"
check "slurm-yaml → m2g.conf → topology.conf is the original's topology.conf (but its LinkSpeed)" \
	diff <(grep -v '^#' "$T/back.tree") <(grep -v '^#' "$T/out" | sed 's/ LinkSpeed=[0-9]*//')
run "$M2G" topology import --format=slurm-yaml --topology nvl72x8-block -o "$T/block.conf" "$T/nvl72-8rack.slurm-yaml"
run "$M2G" topology validate "$T/block.conf"
check "import --topology picks the block topology: 8 NVLink domains, no switches" \
	grep -q ': ok: 144 nodes, 0 GPUs, 8 NVLink domains, 0 switches' "$T/out"

run "$M2G" topology import --format=labels -o "$T/labels.conf" "$T/nvl72-8rack.labels"
is "$rc" 0 "import --format=labels reads the export"
run "$M2G" topology export --format=labels "$T/labels.conf"
check "labels → m2g.conf → labels gives the same labels and annotations" \
	diff <(grep -v '^#' "$T/out") <(grep -v '^#' "$T/nvl72-8rack.labels")
check "the import keeps ClusterName from m2g.slurm.net/cluster" grep -qx 'ClusterName=nvl72x8' "$T/labels.conf"

# As `kubectl get nodes -o json` prints a cluster that topograph 0.x labelled.
cat >"$T/nodes.json" <<'EOF'
{"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [
 {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gb-0", "labels": {"kubernetes.io/hostname": "gb-0",
   "network.topology.nvidia.com/accelerator": "clique-7", "network.topology.nvidia.com/leaf": "ib-leaf-1",
   "network.topology.nvidia.com/spine": "ib-spine-1"}}, "status": {"capacity": {"nvidia.com/gpu": "4"}}},
 {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gb-1", "labels": {"kubernetes.io/hostname": "gb-1",
   "network.topology.nvidia.com/accelerator": "clique-7", "network.topology.nvidia.com/leaf": "ib-leaf-1",
   "network.topology.nvidia.com/spine": "ib-spine-1"}}, "status": {"capacity": {"nvidia.com/gpu": "4"}}}
]}
EOF
run "$M2G" topology import --format=labels -o "$T/k.conf" "$T/nodes.json"
run "$M2G" topology show "$T/k.conf"
check "kubectl's JSON with topograph 0.x labels: the clique is an NVLink domain (named nvl01) under the leaf" \
	grep -Eq -- '-- nvl01 +nvlink +2/2 nodes, 8 GPUs +gb-\[0-1\]' "$T/out"
check "... the leaf under the spine, as m2g-slinky reads them" grep -Eq -- '-- ib-leaf-1 +leaf' "$T/out"
check "... and the GPUs from the nvidia.com/gpu capacity" grep -q '^cluster m2g: 2 nodes, 8 GPUs' "$T/out"

# ---- bad input: what and where, status 1 ---------------------------------------
run "$M2G" topology import --format=slurm-yaml --topology nope "$T/nvl72-8rack.slurm-yaml"
check "import --topology of a missing topology: status 1, and the names there are" \
	test "$rc" = 1 -a -n "$(grep -F "no topology named 'nope'; the file has: nvl72x8-tree, nvl72x8-block" <<<"$err")"
printf -- '- topology: t\n  tree:\n    switches:\n      - switch: s1\n        nodes: n[1-2]\n        children: s2\n' >"$T/bad.yaml"
run "$M2G" topology import --format=slurm-yaml "$T/bad.yaml"
check "a switch with both children and nodes: file:line and the rule" \
	test "$rc" = 1 -a -n "$(grep -F "bad.yaml:4: switch s1 needs exactly one of 'children' or 'nodes'" <<<"$err")"
run "$M2G" topology import --format=labels "$T/nvl72-8rack.kueue"
check "a Kueue file given as labels: status 1, 'expected a Kubernetes Node object'" \
	test "$rc" = 1 -a -n "$(grep -F 'expected a Kubernetes Node object' <<<"$err")"
run "$M2G" topology export --format=yunikorn "$FIX/nvl72-8rack.conf"
check "an unknown format is a usage error naming the accepted ones" \
	test "$rc" = 2 -a -n "$(grep -F 'slurm-yaml' <<<"$err")"
if [[ -r $DATA/lingjun2023_topology.conf ]]; then
	run "$M2G" topology import --format=slurm --gpus-per-node 8 -o "$T/lj.conf" "$DATA/lingjun2023_topology.conf"
	run "$M2G" topology export --format=volcano "$T/lj.conf"
	check "Lingjun's upper-case switch names: volcano export refuses, naming the switch and the rule" \
		test "$rc" = 1 -a -n "$(grep -E "switch 'G6[^']*' cannot name a Kubernetes HyperNode" <<<"$err")"
	run "$M2G" topology export --format=kueue -o "$T/lj.kueue" "$T/lj.conf"
	check "Lingjun (847 hosts, 3 tiers) as Kueue levels passes the schema" valid kueue "$T/lj.kueue"
	run "$M2G" topology export --format=labels -o "$T/lj.labels" "$T/lj.conf"
	check "Lingjun's node labels pass the schema" valid labels "$T/lj.labels"
else
	skip "Lingjun volcano refusal" "no $DATA/lingjun2023_topology.conf"
	skip "Lingjun kueue" "no $DATA/lingjun2023_topology.conf"
	skip "Lingjun labels" "no $DATA/lingjun2023_topology.conf"
fi

done_testing
