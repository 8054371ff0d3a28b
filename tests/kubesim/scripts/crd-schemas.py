#!/usr/bin/env python3
"""Writes src/crd_defaults.json: the `default:` values of gateway-api's standard CRDs, as a
skeleton of their structural schemas holding only the paths that lead to a default.

    python3 scripts/crd-defaults.py <gateway-api checkout> v1.6.1 > src/crd_defaults.json

Each kind and version maps to a node {"default"?, "properties"?, "items"?,
"additionalProperties"?}; `crd::default` applies them as the apiextensions defaulting
algorithm does. Needs PyYAML.
"""
import json
import subprocess
import sys

import yaml

KINDS = ["gatewayclasses", "gateways", "httproutes", "referencegrants"]


def skeleton(s):
    if not isinstance(s, dict):
        return None
    node = {}
    props = {}
    for k, v in (s.get("properties") or {}).items():
        sk = skeleton(v)
        if sk is not None:
            props[k] = sk
    if props:
        node["properties"] = props
    items = skeleton(s.get("items"))
    if items is not None:
        node["items"] = items
    add = s.get("additionalProperties")
    if isinstance(add, dict):
        sk = skeleton(add)
        if sk is not None:
            node["additionalProperties"] = sk
    for comb in ("allOf", "anyOf", "oneOf", "not"):
        if json.dumps(s.get(comb)).find('"default"') >= 0:
            sys.exit(f"a default under {comb}: not a structural schema")
    if "default" in s:
        node["default"] = s["default"]
    return node or None


def main():
    repo, tag = sys.argv[1], sys.argv[2]
    out = {"source": f"kubernetes-sigs/gateway-api {tag} config/crd/standard", "kinds": {}}
    for plural in KINDS:
        path = f"{tag}:config/crd/standard/gateway.networking.k8s.io_{plural}.yaml"
        text = subprocess.run(
            ["git", "-C", repo, "show", path], check=True, capture_output=True, text=True
        ).stdout
        crd = yaml.safe_load(text)
        for v in crd["spec"]["versions"]:
            if not v.get("served"):
                continue
            sk = skeleton(v["schema"]["openAPIV3Schema"]) or {}
            out["kinds"][f"{plural}/{v['name']}"] = sk
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


main()
