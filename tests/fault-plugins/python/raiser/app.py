"""raiser: a Python pod-router that raises on pods named `raise-*`, for the sandbox tests.

Any other pod goes to the first leaf the gateway knows, so a test sees that an exception
fails only the call that raised it: the next call, on the same warm instance or a fresh
one, routes again.
"""

from leafgate_plugin import pod_router as pr


class WitWorld:
    def route(self, req: pr.RouteRequest) -> pr.RouteDecision:
        if req.pod.startswith("raise-"):
            raise RuntimeError(f"raiser: refusing to route {req.pod}")
        leaves = pr.leaves(req)
        return pr.leaf(leaves[0]) if leaves else pr.default()
