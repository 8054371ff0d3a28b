//! `meta.k8s.io` Table rendering, with kube-apiserver's pod columns, custom resources'
//! printer columns (`crd`) and NAME/AGE for the rest. Owns only the shape of the table;
//! listing and filtering happen before.

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

/// The human age of `obj` (its `metadata.creationTimestamp`), `<unknown>` without one.
pub(crate) fn age(obj: &Value) -> String {
    age_of(obj, "/metadata/creationTimestamp")
}

/// The string at `p` in `v`, empty when absent: what a printer reads of an unset field.
pub(crate) fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

/// The list at `p` in `v`, empty when absent.
pub(crate) fn list<'a>(v: &'a Value, p: &str) -> &'a [Value] {
    v.pointer(p)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The RFC 3339 time at `p` in `v`.
pub(crate) fn when(v: &Value, p: &str) -> Option<OffsetDateTime> {
    v.pointer(p)
        .and_then(Value::as_str)
        .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
}

/// The load balancer's ingress points at `status.loadBalancer.ingress` as the printers'
/// stringers collect them: each one's IP, else its host name, as a sorted set.
pub(crate) fn load_balancer_ingress(obj: &Value) -> Vec<String> {
    let mut set = std::collections::BTreeSet::new();
    for lb in list(obj, "/status/loadBalancer/ingress") {
        match (s(lb, "/ip"), s(lb, "/hostname")) {
            ("", "") => {}
            ("", h) => {
                set.insert(h.to_string());
            }
            (ip, _) => {
                set.insert(ip.to_string());
            }
        }
    }
    set.into_iter().collect()
}

/// The human age of the RFC 3339 time at `pointer` in `obj`, `<unknown>` when absent.
pub(crate) fn age_of(obj: &Value, pointer: &str) -> String {
    match when(obj, pointer) {
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
    if res.crd {
        return crate::crd::columns(res, name);
    }
    crate::printers::columns(res.plural, name.clone(), age.clone())
        .unwrap_or_else(|| vec![name, age])
}

/// One table row for `obj`.
pub fn row(res: &Resource, obj: &Value, include: Include) -> Value {
    let cells = if res.crd {
        crate::crd::cells(res, obj)
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
}
