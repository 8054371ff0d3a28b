//! `meta.k8s.io` Table rendering, with kube-apiserver's pod columns and NAME/AGE for the
//! rest. Owns only the shape of the table; listing and filtering happen before.

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::resources::Resource;

/// What `includeObject` asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Include {
    None,
    Metadata,
    Object,
}

impl Include {
    pub fn parse(s: Option<&str>) -> Result<Include, String> {
        match s {
            None | Some("") | Some("Metadata") => Ok(Include::Metadata),
            Some("None") => Ok(Include::None),
            Some("Object") => Ok(Include::Object),
            Some(other) => Err(format!(
                "includeObject: Unsupported value: \"{other}\": supported values: \"Metadata\", \"None\", \"Object\""
            )),
        }
    }
}

/// Whether an Accept header asks for a Table, and which meta.k8s.io version.
pub fn wants_table(accept: &str) -> Option<&'static str> {
    for part in accept.split(',') {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        if params.contains(&"as=Table") && params.contains(&"g=meta.k8s.io") {
            if params.contains(&"v=v1") {
                return Some("v1");
            }
            if params.contains(&"v=v1beta1") {
                return Some("v1beta1");
            }
        }
    }
    None
}

/// `duration.HumanDuration` from apimachinery.
pub fn human_duration(secs: i64) -> String {
    let s = secs.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        if s % 60 == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{}s", s % 60)
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        if m % 60 == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        if h % 24 == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{}h", h % 24)
        }
    } else if d < 365 * 2 {
        format!("{d}d")
    } else if d < 365 * 8 {
        format!("{}y{}d", d / 365, d % 365)
    } else {
        format!("{}y", d / 365)
    }
}

fn age(obj: &Value) -> String {
    age_of(obj, "/metadata/creationTimestamp")
}

/// The human age of the RFC 3339 time at `pointer` in `obj`, `<unknown>` when absent.
pub(crate) fn age_of(obj: &Value, pointer: &str) -> String {
    let ts = obj.pointer(pointer).and_then(Value::as_str);
    match ts.and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok()) {
        Some(t) => human_duration((OffsetDateTime::now_utc() - t).whole_seconds()),
        None => "<unknown>".into(),
    }
}

pub(crate) fn col(name: &str, ty: &str, format: &str, description: &str, priority: u8) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": description, "priority": priority})
}

/// The column definitions for a resource.
pub fn columns(res: &Resource) -> Vec<Value> {
    let name = col(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        0,
    );
    let age = col(
        "Age",
        "string",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
        0,
    );
    if res.plural != "pods" {
        return crate::printers::columns(res.plural, name.clone(), age.clone())
            .unwrap_or_else(|| vec![name, age]);
    }
    vec![
        name,
        col(
            "Ready",
            "string",
            "",
            "The aggregate readiness state of this pod for accepting traffic.",
            0,
        ),
        col(
            "Status",
            "string",
            "",
            "The aggregate status of the containers in this pod.",
            0,
        ),
        col(
            "Restarts",
            "string",
            "",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            0,
        ),
        age,
        col(
            "IP",
            "string",
            "",
            "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
            1,
        ),
        col(
            "Node",
            "string",
            "",
            "NodeName is a request to schedule this pod onto a specific node. If it is non-empty, the scheduler simply schedules this pod onto that node, assuming that it fits resource requirements.",
            1,
        ),
        col(
            "Nominated Node",
            "string",
            "",
            "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot schedule right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
            1,
        ),
        col(
            "Readiness Gates",
            "string",
            "",
            "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
            1,
        ),
    ]
}

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

