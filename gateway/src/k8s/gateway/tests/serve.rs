//! What the proxy serves of a translation (`serve`): the entries it routes, the 500s, the
//! routes refused whole for a feature it does not route yet, and the listeners whose
//! address could not be bound.

use std::net::SocketAddr;

use serde_json::json;

use super::{INFRA, World, backend, find, http, route_cond};
use crate::k8s::gateway::serve::{served, unbound};
use crate::k8s::ingress::model::IngressBackend;

const ADDR: &str = "10.0.0.10:80";

fn addr() -> SocketAddr {
    ADDR.parse().unwrap()
}

#[test]
fn a_route_needing_a_header_match_is_refused_whole_and_its_plain_rule_not_served() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    w.route(INFRA, "plain", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/plain"}}], "backendRefs": [backend("infra-backend-v1")]}]}));
    w.route(INFRA, "headers", "2026-01-03T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [
        {"matches": [{"path": {"type": "PathPrefix", "value": "/also-plain"}}], "backendRefs": [backend("infra-backend-v1")]},
        {"matches": [{"headers": [{"name": "version", "value": "two"}]}], "backendRefs": [backend("infra-backend-v2")]},
    ]}));
    let mut m = w.model();
    assert_eq!(route_cond(&m, "headers", "Accepted"), (true, "Accepted"));
    let s = served(&mut m, &w.gateways);
    assert_eq!(
        route_cond(&m, "headers", "Accepted"),
        (false, "UnsupportedValue")
    );
    let r = m.http_routes.iter().find(|r| r.name == "headers").unwrap();
    assert!(
        find(&r.parents[0].conditions, "Accepted")
            .message
            .contains("header matches"),
        "{:?}",
        r.parents[0].conditions
    );
    assert_eq!(route_cond(&m, "plain", "Accepted"), (true, "Accepted"));
    let listener = &m.gateways[0].listeners[0];
    assert_eq!(
        listener.attached_routes, 1,
        "the refused route is not attached"
    );
    assert_eq!(s.listeners.len(), 1);
    assert_eq!(s.listeners[0].addr, addr());
    let names: Vec<&str> = s.listeners[0]
        .routes
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(names, ["httproute/gateway-conformance-infra/plain/0"]);
    assert!(m.routes.iter().all(|e| !e.name.contains("/headers/")));
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
    let mut invalid: Vec<(String, &str)> = l
        .invalid
        .iter()
        .map(|i| (i.path.to_string(), i.reason.as_str()))
        .collect();
    invalid.sort();
    assert_eq!(invalid.len(), 2, "{invalid:?}");
    assert!(invalid[0].0 == "prefix /kind" && !invalid[0].1.is_empty());
    assert_eq!(
        invalid[1],
        (
            "prefix /none".to_string(),
            "the rule has no backendRefs with weight"
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
