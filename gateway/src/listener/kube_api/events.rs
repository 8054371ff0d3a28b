//! `events` from the leaves' event feeds (`k8s::leaf::events`), under core/v1 and
//! `events.k8s.io/v1` alike (`event_api`: the same objects in each API's shape): list (one
//! namespace, or every namespace the tenant owns), get, and watch, as `Event`/`EventList`
//! JSON or as kube-apiserver's `printEvent` Table with a LEAF column.
//!
//! What `kubectl describe` and `kubectl events` send is served as kube-apiserver serves
//! it (reference section 12): the field selectors events index (`involvedObject.*`,
//! `reason`, `reportingComponent`, `source`, `type`, `metadata.name`/`namespace`; anything
//! else is its 400), `limit` with a `continue` token. Events are scoped to a tenant by
//! their own namespace, as RBAC scopes them: an event in the tenant's namespace is its
//! (whatever object it names), one elsewhere never is, under any selector.
//!
//! Nothing here calls a leaf; lists, pages and watches are the front's one machinery
//! (`list`, `page`, `watch`), as for pods: a list's `resourceVersion` is the feeds'
//! token, and a watch from it sends exactly the changes since, deletions (the TTL's and
//! the cap's included) as `DELETED`. Each event carries the `leafgate.io/leaf` annotation.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use http::{Method, Request, Response, StatusCode};
use leafgate_k8s_print::Column;
use serde_json::{Value, json};

use super::caller::Caller;
use super::event_api::EventApi;
use super::fields::Fields;
use super::list::{self, Listing};
use super::listed::Listed;
use super::object_table::{self, leaf_column};
use super::query::query_value;
use super::resource::{self, Names, Resource, Writing};
use super::select::LabelSelector;
use super::table::{self, Wanted};
use crate::k8s::Leaf;
use crate::k8s::feed::text;
use crate::k8s::feed::{Feed, Object, RawObject};
use crate::k8s::status::Status;
use crate::listener::client::Client;
use crate::listener::reply;
use crate::proxy::{Body, InBody};
use crate::snapshot::Snapshot;

/// An event's value for a selectable field, as `ToSelectableFields` gives it: `source`
/// is `source.component`, else `reportingComponent`.
fn field(event: &Value, key: &str) -> String {
    let value = match key {
        "metadata.name" => text(event, "/metadata/name"),
        "metadata.namespace" => text(event, "/metadata/namespace"),
        "reason" => text(event, "/reason"),
        "type" => text(event, "/type"),
        "reportingComponent" => text(event, "/reportingComponent"),
        "source" => match text(event, "/source/component") {
            "" => text(event, "/reportingComponent"),
            c => c,
        },
        other => match other.strip_prefix("involvedObject.") {
            Some(sub) => event
                .get("involvedObject")
                .and_then(|o| o.get(sub))
                .and_then(Value::as_str)
                .unwrap_or(""),
            None => "",
        },
    };
    value.to_string()
}

/// One leaf's copy of an event.
type Copy = Listed<RawObject>;

/// The event as `api` serves it (the leaf annotation was stamped on arrival), with
/// `rv` as its `resourceVersion` when given (a watch's token).
fn shaped(e: &Copy, api: EventApi, rv: Option<&str>) -> Value {
    let mut v = e.object.json().clone();
    if let Some(rv) = rv {
        v["metadata"]["resourceVersion"] = json!(rv);
    }
    api.shape(v)
}

/// Events' names under `api`.
fn names(api: EventApi) -> Names {
    Names {
        group: api.group(),
        resource: "events",
        kind: "Event",
        api_version: api.api_version(),
    }
}

/// What a list or watch selects, the API it came in by, and the Table asked for.
struct Filter {
    api: EventApi,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: Fields,
    wanted: Option<Wanted>,
}

impl Filter {
    fn from_query(
        query: Option<&str>,
        namespace: Option<&str>,
        api: EventApi,
    ) -> Result<Filter, String> {
        Ok(Filter {
            api,
            namespace: namespace.map(str::to_string),
            labels: LabelSelector::parse(&query_value(query, "labelSelector").unwrap_or_default())?,
            fields: Fields::parse(
                &query_value(query, "fieldSelector").unwrap_or_default(),
                &api.selectable(),
            )?,
            wanted: None,
        })
    }
}

impl Resource for Filter {
    type Object = RawObject;

    fn names(&self) -> Names {
        names(self.api)
    }

    fn feed(&self, leaf: &Leaf) -> Option<Arc<Feed<RawObject>>> {
        Some(leaf.events().feed().clone())
    }

    fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    fn selects(&self, event: &RawObject) -> bool {
        let json = event.json();
        self.namespace
            .as_deref()
            .is_none_or(|want| want == event.namespace())
            && self.labels.matches_with(|k| event.label(k))
            && self.fields.matches(|k| field(json, self.api.core_field(k)))
    }