/// The pod's cells as kube-apiserver's printer computes them (the common cases).
fn pod_cells(pod: &Value) -> Vec<Value> {
    let total = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let statuses = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut ready = 0;
    let mut restarts = 0;
    let mut reason = match s(pod, "/status/reason") {
        "" => s(pod, "/status/phase").to_string(),
        r => r.to_string(),
    };
    for c in statuses.iter().rev() {
        restarts += c.get("restartCount").and_then(Value::as_i64).unwrap_or(0);
        if let Some(w) = c.pointer("/state/waiting/reason").and_then(Value::as_str) {
            reason = w.to_string();
        } else if let Some(t) = c.pointer("/state/terminated") {
            reason = match t.get("reason").and_then(Value::as_str) {
                Some(r) => r.to_string(),
                None => format!(
                    "ExitCode:{}",
                    t.get("exitCode").and_then(Value::as_i64).unwrap_or(0)
                ),
            };
        } else if c.get("ready").and_then(Value::as_bool) == Some(true)
            && c.pointer("/state/running").is_some()
        {
            ready += 1;
        }
    }
    if reason == "Running" || reason.is_empty() {
        reason = if reason.is_empty() {
            "Pending".into()
        } else {
            reason
        };
    }
    if pod.pointer("/metadata/deletionTimestamp").is_some() {
        reason = "Terminating".into();
    }
    let gates = pod
        .pointer("/spec/readinessGates")
        .and_then(Value::as_array);
    let gates = match gates {
        Some(g) if !g.is_empty() => {
            let conds = pod.pointer("/status/conditions").and_then(Value::as_array);
            let ok = g
                .iter()
                .filter(|gate| {
                    conds.is_some_and(|cs| {
                        cs.iter().any(|c| {
                            c.get("type") == gate.get("conditionType") && s(c, "/status") == "True"
                        })
                    })
                })
                .count();
            format!("{ok}/{}", g.len())
        }
        _ => "<none>".into(),
    };
    let or_none = |v: &str| {
        if v.is_empty() {
            "<none>".to_string()
        } else {
            v.to_string()
        }
    };
    vec![
        json!(s(pod, "/metadata/name")),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts),
        json!(age(pod)),
        json!(or_none(s(pod, "/status/podIP"))),
        json!(or_none(s(pod, "/spec/nodeName"))),
        json!(or_none(s(pod, "/status/nominatedNodeName"))),
        json!(gates),
    ]
}

/// One table row for `obj`.
pub fn row(res: &Resource, obj: &Value, include: Include) -> Value {
    let cells = if res.plural == "pods" {
        pod_cells(obj)
    } else {
        crate::printers::cells(res.plural, obj)
            .unwrap_or_else(|| vec![json!(s(obj, "/metadata/name")), json!(age(obj))])
    };
    let mut row = json!({"cells": cells});
    match include {
        Include::None => {}
        Include::Object => row["object"] = obj.clone(),
        Include::Metadata => {
            row["object"] = json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
            })
        }
    }
    row
}

/// A whole Table for `items`.
pub fn table(
    res: &Resource,
    version: &str,
    items: &[Value],
    rv: &str,
    cont: Option<&str>,
    include: Include,
) -> Value {
    let mut metadata = json!({"resourceVersion": rv});
    if let Some(c) = cont {
        metadata["continue"] = json!(c);
    }
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": metadata,
        "columnDefinitions": columns(res),
        "rows": items.iter().map(|o| row(res, o, include)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(125), "2m5s");
        assert_eq!(human_duration(3600 * 5 + 60), "5h1m");
        assert_eq!(human_duration(86400 * 3), "3d");
    }

    #[test]
    fn accept_parsing() {
        let a = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(wants_table(a), Some("v1"));
        assert_eq!(wants_table("application/json"), None);
    }

    #[test]
    fn pod_row() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 1, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        let res = crate::resources::find("", "v1", "pods").unwrap();
        let r = row(res, &pod, Include::None);
        assert_eq!(r["cells"][1], "1/2");
        assert_eq!(r["cells"][2], "CrashLoopBackOff");
        assert_eq!(r["cells"][3], 1);
        assert_eq!(r["cells"][6], "n1");
    }
}
