//! Pods from the leaves' reflector stores: list (one namespace, or every
//! namespace the tenant owns), get, and watch, as `Pod`/`PodList` JSON or as a Table.
//!
//! Nothing here calls a leaf: a list is the union of the stores of the leaves the tenant
//! may reach, each pod annotated with the leaf it came from (`leafgate.io/leaf`). Its
//! `resourceVersion` is an opaque token of each leaf's highest version among the tenant's
//! own pods (never another tenant's: it would move when their pods change, a side
//! channel), which a watch resumes from. The stores have no change feed, so a watch compares the stores with what
//! it last sent every [`WATCH_TICK`]: in-memory work, no request to any leaf.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::{Frame, Incoming};
use serde_json::{Value, json};

use super::caller::Caller;
use super::listed::Listed;
use super::page::Page;
use super::query::query_value;
use super::select::{FieldSelector, LabelSelector};
use super::stale::{self, Stale};
use super::table::{self, Wanted};
use crate::k8s::kubelet::PodTarget;
use crate::k8s::status::Status;
use crate::listener::client::Client;
use crate::listener::podcall::choose_leaf;
use crate::listener::reply::{self, Dialect};
use crate::listener::sessions::{self, Reach};
use crate::plugins::Verb;
use crate::proxy::Body;
use crate::runtime::sessions::{Kind, Scope};
use crate::snapshot::Snapshot;

/// How often a watch compares the stores with what it sent.
const WATCH_TICK: Duration = Duration::from_millis(200);
/// The longest a watch stays open without `timeoutSeconds`, as kube-apiserver's
/// `--min-request-timeout` default.
const WATCH_MAX: Duration = Duration::from_secs(1800);

/// What a list or watch selects.
struct Filter {
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn from_query(query: Option<&str>, namespace: Option<&str>) -> Result<Filter, String> {
        Ok(Filter {
            namespace: namespace.map(str::to_string),
            labels: LabelSelector::parse(&query_value(query, "labelSelector").unwrap_or_default())?,
            fields: FieldSelector::parse(&query_value(query, "fieldSelector").unwrap_or_default())?,
        })
    }
}

/// Per leaf, the highest `resourceVersion` of the tenant's pods: what a list's token
/// carries. A leaf's versions only grow, so every later change to a pod of the tenant is
/// above it, whatever other tenants' pods did in between.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Versions(BTreeMap<String, u64>);

impl Versions {
    fn see(&mut self, leaf: &str, version: &str) {
        let v = version.parse::<u64>().unwrap_or(0);
        let slot = self.0.entry(leaf.to_string()).or_default();
        *slot = (*slot).max(v);
    }

    /// The opaque token: `leaf=version` pairs, base64url so clients treat it as opaque.
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

    /// True when `pod` is at or below the version the token holds for its leaf.
    fn covers(&self, pod: &Listed) -> bool {
        let v = pod.version().parse::<u64>().unwrap_or(u64::MAX);
        self.0.get(&*pod.leaf).is_some_and(|seen| v <= *seen)
    }
}

/// The tenant's pods that `filter` selects, sorted by namespace, name and leaf, and the
/// leaves' versions over all of the tenant's pods (the filter aside).
fn gather(snapshot: &Snapshot, caller: &Caller<'_>, filter: &Filter) -> (Vec<Listed>, Versions) {
    let mut versions = Versions::default();
    let mut out = Vec::new();
    for (name, leaf) in &snapshot.leaves {
        if !caller.config.may_reach(name) || stale::hidden(snapshot, name, leaf) {
            continue;
        }
        let tag: Arc<str> = name.as_str().into();
        versions.0.entry(name.clone()).or_default();
        for pod in leaf.pods() {
            let listed = Listed {
                leaf: tag.clone(),
                pod,
            };
            let ns = listed.namespace();
            if !caller.config.owns(ns) {
                continue;
            }
            versions.see(name, listed.version());
            if filter.namespace.as_deref().is_some_and(|want| want != ns)
                || !filter.fields.matches(|f| listed.field(f))
                || !filter.labels.matches(listed.pod.metadata.labels.as_ref())
            {
                continue;
            }
            out.push(listed);
        }
    }
    out.sort_by(|a, b| {
        (a.namespace(), a.name(), &*a.leaf).cmp(&(b.namespace(), b.name(), &*b.leaf))
    });
    (out, versions)
}

