#!/usr/bin/env bash
# m2g-slinky end to end: a labelled 8-rack "Kubernetes cluster" served by the
# local HTTPS fake API server (test/slinky/fake_kube_apiserver.py, the API's
# wire format) -> m2g-slinky --once -> the m2g.conf it writes into a
# ConfigMap drives the real Slurm testbed, and a 72-GPU job lands in one of
# the NVLink domains the labels describe. Then the watch loop (a cordon and
# a new pod arrive as watch events and reach the ConfigMaps), and jobs as
# slurm-bridge submits them, whose intent comes from pod annotations through
# bridge-intents.json into job_submit/m2g.
# The GPU cliques are deliberately not the testbed's racks (each clique is
# the second half of one rack and the first half of the next), so a job
# placed in one clique proves the adapter's m2g.conf is the one in force.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${M2G_BUILDDIR:-$SRC}
ADAPTER=$BUILD/slinky/src/m2g-slinky
PY=/usr/bin/python3
[[ -x $PY ]] || PY=python3
T=$TB_TMP
UUID=0c6f2d1e-5b7a-4c3e-9f21-7d8e6a5b4c30

# ---- a throwaway CA and server certificate ------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -out "$T/ca.crt" -days 2 \
	-subj /CN=m2g-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$T/srv.key" -out "$T/srv.csr" -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$T/ext"
openssl x509 -req -in "$T/srv.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial -out "$T/srv.crt" \
	-days 2 -extfile "$T/ext" 2>/dev/null

# ---- the labelled cluster: 144 Nodes, 144 slurmd pods ----------------------------
"$PY" - "$T/scenario.json" "$UUID" <<'PYEOF'
import json, sys
path, uuid = sys.argv[1], sys.argv[2]
nodes, pods = [], []
for r in range(1, 9):
    for n in range(1, 19):
        i = (r - 1) * 18 + (n - 1)
        clique = (i + 9) // 18            # 0..8: halves of neighbouring racks
        name = "k8s-%02d-%02d" % (r, n)
        nodes.append({"apiVersion": "v1", "kind": "Node",
                      "metadata": {"name": name, "labels": {
                          "nvidia.com/gpu.clique": "%s.%d" % (uuid, clique),
                          "fabric.topograph.run/tier-0": "leaf01" if clique <= 4 else "leaf02",
                          "fabric.topograph.run/tier-1": "spine01",
                          "nvidia.com/gpu.count": "4"}},
                      "spec": {},
                      "status": {"allocatable": {"cpu": "8", "nvidia.com/gpu": "4"},
                                 "capacity": {"cpu": "8", "nvidia.com/gpu": "4"},
                                 "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}})
        pods.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "slurm-worker-gpu-%d" % i, "namespace": "slurm",
                                  "labels": {"app.kubernetes.io/name": "slurmd",
                                             "app.kubernetes.io/component": "worker",
                                             "app.kubernetes.io/instance": "slurm-worker-gpu"}},
                     "spec": {"nodeName": name, "hostname": "r%02dn%02d" % (r, n),
                              "containers": [{"name": "slurmd", "image": "slurmd"}]}})
# Pods slurm-bridge schedules (any namespace): a JobSet of 18 that asks for
# one NVLink domain, one with a refused annotation, one without any, one of
# another scheduler (not read), one finished (left out).
def bridge(name, ann, scheduler="slurm-bridge-scheduler", phase=None, ns="ml"):
    p = {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"name": name, "namespace": ns, "annotations": ann,
                      "creationTimestamp": "2026-11-30T01:00:00Z"},
         "spec": {"schedulerName": scheduler, "containers": [{"name": "main", "image": "trainer"}]}}
    if phase:
        p["status"] = {"phase": phase}
    return p
train = {"m2g.slurm.net/topology": "strict:nvlink", "m2g.slurm.net/class": "training",
         "m2g.slurm.net/tags": "team=llm,run=e2e"}
for i in range(18):
    pods.append(bridge("train-%d" % i, dict(train)))
