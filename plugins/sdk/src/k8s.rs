//! Reading Kubernetes objects from the JSON text the gateway passes, and printing them the
//! way kubectl does (ages, timestamps, the pod table).
//!
//! The Pod shape and the printer are `leafgate-k8s-print`'s, the crate the gateway's
//! built-in table uses too, re-exported here so a plugin prints exactly what the gateway
//! would. Only the fields plugins commonly read are typed; everything is optional because
//! objects arrive partial (a list may omit status). Unknown fields are ignored, not errors:
//! the API grows and a plugin must keep working.

use serde::Deserialize;
use serde::de::DeserializeOwned;

pub use leafgate_k8s_print::pod::{
    ContainerState, ContainerStatus, LEAF_ANNOTATION, Named, ObjectMeta, Pod, PodCondition, PodIp,
    PodSpec, PodStatus, ReadinessGate, StateDetail,
};
pub use leafgate_k8s_print::summary::{Summary, summarize};
pub use leafgate_k8s_print::table::{self, Column, POD_COLUMNS, PodRow};
pub use leafgate_k8s_print::time::{human_age, parse_timestamp};

/// Reads one object (or any JSON shape) into `T`.
pub fn from_json<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("not a valid object: {e}"))
}

/// Reads the JSON array of objects a table-formatter receives. A `List` object
/// (`{"kind":"PodList","items":[...]}`) is accepted too.
pub fn list_from_json<T: DeserializeOwned>(text: &str) -> Result<Vec<T>, String> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Shape<T> {
        Array(Vec<T>),
        List { items: Vec<T> },
    }
    match serde_json::from_str::<Shape<T>>(text) {
        Ok(Shape::Array(v)) | Ok(Shape::List { items: v }) => Ok(v),
        Err(e) => Err(format!("not a JSON array of objects: {e}")),
    }
}

/// Seconds since the Unix epoch now, from WASI's wall clock (the printer reads no clock:
/// pass this to `PodRow::new`).
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_arrays_or_list_objects() {
        let array: Vec<Pod> = list_from_json(r#"[{"metadata":{"name":"a"}}]"#).unwrap();
        let list: Vec<Pod> =
            list_from_json(r#"{"kind":"PodList","items":[{"metadata":{"name":"a"}}]}"#).unwrap();
        assert_eq!(array[0].metadata.name, "a");
        assert_eq!(list[0].metadata.name, "a");
        assert!(list_from_json::<Pod>(r#"{"metadata":{}}"#).is_err());
    }
}