/// `GET /api/v1/pods` and `/api/v1/namespaces/{ns}/pods`: a list, or a watch with
/// `watch=true`.
pub async fn collection(
    req: &Request<Incoming>,
    client: &Client,
    snapshot: &Arc<Snapshot>,
    caller: &Caller<'_>,
    namespace: Option<&str>,
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
        return caller.forbidden(verb, "pods", None, Some(ns));
    }
    let filter = match Filter::from_query(query, namespace) {
        Ok(f) => f,
        Err(e) => return reply::status(&Status::new(400, e)),
    };
    let wanted = match table::requested(req) {
        Ok(t) => t,
        Err(res) => return res,
    };
    let stale = match Stale::of(snapshot, caller) {
        Ok(s) => s,
        Err(status) => return reply::status(&status),
    };
    if watching {
        return stale.tell(watch(req, client, snapshot.clone(), caller, filter, wanted));
    }
    let (pods, versions) = gather(snapshot, caller, &filter);
    let page = match Page::from_query(query) {
        Ok(p) => p,
        Err(status) => return reply::status(&status),
    };
    let token = page.version.clone().unwrap_or_else(|| versions.token());
    let (pods, next) = page.cut(pods, &token);
    let mut list = match wanted {
        Some(wanted) => match table::build(caller, &pods, wanted, &token).await {
            Ok(table) => table,
            Err((code, message)) => return reply::error(Dialect::Status, code, &message),
        },
        None => {
            let items: Vec<Value> = pods.iter().map(Listed::json).collect();
            json!({
                "kind": "PodList", "apiVersion": "v1",
                "metadata": { "resourceVersion": token },
                "items": items,
            })
        }
    };
    if let Some((token, remaining)) = next {
        list["metadata"]["continue"] = json!(token);
        list["metadata"]["remainingItemCount"] = json!(remaining);
    }
    stale.tell(reply::json(StatusCode::OK, &list))
}

/// `GET /api/v1/namespaces/{ns}/pods/{name}`: the copy in the leaf the tenant's
/// `pod_router` (verb `get`) or the index picks.
pub async fn one(
    req: &Request<Incoming>,
    snapshot: &Arc<Snapshot>,
    caller: &Caller<'_>,
    target: &PodTarget,
) -> Response<Body> {
    if req.method() != Method::GET {
        return reply::status(&Status::method_not_allowed());
    }
    if !caller.config.owns(&target.namespace) {
        return caller.forbidden("get", "pods", Some(&target.pod), Some(&target.namespace));
    }
    let wanted = match table::requested(req) {
        Ok(t) => t,
        Err(res) => return res,
    };
    let chosen = match choose_leaf(
        snapshot,
        caller.config,
        &caller.tenant,
        target,
        None,
        Verb::Get,
    )
    .await
    {
        Ok(c) => c,
        Err(res) => return res,
    };
    let Some(held) = chosen.held else {
        return reply::status(&Status::not_found("pods", &target.pod));
    };
    let stale = match Stale::of(snapshot, caller) {
        Ok(s) => s,
        Err(status) => return reply::status(&status),
    };
    if stale::hidden(snapshot, chosen.leaf.name(), &chosen.leaf) {
        return stale.tell(reply::status(&Status::not_found("pods", &target.pod)));
    }
    let listed = Listed {
        leaf: chosen.leaf.name().into(),
        pod: held.pod,
    };
    stale.tell(match wanted {
        Some(wanted) => {
            let version = listed.version().to_string();
            table::respond(caller, std::slice::from_ref(&listed), wanted, &version).await
        }
        None => reply::json(StatusCode::OK, &listed.json()),
    })
}

/// What a watch has sent: per (leaf, namespace, name), the version and the copy.
type Seen = HashMap<(Arc<str>, String, String), Listed>;

