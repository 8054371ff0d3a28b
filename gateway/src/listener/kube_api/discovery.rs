//! Discovery: what kubectl asks before anything else (`/version`, `/api`, `/api/v1`,
//! `/apis`), answered so it finds pods (with `exec`, `attach`, `log`, `portforward`),
//! namespaces and events, and nothing leafgate does not serve.
//!
//! kubectl >= 1.30 first asks `/api` and `/apis` for the aggregated discovery document
//! (`as=APIGroupDiscoveryList`) and falls back to the legacy documents when the answer's
//! `Content-Type` is plain `application/json`; that fallback is what these answers take.

use http::StatusCode;
use serde_json::{Value, json};

use crate::listener::reply;
use crate::proxy::Body;

/// The Kubernetes version leafgate's API front speaks (the pinned kubectl's minor).
const MAJOR: &str = "1";
const MINOR: &str = "37";

pub fn version() -> http::Response<Body> {
    reply::json(
        StatusCode::OK,
        &json!({
            "major": MAJOR,
            "minor": MINOR,
            "gitVersion": format!("v{MAJOR}.{MINOR}.0+leafgate-{}", env!("CARGO_PKG_VERSION")),
            "gitCommit": "",
            "gitTreeState": "clean",
            "buildDate": "1970-01-01T00:00:00Z",
            "goVersion": "",
            "compiler": "leafgate",
            "platform": "linux/amd64",
        }),
    )
}

pub fn api_versions() -> http::Response<Body> {
    reply::json(
        StatusCode::OK,
        &json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [],
        }),
    )
}

pub fn api_groups() -> http::Response<Body> {
    reply::json(
        StatusCode::OK,
        &json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": [] }),
    )
}

fn resource(name: &str, namespaced: bool, kind: &str, verbs: &[&str]) -> Value {
    json!({
        "name": name,
        "singularName": if name.contains('/') { "" } else { name.trim_end_matches('s') },
        "namespaced": namespaced,
        "kind": kind,
        "verbs": verbs,
    })
}

pub fn resources() -> http::Response<Body> {
    let mut pods = resource("pods", true, "Pod", &["get", "list", "watch"]);
    pods["shortNames"] = json!(["po"]);
    pods["categories"] = json!(["all"]);
    let mut namespaces = resource("namespaces", false, "Namespace", &["get", "list"]);
    namespaces["shortNames"] = json!(["ns"]);
    let mut events = resource("events", true, "Event", &["get", "list", "watch"]);
    events["shortNames"] = json!(["ev"]);
    reply::json(
        StatusCode::OK,
        &json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": "v1",
            "resources": [
                events,
                namespaces,
                pods,
                resource("pods/attach", true, "PodAttachOptions", &["create", "get"]),
                resource("pods/exec", true, "PodExecOptions", &["create", "get"]),
                resource("pods/log", true, "Pod", &["get"]),
                resource("pods/portforward", true, "PodPortForwardOptions", &["create", "get"]),
            ],
        }),
    )
}
