//! `meta.k8s.io` Tables for pods: the tenant's `table_formatter` when it has one and it
//! answers, else leafgate's built-in pod table (kubectl's own columns plus LEAF).
//!
//! Whoever made the columns and cells, leafgate fills each row's `object` as
//! `includeObject` asks (`Metadata` by default, so `-A` prints NAMESPACE and
//! `--show-labels` works) and checks the plugin's answer: one row per object, as many cells
//! as columns; anything else fails the request as a plugin failure (502). A long list goes
//! to the plugin in parts, each call within the plugin's limits, and their rows are joined.

use http::{HeaderValue, Request, Response, StatusCode, header};
use leafgate_k8s_print::{Column, POD_COLUMNS, PodRow};
use serde_json::Value;

use super::caller::Caller;
pub use super::json_out::{Include, Wanted};
use super::json_out::{list_head, push_json, push_str, row_end};
use super::listed::Listed;
use super::query::query_value;
use crate::k8s::status::Status;
use crate::listener::reply::{self, Dialect};
use crate::plugins::{Table as PluginTable, TableRequest};
use crate::proxy::{Body, InBody, full};

/// `Some` when the client's `Accept` asks for a Table (`as=Table;g=meta.k8s.io`, `v1` or
/// `v1beta1`), with its `includeObject`; a bad `includeObject` is a 400.
#[allow(clippy::result_large_err)]
pub fn requested(req: &Request<InBody>) -> Result<Option<Wanted>, Response<Body>> {
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
    match write(caller, pods, wanted, version, None).await {
        Ok(table) => json_response(table),
        Err((code, message)) => reply::error(Dialect::Status, code, &message),
    }
}

/// Serialized JSON (a Table, a list) as a 200 answer: what `reply::json` sends for a `Value`.
pub fn json_response(table: Vec<u8>) -> Response<Body> {
    let mut res = Response::new(full(table));
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// The Table of `pods` as a JSON value (a watch event carries one per pod).
pub async fn build(
    caller: &Caller<'_>,
    pods: &[Listed],
    wanted: Wanted,
    version: &str,
) -> Result<Value, (StatusCode, String)> {
    let table = write(caller, pods, wanted, version, None).await?;
    serde_json::from_slice(&table).map_err(|e| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the pod table is not JSON: {e}"),
        )
    })
}

/// The Table of `pods`, serialized: columns and cells from the tenant's plugin or the
/// built-in printer, objects per `include`, and `next` (a continue token and how many pods
/// remain) in its `metadata` when the list is cut into pages.
///
/// Written as bytes, not built as a `Value`: each pod's metadata and whole object were
/// serialized when the feed received it, so a row costs its cells and a copy.
pub async fn write(
    caller: &Caller<'_>,
    pods: &[Listed],
    wanted: Wanted,
    version: &str,
    next: Option<(&str, usize)>,
) -> Result<Vec<u8>, (StatusCode, String)> {
    let plugin = if caller.tenant.plugins.has_table_formatter() {
        formatted(caller, pods).await?
    } else {
        None
    };
    serialize(plugin.as_ref(), pods, wanted, version, next)
}

/// How much of the list one call of a table formatter reads, in bytes of the pods' JSON.
///
/// A formatter's call has the same limits as any plugin call (10 ms and 64 MiB by default),
/// sized for a decision, not for a list of 10,000 pods (~4 MB of JSON, ~45 ms to read and
/// print in a sandbox). So a long list is formatted in parts of about this size, each call
/// within the limits, and their rows are joined: a call reads ~256 KiB in ~3 ms.
const PART_BYTES: usize = 256 * 1024;

/// The tenant's formatter's table of `pods`, formatted part by part ([`PART_BYTES`]); `None`
/// when it declines any part (the built-in table prints them all).
///
/// Every part must answer the same columns and one row per object, as the WIT's
/// `table-formatter` world says; otherwise the request fails as a plugin failure (502).
async fn formatted(
    caller: &Caller<'_>,
    pods: &[Listed],
) -> Result<Option<PluginTable>, (StatusCode, String)> {
    let tenant = &caller.tenant.name;
    let mut joined: Option<PluginTable> = None;
    let mut rest = pods;
    loop {
        let (objects, count) = objects_json(rest);
        let request = TableRequest {
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            wide: false,
            objects,
        };
        let answer = caller
            .tenant
            .plugins
            .format_table(request)
            .await
            .map_err(|e| {
                (
                    e.status(),
                    format!("table formatter of tenant {tenant:?}: {e}"),
                )
            })?;
        let Some(part) = answer else {
            return Ok(None);
        };
        if part.rows.len() != count {
            return Err((
                StatusCode::BAD_GATEWAY,
                format!(
                    "table formatter of tenant {tenant:?} answered {} rows for {count} objects",
                    part.rows.len(),
                ),
            ));
        }
        match &mut joined {
            None => joined = Some(part),
            Some(table) if table.columns == part.columns => table.rows.extend(part.rows),
            Some(_) => {
                return Err((
                    StatusCode::BAD_GATEWAY,
                    format!(
                        "table formatter of tenant {tenant:?} answered other columns for a \
                         later part of the list"
                    ),
                ));
            }
        }
        rest = &rest[count..];
        if rest.is_empty() {
            return Ok(joined);
        }
    }
}

