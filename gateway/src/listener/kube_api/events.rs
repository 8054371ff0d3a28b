//! `events` from the leaves' event reflectors (`k8s::leaf::events`), under core/v1 and
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
//! Nothing here calls a leaf. Each event carries the `leafgate.io/leaf` annotation. A
//! list's `resourceVersion` is an opaque token of each leaf's highest version among the
//! tenant's own events (another tenant's would be a side channel); a watch from it sends
//! what the stores hold above it, then follows the reflectors' changes as they come (no
//! polling; an event modified out of what the watch selects leaves it as `DELETED`, one
//! modified into it enters as `ADDED`). Deletions between a list and its watch are not replayed: events come and
//! go, and the next list is whole.
//!
//! Long file: events are served by their own list, get, watch and field-selector code,
//! beside the pods' and namespaces'; the one resource machinery that replaces all three
//! (issue 41) takes this file apart.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use leafgate_k8s_print::{Column, LEAF_ANNOTATION};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::caller::Caller;
use super::event_api::EventApi;
use super::fields::Fields;
use super::object_table::{self, leaf_column};
use super::query::query_value;
use super::select::LabelSelector;
use super::table::{self, Wanted};
use crate::k8s::leaf::events::{Change, ChangeKind};
use crate::k8s::names;
use crate::k8s::status::Status;
use crate::listener::client::Client;
use crate::listener::reply;
use crate::listener::sessions::{self, Reach};
use crate::proxy::{Body, InBody};
use crate::runtime::sessions::{Kind, Revoked, Scope};
use crate::snapshot::Snapshot;

/// The longest a watch stays open without `timeoutSeconds`, as kube-apiserver's
/// `--min-request-timeout` default.
const WATCH_MAX: Duration = Duration::from_secs(1800);

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

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
#[derive(Clone)]
struct Listed {
    leaf: Arc<str>,
    event: Arc<Value>,
}

impl Listed {
    fn namespace(&self) -> &str {
        text(&self.event, "/metadata/namespace")
    }

    fn name(&self) -> &str {
        text(&self.event, "/metadata/name")
    }

    fn version(&self) -> u64 {
        text(&self.event, "/metadata/resourceVersion")
            .parse()
            .unwrap_or(0)
    }

    fn key(&self) -> (&str, &str, &str) {
        (self.namespace(), self.name(), &self.leaf)
    }

    /// The event as `api` serves it, with the leaf annotation.
    fn json(&self, api: EventApi) -> Value {
        let mut v = (*self.event).clone();
        v["metadata"]["annotations"][LEAF_ANNOTATION] = json!(&*self.leaf);
        api.shape(v)
    }
}

/// What a list or watch selects, and the API it came in by.
struct Filter {
    api: EventApi,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: Fields,
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
        })
    }

    /// Whether the tenant may see `event` (by its own namespace) and the filter selects it.
    fn admits(&self, caller: &Caller<'_>, event: &Value) -> bool {
        let ns = text(event, "/metadata/namespace");
        if !caller.config.owns(ns) || self.namespace.as_deref().is_some_and(|want| want != ns) {
            return false;
        }
        let labels: Option<BTreeMap<String, String>> = event
            .pointer("/metadata/labels")
            .and_then(|l| serde_json::from_value(l.clone()).ok());
        self.labels.matches(labels.as_ref())
            && self
                .fields
                .matches(|k| field(event, self.api.core_field(k)))
    }
}

/// Per leaf, the highest `resourceVersion` among the tenant's events: what a list's token
/// carries and a watch resumes from.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Versions(BTreeMap<String, u64>);

impl Versions {
    fn token(&self) -> String {
        let text: Vec<String> = self.0.iter().map(|(l, v)| format!("{l}={v}")).collect();
        URL_SAFE_NO_PAD.encode(text.join(";"))
    }

    fn parse(token: &str) -> Option<Versions> {
        let text = String::from_utf8(URL_SAFE_NO_PAD.decode(token).ok()?).ok()?;
        let mut out = Versions::default();
        for pair in text.split(';').filter(|p| !p.is_empty()) {
            let (leaf, v) = pair.rsplit_once('=')?;
            out.0.insert(leaf.to_string(), v.parse().ok()?);
        }
        Some(out)
    }

    fn covers(&self, e: &Listed) -> bool {
        self.0
            .get(&*e.leaf)
            .is_some_and(|seen| e.version() <= *seen)
    }
}

/// The leaves `caller` may reach, by name.
fn leaves<'s>(
    snapshot: &'s Snapshot,
    caller: &Caller<'_>,
) -> Vec<(&'s String, &'s Arc<crate::k8s::Leaf>)> {
    let mut out: Vec<_> = snapshot
        .leaves
        .iter()
        .filter(|(name, _)| caller.config.may_reach(name))
        .collect();
    out.sort_by_key(|(name, _)| *name);
    out
}

