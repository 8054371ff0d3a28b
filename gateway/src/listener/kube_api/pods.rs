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

use serde_json::json;

use super::caller::Caller;
use super::list::{self, Listing};
use super::listed::Listed;
use super::resource::{self, Names, Resource, Writing};
use super::select::Filter;
use super::stale::{self, Stale};
use super::table::{self, Wanted};
use crate::k8s::kubelet::PodTarget;
use crate::k8s::status::Status;
use crate::k8s::{Feed, Leaf, RawPod};
use crate::listener::client::Client;
use crate::listener::podcall::choose_leaf;
use crate::listener::reply::{self, Dialect};
use crate::plugins::Verb;
use crate::proxy::{Body, InBody};
use crate::snapshot::Snapshot;

/// A pod watch: the request's selectors and the Table it asked for.
struct PodWatch {
    filter: Filter,
    wanted: Option<Wanted>,
}

/// Pods' names.
const NAMES: Names = Names {
    group: "",
    resource: "pods",
    kind: "Pod",
    api_version: "v1",
};

impl Resource for PodWatch {
    type Object = RawPod;

    fn names(&self) -> Names {
        NAMES
    }

    fn feed(&self, leaf: &Leaf) -> Option<Arc<Feed<RawPod>>> {
        Some(leaf.feed().clone())
    }

    fn namespace(&self) -> Option<&str> {
        self.filter.namespace.as_deref()
    }

    fn selects(&self, pod: &RawPod) -> bool {
        self.filter.selects(pod)
    }

    /// The pod's JSON as serialized when it arrived, with the token written in; or a
    /// one-row Table (the tenant's `table_formatter` or the built-in printer).
    fn write<'a>(
        &'a self,
        caller: &'a Caller<'a>,
        kind: &'static str,
        leaf: &'a Arc<str>,
        pod: &'a Arc<RawPod>,
        rv: &'a str,
        out: &'a mut Vec<u8>,
    ) -> Writing<'a> {
        Box::pin(async move {
            let Some(wanted) = self.wanted else {
                out.extend_from_slice(br#"{"type":""#);
                out.extend_from_slice(kind.as_bytes());
                out.extend_from_slice(br#"","object":"#);
                pod.write_wire(rv, out);
                out.extend_from_slice(b"}\n");
                return;
            };
            let listed = Listed {
                leaf: leaf.clone(),
                object: pod.clone(),
            };
            let line = match table::build(caller, &[listed], wanted, rv).await {
                Ok(t) => json!({ "type": kind, "object": t }),
                // The watch goes on; kubectl prints the error as kube-apiserver's.
                Err((code, message)) => json!({
                    "type": "ERROR",
                    "object": Status::new(code.as_u16(), message).to_json(),
                }),
            };
            resource::push_line(out, &line);
        })
    }
}

/// `GET /api/v1/pods` and `/api/v1/namespaces/{ns}/pods`: a list, or a watch with
/// `watch=true` (`list::collection`).
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
    let parse = || {
        let filter = Filter::from_query(req.uri().query(), namespace)
            .map_err(|e| Box::new(reply::status(&Status::new(400, e))))?;
        let wanted = table::requested(req).map_err(Box::new)?;
        Ok(PodWatch { filter, wanted })
    };
    let answer = async |request: PodWatch, listing| answer(caller, request.wanted, listing).await;
    let names = (NAMES, namespace);
    list::collection(req, client, snapshot, caller, names, true, parse, answer).await
}

/// A page of pods as a Table or a `PodList`.
async fn answer(
    caller: &Caller<'_>,
    wanted: Option<Wanted>,
    listing: Listing<RawPod>,
) -> Response<Body> {
    let Listing {
        items: pods,
        token,
        next,
    } = listing;
    if let Some(wanted) = wanted {
        let next = next
            .as_ref()
            .map(|(token, remaining)| (token.as_str(), *remaining));
        return match table::write(caller, &pods, wanted, &token, next).await {
            Ok(table) => table::json_response(table),
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
        listed.object.write_wire(listed.version(), &mut list);
    }
    list.extend_from_slice(b"]}");
    table::json_response(list)
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
        object: held.pod,
    };
    stale.tell(match wanted {
        Some(wanted) => {
            let version = listed.version().to_string();
            table::respond(caller, std::slice::from_ref(&listed), wanted, &version).await
        }
        None => reply::json(StatusCode::OK, &listed.json()),
    })
}
