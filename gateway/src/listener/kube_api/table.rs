//! `meta.k8s.io` Tables for pods: the tenant's `table_formatter` when it has one and it
//! answers, else leafgate's built-in pod table (kubectl's own columns plus LEAF).
//!
//! Whoever made the columns and cells, leafgate fills each row's `object` as
//! `includeObject` asks (`Metadata` by default, so `-A` prints NAMESPACE and
//! `--show-labels` works) and checks the plugin's answer: one row per object, as many cells
//! as columns; anything else fails the request as a plugin failure (502).

use http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use leafgate_k8s_print::{Column, POD_COLUMNS, Pod, PodRow};
use serde::Deserialize;
use serde_json::{Value, json};

use super::caller::Caller;
use super::listed::Listed;
use super::query::query_value;
use crate::k8s::status::Status;
use crate::listener::reply::{self, Dialect};
use crate::plugins::TableRequest;
use crate::proxy::Body;

/// What each row's `object` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    None,
    Metadata,
    Object,
}

/// The Table a client asked for: the `meta.k8s.io` version it named first and what each
/// row's `object` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
    pub api_version: &'static str,
    pub include: Include,
}

/// `Some` when the client's `Accept` asks for a Table (`as=Table;g=meta.k8s.io`, `v1` or
/// `v1beta1`), with its `includeObject`; a bad `includeObject` is a 400.
#[allow(clippy::result_large_err)]
pub fn requested(req: &Request<Incoming>) -> Result<Option<Wanted>, Response<Body>> {
    let version = req
        .headers()
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .find_map(|range| {
            let params: Vec<&str> = range.split(';').map(str::trim).collect();
            if !params.contains(&"as=Table") || !params.contains(&"g=meta.k8s.io") {
                return None;
            }
            if params.contains(&"v=v1") {
                Some("meta.k8s.io/v1")
            } else if params.contains(&"v=v1beta1") {
                Some("meta.k8s.io/v1beta1")
            } else {
                None
            }
        });
    let Some(api_version) = version else {
        return Ok(None);
    };
    let include = match query_value(req.uri().query(), "includeObject").as_deref() {
        None | Some("") | Some("Metadata") => Include::Metadata,
        Some("None") => Include::None,
        Some("Object") => Include::Object,
        Some(other) => {
            return Err(reply::status(&Status::new(
                400,
                format!("includeObject {other:?} is not one of None, Metadata, Object"),
            )));
        }
    };
    Ok(Some(Wanted {
        api_version,
        include,
    }))
}

/// The Table of `pods` as a response.
pub async fn respond(
    caller: &Caller<'_>,
    pods: &[Listed],
    wanted: Wanted,
    version: &str,
) -> Response<Body> {
    match build(caller, pods, wanted, version).await {
        Ok(table) => reply::json(StatusCode::OK, &table),
        Err((code, message)) => reply::error(Dialect::Status, code, &message),
    }
}

/// The Table of `pods`: columns and cells from the tenant's plugin or the built-in
/// printer, objects per `include`.
pub async fn build(
    caller: &Caller<'_>,
    pods: &[Listed],
    wanted: Wanted,
    version: &str,
) -> Result<Value, (StatusCode, String)> {
    let objects: Vec<Value> = pods.iter().map(Listed::json).collect();
    let plugin = if caller.tenant.plugins.has_table_formatter() {
        let request = TableRequest {
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            wide: false,
            objects: Value::Array(objects.clone()).to_string(),
        };
        caller
            .tenant
            .plugins
            .format_table(&request)
            .await
            .map_err(|e| {
                (
                    e.status(),
                    format!("table formatter of tenant {:?}: {e}", caller.tenant.name),
                )
            })?
    } else {
        None
    };
    let (columns, rows) = match plugin {
        Some(t) => {
            if t.rows.len() != objects.len() {
                return Err((
                    StatusCode::BAD_GATEWAY,
                    format!(
                        "table formatter of tenant {:?} answered {} rows for {} objects",
                        caller.tenant.name,
                        t.rows.len(),
                        objects.len()
                    ),
                ));
            }
            let columns = serde_json::to_value(&t.columns).unwrap_or(Value::Null);
            let rows: Vec<Value> = t
                .rows
                .iter()
                .map(|cells| serde_json::to_value(cells).unwrap_or(Value::Null))
                .collect();
            (columns, rows)
        }
        None => builtin(pods, &objects)?,
    };
    let rows: Vec<Value> = rows
        .into_iter()
        .zip(objects)
        .map(|(cells, object)| {
            let mut row = json!({ "cells": cells });
            match wanted.include {
                Include::None => {}
                Include::Metadata => {
                    row["object"] = json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": object["metadata"],
                    });
                }
                Include::Object => row["object"] = object,
            }
            row
        })
        .collect();
    Ok(json!({
        "kind": "Table",
        "apiVersion": wanted.api_version,
        "metadata": { "resourceVersion": version },
        "columnDefinitions": columns,
        "rows": rows,
    }))
}

