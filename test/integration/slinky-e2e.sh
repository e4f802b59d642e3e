#!/usr/bin/env bash
# m2g-slinky end to end: a labelled 8-rack "Kubernetes cluster" served by the
# local HTTPS fake API server (test/slinky/fake_kube_apiserver.py, the API's
# wire format) -> m2g-slinky --once -> the m2g.conf it writes into a
# ConfigMap drives the real Slurm testbed, and a 72-GPU job lands in one of
# the NVLink domains the labels describe.
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
# A pod of another component in the namespace: not selected.
pods.append({"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": "slurm-controller-0", "namespace": "slurm",
                          "labels": {"app.kubernetes.io/name": "slurmctld"}},
             "spec": {"nodeName": "k8s-01-01", "hostname": "slurm-controller-0",
                      "containers": [{"name": "slurmctld", "image": "slurmctld"}]}})
json.dump({"tokens": ["m2g-e2e-token"], "user": "system:serviceaccount:slurm:m2g-slinky",
           "objects": {"nodes": nodes, "pods": pods}}, open(path, "w"))
PYEOF

"$PY" "$SRC/test/slinky/fake_kube_apiserver.py" --cert "$T/srv.crt" --key "$T/srv.key" \
	--scenario "$T/scenario.json" --log "$T/requests.jsonl" >"$T/api.out" 2>"$T/api.err" &
API_PID=$!
TB_CLEANUP_PIDS+=("$API_PID")  # lib.sh's EXIT trap stops it, also on failure
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/^PORT=//p' "$T/api.out")
	[[ -n $port ]] && break
	sleep 0.1
done
ok "[[ -n '$port' ]]" "the fake API server listens on 127.0.0.1:$port"
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
patches=$(grep -c '"method": "PATCH", "path": "/api/v1/nodes/' "$T/requests.jsonl" || true)
is "$patches" 144 "one merge patch per node"
ctypes=$("$PY" -c '
import json, sys
print(sorted({r["headers"].get("Content-Type", "") for r in map(json.loads, open(sys.argv[1])) if r["method"] == "PATCH"}))' \
	"$T/requests.jsonl")
is "$ctypes" "['application/merge-patch+json']" "patches are JSON merge patches"
unauth=$("$PY" -c '
import json, sys
bad = [r for r in map(json.loads, open(sys.argv[1])) if r["headers"].get("Authorization") != "Bearer m2g-e2e-token"]
print(len(bad))' "$T/requests.jsonl")
is "$unauth" "0" "every request carries the bearer token"
rc=0
"$ADAPTER" --kubeconfig "$T/kubeconfig" --once >/dev/null 2>"$T/again.err" || rc=$?
is "$rc:$(grep -c '"method": "PATCH", "path": "/api/v1/nodes/' "$T/requests.jsonl")" "0:144" \
	"a second pass changes nothing that is already right"

# ---- the testbed runs on that m2g.conf ---------------------------------------------
if ! tb_up --racks 8; then
	ok 1 "testbed up"
	exit 1
fi
cp "$T/m2g.conf" "$TB_DIR/etc/m2g.conf"
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
done_testing
