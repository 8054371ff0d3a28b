//! `meta.k8s.io` Tables of objects kept as raw JSON (events, namespaces): the columns and
//! cells their printers made, each row's `object` as `includeObject` asks (`Metadata` by
//! default, so `-A` prints NAMESPACE and `--show-labels` works).
//!
//! It shapes the Table only; the printers are the resources' modules'. Pods have their own
//! (`table`: plugins and the shared pod printer).

use leafgate_k8s_print::Column;
use serde_json::{Value, json};

use super::json_out::{Include, Wanted};

/// The Table of `rows` (cells, object), `columns` their definitions, `metadata` the list's
/// (`resourceVersion`, `continue`).
pub fn table(
    wanted: Wanted,
    columns: &(impl serde::Serialize + ?Sized),
    rows: Vec<(Vec<Value>, Value)>,
    metadata: Value,
) -> Value {
    let rows: Vec<Value> = rows
        .into_iter()
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
    json!({
        "kind": "Table",
        "apiVersion": wanted.api_version,
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// The column leafgate adds after kube-apiserver's own: which leaf an object is in.
pub const fn leaf_column(description: &'static str, priority: i32) -> Column {
    Column {
        name: "Leaf",
        kind: "string",
        format: "",
        description,
        priority,
    }
}

/// `translateTimestampSince`: the age of the RFC 3339 time at `pointer`, `<unknown>` when
/// absent or unreadable.
pub fn age(object: &Value, pointer: &str, now: i64) -> String {
    crate::k8s::feed::at(object, pointer)
        .and_then(Value::as_str)
        .and_then(leafgate_k8s_print::parse_timestamp)
        .map_or_else(
            || "<unknown>".to_string(),
            |t| leafgate_k8s_print::human_age(now - t),
        )
}
