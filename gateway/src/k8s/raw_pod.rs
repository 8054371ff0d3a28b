//! A pod as its leaf sent it: the JSON object whole (every field of any Kubernetes version,
//! not only those the typed client knows), the typed `metadata` the gateway reads (name,
//! namespace, uid, labels), and the object serialized once, ready for the wire.
//!
//! The reflector decodes each pod into a [`RawPod`] (dropping only `managedFields` and the
//! `last-applied-configuration` annotation, bulk nobody reads through leafgate), then
//! [`RawPod::stamp`]s it with the `leafgate.io/leaf` annotation. Nothing on the read path
//! goes through `k8s_openapi`'s `Pod`: `-o json|yaml` shows what the leaf said.
//!
//! The serialized form leaves `metadata.resourceVersion` out: a watch event carries the
//! gateway's own resume token there (each watcher's own), so [`RawPod::write_wire`] writes
//! a fixed head, the token, and the pre-serialized rest. This module must not dial, route
//! or decide who may see a pod.
//!
//! What a pod Table needs of a pod is worked out once too, when the pod arrives, not per
//! list: its `metadata` serialized (a row's `PartialObjectMetadata`) and the printer's view
//! of it ([`leafgate_k8s_print::Pod`]); a list of 10,000 pods then joins bytes and prints
//! cells, and builds no `serde_json::Value`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::Deserialize;
use serde_json::{Map, Value};

/// The annotation naming the leaf a listed pod came from (read by `pods-table`).
pub use leafgate_k8s_print::LEAF_ANNOTATION;

/// The annotation `kubectl apply` keeps its last input in: bulk the gateway drops.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What every serialized pod starts with, up to the value of `metadata.resourceVersion`.
const HEAD: &[u8] = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"resourceVersion":"#;

/// One leaf's pod, raw.
#[derive(Clone)]
pub struct RawPod {
    meta: ObjectMeta,
    /// The whole object (after [`RawPod::stamp`]: with `apiVersion`, `kind` and the leaf
    /// annotation).
    json: Value,
    /// The object serialized after its `resourceVersion` value: `}` or `,` and the rest of
    /// `metadata`, then every other field. Empty until [`RawPod::stamp`].
    tail: Bytes,
    /// `metadata` serialized whole (with the leaf's `resourceVersion`). Empty until
    /// [`RawPod::stamp`].
    metadata: Bytes,
    /// The printer's reading of the pod, or why its fields cannot be read (a field of the
    /// wrong JSON type). Set by [`RawPod::stamp`].
    printed: Result<Arc<Printed>, String>,
}

/// The printer's reading of a pod.
pub type Printed = leafgate_k8s_print::Pod;

impl std::fmt::Debug for RawPod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawPod")
            .field("namespace", &self.namespace())
            .field("name", &self.name())
            .field("resourceVersion", &self.resource_version())
            .finish()
    }
}

impl<'de> Deserialize<'de> for RawPod {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        RawPod::from_value(Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl Resource for RawPod {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("Pod")
    }

    fn group(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn version(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("v1")
    }

    fn plural(_: &()) -> Cow<'_, str> {
        Cow::Borrowed("pods")
    }

    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

impl RawPod {
    /// A pod from its JSON object, without the bulk leafgate never serves.
    pub fn from_value(mut json: Value) -> Result<RawPod, serde_json::Error> {
        if !json.is_object() {
            return Err(serde::de::Error::custom("a pod must be a JSON object"));
        }
        if let Some(meta) = json.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
            if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
                a.remove(LAST_APPLIED);
            }
        }
        let meta = match json.get("metadata") {
            Some(m) => ObjectMeta::deserialize(m)?,
            None => ObjectMeta::default(),
        };
        Ok(RawPod {
            meta,
            json,
            tail: Bytes::new(),
            metadata: Bytes::new(),
            printed: Err("the pod was not stamped".into()),
        })
    }

    /// The pod as leafgate serves it: `apiVersion` and `kind` set (a watch's objects may
    /// lack them), the `leafgate.io/leaf` annotation naming `leaf`, serialized once.
    pub fn stamp(mut self, leaf: &str) -> RawPod {
        let obj = self
            .json
            .as_object_mut()
            .expect("from_value admits objects only");
        obj.insert("apiVersion".into(), Value::from("v1"));
        obj.insert("kind".into(), Value::from("Pod"));
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        let annotations = meta
            .as_object_mut()
            .expect("made an object above")
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if !annotations.is_object() {
            *annotations = Value::Object(Map::new());
        }
        annotations
            .as_object_mut()
            .expect("made an object above")
            .insert(LEAF_ANNOTATION.into(), Value::from(leaf));
        self.tail = Bytes::from(tail(obj));
        self.metadata = Bytes::from(serde_json::to_vec(&obj["metadata"]).unwrap_or_default());
        self.printed = Printed::deserialize(&self.json)
            .map(Arc::new)
            .map_err(|e| e.to_string());
        self
    }

    pub fn namespace(&self) -> &str {
        self.meta.namespace.as_deref().unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.meta.name.as_deref().unwrap_or("")
    }

    pub fn uid(&self) -> Option<&str> {
        self.meta.uid.as_deref()
    }

    /// The leaf's own `resourceVersion` of the pod.
    pub fn resource_version(&self) -> &str {
        self.meta.resource_version.as_deref().unwrap_or("")
    }