/// The tenant's events `filter` selects, sorted by namespace, name and leaf, and the
/// leaves' versions over all of the tenant's events (the filter aside).
fn gather(snapshot: &Snapshot, caller: &Caller<'_>, filter: &Filter) -> (Vec<Listed>, Versions) {
    let mut versions = Versions::default();
    let mut out = Vec::new();
    for (name, leaf) in leaves(snapshot, caller) {
        let tag: Arc<str> = name.as_str().into();
        versions.0.entry(name.clone()).or_default();
        for event in leaf.events().list(filter.namespace.as_deref()) {
            let listed = Listed {
                leaf: tag.clone(),
                event,
            };
            if !caller.config.owns(listed.namespace()) {
                continue;
            }
            let v = versions.0.entry(name.clone()).or_default();
            *v = (*v).max(listed.version());
            if filter.admits(caller, &listed.event) {
                out.push(listed);
            }
        }
    }
    out.sort_by(|a, b| a.key().cmp(&b.key()));
    (out, versions)
}

/// A `continue` token: where the next page starts (after this namespace, name and leaf).
fn continue_token(last: &Listed) -> String {
    URL_SAFE_NO_PAD.encode(json!([last.namespace(), last.name(), &*last.leaf]).to_string())
}

fn continue_after(token: &str) -> Option<(String, String, String)> {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(token).ok()?).ok()
}

