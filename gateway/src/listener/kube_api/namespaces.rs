//! Namespaces that exist: the leaves' namespace reflectors (`k8s::leaf::namespaces`),
//! intersected with the tenant's namespace globs. A glob match no reachable leaf has is
//! kube-apiserver's 404 (`namespaces "x" not found`); one the tenant does not own is its
//! RBAC 403, whether or not it exists (authorization comes first, so nothing is learnt).
//!
//! A namespace held by several leaves is one object: the copy of the first leaf (by name),
//! `Active` when any copy is, created when the oldest was, its `leafgate.io/leaf`
//! annotation naming every leaf that has it (comma-separated). The Table is kube-apiserver's
//! namespace printer (NAME, STATUS, AGE) plus a wide-only LEAF column.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use http::{Method, Request, Response, StatusCode};
use leafgate_k8s_print::{Column, LEAF_ANNOTATION, parse_timestamp};
use serde_json::{Value, json};

use super::caller::Caller;
use super::fields::Fields;
use super::object_table::{self, leaf_column};
use super::query::query_value;
use super::select::LabelSelector;
use super::table::{self, Wanted};
use crate::k8s::status::Status;
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

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The namespaces the tenant owns that a leaf it may reach has, merged across leaves, by
/// name; only `only` when given.
fn merged(snapshot: &Snapshot, caller: &Caller<'_>, only: Option<&str>) -> BTreeMap<String, Value> {
    let mut copies: BTreeMap<String, Vec<(&str, Arc<Value>)>> = BTreeMap::new();
    let mut leaves: Vec<_> = snapshot
        .leaves
        .iter()
        .filter(|(name, _)| caller.config.may_reach(name))
        .collect();
    leaves.sort_by_key(|(name, _)| *name);
    for (leaf, l) in leaves {
        let held = match only {
            Some(name) => l.namespaces().get(name).into_iter().collect(),
            None => l.namespaces().list(),
        };
        for ns in held {
            let name = text(&ns, "/metadata/name").to_string();
            if caller.config.owns(&name) {
                copies.entry(name).or_default().push((leaf.as_str(), ns));
            }
        }
    }
    copies
        .into_iter()
        .filter_map(|(name, copies)| Some((name, merge(&copies)?)))
        .collect()
}

/// One namespace from its leaves' copies (see the module header).
fn merge(copies: &[(&str, Arc<Value>)]) -> Option<Value> {
    let (_, first) = copies.first()?;
    let mut ns = (**first).clone();
    if copies
        .iter()
        .any(|(_, c)| text(c, "/status/phase") == "Active")
    {
        ns["status"]["phase"] = json!("Active");
    }
    let oldest = copies
        .iter()
        .map(|(_, c)| text(c, "/metadata/creationTimestamp"))
        .filter_map(|t| Some((parse_timestamp(t)?, t)))
        .min();
    if let Some((_, t)) = oldest {
        ns["metadata"]["creationTimestamp"] = json!(t);
    }
    let leaves: Vec<&str> = copies.iter().map(|(l, _)| *l).collect();
    ns["metadata"]["annotations"][LEAF_ANNOTATION] = json!(leaves.join(","));
    Some(ns)
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The Table of `namespaces`.
fn print<'a>(namespaces: impl Iterator<Item = &'a Value>, wanted: Wanted) -> Value {
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
    object_table::table(wanted, &COLUMNS, rows, json!({}))
}

/// `GET /api/v1/namespaces`: the tenant's namespaces that exist in a leaf it may reach.
pub fn collection(
    req: &Request<InBody>,
    snapshot: &Snapshot,
    caller: &Caller<'_>,
) -> Response<Body> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return reply::status(&Status::method_not_allowed());
    }
    let query = req.uri().query();
    // Namespaces are not watched through leafgate (discovery does not offer it).
    if matches!(query_value(query, "watch").as_deref(), Some("true" | "1")) {
        return reply::status(&Status::method_not_allowed());
    }
    let labels = LabelSelector::parse(&query_value(query, "labelSelector").unwrap_or_default());
    let fields = Fields::parse(
        &query_value(query, "fieldSelector").unwrap_or_default(),
        SELECTABLE,
    );
    let (labels, fields) = match (labels, fields) {
        (Ok(l), Ok(f)) => (l, f),
        (Err(e), _) | (_, Err(e)) => return reply::status(&Status::new(400, e)),
    };
    let wanted = match table::requested(req) {
        Ok(t) => t,
        Err(res) => return res,
    };
    let namespaces = merged(snapshot, caller, None);
    let selected = namespaces.values().filter(|ns| {
        let l: Option<BTreeMap<String, String>> = ns
            .pointer("/metadata/labels")
            .and_then(|l| serde_json::from_value(l.clone()).ok());
        labels.matches(l.as_ref())
            && fields.matches(|k| match k {
                "metadata.name" => text(ns, "/metadata/name").to_string(),
                "status.phase" => text(ns, "/status/phase").to_string(),
                _ => String::new(),
            })
    });
    match wanted {
        Some(wanted) => reply::json(StatusCode::OK, &print(selected, wanted)),
        None => reply::json(
            StatusCode::OK,
            &json!({
                "kind": "NamespaceList", "apiVersion": "v1", "metadata": {},
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
    let Some(ns) = merged(snapshot, caller, Some(name)).remove(name) else {
        return reply::status(&Status::not_found("namespaces", name));
    };
    match wanted {
        Some(wanted) => reply::json(StatusCode::OK, &print(std::iter::once(&ns), wanted)),
        None => reply::json(StatusCode::OK, &ns),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_merge_active_oldest_and_every_leaf() {
        let a = Arc::new(json!({
            "metadata": { "name": "apps", "creationTimestamp": "2024-01-02T00:00:00Z" },
            "status": { "phase": "Terminating" },
        }));
        let b = Arc::new(json!({
            "metadata": { "name": "apps", "creationTimestamp": "2024-01-01T00:00:00Z" },
            "status": { "phase": "Active" },
        }));
        let ns = merge(&[("leaf-a", a), ("leaf-b", b)]).unwrap();
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(ns["metadata"]["creationTimestamp"], "2024-01-01T00:00:00Z");
        assert_eq!(
            ns["metadata"]["annotations"][LEAF_ANNOTATION],
            "leaf-a,leaf-b"
        );
        assert_eq!(merge(&[]), None);
    }
}
