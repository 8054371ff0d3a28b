#!/usr/bin/env python3
"""Writes src/crd_schemas.json: the structural schemas of gateway-api's standard CRDs, cut to
what kube-apiserver's pruning and defaulting read: every property's name, and the `default:`
values.

    python3 scripts/crd-schemas.py <gateway-api checkout> v1.6.1 > src/crd_schemas.json

Each kind and version maps to a node {"default"?, "properties"?, "items"?,
"additionalProperties"?}; `crd::prune` drops what no `properties` names (as
`apiserver/schema/pruning` does) and `crd::default` applies the defaults (as
`apiserver/schema/defaulting` does). Needs PyYAML. Refuses schemas these two could not
follow: `x-kubernetes-preserve-unknown-fields`, embedded resources, defaults under a
combinator, and objects declaring neither properties nor additionalProperties (but the
root's `metadata`, which is pruned as ObjectMeta).
"""
import json
import subprocess
import sys

import yaml

KINDS = ["gatewayclasses", "gateways", "httproutes", "referencegrants"]


def skeleton(s, path):
    for key in ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource"):
        if s.get(key):
            sys.exit(f"{path}: {key} is not followed by crd::prune")
    for comb in ("allOf", "anyOf", "oneOf", "not"):
        if json.dumps(s.get(comb)).find('"default"') >= 0:
            sys.exit(f"{path}: a default under {comb}: not a structural schema")
    node = {}
    props = s.get("properties") or {}
    if props:
        node["properties"] = {k: skeleton(v, f"{path}.{k}") for k, v in props.items()}
    if isinstance(s.get("items"), dict):
        node["items"] = skeleton(s["items"], f"{path}[*]")
    add = s.get("additionalProperties")
    if isinstance(add, dict):
        node["additionalProperties"] = skeleton(add, f"{path}{{*}}")
    if s.get("type") == "object" and not props and not isinstance(add, dict):
        if path != ".metadata":
            sys.exit(f"{path}: an object with neither properties nor additionalProperties")
    if "default" in s:
        node["default"] = s["default"]
    return node


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
            out["kinds"][f"{plural}/{v['name']}"] = skeleton(v["schema"]["openAPIV3Schema"], "")
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


main()
