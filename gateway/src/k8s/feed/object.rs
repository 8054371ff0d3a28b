//! What a feed holds: any object with a namespace, a name and a `resourceVersion`
//! ([`Object`]), pods as their own [`RawPod`], every other kind as a [`RawObject`] (its
//! JSON as the leaf sent it, stamped with the leaf it came from); and the order
//! kube-apiserver lists them in ([`storage_order`]).

use std::cmp::Ordering;

use serde_json::{Map, Value};

use crate::k8s::raw_pod::{LEAF_ANNOTATION, RawPod};

/// An object a [`Feed`](super::Feed) can hold.
pub trait Object: Send + Sync + 'static {
    /// Its namespace, "" for a cluster-scoped object.
    fn namespace(&self) -> &str;
    fn name(&self) -> &str;
    /// The leaf's own `resourceVersion`: a copy at the same version is no change.
    fn resource_version(&self) -> &str;
    /// The namespace a reader must be allowed to read it: its own, or for a cluster-scoped
    /// object its name (a `Namespace` is a tenant's when its name is).
    fn scope(&self) -> &str {
        match self.namespace() {
            "" => self.name(),
            ns => ns,
        }
    }
}

impl Object for RawPod {
    fn namespace(&self) -> &str {
        RawPod::namespace(self)
    }

    fn name(&self) -> &str {
        RawPod::name(self)
    }

    fn resource_version(&self) -> &str {
        RawPod::resource_version(self)
    }
}

/// One object of any kind but pods, as the leaf sent it (`managedFields` already dropped
/// by the reflector), with `apiVersion`, `kind` and the `leafgate.io/leaf` annotation set.
#[derive(Debug, Clone, PartialEq)]
pub struct RawObject {
    json: Value,
    /// Its size as JSON text ([`json_size`]), counted once as it arrives.
    bytes: usize,
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

impl RawObject {
    /// `json` (an object of `api_version` and `kind`) as served from `leaf`.
    pub fn new(mut json: Value, api_version: &str, kind: &str, leaf: &str) -> RawObject {
        if !json.is_object() {
            json = Value::Object(Map::new());
        }
        json["apiVersion"] = Value::from(api_version);
        json["kind"] = Value::from(kind);
        if !json["metadata"].is_object() {
            json["metadata"] = Value::Object(Map::new());
        }
        if !json["metadata"]["annotations"].is_object() {
            json["metadata"]["annotations"] = Value::Object(Map::new());
        }
        json["metadata"]["annotations"][LEAF_ANNOTATION] = Value::from(leaf);
        let bytes = json_size(&json);
        RawObject { json, bytes }
    }

    /// Its size as JSON text: what the leaf sent for it, near enough to count what a kind
    /// costs to keep (`/status`, `leafgate_leaf_object_bytes`).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The object whole.
    pub fn json(&self) -> &Value {
        &self.json
    }

    /// The string at `pointer` ("" when absent or not a string).
    pub fn text(&self, pointer: &str) -> &str {
        text(&self.json, pointer)
    }

    /// The label `key`'s value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.json["metadata"]["labels"].get(key)?.as_str()
    }
}

/// The length of `v` written as compact JSON, without writing it: exact but for the
/// escapes a string would need and the digits of a fraction (counted as 16).
pub fn json_size(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => digits(u),
            (None, Some(i)) => 1 + digits(i.unsigned_abs()),
            _ => 16,
        },
        Value::String(s) => s.len() + 2,
        Value::Array(items) => {
            2 + items.iter().map(json_size).sum::<usize>() + items.len().saturating_sub(1)
        }
        Value::Object(fields) => {
            let each = fields.iter().map(|(k, v)| k.len() + 3 + json_size(v));
            2 + each.sum::<usize>() + fields.len().saturating_sub(1)
        }
    }
}

fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

impl Object for RawObject {
    fn namespace(&self) -> &str {
        self.text("/metadata/namespace")
    }

    fn name(&self) -> &str {
        self.text("/metadata/name")
    }

