#!/usr/bin/env python3
"""Check m2g's OpenADR 3 JSON against the OpenADR 3.1.0 definition, read in place.

  validate-openadr.py DEFDIR reports FILE   FILE: a JSON array of reportRequest objects (m2g forecast --openadr)
  validate-openadr.py DEFDIR events FILE    FILE: a signals feed; its openadr_events are event objects

DEFDIR is ../shared/deps/openadr3-3.1.0 (openadr3.yaml and enumerations/). Each object is validated against
the OpenAPI schema (reportRequest or event, $refs resolved within openadr3.yaml); each valuesMap whose type the
enumerations define is validated against that definition, and readingType and units against theirs. Payload
types the enumerations do not define are accepted only with m2g's prefix M2G_ (OpenADR allows private types).
Prints one line per problem; exit 0 valid, 1 invalid, 2 cannot check (a missing file or module).
"""
import json
import os
import sys

try:
    import jsonschema
    import yaml
except ImportError as e:
    print("cannot check: %s (apt-get install python3-jsonschema python3-yaml)" % e)
    sys.exit(2)


def load_yaml(path):
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except OSError as e:
        print("cannot check: %s" % e)
        sys.exit(2)


def main():
    if len(sys.argv) != 4 or sys.argv[2] not in ("reports", "events"):
        print(__doc__.strip())
        sys.exit(2)
    defdir, kind, path = sys.argv[1:]
    api = load_yaml(os.path.join(defdir, "openadr3.yaml"))
    enum_dir = os.path.join(defdir, "enumerations")
    payload_file = "report-payloads.schema.yaml" if kind == "reports" else "event-interval-payloads.schema.yaml"
    payload_defs = load_yaml(os.path.join(enum_dir, payload_file))["definitions"]
    reading_types = load_yaml(os.path.join(enum_dir, "reading-types.schema.yaml"))["enum"]
    units = load_yaml(os.path.join(enum_dir, "units.schema.yaml"))["enum"]
    with open(path) as f:
        doc = json.load(f)

    target = "reportRequest" if kind == "reports" else "event"
    schema = {"$ref": "#/components/schemas/" + target, "components": api["components"]}
    validator = jsonschema.Draft7Validator(schema)
    objects = doc if kind == "reports" else doc.get("openadr_events", [])
    problems = []
    if kind == "reports" and not isinstance(doc, list):
        problems.append("(top): expected an array of reportRequest objects")
        objects = []
    if not objects:
        problems.append("(top): no %s objects to check" % target)

    def check_payloads(where, payloads):
        for k, vm in enumerate(payloads or []):
            t = vm.get("type")
            d = payload_defs.get(t)
            if d is None:
                if not str(t).startswith("M2G_"):
                    problems.append("%s.payloads[%d]: type %r is neither in %s nor m2g's (M2G_)" %
                                    (where, k, t, payload_file))
                continue
            d = {key: v for key, v in d.items() if key != "$id"}
            for e in jsonschema.Draft7Validator(d).iter_errors(vm.get("values")):
                problems.append("%s.payloads[%d].values (%s): %s" % (where, k, t, e.message))

    for i, o in enumerate(objects):
        base = "[%d]" % i
        for e in validator.iter_errors(o):
            problems.append("%s/%s: %s" % (base, "/".join(str(p) for p in e.absolute_path), e.message))
        for j, d in enumerate(o.get("payloadDescriptors") or []):
            if "readingType" in d and d["readingType"] not in reading_types:
                problems.append("%s.payloadDescriptors[%d].readingType %r not in reading-types" %
                                (base, j, d["readingType"]))
            if d.get("units") is not None and d["units"] not in units:
                problems.append("%s.payloadDescriptors[%d].units %r not in units" % (base, j, d["units"]))
        if kind == "reports":
            for r, res in enumerate(o.get("resources") or []):
                for n, iv in enumerate(res.get("intervals") or []):
                    check_payloads("%s.resources[%d].intervals[%d]" % (base, r, n), iv.get("payloads"))
        else:
            for n, iv in enumerate(o.get("intervals") or []):
                check_payloads("%s.intervals[%d]" % (base, n), iv.get("payloads"))
    for p in problems:
        print(p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
