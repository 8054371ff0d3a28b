//! What the proxy serves of a translation (`serve`): the entries it routes, the 500s, the
//! table of candidates, the routes refused whole for a feature it does not route yet, and the listeners whose
//! address could not be bound.

use std::net::SocketAddr;

use serde_json::json;

use super::{INFRA, World, backend, find, http, route_cond};
use crate::k8s::gateway::serve::{ServedListener, served, unbound};
use crate::k8s::gateway::table::Target;
use crate::k8s::ingress::model::IngressBackend;

const ADDR: &str = "10.0.0.10:80";

fn addr() -> SocketAddr {
    ADDR.parse().unwrap()
}

/// One router entry: host, path, and each candidate's name and header-match count.
type Row<'l> = (String, String, Vec<(&'l str, usize)>);

/// The address's table, as rows.
fn table(l: &ServedListener) -> Vec<Row<'_>> {
    l.paths()
        .map(|p| {
            let c = p.candidates.iter();
            let c = c.map(|c| (c.name.as_str(), c.headers.len())).collect();
            (p.host.to_string(), p.path.to_string(), c)
        })
        .collect()
}

#[test]
fn header_matches_are_served_in_precedence_order_and_fall_to_less_specific_paths() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    w.route(INFRA, "plain", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/v2"}, "headers": [{"name": "Version", "value": "two"}]}], "backendRefs": [backend("infra-backend-v2")]}]}));
    w.route(INFRA, "headers", "2026-01-03T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [
        {"backendRefs": [backend("infra-backend-v1")]},
        {"matches": [{"headers": [{"name": "version", "value": "two"}, {"name": "color", "value": "blue"}]}], "backendRefs": [backend("infra-backend-v2")]},
    ]}));
    let mut m = w.model();
    let s = served(&mut m, &w.gateways);
    assert_eq!(route_cond(&m, "headers", "Accepted"), (true, "Accepted"));
    assert_eq!(s.listeners.len(), 1);
    assert_eq!(s.listeners[0].addr, addr());
    let (plain, headers) = (
        "httproute/gateway-conformance-infra/plain/0",
        "httproute/gateway-conformance-infra/headers",
    );
    assert_eq!(
        table(&s.listeners[0]),
        [
            // The longer prefix first, then `/`'s candidates for what it does not take.
            (
                "*".to_string(),
                "prefix /v2".to_string(),
                vec![
                    (plain, 1),
                    (&*format!("{headers}/1"), 2),
                    (&*format!("{headers}/0"), 0)
                ]
            ),
            (
                "*".to_string(),
                "prefix /".to_string(),
                vec![(&*format!("{headers}/1"), 2), (&*format!("{headers}/0"), 0)]
            ),
        ]
    );
    let names: Vec<&str> = s.listeners[0]
        .routes
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(
        names,
        [&*format!("{headers}/0"), &*format!("{headers}/1"), plain]
    );
}

#[test]
fn rewrites_and_timeouts_are_served_with_their_candidates_never_as_plain_routes() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    w.route(INFRA, "plain", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/plain"}}], "backendRefs": [backend("infra-backend-v1")]}]}));
    w.route(INFRA, "filtered", "2026-01-03T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [
        {"matches": [{"path": {"type": "PathPrefix", "value": "/timed"}}], "timeouts": {"request": "10s", "backendRequest": "0s"}, "backendRefs": [backend("infra-backend-v2")]},
        {"matches": [{"path": {"type": "PathPrefix", "value": "/rewritten"}}], "filters": [{"type": "URLRewrite", "urlRewrite": {"hostname": "one.example.org"}}], "backendRefs": [backend("infra-backend-v2")]},
    ]}));
    let mut m = w.model();
    let s = served(&mut m, &w.gateways);
    assert_eq!(route_cond(&m, "filtered", "Accepted"), (true, "Accepted"));
    assert_eq!(m.gateways[0].listeners[0].attached_routes, 2);
    let candidate = |path: &str| {
        let p = s.listeners[0]
            .paths()
            .find(|p| p.path.to_string() == path)
            .unwrap();
        p.candidates[0].clone()
    };
    assert!(
        candidate("prefix /plain").plain().is_some(),
        "a plain rule stays one"
    );
    let timed = candidate("prefix /timed");
    assert!(
        timed.plain().is_none(),
        "a rule with timeouts goes to hyper's path"
    );
    assert_eq!(
        (timed.timeouts.request, timed.timeouts.backend_request),
        (
            Some(std::time::Duration::from_secs(10)),
            Some(std::time::Duration::ZERO)
        )
    );
    let rewritten = candidate("prefix /rewritten");
    assert!(
        rewritten.plain().is_none(),
        "a rewrite goes to hyper's path"
    );
    assert_eq!(
        rewritten
            .rewrite
            .as_ref()
            .and_then(|r| r.hostname.as_deref()),
        Some("one.example.org")
    );
}

#[test]
fn an_invalid_backend_answers_500_and_a_service_forwards() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    w.route(INFRA, "both", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [
        {"matches": [{"path": {"type": "PathPrefix", "value": "/ok"}}], "backendRefs": [backend("infra-backend-v1")]},
        {"matches": [{"path": {"type": "PathPrefix", "value": "/kind"}}], "backendRefs": [{"group": "example.com", "kind": "Nope", "name": "x"}]},
        {"matches": [{"path": {"type": "PathPrefix", "value": "/none"}}]},
    ]}));
    let mut m = w.model();
    let s = served(&mut m, &w.gateways);
    let l = &s.listeners[0];
    assert!(matches!(
        &l.routes[..],
        [r] if matches!(&r.backend, IngressBackend::Service { .. }) && r.path.to_string() == "prefix /ok"
    ));
    let mut targets: Vec<(String, Target)> = l
        .paths()
        .map(|p| (p.path.to_string(), p.candidates[0].plain().unwrap().clone()))
        .collect();
    targets.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(targets.len(), 3, "{targets:?}");
    assert!(
        matches!(&targets[0], (p, Target::Invalid(why)) if p == "prefix /kind" && !why.is_empty())
    );
    assert_eq!(
        targets[1],
        (
            "prefix /none".to_string(),
            Target::Invalid("the rule has no backendRefs with weight".into())
        )
    );
    assert_eq!(
        targets[2],
        (
            "prefix /ok".to_string(),
            Target::Backend("httproute/gateway-conformance-infra/both/0".into())
        )
    );
}

#[test]
fn a_listener_whose_address_cannot_be_bound_is_port_unavailable() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    let mut m = w.model();
    served(&mut m, &w.gateways);
    assert!(find(&m.gateways[0].listeners[0].conditions, "Programmed").status);
    unbound(&mut m, &w.gateways, &[(addr(), "address in use".into())]);
    for type_ in ["Accepted", "Programmed"] {
        let c = find(&m.gateways[0].listeners[0].conditions, type_);
        assert_eq!(
            (c.status, c.reason, c.message.as_str()),
            (false, "PortUnavailable", "address in use")
        );
    }
}
