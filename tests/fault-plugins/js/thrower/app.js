// thrower: a JavaScript pod-router that throws on pods named `throw-*`, for the sandbox
// tests. Any other pod goes to the first leaf the gateway knows, so a test sees that an
// exception fails only the call that threw it.
import { podRouter as pr } from '../../../../plugins/js/sdk/leafgate-plugin.js';

export function route(req) {
  if (req.pod.startsWith('throw-')) throw new Error(`thrower: refusing to route ${req.pod}`);
  const leaves = pr.leaves(req);
  return leaves.length ? pr.leaf(leaves[0]) : pr.byDefault();
}