    fn write<'a>(
        &'a self,
        _caller: &'a Caller<'a>,
        kind: &'static str,
        leaf: &'a Arc<str>,
        event: &'a Arc<RawObject>,
        rv: &'a str,
        out: &'a mut Vec<u8>,
    ) -> Writing<'a> {
        let listed = Listed {
            leaf: leaf.clone(),
            object: event.clone(),
        };
        let object = match self.wanted {
            Some(wanted) => print(
                std::slice::from_ref(&listed),
                self.api,
                wanted,
                json!({ "resourceVersion": rv }),
            ),
            None => shaped(&listed, self.api, Some(rv)),
        };
        resource::push_line(out, &json!({ "type": kind, "object": object }));
        Box::pin(std::future::ready(()))
    }
}

/// `GET /api/v1/events` and `/api/v1/namespaces/{ns}/events` (or the same under
/// `/apis/events.k8s.io/v1`, `api`): a list, or a watch with `watch=true`
/// (`list::collection`).
pub async fn collection(
    req: &Request<InBody>,
    client: &Client,
    snapshot: &Arc<Snapshot>,
    caller: &Caller<'_>,
    namespace: Option<&str>,
    api: EventApi,
) -> Response<Body> {
    if req.method() != Method::GET {
        return reply::status(&Status::method_not_allowed());
    }
    let parse = || {
        let mut filter = Filter::from_query(req.uri().query(), namespace, api)
            .map_err(|e| Box::new(reply::status(&Status::new(400, e))))?;
        filter.wanted = table::requested(req).map_err(Box::new)?;
        Ok(filter)
    };
    let answer = async |filter: Filter, listing| list_answer(&filter, listing);
    let names = (names(api), namespace);
    list::collection(req, client, snapshot, caller, names, false, parse, answer).await
}

/// A page of events as a Table or an `EventList`, in `filter`'s API.
fn list_answer(filter: &Filter, listing: Listing<RawObject>) -> Response<Body> {
    let api = filter.api;
    let mut metadata = json!({ "resourceVersion": listing.token });
    if let Some((token, remaining)) = listing.next {
        metadata["continue"] = json!(token);
        metadata["remainingItemCount"] = json!(remaining);
    }
    let events = &listing.items;
    match filter.wanted {
        Some(wanted) => reply::json(StatusCode::OK, &print(events, api, wanted, metadata)),
        None => reply::json(
            StatusCode::OK,
            &json!({
                "kind": "EventList", "apiVersion": api.api_version(),
                "metadata": metadata,
                "items": events.iter().map(|e| shaped(e, api, None)).collect::<Vec<_>>(),
            }),
        ),
    }
}

/// `GET /api/v1/namespaces/{ns}/events/{name}` (or under `/apis/events.k8s.io/v1`,
/// `api`): the event, from the first leaf (by name) holding it.
pub fn one(
    req: &Request<InBody>,
    snapshot: &Snapshot,
    caller: &Caller<'_>,
    (namespace, raw_name): (&str, &str),
    api: EventApi,
) -> Response<Body> {
    if req.method() != Method::GET {
        return reply::status(&Status::method_not_allowed());
    }
    let name = match list::named(caller, names(api), namespace, raw_name) {
        Ok(name) => name,
        Err(res) => return res,
    };
    let wanted = match table::requested(req) {
        Ok(t) => t,
        Err(res) => return res,
    };
    let feed = |l: &Leaf| Some(l.events().feed()).cloned();
    let Some(listed) = list::first_copy(snapshot, caller, feed, (namespace, &name)) else {
        return reply::status(&Status::not_found_in(api.group(), "events", &name));
    };
    match wanted {
        Some(wanted) => {
            let metadata = json!({ "resourceVersion": listed.version() });
            reply::json(StatusCode::OK, &print(&[listed], api, wanted, metadata))
        }
        None => reply::json(StatusCode::OK, &shaped(&listed, api, None)),
    }
}

/// kube-apiserver's event columns (`printers.go`, the wide ones at priority 1), then LEAF.
const COLUMNS: [Column; 11] = [
    col(
        "Last Seen",
        "",
        "The time at which the most recent occurrence of this event was recorded.",
        0,
    ),
    col(
        "Type",
        "",
        "Type of this event (Normal, Warning), new types could be added in the future",
        0,
    ),
    col(
        "Reason",
        "",
        "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
        0,
    ),
    col("Object", "", "The object that this event is about.", 0),
    col(
        "Subobject",
        "",
        "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].",
        1,
    ),
    col(
        "Source",
        "",
        "The component reporting this event. Should be a short machine understandable string.",
        1,
    ),
    col(
        "Message",
        "",
        "A human-readable description of the status of this operation.",
        0,
    ),
    col(
        "First Seen",
        "",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        1,
    ),
    col(
        "Count",
        "",
        "The number of times this event has occurred.",
        1,
    ),
    col("Name", "name", "Name must be unique within a namespace.", 1),
    leaf_column("The leaf cluster the event was recorded in (leafgate).", 0),
];

