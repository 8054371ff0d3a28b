//! One match of one rule on one listener and hostname as a route entry (its redirect
//! resolved against the listener), and its key in the spec's precedence order.

use std::cmp::Reverse;

use super::model::{Action, GatewayRoute, ListenerKey, PathModifier, Redirect, Rewrite};
use super::rules::{Match, Rule};
use super::types::HttpPathModifier;
use crate::config::{BandwidthConfig, HostPattern, PathMatch};

/// The precedence key of an entry: listener, then the most specific host (exact, then
/// the longest wildcard suffix, then any), then the spec's list: an Exact path, the
/// longest prefix, a method match, the most header matches, the most query-param
/// matches, the oldest route then `{namespace}/{name}` (the route's index in age order),
/// and the first rule and match in list order.
pub type Key = (
    ListenerKey,
    (u8, Reverse<usize>),
    (u8, Reverse<usize>),
    bool,
    Reverse<usize>,
    Reverse<usize>,
    usize,
    usize,
    usize,
);

pub fn precedence(
    listener: &ListenerKey,
    host: &HostPattern,
    m: &Match,
    route: usize,
    rule: usize,
    index: usize,
) -> Key {
    let host = match host {
        HostPattern::Exact(h) => (0, Reverse(h.len())),
        HostPattern::Wildcard(s) | HostPattern::WildcardLabel(s) => (1, Reverse(s.len())),
        HostPattern::Any => (2, Reverse(0)),
    };
    let path = match &m.path {
        PathMatch::Exact(p) => (0, Reverse(p.len())),
        PathMatch::Prefix(p) => (1, Reverse(p.len())),
    };
    (
        listener.clone(),
        host,
        path,
        m.method.is_none(),
        Reverse(m.headers.len()),
        Reverse(m.query.len()),
        route,
        rule,
        index,
    )
}

fn modifier(p: &HttpPathModifier, m: &Match) -> PathModifier {
    match (&p.replace_full_path, &p.replace_prefix_match, &m.path) {
        (Some(full), _, _) if p.type_ == "ReplaceFullPath" => PathModifier::Full(full.clone()),
        (_, Some(replacement), PathMatch::Prefix(matched)) => PathModifier::Prefix {
            matched: matched.clone(),
            replacement: replacement.clone(),
        },
        // Not reached: `rules` refuses ReplacePrefixMatch without exactly one PathPrefix
        // match (Accepted=False, as the spec says).
        (_, Some(replacement), PathMatch::Exact(matched)) => PathModifier::Prefix {
            matched: matched.clone(),
            replacement: replacement.clone(),
        },
        _ => PathModifier::Full("/".into()),
    }
}

#[allow(
    clippy::too_many_arguments,
    reason = "one entry is the product of all of these"
)]
pub fn entry(
    namespace: &str,
    name: &str,
    listener: &ListenerKey,
    https: bool,
    host: &HostPattern,
    rule: &Rule,
    m: &Match,
    tenant: Option<String>,
) -> GatewayRoute {
    let action = match &rule.redirect {
        Some(r) => {
            let scheme = match r.scheme.as_deref() {
                Some("https") => "https",
                Some(_) => "http",
                None if https => "https",
                None => "http",
            };
            let port = match (r.port, &r.scheme) {
                (Some(p), _) => p as u16,
                (None, Some(_)) if scheme == "https" => 443,
                (None, Some(_)) => 80,
                (None, None) => listener.port,
            };
            let default_port =
                (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
            Action::Redirect(Redirect {
                scheme,
                hostname: r.hostname.clone(),
                path: r.path.as_ref().map(|p| modifier(p, m)),
                port: (!default_port).then_some(port),
                status: r.status_code.unwrap_or(302) as u16,
            })
        }
        None => Action::Forward(rule.backends.clone()),
    };
    GatewayRoute {
        name: format!("httproute/{namespace}/{name}/{}", rule.name),
        listener: listener.clone(),
        host: host.clone(),
        path: m.path.clone(),
        headers: m.headers.clone(),
        query: m.query.clone(),
        method: m.method.clone(),
        action,
        request_headers: rule.request_headers.clone(),
        response_headers: rule.response_headers.clone(),
        rewrite: rule.rewrite.as_ref().map(|(hostname, path)| Rewrite {
            hostname: hostname.clone(),
            path: path.as_ref().map(|p| modifier(p, m)),
        }),
        timeouts: rule.timeouts,
        tenant,
        bandwidth: BandwidthConfig::default(),
    }
}
