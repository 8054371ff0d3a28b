//! One leaf's copy of a pod, as the kube-api front lists, watches and prints it: the
//! pod with the annotation naming the leaf it came from.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
// The annotation naming the leaf a listed pod came from (read by `pods-table`).
use leafgate_k8s_print::LEAF_ANNOTATION;
use serde_json::{Value, json};

/// One leaf's copy of a pod.
#[derive(Clone)]
pub struct Listed {
    pub leaf: Arc<str>,
    pub pod: Arc<Pod>,
}

impl Listed {
    pub fn namespace(&self) -> &str {
        self.pod.metadata.namespace.as_deref().unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.pod.metadata.name.as_deref().unwrap_or("")
    }

    pub fn version(&self) -> &str {
        self.pod.metadata.resource_version.as_deref().unwrap_or("")
    }

    /// The value of a field selector label (`super::select::POD_FIELDS`) as
    /// kube-apiserver's pod strategy gives it: "" when unset, `spec.hostNetwork` as
    /// `true`/`false`, and `status.podIPs` always "" (its conversion compares nothing).
    pub fn field(&self, label: &str) -> String {
        let (spec, status) = (self.pod.spec.as_ref(), self.pod.status.as_ref());
        let text = |v: Option<&String>| v.cloned().unwrap_or_default();
        match label {
            "metadata.name" => self.name().to_string(),
            "metadata.namespace" => self.namespace().to_string(),
            "spec.nodeName" => text(spec.and_then(|s| s.node_name.as_ref())),
            "spec.restartPolicy" => text(spec.and_then(|s| s.restart_policy.as_ref())),
            "spec.schedulerName" => text(spec.and_then(|s| s.scheduler_name.as_ref())),
            "spec.serviceAccountName" => text(spec.and_then(|s| s.service_account_name.as_ref())),
            "spec.hostNetwork" => spec
                .and_then(|s| s.host_network)
                .unwrap_or(false)
                .to_string(),
            "status.phase" => text(status.and_then(|s| s.phase.as_ref())),
            "status.podIP" => text(status.and_then(|s| s.pod_ip.as_ref())),
            "status.nominatedNodeName" => text(status.and_then(|s| s.nominated_node_name.as_ref())),
            _ => String::new(),
        }
    }

    /// The pod as the API serves it, with the leaf annotation.
    pub fn json(&self) -> Value {
        let mut v = serde_json::to_value(&*self.pod).unwrap_or(Value::Null);
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Pod");
        v["metadata"]["annotations"][LEAF_ANNOTATION] = json!(&*self.leaf);
        v
    }
}
