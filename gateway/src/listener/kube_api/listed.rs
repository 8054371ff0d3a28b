//! One leaf's copy of an object, as the kube-api front lists, watches and prints it: the
//! object as the leaf sent it, stamped with the annotation naming the leaf it came from
//! (`leafgate.io/leaf`, read by `pods-table`) when the reflector received it; and the
//! order lists are in (kube-apiserver's storage keys, then the leaf).

use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::Value;

use crate::k8s::RawPod;
use crate::k8s::feed::{Object, storage_order};

/// One leaf's copy of an object (a pod unless said otherwise).
pub struct Listed<T = RawPod> {
    pub leaf: Arc<str>,
    pub object: Arc<T>,
}

impl<T> Clone for Listed<T> {
    fn clone(&self) -> Self {
        Listed {
            leaf: self.leaf.clone(),
            object: self.object.clone(),
        }
    }
}

impl<T: Object> Listed<T> {
    pub fn namespace(&self) -> &str {
        self.object.namespace()
    }

    pub fn name(&self) -> &str {
        self.object.name()
    }

    /// The leaf's own `resourceVersion` of the object.
    pub fn version(&self) -> &str {
        self.object.resource_version()
    }

    /// Where this copy stands against `(namespace, name, leaf)` in a list.
    pub fn order(&self, (ns, name, leaf): (&str, &str, &str)) -> Ordering {
        storage_order((self.namespace(), self.name()), (ns, name))
            .then_with(|| (*self.leaf).cmp(leaf))
    }
}

/// Sorts `items` as kube-apiserver lists them: by storage key (`team-a-dev/x` before
/// `team-a/y`), then by leaf.
pub fn sort<T: Object>(items: &mut [Listed<T>]) {
    items.sort_by(|a, b| a.order((b.namespace(), b.name(), &b.leaf)));
}

impl Listed {
    /// The pod as the API serves it, with the leaf annotation.
    pub fn json(&self) -> Value {
        self.object.json().clone()
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