/// The column leafgate adds after kube-apiserver's own: which leaf the pod runs in.
const LEAF_COLUMN: Column = Column {
    name: "Leaf",
    kind: "string",
    format: "",
    description: "The leaf cluster the pod runs in (leafgate).",
    priority: 0,
};

/// kube-apiserver's pod columns plus LEAF, printed by `leafgate-k8s-print` (the printer the
/// `pods-table` plugin uses too) from `objects`, the pods' JSON the Table carries anyway.
fn builtin(
    pods: &[Listed],
    objects: &[Value],
) -> Result<(Value, Vec<Value>), (StatusCode, String)> {
    let columns = POD_COLUMNS.iter().chain([&LEAF_COLUMN]);
    let columns = serde_json::to_value(columns.collect::<Vec<_>>()).unwrap_or(Value::Null);
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let rows = pods
        .iter()
        .zip(objects)
        .map(|(listed, object)| {
            // Fails only for a leaf's pod whose fields have the wrong JSON types.
            let pod = Pod::deserialize(object).map_err(|e| {
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!(
                        "the built-in table cannot read a pod of leaf {:?}: {e}",
                        listed.leaf
                    ),
                )
            })?;
            let mut cells: Vec<Value> = PodRow::new(&pod, now)
                .cells()
                .into_iter()
                .map(Value::String)
                .collect();
            cells.push(json!(&*listed.leaf));
            Ok(Value::Array(cells))
        })
        .collect::<Result<_, _>>()?;
    Ok((columns, rows))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// The built-in table reads each pod from its JSON as the leaf sent it: every field
    /// the wide columns need is there, and LEAF comes last.
    #[test]
    fn builtin_prints_a_listed_pod_through_its_json() {
        let pod = crate::k8s::RawPod::from_value(json!({
            "metadata": {
                "name": "web", "namespace": "apps",
                "creationTimestamp": "2000-01-01T00:00:00Z",
            },
            "spec": {
                "nodeName": "node-a",
                "containers": [{ "name": "app" }, { "name": "side" }],
                "initContainers": [{ "name": "init" }],
                "readinessGates": [{ "conditionType": "lb" }],
            },
            "status": {
                "phase": "Pending", "podIP": "10.0.0.7", "nominatedNodeName": "node-b",
                "conditions": [{ "type": "lb", "status": "True" }],
                "initContainerStatuses": [{
                    "name": "init", "ready": false, "restartCount": 2, "image": "i", "imageID": "",
                    "state": { "waiting": { "reason": "CrashLoopBackOff" } },
                }],
                "containerStatuses": [{
                    "name": "app", "ready": false, "restartCount": 1, "image": "a", "imageID": "",
                    "state": { "waiting": { "reason": "PodInitializing" } },
                }],
            },
        }))
        .unwrap()
        .stamp("leaf-1");
        let listed = Listed {
            leaf: Arc::from("leaf-1"),
            pod: Arc::new(pod),
        };
        let (columns, rows) = builtin(std::slice::from_ref(&listed), &[listed.json()]).unwrap();
        let names: Vec<&str> = columns
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "Name",
                "Ready",
                "Status",
                "Restarts",
                "Age",
                "IP",
                "Node",
                "Nominated Node",
                "Readiness Gates",
                "Leaf"
            ]
        );
        let cells = rows[0].as_array().unwrap();
        // While the pod initializes, printPod counts the init containers' restarts (2), not
        // the app containers' (1).
        assert_eq!(cells[..4], ["web", "0/2", "Init:CrashLoopBackOff", "2"]);
        assert!(cells[4].as_str().unwrap().ends_with('y'), "{}", cells[4]);
        assert_eq!(
            cells[5..],
            ["10.0.0.7", "node-a", "node-b", "1/1", "leaf-1"]
        );
    }
}
