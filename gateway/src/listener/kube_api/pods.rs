//! Pods from the leaves' reflector stores: list (one namespace, or every
//! namespace the tenant owns), get, and watch, as `Pod`/`PodList` JSON or as a Table.
//!
//! Nothing here calls a leaf: a list is the union of the change feeds of the leaves the
//! tenant may reach (read by namespace), each pod as its leaf sent it, annotated with the
//! leaf it came from (`leafgate.io/leaf`). Its `resourceVersion` is an opaque token of each
//! leaf's feed position at the last change in the tenant's own namespaces (never another
//! tenant's: it would move when their pods change, a side channel), which a watch
//! (`super::watch`, fed by the same feeds) resumes from exactly.

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};

use super::caller::Caller;
use super::listed::Listed;
use super::page::Page;
use super::query::query_value;
use super::select::Filter;
use super::stale::{self, Stale};
use super::table;
use super::watch::{self, Token};
use crate::k8s::kubelet::PodTarget;
use crate::k8s::status::Status;
use crate::listener::client::Client;
use crate::listener::podcall::choose_leaf;
use crate::listener::reply::{self, Dialect};
use crate::plugins::Verb;
use crate::proxy::{Body, InBody};
use crate::snapshot::Snapshot;

/// The tenant's pods that `filter` selects, sorted by namespace, name and leaf, and the
/// list's token: per leaf, the feed's position of the last change in the tenant's
/// namespaces (the filter aside), which a watch resumes from.
fn gather(snapshot: &Snapshot, caller: &Caller<'_>, filter: &Filter) -> (Vec<Listed>, Token) {
    let mut token = Token::default();
    let mut out = Vec::new();
    for (name, leaf) in &snapshot.leaves {
        if !caller.config.may_reach(name) || stale::hidden(snapshot, name, leaf) {
            continue;
        }
        let tag: Arc<str> = name.as_str().into();
        // By namespace: the cost is the tenant's namespaces and pods, not the leaf's.
        let view = leaf.feed().view(|ns| caller.config.owns(ns));
        token.set(name, view.epoch, view.last);
        out.extend(
            view.pods
                .into_iter()
                .filter(|pod| filter.selects(pod))
                .map(|pod| Listed {
                    leaf: tag.clone(),
                    pod,
                }),
        );
    }
    out.sort_by(|a, b| {
        (a.namespace(), a.name(), &*a.leaf).cmp(&(b.namespace(), b.name(), &*b.leaf))
    });
    (out, token)
}

/// `GET /api/v1/pods` and `/api/v1/namespaces/{ns}/pods`: a list, or a watch with
/// `watch=true`.
pub async fn collection(
    req: &Request<InBody>,
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
        return stale.tell(watch::watch(
            req,
            client,
            snapshot.clone(),
            caller,
            filter,
            wanted,
        ));
    }
    let (pods, versions) = gather(snapshot, caller, &filter);
    let page = match Page::from_query(query) {
        Ok(p) => p,
        Err(status) => return reply::status(&status),
    };
    let token = page.version.clone().unwrap_or_else(|| versions.encode());
    let (pods, next) = page.cut(pods, &token);
    if let Some(wanted) = wanted {
        let next = next
            .as_ref()
            .map(|(token, remaining)| (token.as_str(), *remaining));
        return match table::write(caller, &pods, wanted, &token, next).await {
            Ok(table) => stale.tell(table::json_response(table)),
            Err((code, message)) => reply::error(Dialect::Status, code, &message),
        };
    }
    // Joined from each pod's serialized form, as the Table is: no `Value` per pod.
    let mut list = Vec::with_capacity(256 + pods.len() * 1024);
    list.extend_from_slice(
        br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"#,
    );
    push_str(&mut list, &token);
    if let Some((token, remaining)) = &next {
        list.extend_from_slice(br#","continue":"#);
        push_str(&mut list, token);
        list.extend_from_slice(br#","remainingItemCount":"#);
        list.extend_from_slice(remaining.to_string().as_bytes());
    }
    list.extend_from_slice(br#"},"items":["#);
    for (i, listed) in pods.iter().enumerate() {
        if i > 0 {
            list.push(b',');
        }
        listed.pod.write_wire(listed.version(), &mut list);
    }
    list.extend_from_slice(b"]}");
    stale.tell(table::json_response(list))
}

fn push_str(out: &mut Vec<u8>, s: &str) {
    // Writing a `&str` to a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// `GET /api/v1/namespaces/{ns}/pods/{name}`: the copy in the leaf the tenant's
/// `pod_router` (verb `get`) or the index picks.
pub async fn one(
    req: &Request<InBody>,
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
