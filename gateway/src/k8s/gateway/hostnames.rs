//! Gateway API hostnames (`apis/v1/shared_types.go` `Hostname`, `httproute_types.go`
//! `hostnames`): RFC 1123 names, lowercase, no IP, optionally prefixed by one wildcard
//! label `*.` that matches ONE OR MORE labels (`*.example.com` matches `a.example.com`
//! and `a.b.example.com`, never `example.com`), and the intersection of a listener's
//! hostname with a route's, as host patterns ([`HostPattern::covers`], which bounds
//! tenants' hosts too).

use crate::config::HostPattern;

/// Why `text` is not a Gateway API hostname, if it is not.
pub fn invalid(text: &str) -> Option<String> {
    let name = text.strip_prefix("*.").unwrap_or(text);
    if text.parse::<std::net::IpAddr>().is_ok() {
        return Some(format!(
            "hostname `{text}` is an IP address, which the Gateway API does not allow"
        ));
    }
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    match text.len() <= 253 && name.split('.').all(label_ok) {
        true => None,
        false => Some(format!(
            "hostname `{text}` is not a lowercase RFC 1123 name, optionally prefixed by `*.`"
        )),
    }
}

/// The hostname requests match where a listener's `hostname` (`None`: any) and a route's
/// hostname meet: the more specific of the two (the one the other covers), or `None` when
/// they do not intersect. `very.specific.com` and `*.specific.com` meet at
/// `very.specific.com`; `*.a.example.com` and `*.example.com` at `*.a.example.com`.
pub fn intersect(listener: Option<&HostPattern>, route: &HostPattern) -> Option<HostPattern> {
    match listener {
        None => Some(route.clone()),
        Some(l) if l.covers(route) => Some(route.clone()),
        Some(l) => route.covers(l).then(|| l.clone()),
    }
}

/// The hostnames a route serves on a listener: the listener's (or `*`) when the route
/// names none; else each of its hostnames that intersects, as the intersection, once each
/// and in order; `None` when it names some and none intersects.
pub fn effective(
    listener: Option<&HostPattern>,
    route: &[HostPattern],
) -> Option<Vec<HostPattern>> {
    if route.is_empty() {
        return Some(vec![listener.cloned().unwrap_or(HostPattern::Any)]);
    }
    let mut out: Vec<HostPattern> = Vec::new();
    for h in route {
        if let Some(i) = intersect(listener, h)
            && !out.contains(&i)
        {
            out.push(i);
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A Gateway API hostname as the router takes it: `*` any host, `*.s` a suffix of one or
/// more labels, else an exact name.
pub fn pattern(host: &str) -> HostPattern {
    match host {
        "*" => HostPattern::Any,
        h => match h.strip_prefix('*') {
            Some(suffix) => HostPattern::Wildcard(suffix.to_string()),
            None => HostPattern::Exact(h.to_string()),
        },
    }
}
