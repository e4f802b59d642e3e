#!/usr/bin/env python3
"""fake_kube_apiserver.py: a local HTTPS server that answers like the Kubernetes
API server, for testing m2g-slinky's client (slinky/src/kube.cpp) where no real
cluster exists. Python 3 standard library only.

    fake_kube_apiserver.py --cert server.crt --key server.key \
        --scenario scenario.json --log requests.jsonl [--client-ca ca.crt]

Listens on 127.0.0.1, port 0 (the kernel's choice), and prints PORT=<n> on
stdout once it accepts connections. Runs until killed.

Wire format follows the published API (core/v1 Node, Pod, ConfigMap, List,
WatchEvent, meta/v1 Status): lists carry apiVersion, kind (NodeList, ...) and
metadata.resourceVersion, their items carry neither kind nor apiVersion (as the
real server encodes typed lists); single objects and watch event objects carry
both; every error is a Status {kind: Status, apiVersion: v1, status: Failure,
message, reason, code}. Watches are chunked (Transfer-Encoding: chunked)
streams of newline-delimited WatchEvent JSON.

Routes (RES is nodes, pods, configmaps, or a resource the scenario adds):
    GET    /api/v1/RES, /api/v1/namespaces/NS/RES      list (limit, continue,
                                                       labelSelector, fieldSelector)
    GET    same with ?watch=1 (or true)                watch: the scenario's next round
    GET    /api/v1/[namespaces/NS/]RES/NAME            get
    POST   /api/v1/[namespaces/NS/]RES                 create (201, 409 AlreadyExists)
    PUT    /api/v1/[namespaces/NS/]RES/NAME            update (409 Conflict on a stale
                                                       metadata.resourceVersion)
    PATCH  /api/v1/[namespaces/NS/]RES/NAME            application/merge-patch+json (RFC 7386),
                                                       application/json-patch+json (RFC 6902),
                                                       application/strategic-merge-patch+json
                                                       (merge patch, plus lists merged by
                                                       their patchMergeKey: conditions by type,
                                                       containers by name, ...); others 415
    DELETE /api/v1/[namespaces/NS/]RES/NAME            delete
    and /apis/GROUP/VERSION/... for resources the scenario declares.

Scenario file (JSON object; every key optional):
    "tokens": ["t1", ...]       bearer tokens accepted ("token": "t1" for one); absent: no
                                check. A request without an accepted token gets 401, unless
    "client_cert_cn": "cn"      it presents a client certificate (--client-ca) with this CN.
    "user": "system:serviceaccount:slinky:m2g-slinky"   named in 403 messages
    "resource_version": 1000    the first resourceVersion handed out
    "max_page": N               never return more than N items per page of a list with a
                                limit (a real server may return fewer than limit)
    "resources": {"nodesets": {"group": "slinky.slurm.net", "version": "v1alpha1",
                               "kind": "NodeSet", "namespaced": true}}
                                a key "PLURAL.GROUP" (e.g. "topologies.kueue.x-k8s.io") when
                                two groups share a plural; "objects" then uses that key
    "objects": {"nodes": [obj, ...], "pods": [...], "configmaps": [...]}
                                initial objects. metadata.name is required, namespace for
                                namespaced ones; uid, resourceVersion, creationTimestamp
                                are filled in; a Node or Pod without "status" gets a
                                realistic one (Ready node, Running pod).
    "generate": [{"resource": "nodes", "count": 1203, "prefix": "gpu-"}]
                                many realistic Nodes named gpu-0000, gpu-0001, ...
    "watches": {"/api/v1/nodes": [ROUND, ROUND, ...]}
                                the Nth watch request on that path plays ROUND N; once they
                                are used up a watch returns an empty stream at once. ROUND:
        {"status": 410, "reason": "Expired", "message": "..."}   answer with that Status
        {"batches": [BATCH, ...],
         "hold": 0.0,           seconds to keep the stream open after the last batch
         "abort": false}        true: drop the connection without the final chunk
      BATCH:
        {"delay": 0.0,          seconds before it is sent
         "events": [EVENT, ...],   sent together in one chunk, unless
         "chunk_bytes": N,      split the batch's text into N-byte chunks (mid-JSON), or
         "split_at": [i, ...],  at these byte offsets,
         "split_delay": 0.05,   with this pause between the chunks
         "raw": "text"}         appended verbatim after the events (malformed-line tests)
      EVENT:
        {"type": "ADDED"|"MODIFIED"|"DELETED", "object": {...}}  applied to the store when
                                sent; resourceVersion assigned unless the object has one
        {"type": "BOOKMARK", "resourceVersion": "5000"}   (default: the current one)
        {"type": "ERROR", "code": 410, "reason": "Expired", "message": "..."}  or "object"
    "force": [RULE, ...]        canned answers, checked in order before anything else:
        {"method": "GET",       optional, any method when absent
         "path": "/api/v1/nodes",    exact path (or "path_prefix")
         "query": {"watch": "1"},    parameters that must have these values
         "query_has": ["continue"], "query_absent": ["watch"],
         "status": 500, "reason": "InternalError", "message": "...",
         "headers": {"Retry-After": "1"},
         "times": 3}            how many requests it answers (absent: all)

Request log (--log): one JSON object per line, per request, in arrival order:
    {"seq", "time", "method", "path", "raw_query", "query": {k: v (first value)},
     "headers": {name: value}, "body": text, "client_cn": CN or null, "status": code}
TLS handshake failures are reported on stderr only (no request was served), as
"# " lines so that they read as diagnostics in a TAP log.
"""

