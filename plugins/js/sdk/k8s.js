// Kubernetes pods as kubectl prints them: READY, STATUS, RESTARTS, AGE, IP and NODE worked
// out as kube-apiserver's `printPod` does. A port of the Rust `leafgate-k8s-print` crate
// (the gateway's built-in table and the Rust pods-table), checked against the same
// catalogue of pod shapes (tests/kubesim/fixtures/pods).

/** The annotation the gateway sets on a pod to the leaf cluster it runs in. */
export const LEAF_ANNOTATION = 'leafgate.io/leaf';

/** Seconds since the Unix epoch of an RFC 3339 time, or `undefined`. */
export function parseTimestamp(text) {
  if (typeof text !== 'string' || text.length < 20) return undefined;
  if (text[4] !== '-' || text[7] !== '-' || !'Tt '.includes(text[10])) return undefined;
  const num = (from, to) => (/^[0-9]+$/.test(text.slice(from, to)) ? Number(text.slice(from, to)) : NaN);
  const [year, month, day] = [num(0, 4), num(5, 7), num(8, 10)];
  const [hour, minute, second] = [num(11, 13), num(14, 16), num(17, 19)];
  if ([year, month, day, hour, minute, second].some(Number.isNaN)) return undefined;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59) return undefined;
  let rest = text.slice(19);
  if (rest.startsWith('.')) rest = rest.slice(1).replace(/^[0-9]*/, '');
  let offset;
  if (rest === 'Z' || rest === 'z') {
    offset = 0;
  } else if (rest.length === 6 && (rest[0] === '+' || rest[0] === '-')) {
    const h = /^[0-9]+$/.test(rest.slice(1, 3)) ? Number(rest.slice(1, 3)) : NaN;
    const m = /^[0-9]+$/.test(rest.slice(4, 6)) ? Number(rest.slice(4, 6)) : NaN;
    if (Number.isNaN(h) || Number.isNaN(m)) return undefined;
    offset = (rest[0] === '+' ? 1 : -1) * (h * 3600 + m * 60);
  } else {
    return undefined;
  }
  return daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset;
}

function daysFromCivil(y, m, d) {
  const year = m <= 2 ? y - 1 : y;
  const era = Math.floor(year / 400);
  const yoe = year - era * 400;
  const doy = Math.floor((153 * (m > 2 ? m - 3 : m + 9) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** `duration.HumanDuration`: an age as kubectl prints it (`5m3s`, `3h`, `2d5h`). */
export function humanAge(seconds) {
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(seconds / 3600);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.floor(days / 365);
  if (hours < 24 * 365 * 8) return days % 365 === 0 ? `${years}y` : `${years}y${days % 365}d`;
  return `${years}y`;
}

/** Seconds since the Unix epoch, now. */
export function now() {
  return Math.floor(Date.now() / 1000);
}

/** A text cell: the value, or `<none>` when it is absent or empty, as kubectl prints it. */
export function orNone(value) {
  return typeof value === 'string' && value !== '' ? value : '<none>';
}

const nonEmpty = (s) => (typeof s === 'string' && s !== '' ? s : undefined);

function newestRestart(newest, c) {
  const finished = parseTimestamp(c.lastState?.terminated?.finishedAt);
  if (finished === undefined) return newest;
  return newest === undefined ? finished : Math.max(newest, finished);
}

function terminatedReason(t) {
  const reason = nonEmpty(t.reason);
  if (reason !== undefined) return reason;
  if ((t.signal ?? 0) !== 0) return `Signal:${t.signal}`;
  return `ExitCode:${t.exitCode ?? 0}`;
}

function conditionTrue(pod, type) {
  return (pod.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');
}

/** READY, STATUS and RESTARTS of a pod, as `printPod` works them out. */
export function summarize(pod) {
  const spec = pod.spec ?? {};
  const status = pod.status ?? {};
  const containers = spec.containers ?? [];
  const inits = spec.initContainers ?? [];
  const isSidecar = (name) => inits.some((c) => c.name === name && c.restartPolicy === 'Always');
  let total = containers.length + inits.filter((c) => c.restartPolicy === 'Always').length;
  let ready = 0;
  let restarts = 0;
  let sidecarRestarts = 0;
  let lastRestart;
  let lastSidecarRestart;
  let reason = nonEmpty(status.reason) ?? status.phase ?? 'Unknown';
  if ((status.conditions ?? []).some((c) => c.type === 'PodScheduled' && c.reason === 'SchedulingGated')) {
    reason = 'SchedulingGated';
  }
  let initializing = false;
  const initStatuses = status.initContainerStatuses ?? [];
  for (let i = 0; i < initStatuses.length; i++) {
    const c = initStatuses[i];
    restarts += c.restartCount ?? 0;
    lastRestart = newestRestart(lastRestart, c);
    const sidecar = isSidecar(c.name);
    if (sidecar) {
      sidecarRestarts += c.restartCount ?? 0;
      lastSidecarRestart = newestRestart(lastSidecarRestart, c);
    }
    const terminated = c.state?.terminated;
    const waiting = nonEmpty(c.state?.waiting?.reason);
    if (terminated && (terminated.exitCode ?? 0) === 0) continue;
    if (sidecar && c.started === true) {
      if (c.ready) ready += 1;
      continue;
    }
    if (terminated) reason = `Init:${terminatedReason(terminated)}`;
    else if (waiting !== undefined && waiting !== 'PodInitializing') reason = `Init:${waiting}`;
    else reason = `Init:${i}/${inits.length}`;
    initializing = true;
    break;
  }
  if (!initializing || conditionTrue(pod, 'Initialized')) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    for (const c of [...(status.containerStatuses ?? [])].reverse()) {
      restarts += c.restartCount ?? 0;
      lastRestart = newestRestart(lastRestart, c);
      const waiting = nonEmpty(c.state?.waiting?.reason);
      if (waiting !== undefined) reason = waiting;
      else if (c.state?.terminated) reason = terminatedReason(c.state.terminated);
      else if (c.ready && c.state?.running) {
        hasRunning = true;
        ready += 1;
      }
    }
    if (reason === 'Completed' && hasRunning) {
      reason = conditionTrue(pod, 'Ready') ? 'Running' : 'NotReady';
    }
  }
  if (pod.metadata?.deletionTimestamp) {
    if (status.reason === 'NodeLost') reason = 'Unknown';
    else if (status.phase !== 'Succeeded' && status.phase !== 'Failed') reason = 'Terminating';
  }
  return { ready, total, status: reason, restarts, lastRestart };
}

/** A pod's cells as kubectl prints them, its ages counted to `nowSeconds`. */
export function podRow(pod, nowSeconds) {
  const s = summarize(pod);
  const restarts =
    s.lastRestart !== undefined && s.restarts !== 0
      ? `${s.restarts} (${humanAge(nowSeconds - s.lastRestart)} ago)`
      : String(s.restarts);
  const created = parseTimestamp(pod.metadata?.creationTimestamp);
  const ips = pod.status?.podIPs ?? [];
  return {
    name: pod.metadata?.name ?? '',
    ready: `${s.ready}/${s.total}`,
    status: s.status,
    restarts,
    age: created === undefined ? '<unknown>' : humanAge(nowSeconds - created),
    ip: orNone(ips.length ? ips[0].ip : pod.status?.podIP),
    node: orNone(pod.spec?.nodeName),
    leaf: orNone(pod.metadata?.annotations?.[LEAF_ANNOTATION]),
  };
}
