//! The kube-api listener: one Kubernetes API endpoint for a tenant's `kubectl` across the
//! leaf clusters.
//!
//! A request goes through, in order: authentication (a bearer token from a tenant's
//! `tokens_file`, or a client certificate named in its `client_names`; 401 otherwise),
//! impersonation (`Impersonate-*`: kube-apiserver's 403, never forwarded), the path
//! (discovery, namespaces, events, pods, pod subresources; 404 for anything else), the names in it
//! (decoded, then valid Kubernetes names, else kube-apiserver's 400 or 404), the method
//! (405), and the tenant's namespaces (403 worded as kube-apiserver's RBAC denial). Pods are
//! listed, read and watched from the leaves' change feeds (`watch` follows them), never
//! fetched per request; namespaces and events come from the leaves' own reflectors
//! (`namespaces`, `events`);
//! subresources (`exec`, `attach`, `portforward`, `log`) go to the leaf chosen by the
//! shared pod-call code (`super::podcall`), which the node-api listener uses too, at a leaf
//! path built from the validated names.
//!
//! This module never writes to a leaf and serves no other resource: kubectl sees exactly
//! what discovery announces.

mod auth;
mod caller;
mod custom;
mod discovery;
mod event_api;
mod events;
mod fields;
mod info;
mod json_out;
mod kinds;
mod list;
mod listed;
mod namespaces;
mod object_table;
mod openapi;
mod page;
mod pods;
mod proto;
mod query;
mod resource;
mod select;
mod stale;
mod table;
mod token;
mod watch;

use std::sync::Arc;

use http::{Method, Request, Response};

use self::caller::{Caller, authenticate};
use self::event_api::EventApi;
use self::query::query_value;
use super::access::ApiFacts;
use super::client::{Client, Front};
use super::pod_headers::impersonation;
use super::podcall::Call;
use super::reply;
use crate::k8s::kubelet::{self, PodTarget};
use crate::k8s::names;
use crate::k8s::status::Status;
use crate::proxy::{Body, InBody};
use crate::snapshot::Snapshot;

/// The route label kube-api requests are counted under.
pub const ROUTE: &str = Front::KubeApi.label();

/// Answers one kube-api request, with what its access log line says of it on the answer
/// (`access::ApiFacts`: the tenant, and the verb, namespace and pod as kube-apiserver
/// reads them from the request, `info`).
pub async fn serve(
    req: Request<InBody>,
    client: &Arc<Client>,
    snapshot: &Arc<Snapshot>,
) -> Response<Body> {
    let mut facts = ApiFacts::new(client);
    let mut res = answer(req, client, snapshot, &mut facts).await;
    facts.attach(&mut res);
    res
}