# A JobSet of 27 that asks for NVLink groups of 9: no clique holds 27 nodes,
# so strict:nvlink alone could never start it; with the segment it runs as
# three groups of 9, each inside one clique.
for i in range(27):
    pods.append(bridge("seg-%d" % i, {"m2g.slurm.net/topology": "strict:nvlink", "m2g.slurm.net/segment": "9"}))
pods.append(bridge("bad-0", {"m2g.slurm.net/class": "bogus"}))
pods.append(bridge("plain-0", {}))
pods.append(bridge("other-0", {"m2g.slurm.net/class": "batch"}, scheduler="default-scheduler"))
pods.append(bridge("done-0", {"m2g.slurm.net/class": "batch"}, phase="Succeeded"))
# A pod of another component in the namespace: not selected.
pods.append({"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "slurm-controller-0", "namespace": "slurm",
                          "labels": {"app.kubernetes.io/name": "slurmctld"}},
             "spec": {"nodeName": "k8s-01-01", "hostname": "slurm-controller-0",
                      "containers": [{"name": "slurmctld", "image": "slurmctld"}]}})
json.dump({"tokens": ["m2g-e2e-token"], "user": "system:serviceaccount:slurm:m2g-slinky",
           "objects": {"nodes": nodes, "pods": pods}}, open(path, "w"))
PYEOF

# start_api NAME: serve $T/NAME.json, log requests to $T/NAME.jsonl; sets
# API_PORT, or fails saying why the server did not come up.
API_PORT=""
start_api() {
	local pid
	"$PY" "$SRC/test/slinky/fake_kube_apiserver.py" --cert "$T/srv.crt" --key "$T/srv.key" \
		--scenario "$T/$1.json" --log "$T/$1.jsonl" >"$T/$1.out" 2>&1 &
	pid=$!
	TB_CLEANUP_PIDS+=("$pid")  # lib.sh's EXIT trap stops it, also on failure
	API_PORT=$(tb_await_server "fake API server ($1)" "$pid" "$T/$1.out" 's/^PORT=//p' 30) || API_PORT=""
	[[ -n $API_PORT ]]
}
start_api scenario || true
port=$API_PORT
ok "[[ -n '$port' ]]" "the fake API server listens on 127.0.0.1:${port:-(none)}"
[[ -n $port ]] || exit 1
cat >"$T/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: https://127.0.0.1:$port
    certificate-authority: $T/ca.crt
users:
- name: m2g-slinky
  user:
    token: m2g-e2e-token
contexts:
- name: fake
  context:
    cluster: fake
    user: m2g-slinky
    namespace: slurm
current-context: fake
KC

# ---- the adapter, once ---------------------------------------------------------
rc=0
"$ADAPTER" --kubeconfig "$T/kubeconfig" --once --cluster-name slinky >"$T/adapter.out" 2>"$T/adapter.err" || rc=$?
is "$rc" 0 "m2g-slinky --once exits 0"
[[ $rc == 0 ]] || diag "$(cat "$T/adapter.err")"
get() { curl -sS --cacert "$T/ca.crt" -H 'Authorization: Bearer m2g-e2e-token' "https://127.0.0.1:$port$1"; }
get /api/v1/namespaces/slurm/configmaps/m2g-config >"$T/cm.json"
"$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["m2g.conf"], end="")' "$T/cm.json" >"$T/m2g.conf"
ok "grep -qx 'DomainName=nvl02 Nodes=r01n\[10-18\],r02n\[01-09\] Size=18  # nvidia.com/gpu.clique=$UUID.1' $T/m2g.conf" \
	"ConfigMap m2g-config holds m2g.conf with the cliques as NVLink domains"
ok "grep -qx 'SwitchName=spine01 Level=spine Switches=leaf\[01-02\]' $T/m2g.conf" "and the tiers as switches"
is "$(grep -c '^NodeName=' "$T/m2g.conf")" 144 "one NodeName per slurmd pod (the controller pod is not one)"
get /api/v1/namespaces/slurm/configmaps/m2g-signals >"$T/sig.json"
ok "grep -q 'm2g.signals/v1' $T/sig.json" "ConfigMap m2g-signals holds the signals feed"
get /api/v1/nodes/k8s-01-12 >"$T/node.json"
is "$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["annotations"]["topology.slinky.slurm.net/spec"])' "$T/node.json")" \
	"default:spine01:leaf01:nvl02" "node k8s-01-12 carries its place in the Slurm topology"
