//! The heart of kube-apiserver's `printPod` (`pkg/printers/internalversion/printers.go`):
//! READY, STATUS and RESTARTS, worked out together in one walk over the init containers and
//! then the app containers, exactly as that function does, because the three share state
//! (an init container still running stops the walk, so neither the app containers' readiness
//! nor their restarts count yet).
//!
//! The order of the checks is the contract: a reader comparing this with `printPod` should
//! find the same branches in the same order. No formatting of the Table lives here (`table`
//! owns that), and no clock: ages are counted to the `now` the caller passes.

use crate::pod::{ContainerStatus, Pod, StateDetail};
use crate::time::{human_age, parse_timestamp};

/// `v1.PodReasonSchedulingGated`: the `PodScheduled` condition's reason while a pod waits
/// for its `schedulingGates` to be removed.
const SCHEDULING_GATED: &str = "SchedulingGated";
/// `node.NodeUnreachablePodReason`: what the node lifecycle controller sets on pods of a
/// node it lost.
const NODE_LOST: &str = "NodeLost";

/// READY, STATUS and RESTARTS of one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Containers ready: sidecars started and ready, app containers running and ready.
    pub ready: usize,
    /// App containers plus native sidecars.
    pub total: usize,
    pub status: String,
    /// The restarts counted (see `summarize`).
    pub restarts: i64,
    /// Seconds since the Unix epoch of the newest `lastState.terminated.finishedAt` among
    /// the containers counted in `restarts`.
    pub last_restart: Option<i64>,
}

impl Summary {
    /// READY as printed: `ready/total`.
    pub fn ready_cell(&self) -> String {
        format!("{}/{}", self.ready, self.total)
    }

    /// RESTARTS as printed: `N`, or `N (D ago)` when some container restarted and its last
    /// termination is dated.
    pub fn restarts_cell(&self, now: i64) -> String {
        match self.last_restart {
            Some(at) if self.restarts != 0 => {
                format!("{} ({} ago)", self.restarts, human_age(now - at))
            }
            _ => self.restarts.to_string(),
        }
    }
}

/// The later of `newest` and the `finishedAt` of `c`'s last termination, if dated.
fn newest_restart(newest: Option<i64>, c: &ContainerStatus) -> Option<i64> {
    let finished = c
        .last_state
        .terminated
        .as_ref()
        .and_then(|t| t.finished_at.as_deref())
        .and_then(parse_timestamp);
    newest.max(finished)
}

/// A terminated container's reason, else `Signal:N`, else `ExitCode:N`.
fn terminated_reason(t: &StateDetail) -> String {
    match t.reason.as_deref() {
        Some(r) if !r.is_empty() => r.to_string(),
        _ if t.signal != 0 => format!("Signal:{}", t.signal),
        _ => format!("ExitCode:{}", t.exit_code),
    }
}

/// Whether `status.conditions` holds `type_` with status `True`.
fn condition_true(pod: &Pod, type_: &str) -> bool {
    pod.status
        .conditions
        .iter()
        .any(|c| c.type_ == type_ && c.status == "True")
}

