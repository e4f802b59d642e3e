#!/usr/bin/env bash
# The Slinky deploy manifests (slinky/deploy, a kustomize base) hold least
# privilege and a locked-down pod:
#   - `kubectl kustomize` renders them (skipped, with the reason, when there is
#     no kubectl; the checks below then read the source files);
#   - a namespace set in an overlay reaches every namespaced object and the
#     ClusterRoleBinding's subject;
#   - the ClusterRole and Role grant exactly the (apiGroup, resource, verbs,
#     resourceNames) rules the adapter needs: no "*", no secrets, no
#     subresources (pods/exec), no nonResourceURLs;
#   - the Role and its binding are namespaced, both bindings name the
#     adapter's ServiceAccount, the Deployment runs as it;
#   - the Deployment: one replica, Recreate, non-root, read-only root
#     filesystem, no privilege escalation, capabilities dropped, seccomp,
#     requests and limits, and --configmap/--signals-configmap naming the
#     ConfigMaps the Role allows.
# Needs no cluster: kubectl is only used offline (`kubectl kustomize`).
# Needs python3 with yaml (Debian: python3-yaml). KUBECTL picks the kubectl.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
DEPLOY=$SRC/slinky/deploy
T=$TB_TMP
KUBECTL=${KUBECTL:-kubectl}

# diag_lines TEXT: each line of TEXT as a "# " line.
diag_lines() { while IFS= read -r l; do diag "  $l"; done <<<"$1"; }

# A python3 that can import yaml: $PYTHON, python3 on PATH, or Debian's.
PY=""
for p in ${PYTHON:-} python3 /usr/bin/python3; do
	if "$p" -c 'import yaml' 2>/dev/null; then PY=$p; break; fi
done

files=(kustomization.yaml serviceaccount.yaml clusterrole.yaml clusterrolebinding.yaml
	role.yaml rolebinding.yaml deployment.yaml README.md)
missing=""
for f in "${files[@]}"; do [[ -f $DEPLOY/$f ]] || missing+=" $f"; done
is "$missing" "" "slinky/deploy has every file of the base"

# ---- render -------------------------------------------------------------------------
manifests=()
if command -v "$KUBECTL" >/dev/null 2>&1; then
	rc=0
	KUBECONFIG=/dev/null "$KUBECTL" kustomize "$DEPLOY" >"$T/rendered.yaml" 2>"$T/err" || rc=$?
	# (No `| head`: under pipefail kubectl's SIGPIPE would end the script.)
	version=$("$KUBECTL" version --client 2>/dev/null || true)
	version=$(sed -E '1!d; s/.*GitVersion:"([^"]*)".*/\1/; s/^Client Version: //' <<<"$version")
	ok "$rc" "kubectl kustomize slinky/deploy renders (kubectl ${version:-of unknown version})"
	((rc == 0)) || diag_lines "$(tail -5 "$T/err")"
	manifests=("$T/rendered.yaml")

	# An overlay that only changes the namespace. kustomize v2 (kubectl <= 1.20)
	# wants directories under bases:, v5 under resources: (and warns on bases:).
	# (kustomize wants the base as a relative path.)
	mkdir -p "$T/overlay"
	base=$(realpath --relative-to="$T/overlay" "$DEPLOY")
	for field in resources bases; do
		printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: m2g-test\n%s:\n  - %s\n' \
			"$field" "$base" >"$T/overlay/kustomization.yaml"
		rc=0
		KUBECONFIG=/dev/null "$KUBECTL" kustomize "$T/overlay" >"$T/overlay.yaml" 2>"$T/err" || rc=$?
		((rc == 0)) && break
	done
	ok "$rc" "an overlay setting namespace: m2g-test renders"
	((rc == 0)) || diag_lines "$(tail -5 "$T/err")"
else
	skip "kubectl kustomize slinky/deploy renders" "no $KUBECTL on PATH (Debian: kubernetes-client)"
	skip "an overlay setting namespace: m2g-test renders" "no $KUBECTL on PATH"
	for f in "${files[@]}"; do
		[[ $f == *.yaml && $f != kustomization.yaml ]] && manifests+=("$DEPLOY/$f")
	done
	diag "checking the source files instead of kustomize's output"