patches=$(grep -c '"method": "PATCH", "path": "/api/v1/nodes/' "$T/scenario.jsonl" || true)
is "$patches" 144 "one merge patch per node"
ctypes=$("$PY" -c '
import json, sys
print(sorted({r["headers"].get("Content-Type", "") for r in map(json.loads, open(sys.argv[1])) if r["method"] == "PATCH"}))' \
	"$T/scenario.jsonl")
is "$ctypes" "['application/merge-patch+json']" "patches are JSON merge patches"
unauth=$("$PY" -c '
import json, sys
bad = [r for r in map(json.loads, open(sys.argv[1])) if r["headers"].get("Authorization") != "Bearer m2g-e2e-token"]
print(len(bad))' "$T/scenario.jsonl")
is "$unauth" "0" "every request carries the bearer token"
rc=0
"$ADAPTER" --kubeconfig "$T/kubeconfig" --once >/dev/null 2>"$T/again.err" || rc=$?
is "$rc:$(grep -c '"method": "PATCH", "path": "/api/v1/nodes/' "$T/scenario.jsonl")" "0:144" \
	"a second pass changes nothing that is already right"

# ---- --write-topology: the same topology for Slurm's topology.yaml, Kueue, KAI, Volcano ----
# A second server with the three CRDs, a HyperNode left from an earlier
# topology (ours: to be removed), one of someone else's (kept), and a KAI
# Topology that exists with other levels, whose update the API refuses as
# KAI's CEL rule does.
"$PY" - "$T/scenario.json" "$T/writers.json" <<'PYEOF'
import json, sys
sc = json.load(open(sys.argv[1]))
sc["resources"] = {
    "topologies.kueue.x-k8s.io": {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "Topology", "namespaced": False},
    "resourceflavors": {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "ResourceFlavor", "namespaced": False},
    "topologies.kai.scheduler": {"group": "kai.scheduler", "version": "v1alpha1", "kind": "Topology", "namespaced": False},
    "hypernodes": {"group": "topology.volcano.sh", "version": "v1alpha1", "kind": "HyperNode", "namespaced": False},
}
hn = lambda name, labels: {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                           "metadata": {"name": name, "labels": labels},
                           "spec": {"tier": 1, "members": [{"type": "Node", "selector": {"exactMatch": {"name": "k8s-01-01"}}}]}}
sc["objects"]["hypernodes"] = [hn("old-leaf", {"app.kubernetes.io/managed-by": "m2g-slinky"}), hn("site-rack", {})]
sc["objects"]["topologies.kai.scheduler"] = [{"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology",
    "metadata": {"name": "e2e"}, "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]}}]
sc["force"] = [{"method": "PATCH", "path": "/apis/kai.scheduler/v1alpha1/topologies/e2e", "status": 422,
                "reason": "Invalid", "message": "Topology.kai.scheduler \"e2e\" is invalid: spec.levels: Invalid value: "
                "\"array\": nodeLabel structure is immutable; only aliases may be edited"}]
json.dump(sc, open(sys.argv[2], "w"))
PYEOF
start_api writers || true
wport=$API_PORT
ok "[[ -n '$wport' ]]" "the second fake API server (CRDs) listens on 127.0.0.1:${wport:-(none)}"
[[ -n $wport ]] || exit 1
sed "s/127.0.0.1:$port/127.0.0.1:$wport/" "$T/kubeconfig" >"$T/kubeconfig-w"
mkdir -p "$T/wt"
rc=0
"$ADAPTER" --kubeconfig "$T/kubeconfig-w" --once --cluster-name e2e --write-topology=slurm-yaml,kueue,kai,volcano \
	--out-dir "$T/wt" >/dev/null 2>"$T/writers.err" || rc=$?
is "$rc" 0 "m2g-slinky --once --write-topology=slurm-yaml,kueue,kai,volcano exits 0 (one update refused)"
[[ $rc == 0 ]] || diag "$(tail -5 "$T/writers.err")"
wapi() { curl -sS --cacert "$T/ca.crt" -H 'Authorization: Bearer m2g-e2e-token' "https://127.0.0.1:$wport$1"; }
wapi /api/v1/namespaces/slurm/configmaps/m2g-config |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["data"].get("topology.yaml", ""), end="")' >"$T/wt/cm-topology.yaml"
# valid FORMAT FILE: test/tools/validate-topology-export.py's verdict; its
# report only as diagnostics (its "ok: N objects" is not a TAP line).
valid() {
	local st=0
	"$PY" "$SRC/test/tools/validate-topology-export.py" "$SRC/test/schemas" "$1" "$2" >"$T/valid.out" 2>&1 || st=$?
	((st == 0)) || diag "$(cat "$T/valid.out")"
	return $st
}
check "ConfigMap m2g-config has topology.yaml, valid for Slurm's topology.yaml" \
	valid slurm-yaml "$T/wt/cm-topology.yaml"
ok "grep -q 'nodes: \"r01n\[10-18\],r02n\[01-09\]\"' $T/wt/cm-topology.yaml" \
	"its blocks are the GPU cliques the labels describe"
wapi /api/v1/nodes/k8s-01-12 >"$T/node-w.json"
is "$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1]))["metadata"]; print(d["annotations"]["topology.slinky.slurm.net/spec"], d["labels"].get("m2g.slurm.net/cluster"))' "$T/node-w.json")" \
	"e2e-tree:spine01:leaf01:nvl02,e2e-block:nvl02 e2e" \
	"the node annotation names topology.yaml's topologies; the node carries m2g.slurm.net/cluster for Kueue"
# Every object as the API server holds it now, checked against its reader's schema.
{
	wapi /apis/kueue.x-k8s.io/v1beta2/topologies/e2e
	echo; echo ---; wapi /apis/kueue.x-k8s.io/v1beta2/resourceflavors/e2e
} | "$PY" -c '
import json, sys, yaml
docs = [json.loads(d) for d in sys.stdin.read().split("\n---\n") if d.strip()]
for d in docs:
    md = d["metadata"]; d["metadata"] = {"name": md["name"]}  # what m2g wrote, not the server-set fields
yaml.safe_dump_all(docs, sys.stdout)' >"$T/wt/kueue-live.yaml"
check "the Kueue Topology and ResourceFlavor the API server holds pass Kueue's schema and rules" \
	valid kueue "$T/wt/kueue-live.yaml"
is "$("$PY" -c 'import yaml,sys; print(" ".join(l["nodeLabel"] for l in next(yaml.safe_load_all(open(sys.argv[1])))["spec"]["levels"]))' "$T/wt/kueue-live.yaml")" \
	"fabric.topograph.run/tier-1 fabric.topograph.run/tier-0 nvidia.com/gpu.clique kubernetes.io/hostname" \
	"Kueue's levels are the labels the nodes carry (GPU clique, topograph tiers), top down"
wapi "/apis/topology.volcano.sh/v1alpha1/hypernodes" |
	"$PY" -c '
import json, sys, yaml
items = json.load(sys.stdin)["items"]
out = []
for d in items:
    if d["metadata"].get("labels", {}).get("app.kubernetes.io/managed-by") != "m2g-slinky":
        continue
    out.append({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                "metadata": {"name": d["metadata"]["name"]}, "spec": d["spec"]})
yaml.safe_dump_all(out, sys.stdout)' >"$T/wt/volcano-live.yaml"
check "the HyperNodes the API server holds pass Volcano's schema and rules" \
	valid volcano "$T/wt/volcano-live.yaml"
is "$(wapi /apis/topology.volcano.sh/v1alpha1/hypernodes/nvl02 |
	"$PY" -c 'import json,sys; m=json.load(sys.stdin)["spec"]["members"]; print(len(m), m[0]["selector"]["exactMatch"]["name"], m[-1]["selector"]["exactMatch"]["name"])')" \
	"18 k8s-01-10 k8s-02-09" "HyperNode nvl02 holds the Kubernetes nodes of its clique (not Slurm node names)"
is "$(wapi /apis/topology.volcano.sh/v1alpha1/hypernodes | "$PY" -c 'import json,sys; print(" ".join(sorted(i["metadata"]["name"] for i in json.load(sys.stdin)["items"] if not i["metadata"]["name"].startswith("nvl"))))')" \
	"leaf01 leaf02 site-rack spine01" "its stale HyperNode old-leaf is deleted; someone else's site-rack is kept"
ok "grep -q 'update Topology e2e: .*nodeLabel structure is immutable' $T/writers.err" \
	"KAI's refusal to change a Topology's levels is logged with the API's reason"
for f in kueue kai volcano; do
	check "the --out-dir copy of --write-topology=$f passes its schema" \
		valid "$f" "$T/wt/topology.$f.yaml"
done
before=$(grep -cE '"method": "(POST|PATCH|DELETE)", "path": "/apis/' "$T/writers.jsonl" || true)
rc=0
"$ADAPTER" --kubeconfig "$T/kubeconfig-w" --once --cluster-name e2e --write-topology=slurm-yaml,kueue,kai,volcano \
	>/dev/null 2>"$T/writers2.err" || rc=$?
after=$(grep -cE '"method": "(POST|PATCH|DELETE)", "path": "/apis/' "$T/writers.jsonl" || true)
is "$rc:$((after - before))" "0:1" "a second pass writes nothing that is already right (only the refused KAI update is retried)"

# ---- slurm-bridge pods' intents -------------------------------------------------------
"$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["data"]["bridge-intents.json"], end="")' "$T/sig.json" \
	>"$T/bridge-intents.json"
intent_of() {
	"$PY" -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["pods"].get(sys.argv[2]), sort_keys=True))' \
		"$T/bridge-intents.json" "$1"
}
is "$(intent_of ml/train-3)" \
	'{"env": {"M2G_CLASS": "training", "M2G_TAGS": "team=llm,run=e2e", "M2G_TOPOLOGY": "strict:nvlink"}}' \
	"bridge-intents.json carries a slurm-bridge pod's annotations as the M2G_* variables sbatch would send"
