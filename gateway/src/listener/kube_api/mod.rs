//! The kube-api listener: one Kubernetes API endpoint for a tenant's `kubectl` across the
//! leaf clusters.
//!
//! A request goes through, in order: authentication (a bearer token from a tenant's
//! `tokens_file`, or a client certificate named in its `client_names`; 401 otherwise), the
//! path (discovery, namespaces, pods, pod subresources; 404 for anything else), the method
//! (405), and the tenant's namespaces (403 worded as kube-apiserver's RBAC denial). Pods are
//! listed, read and watched from the leaves' reflector stores, never fetched per request;
//! subresources (`exec`, `attach`, `portforward`, `log`) go to the leaf chosen by the
//! shared pod-call code (`super::podcall`), which the node-api listener uses too.
//!
//! This module never writes to a leaf and serves no other resource: kubectl sees exactly
//! what discovery announces.

mod caller;
mod discovery;
mod listed;
mod pods;
mod query;
mod select;
mod table;

use std::sync::Arc;

use http::{Method, Request, Response};
use hyper::body::Incoming;

use self::caller::{Caller, authenticate};
use self::query::query_value;
use super::client::{Client, Front};
use super::podcall::Call;
use super::reply;
use crate::k8s::kubelet::{self, PodTarget};
use crate::k8s::status::Status;
use crate::proxy::Body;
use crate::snapshot::Snapshot;

/// The route label kube-api requests are counted under.
pub const ROUTE: &str = Front::KubeApi.label();

/// Answers one kube-api request.
pub async fn serve(
    req: Request<Incoming>,
    client: &Arc<Client>,
    snapshot: &Arc<Snapshot>,
) -> Response<Body> {
    let Some(caller) = authenticate(&req, client, snapshot) else {
        return reply::status(&Status::unauthorized());
    };
    let path = req.uri().path().trim_end_matches('/').to_string();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    match segments.as_slice() {
        ["version"] => only_get(&req, discovery::version),
        ["api"] => only_get(&req, discovery::api_versions),
        ["apis"] => only_get(&req, discovery::api_groups),
        ["api", "v1"] => only_get(&req, discovery::resources),
        ["api", "v1", "namespaces"] => only_get(&req, || pods::namespaces(snapshot, &caller)),
        ["api", "v1", "namespaces", ns] => {
            let ns = ns.to_string();
            only_get(&req, || pods::namespace(&caller, &ns))
        }
        ["api", "v1", "pods"] => pods::collection(&req, snapshot, &caller, None).await,
        ["api", "v1", "namespaces", ns, "pods"] => {
            let ns = ns.to_string();
            pods::collection(&req, snapshot, &caller, Some(&ns)).await
        }
        ["api", "v1", "namespaces", ns, "pods", name] => {
            let target = target(ns, name);
            pods::one(&req, snapshot, &caller, &target).await
        }
        ["api", "v1", "namespaces", ns, "pods", name, sub] => {
            let target = target(ns, name);
            let sub = sub.to_string();
            subresource(req, client, snapshot, &caller, &target, &sub).await
        }
        _ => reply::status(&Status::no_such_resource()),
    }
}

fn target(ns: &str, name: &str) -> PodTarget {
    PodTarget {
        namespace: ns.to_string(),
        pod: name.to_string(),
        uid: None,
    }
}

/// `exec`, `attach`, `portforward` (GET for WebSocket, POST for SPDY) and `log` (GET): the
/// leaf's API has the same path and query, so both pass through untouched.
async fn subresource(
    req: Request<Incoming>,
    client: &Arc<Client>,
    snapshot: &Arc<Snapshot>,
    caller: &Caller<'_>,
    target: &PodTarget,
    sub: &str,
) -> Response<Body> {
    let Some((verb, methods)) = kubelet::subresource(sub) else {
        return reply::status(&Status::no_such_resource());
    };
    if !methods.contains(req.method()) {
        return reply::status(&Status::method_not_allowed());
    }
    let rbac_verb = if req.method() == Method::POST {
        "create"
    } else {
        "get"
    };
    if !caller.config.owns(&target.namespace) {
        return caller.forbidden(
            rbac_verb,
            &format!("pods/{sub}"),
            Some(&target.pod),
            Some(&target.namespace),
        );
    }
    let container = query_value(req.uri().query(), "container");
    let call = match Call::to_leaf(
        client,
        snapshot,
        caller.config,
        &caller.tenant,
        target,
        container.as_deref(),
        verb,
        Front::KubeApi,
    )
    .await
    {
        Ok(call) => call,
        Err(res) => return res,
    };
    // The leaf's API has the same path and query: both pass through untouched.
    let path = match req.uri().path_and_query() {
        Some(pq) => pq.as_str().to_string(),
        None => req.uri().path().to_string(),
    };
    let res = call.send(req, &path, verb, container).await;
    call.count(verb, &res);
    res
}

fn only_get(req: &Request<Incoming>, answer: impl FnOnce() -> Response<Body>) -> Response<Body> {
    if req.method() == Method::GET || req.method() == Method::HEAD {
        answer()
    } else {
        reply::status(&Status::method_not_allowed())
    }
}