import argparse
import base64
import copy
import datetime
import json
import re
import ssl
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BUILTIN_RESOURCES = {
    ("", "nodes"): {"group": "", "version": "v1", "kind": "Node", "namespaced": False},
    ("", "pods"): {"group": "", "version": "v1", "kind": "Pod", "namespaced": True},
    ("", "configmaps"): {"group": "", "version": "v1", "kind": "ConfigMap", "namespaced": True},
}

REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
    405: "MethodNotAllowed", 409: "Conflict", 410: "Expired", 415: "UnsupportedMediaType",
    422: "Invalid", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable",
    504: "Timeout",
}

# patchMergeKey of the list fields a strategic merge patch merges (core/v1).
MERGE_KEYS = {
    "conditions": "type", "containers": "name", "initContainers": "name",
    "ephemeralContainers": "name", "volumes": "name", "env": "name", "volumeMounts": "mountPath",
    "ports": "containerPort", "addresses": "type", "imagePullSecrets": "name",
}

STAMP = "2024-05-01T00:00:00Z"


def now_stamp():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class ApiError(Exception):
    def __init__(self, code, message, reason=None, details=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason or REASONS.get(code, "Unknown")
        self.details = details


def status_object(code, message, reason=None, details=None):
    st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
          "message": message, "reason": reason or REASONS.get(code, "Unknown"), "code": code}
    if details:
        st["details"] = details
    return st


# ---------------------------------------------------------------------------
# Patches.

def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def strategic_merge_patch(target, patch, field=None):
    """Merge patch, except that lists named in MERGE_KEYS merge element-wise by
    their key (an element {"$patch": "delete", key: ...} removes one)."""
    if isinstance(patch, list) and field in MERGE_KEYS and isinstance(target, list):
        key = MERGE_KEYS[field]
        out = [copy.deepcopy(e) for e in target]
        for pe in patch:
            if not isinstance(pe, dict) or key not in pe:
                raise ApiError(422, "strategic merge patch: element of %s without %s" % (field, key))
            idx = next((i for i, e in enumerate(out) if isinstance(e, dict) and e.get(key) == pe[key]), None)
            if pe.get("$patch") == "delete":
                if idx is not None:
                    del out[idx]
            elif idx is None:
                out.append(copy.deepcopy(pe))
            else:
                out[idx] = strategic_merge_patch(out[idx], pe)
        return out
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = strategic_merge_patch(out.get(k), v, k)
    return out


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, "json patch: path %r is not a JSON pointer" % path)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts):
    cur = doc
    for p in parts:
        if isinstance(cur, dict) and p in cur:
            cur = cur[p]
        elif isinstance(cur, list) and p.isdigit() and int(p) < len(cur):
            cur = cur[int(p)]
        else:
            raise ApiError(422, "json patch: path /%s does not exist" % "/".join(parts))
    return cur


