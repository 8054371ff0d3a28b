// pods-table (JavaScript): prints pods the way `kubectl get pods` does, plus the leaf each
// runs in. The same table as the Rust plugins/pods-table: NAME, READY, STATUS, RESTARTS,
// AGE, LEAF, then IP and NODE with priority 1 (shown with `-o wide`). Any resource but
// `pods` falls back to the gateway's default table.
import { log, tableFormatter as tf } from '../sdk/leafgate-plugin.js';
import { now, podRow } from '../sdk/k8s.js';

const COLUMNS = [
  tf.column('NAME', { format: 'name', description: 'Name must be unique within a namespace.' }),
  tf.column('READY', { description: 'The number of containers that are ready.' }),
  tf.column('STATUS', { description: 'The aggregate status of the containers in this pod.' }),
  tf.column('RESTARTS', {
    description: 'The number of times the containers have been restarted, and how long ago the last one was.',
  }),
  tf.column('AGE', { description: 'Time since the pod was created.' }),
  tf.column('LEAF', { description: 'The leaf cluster the pod runs in.' }),
  tf.column('IP', { description: 'IP address allocated to the pod.', priority: 1 }),
  tf.column('NODE', { description: 'Name of the node the pod is scheduled on.', priority: 1 }),
];

export function format(req) {
  if (req.resource !== 'pods' || req.group !== '') return undefined;
  let pods;
  try {
    pods = tf.objects(req);
  } catch (e) {
    log.warn(`pods-table: not a JSON array of pods: ${e.message}; using the default table`);
    return undefined;
  }
  const at = now();
  return {
    columns: COLUMNS,
    rows: pods.map((pod) => {
      const r = podRow(pod, at);
      return tf.row(r.name, r.ready, r.status, r.restarts, r.age, r.leaf, r.ip, r.node);
    }),
  };
}