/// `GET /api/v1/events` and `/api/v1/namespaces/{ns}/events` (or the same under
/// `/apis/events.k8s.io/v1`, `api`): a list, or a watch with `watch=true`.
pub fn collection(
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
    let query = req.uri().query();
    let watching = matches!(query_value(query, "watch").as_deref(), Some("true" | "1"));
    let verb = if watching { "watch" } else { "list" };
    if let Some(ns) = namespace
        && !caller.config.owns(ns)
    {
        return caller.forbidden_in(api.group(), verb, "events", None, Some(ns));
    }
    let filter = match Filter::from_query(query, namespace, api) {
        Ok(f) => f,
        Err(e) => return reply::status(&Status::new(400, e)),
    };
    let wanted = match table::requested(req) {
        Ok(t) => t,
        Err(res) => return res,
    };
    if watching {
        return watch(req, client, snapshot, caller, filter, wanted);
    }
    let (mut events, versions) = gather(snapshot, caller, &filter);
    if let Some(token) = query_value(query, "continue").filter(|c| !c.is_empty()) {
        let Some(after) = continue_after(&token) else {
            return reply::status(&Status::new(
                400,
                "continue key is not valid: not a token this gateway gave",
            ));
        };
        let after = (after.0.as_str(), after.1.as_str(), after.2.as_str());
        events.retain(|e| e.key() > after);
    }
    let limit = match query_value(query, "limit").filter(|l| !l.is_empty()) {
        None => None,
        Some(l) => match l.parse::<i64>() {
            Ok(n) => usize::try_from(n).ok().filter(|n| *n > 0),
            Err(_) => {
                return reply::status(&Status::new(
                    400,
                    format!("limit: Invalid value: {l:?}: must be an integer"),
                ));
            }
        },
    };
    let mut metadata = json!({ "resourceVersion": versions.token() });
    if let Some(limit) = limit
        && events.len() > limit
    {
        events.truncate(limit);
        if let Some(last) = events.last() {
            metadata["continue"] = json!(continue_token(last));
        }
    }
    match wanted {
        Some(wanted) => reply::json(StatusCode::OK, &print(&events, api, wanted, metadata)),
        None => reply::json(
            StatusCode::OK,
            &json!({
                "kind": "EventList", "apiVersion": api.api_version(),
                "metadata": metadata,
                "items": events.iter().map(|e| e.json(api)).collect::<Vec<_>>(),
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
    let name = names::decode_segment(raw_name).unwrap_or_else(|| raw_name.to_string());
    let problems = names::path_segment_problems(&name);
    if !problems.is_empty() {
        return reply::status(&Status::new(
            400,
            format!("Name parameter invalid: {name:?}: {}", problems.join(";")),
        ));
    }
    if !caller.config.owns(namespace) {
        return caller.forbidden_in(api.group(), "get", "events", Some(&name), Some(namespace));
    }
    let wanted = match table::requested(req) {
        Ok(t) => t,
        Err(res) => return res,
    };
    let found = leaves(snapshot, caller).into_iter().find_map(|(leaf, l)| {
        l.events()
            .list(Some(namespace))
            .into_iter()
            .find(|e| text(e, "/metadata/name") == name)
            .map(|event| Listed {
                leaf: leaf.as_str().into(),
                event,
            })
    });
    let Some(listed) = found else {
        return reply::status(&Status::not_found_in(api.group(), "events", &name));
    };
    match wanted {
        Some(wanted) => {
            let metadata = json!({ "resourceVersion": listed.version().to_string() });
            reply::json(StatusCode::OK, &print(&[listed], api, wanted, metadata))
        }
        None => reply::json(StatusCode::OK, &listed.json(api)),
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
fn cells(e: &Listed, now: i64) -> Vec<Value> {
    let ev = &*e.event;
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
fn print(events: &[Listed], api: EventApi, wanted: Wanted, metadata: Value) -> Value {
    let now = now();
    let rows = events
        .iter()
        .map(|e| (cells(e, now), e.json(api)))
        .collect();
    object_table::table(wanted, &COLUMNS, rows, metadata)
}

/// A watch: the events the stores hold (all of them without a `resourceVersion`, those
/// above a list's token with one), then every change the leaves' reflectors make, in
/// their order, one JSON object a line (`Event`, or a one-row Table). With
/// `sendInitialEvents=true` and `allowWatchBookmarks=true` the initial events end with
/// the `k8s.io/initial-events-end` BOOKMARK. A watcher that falls more than the reflector's
/// change buffer behind gets kube-apiserver's `410 Expired` `ERROR` and must list again.
///
/// Each watch is a session (`runtime::sessions`): counted against the tenant's watch caps,
/// and ended with an `ERROR` event when a reload revokes the caller or the namespace.
fn watch(
    req: &Request<InBody>,
    client: &Client,
    snapshot: &Arc<Snapshot>,
    caller: &Caller<'_>,
    filter: Filter,
    wanted: Option<Wanted>,
) -> Response<Body> {
    let query = req.uri().query();
    let since = match query_value(query, "resourceVersion").filter(|v| !v.is_empty() && v != "0") {
        Some(token) => match Versions::parse(&token) {
            Some(v) => Some(v),
            None => {
                return reply::status(&Status::with_reason(
                    410,
                    "Expired",
                    format!("too old resource version: {token}"),
                ));
            }
        },
        None => None,
    };
    let flag = |k| matches!(query_value(query, k).as_deref(), Some("true" | "1"));
    let initial_end = flag("sendInitialEvents") && flag("allowWatchBookmarks");
    let timeout = query_value(query, "timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(WATCH_MAX, |s| Duration::from_secs(s).min(WATCH_MAX));
    let scope = match &filter.namespace {
        Some(ns) => Scope::Namespace(ns.clone()),
        None => Scope::Tenant(caller.config.namespaces.clone()),
    };
    let reach = Reach { scope, leaf: None };
    let session = match sessions::open(
        client,
        req.headers(),
        &snapshot.config,
        caller.config,
        reach,
        Kind::Watch,
    ) {
        Ok(s) => s,
        Err(res) => return res,
    };
    // Each leaf's current events and its change feed, taken together: nothing between.
    let mut initial = Vec::new();
    let mut versions = Versions::default();
    let mut feeds = Vec::new();
    for (name, leaf) in leaves(snapshot, caller) {
        let tag: Arc<str> = name.as_str().into();
        let (events, rx) = leaf.events().list_and_follow(filter.namespace.as_deref());
        versions.0.entry(name.clone()).or_default();
        for event in events {
            let listed = Listed {
                leaf: tag.clone(),
                event,
            };
            if !filter.admits(caller, &listed.event) {
                continue;
            }
            let v = versions.0.entry(name.clone()).or_default();
            *v = (*v).max(listed.version());
            if since.as_ref().is_none_or(|s| !s.covers(&listed)) {
                initial.push(listed);
            }
        }
        feeds.push(follow(tag, rx));
    }
    initial.sort_by(|a, b| a.key().cmp(&b.key()));
    let tenant_config = caller.config.clone();
    let tenant = caller.tenant.clone();
    let user = caller.user.clone();
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let caller = Caller {
            user,
            config: &tenant_config,
            tenant,
        };
        for e in initial {
            if tx
                .send(line("ADDED", &e, filter.api, wanted))
                .await
                .is_err()
            {
                return;
            }
        }
        if initial_end {
            let bookmark = json!({
                "type": "BOOKMARK",
                "object": {
                    "kind": "Event", "apiVersion": filter.api.api_version(),
                    "metadata": {
                        "resourceVersion": versions.token(),
                        "annotations": { "k8s.io/initial-events-end": "true" },
                    },
                },
            });
            if tx.send(Bytes::from(format!("{bookmark}\n"))).await.is_err() {
                return;
            }
        }
        let mut changes = futures_util::stream::select_all(feeds);
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let change = tokio::select! {
                change = changes.next() => change,
                _ = tokio::time::sleep_until(deadline) => return,
                _ = tx.closed() => return,
                _ = session.token().cancelled() => {
                    // Revoked: the reason as kube-apiserver's ERROR event, then the end.
                    if let Some(why) = session.revoked() {
                        let status = match why {
                            Revoked::Unauthenticated => Status::unauthorized(),
                            Revoked::Forbidden { namespace, .. } => Status::forbidden_in(
                                filter.api.group(), &caller.user, "watch", "events", None,
                                namespace.as_deref().or(filter.namespace.as_deref()),
                            ),
                        };
                        let error = json!({ "type": "ERROR", "object": status.to_json() });
                        let _ = tokio::time::timeout(
                            Duration::from_secs(1),
                            tx.send(Bytes::from(format!("{error}\n"))),
                        )
                        .await;
                    }
                    return;
                }
            };
            let next = match change {
                // A leaf's reflector went (a reload rebuilt it): this watch ends cleanly
                // and the client watches again.
                None | Some(Err(broadcast::error::RecvError::Closed)) => return,
                Some(Err(broadcast::error::RecvError::Lagged(_))) => {
                    let status = Status::with_reason(
                        410,
                        "Expired",
                        "too old resource version: the watch fell behind the leaf's events; list again",
                    );
                    let error = json!({ "type": "ERROR", "object": status.to_json() });
                    let _ = tx.send(Bytes::from(format!("{error}\n"))).await;
                    return;
                }
                Some(Ok((leaf, change))) => (leaf, change),
            };
            let (leaf, change) = next;
            let Some(kind) = seen_as(&change, &filter, &caller) else {
                continue;
            };
            // An event modified out of the selection leaves as it was, with the change's
            // version, as kube-apiserver's watch cache sends it.
            let event = match (change.prev, kind) {
                (Some(prev), "DELETED") if change.kind == ChangeKind::Modified => {
                    let mut prev = (*prev).clone();
                    prev["metadata"]["resourceVersion"] =
                        change.event["metadata"]["resourceVersion"].clone();
                    Arc::new(prev)
                }
                _ => change.event,
            };
            let listed = Listed { leaf, event };
            if tx
                .send(line(kind, &listed, filter.api, wanted))
                .await
                .is_err()
            {
                return;
            }
        }
    });
    let frames = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, crate::proxy::BoxError>(Frame::data(b)), rx))
    });
    let mut res = Response::new(StreamBody::new(frames).boxed_unsync());
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// How a watch with `filter` sees `change`: an event modified into what it selects is
/// `ADDED`, one modified out of it `DELETED`, as kube-apiserver's watch cache tells them.
fn seen_as(change: &Change, filter: &Filter, caller: &Caller<'_>) -> Option<&'static str> {
    let now = filter.admits(caller, &change.event);
    let before = change.prev.as_deref().map(|p| filter.admits(caller, p));
    match (change.kind, before) {
        (ChangeKind::Modified, Some(before)) => match (before, now) {
            (true, true) => Some("MODIFIED"),
            (false, true) => Some("ADDED"),
            (true, false) => Some("DELETED"),
            (false, false) => None,
        },
        (kind, _) => now.then_some(kind.as_str()),
    }
}

type Followed = Result<(Arc<str>, Change), broadcast::error::RecvError>;

/// A leaf's change feed as a stream, each change tagged with the leaf; it ends after a
/// `Closed` or `Lagged` error, which it yields.
fn follow(
    leaf: Arc<str>,
    rx: broadcast::Receiver<Change>,
) -> std::pin::Pin<Box<dyn futures_util::Stream<Item = Followed> + Send>> {
    Box::pin(futures_util::stream::unfold(Some(rx), move |rx| {
        let leaf = leaf.clone();
        async move {
            let mut rx = rx?;
            match rx.recv().await {
                Ok(change) => Some((Ok((leaf, change)), Some(rx))),
                Err(e) => Some((Err(e), None)),
            }
        }
    }))
}

/// One watch line: `{"type": kind, "object": ...}` and a newline.
fn line(kind: &str, e: &Listed, api: EventApi, wanted: Option<Wanted>) -> Bytes {
    let object = match wanted {
        Some(wanted) => print(
            std::slice::from_ref(e),
            api,
            wanted,
            json!({ "resourceVersion": e.version().to_string() }),
        ),
        None => e.json(api),
    };
    Bytes::from(format!("{}\n", json!({ "type": kind, "object": object })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(event: Value) -> Listed {
        Listed {
            leaf: Arc::from("leaf-1"),
            event: Arc::new(event),
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

    #[test]
    fn continue_tokens_round_trip() {
        let e = listed(json!({ "metadata": { "name": "a.1", "namespace": "apps" } }));
        let t = continue_token(&e);
        assert_eq!(
            continue_after(&t),
            Some(("apps".into(), "a.1".into(), "leaf-1".into()))
        );
        assert_eq!(continue_after("nope!"), None);
    }
}