def json_patch(doc, ops):
    """RFC 6902 JSON patch: add, remove, replace, move, copy, test."""
    if not isinstance(ops, list):
        raise ApiError(400, "json patch: the body is not a JSON array of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        kind = op.get("op")
        parts = _pointer(op.get("path", ""))
        if kind in ("add", "replace", "test") and "value" not in op:
            raise ApiError(422, "json patch: %s without value" % kind)
        if kind in ("move", "copy"):
            value = copy.deepcopy(_walk(doc, _pointer(op.get("from", ""))))
            if kind == "move":
                doc = json_patch(doc, [{"op": "remove", "path": op["from"]}])
            doc = json_patch(doc, [{"op": "add", "path": op["path"], "value": value}])
            continue
        if kind == "test":
            if _walk(doc, parts) != op["value"]:
                raise ApiError(422, "json patch: test failed at %s" % op.get("path"))
            continue
        if not parts:
            if kind in ("add", "replace"):
                doc = copy.deepcopy(op["value"])
                continue
            raise ApiError(422, "json patch: cannot remove the whole document")
        parent = _walk(doc, parts[:-1])
        last = parts[-1]
        if isinstance(parent, dict):
            if kind == "add":
                parent[last] = copy.deepcopy(op["value"])
            elif last not in parent:
                raise ApiError(422, "json patch: path %s does not exist" % op.get("path"))
            elif kind == "remove":
                del parent[last]
            elif kind == "replace":
                parent[last] = copy.deepcopy(op["value"])
            else:
                raise ApiError(422, "json patch: unknown op %r" % kind)
        elif isinstance(parent, list):
            if kind == "add" and last == "-":
                parent.append(copy.deepcopy(op["value"]))
                continue
            if not last.isdigit():
                raise ApiError(422, "json patch: %s is not an array index" % last)
            i = int(last)
            if kind == "add" and i <= len(parent):
                parent.insert(i, copy.deepcopy(op["value"]))
            elif i >= len(parent):
                raise ApiError(422, "json patch: index %d out of range" % i)
            elif kind == "remove":
                del parent[i]
            elif kind == "replace":
                parent[i] = copy.deepcopy(op["value"])
            else:
                raise ApiError(422, "json patch: unknown op %r" % kind)
        else:
            raise ApiError(422, "json patch: path %s does not exist" % op.get("path"))
    return doc


# ---------------------------------------------------------------------------
# Selectors.

_REQ = re.compile(r"\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(==|=|!=)\s*([A-Za-z0-9._-]*)|\s+(in|notin)\s*\(([^)]*)\))?\s*(,|$)")


def parse_label_selector(text):
    reqs, pos = [], 0
    text = text or ""
    while pos < len(text):
        m = _REQ.match(text, pos)
        if not m or m.end() == pos:
            raise ApiError(400, "unable to parse requirement: invalid label selector %r" % text)
        neg, key, op, val, setop, setvals = m.groups()[:6]
        if neg and (op or setop):
            raise ApiError(400, "invalid label selector %r" % text)
        if neg:
            reqs.append(("!", key, None))
        elif op:
            reqs.append(("!=" if op == "!=" else "=", key, val))
        elif setop:
            reqs.append((setop, key, {v.strip() for v in setvals.split(",") if v.strip()}))
        else:
            reqs.append(("exists", key, None))
        pos = m.end()
    return reqs


def labels_match(reqs, labels):
    for op, key, val in reqs:
        have = key in labels
        v = labels.get(key)
        if op == "=" and v != val:
            return False
        if op == "!=" and have and v == val:
            return False
        if op == "exists" and not have:
            return False
        if op == "!" and have:
            return False
        if op == "in" and v not in val:
            return False
        if op == "notin" and have and v in val:
            return False
    return True


def fields_match(text, obj):
    for term in filter(None, (text or "").split(",")):
        neg = "!=" in term
        key, _, val = term.partition("!=" if neg else "=")
        val = val.lstrip("=")
        cur = obj
        for p in key.strip().split("."):
            cur = cur.get(p) if isinstance(cur, dict) else None
        cur = "" if cur is None else str(cur)
        if (cur == val) == neg:
            return False
    return True


# ---------------------------------------------------------------------------
# Realistic defaults (core/v1 schemas).

def default_node_status(name, index=0):
    return {
        "capacity": {"cpu": "144", "memory": "1981782012Ki", "ephemeral-storage": "3748905984Ki",
                     "nvidia.com/gpu": "4", "pods": "110", "hugepages-2Mi": "0"},
        "allocatable": {"cpu": "142", "memory": "1979582012Ki", "ephemeral-storage": "3454985820137",
                        "nvidia.com/gpu": "4", "pods": "110", "hugepages-2Mi": "0"},
        "conditions": [
            {"type": "MemoryPressure", "status": "False", "lastHeartbeatTime": STAMP,
             "lastTransitionTime": STAMP, "reason": "KubeletHasSufficientMemory",
             "message": "kubelet has sufficient memory available"},
            {"type": "DiskPressure", "status": "False", "lastHeartbeatTime": STAMP,
             "lastTransitionTime": STAMP, "reason": "KubeletHasNoDiskPressure",
             "message": "kubelet has no disk pressure"},
            {"type": "PIDPressure", "status": "False", "lastHeartbeatTime": STAMP,
             "lastTransitionTime": STAMP, "reason": "KubeletHasSufficientPID",
             "message": "kubelet has sufficient PID available"},
            {"type": "Ready", "status": "True", "lastHeartbeatTime": STAMP,
             "lastTransitionTime": STAMP, "reason": "KubeletReady",
             "message": "kubelet is posting ready status"},
        ],
        "addresses": [{"type": "InternalIP", "address": "10.0.%d.%d" % (index // 250, index % 250 + 1)},
                      {"type": "Hostname", "address": name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"architecture": "arm64", "bootID": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
                     "containerRuntimeVersion": "containerd://1.7.13", "kernelVersion": "6.8.0-1008-nvidia-64k",
                     "kubeProxyVersion": "v1.29.4", "kubeletVersion": "v1.29.4",
                     "machineID": uuid.uuid5(uuid.NAMESPACE_URL, name).hex, "operatingSystem": "linux",
                     "osImage": "Ubuntu 22.04.4 LTS", "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_OID, name))},
    }


def default_pod_status(obj):
    return {
        "phase": "Running",
        "conditions": [
            {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": STAMP},
            {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": STAMP},
            {"type": "ContainersReady", "status": "True", "lastProbeTime": None, "lastTransitionTime": STAMP},
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": STAMP},
        ],
        "hostIP": "10.0.0.1", "podIP": "10.244.0.10", "startTime": STAMP, "qosClass": "Guaranteed",
        "containerStatuses": [
            {"name": c.get("name", "slurmd"), "ready": True, "restartCount": 0, "started": True,
             "image": c.get("image", ""), "imageID": "", "state": {"running": {"startedAt": STAMP}}}
            for c in obj.get("spec", {}).get("containers", [])
        ],
    }


def generated_node(name, index, labels=None):
    lab = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "arm64",
           "node.kubernetes.io/instance-type": "gb200-nvl72-tray"}
    lab.update(labels or {})
    return {"metadata": {"name": name, "labels": lab, "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": {"podCIDR": "10.244.%d.0/24" % (index % 250), "providerID": "nvidia://%s" % name},
            "status": default_node_status(name, index)}


# ---------------------------------------------------------------------------
# State.

class State:
    def __init__(self, scenario, log_path):
        self.lock = threading.Lock()
        self.log_lock = threading.Lock()
        self.scenario = scenario
        self.log_path = log_path
        self.seq = 0
        self.rv = int(scenario.get("resource_version", 1000))
        tokens = scenario.get("tokens")
        if tokens is None and "token" in scenario:
            tokens = [scenario["token"]]
        self.tokens = tokens
        self.client_cert_cn = scenario.get("client_cert_cn")
        self.user = scenario.get("user", "system:serviceaccount:slinky:m2g-slinky")
        self.max_page = scenario.get("max_page")
        self.resources = dict(BUILTIN_RESOURCES)
        for res, spec in scenario.get("resources", {}).items():
            # "topologies.kueue.x-k8s.io": the plural is the part before the
            # first dot; the whole key names the resource in "objects" (two
            # groups may both have "topologies").
            self.resources[(spec.get("group", ""), res.split(".")[0])] = {
                "group": spec.get("group", ""), "version": spec.get("version", "v1"),
                "kind": spec["kind"], "namespaced": bool(spec.get("namespaced", True)), "key": res}
        self.store = {}  # (resource, namespace or "", name) -> object with kind/apiVersion
        self.watch_rounds = {p: list(r) for p, r in scenario.get("watches", {}).items()}
        self.watch_calls = {}
        self.force = [dict(r) for r in scenario.get("force", [])]
        for res, objs in scenario.get("objects", {}).items():
            spec = self.spec_by_name(res)
            for o in objs:
                self.put_object(res, spec, copy.deepcopy(o))
        for g in scenario.get("generate", []):
            res = g.get("resource", "nodes")
            spec = self.spec_by_name(res)
            for i in range(int(g["count"])):
                name = "%s%04d" % (g.get("prefix", "node-"), i)
                self.put_object(res, spec, generated_node(name, i, g.get("labels")))

    def spec_by_name(self, res):
        for (group, r), spec in self.resources.items():
            if spec.get("key", r) == res:
                return spec
        raise SystemExit("scenario: unknown resource %r" % res)

    def next_rv(self):
        self.rv += 1
        return str(self.rv)

    def fill(self, res, spec, obj, namespace=None, keep_rv=False):
        md = obj.setdefault("metadata", {})
        if not md.get("name"):
            raise ApiError(422, "%s: metadata.name: Required value: name or generateName is required" % spec["kind"])
        if spec["namespaced"]:
            md.setdefault("namespace", namespace or "default")
            if namespace and md["namespace"] != namespace:
                raise ApiError(400, "the namespace of the provided object does not match the namespace sent on the request")
        else:
            md.pop("namespace", None)
        md.setdefault("uid", str(uuid.uuid5(uuid.NAMESPACE_URL, "%s/%s/%s" % (res, md.get("namespace", ""), md["name"]))))
        md.setdefault("creationTimestamp", STAMP)
        if not (keep_rv and md.get("resourceVersion")):
            md["resourceVersion"] = self.next_rv()
        obj["kind"] = spec["kind"]
        obj["apiVersion"] = (spec["group"] + "/" + spec["version"]) if spec["group"] else spec["version"]
        if spec["kind"] == "Node":
            obj.setdefault("spec", {})
        if spec["kind"] == "Node" and "status" not in obj:
            obj["status"] = default_node_status(md["name"])
        if spec["kind"] == "Pod":
            obj.setdefault("spec", {}).setdefault("containers", [{"name": "slurmd", "image": "ghcr.io/slinkyproject/slurmd:24.05-ubuntu24.04"}])
            if "status" not in obj:
                obj["status"] = default_pod_status(obj)
        return obj

    def key(self, res, obj):
        md = obj["metadata"]
        return (res, md.get("namespace", ""), md["name"])

    def put_object(self, res, spec, obj, keep_rv=False):
        obj = self.fill(res, spec, obj, keep_rv=keep_rv)
        self.store[self.key(res, obj)] = obj
        return obj

    def log(self, entry):
        with self.log_lock:
            self.seq += 1
            entry["seq"] = self.seq
            with open(self.log_path, "a") as f:
                f.write(json.dumps(entry, sort_keys=True) + "\n")
                f.flush()


# ---------------------------------------------------------------------------
# The request handler.

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-kube-apiserver/1.29"
    sys_version = ""

    def log_message(self, fmt, *args):  # the JSON log says it all
        pass

    @property
    def state(self):
        return self.server.state

    # -- responses --------------------------------------------------------
    def send_json(self, code, obj, headers=None):
        data = (json.dumps(obj) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_status(self, code, message, reason=None, details=None, headers=None):
        self.send_json(code, status_object(code, message, reason, details), headers)

    def write_chunk(self, text):
        data = text.encode()
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    # -- dispatch ---------------------------------------------------------
    def do_GET(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def do_PUT(self):
        self.handle_any()

    def do_PATCH(self):
        self.handle_any()

    def do_DELETE(self):
        self.handle_any()

    def handle_any(self):
        url = urllib.parse.urlsplit(self.path)
        self.req_path = url.path
        self.raw_query = url.query
        self.query = {k: v[0] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        length = int(self.headers.get("Content-Length") or 0)
        self.body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        cn = None
        try:
            cert = self.connection.getpeercert()
            if cert:
                for rdn in cert.get("subject", ()):
                    for k, v in rdn:
                        if k == "commonName":
                            cn = v
        except (ValueError, AttributeError):
            pass
        self.client_cn = cn
        self.logged = False
        try:
            self.route()
        except ApiError as e:
            self.log_request_entry(e.code)
            self.send_status(e.code, e.message, e.reason, e.details)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    def log_request_entry(self, status):
        if self.logged:
            return
        self.logged = True
        self.state.log({
            "time": time.time(), "method": self.command, "path": self.req_path,
            "raw_query": self.raw_query, "query": self.query,
            "headers": {k: v for k, v in self.headers.items()}, "body": self.body,
            "client_cn": self.client_cn, "status": status,
        })

    def parse_target(self):
        parts = [p for p in self.req_path.split("/") if p]
        if len(parts) >= 2 and parts[0] == "api" and parts[1] == "v1":
            group, version, rest = "", "v1", parts[2:]
        elif len(parts) >= 3 and parts[0] == "apis":
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "the server could not find the requested resource", "NotFound")
        ns = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            ns, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            raise ApiError(404, "the server could not find the requested resource", "NotFound")
        res, name, sub = rest[0], (rest[1] if len(rest) > 1 else None), (rest[2] if len(rest) > 2 else None)
        spec = self.state.resources.get((group, res))
        if spec is None or spec["version"] != version:
            raise ApiError(404, "the server could not find the requested resource", "NotFound")
        if ns is not None and not spec["namespaced"]:
            raise ApiError(404, "the server could not find the requested resource", "NotFound")
        return spec.get("key", res), spec, ns, name, sub

    def verb(self, name):
        m = self.command
        if m == "GET":
            if name:
                return "get"
            return "watch" if self.query.get("watch") in ("1", "true") else "list"
        return {"POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if name else "deletecollection"}.get(m, m.lower())

    def check_force(self):
        for rule in self.state.force:
            if rule.get("times", 1) <= 0:
                continue
            if rule.get("method") and rule["method"] != self.command:
                continue
            if "path" in rule and rule["path"] != self.req_path:
                continue
            if "path_prefix" in rule and not self.req_path.startswith(rule["path_prefix"]):
                continue
            if any(self.query.get(k) != v for k, v in rule.get("query", {}).items()):
                continue
            if any(k not in self.query for k in rule.get("query_has", [])):
                continue
            if any(k in self.query for k in rule.get("query_absent", [])):
                continue
            if "times" in rule:
                rule["times"] -= 1
            return rule
        return None

    def forbidden_message(self, res, spec, ns, name):
        who = self.state.user
        verb = self.verb(name)
        what = '%s "%s"' % (res, name) if name else res
        scope = 'in the namespace "%s"' % ns if ns else "at the cluster scope"
        return '%s is forbidden: User "%s" cannot %s resource "%s" in API group "%s" %s' % (
            what, who, verb, res, spec["group"] if spec else "", scope)

    def authenticated(self):
        st = self.state
        if st.tokens is None:
            return True
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer ") and auth[len("Bearer "):] in st.tokens:
            return True
        return bool(st.client_cert_cn and self.client_cn == st.client_cert_cn)

    def route(self):
        st = self.state
        rule = None
        with st.lock:
            rule = self.check_force()
        if rule is not None:
            code = int(rule["status"])
            msg = rule.get("message")
            if msg is None:
                if code == 403:
                    try:
                        res, spec, ns, name, _ = self.parse_target()
                    except ApiError:
                        res, spec, ns, name = self.req_path, None, None, None
                    msg = self.forbidden_message(res, spec, ns, name)
                elif code == 401:
                    msg = "Unauthorized"
                elif code == 410:
                    msg = "too old resource version: 1 (%d)" % st.rv
                else:
                    msg = "Internal error occurred: injected by the test scenario"
            self.log_request_entry(code)
            self.send_status(code, msg, rule.get("reason"), headers=rule.get("headers"))
            return
        if not self.authenticated():
            raise ApiError(401, "Unauthorized")
        res, spec, ns, name, sub = self.parse_target()
        if sub is not None and sub != "status":
            raise ApiError(404, "the server could not find the requested resource", "NotFound")
        m = self.command
        if m == "GET" and name is None and self.query.get("watch") in ("1", "true"):
            return self.serve_watch(res, spec, ns)
        if m == "GET" and name is None:
            return self.serve_list(res, spec, ns)
        if m == "GET":
            with st.lock:
                obj = self.lookup(res, spec, ns, name)
                out = copy.deepcopy(obj)
            self.log_request_entry(200)
            return self.send_json(200, out)
        if m == "POST" and name is None:
            return self.serve_create(res, spec, ns)
        if m == "PUT" and name:
            return self.serve_update(res, spec, ns, name, sub)
        if m == "PATCH" and name:
            return self.serve_patch(res, spec, ns, name, sub)
        if m == "DELETE" and name:
            with st.lock:
                obj = self.lookup(res, spec, ns, name)
                del st.store[st.key(res, obj)]
                obj = copy.deepcopy(obj)
                obj["metadata"]["resourceVersion"] = st.next_rv()
            self.log_request_entry(200)
            return self.send_json(200, obj)
        raise ApiError(405, "the server does not allow this method on the requested resource", "MethodNotAllowed")

    def lookup(self, res, spec, ns, name):
        obj = self.state.store.get((res, ns or "", name))
        if obj is None:
            raise ApiError(404, '%s "%s" not found' % (res, name), "NotFound",
                           {"name": name, "kind": res})
        return obj

    def parse_body(self):
        try:
            return json.loads(self.body)
        except ValueError as e:
            raise ApiError(400, "the body of the request was in an unknown format: %s" % e, "BadRequest")

    def serve_list(self, res, spec, ns):
        st = self.state
        sel = parse_label_selector(self.query.get("labelSelector"))
        fsel = self.query.get("fieldSelector")
        limit = int(self.query.get("limit") or 0)
        if st.max_page and limit:
            limit = min(limit, st.max_page)
        cont = self.query.get("continue")
        with st.lock:
            snapshot_rv = str(st.rv)
            start = None
            if cont:
                try:
                    tok = json.loads(base64.urlsafe_b64decode(cont.encode()).decode())
                    snapshot_rv, start = tok["rv"], tok["start"]
                except (ValueError, KeyError):
                    raise ApiError(400, "continue key is not valid: illegal base64 data", "BadRequest")
            keys = sorted(k for k in st.store if k[0] == res and (ns is None or k[1] == ns))
            if start is not None:
                keys = [k for k in keys if [k[1], k[2]] >= start]
            items = []
            for k in keys:
                obj = st.store[k]
                if not labels_match(sel, obj["metadata"].get("labels", {})):
                    continue
                if fsel and not fields_match(fsel, obj):
                    continue
                items.append((k, obj))
            more = None
            if limit and len(items) > limit:
                nk = items[limit][0]
                more = base64.urlsafe_b64encode(json.dumps({"rv": snapshot_rv, "start": [nk[1], nk[2]]}).encode()).decode()
                remaining = len(items) - limit
                items = items[:limit]
            out_items = []
            for _, obj in items:
                o = copy.deepcopy(obj)
                o.pop("kind", None)
                o.pop("apiVersion", None)
                out_items.append(o)
        md = {"resourceVersion": snapshot_rv}
        if more:
            md["continue"] = more
            md["remainingItemCount"] = remaining
        api_version = (spec["group"] + "/" + spec["version"]) if spec["group"] else spec["version"]
        self.log_request_entry(200)
        self.send_json(200, {"kind": spec["kind"] + "List", "apiVersion": api_version,
                             "metadata": md, "items": out_items})

    def serve_create(self, res, spec, ns):
        st = self.state
        obj = self.parse_body()
        if not isinstance(obj, dict):
            raise ApiError(400, "the body of the request was in an unknown format")
        if obj.get("kind") not in (None, spec["kind"]):
            raise ApiError(400, "the kind %r of the object does not match the %s resource" % (obj.get("kind"), res))
        with st.lock:
            obj.setdefault("metadata", {}).pop("resourceVersion", None)
            obj = st.fill(res, spec, obj, namespace=ns)
            k = st.key(res, obj)
            if k in st.store:
                st.rv -= 1
                raise ApiError(409, '%s "%s" already exists' % (res, k[2]), "AlreadyExists",
                               {"name": k[2], "kind": res})
            st.store[k] = obj
            out = copy.deepcopy(obj)
        self.log_request_entry(201)
        self.send_json(201, out)

    def serve_update(self, res, spec, ns, name, sub):
        st = self.state
        obj = self.parse_body()
        if not isinstance(obj, dict) or obj.get("metadata", {}).get("name") != name:
            raise ApiError(400, "the name of the object (%s) does not match the name on the URL (%s)" % (
                obj.get("metadata", {}).get("name") if isinstance(obj, dict) else None, name))
        with st.lock:
            cur = self.lookup(res, spec, ns, name)
            want = obj.get("metadata", {}).get("resourceVersion")
            if want and want != cur["metadata"]["resourceVersion"]:
                raise ApiError(409, 'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                               'please apply your changes to the latest version and try again' % (res, name),
                               "Conflict", {"name": name, "kind": res})
            md = obj.setdefault("metadata", {})
            md["uid"] = cur["metadata"]["uid"]
            md["creationTimestamp"] = cur["metadata"]["creationTimestamp"]
            md.pop("resourceVersion", None)
            obj = st.fill(res, spec, obj, namespace=ns)
            st.store[st.key(res, obj)] = obj
            out = copy.deepcopy(obj)
        self.log_request_entry(200)
        self.send_json(200, out)

    def serve_patch(self, res, spec, ns, name, sub):
        st = self.state
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        patch = self.parse_body()
        with st.lock:
            cur = self.lookup(res, spec, ns, name)
            if ctype == "application/merge-patch+json":
                new = merge_patch(cur, patch)
            elif ctype == "application/strategic-merge-patch+json":
                new = strategic_merge_patch(cur, patch)
            elif ctype == "application/json-patch+json":
                new = json_patch(cur, patch)
            else:
                raise ApiError(415, 'the body of the request was in an unknown format - accepted media types '
                               'include: application/json-patch+json, application/merge-patch+json, '
                               'application/apply-patch+yaml, application/strategic-merge-patch+json',
                               "UnsupportedMediaType")
            if not isinstance(new, dict):
                raise ApiError(422, "the patch did not produce an object")
            want = patch.get("metadata", {}).get("resourceVersion") if isinstance(patch, dict) else None
            if want and want != cur["metadata"]["resourceVersion"]:
                raise ApiError(409, 'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                               'please apply your changes to the latest version and try again' % (res, name),
                               "Conflict", {"name": name, "kind": res})
            if new.get("metadata", {}).get("name") != name:
                raise ApiError(422, "metadata.name: Invalid value: field is immutable", "Invalid")
            new["metadata"]["uid"] = cur["metadata"]["uid"]
            new["metadata"].pop("resourceVersion", None)
            new = st.fill(res, spec, new, namespace=ns)
            st.store[st.key(res, new)] = new
            out = copy.deepcopy(new)
        self.log_request_entry(200)
        self.send_json(200, out)

    # -- watch ------------------------------------------------------------
    def resolve_event(self, res, spec, ns, ev):
        """The wire form of one scenario event, applying it to the store."""
        st = self.state
        kind = ev.get("type")
        api_version = (spec["group"] + "/" + spec["version"]) if spec["group"] else spec["version"]
        if kind == "BOOKMARK":
            rv = ev.get("resourceVersion") or str(st.rv)
            return {"type": "BOOKMARK", "object": {"kind": spec["kind"], "apiVersion": api_version,
                                                   "metadata": {"resourceVersion": rv}}}
        if kind == "ERROR":
            if "object" in ev:
                return {"type": "ERROR", "object": ev["object"]}
            code = int(ev.get("code", 410))
            msg = ev.get("message") or ("too old resource version: %s (%d)" % (self.query.get("resourceVersion", "0"), st.rv)
                                        if code == 410 else "internal error")
            return {"type": "ERROR", "object": status_object(code, msg, ev.get("reason"))}
        if kind in ("ADDED", "MODIFIED"):
            obj = copy.deepcopy(ev["object"])
            md = obj.setdefault("metadata", {})
            if spec["namespaced"] and ns:
                md.setdefault("namespace", ns)
            old = st.store.get((res, md.get("namespace", "") if spec["namespaced"] else "", md.get("name")))
            if old is not None:
                md.setdefault("uid", old["metadata"]["uid"])
            obj = st.put_object(res, spec, obj, keep_rv=True)
            return {"type": kind, "object": copy.deepcopy(obj)}
        if kind == "DELETED":
            obj = copy.deepcopy(ev["object"])
            md = obj.setdefault("metadata", {})
            if spec["namespaced"] and ns:
                md.setdefault("namespace", ns)
            k = (res, md.get("namespace", "") if spec["namespaced"] else "", md.get("name"))
            old = st.store.pop(k, None)
            if old is not None:
                obj = copy.deepcopy(old)
                obj["metadata"]["resourceVersion"] = ev["object"].get("metadata", {}).get("resourceVersion") or st.next_rv()
            else:
                obj = st.fill(res, spec, obj, keep_rv=True)
            return {"type": "DELETED", "object": obj}
        raise SystemExit("scenario: unknown watch event type %r" % kind)

    def serve_watch(self, res, spec, ns):
        st = self.state
        with st.lock:
            n = st.watch_calls.get(self.req_path, 0)
            st.watch_calls[self.req_path] = n + 1
            rounds = st.watch_rounds.get(self.req_path, [])
            rnd = rounds[n] if n < len(rounds) else {}
        if "status" in rnd:
            code = int(rnd["status"])
            msg = rnd.get("message") or ("too old resource version: %s (%d)" % (
                self.query.get("resourceVersion", "0"), st.rv) if code == 410 else "Internal error occurred")
            self.log_request_entry(code)
            return self.send_status(code, msg, rnd.get("reason"))
        self.log_request_entry(200)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        for batch in rnd.get("batches", []):
            time.sleep(float(batch.get("delay", 0)))
            with st.lock:
                text = "".join(json.dumps(self.resolve_event(res, spec, ns, ev)) + "\n"
                               for ev in batch.get("events", []))
            text += batch.get("raw", "")
            cuts = []
            if batch.get("chunk_bytes"):
                step = int(batch["chunk_bytes"])
                cuts = list(range(step, len(text), step))
            elif batch.get("split_at"):
                cuts = sorted(int(i) for i in batch["split_at"] if 0 < int(i) < len(text))
            pieces, prev = [], 0
            for c in cuts + [len(text)]:
                pieces.append(text[prev:c])
                prev = c
            for i, piece in enumerate(pieces):
                if i:
                    time.sleep(float(batch.get("split_delay", 0.05)))
                self.write_chunk(piece)
        time.sleep(float(rnd.get("hold", 0)))
        if rnd.get("abort"):
            self.close_connection = True
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def finish_request(self, request, client_address):
        # The TLS handshake runs here, in the connection's thread, so that a
        # client that fails it (wrong CA) neither blocks nor stops the server.
        try:
            request.do_handshake()
        except (ssl.SSLError, OSError) as e:
            sys.stderr.write("# fake-kube-apiserver: TLS handshake with %s failed: %s\n" % (client_address[0], e))
            sys.stderr.flush()
            return
        super().finish_request(request, client_address)

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError, ssl.SSLError)):
            return
        super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cert", required=True, help="server certificate (PEM)")
    ap.add_argument("--key", required=True, help="server private key (PEM)")
    ap.add_argument("--scenario", required=True, help="scenario JSON file")
    ap.add_argument("--log", required=True, help="request log, JSON lines (appended)")
    ap.add_argument("--client-ca", help="CA that signs client certificates (requested, not required)")
    args = ap.parse_args()
    with open(args.scenario) as f:
        scenario = json.load(f)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(args.cert, args.key)
    if args.client_ca:
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.load_verify_locations(args.client_ca)
    httpd = Server(("127.0.0.1", 0), Handler)
    httpd.state = State(scenario, args.log)
    httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True, do_handshake_on_connect=False)
    open(args.log, "a").close()
    print("PORT=%d" % httpd.server_address[1], flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
