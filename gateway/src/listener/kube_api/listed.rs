//! One leaf's copy of a pod, as the kube-api front lists, watches and prints it: the
//! pod as the leaf sent it, stamped with the annotation naming the leaf it came from
//! (`leafgate.io/leaf`, read by `pods-table`) when the reflector received it.

use std::sync::Arc;

use serde_json::Value;

use crate::k8s::RawPod;

/// One leaf's copy of a pod.
#[derive(Clone)]
pub struct Listed {
    pub leaf: Arc<str>,
    pub pod: Arc<RawPod>,
}

impl Listed {
    pub fn namespace(&self) -> &str {
        self.pod.namespace()
    }

    pub fn name(&self) -> &str {
        self.pod.name()
    }

    /// The leaf's own `resourceVersion` of the pod.
    pub fn version(&self) -> &str {
        self.pod.resource_version()
    }

    /// The pod as the API serves it, with the leaf annotation.
    pub fn json(&self) -> Value {
        self.pod.json().clone()
    }
}

/// The value of a field selector label (`super::select::POD_FIELDS`) as kube-apiserver's
/// pod strategy gives it, read from the pod's JSON: "" when unset, `spec.hostNetwork` as
/// `true`/`false`, and `status.podIPs` always "" (its conversion compares nothing).
pub fn field(pod: &RawPod, label: &str) -> String {
    let json = pod.json();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    match label {
        "metadata.name" => pod.name().to_string(),
        "metadata.namespace" => pod.namespace().to_string(),
        "spec.nodeName" => text(&json["spec"]["nodeName"]),
        "spec.restartPolicy" => text(&json["spec"]["restartPolicy"]),
        "spec.schedulerName" => text(&json["spec"]["schedulerName"]),
        "spec.serviceAccountName" => text(&json["spec"]["serviceAccountName"]),
        "spec.hostNetwork" => json["spec"]["hostNetwork"]
            .as_bool()
            .unwrap_or(false)
            .to_string(),
        "status.phase" => text(&json["status"]["phase"]),
        "status.podIP" => text(&json["status"]["podIP"]),
        "status.nominatedNodeName" => text(&json["status"]["nominatedNodeName"]),
        _ => String::new(),
    }
}
