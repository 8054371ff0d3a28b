//! kube-apiserver's pod table (`printPod` in `pkg/printers/internalversion`): its columns
//! and how each cell is worked out from a pod (READY, STATUS's reasoning, RESTARTS, AGE and
//! the wide columns).
//!
//! It produces column definitions and typed cells, not a wire format: the gateway writes
//! them as `meta.k8s.io` Table JSON (adding its LEAF column), the `pods-table` plugin as WIT
//! records in its own layout. READY, STATUS and RESTARTS come from `summary` (`printPod`'s
//! walk over the containers); this module adds AGE and the wide cells.

use serde::Serialize;

use crate::pod::Pod;
use crate::summary::summarize;
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
        description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
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

/// One pod's cells, one field per column of `POD_COLUMNS`, all text as kube-apiserver
/// sends them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRow {
    pub name: String,
    /// `ready/total`, e.g. `2/2`, native sidecars counted.
    pub ready: String,
    pub status: String,
    /// `5`, or `5 (3m ago)` after the newest dated restart (a string column upstream too).
    pub restarts: String,
    /// `<unknown>` without a readable creation timestamp.
    pub age: String,
    pub ip: String,
    pub node: String,
    pub nominated_node: String,
    /// `true/gates`, or `<none>` when the pod has none.
    pub readiness_gates: String,
}

impl PodRow {
    /// The row of `pod`, its ages counted to `now` (seconds since the Unix epoch).
    pub fn new(pod: &Pod, now: i64) -> PodRow {
        let summary = summarize(pod);
        PodRow {
            name: pod.metadata.name.clone(),
            ready: summary.ready_cell(),
            status: summary.status.clone(),
            restarts: summary.restarts_cell(now),
            age: age_since(pod.metadata.creation_timestamp.as_deref(), now),
            ip: or_none(pod.status.first_ip()),
            node: or_none(pod.spec.node_name.as_deref()),
            nominated_node: or_none(pod.status.nominated_node_name.as_deref()),
            readiness_gates: readiness_gates(pod),
        }
    }

    /// The cells in `POD_COLUMNS` order.
    pub fn cells(self) -> [String; 9] {
        [
            self.name,
            self.ready,
            self.status,
            self.restarts,
            self.age,
            self.ip,
            self.node,
            self.nominated_node,
            self.readiness_gates,
        ]
    }
}

/// `translateTimestampSince`: the age of an RFC 3339 time, `<unknown>` when absent.
fn age_since(timestamp: Option<&str>, now: i64) -> String {
    timestamp
        .and_then(parse_timestamp)
        .map_or_else(|| "<unknown>".to_string(), |t| human_age(now - t))
}

/// A text cell: the value, or `<none>` when it is absent or empty, as kubectl prints it.
pub fn or_none(value: Option<&str>) -> String {
    value
        .filter(|s| !s.is_empty())
        .unwrap_or("<none>")
        .to_string()
}

/// READINESS GATES: how many of the pod's gates have their condition `True`, of how many.
/// Each gate reads the first condition of its type, as `printPod` does.
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
                .find(|c| c.type_ == g.condition_type)
                .is_some_and(|c| c.status == "True")
        })
        .count();
    format!("{met}/{}", gates.len())
}

/// The STATUS column alone (see `summary::summarize` for READY and RESTARTS too).
pub fn status(pod: &Pod) -> String {
    summarize(pod).status
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
        // printPod also asks the pod's Ready condition: True reads Running, else NotReady.
        let ready = json!([{ "type": "Ready", "status": "True" }]);
        assert_eq!(
            status_of(json!({ "status": {
                "phase": "Running", "conditions": ready, "containerStatuses": [done, running("b")],
            } })),
            "Running"
        );
        assert_eq!(
            status_of(
                json!({ "status": { "phase": "Running", "containerStatuses": [done, running("b")] } })
            ),
            "NotReady"
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
