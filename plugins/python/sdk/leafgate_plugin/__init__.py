"""leafgate-plugin for Python: write a leafgate policy plugin in a few lines.

The guest side of the plugin ABI for componentize-py: typed helpers over the bindings
componentize-py generates from the repository's `wit/` (`wit_world`), never restated by
hand. A plugin is a module `app` holding a class `WitWorld` with its world's export:

    from leafgate_plugin import pod_router

    class WitWorld:
        def route(self, req):
            leaves = pod_router.leaves(req)
            return pod_router.leaf(leaves[0]) if leaves else pod_router.default()

built with `componentize-py -d wit -w pod-router componentize -p <sdk> -p . app -o x.wasm`.
See plugins/README.md (Python) for the whole walk.
"""

from .common import config, config_json, glob_match, log

__all__ = ["config", "config_json", "glob_match", "log"]