    pub fn labels(&self) -> Option<&BTreeMap<String, String>> {
        self.meta.labels.as_ref()
    }

    /// The pod's containers (init and ephemeral ones excluded).
    pub fn containers(&self) -> impl Iterator<Item = &str> {
        self.json["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str())
    }

    /// The whole object, as the leaf sent it (plus the stamp).
    pub fn json(&self) -> &Value {
        &self.json
    }

    /// `metadata` as JSON, serialized when the pod was stamped.
    pub fn metadata_json(&self) -> &[u8] {
        &self.metadata
    }

    /// The printer's reading of the pod, read when it was stamped; the error says which
    /// field has the wrong type.
    pub fn printed(&self) -> Result<&Printed, &str> {
        self.printed.as_deref().map_err(String::as_str)
    }

    /// Appends the stamped pod's JSON to `out`, with `resource_version` as its
    /// `metadata.resourceVersion`.
    pub fn write_wire(&self, resource_version: &str, out: &mut Vec<u8>) {
        debug_assert!(!self.tail.is_empty(), "write_wire before stamp");
        out.extend_from_slice(HEAD);
        // Writing a `&str` to a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut *out, resource_version);
        out.extend_from_slice(&self.tail);
    }
}

/// Everything after `metadata.resourceVersion`'s value in the wire form of `obj`.
fn tail(obj: &Map<String, Value>) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    let field = |out: &mut Vec<u8>, k: &str, v: &Value| {
        out.push(b',');
        let _ = serde_json::to_writer(&mut *out, k);
        out.push(b':');
        let _ = serde_json::to_writer(&mut *out, v);
    };
    if let Some(meta) = obj.get("metadata").and_then(Value::as_object) {
        for (k, v) in meta.iter().filter(|(k, _)| *k != "resourceVersion") {
            field(&mut out, k, v);
        }
    }
    out.push(b'}');
    for (k, v) in obj
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
    {
        field(&mut out, k, v);
    }
    out.push(b'}');
    out
}

/// A pod from JSON for tests (stamped with `leaf`).
#[cfg(test)]
pub fn test_pod(leaf: &str, json: Value) -> std::sync::Arc<RawPod> {
    std::sync::Arc::new(RawPod::from_value(json).expect("a pod object").stamp(leaf))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_the_typed_client_does_not_know_survive_and_the_wire_carries_the_token() {
        let pod = test_pod(
            "leaf-1",
            json!({
                "metadata": {
                    "name": "web", "namespace": "apps", "resourceVersion": "17",
                    "labels": {"app": "x"},
                    "annotations": {LAST_APPLIED: "{}", "keep": "me"},
                    "managedFields": [{"manager": "kubectl"}],
                },
                "spec": {"hostnameOverride": "h", "containers": [{"name": "a"}, {"name": "b"}]},
                "status": {"x": {"y": 1}},
            }),
        );
        assert_eq!(
            (pod.namespace(), pod.name(), pod.resource_version()),
            ("apps", "web", "17")
        );
        assert_eq!(pod.containers().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(pod.labels().unwrap()["app"], "x");
        let mut wire = Vec::new();
        pod.write_wire("tok\"en", &mut wire);
        let back: Value = serde_json::from_slice(&wire).unwrap();
        let mut want = pod.json().clone();
        want["metadata"]["resourceVersion"] = json!("tok\"en");
        assert_eq!(back, want);
        assert_eq!(back["spec"]["hostnameOverride"], "h");
        assert_eq!(back["status"]["x"]["y"], 1);
        assert_eq!(back["metadata"]["annotations"][LEAF_ANNOTATION], "leaf-1");
        assert_eq!(back["metadata"]["annotations"]["keep"], "me");
        assert!(back["metadata"]["annotations"].get(LAST_APPLIED).is_none());
        assert!(back["metadata"].get("managedFields").is_none());
        assert_eq!(
            (&back["apiVersion"], &back["kind"]),
            (&json!("v1"), &json!("Pod"))
        );
        // What a Table row needs was made once, from the same stamped object.
        let metadata: Value = serde_json::from_slice(pod.metadata_json()).unwrap();
        assert_eq!(metadata, pod.json()["metadata"]);
        assert_eq!(metadata["resourceVersion"], "17");
        let printed = pod.printed().unwrap();
        assert_eq!(printed.metadata.leaf(), Some("leaf-1"));
        assert_eq!(printed.spec.containers.len(), 2);
    }

    #[test]
    fn a_pod_the_printer_cannot_read_says_why() {
        let pod = test_pod(
            "l",
            json!({"metadata": {"name": "x"}, "spec": {"containers": 7}}),
        );
        assert!(
            pod.printed().unwrap_err().contains("invalid type"),
            "{:?}",
            pod.printed().err()
        );
        let unstamped = RawPod::from_value(json!({"metadata": {"name": "x"}})).unwrap();
        assert!(unstamped.printed().is_err());
    }

    #[test]
    fn a_pod_with_bare_metadata_still_writes_valid_json() {
        let pod = test_pod("l", json!({"metadata": {"annotations": null}}));
        let mut wire = Vec::new();
        pod.write_wire("1", &mut wire);
        let back: Value = serde_json::from_slice(&wire).unwrap();
        assert_eq!(back["metadata"]["resourceVersion"], "1");
        assert!(RawPod::from_value(json!([1])).is_err());
    }
}
