// label-router (JavaScript): picks a pod's leaf cluster from its labels or namespace.
//
// The same plugin as the Rust plugins/label-router, with the same config and answers.
// Config (rules are tried in order, the first match wins):
//
//   config = { rules = [
//       { label = "topology.leafgate.io/site", value = "edge-*", leaf = "leaf-1" },
//       { namespace = "batch-*", leaf = "leaf-2" },
//   ], default_leaf = "leaf-1" }
//
// With no match and no `default_leaf` the gateway decides (`default`); with
// `reject_unmatched = "message"` the request is refused with 403 instead.
import { config, globMatch, podRouter as pr } from '../sdk/leafgate-plugin.js';

const CONFIG_KEYS = ['rules', 'default_leaf', 'reject_unmatched'];
const RULE_KEYS = ['label', 'value', 'namespace', 'pod', 'leaf'];

function refuseUnknown(table, known, what) {
  const unknown = Object.keys(table).filter((k) => !known.includes(k));
  if (unknown.length) throw new Error(`unknown ${what} field(s): ${unknown.sort().join(', ')}`);
}

/** One rule: every condition it names must hold. */
function rule(table) {
  refuseUnknown(table, RULE_KEYS, 'rule');
  if (typeof table.leaf !== 'string') throw new Error('a rule has no `leaf`');
  return {
    leaf: table.leaf,
    matches(req) {
      if (table.label !== undefined) {
        const value = pr.label(req, table.label);
        if (value === undefined || (table.value !== undefined && !globMatch(table.value, value))) {
          return false;
        }
      }
      if (table.namespace !== undefined && !globMatch(table.namespace, req.namespace)) return false;
      return table.pod === undefined || globMatch(table.pod, req.pod);
    },
  };
}

let router;

function load() {
  const table = config();
  refuseUnknown(table, CONFIG_KEYS, 'config');
  return {
    rules: (table.rules ?? []).map(rule),
    defaultLeaf: table.default_leaf,
    rejectUnmatched: table.reject_unmatched,
  };
}

export function route(req) {
  router ??= load();
  const chosen = router.rules.find((r) => r.matches(req))?.leaf ?? router.defaultLeaf;
  if (chosen !== undefined) {
    if (pr.knowsLeaf(req, chosen)) return pr.leaf(chosen);
    return pr.reject(
      503,
      `pod ${req.namespace}/${req.pod} routes to leaf \`${chosen}\`, which the gateway does not know`,
    );
  }
  if (router.rejectUnmatched !== undefined) return pr.reject(403, router.rejectUnmatched);
  return pr.byDefault();
}
