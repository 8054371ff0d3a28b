//! An HTTPRoute's rules read on their own (`apis/v1/httproute_types.go`): matches
//! (path `Exact` and `PathPrefix`, headers and query params `Exact`, method), filters
//! (`RequestHeaderModifier`, `ResponseHeaderModifier`, `RequestRedirect`, `URLRewrite`),
//! backendRefs with weights, and timeouts. A value the spec allows but leafgate does not
//! support, or does not know, refuses the route (`UnsupportedValue`, or
//! `IncompatibleFilters` for a redirect with a rewrite): never silently ignored. Backend
//! references that do not resolve are reported (`ResolvedRefs`) and answer 500.
//!
//! The store holds what it was sent, so nothing the CRD validates is taken on trust:
//! hostnames, the counts and weights within the CRD's bounds ([`Bounds`], which also keep
//! a route's cost and its weights' sum bounded), and every value the proxy would write
//! into a request or answer head (header names and values, hostnames, paths) checked to
//! be one, so no route author can inject a line or another authority.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::networking::v1::{IngressServiceBackend, ServiceBackendPort};

use super::grants::{self, From, To};
use super::hostnames;
use super::listeners::Why;
use super::model::{Backend, HeaderModifier, Timeouts, WeightedBackend};
use super::types::{
    GROUP, HttpHeaderFilter, HttpPathModifier, HttpRequestRedirectFilter, HttpRoute,
    HttpRouteFilter, ReferenceGrant,
};
use super::values::{
    dot_segment, duration, header_invalid, path_invalid, precise_invalid, protected,
};
use crate::config::{HostPattern, PathMatch};
use crate::k8s::ingress::annotations::BackendProtocol;
use crate::k8s::ingress::backends::Backends;
use crate::k8s::ingress::model::{BackendPolicy, TenantBounds, may_claim_only};

/// The CRD's `maxItems` and `maximum` (gateway-api v1.6.1 `httproute_types.go`,
/// `shared_types.go`). The API server refuses more; a route past one is refused whole
/// (`UnsupportedValue`) before anything else of it is read.
pub struct Bounds;

impl Bounds {
    pub const PARENT_REFS: usize = 32;
    pub const HOSTNAMES: usize = 16;
    pub const RULES: usize = 16;
    pub const MATCHES_PER_RULE: usize = 64;
    /// Across all the rules of a route.
    pub const MATCHES: usize = 128;
    /// Header and query-param matches of one match, filters and backendRefs of one rule,
    /// `set`, `add` and `remove` of one header modifier.
    pub const LIST: usize = 16;
    /// A backendRef's `weight`: 16 of them sum to less than `u32::MAX`.
    pub const WEIGHT: i32 = 1_000_000;
}

const METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
];

/// One match of a rule.
#[derive(Debug, Clone)]
pub struct Match {
    pub path: PathMatch,
    pub headers: Vec<(String, String)>,
    pub query: Vec<(String, String)>,
    pub method: Option<String>,
}

/// One rule, read.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its `name`, else its index.
    pub name: String,
    pub matches: Vec<Match>,
    /// Set only without a redirect.
    pub backends: Vec<WeightedBackend>,
    pub redirect: Option<HttpRequestRedirectFilter>,
    pub request_headers: HeaderModifier,
    pub response_headers: HeaderModifier,
    pub rewrite: Option<(Option<String>, Option<HttpPathModifier>)>,
    pub timeouts: Timeouts,
}

/// The rules of `route`, or why it is refused whole; its hostnames (empty when it is
/// refused); and why its references do not all resolve (the first such reason), if they
/// do not.
pub struct Read {
    pub hostnames: Vec<HostPattern>,
    pub rules: Result<Vec<Rule>, Why>,
    pub unresolved: Option<Why>,
}

fn refused(why: Why) -> Read {
    Read {
        hostnames: Vec::new(),
        rules: Err(why),
        unresolved: None,
    }
}

