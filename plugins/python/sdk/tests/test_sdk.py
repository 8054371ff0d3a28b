"""The Python SDK's tests, on the host's CPython with the bindings componentize-py
generates from wit/ (`componentize-py -d wit -w pod-router bindings <dir>`, that dir on
PYTHONPATH) and the host's imports replaced by fakes.

    PYTHONPATH=<bindings>:plugins/python/sdk python -m unittest discover plugins/python/sdk/tests
"""

import json
import unittest

from wit_world.imports import host, types

import leafgate_plugin
from leafgate_plugin import common, glob_match, log_filter, pod_router, table_formatter


class FakeHost:
    """Stands in for the gateway's `host` import: a config, and the lines logged."""

    def __init__(self, config: str = "{}"):
        self.config = config
        self.logged = []

    def __enter__(self):
        self.saved = (host.config, host.log)
        host.config = lambda: self.config
        host.log = lambda level, message: self.logged.append((level, message))
        common._config = None
        return self

    def __exit__(self, *exc):
        host.config, host.log = self.saved
        common._config = None


def request(labels=None, leaves=("leaf-1", "leaf-2"), namespace="ns", pod="p"):
    return types.RouteRequest(
        tenant="t",
        namespace=namespace,
        pod=pod,
        container=None,
        verb=types.Verb.EXEC,
        labels=labels,
        leaves="\n".join(leaves),
    )


class GlobTest(unittest.TestCase):
    def test_globs_match_as_the_rust_sdk(self):
        cases = [
            ("edge-*", "edge-1", True),
            ("edge-*", "edge-", True),
            ("edge-*", "core-1", False),
            ("*-prod", "api-prod", True),
            ("team-*-db", "team-a-db", True),
            ("team-*-db", "team-a-dbx", False),
            ("exact", "exact", True),
            ("a*a", "a", False),
            ("a*b*c*d", "a-b-c-d", True),
            ("a*c*b*d", "a-b-c-d", False),
            ("*", "", True),
            ("**", "x", True),
        ]
        for pattern, text, want in cases:
            self.assertEqual(glob_match(pattern, text), want, (pattern, text))


class PodRouterTest(unittest.TestCase):
    def test_labels_and_leaves_read_from_their_lines(self):
        req = request(labels="app=web\nsite=edge-1\nempty=")
        self.assertEqual(pod_router.labels(req), {"app": "web", "site": "edge-1", "empty": ""})
        self.assertEqual(pod_router.label(req, "site"), "edge-1")
        self.assertEqual(pod_router.label(req, "sit"), None)
        self.assertEqual(pod_router.label(req, "empty"), "")
        self.assertEqual(pod_router.leaves(req), ["leaf-1", "leaf-2"])
        self.assertTrue(pod_router.knows_leaf(req, "leaf-2"))
        self.assertFalse(pod_router.knows_leaf(req, "leaf"))

    def test_an_unknown_pod_has_no_labels_and_no_leaves_is_empty(self):
        req = request(labels=None, leaves=())
        self.assertIsNone(pod_router.labels(req))
        self.assertIsNone(pod_router.label(req, "app"))
        self.assertEqual(pod_router.labels(request(labels="")), {})
        self.assertEqual(pod_router.leaves(req), [])

    def test_decisions_are_the_wit_variants(self):
        self.assertEqual(pod_router.leaf("a"), types.RouteDecision_Leaf("a"))
        self.assertEqual(
            pod_router.reject(403, "no"),
            types.RouteDecision_Reject(types.Rejection(403, "no")),
        )
        self.assertIsInstance(pod_router.default(), types.RouteDecision_Default)


class LogFilterTest(unittest.TestCase):
    def test_lines_keep_empty_lines(self):
        self.assertEqual(log_filter.lines("a\n\nb"), ["a", "", "b"])
        self.assertEqual(log_filter.lines(""), [""])

    def test_verdicts_are_compact(self):
        v = log_filter.Verdicts()
        v.keep()
        v.replace("x")
        v.drop()
        v.replace("y")
        done = v.done()
        self.assertEqual(
            done.actions,
            [types.Action.KEEP, types.Action.REPLACE, types.Action.DROP, types.Action.REPLACE],
        )
        self.assertEqual(done.replacements, ["x", "y"])


class TableFormatterTest(unittest.TestCase):
    def test_cells_from_python_values(self):
        row = table_formatter.row("a", 3, 1.5, True, None)
        self.assertEqual(
            row.cells,
            [
                types.Cell_Text("a"),
                types.Cell_Integer(3),
                types.Cell_Number(1.5),
                types.Cell_Boolean(True),
                types.Cell_None_(),
            ],
        )

    def test_objects_from_an_array_or_a_list(self):
        def req(objects):
            return types.TableRequest("t", "", "v1", "pods", False, objects)

        self.assertEqual(table_formatter.objects(req('[{"a": 1}]')), [{"a": 1}])
        self.assertEqual(table_formatter.objects(req('{"kind": "PodList", "items": [1]}')), [1])
        with self.assertRaises(ValueError):
            table_formatter.objects(req('"text"'))


class HostTest(unittest.TestCase):
    def test_config_is_parsed_once_and_kept(self):
        with FakeHost('{"rules": []}') as fake:
            self.assertEqual(leafgate_plugin.config(), {"rules": []})
            fake.config = '{"changed": true}'
            self.assertEqual(leafgate_plugin.config(), {"rules": []})

    def test_a_config_that_is_no_table_raises(self):
        with FakeHost("[1, 2]"):
            with self.assertRaises(ValueError):
                leafgate_plugin.config()

    def test_log_goes_to_the_host_at_its_level(self):
        with FakeHost() as fake:
            leafgate_plugin.log.warn("careful")
            leafgate_plugin.log.error(json.dumps({"x": 1}))
        self.assertEqual(
            fake.logged, [(host.Level.WARN, "careful"), (host.Level.ERROR, '{"x": 1}')]
        )


if __name__ == "__main__":
    unittest.main()
