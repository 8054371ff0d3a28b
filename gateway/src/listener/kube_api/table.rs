//! `meta.k8s.io` Tables for pods: the tenant's `table_formatter` when it has one and it
//! answers, else leafgate's built-in pod table (kubectl's own columns plus LEAF).
//!
//! Whoever made the columns and cells, leafgate fills each row's `object` as
//! `includeObject` asks (`Metadata` by default, so `-A` prints NAMESPACE and
//! `--show-labels` works) and checks the plugin's answer: one row per object, as many cells
//! as columns; anything else fails the request as a plugin failure (502).

use http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
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
        None => builtin(pods),
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

fn column(name: &str, kind: &str, format: &str, description: &str, priority: i32) -> Value {
    json!({
        "name": name, "type": kind, "format": format,
        "description": description, "priority": priority,
    })
}

/// kube-apiserver's pod columns (`pkg/printers/internalversion`) plus LEAF.
fn builtin(pods: &[Listed]) -> (Value, Vec<Value>) {
    let columns = json!([
        column(
            "Name",
            "string",
            "name",
            "Name must be unique within a namespace.",
            0
        ),
        column(
            "Ready",
            "string",
            "",
            "The aggregate readiness state of this pod for accepting traffic.",
            0
        ),
        column(
            "Status",
            "string",
            "",
            "The aggregate status of the containers in this pod.",
            0
        ),
        column(
            "Restarts",
            "string",
            "",
            "The number of times the containers in this pod have been restarted.",
            0
        ),
        column(
            "Age",
            "string",
            "",
            "CreationTimestamp is a timestamp representing the server time when this object was created.",
            0
        ),
        column("IP", "string", "", "IP address allocated to the pod.", 1),
        column(
            "Node",
            "string",
            "",
            "Name of the node where the pod is scheduled.",
            1
        ),
        column(
            "Nominated Node",
            "string",
            "",
            "Name of the node where the pod is nominated to be scheduled.",
            1
        ),
        column(
            "Readiness Gates",
            "string",
            "",
            "The readiness gates of the pod.",
            1
        ),
        column(
            "Leaf",
            "string",
            "",
            "The leaf cluster the pod runs in (leafgate).",
            0
        ),
    ]);
    let now = k8s_openapi::jiff::Timestamp::now().as_second();
    let rows = pods.iter().map(|p| builtin_row(p, now)).collect();
    (columns, rows)
}

fn builtin_row(listed: &Listed, now: i64) -> Value {
    let pod = &listed.pod;
    let spec = pod.spec.as_ref();
    let st = pod.status.as_ref();
    let statuses: &[ContainerStatus] = st
        .and_then(|s| s.container_statuses.as_deref())
        .unwrap_or(&[]);
    let containers = spec.map_or(0, |s| s.containers.len());
    let ready = statuses.iter().filter(|c| c.ready).count();
    let restarts: i32 = statuses.iter().map(|c| c.restart_count).sum();
    let age = pod.metadata.creation_timestamp.as_ref().map_or_else(
        || "<unknown>".to_string(),
        |t| human_age(now - t.0.as_second()),
    );
    let none = |s: Option<&str>| s.filter(|s| !s.is_empty()).unwrap_or("<none>").to_string();
    let gates = spec
        .and_then(|s| s.readiness_gates.as_ref())
        .filter(|g| !g.is_empty())
        .map_or_else(
            || "<none>".to_string(),
            |gates| {
                let conditions = st.and_then(|s| s.conditions.as_deref()).unwrap_or(&[]);
                let met = gates
                    .iter()
                    .filter(|g| {
                        conditions
                            .iter()
                            .any(|c| c.type_ == g.condition_type && c.status == "True")
                    })
                    .count();
                format!("{met}/{}", gates.len())
            },
        );
    json!([
        pod.metadata.name.as_deref().unwrap_or(""),
        format!("{ready}/{containers}"),
        pod_status(pod),
        restarts.to_string(),
        age,
        none(st.and_then(|s| s.pod_ip.as_deref())),
        none(spec.and_then(|s| s.node_name.as_deref())),
        none(st.and_then(|s| s.nominated_node_name.as_deref())),
        gates,
        &*listed.leaf,
    ])
}