/// [`write`] once the plugin (if any) has answered: `plugin`'s columns and cells, or the
/// built-in ones.
fn serialize(
    plugin: Option<&PluginTable>,
    pods: &[Listed],
    wanted: Wanted,
    version: &str,
    next: Option<(&str, usize)>,
) -> Result<Vec<u8>, (StatusCode, String)> {
    // Rows are ~600 bytes with their metadata.
    let mut out = Vec::with_capacity(1024 + pods.len() * 640);
    list_head(&mut out, "Table", wanted.api_version, version, next);
    out.extend_from_slice(br#","columnDefinitions":"#);
    match plugin {
        Some(t) => {
            push_json(&mut out, &t.columns);
            out.extend_from_slice(br#","rows":["#);
            for (i, (cells, listed)) in t.rows.iter().zip(pods).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(br#"{"cells":"#);
                push_json(&mut out, cells);
                row_object(&mut out, listed, wanted.include);
            }
        }
        None => {
            push_json(
                &mut out,
                &POD_COLUMNS.iter().chain([&LEAF_COLUMN]).collect::<Vec<_>>(),
            );
            out.extend_from_slice(br#","rows":["#);
            let now = k8s_openapi::jiff::Timestamp::now().as_second();
            for (i, listed) in pods.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(br#"{"cells":"#);
                builtin_cells(&mut out, listed, now)?;
                row_object(&mut out, listed, wanted.include);
            }
        }
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

/// The first pods of `pods` as the JSON array a table formatter reads (each as the API
/// serves it, joined from its serialized form), and how many it holds: pods until the array
/// passes [`PART_BYTES`], at least one, all of them for an empty list.
fn objects_json(pods: &[Listed]) -> (String, usize) {
    let mut out = Vec::with_capacity(PART_BYTES + 64 * 1024);
    out.push(b'[');
    let mut count = 0;
    for listed in pods {
        if count > 0 {
            if out.len() >= PART_BYTES {
                break;
            }
            out.push(b',');
        }
        listed.object.write_wire(listed.version(), &mut out);
        count += 1;
    }
    out.push(b']');
    // Joined from serde_json's own output, so UTF-8.
    (String::from_utf8(out).unwrap_or_default(), count)
}

/// The rest of a row after its cells: its `object` as `include` asks, and the row's end.
fn row_object(out: &mut Vec<u8>, listed: &Listed, include: Include) {
    let object = |out: &mut Vec<u8>| listed.object.write_wire(listed.version(), out);
    row_end(out, include, listed.object.metadata_json(), object);
}

/// The column leafgate adds after kube-apiserver's own: which leaf the pod runs in.
const LEAF_COLUMN: Column = Column {
    name: "Leaf",
    kind: "string",
    format: "",
    description: "The leaf cluster the pod runs in (leafgate).",
    priority: 0,
};

/// One pod's cells in kube-apiserver's pod columns plus LEAF, printed by
/// `leafgate-k8s-print` (the printer the `pods-table` plugin uses too) from the reading of
/// the pod made when the feed received it.
fn builtin_cells(out: &mut Vec<u8>, listed: &Listed, now: i64) -> Result<(), (StatusCode, String)> {
    // Fails only for a leaf's pod whose fields have the wrong JSON types.
    let pod = listed.object.printed().map_err(|e| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "the built-in table cannot read a pod of leaf {:?}: {e}",
                listed.leaf
            ),
        )
    })?;
    out.push(b'[');
    for cell in PodRow::new(pod, now).cells() {
        push_str(out, &cell);
        out.push(b',');
    }
    push_str(out, &listed.leaf);
    out.push(b']');
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

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
            object: Arc::new(pod),
        };
        let wanted = Wanted {
            api_version: "meta.k8s.io/v1",
            include: Include::Metadata,
        };
        let table = serialize(
            None,
            std::slice::from_ref(&listed),
            wanted,
            "rv",
            Some(("next", 3)),
        )
        .unwrap();
        let table: Value = serde_json::from_slice(&table).unwrap();
        assert_eq!(
            (&table["kind"], &table["apiVersion"]),
            (&json!("Table"), &json!("meta.k8s.io/v1"))
        );
        assert_eq!(
            table["metadata"],
            json!({"resourceVersion": "rv", "continue": "next", "remainingItemCount": 3})
        );
        // The row's object is the pod's metadata, as the leaf sent it plus the stamp.
        assert_eq!(
            table["rows"][0]["object"],
            json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": listed.json()["metadata"],
            })
        );
        let (columns, rows) = (&table["columnDefinitions"], &table["rows"]);
        let rows: Vec<Value> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["cells"].clone())
            .collect();
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
