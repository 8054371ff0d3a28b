//! kube-apiserver's pod table (`printPod` in `pkg/printers/internalversion`): its columns
//! and how each cell is worked out from a pod (READY, STATUS's reasoning, RESTARTS, AGE and
//! the wide columns).
//!
//! It produces column definitions and typed cells, not a wire format: the gateway writes
//! them as `meta.k8s.io` Table JSON (adding its LEAF column), the `pods-table` plugin as WIT
//! records in its own layout. Known gaps against kube-apiserver (e.g. native sidecars, the
//! last restart's age in RESTARTS, SchedulingGated, NotReady) stay as they are until
//! fidelity is taken up; this is the one place to close them.

use serde::Serialize;

use crate::pod::{ContainerStatus, Pod};
use crate::time::{human_age, parse_timestamp};

/// One column of a pod table, shaped as a `meta.k8s.io` Table's `columnDefinitions` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Column {
    pub name: &'static str,
    /// The OpenAPI type of the cells: `string`, `integer`, ...
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    /// 0: always shown; 1: only with `-o wide`.
    pub priority: i32,
}

/// kube-apiserver's pod columns, in its order; `PodRow::cells` fills them.
pub const POD_COLUMNS: [Column; 9] = [
    Column {
        name: "Name",
        kind: "string",
        format: "name",
        description: "Name must be unique within a namespace.",
        priority: 0,
    },
    Column {
        name: "Ready",
        kind: "string",
        format: "",
        description: "The aggregate readiness state of this pod for accepting traffic.",
        priority: 0,
    },
    Column {
        name: "Status",
        kind: "string",
        format: "",
        description: "The aggregate status of the containers in this pod.",
        priority: 0,
    },
    Column {
        name: "Restarts",
        kind: "string",
        format: "",
        description: "The number of times the containers in this pod have been restarted.",
        priority: 0,
    },
    Column {
        name: "Age",
        kind: "string",
        format: "",
        description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
        priority: 0,
    },
    Column {
        name: "IP",
        kind: "string",
        format: "",
        description: "IP address allocated to the pod.",
        priority: 1,
    },
    Column {
        name: "Node",
        kind: "string",
        format: "",
        description: "Name of the node where the pod is scheduled.",
        priority: 1,
    },
    Column {
        name: "Nominated Node",
        kind: "string",
        format: "",
        description: "Name of the node where the pod is nominated to be scheduled.",
        priority: 1,
    },
    Column {
        name: "Readiness Gates",
        kind: "string",
        format: "",
        description: "The readiness gates of the pod.",
        priority: 1,
    },
];

/// One pod's cells, one field per column of `POD_COLUMNS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRow {
    pub name: String,
    /// `ready/containers`, e.g. `1/2`.
    pub ready: String,
    pub status: String,
    /// Summed over the app containers.
    pub restarts: i64,
    /// `<unknown>` without a readable creation timestamp.
    pub age: String,
    pub ip: String,
    pub node: String,
    pub nominated_node: String,
    /// `met/gates`, or `<none>` when the pod has none.
    pub readiness_gates: String,
}

impl PodRow {
    /// The row of `pod`, its age counted to `now` (seconds since the Unix epoch).
    pub fn new(pod: &Pod, now: i64) -> PodRow {
        let statuses = &pod.status.container_statuses;
        let ready = statuses.iter().filter(|c| c.ready).count();
        let age = pod
            .metadata
            .creation_timestamp
            .as_deref()
            .and_then(parse_timestamp)
            .map_or_else(
                || "<unknown>".to_string(),
                |created| human_age(now - created),
            );
        PodRow {
            name: pod.metadata.name.clone(),
            ready: format!("{ready}/{}", pod.spec.containers.len()),
            status: status(pod),
            restarts: statuses.iter().map(|c| c.restart_count).sum(),
            age,
            ip: or_none(pod.status.pod_ip.as_deref()),
            node: or_none(pod.spec.node_name.as_deref()),
            nominated_node: or_none(pod.status.nominated_node_name.as_deref()),
            readiness_gates: readiness_gates(pod),
        }
    }

    /// The cells in `POD_COLUMNS` order, all text as kube-apiserver sends them (RESTARTS
    /// included: its column is a string).
    pub fn cells(self) -> [String; 9] {
        [
            self.name,
            self.ready,
            self.status,
            self.restarts.to_string(),
            self.age,
            self.ip,
            self.node,
            self.nominated_node,
            self.readiness_gates,
        ]
    }
}

/// A text cell: the value, or `<none>` when it is absent or empty, as kubectl prints it.
pub fn or_none(value: Option<&str>) -> String {
    value
        .filter(|s| !s.is_empty())
        .unwrap_or("<none>")
        .to_string()
}

