#!/usr/bin/env python3
"""Check `m2g topology export` output against the formats its readers accept.

  validate-topology-export.py SCHEMA_DIR FORMAT FILE

FORMAT: slurm-yaml, kueue, kai, volcano or labels. Every object is checked
against the JSON Schema in SCHEMA_DIR for its apiVersion and kind (test/schemas:
m2g's encodings of the projects' CRD OpenAPI schemas), then against the rules
those projects enforce in CEL, webhooks or their own parsers, which JSON Schema
cannot say. An output with no object, and a Kubernetes export missing an object
kind its reader needs (a Kueue Topology or ResourceFlavor, a KAI Topology, a
Volcano HyperNode, a Node), are problems too: an exporter that wrote nothing
must not pass. Prints "ok: N objects" and exits 0, or one line per problem and
exits 1. Needs python3-yaml and python3-jsonschema.
"""
import json
import os
import re
import sys

import jsonschema
import yaml

SCHEMAS = {
    ("kueue.x-k8s.io/v1beta2", "Topology"): "kueue.x-k8s.io_v1beta2_Topology.json",
    ("kueue.x-k8s.io/v1beta2", "ResourceFlavor"): "kueue.x-k8s.io_v1beta2_ResourceFlavor.json",
    ("kai.scheduler/v1alpha1", "Topology"): "kai.scheduler_v1alpha1_Topology.json",
    ("topology.volcano.sh/v1alpha1", "HyperNode"): "topology.volcano.sh_v1alpha1_HyperNode.json",
    ("v1", "Node"): "v1_Node.labels.json",
}
EXPECTED_KINDS = {
    "kueue": {("kueue.x-k8s.io/v1beta2", "Topology"), ("kueue.x-k8s.io/v1beta2", "ResourceFlavor")},
    "kai": {("kai.scheduler/v1alpha1", "Topology")},
    "volcano": {("topology.volcano.sh/v1alpha1", "HyperNode")},
    "labels": {("v1", "Node")},
}
HOSTNAME = "kubernetes.io/hostname"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def qualified_name_problem(key):
    """k8s.io/apimachinery IsQualifiedName: lengths the regex cannot hold."""
    prefix, _, name = key.rpartition("/")
    if len(name) > 63 or not NAME.match(name):
        return "name part '%s' is not 1-63 alphanumerics with '-', '_', '.' inside" % name
    if prefix and (len(prefix) > 253 or not all(DNS_LABEL.match(p) and len(p) <= 63 for p in prefix.split("."))):
        return "prefix '%s' is not a DNS subdomain" % prefix
    return None


def levels_rules(obj, problems, where):
    levels = [lvl["nodeLabel"] for lvl in obj.get("spec", {}).get("levels", [])]
    if len(set(levels)) != len(levels):
        problems.append("%s: levels must be unique (CEL): %s" % (where, levels))
    if HOSTNAME in levels[:-1]:
        problems.append("%s: %s can only be the lowest level (CEL)" % (where, HOSTNAME))
    for lvl in levels:
        p = qualified_name_problem(lvl)
        if p:
            problems.append("%s: nodeLabel %s: %s" % (where, lvl, p))


