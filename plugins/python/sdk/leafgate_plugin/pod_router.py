"""The `pod-router` world: the request's labels and leaves, and the decisions.

    def route(self, req: RouteRequest) -> RouteDecision
"""

from typing import Optional

from wit_world.imports.types import (
    Rejection,
    RouteDecision,
    RouteDecision_Default,
    RouteDecision_Leaf,
    RouteDecision_Reject,
    RouteRequest,
    Verb,
)

from .common import entries

__all__ = [
    "RouteDecision",
    "RouteRequest",
    "Verb",
    "default",
    "knows_leaf",
    "label",
    "labels",
    "leaf",
    "leaves",
    "reject",
]


def labels(req: RouteRequest) -> Optional[dict]:
    """The pod's labels as a dict, or `None` when the gateway does not know the pod."""
    if req.labels is None:
        return None
    out = {}
    for line in entries(req.labels):
        key, _, value = line.partition("=")
        out[key] = value
    return out


def label(req: RouteRequest, key: str) -> Optional[str]:
    """The value of one pod label, when the gateway knows the pod and it has that label."""
    if req.labels is None:
        return None
    head = key + "="
    for line in entries(req.labels):
        if line.startswith(head):
            return line[len(head) :]
    return None


def leaves(req: RouteRequest) -> list:
    """The leaf clusters the gateway knows, by name (a `leaf` answer must be one)."""
    return entries(req.leaves)


def knows_leaf(req: RouteRequest, name: str) -> bool:
    """Whether `name` is one of the leaves the gateway knows."""
    return name in entries(req.leaves)


def leaf(name: str) -> RouteDecision:
    """Send the request to this leaf cluster."""
    return RouteDecision_Leaf(name)


def reject(status: int, message: str) -> RouteDecision:
    """Answer the client with this error (status 400 to 599)."""
    return RouteDecision_Reject(Rejection(status, message))


def default() -> RouteDecision:
    """Do what the gateway would do with no plugin."""
    return RouteDecision_Default()
