//! Namespaces that exist: the leaves' namespace feeds (`k8s::leaf::namespaces`),
//! intersected with the tenant's namespace globs. A glob match no reachable leaf has is
//! kube-apiserver's 404 (`namespaces "x" not found`); one the tenant does not own is its
//! RBAC 403, whether or not it exists (authorization comes first, so nothing is learnt).
//!
//! A namespace held by several leaves is one object: the copy of the first leaf (by name),
//! `Active` when any copy is, created when the oldest was, its `leafgate.io/leaf`
//! annotation naming every leaf that has it (comma-separated). The Table is kube-apiserver's
//! namespace printer (NAME, STATUS, AGE) plus a wide-only LEAF column.
//!
//! Lists and watches are the front's one machinery (`list`, `watch`): a list's
//! `resourceVersion` is the feeds' token, and `watch=true` (`kubectl get ns -w`) follows
//! the feeds. A watch speaks of the merged object: a namespace a second leaf gains is
//! `MODIFIED` (its leaves now two), one a leaf loses while another still has it too.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use http::{Method, Request, Response, StatusCode};
use leafgate_k8s_print::{Column, LEAF_ANNOTATION, parse_timestamp};
use serde_json::{Value, json};

use super::caller::Caller;
use super::fields::Fields;
use super::list;
use super::listed::Listed;
use super::object_table::{self, leaf_column};
use super::query::query_value;
use super::resource::{self, Names, Resource, Writing};
use super::select::LabelSelector;
use super::table::{self, Wanted};
use super::watch;
use crate::k8s::Leaf;
use crate::k8s::feed::text;
use crate::k8s::feed::{Feed, RawObject};
use crate::k8s::status::Status;
use crate::listener::client::Client;
use crate::listener::reply;
use crate::proxy::{Body, InBody};
use crate::snapshot::Snapshot;

/// The fields kube-apiserver indexes for namespaces.
const SELECTABLE: &[&str] = &["metadata.name", "status.phase"];

/// kube-apiserver's namespace columns, then LEAF (wide only).
const COLUMNS: [Column; 4] = [
    Column {
        name: "Name",
        kind: "string",
        format: "name",
        description: "Name must be unique within a namespace.",
        priority: 0,
    },
    Column {
        name: "Status",
        kind: "string",
        format: "",
        description: "The status of the namespace",
        priority: 0,
    },
    Column {
        name: "Age",
        kind: "string",
        format: "",
        description: "CreationTimestamp is a timestamp representing the server time when this object was created.",
        priority: 0,
    },
    leaf_column("The leaf clusters that have the namespace (leafgate).", 1),
];

/// One leaf's copy of a namespace.
type Copy = Listed<RawObject>;

/// What a namespace list or watch selects, and the Table asked for.
struct Namespaces {
    labels: LabelSelector,
    fields: Fields,
    wanted: Option<Wanted>,
    /// What a watch merges each change's namespace from.
    snapshot: Arc<Snapshot>,
}

impl Namespaces {
    fn from_query(query: Option<&str>, snapshot: &Arc<Snapshot>) -> Result<Namespaces, String> {
        Ok(Namespaces {
            labels: LabelSelector::parse(&query_value(query, "labelSelector").unwrap_or_default())?,
            fields: Fields::parse(
                &query_value(query, "fieldSelector").unwrap_or_default(),
                SELECTABLE,
            )?,
            wanted: None,
            snapshot: snapshot.clone(),
        })
    }

    /// Whether the (merged) namespace `ns` is selected.
    fn selects_json(&self, ns: &Value) -> bool {
        self.labels
            .matches_with(|k| ns["metadata"]["labels"].get(k).and_then(Value::as_str))
            && self.fields.matches(|k| match k {
                "metadata.name" => text(ns, "/metadata/name").to_string(),
                "status.phase" => text(ns, "/status/phase").to_string(),
                _ => String::new(),
            })
    }

    /// The copies of namespace `name` the tenant's leaves hold now, by leaf.
    fn copies_now(&self, caller: &Caller<'_>, name: &str) -> Vec<Copy> {
        copies(&self.snapshot, caller, Some(name))
    }
}

impl Resource for Namespaces {
    type Object = RawObject;

