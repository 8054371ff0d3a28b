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

mod discovery;
mod pods;
mod select;
mod table;

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use serde_json::json;

use super::podcall::{Call, choose_leaf, json_response, status};
use super::service::Client;
use crate::config::TenantConfig;
use crate::k8s::kubelet::PodTarget;
use crate::plugins::Verb;
use crate::proxy::Body;
use crate::snapshot::{Snapshot, Tenant};

/// The route label kube-api requests are counted under.
pub const ROUTE: &str = "kube-api";

/// Who a request authenticated as.
pub(crate) struct Caller<'a> {
    /// The user name kube-apiserver would print: the certificate's CN, or
    /// `tenant:<name>` for a bearer token.
    pub user: String,
    pub config: &'a TenantConfig,
    pub tenant: Arc<Tenant>,
}

/// Answers one kube-api request.
pub async fn serve(
    req: Request<Incoming>,
    client: &Arc<Client>,
    snapshot: &Arc<Snapshot>,
) -> Response<Body> {
    let Some(caller) = authenticate(&req, client, snapshot) else {
        // kube-apiserver's answer to no or unknown credentials, word for word: kubectl
        // prints `error: You must be logged in to the server (Unauthorized)`.
        return status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized");
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
        _ => not_found(),
    }
}

fn target(ns: &str, name: &str) -> PodTarget {
    PodTarget {
        namespace: ns.to_string(),
        pod: name.to_string(),
        uid: None,
    }
}

/// Who is calling: the tenant whose `client_names` hold the verified client certificate's
/// name, else the tenant whose `tokens_file` holds the bearer token, else nobody (401).
/// Like kube-apiserver's union of authenticators, one that succeeds is enough.
fn authenticate<'a>(
    req: &Request<Incoming>,
    client: &Client,
    snapshot: &'a Snapshot,
) -> Option<Caller<'a>> {
    let tenants = &snapshot.config.tenants;
    let by_cert = client.identity.as_ref().and_then(|id| {
        tenants
            .iter()
            .find(|t| !t.client_names.is_empty() && id.is_any_of(&t.client_names))
            .map(|t| (id.common_name.clone().unwrap_or_else(|| t.name.clone()), t))
    });
    let by_token = || {
        let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
        let (scheme, token) = value.split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        let token = token.trim();
        tenants
            .iter()
            .find(|t| t.tokens.contains(token))
            .map(|t| (format!("tenant:{}", t.name), t))
    };
    let (user, config) = by_cert.or_else(by_token)?;
    let tenant = snapshot.tenants.get(&config.name)?.clone();
    Some(Caller {
        user,
        config,
        tenant,
    })
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
    let (verb, methods): (Verb, &[Method]) = match sub {
        "exec" => (Verb::Exec, &[Method::GET, Method::POST]),
        "attach" => (Verb::Attach, &[Method::GET, Method::POST]),
        "portforward" => (Verb::PortForward, &[Method::GET, Method::POST]),
        "log" => (Verb::Logs, &[Method::GET]),
        _ => return not_found(),
    };
    if !methods.contains(req.method()) {
        return method_not_allowed();
    }
    let rbac_verb = if req.method() == Method::POST {
        "create"
    } else {
        "get"
    };
    if !caller.config.owns(&target.namespace) {
        return forbidden(
            caller,
            rbac_verb,
            &format!("pods/{sub}"),
            Some(&target.pod),
            Some(&target.namespace),
        );
    }
    let container = query_value(req.uri().query(), "container");
    let chosen = match choose_leaf(
        snapshot,
        caller.config,
        &caller.tenant,
        target,
        container.as_deref(),
        verb,
    )
    .await
    {
        Ok(chosen) => chosen,
        Err(res) => return res,
    };
    let call = Call {
        client,
        snapshot,
        tenant: &caller.tenant,
        leaf: &chosen.leaf,
        target,
        route: ROUTE,
    };
    let path = match req.uri().path_and_query() {
        Some(pq) => pq.as_str().to_string(),
        None => req.uri().path().to_string(),
    };
    if verb == Verb::Logs {
        // The log filter is told the container; kubectl leaves it out for one-container pods.
        let container = container
            .or_else(|| {
                let held = chosen.held.as_ref()?;
                let mut names = held.containers();
                let first = names.next()?;
                names.next().is_none().then(|| first.to_string())
            })
            .unwrap_or_default();
        return call.logs(req, &path, container).await;
    }
    if crate::proxy::headers::is_upgrade(req.headers()) {
        return call.stream(req, &path).await;
    }
    // Not an upgrade: the leaf answers it (`Upgrade request required`) and we relay that.
    call.relay(req, &path).await
}

/// The first value of `key` in a query string, decoded.
pub(crate) fn query_value(query: Option<&str>, key: &str) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

fn only_get(req: &Request<Incoming>, answer: impl FnOnce() -> Response<Body>) -> Response<Body> {
    if req.method() == Method::GET || req.method() == Method::HEAD {
        answer()
    } else {
        method_not_allowed()
    }
}

/// kube-apiserver's 404 for a path it does not serve; kubectl prints `the server could not
/// find the requested resource`.
pub(crate) fn not_found() -> Response<Body> {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the server could not find the requested resource",
        "reason": "NotFound", "details": {}, "code": 404,
    });
    json_response(StatusCode::NOT_FOUND, &body)
}

pub(crate) fn method_not_allowed() -> Response<Body> {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the server does not allow this method on the requested resource",
        "reason": "MethodNotAllowed", "details": {}, "code": 405,
    });
    json_response(StatusCode::METHOD_NOT_ALLOWED, &body)
}

/// The RBAC denial as kube-apiserver words it:
/// `pods "p" is forbidden: User "u" cannot get resource "pods" in API group "" in the
/// namespace "x"`.
pub(crate) fn forbidden(
    caller: &Caller<'_>,
    verb: &str,
    resource: &str,
    name: Option<&str>,
    namespace: Option<&str>,
) -> Response<Body> {
    let kind = resource.split('/').next().unwrap_or(resource);
    let subject = match name {
        Some(name) => format!("{kind} {name:?}"),
        None => kind.to_string(),
    };
    let scope = match namespace {
        Some(ns) => format!("in the namespace {ns:?}"),
        None => "at the cluster scope".to_string(),
    };
    let message = format!(
        "{subject} is forbidden: User {:?} cannot {verb} resource {resource:?} in API group \"\" {scope}",
        caller.user
    );
    let mut details = json!({ "kind": kind });
    if let Some(name) = name {
        details["name"] = json!(name);
    }
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "Forbidden", "details": details, "code": 403,
    });
    json_response(StatusCode::FORBIDDEN, &body)
}