/// At most `max` of `what`.
fn bounded<T>(list: &[T], max: usize, what: &str) -> Result<(), Why> {
    match list.len() > max {
        true => Err(unsupported(format!(
            "{} {what}: at most {max} are allowed",
            list.len()
        ))),
        false => Ok(()),
    }
}

/// The route's hostnames, each a valid Gateway API hostname, once its lists are within
/// the CRD's bounds.
fn bounded_hostnames(route: &HttpRoute) -> Result<Vec<HostPattern>, Why> {
    let spec = &route.spec;
    bounded(&spec.parent_refs, Bounds::PARENT_REFS, "parentRefs")?;
    bounded(&spec.hostnames, Bounds::HOSTNAMES, "hostnames")?;
    bounded(&spec.rules, Bounds::RULES, "rules")?;
    let matches: usize = spec.rules.iter().map(|r| r.matches.len()).sum();
    if matches > Bounds::MATCHES {
        return Err(unsupported(format!(
            "{matches} matches in all: at most {} are allowed",
            Bounds::MATCHES
        )));
    }
    spec.hostnames
        .iter()
        .map(|h| match hostnames::invalid(h) {
            Some(why) => Err(unsupported(why)),
            None => Ok(hostnames::pattern(h)),
        })
        .collect()
}

/// The rules of `route`, read; a `tenant` with `hosts` bounds the hostnames its
/// rewrites may send.
pub fn read(
    route: &HttpRoute,
    backends: &Backends<'_>,
    grants: &[Arc<ReferenceGrant>],
    policy: &BackendPolicy,
    tenant: Option<&TenantBounds>,
) -> Read {
    let namespace = route.metadata.namespace.as_deref().unwrap_or("");
    let hostnames = match bounded_hostnames(route) {
        Ok(h) => h,
        Err(why) => return refused(why),
    };
    let mut unresolved = None;
    let default_rule = [Default::default()];
    let spec_rules = match route.spec.rules.is_empty() {
        true => &default_rule[..],
        false => &route.spec.rules[..],
    };
    let mut rules = Vec::new();
    for (i, r) in spec_rules.iter().enumerate() {
        let name = r.name.clone().unwrap_or_else(|| i.to_string());
        let rule = (|| -> Result<Rule, Why> {
            let matches = match r.matches.is_empty() {
                true => vec![Match {
                    path: PathMatch::Prefix("/".into()),
                    headers: vec![],
                    query: vec![],
                    method: None,
                }],
                false => {
                    bounded(&r.matches, Bounds::MATCHES_PER_RULE, "matches")?;
                    r.matches.iter().map(read_match).collect::<Result<_, _>>()?
                }
            };
            bounded(&r.filters, Bounds::LIST, "filters")?;
            bounded(&r.backend_refs, Bounds::LIST, "backendRefs")?;
            let mut rule = Rule {
                name: name.clone(),
                matches,
                backends: Vec::new(),
                redirect: None,
                request_headers: HeaderModifier::default(),
                response_headers: HeaderModifier::default(),
                rewrite: None,
                timeouts: timeouts(r.timeouts.as_ref())?,
            };
            for f in &r.filters {
                filter(f, &mut rule)?;
            }
            rewrite_within(&rule, tenant)?;
            let prefix_modifier = rule
                .redirect
                .as_ref()
                .and_then(|r| r.path.as_ref())
                .into_iter()
                .chain(rule.rewrite.as_ref().and_then(|r| r.1.as_ref()))
                .any(|p| p.type_ == "ReplacePrefixMatch");
            let one_prefix = match &r.matches[..] {
                [m] => m
                    .path
                    .as_ref()
                    .is_none_or(|p| p.type_.as_deref().unwrap_or("PathPrefix") == "PathPrefix"),
                _ => false,
            };
            if prefix_modifier && !one_prefix {
                return Err(unsupported(format!(
                    "rule {name}: ReplacePrefixMatch needs exactly one PathPrefix match"
                )));
            }
            if rule.redirect.is_some() && rule.rewrite.is_some() {
                return Err((
                    "IncompatibleFilters",
                    format!("rule {name}: RequestRedirect and URLRewrite cannot be combined"),
                ));
            }
            for b in &r.backend_refs {
                if !b.filters.is_empty() {
                    return Err((
                        "UnsupportedValue",
                        format!("rule {name}: backendRef filters are not supported"),
                    ));
                }
                let weight = b.weight.unwrap_or(1);
                let weight = u32::try_from(weight)
                    .ok()
                    .filter(|_| weight <= Bounds::WEIGHT)
                    .ok_or_else(|| {
                        unsupported(format!(
                            "rule {name}: weight {weight} is not within 0 to {}",
                            Bounds::WEIGHT
                        ))
                    })?;
                let backend =
                    backend(b, namespace, backends, grants, policy).unwrap_or_else(|why| {
                        let reason = why.1.clone();
                        unresolved.get_or_insert(why);
                        Backend::Invalid { reason }
                    });
                rule.backends.push(WeightedBackend { weight, backend });
            }
            if rule.redirect.is_some() && !rule.backends.is_empty() {
                return Err((
                    "IncompatibleFilters",
                    format!("rule {name}: RequestRedirect cannot be used with backendRefs"),
                ));
            }
            Ok(rule)
        })();
        match rule {
            Ok(rule) => rules.push(rule),
            Err(why) => {
                return Read {
                    hostnames,
                    rules: Err(why),
                    unresolved,
                };
            }
        }
    }
    Read {
        hostnames,
        rules: Ok(rules),
        unresolved,
    }
}

