//! label-router: picks a pod's leaf cluster from its labels or namespace.
//!
//! Config (rules are tried in order, the first match wins):
//! ```toml
//! config = { rules = [
//!     { label = "topology.leafgate.io/site", value = "edge-*", leaf = "leaf-1" },
//!     { namespace = "batch-*", leaf = "leaf-2" },
//! ], default_leaf = "leaf-1" }
//! ```
//! With no match and no `default_leaf` the gateway decides (`default`); with
//! `reject_unmatched = "message"` the request is refused with 403 instead.

use std::sync::OnceLock;

use leafgate_plugin::glob_match;
use leafgate_plugin::pod_router::{Guest, Rejection, RouteDecision, RouteRequest};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    rules: Vec<Rule>,
    default_leaf: Option<String>,
    reject_unmatched: Option<String>,
}

/// One rule: every condition it names must hold (a label key with a value pattern, a
/// namespace pattern, a pod name pattern).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rule {
    label: Option<String>,
    value: Option<String>,
    namespace: Option<String>,
    pod: Option<String>,
    leaf: String,
}

impl Rule {
    fn matches(&self, req: &RouteRequest) -> bool {
        let label_ok = match &self.label {
            Some(key) => req
                .label(key)
                .is_some_and(|v| self.value.as_deref().is_none_or(|p| glob_match(p, v))),
            None => true,
        };
        label_ok
            && self
                .namespace
                .as_deref()
                .is_none_or(|p| glob_match(p, &req.namespace))
            && self.pod.as_deref().is_none_or(|p| glob_match(p, &req.pod))
    }
}

static CONFIG: OnceLock<Config> = OnceLock::new();

struct LabelRouter;

impl Guest for LabelRouter {
    fn route(req: RouteRequest) -> RouteDecision {
        let config = CONFIG.get_or_init(leafgate_plugin::config_or_trap);
        let chosen = config
            .rules
            .iter()
            .find(|r| r.matches(&req))
            .map(|r| &r.leaf)
            .or(config.default_leaf.as_ref());
        match (chosen, &config.reject_unmatched) {
            (Some(leaf), _) if req.knows_leaf(leaf) => RouteDecision::Leaf(leaf.clone()),
            (Some(leaf), _) => RouteDecision::Reject(Rejection {
                status: 503,
                message: format!(
                    "pod {}/{} routes to leaf `{leaf}`, which the gateway does not know",
                    req.namespace, req.pod
                ),
            }),
            (None, Some(message)) => RouteDecision::Reject(Rejection {
                status: 403,
                message: message.clone(),
            }),
            (None, None) => RouteDecision::Default,
        }
    }
}

leafgate_plugin::export_pod_router!(LabelRouter);