fi

if [[ -z $PY ]]; then
	ok 1 "python3 can import yaml (Debian: apt-get install python3-yaml)"
	done_testing
	exit 1
fi

# ---- least privilege and pod security --------------------------------------------------
# check.py NAMESPACE FILE...: one line per check, "STATUS<TAB>DESCRIPTION[<TAB>DETAIL]".
cat >"$T/check.py" <<'EOF'
import sys, yaml

ns = sys.argv[1]
docs = []
for path in sys.argv[2:]:
    with open(path) as f:
        docs += [d for d in yaml.safe_load_all(f) if d]

def report(good, desc, detail=""):
    print("%d\t%s\t%s" % (0 if good else 1, desc, str(detail).replace("\n", " ")))

def walk(x, path=""):
    """Every key and string value, with its path."""
    if isinstance(x, dict):
        for k, v in x.items():
            yield path + "/" + str(k), str(k)
            yield from walk(v, path + "/" + str(k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from walk(v, "%s[%d]" % (path, i))
    elif isinstance(x, str):
        yield path, x

by_kind = {}
for d in docs:
    by_kind.setdefault(d.get("kind"), []).append(d)
got = sorted("%s/%s" % (d.get("kind"), d["metadata"]["name"]) for d in docs)
want = sorted("%s/m2g-slinky" % k for k in
              ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment"])
report(got == want, "exactly six objects: ServiceAccount, ClusterRole(Binding), Role(Binding), Deployment",
       "got %s" % got)

def one(kind):
    return (by_kind.get(kind) or [{}])[0]

sa, cr, crb = one("ServiceAccount"), one("ClusterRole"), one("ClusterRoleBinding")
role, rb, dep = one("Role"), one("RoleBinding"), one("Deployment")

stars = [p for d in docs for p, s in walk(d) if "*" in s]
report(not stars, 'no "*" anywhere (verbs, resources, apiGroups, names)', stars)

rules = cr.get("rules", []) + role.get("rules", [])
secretish = [r for r in rules if any(x in ("secrets", "serviceaccounts/token") for x in r.get("resources", []))]
report(not secretish, "no rule on secrets", secretish)
subres = [x for r in rules for x in r.get("resources", []) if "/" in x]
report(not subres, "no subresources (pods/exec, pods/log, nodes/proxy, ...)", subres)
report(all(set(r) <= {"apiGroups", "resources", "verbs", "resourceNames"} for r in rules)
       and "aggregationRule" not in cr,
       "no nonResourceURLs and no aggregationRule", rules)
powerful = [v for r in rules for v in r.get("verbs", []) if v in ("escalate", "bind", "impersonate", "delete", "deletecollection")]
report(not powerful, "no escalate, bind, impersonate, delete or deletecollection", powerful)

def ruleset(rs):
    return sorted((tuple(sorted(r.get("apiGroups", []))), tuple(sorted(r.get("resources", []))),
                   tuple(sorted(r.get("verbs", []))), tuple(sorted(r.get("resourceNames", []))))
                  for r in rs)

want_cr = ruleset([
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
])
report(ruleset(cr.get("rules", [])) == want_cr,
       "ClusterRole: nodes get/list/watch/patch, pods get/list/watch, nothing else",
       ruleset(cr.get("rules", [])))

names = sorted(n for r in role.get("rules", []) for n in r.get("resourceNames", []))
want_role = ruleset([
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "update", "patch"],
     "resourceNames": ["m2g-config", "m2g-signals"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
])
report(ruleset(role.get("rules", [])) == want_role,
       "Role: configmaps m2g-config, m2g-signals get/list/watch/update/patch; create (unnamed); nothing else",
       ruleset(role.get("rules", [])))
unnamed = [r for r in role.get("rules", []) if not r.get("resourceNames") and r.get("verbs") != ["create"]]
report(not unnamed, "every Role rule but create is limited by resourceNames", unnamed)

report(role.get("metadata", {}).get("namespace") == ns and rb.get("metadata", {}).get("namespace") == ns,
       "Role and RoleBinding are namespaced (%s)" % ns,
       (role.get("metadata", {}).get("namespace"), rb.get("metadata", {}).get("namespace")))
report("namespace" not in cr.get("metadata", {}) and "namespace" not in crb.get("metadata", {}),
       "ClusterRole and ClusterRoleBinding carry no namespace")

subject = [{"kind": "ServiceAccount", "name": sa.get("metadata", {}).get("name"), "namespace": ns}]
report(sa.get("metadata", {}).get("namespace") == ns, "ServiceAccount is in %s" % ns, sa.get("metadata"))
report(rb.get("subjects") == subject and rb.get("roleRef") ==
       {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role.get("metadata", {}).get("name")},
       "RoleBinding binds the Role to the ServiceAccount only", (rb.get("subjects"), rb.get("roleRef")))
report(crb.get("subjects") == subject and crb.get("roleRef") ==
       {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cr.get("metadata", {}).get("name")},
       "ClusterRoleBinding binds the ClusterRole to the ServiceAccount only", (crb.get("subjects"), crb.get("roleRef")))

spec = dep.get("spec", {})
pod = spec.get("template", {}).get("spec", {})
report(dep.get("metadata", {}).get("namespace") == ns and pod.get("serviceAccountName") == sa.get("metadata", {}).get("name"),
       "Deployment runs in %s as the ServiceAccount" % ns,
       (dep.get("metadata", {}).get("namespace"), pod.get("serviceAccountName")))
report(spec.get("replicas") == 1 and spec.get("strategy", {}).get("type") == "Recreate",
       "Deployment: one replica, Recreate (never two writers)", (spec.get("replicas"), spec.get("strategy")))
sel = spec.get("selector", {}).get("matchLabels", {})
tl = spec.get("template", {}).get("metadata", {}).get("labels", {})
report(sel and all(tl.get(k) == v for k, v in sel.items()), "the selector matches the pod template's labels", (sel, tl))

psc = pod.get("securityContext", {})
report(psc.get("runAsNonRoot") is True and isinstance(psc.get("runAsUser"), int) and psc.get("runAsUser") > 0
       and psc.get("seccompProfile", {}).get("type") == "RuntimeDefault",
       "pod: runAsNonRoot, a non-zero runAsUser, seccomp RuntimeDefault", psc)
report(not any(pod.get(k) for k in ("hostNetwork", "hostPID", "hostIPC"))
       and not any("hostPath" in v for v in pod.get("volumes", [])),
       "pod: no host namespaces, no hostPath volumes")

cs = pod.get("containers", []) + pod.get("initContainers", [])
report(len(pod.get("containers", [])) == 1 and not pod.get("initContainers"), "one container", [c.get("name") for c in cs])
for c in cs:
    sc = c.get("securityContext", {})
    caps = sc.get("capabilities", {})
    report(sc.get("allowPrivilegeEscalation") is False and sc.get("readOnlyRootFilesystem") is True
           and not sc.get("privileged") and caps.get("drop") == ["ALL"] and not caps.get("add"),
           "container %s: no privilege escalation, read-only root, not privileged, drops ALL capabilities" % c.get("name"), sc)
    res = c.get("resources", {})
    report(all(res.get(k, {}).get(r) for k in ("requests", "limits") for r in ("cpu", "memory")),
           "container %s: cpu and memory requests and limits" % c.get("name"), res)
    args = c.get("args", [])
    flags = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
    report(sorted(flags) == ["bridge-scheduler", "configmap", "interval", "namespace", "signals-configmap"],
           "container %s: args --namespace, --configmap, --signals-configmap, --interval, --bridge-scheduler"
           % c.get("name"), args)
    report(flags.get("bridge-scheduler") == "slurm-bridge-scheduler",
           "--bridge-scheduler is slurm-bridge's default schedulerName", flags.get("bridge-scheduler"))
    report(sorted([flags.get("configmap"), flags.get("signals-configmap")]) == names,
           "--configmap and --signals-configmap name the ConfigMaps the Role allows",
           (flags.get("configmap"), flags.get("signals-configmap"), names))
    env = {e.get("name"): e for e in c.get("env", [])}
    report(flags.get("namespace") == "$(POD_NAMESPACE)" and
           env.get("POD_NAMESPACE", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace",
           "--namespace is the pod's own namespace (downward API)", (flags.get("namespace"), env.get("POD_NAMESPACE")))
EOF

# run_checks NAMESPACE FILE...: each line of check.py as a TAP result.
run_checks() {
	local status desc detail rc=0
	"$PY" "$T/check.py" "$@" >"$T/checks" 2>"$T/err" || rc=$?
	if ((rc != 0)); then
		ok "$rc" "check.py ran"
		diag_lines "$(tail -5 "$T/err")"
		return 0
	fi
	while IFS=$'\t' read -r status desc detail; do
		ok "$status" "$desc"
		((status == 0)) || diag "  $detail"
	done <"$T/checks"
}

ns=$("$PY" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1])).get("namespace", ""))' "$DEPLOY/kustomization.yaml")
is "$ns" "slurm" "kustomization.yaml puts the base in namespace slurm (slurm-operator's default)"

run_checks "$ns" "${manifests[@]}"

# Every flag the Deployment passes is one the adapter accepts.
ADAPTER=${M2G_BUILDDIR:-$SRC}/slinky/src/m2g-slinky
if [[ -x $ADAPTER ]]; then
	help=$("$ADAPTER" --help)
	missing=""
	for f in $(grep -o -- '- --[a-z-]*=' "$DEPLOY/deployment.yaml" | sed 's/^- //; s/=$//'); do
		grep -q -- "$f" <<<"$help" || missing+=" $f"
	done
	is "$missing" "" "every flag in deployment.yaml is one m2g-slinky --help lists"
fi

# ---- topology-writers/: the extra rights of --write-topology, one file per kind ----
"$PY" - "$DEPLOY/topology-writers" >"$T/writers" 2>&1 <<'EOF' || true
import os, sys, yaml
d = sys.argv[1]
want = {
    "kueue.yaml": [(["kueue.x-k8s.io"], ["resourceflavors", "topologies"], ["create", "get", "patch"])],
    "kai.yaml": [(["kai.scheduler"], ["topologies"], ["create", "get", "patch"])],
    "volcano.yaml": [(["topology.volcano.sh"], ["hypernodes"], ["create", "delete", "get", "list", "patch"])],
}
print("files\t%s" % " ".join(sorted(f for f in os.listdir(d) if f.endswith(".yaml"))))
for f, rules in sorted(want.items()):
    docs = {x["kind"]: x for x in yaml.safe_load_all(open(os.path.join(d, f)))}
    cr, crb = docs.get("ClusterRole", {}), docs.get("ClusterRoleBinding", {})
    got = [(sorted(r.get("apiGroups", [])), sorted(r.get("resources", [])), sorted(r.get("verbs", [])))
           for r in cr.get("rules", [])]
    good = got == [(sorted(a), sorted(b), sorted(c)) for a, b, c in rules] and \
        not any(r.get("resourceNames") or r.get("nonResourceURLs") for r in cr.get("rules", []))
    print("%s\t%d\t%s" % (f, 0 if good else 1, got))
    bound = crb.get("roleRef", {}).get("name") == cr.get("metadata", {}).get("name") and \
        crb.get("subjects") == [{"kind": "ServiceAccount", "name": "m2g-slinky", "namespace": "slurm"}]
    print("%s-binding\t%d\t%s" % (f, 0 if bound else 1, crb.get("subjects")))
EOF
is "$(sed -n 's/^files\t//p' "$T/writers")" "kai.yaml kueue.yaml volcano.yaml" \
	"topology-writers/ has one file per object kind m2g-slinky --write-topology creates"
for f in kueue kai volcano; do
	line=$(grep "^$f.yaml"$'\t' "$T/writers" || echo "$f.yaml	1	missing")
	ok "$(cut -f2 <<<"$line")" "topology-writers/$f.yaml: only the verbs --write-topology=$f needs ($(cut -f3 <<<"$line"))"
	line=$(grep "^$f.yaml-binding"$'\t' "$T/writers" || echo "x	1	missing")
	ok "$(cut -f2 <<<"$line")" "topology-writers/$f.yaml binds them to the m2g-slinky ServiceAccount only"
done

if [[ -s $T/overlay.yaml ]]; then
	diag "the same checks on an overlay that sets namespace: m2g-test"
	run_checks m2g-test "$T/overlay.yaml"
fi

done_testing