/// Why a container is not simply running, as kubectl words it; `None` when it is.
fn container_reason(c: &ContainerStatus) -> Option<String> {
    let state = c.state.as_ref()?;
    if let Some(reason) = state.waiting.as_ref().and_then(|w| w.reason.clone()) {
        return Some(reason).filter(|r| !r.is_empty());
    }
    let t = state.terminated.as_ref()?;
    Some(match t.reason.as_deref() {
        Some(r) if !r.is_empty() => r.to_string(),
        _ if t.signal.unwrap_or(0) != 0 => format!("Signal:{}", t.signal.unwrap_or(0)),
        _ => format!("ExitCode:{}", t.exit_code),
    })
}

/// The STATUS column, by kube-apiserver's printer's reasoning (init containers, waiting
/// and terminated reasons, Terminating).
fn pod_status(pod: &Pod) -> String {
    let st = pod.status.as_ref();
    let mut reason = st
        .and_then(|s| s.reason.clone())
        .filter(|r| !r.is_empty())
        .or_else(|| st.and_then(|s| s.phase.clone()))
        .unwrap_or_else(|| "Unknown".into());
    let inits = st
        .and_then(|s| s.init_container_statuses.as_deref())
        .unwrap_or(&[]);
    let init_count = pod
        .spec
        .as_ref()
        .and_then(|s| s.init_containers.as_ref())
        .map_or(0, Vec::len);
    let mut initializing = false;
    for (i, c) in inits.iter().enumerate() {
        let state = c.state.as_ref();
        let terminated = state.and_then(|s| s.terminated.as_ref());
        if terminated.is_some_and(|t| t.exit_code == 0) {
            continue;
        }
        initializing = true;
        let waiting = state
            .and_then(|s| s.waiting.as_ref())
            .and_then(|w| w.reason.as_deref());
        reason = match (terminated, waiting) {
            (Some(_), _) => format!("Init:{}", container_reason(c).unwrap_or_default()),
            (None, Some(r)) if !r.is_empty() && r != "PodInitializing" => format!("Init:{r}"),
            _ => format!("Init:{i}/{init_count}"),
        };
        break;
    }
    if !initializing {
        let mut has_running = false;
        for c in st
            .and_then(|s| s.container_statuses.as_deref())
            .unwrap_or(&[])
            .iter()
            .rev()
        {
            match container_reason(c) {
                Some(r) => reason = r,
                None if c.ready && c.state.as_ref().is_some_and(|s| s.running.is_some()) => {
                    has_running = true
                }
                None => {}
            }
        }
        if reason == "Completed" && has_running {
            reason = "Running".into();
        }
    }
    if pod.metadata.deletion_timestamp.is_some() {
        reason = if st.and_then(|s| s.reason.as_deref()) == Some("NodeLost") {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    reason
}

/// apimachinery's `duration.HumanDuration`: `45s`, `5m3s`, `3h`, `2d5h`, `1y20d`.
fn human_age(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    let s = seconds.max(0);
    if s < 120 {
        return format!("{s}s");
    }
    let m = s / 60;
    if m < 10 {
        return match s % 60 {
            0 => format!("{m}m"),
            r => format!("{m}m{r}s"),
        };
    }
    if m < 180 {
        return format!("{m}m");
    }
    let h = m / 60;
    if h < 8 {
        return match m % 60 {
            0 => format!("{h}h"),
            r => format!("{h}h{r}m"),
        };
    }
    if h < 48 {
        return format!("{h}h");
    }
    let d = h / 24;
    if h < 24 * 8 {
        return match h % 24 {
            0 => format!("{d}d"),
            r => format!("{d}d{r}h"),
        };
    }
    if h < 24 * 365 * 2 {
        return format!("{d}d");
    }
    let y = d / 365;
    if h < 24 * 365 * 8 {
        return match d % 365 {
            0 => format!("{y}y"),
            r => format!("{y}y{r}d"),
        };
    }
    format!("{y}y")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        for (s, want) in [
            (5, "5s"),
            (119, "119s"),
            (303, "5m3s"),
            (600, "10m"),
            (3 * 3600 + 60, "3h1m"),
            (30 * 3600, "30h"),
            (2 * 86400 + 5 * 3600, "2d5h"),
            (20 * 86400, "20d"),
            (3 * 365 * 86400 + 86400, "3y1d"),
            (-5, "<invalid>"),
        ] {
            assert_eq!(human_age(s), want, "{s}");
        }
    }
}