async fn answer(
    req: Request<InBody>,
    client: &Arc<Client>,
    snapshot: &Arc<Snapshot>,
    facts: &mut ApiFacts,
) -> Response<Body> {
    let Some(caller) = authenticate(&req, client, snapshot) else {
        return reply::status(&Status::unauthorized());
    };
    facts.tenant(&caller.config.name);
    if let Some(refusal) = impersonation(req.headers(), &caller.user) {
        return reply::status(&refusal);
    }
    let path = req.uri().path().trim_end_matches('/').to_string();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    if facts.on() {
        let info = info::of(req.method(), &segments, req.uri().query());
        facts.verb(info.verb);
        if let Some(ns) = &info.namespace {
            facts.namespace(ns);
        }
        if let (Some("pods"), Some(pod)) = (info.resource.as_deref(), &info.name) {
            facts.pod(pod);
        }
    }
    match segments.as_slice() {
        ["version"] => only_get(&req, || {
            discovery::version(snapshot, &client.listener, caller.config)
        }),
        [which @ ("healthz" | "livez" | "readyz"), check @ ..] if check.len() <= 1 => {
            let verbose = query_value(req.uri().query(), "verbose").is_some();
            only_get(&req, || {
                discovery::health(
                    snapshot,
                    caller.config,
                    which,
                    check.first().copied(),
                    verbose,
                )
            })
        }
        ["openapi", "v3", rest @ ..] => only_get(&req, || {
            let none_match = req.headers().get(http::header::IF_NONE_MATCH);
            openapi::serve(&rest.join("/"), req.uri().query(), none_match)
        }),
        ["api"] => only_get(&req, discovery::api_versions),
        ["apis"] => only_get(&req, || discovery::api_groups(snapshot, caller.config)),
        [
            "apis",
            "authorization.k8s.io",
            "v1",
            "selfsubjectaccessreviews",
        ] => auth::access_review(req, &caller).await,
        [
            "apis",
            "authorization.k8s.io",
            "v1",
            "selfsubjectrulesreviews",
        ] => auth::rules_review(req, &caller).await,
        ["apis", "authentication.k8s.io", "v1", "selfsubjectreviews"] => {
            auth::self_review(req, client, &caller).await
        }
        ["apis", group] if discovery::serves_group(snapshot, caller.config, group) => {
            let group = group.to_string();
            only_get(&req, || {
                discovery::api_group(snapshot, caller.config, &group)
            })
        }
        ["apis", group, version] if discovery::serves(snapshot, caller.config, group, version) => {
            let (group, version) = (group.to_string(), version.to_string());
            only_get(&req, || {
                discovery::group_resources(snapshot, caller.config, &group, &version)
            })
        }
        ["api", "v1"] => only_get(&req, || discovery::resources(snapshot, caller.config)),
        ["api", "v1", "namespaces"] => namespaces::collection(&req, client, snapshot, &caller),
        ["api", "v1", "namespaces", ns] => match namespace(ns) {
            Ok(ns) => namespaces::one(&req, snapshot, &caller, &ns),
            Err(refusal) => reply::status(&refusal),
        },
        ["api", "v1", "events"] => {
            events::collection(&req, client, snapshot, &caller, None, EventApi::Core).await
        }
        ["apis", "events.k8s.io", "v1", "events"] => {
            events::collection(&req, client, snapshot, &caller, None, EventApi::EventsV1).await
        }
        ["api", "v1", "namespaces", ns, "events"]
        | ["apis", "events.k8s.io", "v1", "namespaces", ns, "events"] => match namespace(ns) {
            Ok(ns) => {
                let api = event_api(&segments);
                events::collection(&req, client, snapshot, &caller, Some(&ns), api).await
            }
            Err(refusal) => reply::status(&refusal),
        },
        ["api", "v1", "namespaces", ns, "events", name]
        | [
            "apis",
            "events.k8s.io",
            "v1",
            "namespaces",
            ns,
            "events",
            name,
        ] => match namespace(ns) {
            Ok(ns) => events::one(&req, snapshot, &caller, (&ns, name), event_api(&segments)),
            Err(refusal) => reply::status(&refusal),
        },
        ["api", "v1", "pods"] => pods::collection(&req, client, snapshot, &caller, None).await,
        ["api", "v1", "namespaces", ns, "pods"] => match namespace(ns) {
            Ok(ns) => pods::collection(&req, client, snapshot, &caller, Some(&ns)).await,
            Err(refusal) => reply::status(&refusal),
        },
        ["api", "v1", "namespaces", ns, "pods", name] => match target(ns, name) {
            Ok(target) => pods::one(&req, snapshot, &caller, &target).await,
            Err(refusal) => reply::status(&refusal),
        },
        ["api", "v1", "namespaces", ns, "pods", name, sub] => match target(ns, name) {
            Ok(target) => {
                let sub = sub.to_string();
                subresource(req, client, snapshot, &caller, &target, &sub, facts).await
            }
            Err(refusal) => reply::status(&refusal),
        },
        ["api", "v1", _] | ["apis", _, _, _] => match served(&segments, snapshot, &caller) {
            Some(kind) => kinds::collection(&req, client, snapshot, &caller, None, kind).await,
            None => reply::status(&Status::no_such_resource()),
        },
        ["api", "v1", "namespaces", ns, _] | ["apis", _, _, "namespaces", ns, _] => {
            match (served(&segments, snapshot, &caller), namespace(ns)) {
                (None, _) => reply::status(&Status::no_such_resource()),
                (Some(_), Err(refusal)) => reply::status(&refusal),
                (Some(kind), Ok(ns)) => {
                    kinds::collection(&req, client, snapshot, &caller, Some(&ns), kind).await
                }
            }
        }
        ["api", "v1", "namespaces", ns, _, name] | ["apis", _, _, "namespaces", ns, _, name] => {
            match (served(&segments, snapshot, &caller), namespace(ns)) {
                (None, _) => reply::status(&Status::no_such_resource()),
                (Some(_), Err(refusal)) => reply::status(&refusal),
                (Some(kind), Ok(ns)) => kinds::one(&req, snapshot, &caller, (&ns, name), kind),
            }
        }
        _ => reply::status(&Status::no_such_resource()),
    }
}