/// `printPod`'s READY, STATUS and RESTARTS for `pod`.
pub fn summarize(pod: &Pod) -> Summary {
    let status = &pod.status;
    let mut total = pod.spec.containers.len();
    let mut ready = 0;
    let mut restarts = 0;
    let mut sidecar_restarts = 0;
    let mut last_restart = None;
    let mut last_sidecar_restart = None;

    // The pod's reason beats its phase. An absent phase prints `Unknown` here where
    // kube-apiserver would print an empty cell: it never stores a pod without one (its
    // create strategy sets `Pending`), so only hand-made objects can tell the difference.
    let mut reason = match status.reason.as_deref().filter(|r| !r.is_empty()) {
        Some(r) => r.to_string(),
        None => status.phase.clone().unwrap_or_else(|| "Unknown".into()),
    };
    if status
        .conditions
        .iter()
        .any(|c| c.type_ == "PodScheduled" && c.reason.as_deref() == Some(SCHEDULING_GATED))
    {
        reason = SCHEDULING_GATED.into();
    }

    let spec_of = |name: &str| pod.spec.init_containers.iter().find(|c| c.name == name);
    let is_sidecar = |name: &str| spec_of(name).is_some_and(|c| c.is_sidecar());
    total += pod
        .spec
        .init_containers
        .iter()
        .filter(|c| c.is_sidecar())
        .count();

    // Init containers in order, up to the first that is neither done nor a started sidecar.
    let mut initializing = false;
    for (i, c) in status.init_container_statuses.iter().enumerate() {
        restarts += c.restart_count;
        last_restart = newest_restart(last_restart, c);
        let sidecar = is_sidecar(&c.name);
        if sidecar {
            sidecar_restarts += c.restart_count;
            last_sidecar_restart = newest_restart(last_sidecar_restart, c);
        }
        let terminated = c.state.terminated.as_ref();
        let waiting = c
            .state
            .waiting
            .as_ref()
            .and_then(|w| w.reason.as_deref())
            .filter(|r| !r.is_empty());
        match (terminated, waiting) {
            (Some(t), _) if t.exit_code == 0 => continue,
            _ if sidecar && c.started == Some(true) => {
                if c.ready {
                    ready += 1;
                }
                continue;
            }
            (Some(t), _) => reason = format!("Init:{}", terminated_reason(t)),
            (None, Some(w)) if w != "PodInitializing" => reason = format!("Init:{w}"),
            _ => reason = format!("Init:{i}/{}", pod.spec.init_containers.len()),
        }
        initializing = true;
        break;
    }

    // The app containers, once initialized, last to first so the first listed has the
    // last word; only sidecars' restarts carry over from the init walk.
    if !initializing || condition_true(pod, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for c in status.container_statuses.iter().rev() {
            restarts += c.restart_count;
            last_restart = newest_restart(last_restart, c);
            let waiting = c
                .state
                .waiting
                .as_ref()
                .and_then(|w| w.reason.as_deref())
                .filter(|r| !r.is_empty());
            if let Some(w) = waiting {
                reason = w.to_string();
            } else if let Some(t) = &c.state.terminated {
                reason = terminated_reason(t);
            } else if c.ready && c.state.running.is_some() {
                has_running = true;
                ready += 1;
            }
        }
        // A container that completed beside one still running: the pod still runs.
        if reason == "Completed" && has_running {
            reason = if condition_true(pod, "Ready") {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }

    if pod.metadata.deletion_timestamp.is_some() {
        if status.reason.as_deref() == Some(NODE_LOST) {
            reason = "Unknown".into();
        } else if !matches!(status.phase.as_deref(), Some("Succeeded" | "Failed")) {
            reason = "Terminating".into();
        }
    }

    Summary {
        ready,
        total,
        status: reason,
        restarts,
        last_restart,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde::Deserialize;
    use serde_json::{Value, json};

    use super::*;
    use crate::table::PodRow;

    /// 2024-03-01T00:00:00Z: the instant the catalogue's times are written for
    /// (kubesim's `fixtures::FIXTURE_NOW`).
    const NOW: i64 = 1_709_251_200;

    fn pod(v: Value) -> Pod {
        Pod::deserialize(&v).unwrap()
    }

    /// The catalogue of pod shapes the simulator's printer (the oracle) is held to too:
    /// every shape prints READY, STATUS, RESTARTS and the wide cells as worked out by hand
    /// from `printPod`.
    #[test]
    fn every_shape_of_the_catalogue_prints_as_kube_apiserver_does() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/kubesim/fixtures/pods");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let shape: Value = serde_json::from_str(&text).unwrap();
            let row = PodRow::new(&pod(shape["pod"].clone()), NOW);
            let p = &shape["printed"];
            let name = path.display();
            assert_eq!(row.ready, p["ready"], "{name}: READY");
            assert_eq!(row.status, p["status"], "{name}: STATUS");
            assert_eq!(row.restarts, p["restarts"], "{name}: RESTARTS");
            assert_eq!(row.ip, p["ip"], "{name}: IP");
            assert_eq!(row.node, p["node"], "{name}: NODE");
            assert_eq!(row.nominated_node, p["nominated"], "{name}: NOMINATED NODE");
            assert_eq!(row.readiness_gates, p["gates"], "{name}: READINESS GATES");
            seen += 1;
        }
        assert!(seen >= 12, "only {seen} shapes in {}", dir.display());
    }

    fn container(name: &str, restarts: i64, finished: &str) -> Value {
        json!({
            "name": name, "ready": true, "restartCount": restarts, "started": true,
            "state": { "running": {} },
            "lastState": { "terminated": { "exitCode": 1, "finishedAt": finished } },
        })
    }

    /// The pod: a native sidecar beside the app, both restarted.
    #[test]
    fn a_sidecar_counts_in_ready_and_restarts_read_their_last_time() {
        let p = pod(json!({
            "spec": {
                "initContainers": [{ "name": "proxy", "restartPolicy": "Always" }],
                "containers": [{ "name": "app" }],
            },
            "status": {
                "phase": "Running",
                "conditions": [{ "type": "Ready", "status": "True" }],
                "initContainerStatuses": [container("proxy", 2, "2024-02-29T23:50:00Z")],
                "containerStatuses": [container("app", 3, "2024-02-29T23:57:00Z")],
            },
        }));
        let s = summarize(&p);
        assert_eq!(
            (s.ready_cell(), s.status.as_str()),
            ("2/2".into(), "Running")
        );
        assert_eq!(s.restarts_cell(NOW), "5 (3m ago)");
        // No dated termination: the count alone; none at all: `0` however dated.
        let mut undated = s.clone();
        undated.last_restart = None;
        assert_eq!(undated.restarts_cell(NOW), "5");
        let zero = Summary { restarts: 0, ..s };
        assert_eq!(zero.restarts_cell(NOW), "0");
    }

    /// An ordinary init container before the sidecar still running: the walk stops there,
    /// so neither the sidecar nor the app counts yet.
    #[test]
    fn the_init_walk_stops_at_the_first_container_not_done() {
        let p = pod(json!({
            "spec": {
                "initContainers": [{ "name": "setup" }, { "name": "proxy", "restartPolicy": "Always" }],
                "containers": [{ "name": "app" }],
            },
            "status": {
                "phase": "Pending",
                "initContainerStatuses": [
                    { "name": "setup", "restartCount": 1, "state": { "running": {} } },
                    container("proxy", 4, "2024-02-29T23:59:00Z"),
                ],
                "containerStatuses": [container("app", 7, "2024-02-29T23:59:30Z")],
            },
        }));
        let s = summarize(&p);
        assert_eq!(
            (s.ready_cell(), s.status.as_str(), s.restarts_cell(NOW)),
            ("0/2".into(), "Init:0/2", "1".into())
        );
        // Once the pod says it is initialized, the app containers speak whatever the walk
        // saw: only sidecars' restarts carry over (none were reached here).
        let mut initialized = p.clone();
        initialized.status.conditions = vec![crate::pod::PodCondition {
            type_: "Initialized".into(),
            status: "True".into(),
            reason: None,
        }];
        let s = summarize(&initialized);
        assert_eq!(
            (s.ready_cell(), s.status.as_str(), s.restarts_cell(NOW)),
            ("1/2".into(), "Init:0/2", "7 (30s ago)".into())
        );
    }

    #[test]
    fn a_gated_pod_says_so_and_a_lost_node_reads_unknown() {
        let gated = pod(json!({ "status": { "phase": "Pending", "conditions": [
            { "type": "PodScheduled", "status": "False", "reason": "SchedulingGated" },
        ] } }));
        assert_eq!(summarize(&gated).status, "SchedulingGated");
        let unschedulable = pod(json!({ "status": { "phase": "Pending", "conditions": [
            { "type": "PodScheduled", "status": "False", "reason": "Unschedulable" },
        ] } }));
        assert_eq!(summarize(&unschedulable).status, "Pending");
        let lost = |phase: &str| {
            summarize(&pod(json!({
                "metadata": { "deletionTimestamp": "2024-03-01T00:00:00Z" },
                "status": { "phase": phase, "reason": "NodeLost" },
            })))
            .status
        };
        assert_eq!(lost("Running"), "Unknown");
        // NodeLost wins even over a terminal phase; Terminating does not.
        assert_eq!(lost("Succeeded"), "Unknown");
        let done = pod(json!({
            "metadata": { "deletionTimestamp": "2024-03-01T00:00:00Z" },
            "status": { "phase": "Failed" },
        }));
        assert_eq!(summarize(&done).status, "Failed");
    }
}