    fn resource_version(&self) -> &str {
        self.text("/metadata/resourceVersion")
    }
}

/// An object kept with the cells the leaf's own printer gave it: a row of the `Table` the
/// leaf answered its list or watch with (`includeObject=Object`), so the front prints a
/// kind leafgate does not interpret exactly as that leaf's kube-apiserver prints it.
#[derive(Debug, Clone, PartialEq)]
pub struct Printed {
    pub object: RawObject,
    /// The row's cells, in the order of the leaf's column definitions.
    pub cells: Vec<Value>,
}

impl Object for Printed {
    fn namespace(&self) -> &str {
        self.object.namespace()
    }

    fn name(&self) -> &str {
        self.object.name()
    }

    fn resource_version(&self) -> &str {
        self.object.resource_version()
    }
}

/// kube-apiserver's list order: by storage key, `/<resource>/<namespace>/<name>` (a
/// cluster-scoped object's: `/<resource>/<name>`), compared as bytes. So `team-a-dev/x`
/// comes before `team-a/y` (`-` sorts before `/`), not after as (namespace, name) would
/// have it. Compares without building the keys.
pub fn storage_order(a: (&str, &str), b: (&str, &str)) -> Ordering {
    fn key<'k>((ns, name): (&'k str, &'k str)) -> impl Iterator<Item = u8> + 'k {
        let sep: &[u8] = if ns.is_empty() { b"" } else { b"/" };
        ns.bytes().chain(sep.iter().copied()).chain(name.bytes())
    }
    key(a).cmp(key(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_objects_size_is_its_compact_json_length() {
        for v in [
            json!(null),
            json!({}),
            json!([]),
            json!({"a": [1, 22, -333, true, false, null], "b": {"c": "dé", "d": 0}}),
            json!([u64::MAX, i64::MIN, 10, 9, 100]),
        ] {
            assert_eq!(json_size(&v), serde_json::to_vec(&v).unwrap().len(), "{v}");
        }
        let o = RawObject::new(
            json!({"metadata": {"name": "x"}}),
            "v1",
            "ConfigMap",
            "leaf-1",
        );
        assert_eq!(o.bytes(), serde_json::to_vec(o.json()).unwrap().len());
    }

    #[test]
    fn the_storage_key_orders_a_namespace_before_its_name_plus_dash() {
        let mut keys = vec![
            ("team-a", "y"),
            ("team-a-dev", "x"),
            ("team-a", "a"),
            ("team", "z"),
        ];
        keys.sort_by(|a, b| storage_order(*a, *b));
        // `team/z` last: its `/` sorts after the `-` of `team-a`.
        assert_eq!(
            keys,
            [
                ("team-a-dev", "x"),
                ("team-a", "a"),
                ("team-a", "y"),
                ("team", "z")
            ]
        );
        // Cluster-scoped: by name alone.
        assert_eq!(storage_order(("", "a"), ("", "a-b")), Ordering::Less);
    }

    #[test]
    fn a_raw_object_is_stamped_and_a_cluster_scoped_one_is_filed_by_its_name() {
        let ns = RawObject::new(
            json!({ "metadata": { "name": "apps", "resourceVersion": "7", "annotations": null } }),
            "v1",
            "Namespace",
            "leaf-1",
        );
        assert_eq!(
            (ns.namespace(), ns.scope(), ns.name()),
            ("", "apps", "apps")
        );
        assert_eq!(ns.resource_version(), "7");
        assert_eq!(ns.json()["kind"], "Namespace");
        assert_eq!(
            ns.json()["metadata"]["annotations"][LEAF_ANNOTATION],
            "leaf-1"
        );
        let ev = RawObject::new(
            json!({ "metadata": { "namespace": "apps", "name": "e", "labels": { "a": "b" } } }),
            "v1",
            "Event",
            "leaf-1",
        );
        assert_eq!(
            (ev.scope(), ev.label("a"), ev.label("c")),
            ("apps", Some("b"), None)
        );
        assert_eq!(RawObject::new(json!(7), "v1", "Event", "l").name(), "");
    }
}