/// The read-only kind a path of its names (`/api/v1/[namespaces/{ns}/]<resource>[/{name}]`
/// or `/apis/<group>/<version>/...`), if served at that version: a built-in kind, else a
/// custom resource a leaf serves at that version (`custom::find`).
fn served(
    segments: &[&str],
    snapshot: &Snapshot,
    caller: &Caller<'_>,
) -> Option<&'static kinds::Declared> {
    let (group, version, rest) = match segments {
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let resource = match rest {
        [resource] | ["namespaces", _, resource] | ["namespaces", _, resource, _] => resource,
        _ => return None,
    };
    match kinds::find(group, resource) {
        Some(builtin) => Some(builtin).filter(|d| d.gvr.version() == version),
        None if group.is_empty() => None,
        None => custom::find(snapshot, caller, (group, version, resource)),
    }
}

/// The API an events path came in by: `/apis/events.k8s.io/...` or core's `/api/v1/...`.
fn event_api(segments: &[&str]) -> EventApi {
    if segments.first() == Some(&"apis") {
        EventApi::EventsV1
    } else {
        EventApi::Core
    }
}

/// A namespace from the path, percent-decoded (`%2F` arrives encoded: hyper hands the
/// path over as sent), and a DNS-1123 label, or the 404 kube-apiserver gives a namespace
/// that does not exist: no namespace can have another name, so nothing further (the
/// tenant's namespace globs included) ever sees one.
fn namespace(raw: &str) -> Result<String, Status> {
    let decoded = names::decode_segment(raw).unwrap_or_else(|| raw.to_string());
    if names::is_label(&decoded) {
        Ok(decoded)
    } else {
        Err(Status::not_found("namespaces", &decoded))
    }
}

/// The pod a path names, both names decoded and validated: kube-apiserver's 400 for a
/// name no path segment may carry (`/`, `%`, `.`, `..`: its `IsValidPathSegmentName`),
/// its 404 for one that is no DNS-1123 subdomain (no pod can have it).
fn target(ns: &str, name: &str) -> Result<PodTarget, Status> {
    let namespace = namespace(ns)?;
    let pod = names::decode_segment(name).unwrap_or_else(|| name.to_string());
    let problems = names::path_segment_problems(&pod);
    if !problems.is_empty() {
        return Err(Status::new(
            400,
            format!("Name parameter invalid: {pod:?}: {}", problems.join(";")),
        ));
    }
    if !names::is_subdomain(&pod) {
        return Err(Status::not_found("pods", &pod));
    }
    Ok(PodTarget {
        namespace,
        pod,
        uid: None,
    })
}

/// `exec`, `attach`, `portforward` (GET for WebSocket, POST for SPDY) and `log` (GET): the
/// leaf's API has the same path, built again from the validated names, and the same query,
/// passed through once every `container` in it is a valid name.
async fn subresource(
    req: Request<InBody>,
    client: &Arc<Client>,
    snapshot: &Arc<Snapshot>,
    caller: &Caller<'_>,
    target: &PodTarget,
    sub: &str,
    facts: &mut ApiFacts,
) -> Response<Body> {
    let Some((verb, methods)) = kubelet::subresource(sub) else {
        return reply::status(&Status::no_such_resource());
    };
    // Named as the pod-call metrics name it (`exec`, `logs`, ...), not by the method.
    facts.verb(kubelet::verb_name(verb));
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
    let query = req.uri().query();
    // Every `container` the leaf could read, not just the first this gateway reads:
    // kube-apiserver's 400 for a container the pod cannot have.
    let containers = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .filter(|(k, _)| k == "container")
        .map(|(_, v)| v.into_owned());
    for asked in containers {
        if !names::is_label(&asked) {
            return reply::status(&Status::new(
                400,
                format!("container {asked} is not valid for pod {}", target.pod),
            ));
        }
    }
    let container = query_value(query, "container");
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
    facts.leaf(call.leaf.name());
    let mut path = kubelet::leaf_path(target, sub);
    if let Some(query) = req.uri().query() {
        path = format!("{path}?{query}");
    }
    let res = call.send(req, &path, verb, container).await;
    call.count(verb, &res);
    res
}

fn only_get(req: &Request<InBody>, answer: impl FnOnce() -> Response<Body>) -> Response<Body> {
    if req.method() == Method::GET || req.method() == Method::HEAD {
        answer()
    } else {
        reply::status(&Status::method_not_allowed())
    }
}