ok "intent_of ml/bad-0 | grep -q 'pod annotation m2g.slurm.net/class=bogus: '" "and a refused annotation with the parser's message"
is "$(intent_of ml/plain-0):$(intent_of ml/other-0):$(intent_of ml/done-0)" '{"env": {}}:null:null' \
	"a pod without annotations is listed; other schedulers' pods and finished pods are not"
ok "grep -q 'pod ml/bad-0: pod annotation m2g.slurm.net/class=bogus' $T/adapter.err" "the adapter logs the refused annotation"

# ---- the watch loop: changes arrive as watch events ------------------------------------
# A fresh server whose watches deliver a cordon and a new slurm-bridge pod.
"$PY" - "$T/scenario.json" "$T/scenario-watch.json" <<'PYEOF'
import copy, json, sys
sc = json.load(open(sys.argv[1]))
node = copy.deepcopy(next(n for n in sc["objects"]["nodes"] if n["metadata"]["name"] == "k8s-02-05"))
node["spec"]["unschedulable"] = True
late = {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "late-0", "namespace": "ml", "annotations": {"m2g.slurm.net/class": "inference"},
                     "creationTimestamp": "2026-11-30T01:00:00Z"},
        "spec": {"schedulerName": "slurm-bridge-scheduler", "containers": [{"name": "main", "image": "serve"}]}}