    fn names(&self) -> Names {
        Names {
            group: "",
            resource: "namespaces",
            kind: "Namespace",
            api_version: "v1",
        }
    }

    fn feed(&self, leaf: &Leaf) -> Option<Arc<Feed<RawObject>>> {
        Some(leaf.namespaces().feed().clone())
    }

    fn namespace(&self) -> Option<&str> {
        None
    }

    fn selects(&self, ns: &RawObject) -> bool {
        self.selects_json(ns.json())
    }

    fn merges_copies(&self) -> bool {
        true
    }

    /// The namespace as the copies the leaves hold now merge it: a change of one leaf's
    /// copy is `MODIFIED` while another leaf still has the namespace.
    fn write<'a>(
        &'a self,
        caller: &'a Caller<'a>,
        kind: &'static str,
        leaf: &'a Arc<str>,
        ns: &'a Arc<RawObject>,
        rv: &'a str,
        out: &'a mut Vec<u8>,
    ) -> Writing<'a> {
        let now = self.copies_now(caller, text(ns.json(), "/metadata/name"));
        let others_hold = now.iter().any(|c| c.leaf != *leaf);
        let (kind, mut object) = match (kind, merge(&now)) {
            // Still somewhere, or somewhere already: the one object changed.
            ("DELETED", Some(merged)) => ("MODIFIED", merged),
            ("ADDED", Some(merged)) if others_hold => ("MODIFIED", merged),
            ("DELETED", None) => ("DELETED", ns.json().clone()),
            (kind, merged) => (kind, merged.unwrap_or_else(|| ns.json().clone())),
        };
        object["metadata"]["resourceVersion"] = json!(rv);
        let object = match self.wanted {
            Some(wanted) => print(
                std::iter::once(&object),
                wanted,
                json!({ "resourceVersion": rv }),
            ),
            None => object,
        };
        resource::push_line(out, &json!({ "type": kind, "object": object }));
        Box::pin(std::future::ready(()))
    }
}

/// The copies of the tenant's namespaces (only `only` when given) its leaves hold, in
/// list order (by name, then leaf).
fn copies(snapshot: &Snapshot, caller: &Caller<'_>, only: Option<&str>) -> Vec<Copy> {
    let mut out = Vec::new();
    let mut leaves: Vec<_> = snapshot
        .leaves
        .iter()
        .filter(|(name, _)| caller.config.may_reach(name))
        .collect();
    leaves.sort_by_key(|(name, _)| *name);
    for (leaf, l) in leaves {
        let feed = l.namespaces().feed();
        let held = match only {
            Some(name) => feed.get(name, name).into_iter().collect(),
            None => feed.view(|ns| caller.config.owns(ns)).objects,
        };
        out.extend(held.into_iter().map(|object| Listed {
            leaf: leaf.as_str().into(),
            object,
        }));
    }
    out.retain(|c| caller.config.owns(c.name()));
    super::listed::sort(&mut out);
    out
}

/// The merged namespaces of `copies` (in list order), one per name.
fn merged(copies: &[Copy]) -> Vec<Value> {
    copies
        .chunk_by(|a, b| a.name() == b.name())
        .filter_map(merge)
        .collect()
}

/// One namespace from its leaves' copies (see the module header).
fn merge(copies: &[Copy]) -> Option<Value> {
    let first = copies.first()?;
    let mut ns = first.object.json().clone();
    if copies
        .iter()
        .any(|c| c.object.text("/status/phase") == "Active")
    {
        ns["status"]["phase"] = json!("Active");
    }
    let oldest = copies
        .iter()
        .map(|c| c.object.text("/metadata/creationTimestamp"))
        .filter_map(|t| Some((parse_timestamp(t)?, t)))
        .min();
    if let Some((_, t)) = oldest {
        ns["metadata"]["creationTimestamp"] = json!(t);
    }
    let leaves: Vec<&str> = copies.iter().map(|c| &*c.leaf).collect();
    ns["metadata"]["annotations"][LEAF_ANNOTATION] = json!(leaves.join(","));
    Some(ns)
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The Table of `namespaces`.
fn print<'a>(
    namespaces: impl Iterator<Item = &'a Value>,
    wanted: Wanted,
    metadata: Value,
) -> Value {
    let now = now();
    let rows = namespaces
        .map(|ns| {
            let cells = vec![
                json!(text(ns, "/metadata/name")),
                json!(text(ns, "/status/phase")),
                json!(object_table::age(ns, "/metadata/creationTimestamp", now)),
                json!(text(
                    ns,
                    &format!(
                        "/metadata/annotations/{}",
                        LEAF_ANNOTATION.replace('/', "~1")
                    )
                )),
            ];
            (cells, ns.clone())
        })
        .collect();
    object_table::table(wanted, &COLUMNS, rows, metadata)
}