/// READINESS GATES: how many of the pod's gates have their condition `True`, of how many.
fn readiness_gates(pod: &Pod) -> String {
    let gates = &pod.spec.readiness_gates;
    if gates.is_empty() {
        return "<none>".into();
    }
    let conditions = &pod.status.conditions;
    let met = gates
        .iter()
        .filter(|g| {
            conditions
                .iter()
                .any(|c| c.type_ == g.condition_type && c.status == "True")
        })
        .count();
    format!("{met}/{}", gates.len())
}

/// Why a container is not simply running, as kubectl words it; `None` when it is.
fn container_reason(c: &ContainerStatus) -> Option<String> {
    if let Some(reason) = c.state.waiting.as_ref().and_then(|w| w.reason.clone()) {
        return Some(reason).filter(|r| !r.is_empty());
    }
    let t = c.state.terminated.as_ref()?;
    Some(match t.reason.as_deref() {
        Some(r) if !r.is_empty() => r.to_string(),
        _ if t.signal != 0 => format!("Signal:{}", t.signal),
        _ => format!("ExitCode:{}", t.exit_code),
    })
}

/// The STATUS column, by kube-apiserver's printer's reasoning: the pod's reason or phase,
/// overridden by the first init container not done, else by the app containers' waiting
/// and terminated reasons, and finally by Terminating.
pub fn status(pod: &Pod) -> String {
    let mut reason = pod
        .status
        .reason
        .clone()
        .filter(|r| !r.is_empty())
        .or_else(|| pod.status.phase.clone())
        .unwrap_or_else(|| "Unknown".into());
    let mut initializing = false;
    for (i, c) in pod.status.init_container_statuses.iter().enumerate() {
        if c.state
            .terminated
            .as_ref()
            .is_some_and(|t| t.exit_code == 0)
        {
            continue;
        }
        initializing = true;
        let waiting = c.state.waiting.as_ref().and_then(|w| w.reason.as_deref());
        reason = match (&c.state.terminated, waiting) {
            (Some(_), _) => format!("Init:{}", container_reason(c).unwrap_or_default()),
            (None, Some(r)) if !r.is_empty() && r != "PodInitializing" => format!("Init:{r}"),
            _ => format!("Init:{i}/{}", pod.spec.init_containers.len()),
        };
        break;
    }
    if !initializing {
        let mut has_running = false;
        for c in pod.status.container_statuses.iter().rev() {
            match container_reason(c) {
                Some(r) => reason = r,
                None if c.ready && c.state.running.is_some() => has_running = true,
                None => {}
            }
        }
        if reason == "Completed" && has_running {
            reason = "Running".into();
        }
    }
    if pod.metadata.deletion_timestamp.is_some() {
        reason = if pod.status.reason.as_deref() == Some("NodeLost") {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    reason
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::{Value, json};

    use super::*;
    use crate::pod::LEAF_ANNOTATION;

    /// 2024-03-01T00:00:00Z.
    const NOW: i64 = 1_709_251_200;

    fn pod(v: Value) -> Pod {
        Pod::deserialize(&v).unwrap()
    }

    fn status_of(v: Value) -> String {
        status(&pod(v))
    }

    fn running(name: &str) -> Value {
        json!({ "name": name, "ready": true, "restartCount": 0, "state": { "running": {} } })
    }

    #[test]
    fn a_running_pod_fills_every_column() {
        let p = pod(json!({
            "metadata": { "name": "web-1", "creationTimestamp": "2024-02-29T23:54:40Z" },
            "spec": {
                "nodeName": "node-a",
                "containers": [{ "name": "app" }, { "name": "side" }],
                "readinessGates": [{ "conditionType": "a" }, { "conditionType": "b" }],
            },
            "status": {
                "phase": "Running",
                "podIP": "10.1.2.3",
                "nominatedNodeName": "",
                "conditions": [
                    { "type": "a", "status": "True" },
                    { "type": "b", "status": "False" },
                ],
                "containerStatuses": [
                    running("app"),
                    { "name": "side", "ready": true, "restartCount": 3, "state": { "running": {} } },
                ],
            },
        }));
        assert_eq!(
            PodRow::new(&p, NOW).cells(),
            [
                "web-1", "2/2", "Running", "3", "5m20s", "10.1.2.3", "node-a", "<none>", "1/2"
            ]
        );
    }

    #[test]
    fn an_empty_pod_prints_unknowns_and_nones() {
        let row = PodRow::new(&Pod::default(), NOW);
        assert_eq!(
            row.cells(),
            [
                "",
                "0/0",
                "Unknown",
                "0",
                "<unknown>",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ]
        );
        let unreadable = pod(json!({ "metadata": { "creationTimestamp": "last week" } }));
        assert_eq!(PodRow::new(&unreadable, NOW).age, "<unknown>");
    }

    #[test]
    fn app_containers_give_their_reasons_the_first_listed_winning() {
        let s = status_of(
            json!({ "status": { "phase": "Running", "containerStatuses": [
            { "name": "a", "state": { "waiting": { "reason": "CrashLoopBackOff" } } },
            { "name": "b", "state": { "waiting": { "reason": "ImagePullBackOff" } } },
        ] } }),
        );
        assert_eq!(s, "CrashLoopBackOff");
        let killed =
            json!({ "name": "a", "state": { "terminated": { "signal": 9, "exitCode": 137 } } });
        assert_eq!(
            status_of(json!({ "status": { "phase": "Failed", "containerStatuses": [killed] } })),
            "Signal:9"
        );
        let exited = json!({ "name": "a", "state": { "terminated": { "exitCode": 2 } } });
        assert_eq!(
            status_of(json!({ "status": { "phase": "Failed", "containerStatuses": [exited] } })),
            "ExitCode:2"
        );
        // An empty waiting reason is no reason: the phase stands.
        let quiet = json!({ "name": "a", "state": { "waiting": { "reason": "" } } });
        assert_eq!(
            status_of(json!({ "status": { "phase": "Pending", "containerStatuses": [quiet] } })),
            "Pending"
        );
    }

    #[test]
    fn completed_beside_a_ready_running_container_is_running() {
        let done = json!({ "name": "a", "state": { "terminated": { "reason": "Completed" } } });
        assert_eq!(
            status_of(
                json!({ "status": { "phase": "Running", "containerStatuses": [done, running("b")] } })
            ),
            "Running"
        );
        assert_eq!(
            status_of(json!({ "status": { "phase": "Succeeded", "containerStatuses": [done] } })),
            "Completed"
        );
    }

    #[test]
    fn init_containers_decide_while_they_run() {
        let spec = json!({ "initContainers": [{ "name": "i0" }, { "name": "i1" }] });
        let ok = json!({ "name": "i0", "state": { "terminated": { "exitCode": 0 } } });
        let at = |second: Value| {
            status_of(json!({ "spec": spec, "status": {
                "phase": "Pending",
                "initContainerStatuses": [ok, second],
                "containerStatuses": [{ "name": "app", "state": { "waiting": { "reason": "PodInitializing" } } }],
            } }))
        };
        assert_eq!(
            at(json!({ "name": "i1", "state": { "running": {} } })),
            "Init:1/2"
        );
        assert_eq!(
            at(json!({ "name": "i1", "state": { "waiting": { "reason": "PodInitializing" } } })),
            "Init:1/2"
        );
        assert_eq!(
            at(json!({ "name": "i1", "state": { "waiting": { "reason": "ErrImagePull" } } })),
            "Init:ErrImagePull"
        );
        assert_eq!(
            at(
                json!({ "name": "i1", "state": { "terminated": { "reason": "Error", "exitCode": 1 } } })
            ),
            "Init:Error"
        );
        assert_eq!(
            at(json!({ "name": "i1", "state": { "terminated": { "exitCode": 3 } } })),
            "Init:ExitCode:3"
        );
        // Every init container done: the app containers speak.
        assert_eq!(at(ok.clone()), "PodInitializing");
    }

    #[test]
    fn the_pods_reason_beats_its_phase_and_deletion_beats_both() {
        assert_eq!(
            status_of(json!({ "status": { "phase": "Failed", "reason": "Evicted" } })),
            "Evicted"
        );
        let deleted = |reason: &str| {
            status_of(json!({
                "metadata": { "deletionTimestamp": "2024-03-01T00:00:00Z" },
                "status": { "phase": "Running", "reason": reason, "containerStatuses": [running("a")] },
            }))
        };
        assert_eq!(deleted(""), "Terminating");
        assert_eq!(deleted("NodeLost"), "Unknown");
    }

    #[test]
    fn a_pod_reads_the_same_from_text_and_from_a_value() {
        let v = json!({
            "metadata": { "name": "x", "annotations": { LEAF_ANNOTATION: "leaf-1" } },
            "spec": { "containers": [{ "name": "c" }] },
            "status": { "phase": "Running", "containerStatuses": [running("c")] },
        });
        let from_text: Pod = serde_json::from_str(&v.to_string()).unwrap();
        let from_value = pod(v);
        assert_eq!(from_value.metadata.leaf(), Some("leaf-1"));
        assert_eq!(PodRow::new(&from_text, NOW), PodRow::new(&from_value, NOW));
    }

    #[test]
    fn columns_serialize_as_table_column_definitions() {
        let v = serde_json::to_value(POD_COLUMNS[0]).unwrap();
        assert_eq!(
            v,
            json!({
                "name": "Name", "type": "string", "format": "name",
                "description": "Name must be unique within a namespace.", "priority": 0,
            })
        );
        let wide: Vec<&str> = POD_COLUMNS
            .iter()
            .filter(|c| c.priority == 1)
            .map(|c| c.name)
            .collect();
        assert_eq!(wide, ["IP", "Node", "Nominated Node", "Readiness Gates"]);
    }
}
