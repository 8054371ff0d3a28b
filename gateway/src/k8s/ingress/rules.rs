//! An Ingress's rules read as (host, path, backend) triples, as the Ingress spec defines
//! them: hosts exact or `*.suffix` matching exactly one label (no host: any host), paths
//! `Exact` as written and `Prefix` element-wise with a trailing `/` ignored
//! (`ImplementationSpecific` as `Prefix`), and `defaultBackend` as the catch-all and as
//! the `/` of each rule host that has none (as ingress-nginx does). The router does the
//! matching: exact before the longest prefix, prefixes on whole segments.

use foldhash::{HashSet, HashSetExt};
use k8s_openapi::api::networking::v1::{Ingress, IngressServiceBackend};

use crate::config::{HostPattern, PathMatch};

/// Every (host, path, service backend) the Ingress asks for, in spec order: its rules'
/// paths, then `defaultBackend` as the catch-all and as the `/` of each rule host that
/// has none. A backend of `None` names a resource instead of a Service. What cannot be
/// read (a bad host, a relative path, an unknown pathType) is left out and reported.
pub fn wanted<'i>(
    ingress: &'i Ingress,
    problems: &mut Vec<String>,
) -> Vec<(HostPattern, PathMatch, Option<&'i IngressServiceBackend>)> {
    let mut out = Vec::new();
    let Some(spec) = ingress.spec.as_ref() else {
        return out;
    };
    // The rule hosts in order, each once (the set keeps an Ingress of thousands of hosts
    // linear).
    let mut hosts: Vec<HostPattern> = Vec::new();
    let mut seen: HashSet<HostPattern> = HashSet::new();
    for rule in spec.rules.iter().flatten() {
        let host = match rule.host.as_deref().filter(|h| !h.is_empty()) {
            None => HostPattern::Any,
            Some(text) => match ingress_host(text) {
                Ok(host) => host,
                Err(e) => {
                    problems.push(e);
                    continue;
                }
            },
        };
        if host != HostPattern::Any && seen.insert(host.clone()) {
            hosts.push(host.clone());
        }
        for p in rule.http.iter().flat_map(|h| &h.paths) {
            match path_match(p.path.as_deref(), &p.path_type) {
                Ok(path) => out.push((host.clone(), path, p.backend.service.as_ref())),
                Err(e) => problems.push(e),
            }
        }
    }
    if let Some(default) = &spec.default_backend {
        let root = PathMatch::Prefix("/".to_string());
        let rooted: HashSet<HostPattern> = out
            .iter()
            .filter(|(_, p, _)| *p == root)
            .map(|(h, _, _)| h.clone())
            .collect();
        for host in hosts.into_iter().chain([HostPattern::Any]) {
            if !rooted.contains(&host) {
                out.push((host, root.clone(), default.service.as_ref()));
            }
        }
    }
    out
}

/// An Ingress host: exact, or `*.suffix` matching exactly one label. A bare `*` is not a
/// host the Ingress spec allows (no host means any host).
pub fn ingress_host(text: &str) -> Result<HostPattern, String> {
    match HostPattern::parse_ingress(text) {
        Ok(HostPattern::Any) => Err(format!(
            "host `{text}` is not valid: leave the host out to match any host"
        )),
        Ok(host) => Ok(host),
        Err(e) => Err(e),
    }
}

/// A path and its `pathType`: `Exact` as written; `Prefix` and `ImplementationSpecific`
/// element-wise with any trailing `/` ignored (the router matches whole segments).
pub fn path_match(path: Option<&str>, path_type: &str) -> Result<PathMatch, String> {
    let path = path.filter(|p| !p.is_empty());
    if let Some(p) = path
        && !p.starts_with('/')
    {
        return Err(format!("path `{p}` does not start with `/`"));
    }
    match path_type {
        "Exact" => path
            .map(|p| PathMatch::Exact(p.to_string()))
            .ok_or_else(|| "an Exact path needs a `path`".to_string()),
        "Prefix" | "ImplementationSpecific" => {
            let trimmed = path.unwrap_or("/").trim_end_matches('/');
            Ok(PathMatch::Prefix(match trimmed {
                "" => "/".to_string(),
                p => p.to_string(),
            }))
        }
        other => Err(format!(
            "pathType `{other}` is unknown: use Exact, Prefix or ImplementationSpecific"
        )),
    }
}