/// `GET /api/v1/namespaces`: the tenant's namespaces that exist in a leaf it may reach; a
/// watch of them with `watch=true`.
pub fn collection(
    req: &Request<InBody>,
    client: &Client,
    snapshot: &Arc<Snapshot>,
    caller: &Caller<'_>,
) -> Response<Body> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return reply::status(&Status::method_not_allowed());
    }
    let query = req.uri().query();
    let mut request = match Namespaces::from_query(query, snapshot) {
        Ok(r) => r,
        Err(e) => return reply::status(&Status::new(400, e)),
    };
    request.wanted = match table::requested(req) {
        Ok(t) => t,
        Err(res) => return res,
    };
    if matches!(query_value(query, "watch").as_deref(), Some("true" | "1")) {
        return watch::watch(req, client, snapshot.clone(), caller, request);
    }
    // The token over every copy the tenant may read; the selectors choose among the
    // merged namespaces.
    let (_, token) = list::gather_with(snapshot, caller, &request, |_| false);
    let metadata = json!({ "resourceVersion": token.encode() });
    let namespaces = merged(&copies(snapshot, caller, None));
    let selected = namespaces.iter().filter(|ns| request.selects_json(ns));
    match request.wanted {
        Some(wanted) => reply::json(StatusCode::OK, &print(selected, wanted, metadata)),
        None => reply::json(
            StatusCode::OK,
            &json!({
                "kind": "NamespaceList", "apiVersion": "v1", "metadata": metadata,
                "items": selected.cloned().collect::<Vec<_>>(),
            }),
        ),
    }
}

/// `GET /api/v1/namespaces/{ns}`: the namespace when the tenant owns it and a leaf it may
/// reach has it.
pub fn one(
    req: &Request<InBody>,
    snapshot: &Snapshot,
    caller: &Caller<'_>,
    name: &str,
) -> Response<Body> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return reply::status(&Status::method_not_allowed());
    }
    if !caller.config.owns(name) {
        return caller.forbidden("get", "namespaces", Some(name), Some(name));
    }
    let wanted = match table::requested(req) {
        Ok(t) => t,
        Err(res) => return res,
    };
    let Some(ns) = merge(&copies(snapshot, caller, Some(name))) else {
        return reply::status(&Status::not_found("namespaces", name));
    };
    match wanted {
        Some(wanted) => reply::json(
            StatusCode::OK,
            &print(std::iter::once(&ns), wanted, json!({})),
        ),
        None => reply::json(StatusCode::OK, &ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(leaf: &str, json: Value) -> Copy {
        Listed {
            leaf: leaf.into(),
            object: Arc::new(RawObject::new(json, "v1", "Namespace", leaf)),
        }
    }

    #[test]
    fn copies_merge_active_oldest_and_every_leaf() {
        let a = copy(
            "leaf-a",
            json!({
                "metadata": { "name": "apps", "creationTimestamp": "2024-01-02T00:00:00Z" },
                "status": { "phase": "Terminating" },
            }),
        );
        let b = copy(
            "leaf-b",
            json!({
                "metadata": { "name": "apps", "creationTimestamp": "2024-01-01T00:00:00Z" },
                "status": { "phase": "Active" },
            }),
        );
        let c = copy("leaf-a", json!({ "metadata": { "name": "apps-2" } }));
        let ns = merge(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(ns["metadata"]["creationTimestamp"], "2024-01-01T00:00:00Z");
        assert_eq!(
            ns["metadata"]["annotations"][LEAF_ANNOTATION],
            "leaf-a,leaf-b"
        );
        assert_eq!(merge(&[]), None);
        let all = merged(&[a, b, c]);
        assert_eq!(all.len(), 2);
        assert_eq!(all[1]["metadata"]["annotations"][LEAF_ANNOTATION], "leaf-a");
    }
}
