"""label-router (Python): picks a pod's leaf cluster from its labels or namespace.

The same plugin as the Rust `plugins/label-router`, with the same config and answers.
Config (rules are tried in order, the first match wins):

    config = { rules = [
        { label = "topology.leafgate.io/site", value = "edge-*", leaf = "leaf-1" },
        { namespace = "batch-*", leaf = "leaf-2" },
    ], default_leaf = "leaf-1" }

With no match and no `default_leaf` the gateway decides (`default`); with
`reject_unmatched = "message"` the request is refused with 403 instead.
"""

from leafgate_plugin import config, glob_match
from leafgate_plugin import pod_router as pr

CONFIG_KEYS = {"rules", "default_leaf", "reject_unmatched"}
RULE_KEYS = {"label", "value", "namespace", "pod", "leaf"}


class Rule:
    """One rule: every condition it names must hold (a label key with a value pattern, a
    namespace pattern, a pod name pattern)."""

    def __init__(self, table: dict):
        unknown = set(table) - RULE_KEYS
        if unknown:
            raise ValueError(f"unknown rule field(s): {', '.join(sorted(unknown))}")
        if "leaf" not in table:
            raise ValueError("a rule has no `leaf`")
        self.label = table.get("label")
        self.value = table.get("value")
        self.namespace = table.get("namespace")
        self.pod = table.get("pod")
        self.leaf = table["leaf"]

    def matches(self, req: pr.RouteRequest) -> bool:
        if self.label is not None:
            value = pr.label(req, self.label)
            if value is None or (self.value is not None and not glob_match(self.value, value)):
                return False
        if self.namespace is not None and not glob_match(self.namespace, req.namespace):
            return False
        return self.pod is None or glob_match(self.pod, req.pod)


class Router:
    def __init__(self, table: dict):
        unknown = set(table) - CONFIG_KEYS
        if unknown:
            raise ValueError(f"unknown config field(s): {', '.join(sorted(unknown))}")
        self.rules = [Rule(r) for r in table.get("rules", [])]
        self.default_leaf = table.get("default_leaf")
        self.reject_unmatched = table.get("reject_unmatched")

    def route(self, req: pr.RouteRequest) -> pr.RouteDecision:
        chosen = next((r.leaf for r in self.rules if r.matches(req)), self.default_leaf)
        if chosen is not None:
            if pr.knows_leaf(req, chosen):
                return pr.leaf(chosen)
            return pr.reject(
                503,
                f"pod {req.namespace}/{req.pod} routes to leaf `{chosen}`, "
                "which the gateway does not know",
            )
        if self.reject_unmatched is not None:
            return pr.reject(403, self.reject_unmatched)
        return pr.default()


_router = None


class WitWorld:
    def route(self, req: pr.RouteRequest) -> pr.RouteDecision:
        global _router
        if _router is None:
            _router = Router(config())
        return _router.route(req)
