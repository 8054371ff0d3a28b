//! The two APIs events are served under: core/v1 `events`, the objects as the leaves store
//! them, and `events.k8s.io/v1` `events`, the same objects in the newer API's shape.
//! kube-apiserver stores one object and converts it per API
//! (`pkg/apis/events/v1/conversion.go`); so does this: `involvedObject` reads as
//! `regarding`, `message` as `note`, `source` as `deprecatedSource`, and the new API's field
//! labels (`regarding.*`, `reportingController`) select on the core fields they stand for.
//!
//! It converts and names; listing, watching and printing are `events`'.

use serde_json::{Map, Value, json};

/// The API a request for events came in by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventApi {
    /// `/api/v1/.../events`.
    Core,
    /// `/apis/events.k8s.io/v1/.../events`.
    EventsV1,
}

/// The field labels `events.k8s.io/v1` selects on, each with the core field it is
/// (`AddFieldLabelConversionsForEvent`).
const EVENTS_V1_FIELDS: &[(&str, &str)] = &[
    ("metadata.name", "metadata.name"),
    ("metadata.namespace", "metadata.namespace"),
    ("regarding.kind", "involvedObject.kind"),
    ("regarding.namespace", "involvedObject.namespace"),
    ("regarding.name", "involvedObject.name"),
    ("regarding.uid", "involvedObject.uid"),
    ("regarding.apiVersion", "involvedObject.apiVersion"),
    (
        "regarding.resourceVersion",
        "involvedObject.resourceVersion",
    ),
    ("regarding.fieldPath", "involvedObject.fieldPath"),
    ("reason", "reason"),
    ("reportingController", "reportingComponent"),
    ("type", "type"),
];

/// The fields kube-apiserver indexes for core/v1 events (`pkg/registry/core/event/strategy.go`
/// `ToSelectableFields`).
const CORE_FIELDS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

impl EventApi {
    pub fn api_version(self) -> &'static str {
        match self {
            EventApi::Core => "v1",
            EventApi::EventsV1 => "events.k8s.io/v1",
        }
    }

    /// The API group, as a `Forbidden` names it.
    pub fn group(self) -> &'static str {
        match self {
            EventApi::Core => "",
            EventApi::EventsV1 => "events.k8s.io",
        }
    }

    /// The field labels a selector may name under this API.
    pub fn selectable(self) -> Vec<&'static str> {
        match self {
            EventApi::Core => CORE_FIELDS.to_vec(),
            EventApi::EventsV1 => EVENTS_V1_FIELDS.iter().map(|(label, _)| *label).collect(),
        }
    }

    /// The core field a selectable `label` of this API reads.
    pub fn core_field(self, label: &str) -> &str {
        match self {
            EventApi::Core => label,
            EventApi::EventsV1 => EVENTS_V1_FIELDS
                .iter()
                .find(|(l, _)| *l == label)
                .map_or(label, |(_, core)| core),
        }
    }

    /// A core/v1 event (as a leaf stores it) in this API's shape.
    pub fn shape(self, core: Value) -> Value {
        match self {
            EventApi::Core => core,
            EventApi::EventsV1 => events_v1(core),
        }
    }
}

/// `Convert_core_Event_To_v1_Event`: the new API's fields from the core ones. Times the
/// event does not carry are `null`, as kube-apiserver writes a zero time; a field neither
/// API has is dropped, as a conversion drops it.
fn events_v1(core: Value) -> Value {
    let Value::Object(mut core) = core else {
        return core;
    };
    let mut out = Map::new();
    out.insert("kind".into(), json!("Event"));
    out.insert("apiVersion".into(), json!("events.k8s.io/v1"));
    let mut take = |from: &str, to: &str, default: Option<Value>| {
        if let Some(v) = core.remove(from).or(default) {
            out.insert(to.into(), v);
        }
    };
    take("metadata", "metadata", Some(json!({})));
    take("eventTime", "eventTime", Some(Value::Null));
    take("series", "series", None);
    take("reportingComponent", "reportingController", None);
    take("reportingInstance", "reportingInstance", None);
    take("action", "action", None);
    take("reason", "reason", None);
    take("involvedObject", "regarding", Some(json!({})));
    take("related", "related", None);
    take("message", "note", None);
    take("type", "type", None);
    take("source", "deprecatedSource", Some(json!({})));
    take(
        "firstTimestamp",
        "deprecatedFirstTimestamp",
        Some(Value::Null),
    );
    take(
        "lastTimestamp",
        "deprecatedLastTimestamp",
        Some(Value::Null),
    );
    take("count", "deprecatedCount", None);
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_event_reads_in_the_new_apis_shape() {
        let core = json!({
            "kind": "Event", "apiVersion": "v1",
            "metadata": { "name": "web.1", "namespace": "apps" },
            "involvedObject": { "kind": "Pod", "name": "web", "namespace": "apps" },
            "reason": "Pulled", "message": "pulled", "type": "Normal",
            "source": { "component": "kubelet", "host": "node-1" },
            "firstTimestamp": "2024-01-01T00:00:00Z",
            "lastTimestamp": "2024-01-01T00:01:00Z",
            "count": 3,
            "reportingComponent": "kubelet", "reportingInstance": "node-1",
        });
        assert_eq!(
            EventApi::EventsV1.shape(core.clone()),
            json!({
                "kind": "Event", "apiVersion": "events.k8s.io/v1",
                "metadata": { "name": "web.1", "namespace": "apps" },
                "eventTime": null,
                "reportingController": "kubelet", "reportingInstance": "node-1",
                "reason": "Pulled", "type": "Normal", "note": "pulled",
                "regarding": { "kind": "Pod", "name": "web", "namespace": "apps" },
                "deprecatedSource": { "component": "kubelet", "host": "node-1" },
                "deprecatedFirstTimestamp": "2024-01-01T00:00:00Z",
                "deprecatedLastTimestamp": "2024-01-01T00:01:00Z",
                "deprecatedCount": 3,
            })
        );
        assert_eq!(EventApi::Core.shape(core.clone()), core);
    }

    #[test]
    fn the_new_apis_field_labels_select_on_the_core_fields() {
        let api = EventApi::EventsV1;
        assert_eq!(api.core_field("regarding.name"), "involvedObject.name");
        assert_eq!(api.core_field("reportingController"), "reportingComponent");
        assert!(!api.selectable().contains(&"involvedObject.name"));
        assert!(!api.selectable().contains(&"source"));
        assert!(EventApi::Core.selectable().contains(&"source"));
    }
}
