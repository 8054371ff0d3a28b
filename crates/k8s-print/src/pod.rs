//! The one Pod shape the printer reads: the fields kube-apiserver's `printPod` looks at, plus
//! the metadata plugins commonly read (labels, annotations).
//!
//! It deserializes from JSON text (the plugin SDK) and from a borrowed `serde_json::Value`
//! (the gateway, which already holds each listed pod as JSON). Everything is optional
//! because objects arrive partial (a list may omit status); unknown fields are ignored,
//! not errors: the API grows and readers must keep working. It holds no behaviour beyond
//! reading: printing lives in `table`.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The annotation the gateway sets on objects it gathers from leaf clusters: which leaf
/// each came from.
pub const LEAF_ANNOTATION: &str = "leafgate.io/leaf";

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectMeta {
    pub name: String,
    pub namespace: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub creation_timestamp: Option<String>,
    pub deletion_timestamp: Option<String>,
}

impl ObjectMeta {
    /// The leaf cluster this object came from, when the gateway said so.
    pub fn leaf(&self) -> Option<&str> {
        self.annotations.get(LEAF_ANNOTATION).map(String::as_str)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Pod {
    pub metadata: ObjectMeta,
    pub spec: PodSpec,
    pub status: PodStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSpec {
    pub node_name: Option<String>,
    pub containers: Vec<Named>,
    pub init_containers: Vec<Named>,
    pub readiness_gates: Vec<ReadinessGate>,
}

/// A container of `spec.containers` or `spec.initContainers`: its name, and for an init
/// container its `restartPolicy` (`Always` makes it a native sidecar).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Named {
    pub name: String,
    pub restart_policy: Option<String>,
}

impl Named {
    /// An init container that keeps running beside the app containers (a native sidecar,
    /// `restartPolicy: Always`), as `isRestartableInitContainer` tells them apart.
    pub fn is_sidecar(&self) -> bool {
        self.restart_policy.as_deref() == Some("Always")
    }
}

/// A condition in `status.conditions` the pod waits for before it counts as ready.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReadinessGate {
    pub condition_type: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodStatus {
    pub phase: Option<String>,
    pub reason: Option<String>,
    #[serde(rename = "podIP")]
    pub pod_ip: Option<String>,
    #[serde(rename = "podIPs")]
    pub pod_ips: Vec<PodIp>,
    pub nominated_node_name: Option<String>,
    pub conditions: Vec<PodCondition>,
    pub container_statuses: Vec<ContainerStatus>,
    pub init_container_statuses: Vec<ContainerStatus>,
}

impl PodStatus {
    /// The pod's first IP: `podIPs[0]`, else `podIP` (kube-apiserver's v1 conversion fills
    /// `podIPs` from `podIP` when only the latter is set, before its printer reads it).
    pub fn first_ip(&self) -> Option<&str> {
        match self.pod_ips.first() {
            Some(ip) => Some(ip.ip.as_str()),
            None => self.pod_ip.as_deref(),
        }
    }
}

/// One of `status.podIPs`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PodIp {
    pub ip: String,
}

/// One of `status.conditions`: its type, `"True"`, `"False"` or `"Unknown"`, and why.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct PodCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerStatus {
    pub name: String,
    pub ready: bool,
    pub restart_count: i64,
    /// Whether the container passed its startup probe (absent before the kubelet knows).
    pub started: Option<bool>,
    pub state: ContainerState,
    /// The state it was in before its last restart; `terminated.finishedAt` dates RESTARTS.
    pub last_state: ContainerState,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ContainerState {
    pub waiting: Option<StateDetail>,
    pub running: Option<serde_json::Value>,
    pub terminated: Option<StateDetail>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StateDetail {
    pub reason: Option<String>,
    pub exit_code: i64,
    pub signal: i64,
    /// RFC 3339, for a terminated state.
    pub finished_at: Option<String>,
}