sc["watches"] = {
    "/api/v1/nodes": [{"batches": [{"delay": 2.0, "events": [{"type": "MODIFIED", "object": node}]}], "hold": 60}],
    "/api/v1/pods": [{"batches": [{"delay": 2.5, "events": [{"type": "ADDED", "object": late}]}], "hold": 60}],
    "/api/v1/namespaces/slurm/pods": [{"batches": [], "hold": 60}],
}
json.dump(sc, open(sys.argv[2], "w"))
PYEOF
start_api scenario-watch || { ok 1 "the second fake API server starts"; exit 1; }
port2=$API_PORT
sed "s/127.0.0.1:$port/127.0.0.1:$port2/" "$T/kubeconfig" >"$T/kubeconfig2"
"$ADAPTER" --kubeconfig "$T/kubeconfig2" --interval 30 >"$T/watch.out" 2>"$T/watch.err" &
WATCH_PID=$!
TB_CLEANUP_PIDS+=("$WATCH_PID")
get2() { curl -sS --cacert "$T/ca.crt" -H 'Authorization: Bearer m2g-e2e-token' "https://127.0.0.1:$port2$1"; }
seen_cordon=0 seen_pod=0
for _ in $(seq 1 60); do
	sig=$(get2 /api/v1/namespaces/slurm/configmaps/m2g-signals || true)
	grep -q 'down.*r02n05' <<<"$sig" && seen_cordon=1
	grep -q 'ml/late-0' <<<"$sig" && seen_pod=1
	((seen_cordon && seen_pod)) && break
	sleep 0.5
