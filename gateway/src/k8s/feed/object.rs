//! What a feed holds: any object with a namespace, a name and a `resourceVersion`
//! ([`Object`]), pods as their own [`RawPod`], every other kind as a [`RawObject`] (its
//! JSON as the leaf sent it, stamped with the leaf it came from); and the order
//! kube-apiserver lists them in ([`storage_order`]).

use std::cmp::Ordering;

use bytes::Bytes;
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
#[derive(Debug, Clone)]
pub struct RawObject {
    json: Value,
    /// The object as compact JSON, written once as it arrives: what a list serves of it.
    wire: Bytes,
    /// Where its `metadata` is within `wire`.
    metadata: std::ops::Range<usize>,
    /// Its namespace, name and `resourceVersion`, read once: lists order and select by
    /// them.
    keys: Box<[Box<str>; 3]>,
}

/// The value at the JSON pointer `pointer` (`/metadata/name`) in `v`, as
/// [`Value::pointer`] finds it but without allocating for a pointer that has no `~`
/// escape: lists read a few fields of every object they hold.
pub fn at<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.contains('~') {
        return v.pointer(pointer);
    }
    if pointer.is_empty() {
        return Some(v);
    }
    let tokens = pointer.strip_prefix('/')?;
    tokens.split('/').try_fold(v, |v, token| match v {
        Value::Object(fields) => fields.get(token),
        Value::Array(items) => items.get(index(token)?),
        _ => None,
    })
}

/// An array index token as RFC 6901 reads it: digits, no leading zero but `0` itself.
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.starts_with('0') && token.len() > 1) {
        return None;
    }
    token.parse().ok()
}

/// The string at `pointer` in `v` ("" when absent or not a string).
pub fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    at(v, pointer).and_then(Value::as_str).unwrap_or("")
}