const fn col(
    name: &'static str,
    format: &'static str,
    description: &'static str,
    priority: i32,
) -> Column {
    Column {
        name,
        kind: "string",
        format,
        description,
        priority,
    }
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `printEvent`'s cells (kube-apiserver prints wide server-side), then the leaf.
fn cells(e: &Copy, now: i64) -> Vec<Value> {
    let ev = e.object.json();
    let first = match text(ev, "/firstTimestamp") {
        "" => object_table::age(ev, "/eventTime", now),
        _ => object_table::age(ev, "/firstTimestamp", now),
    };
    let mut last = match text(ev, "/lastTimestamp") {
        "" => first.clone(),
        _ => object_table::age(ev, "/lastTimestamp", now),
    };
    let mut count = ev.get("count").and_then(Value::as_i64).unwrap_or(0);
    if let Some(series) = ev.get("series").filter(|s| s.is_object()) {
        last = object_table::age(series, "/lastObservedTime", now);
        count = series.get("count").and_then(Value::as_i64).unwrap_or(0);
    } else if count == 0 {
        // Singleton events have no count in the new API.
        count = 1;
    }
    let kind = text(ev, "/involvedObject/kind").to_lowercase();
    let target = match text(ev, "/involvedObject/name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let component = match text(ev, "/source/component") {
        "" => text(ev, "/reportingComponent"),
        c => c,
    };
    let instance = match text(ev, "/source/host") {
        "" => text(ev, "/reportingInstance"),
        h => h,
    };
    let source = match instance {
        "" => component.to_string(),
        i => format!("{component}, {i}"),
    };
    vec![
        json!(last),
        json!(text(ev, "/type")),
        json!(text(ev, "/reason")),
        json!(target),
        json!(text(ev, "/involvedObject/fieldPath")),
        json!(source),
        json!(text(ev, "/message").trim()),
        json!(first),
        json!(count),
        json!(e.name()),
        json!(&*e.leaf),
    ]
}

/// The Table of `events`, each row's object in `api`'s shape (the cells are the same under
/// either API: kube-apiserver prints its one internal object).
fn print(events: &[Copy], api: EventApi, wanted: Wanted, metadata: Value) -> Value {
    let now = now();
    let rows = events
        .iter()
        .map(|e| (cells(e, now), shaped(e, api, None)))
        .collect();
    object_table::table(wanted, &COLUMNS, rows, metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(event: Value) -> Copy {
        Listed {
            leaf: Arc::from("leaf-1"),
            object: Arc::new(RawObject::new(event, "v1", "Event", "leaf-1")),
        }
    }

    #[test]
    fn cells_follow_print_event() {
        let e = listed(json!({
            "metadata": { "name": "web.1", "namespace": "apps" },
            "involvedObject": { "kind": "Pod", "name": "web", "fieldPath": "spec.containers{app}" },
            "reason": "Pulled", "type": "Normal", "message": "pulled\n",
            "source": { "component": "kubelet", "host": "node-1" },
            "firstTimestamp": "2024-01-01T00:00:00Z",
            "lastTimestamp": "2024-01-01T00:01:00Z",
            "count": 3,
        }));
        let now = leafgate_k8s_print::parse_timestamp("2024-01-01T00:02:00Z").unwrap();
        let c = cells(&e, now);
        assert_eq!(
            Value::Array(c.clone()),
            json!([
                "60s",
                "Normal",
                "Pulled",
                "pod/web",
                "spec.containers{app}",
                "kubelet, node-1",
                "pulled",
                "2m",
                3,
                "web.1",
                "leaf-1"
            ])
        );
        assert_eq!(c.len(), COLUMNS.len());
        // The new API's shape: eventTime, no count, reportingController.
        let e = listed(json!({
            "metadata": { "name": "x" },
            "involvedObject": { "kind": "Node" },
            "eventTime": "2024-01-01T00:01:30.000000Z",
            "reportingComponent": "sched", "reportingInstance": "s-1",
        }));
        let c = cells(&e, now);
        assert_eq!((c[0].clone(), c[3].clone()), (json!("30s"), json!("node")));
        assert_eq!(
            (c[5].clone(), c[8].clone()),
            (json!("sched, s-1"), json!(1))
        );
    }

    #[test]
    fn selectable_fields_read_as_kube_apiserver() {
        let e = json!({
            "metadata": { "name": "n", "namespace": "apps" },
            "involvedObject": { "kind": "Pod", "name": "web", "uid": "u-1", "namespace": "apps" },
            "reason": "Started", "type": "Normal", "reportingComponent": "kubelet",
        });
        let f = Fields::parse(
            "involvedObject.name=web,involvedObject.uid=u-1,involvedObject.kind=Pod,source=kubelet,type!=Warning",
            &EventApi::Core.selectable(),
        )
        .unwrap();
        assert!(f.matches(|k| field(&e, k)));
        let f = Fields::parse("involvedObject.fieldPath=x", &EventApi::Core.selectable()).unwrap();
        assert!(!f.matches(|k| field(&e, k)));
        assert_eq!(
            Fields::parse("spec.nodeName=x", &EventApi::Core.selectable()).unwrap_err(),
            "field label not supported: spec.nodeName"
        );
    }
}