def check_k8s(fmt, docs, schema_dir, problems):
    objects = []
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            problems.append("document %d is not a Kubernetes object but %s" % (i + 1, type(doc).__name__))
            continue
        if doc.get("kind") == "List":
            objects.extend(doc.get("items") or [])
        else:
            objects.append(doc)
    names = {}
    for i, obj in enumerate(objects):
        key = (obj.get("apiVersion"), obj.get("kind"))
        where = "object %d (%s %s)" % (i + 1, key[1], obj.get("metadata", {}).get("name"))
        if key not in EXPECTED_KINDS[fmt]:
            problems.append("%s: %s/%s is not what --format=%s writes" % (where, key[0], key[1], fmt))
            continue
        schema = json.load(open(os.path.join(schema_dir, SCHEMAS[key])))
        for err in jsonschema.Draft202012Validator(schema).iter_errors(obj):
            path = "/".join(str(p) for p in err.absolute_path)
            problems.append("%s: %s: %s" % (where, path or "(object)", err.message))
        name = obj.get("metadata", {}).get("name")
        if (key, name) in names:
            problems.append("%s: a second %s named %s" % (where, key[1], name))
        names[(key, name)] = obj
        if key[1] == "Topology":
            levels_rules(obj, problems, where)
        if key[1] == "Node":
            md = obj.get("metadata", {})
            for k in list(md.get("labels", {})) + list(md.get("annotations", {})):
                p = qualified_name_problem(k)
                if p:
                    problems.append("%s: key %s: %s" % (where, k, p))
            spec = md.get("annotations", {}).get("topology.slinky.slurm.net/spec")
            if spec is not None and not re.match(r"^[^,:]+(:[^,:]+)+(,[^,:]+(:[^,:]+)+)*$", spec):
                problems.append("%s: topology.slinky.slurm.net/spec '%s' is not TOPOLOGY:UNIT[,...]" % (where, spec))
    if not objects:
        problems.append("no objects: the output is empty (--format=%s writes %s)"
                        % (fmt, ", ".join(sorted(k for _, k in EXPECTED_KINDS[fmt]))))
        return 0
    seen = {key for (key, _) in names}
    for key in sorted(EXPECTED_KINDS[fmt] - seen):
        problems.append("no %s object (%s): --format=%s always writes one" % (key[1], key[0], fmt))
    # References between objects.
    if fmt == "kueue":
        topologies = {n for (k, n) in names if k[1] == "Topology"}
        for (k, n), obj in names.items():
            t = obj.get("spec", {}).get("topologyName")
            if k[1] == "ResourceFlavor" and t not in topologies:
                problems.append("ResourceFlavor %s: topologyName %s names no Topology in the file" % (n, t))
    if fmt == "volcano":
        hypernodes = {n: obj for (k, n), obj in names.items()}
        for n, obj in hypernodes.items():
            for m in obj["spec"].get("members", []):
                if m.get("type") == "HyperNode":
                    child = hypernodes.get(m["selector"].get("exactMatch", {}).get("name"))
                    if child is None:
                        problems.append("HyperNode %s: member %s is not in the file" % (n, m["selector"]))
                    elif child["spec"]["tier"] >= obj["spec"]["tier"]:
                        problems.append("HyperNode %s (tier %d): member %s is not in a lower tier"
                                        % (n, obj["spec"]["tier"], child["metadata"]["name"]))
    return len(objects)


def check_slurm_yaml(docs, schema_dir, problems):
    if not [d for d in docs if d is not None] or docs == [[]]:
        problems.append("no topologies: the output is empty (a topology.yaml is a list of topologies)")
        return 0
    if len(docs) != 1:
        problems.append("a topology.yaml is one YAML document; found %d" % len(docs))
        return 0
    doc = docs[0]
    schema = json.load(open(os.path.join(schema_dir, "slurm-topology.yaml.json")))
    for err in jsonschema.Draft202012Validator(schema).iter_errors(doc):
        path = "/".join(str(p) for p in err.absolute_path)
        problems.append("%s: %s" % (path or "(file)", err.message))
    if problems:
        return len(doc or [])
    names = [t["topology"] for t in doc]
    if len(set(names)) != len(names):
        problems.append("topology names must be unique: %s" % names)
    if sum(1 for t in doc if t.get("cluster_default")) > 1:
        problems.append("more than one topology has cluster_default: true")
    for t in doc:
        if "tree" in t:
            sw = [s["switch"] for s in t["tree"]["switches"]]
            if len(set(sw)) != len(sw):
                problems.append("%s: switch names must be unique" % t["topology"])
        if "block" in t:
            bl = [b["block"] for b in t["block"]["blocks"]]
            if len(set(bl)) != len(bl):
                problems.append("%s: block names must be unique" % t["topology"])
            sizes = t["block"].get("block_sizes", [])
            # topology/block: each size is the base size times a power of two.
            for s in sizes:
                k = s // sizes[0]
                if s % sizes[0] or k & (k - 1):
                    problems.append("%s: block_sizes %s: %d is not the base times a power of two"
                                    % (t["topology"], sizes, s))
    return len(doc)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    schema_dir, fmt, path = sys.argv[1:]
    try:
        docs = list(yaml.safe_load_all(open(path)))
    except yaml.YAMLError as e:
        print("%s: not valid YAML: %s" % (path, e))
        return 1
    problems = []
    if fmt == "slurm-yaml":
        n = check_slurm_yaml(docs, schema_dir, problems)
    elif fmt in EXPECTED_KINDS:
        n = check_k8s(fmt, docs, schema_dir, problems)
    else:
        sys.exit("unknown format %s; accepted: slurm-yaml, kueue, kai, volcano, labels" % fmt)
    for p in problems:
        print(p)
    if not problems:
        print("ok: %d objects" % n)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