fn unsupported(what: String) -> Why {
    ("UnsupportedValue", what)
}

fn read_match(m: &super::types::HttpRouteMatch) -> Result<Match, Why> {
    let path = match &m.path {
        None => PathMatch::Prefix("/".into()),
        Some(p) => {
            let value = p.value.clone().unwrap_or_else(|| "/".into());
            let kind = p.type_.as_deref().unwrap_or("PathPrefix");
            if let Some(why) =
                path_invalid(&value).filter(|_| kind == "Exact" || kind == "PathPrefix")
            {
                return Err(unsupported(why));
            }
            match kind {
                "Exact" => PathMatch::Exact(value),
                "PathPrefix" => {
                    let trimmed = value.trim_end_matches('/');
                    PathMatch::Prefix(if trimmed.is_empty() {
                        "/".into()
                    } else {
                        trimmed.into()
                    })
                }
                other => {
                    return Err(unsupported(format!(
                        "path match type {other} is not supported: use Exact or PathPrefix"
                    )));
                }
            }
        }
    };
    bounded(&m.headers, Bounds::LIST, "header matches")?;
    bounded(&m.query_params, Bounds::LIST, "query param matches")?;
    let mut headers: Vec<(String, String)> = Vec::new();
    for h in &m.headers {
        if let Some(t) = h.type_.as_deref().filter(|t| *t != "Exact") {
            return Err(unsupported(format!(
                "header match type {t} is not supported: use Exact"
            )));
        }
        header(&h.name, Some(&h.value))?;
        let name = h.name.to_ascii_lowercase();
        // Only the first of equivalent names counts.
        if !headers.iter().any(|(n, _)| *n == name) {
            headers.push((name, h.value.clone()));
        }
    }
    let mut query: Vec<(String, String)> = Vec::new();
    for q in &m.query_params {
        if let Some(t) = q.type_.as_deref().filter(|t| *t != "Exact") {
            return Err(unsupported(format!(
                "query param match type {t} is not supported: use Exact"
            )));
        }
        if !query.iter().any(|(n, _)| *n == q.name) {
            query.push((q.name.clone(), q.value.clone()));
        }
    }
    if let Some(method) = m.method.as_deref().filter(|x| !METHODS.contains(x)) {
        return Err(unsupported(format!(
            "method {method} is not an HTTP method the Gateway API names"
        )));
    }
    Ok(Match {
        path,
        headers,
        query,
        method: m.method.clone(),
    })
}

/// A header name (and value) the proxy can write as one header line.
fn header(name: &str, value: Option<&str>) -> Result<(), Why> {
    header_invalid(name, value).map_or(Ok(()), |why| Err(unsupported(why)))
}