done
is "$seen_cordon" 1 "a cordon that arrives as a watch event reaches the signals feed (health.down r02n05)"
is "$seen_pod" 1 "a slurm-bridge pod that arrives as a watch event reaches bridge-intents.json"
ok "grep -q 'spec.schedulerName%3Dslurm-bridge-scheduler' $T/scenario-watch.jsonl" \
	"slurm-bridge pods are watched cluster-wide by their schedulerName (field selector)"
kill -TERM "$WATCH_PID"
rc=0
for _ in $(seq 1 50); do kill -0 "$WATCH_PID" 2>/dev/null || break; sleep 0.2; done
if kill -0 "$WATCH_PID" 2>/dev/null; then rc=timeout; else wait "$WATCH_PID" || rc=$?; fi
is "$rc" 0 "SIGTERM stops the watching adapter within 10 s, exit 0"
[[ $rc == 0 ]] || diag "$(tail -5 "$T/watch.err")"

# ---- the testbed runs on that m2g.conf ---------------------------------------------
if ! tb_up --racks 8; then
	ok 1 "testbed up"
	exit 1
fi
tb_write "$TB_DIR/etc/m2g.conf" <"$T/m2g.conf"
# job_submit/m2g reads the slurm-bridge intents where the ConfigMap would be mounted.
tb_write "$TB_DIR/etc/bridge-intents.json" <"$T/bridge-intents.json"
tb_append "$TB_DIR/etc/m2g.conf" "BridgeIntentsFile=$TB_DIR/etc/bridge-intents.json"
scontrol reconfigure
sleep 3
id=$(sbatch --parsable -o /dev/null -J nvl72 -N18 --exclusive --gres=gpu:4 --m2g-topology=strict:nvlink --wrap 'sleep 120')
if wait_job_state "$id" RUNNING 90; then
	nodes=$(job_nodelist "$id")
	diag "the 72-GPU job runs on $nodes"
	in_domain=$("$PY" - "$T/m2g.conf" "$(scontrol show hostnames "$nodes" | paste -sd, -)" <<'PYEOF'
import re, subprocess, sys
conf, got = sys.argv[1], set(sys.argv[2].split(","))
for line in open(conf):
    m = re.match(r"DomainName=(\S+) Nodes=(\S+)", line)
    if m:
        names = set(subprocess.run(["scontrol", "show", "hostnames", m.group(2)], capture_output=True,
                                   text=True).stdout.split())
        if got == names:
            print(m.group(1))
PYEOF
)
	ok "[[ -n '$in_domain' ]]" "the 72-GPU job fills exactly one NVLink domain of the adapter's m2g.conf ($in_domain)"
	racks=$(scontrol show hostnames "$nodes" | cut -c1-3 | sort -u | wc -l)
	is "$racks" 2 "which spans two testbed racks: the labels' cliques, not the testbed's own domains, are in force"
else
	ok 1 "the 72-GPU job runs"
	diag "$(scontrol show job "$id" | head -20)"
fi
scancel "$id" 2>/dev/null || true

# slurm-bridge keeps {"pods":[...]} in AdminComment and parses it back as
# strict JSON: neither job_submit/m2g nor select/m2g may add to it.
# (sbatch 22.05 has no --admin-comment: hold the job, set it as an operator
# would, release it, and let select/m2g place it.)
bridge='{"pods":["ml/train-0"]}'
bid=$(sbatch --parsable -H -o /dev/null -J bridge -N1 --gres=gpu:1 --wrap 'sleep 30')
scontrol update JobId="$bid" AdminComment="$bridge"
scontrol release "$bid"
if wait_job_state "$bid" RUNNING 60; then
	is "$(squeue -h -j "$bid" -O admin_comment:200 | sed 's/ *$//')" "$bridge" \
		"a slurm-bridge job's JSON AdminComment is left exactly as it was"
