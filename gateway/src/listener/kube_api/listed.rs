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

    /// The pod as the API serves it, with the leaf annotation.
    pub fn json(&self) -> Value {
        let mut v = serde_json::to_value(&*self.pod).unwrap_or(Value::Null);
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Pod");
        v["metadata"]["annotations"][LEAF_ANNOTATION] = json!(&*self.leaf);
        v
    }
}