/// A watch: `ADDED`, `MODIFIED` and `DELETED` events, one JSON object a line, each a
/// `Pod` or (when the client asked for a Table) a one-row Table. From a token, pods at or
/// below its versions are taken as already seen; without one, every pod is `ADDED` first.
///
/// Each watch is a session (`runtime::sessions`): counted against the tenant's watch caps
/// (429 past them), and ended with an `ERROR` event (401, or the RBAC denial) when a reload
/// takes the caller's credential or the namespace away from the tenant.
fn watch(
    req: &Request<Incoming>,
    client: &Client,
    snapshot: Arc<Snapshot>,
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
                    format!("resourceVersion {token:?} is not one this gateway gave; list again"),
                ));
            }
        },
        None => None,
    };
    let timeout = query_value(query, "timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(WATCH_MAX, |s| Duration::from_secs(s).min(WATCH_MAX));
    let scope = match &filter.namespace {
        Some(ns) => Scope::Namespace(ns.clone()),
        None => Scope::Tenant(caller.config.namespaces.clone()),
    };
    let reach = Reach { scope, leaf: None };
    let opened = sessions::open(
        client,
        req.headers(),
        &snapshot.config,
        caller.config,
        reach,
        Kind::Watch,
    );
    let session = match opened {
        Ok(s) => s,
        Err(res) => return res,
    };
    let mut seen = Seen::new();
    if let Some(since) = &since {
        let (pods, _) = gather(&snapshot, caller, &filter);
        for p in pods.into_iter().filter(|p| since.covers(p)) {
            seen.insert(key(&p), p);
        }
    }
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
        let deadline = tokio::time::Instant::now() + timeout;
        let mut tick = tokio::time::interval(WATCH_TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = tokio::time::sleep_until(deadline) => return,
                _ = tx.closed() => return,
                _ = session.token().cancelled() => {
                    // Revoked: the reason as kube-apiserver's ERROR event, then the end.
                    // Shutdown's kill just ends it.
                    if let Some(why) = session.revoked() {
                        let status =
                            sessions::revoked_watch(why, &caller.user, filter.namespace.as_deref());
                        let mut line =
                            json!({ "type": "ERROR", "object": status.to_json() }).to_string();
                        line.push('\n');
                        // A client that reads nothing does not hold the watch open.
                        let _ = tokio::time::timeout(
                            Duration::from_secs(1),
                            tx.send(Bytes::from(line)),
                        )
                        .await;
                    }
                    return;
                }
            }
            let (pods, _) = gather(&snapshot, &caller, &filter);
            for line in diff(&mut seen, pods, &caller, wanted).await {
                if tx.send(line).await.is_err() {
                    return;
                }
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

fn key(p: &Listed) -> (Arc<str>, String, String) {
    (
        p.leaf.clone(),
        p.namespace().to_string(),
        p.name().to_string(),
    )
}

/// The events that take `seen` to `now`, as lines; `seen` is updated.
async fn diff(
    seen: &mut Seen,
    now: Vec<Listed>,
    caller: &Caller<'_>,
    wanted: Option<Wanted>,
) -> Vec<Bytes> {
    let mut events = Vec::new();
    let mut present = HashMap::with_capacity(now.len());
    for p in now {
        let k = key(&p);
        match seen.get(&k) {
            None => events.push(("ADDED", p.clone())),
            Some(old) if old.version() != p.version() => events.push(("MODIFIED", p.clone())),
            Some(_) => {}
        }
        present.insert(k, p);
    }
    let mut gone: Vec<Listed> = seen
        .iter()
        .filter(|(k, _)| !present.contains_key(*k))
        .map(|(_, p)| p.clone())
        .collect();
    gone.sort_by(|a, b| (a.namespace(), a.name()).cmp(&(b.namespace(), b.name())));
    events.extend(gone.into_iter().map(|p| ("DELETED", p)));
    *seen = present;
    let mut lines = Vec::with_capacity(events.len());
    for (kind, p) in events {
        let (kind, object) = match wanted {
            Some(wanted) => {
                match table::build(caller, std::slice::from_ref(&p), wanted, p.version()).await {
                    Ok(t) => (kind, t),
                    // The watch goes on; kubectl prints the error as kube-apiserver's.
                    Err((code, message)) => {
                        ("ERROR", Status::new(code.as_u16(), message).to_json())
                    }
                }
            }
            None => (kind, p.json()),
        };
        let mut line = json!({ "type": kind, "object": object }).to_string();
        line.push('\n');
        lines.push(Bytes::from(line));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_stay_opaque() {
        let mut v = Versions::default();
        v.see("leaf-a", "17");
        v.see("leaf-a", "9");
        v.see("leaf-b", "4");
        let token = v.token();
        assert!(!token.contains("leaf"), "{token}");
        assert_eq!(Versions::parse(&token), Some(v));
        assert_eq!(Versions::parse("not base64!"), None);
    }
}