else
	ok 1 "the slurm-bridge-style job runs"
fi
scancel "$bid" 2>/dev/null || true

# ---- jobs as slurm-bridge submits them: AdminComment {"pods":[...]}, no SPANK ------------
SUBMIT=$BUILD/test/tools/bridge-submit
LOG=$TB_DIR/log/slurmctld.log
printf '#!/bin/sh\nenv | grep -E "M2G_|^OTEL_" | sort >"%s/env.$SLURM_JOB_ID" || true\nsleep 120\n' "$T" >"$T/job.sh"
train_pods=$("$PY" -c 'import json; print(json.dumps({"pods": ["ml/train-%d" % i for i in range(18)]}, separators=(",", ":")))')
tid=$("$SUBMIT" -c "$train_pods" -N18 -g gpu:4 -x -J bridge-train "$T/job.sh" 2>"$T/submit.err") || true
ok "[[ -n '$tid' ]]" "slurm-bridge's job for the 18 train pods is accepted"
if [[ -n $tid ]] && wait_job_state "$tid" RUNNING 90; then
	tnodes=$(job_nodelist "$tid")
	domain=$(grep -E "^DomainName=" "$T/m2g.conf" | while read -r d n _; do
		[[ $(scontrol show hostnames "${n#Nodes=}" | sort | paste -sd,) == $(scontrol show hostnames "$tnodes" | sort | paste -sd,) ]] &&
			echo "${d#DomainName=}"
	done || true)
	ok "[[ -n '$domain' ]]" "it fills one NVLink domain ($tnodes)"
	for _ in $(seq 1 30); do [[ -s $T/env.$tid ]] && break; sleep 0.5; done
	ok "grep -qx 'SLURM_SPANK_M2G_CLASS=training' $T/env.$tid && grep -qx 'SLURM_SPANK_M2G_TOPOLOGY=strict:nvlink' $T/env.$tid" \
		"the job carries the pods' intent as the SLURM_SPANK_M2G_* variables sbatch would have set"
	ok "grep -qx 'M2G_CLASS=training' $T/env.$tid && grep -q '^OTEL_RESOURCE_ATTRIBUTES=.*m2g.class=training' $T/env.$tid" \
		"and spank_m2g on the node tags the job from it (M2G_CLASS, OpenTelemetry attributes)"
	ok "grep -q 'slurm-bridge job for pod ml/train-0 (+17): M2G_CLASS=training M2G_TAGS=team=llm,run=e2e M2G_TOPOLOGY=strict:nvlink' $LOG" \
		"slurmctld.log says which intent came from which pods"
	is "$(squeue -h -j "$tid" -O admin_comment:400 | sed 's/ *$//')" "$train_pods" "and its AdminComment stays slurm-bridge's"
else
	ok 1 "the slurm-bridge train job runs"
	diag "$(cat "$T/submit.err")" "$(scontrol show job "$tid" 2>&1 | head -20)"
fi

# The segment annotation: 27 nodes in NVLink groups of 9, with the train job
# still holding one clique.
seg_pods=$("$PY" -c 'import json; print(json.dumps({"pods": ["ml/seg-%d" % i for i in range(27)]}, separators=(",", ":")))')
sid=$("$SUBMIT" -c "$seg_pods" -N27 -g gpu:4 -x -J bridge-seg "$T/job.sh" 2>"$T/seg.err") || true
if [[ -n $sid ]] && wait_job_state "$sid" RUNNING 90; then
	snodes=$(job_nodelist "$sid")
	# Nodes of the job per clique (the adapter's NVLink domains).
	per=$(grep -E '^DomainName=' "$T/m2g.conf" | while read -r d n _; do
		c=$(comm -12 <(scontrol show hostnames "${n#Nodes=}" | sort) <(scontrol show hostnames "$snodes" | sort) | wc -l)
		((c > 0)) && echo "${d#DomainName=}=$c"
	done | paste -sd' ' || true)
	diag "27-node segment job $sid: $snodes ($per)"
	bad=$(tr ' ' '\n' <<<"$per" | grep -cvE '^[^=]+=(9|18)$' || true)
	ok "[[ -n '$per' && $bad == 0 ]]" \
		"m2g.slurm.net/segment=9: the 27 nodes are whole groups of 9, each inside one clique ($per)"
	ok "grep -q 'slurm-bridge job for pod ml/seg-0 (+26): M2G_SEGMENT=9 M2G_TOPOLOGY=strict:nvlink' $LOG" \
		"the segment and topology annotations reach the job as its m2g intent"