/// `fields` written as a compact JSON object to `out`, and where the value of its
/// `metadata` field is.
fn write_object(fields: &Map<String, Value>, out: &mut Vec<u8>) -> std::ops::Range<usize> {
    let mut metadata = 0..0;
    out.push(b'{');
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Writing JSON values to a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut *out, k);
        out.push(b':');
        let start = out.len();
        let _ = serde_json::to_writer(&mut *out, v);
        if k == "metadata" {
            metadata = start..out.len();
        }
    }
    out.push(b'}');
    metadata
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
        let mut wire = Vec::with_capacity(json_size(&json));
        let metadata = match &json {
            Value::Object(fields) => write_object(fields, &mut wire),
            _ => 0..0,
        };
        let keys = [
            "/metadata/namespace",
            "/metadata/name",
            "/metadata/resourceVersion",
        ]
        .map(|pointer| Box::from(text(&json, pointer)));
        RawObject {
            json,
            wire: Bytes::from(wire),
            metadata,
            keys: Box::new(keys),
        }
    }

    /// Its size as JSON text: what the leaf sent for it (and the stamp), to count what a
    /// kind costs to keep (`/status`, `leafgate_leaf_object_bytes`).
    pub fn bytes(&self) -> usize {
        self.wire.len()
    }

    /// The object as compact JSON (with the leaf's own `resourceVersion`).
    pub fn wire(&self) -> &[u8] {
        &self.wire
    }

    /// Its `metadata` as compact JSON.
    pub fn metadata_json(&self) -> &[u8] {
        &self.wire[self.metadata.clone()]
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

impl PartialEq for RawObject {
    fn eq(&self, other: &RawObject) -> bool {
        self.json == other.json
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
        &self.keys[0]
    }

    fn name(&self) -> &str {
        &self.keys[1]
    }

    fn resource_version(&self) -> &str {
        &self.keys[2]
    }
}

/// An object kept with the cells the leaf's own printer gave it: a row of the `Table` the
/// leaf answered its list or watch with (`includeObject=Object`), so the front prints a
/// kind leafgate does not interpret exactly as that leaf's kube-apiserver prints it.
#[derive(Debug, Clone)]
pub struct Printed {
    pub object: RawObject,
    /// The row's cells (in the order of the leaf's column definitions) as compact JSON,
    /// one after another, written once as the row arrives; the `i`th ends at
    /// `cell_ends[i]`.
    cells_wire: Bytes,
    cell_ends: Box<[u32]>,
}

impl Printed {
    pub fn new(object: RawObject, cells: &[Value]) -> Printed {
        let mut wire = Vec::with_capacity(cells.iter().map(json_size).sum());
        let cell_ends = cells
            .iter()
            .map(|cell| {
                // Writing a JSON value to a `Vec` cannot fail.
                let _ = serde_json::to_writer(&mut wire, cell);
                u32::try_from(wire.len()).unwrap_or(u32::MAX)
            })
            .collect();
        Printed {
            object,
            cells_wire: Bytes::from(wire),
            cell_ends,
        }
    }

    /// The size of the row's cells as a JSON array.
    pub fn cells_bytes(&self) -> usize {
        self.cells_wire.len() + self.cell_ends.len() + 1
    }

    /// The `i`th cell as compact JSON.
    pub fn cell_json(&self, i: usize) -> Option<&[u8]> {
        let end = *self.cell_ends.get(i)? as usize;
        let start = match i {
            0 => 0,
            _ => self.cell_ends[i - 1] as usize,
        };
        self.cells_wire.get(start..end)
    }
}

impl PartialEq for Printed {
    fn eq(&self, other: &Printed) -> bool {
        self.object == other.object
            && self.cells_wire == other.cells_wire
            && self.cell_ends == other.cell_ends
    }
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
/// have it. Compares without building the keys: names alone within one namespace (the
/// common case, a `memcmp`), else the namespaces up to the shorter one's length, and
/// only past that the keys byte by byte (where they differ within a byte or two).
pub fn storage_order(a: (&str, &str), b: (&str, &str)) -> Ordering {
    if a.0 == b.0 {
        return a.1.as_bytes().cmp(b.1.as_bytes());
    }
    let common = a.0.len().min(b.0.len());
    let prefix = a.0.as_bytes()[..common].cmp(&b.0.as_bytes()[..common]);
    if prefix != Ordering::Equal {
        return prefix;
    }
    fn key_from<'k>((ns, name): (&'k str, &'k str), at: usize) -> impl Iterator<Item = u8> + 'k {
        let sep: &[u8] = if ns.is_empty() { b"" } else { b"/" };
        ns.as_bytes()[at..]
            .iter()
            .chain(sep)
            .chain(name.as_bytes())
            .copied()
    }
    key_from(a, common).cmp(key_from(b, common))
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
        assert_eq!(o.wire(), serde_json::to_vec(o.json()).unwrap());
        assert_eq!(
            o.metadata_json(),
            serde_json::to_vec(&o.json()["metadata"]).unwrap()
        );
    }

    #[test]
    fn a_pointer_is_read_as_serde_json_reads_it() {
        let v = json!({"a": {"b/c": 1, "d~e": 2, "f": [10, {"g": "h"}]}, "": {"": 3}});
        let pointers = [
            "", "/a", "/a/f/1/g", "/a/f/0", "/a/f/2", "/a/f/01", "/a/f/+1", "/a/b~1c", "/a/d~0e",
            "/x", "a", "/", "//", "/a/f/x",
        ];
        for p in pointers {
            assert_eq!(at(&v, p), v.pointer(p), "{p:?}");
        }
    }

    #[test]
    fn a_printed_rows_cells_are_kept_as_json_one_by_one() {
        let o = RawObject::new(json!({}), "v1", "ConfigMap", "l");
        let p = Printed::new(o, &[json!("web"), json!(3), json!(""), json!("a\"b")]);
        let cells: Vec<_> = (0..5).map(|i| p.cell_json(i)).collect();
        let expected: [Option<&[u8]>; 5] = [
            Some(br#""web""#),
            Some(b"3"),
            Some(br#""""#),
            Some(br#""a\"b""#),
            None,
        ];
        assert_eq!(cells, expected);
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
        // Against the storage keys built whole, over namespaces that are prefixes of
        // each other, empty ones and names with the bytes around `/`.
        let words = ["", "a", "a-", "a.", "a/", "a0", "ab", "a-b", "b", "é"];
        for a in words.iter().flat_map(|ns| words.map(|n| (*ns, n))) {
            for b in words.iter().flat_map(|ns| words.map(|n| (*ns, n))) {
                let key = |(ns, name): (&str, &str)| match ns {
                    "" => name.to_string(),
                    ns => format!("{ns}/{name}"),
                };
                assert_eq!(storage_order(a, b), key(a).cmp(&key(b)), "{a:?} {b:?}");
            }
        }
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