fn modifier(f: Option<&HttpHeaderFilter>, what: &str) -> Result<HeaderModifier, Why> {
    let f = f.ok_or_else(|| unsupported(format!("filter {what} has no {what} field")))?;
    bounded(&f.set, Bounds::LIST, "headers to set")?;
    bounded(&f.add, Bounds::LIST, "headers to add")?;
    bounded(&f.remove, Bounds::LIST, "headers to remove")?;
    for h in f.set.iter().chain(&f.add) {
        header(&h.name, Some(&h.value))?;
    }
    for name in &f.remove {
        header(name, None)?;
    }
    let names = f.set.iter().chain(&f.add).map(|h| &h.name);
    if let Some(why) = names.chain(&f.remove).find_map(|n| protected(n)) {
        return Err(unsupported(why));
    }
    let pairs = |v: &[super::types::HttpHeader]| {
        v.iter()
            .map(|h| (h.name.to_ascii_lowercase(), h.value.clone()))
            .collect()
    };
    Ok(HeaderModifier {
        set: pairs(&f.set),
        add: pairs(&f.add),
        remove: f.remove.iter().map(|n| n.to_ascii_lowercase()).collect(),
    })
}

/// A path modifier's value is one absolute path of URL characters, without a dot
/// segment: the path it writes is the one sent or redirected to, never another authority.
fn path_modifier(p: &HttpPathModifier) -> Result<(), Why> {
    let written = |path: &str| match path_invalid(path).or_else(|| dot_segment(path)) {
        Some(why) => Err(unsupported(why)),
        None => Ok(()),
    };
    match (
        p.type_.as_str(),
        &p.replace_full_path,
        &p.replace_prefix_match,
    ) {
        ("ReplaceFullPath", Some(path), _) => written(path),
        // An empty replacement takes the prefix away.
        ("ReplacePrefixMatch", _, Some(path)) if path.is_empty() => Ok(()),
        ("ReplacePrefixMatch", _, Some(path)) => written(path),
        (t, _, _) => Err(unsupported(format!(
            "path modifier type {t} without its value is not supported: use ReplaceFullPath or ReplacePrefixMatch"
        ))),
    }
}

fn filter(f: &HttpRouteFilter, rule: &mut Rule) -> Result<(), Why> {
    match f.type_.as_str() {
        "RequestHeaderModifier" => {
            rule.request_headers =
                modifier(f.request_header_modifier.as_ref(), "requestHeaderModifier")?
        }
        "ResponseHeaderModifier" => {
            rule.response_headers = modifier(
                f.response_header_modifier.as_ref(),
                "responseHeaderModifier",
            )?
        }
        "RequestRedirect" => {
            let r = f.request_redirect.clone().ok_or_else(|| {
                unsupported("filter RequestRedirect has no requestRedirect field".into())
            })?;
            if let Some(s) = r
                .scheme
                .as_deref()
                .filter(|s| !matches!(*s, "http" | "https"))
            {
                return Err(unsupported(format!(
                    "redirect scheme {s} is not supported: use http or https"
                )));
            }
            if let Some(c) = r
                .status_code
                .filter(|c| ![301, 302, 303, 307, 308].contains(c))
            {
                return Err(unsupported(format!(
                    "redirect status code {c} is not supported: use 301, 302, 303, 307 or 308"
                )));
            }
            if let Some(p) = r.port.filter(|p| !(1..=65535).contains(p)) {
                return Err(unsupported(format!("redirect port {p} is not a TCP port")));
            }
            if let Some(why) = r.hostname.as_deref().and_then(precise_invalid) {
                return Err(unsupported(why));
            }
            r.path.as_ref().map(path_modifier).transpose()?;
            rule.redirect = Some(r);
        }
        "URLRewrite" => {
            let r = f
                .url_rewrite
                .as_ref()
                .ok_or_else(|| unsupported("filter URLRewrite has no urlRewrite field".into()))?;
            if let Some(why) = r.hostname.as_deref().and_then(precise_invalid) {
                return Err(unsupported(why));
            }
            r.path.as_ref().map(path_modifier).transpose()?;
            rule.rewrite = Some((r.hostname.clone(), r.path.clone()));
        }
        other => return Err(unsupported(format!("filter {other} is not supported"))),
    }
    Ok(())
}