else
	ok 1 "the 27-node slurm-bridge job with m2g.slurm.net/segment=9 runs"
	diag "$(cat "$T/seg.err")" "$(scontrol show job "$sid" 2>&1 | head -20)"
	skip "the segment and topology annotations reach the job" "the job did not run"
fi
for j in $tid $sid; do scancel "$j" 2>/dev/null || true; done

rc=0
"$SUBMIT" -c '{"pods":["ml/bad-0"]}' -J bridge-bad "$T/job.sh" >/dev/null 2>"$T/bad.err" || rc=$?
is "$rc" 1 "a slurm-bridge job whose pod has a refused annotation is refused"
ok "grep -q 'm2g: pod ml/bad-0: pod annotation m2g.slurm.net/class=bogus: ' $T/bad.err" \
	"with the option parser's message, naming the pod and the annotation"
rc=0
"$SUBMIT" -c '{"pods":["ml/train-0","ml/plain-0"]}' -J bridge-mixed "$T/job.sh" >/dev/null 2>"$T/mixed.err" || rc=$?
ok "[[ $rc == 1 ]] && grep -q 'of one job ask for different m2g.slurm.net/\* annotations' $T/mixed.err" \
	"pods of one job that disagree refuse the job"
pid=$("$SUBMIT" -c '{"pods":["ml/plain-0"]}' -J bridge-plain "$T/job.sh" 2>/dev/null) || true
nid=$("$SUBMIT" -c '{"pods":["ml/new-0"]}' -J bridge-new "$T/job.sh" 2>/dev/null) || true
if [[ -n $pid && -n $nid ]] && wait_job_state "$pid" RUNNING 60 && wait_job_state "$nid" RUNNING 60; then
	for _ in $(seq 1 30); do [[ -e $T/env.$pid && -e $T/env.$nid ]] && break; sleep 0.5; done
	# (Both files must exist: with none, "no M2G_ variable" would hold vacuously.)
	# Their one m2g variable is the tenant job_submit/m2g binds to the account.
	ok "[[ -e '$T/env.$pid' && -e '$T/env.$nid' ]] && ! grep -q '^M2G_CLASS' '$T/env.$pid' '$T/env.$nid' && ! cat '$T/env.$pid' '$T/env.$nid' | grep -v '^SLURM_SPANK_M2G_TAGS=tenant=[^,]*\$' | grep -q '^SLURM_SPANK_M2G_'" \
		"a pod without annotations, and one the adapter has not published yet, run with m2g.conf's defaults"
	ok "grep -q 'slurm-bridge pod ml/new-0 not in .*bridge-intents.json (generated at [0-9]*): m2g.conf.s defaults apply' $LOG" \
		"slurmctld.log names the pod the intents file does not know yet"
else
	ok 1 "slurm-bridge jobs without an intent run"
fi
for j in $pid $nid; do scancel "$j" 2>/dev/null || true; done

# A broken intents file keeps the last good document in force.
echo '{"version": "m2g.bridge-intents/v1", "pods": ' >"$TB_DIR/etc/bridge-intents.json"
rc=0
"$SUBMIT" -c '{"pods":["ml/bad-0"]}' -J bridge-bad2 "$T/job.sh" >/dev/null 2>&1 || rc=$?
is "$rc" 1 "a broken bridge-intents.json keeps the last good one in force (ml/bad-0 still refused)"
ok "grep -q 'bridge-intents.json: not JSON .*; keeping the last good one' $LOG" "and slurmctld.log says so"
done_testing