/// A rewrite's hostname is the `Host` the tenant's backends are sent: one of the names
/// the tenant may claim (its `hosts`), as the route's own hostnames are, so a route
/// cannot speak to a backend in another tenant's name. (A redirect's hostname is where
/// the client is sent, which leafgate does not serve for it: not bounded.)
fn rewrite_within(rule: &Rule, tenant: Option<&TenantBounds>) -> Result<(), Why> {
    let Some((Some(host), _)) = &rule.rewrite else {
        return Ok(());
    };
    match tenant.filter(|t| !t.may_claim(&hostnames::pattern(host))) {
        Some(t) => {
            let hosts: Vec<String> = t.hosts.iter().flatten().map(ToString::to_string).collect();
            Err(unsupported(format!(
                "rule {}: URLRewrite hostname {host} is not allowed (tenant {} {})",
                rule.name,
                t.name,
                may_claim_only(&hosts)
            )))
        }
        None => Ok(()),
    }
}

fn timeouts(t: Option<&super::types::HttpRouteTimeouts>) -> Result<Timeouts, Why> {
    let Some(t) = t else {
        return Ok(Timeouts::default());
    };
    let parse = |v: &Option<String>, key: &str| {
        v.as_deref()
            .map(|text| duration(text).ok_or_else(|| unsupported(format!("timeouts.{key} `{text}` is not a Gateway API duration (`10s`, `1h30m`, `500ms`)"))))
            .transpose()
    };
    let out = Timeouts {
        request: parse(&t.request, "request")?,
        backend_request: parse(&t.backend_request, "backendRequest")?,
    };
    // As the CRD's rule: `0s` is no timeout, so a request timeout of `0s` bounds nothing
    // and a backendRequest of `0s` is bounded by the request timeout.
    if let (Some(r), Some(b)) = (out.request, out.backend_request)
        && r != Duration::ZERO
        && b > r
    {
        return Err(unsupported(
            "timeouts.backendRequest must not be longer than timeouts.request".into(),
        ));
    }
    Ok(out)
}

/// A backendRef resolved: a core Service (not ExternalName), in another namespace only
/// with a ReferenceGrant, with the port named.
fn backend(
    b: &super::types::HttpBackendRef,
    namespace: &str,
    backends: &Backends<'_>,
    grants: &[Arc<ReferenceGrant>],
    policy: &BackendPolicy,
) -> Result<Backend, Why> {
    let group = b.group.as_deref().unwrap_or("");
    let kind = b.kind.as_deref().unwrap_or("Service");
    if !group.is_empty() || kind != "Service" {
        return Err((
            "InvalidKind",
            format!(
                "backendRef {group}/{kind} {}: only core Services are supported",
                b.name
            ),
        ));
    }
    let ns = b.namespace.as_deref().unwrap_or(namespace);
    let from = From {
        group: GROUP,
        kind: "HTTPRoute",
        namespace,
    };
    if !grants::permitted(
        grants,
        from,
        To {
            group: "",
            kind: "Service",
            namespace: ns,
            name: &b.name,
        },
    ) {
        return Err((
            "RefNotPermitted",
            format!(
                "Service {ns}/{} is in another namespace and no ReferenceGrant there allows it",
                b.name
            ),
        ));
    }
    let Some(port) = b.port else {
        return Err((
            "BackendNotFound",
            format!("backendRef Service {ns}/{} names no port", b.name),
        ));
    };
    let service = IngressServiceBackend {
        name: b.name.clone(),
        port: Some(ServiceBackendPort {
            number: Some(port),
            name: None,
        }),
    };
    let resolved = backends.resolve(ns, &service, None::<BackendProtocol>, policy);
    match resolved.missing {
        true => Err(("BackendNotFound", resolved.problem.unwrap_or_default())),
        false => Ok(Backend::Service(resolved.backend)),
    }
}
