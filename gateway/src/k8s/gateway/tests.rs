//! The translation against the spec's rules, each test named after the upstream
//! conformance ShortName that covers it (gateway-api v1.6.1 `conformance/tests/`), with
//! the reasons and statuses the upstream Go test checks.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::incremental::translate;
use super::model::{Action, Backend, Cond, Model, Objects, PathModifier, Settings};
use super::types::{Gateway, GatewayClass, HttpRoute, ReferenceGrant};
use super::values::duration;
use crate::config::{HostPattern, PathMatch};
use crate::k8s::ingress::model::{BackendPolicy, TenantBounds};

mod changes;
mod incremental;
mod serve;
mod status;

const INFRA: &str = "gateway-conformance-infra";
const WEB: &str = "gateway-conformance-web-backend";

fn arc<T: DeserializeOwned>(v: Value) -> Arc<T> {
    Arc::new(serde_json::from_value(v).unwrap())
}

#[derive(Default)]
struct World {
    classes: Vec<Arc<GatewayClass>>,
    gateways: Vec<Arc<Gateway>>,
    routes: Vec<Arc<HttpRoute>>,
    grants: Vec<Arc<ReferenceGrant>>,
    namespaces: Vec<Arc<Namespace>>,
    services: Vec<Arc<Service>>,
    slices: Vec<Arc<EndpointSlice>>,
    settings: Settings,
}

impl World {
    /// The conformance base: the class, the namespaces with their labels, the backends.
    fn new() -> Self {
        let mut w = World {
            settings: Settings {
                controller_name: "leafgate.io/gateway-controller".into(),
                addresses: vec!["10.0.0.10".parse().unwrap(), "10.0.0.11".parse().unwrap()],
                tenants: vec![],
                backends: BackendPolicy::default(),
            },
            ..Default::default()
        };
        w.classes.push(arc(json!({"metadata": {"name": "leafgate", "generation": 1}, "spec": {"controllerName": "leafgate.io/gateway-controller"}})));
        w.classes.push(arc(
            json!({"metadata": {"name": "other"}, "spec": {"controllerName": "example.com/other"}}),
        ));
        for (ns, label) in [
            (INFRA, "infra"),
            (WEB, "backend"),
            ("gateway-conformance-app-backend", "backend"),
        ] {
            w.namespaces.push(arc(
                json!({"metadata": {"name": ns, "labels": {"gateway-conformance": label}}}),
            ));
        }
        for (ns, svc, ip) in [
            (INFRA, "infra-backend-v1", "10.1.0.1"),
            (INFRA, "infra-backend-v2", "10.1.0.2"),
            (INFRA, "infra-backend-v3", "10.1.0.3"),
            (WEB, "web-backend", "10.1.0.4"),
        ] {
            w.services.push(arc(json!({"metadata": {"name": svc, "namespace": ns}, "spec": {"ports": [{"port": 8080, "targetPort": 3000}]}})));
            w.slices.push(arc(json!({
                "metadata": {"name": format!("{svc}-1"), "namespace": ns, "labels": {"kubernetes.io/service-name": svc, "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
                "addressType": "IPv4", "ports": [{"port": 3000}], "endpoints": [{"addresses": [ip]}]
            })));
        }
        w
    }

    fn gateway(&mut self, name: &str, listeners: Value) -> &mut Self {
        self.gateways.push(arc(json!({
            "metadata": {"name": name, "namespace": INFRA, "generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"gatewayClassName": "leafgate", "listeners": listeners}
        })));
        self
    }

    fn route(&mut self, ns: &str, name: &str, created: &str, spec: Value) -> &mut Self {
        self.routes.push(arc(json!({
            "metadata": {"name": name, "namespace": ns, "generation": 2, "creationTimestamp": created},
            "spec": spec
        })));
        self
    }

    fn objects(&self) -> Objects<'_> {
        Objects {
            classes: &self.classes,
            gateways: &self.gateways,
            routes: &self.routes,
            grants: &self.grants,
            namespaces: &self.namespaces,
            services: &self.services,
            slices: &self.slices,
            secrets: &[],
        }
    }

    fn model(&self) -> Model {
        translate(&self.objects(), &self.settings)
    }
}

fn http(name: &str, from: &str) -> Value {
    json!({"name": name, "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": from}}})
}

/// Route `r{i}` in the infra namespace, on its own hostname `r{i}.example`, to `svc`.
fn own_host_route(i: usize, generation: i64, svc: &str) -> Value {
    json!({
        "metadata": {"name": format!("r{i}"), "namespace": INFRA, "generation": generation,
                     "uid": format!("uid-r{i}"), "creationTimestamp": "2026-01-02T00:00:00Z"},
        "spec": {"parentRefs": [{"name": "all"}], "hostnames": [format!("r{i}.example")],
                 "rules": [{"backendRefs": [backend(svc)]}]}
    })
}

fn backend(name: &str) -> Value {
    json!({"name": name, "port": 8080})
}

fn find<'m>(conds: &'m [Cond], type_: &str) -> &'m Cond {
    conds
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} in {conds:?}"))
}

/// (status, reason) of condition `type_` of route `name`'s first parent.
fn route_cond(m: &Model, name: &str, type_: &str) -> (bool, &'static str) {
    let r = m
        .http_routes
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no status for {name}"));
    let c = find(&r.parents[0].conditions, type_);
    (c.status, c.reason)
}

fn attached(m: &Model, gateway: &str) -> Vec<i32> {
    m.gateways
        .iter()
        .find(|g| g.name == gateway)
        .unwrap()
        .listeners
        .iter()
        .map(|l| l.attached_routes)
        .collect()
}

fn served(m: &Model, route: &str) -> Vec<(String, String)> {
    m.routes
        .iter()
        .filter(|r| {
            r.name.starts_with(&format!("httproute/{INFRA}/{route}/"))
                || r.name.contains(&format!("/{route}/"))
        })
        .map(|r| (r.host.to_string(), r.path.to_string()))
        .collect()
}

#[test]
fn gatewayclass_observed_generation_bump() {
    let mut w = World::new();
    w.classes[0] = arc(
        json!({"metadata": {"name": "leafgate", "generation": 7}, "spec": {"controllerName": "leafgate.io/gateway-controller", "description": "new"}}),
    );
    let m = w.model();
    assert_eq!(m.classes.len(), 1, "only the class naming our controller");
    let c = find(&m.classes[0].conditions, "Accepted");
    assert_eq!(
        (c.status, c.reason, c.observed_generation),
        (true, "Accepted", 7)
    );
    let mut sorted = m.classes[0].supported_features.clone();
    sorted.sort();
    assert_eq!(sorted, m.classes[0].supported_features);
    assert!(sorted.contains(&"HTTPRoute") && sorted.contains(&"ReferenceGrant"));
    // What is served and tested is claimed; refused routes' features are not: the suite
    // would test them and fail.
    for served in [
        "HTTPRouteSchemeRedirect",
        "HTTPRoutePathRedirect",
        "HTTPRoutePortRedirect",
        "HTTPRoute303RedirectStatusCode",
        "HTTPRouteHostRewrite",
        "HTTPRoutePathRewrite",
        "HTTPRouteRequestTimeout",
        "HTTPRouteBackendTimeout",
        "HTTPRouteBackendProtocolWebSocket",
        "HTTPRouteBackendProtocolH2C",
    ] {
        assert!(sorted.contains(&served), "{served} is not claimed");
    }
    assert!(
        !sorted.contains(&"HTTPRouteRequestMirror"),
        "HTTPRouteRequestMirror is claimed"
    );
}

#[test]
fn gateway_invalid_parameters_ref() {
    let mut w = World::new();
    w.gateways.push(arc(json!({
        "metadata": {"name": "g", "namespace": INFRA},
        "spec": {"gatewayClassName": "leafgate", "listeners": [http("http", "Same")], "infrastructure": {"parametersRef": {"group": "invalid.io", "kind": "InvalidParameters", "name": "x"}}}
    })));
    let m = w.model();
    let c = find(&m.gateways[0].conditions, "Accepted");
    assert_eq!((c.status, c.reason), (false, "InvalidParameters"));
}

#[test]
fn gateway_listener_unsupported_protocol() {
    let mut w = World::new();
    w.gateway(
        "only-invalid",
        json!([{"name": "bad", "port": 1111, "protocol": "INVALID"}]),
    );
    w.gateway(
        "mixed",
        json!([{"name": "bad", "port": 1111, "protocol": "INVALID"}, http("http", "Same")]),
    );
    let m = w.model();
    let only = m
        .gateways
        .iter()
        .find(|g| g.name == "only-invalid")
        .unwrap();
    let c = find(&only.conditions, "Accepted");
    assert_eq!((c.status, c.reason), (false, "ListenersNotValid"));
    let l = &only.listeners[0];
    assert_eq!((l.supported_kinds.len(), l.attached_routes), (0, 0));
    let c = find(&l.conditions, "Accepted");
    assert_eq!((c.status, c.reason), (false, "UnsupportedProtocol"));
    let mixed = m.gateways.iter().find(|g| g.name == "mixed").unwrap();
    let c = find(&mixed.conditions, "Accepted");
    assert_eq!((c.status, c.reason), (true, "ListenersNotValid"));
    assert!(find(&mixed.conditions, "Programmed").status);
    assert!(find(&mixed.listeners[1].conditions, "Programmed").status);
}

#[test]
fn gateway_invalid_route_kind() {
    let mut w = World::new();
    w.gateway("invalid-only", json!([{"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"kinds": [{"kind": "InvalidRoute"}]}}]));
    w.gateway("invalid-and-valid", json!([{"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"kinds": [{"kind": "InvalidRoute"}, {"kind": "HTTPRoute"}]}}]));
    w.route(INFRA, "r", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "invalid-only"}], "rules": [{"backendRefs": [backend("infra-backend-v1")]}]}));
    let m = w.model();
    let l = &m
        .gateways
        .iter()
        .find(|g| g.name == "invalid-only")
        .unwrap()
        .listeners[0];
    assert!(l.supported_kinds.is_empty());
    let c = find(&l.conditions, "ResolvedRefs");
    assert_eq!((c.status, c.reason), (false, "InvalidRouteKinds"));
    let l = &m
        .gateways
        .iter()
        .find(|g| g.name == "invalid-and-valid")
        .unwrap()
        .listeners[0];
    assert_eq!(l.supported_kinds.len(), 1);
    assert_eq!(l.supported_kinds[0].kind, "HTTPRoute");
    assert_eq!(
        find(&l.conditions, "ResolvedRefs").reason,
        "InvalidRouteKinds"
    );
    // A listener taking no supported kind takes no route.
    assert_eq!(
        route_cond(&m, "r", "Accepted"),
        (false, "NotAllowedByListeners")
    );
    assert_eq!(attached(&m, "invalid-only"), [0]);
}

#[test]
fn gateway_listener_conflicts() {
    let mut w = World::new();
    w.gateway("g", json!([
        {"name": "a", "port": 80, "protocol": "HTTP", "hostname": "x.example"},
        {"name": "b", "port": 80, "protocol": "HTTP", "hostname": "x.example"},
        {"name": "c", "port": 80, "protocol": "HTTPS", "hostname": "y.example", "tls": {"certificateRefs": [{"name": "cert"}]}},
        {"name": "d", "port": 8080, "protocol": "HTTP"},
    ]));
    let m = w.model();
    let g = &m.gateways[0];
    // a and b share port, protocol and hostname; c shares their port with another protocol.
    for (i, reason) in [
        (0, "HostnameConflict"),
        (1, "HostnameConflict"),
        (2, "ProtocolConflict"),
    ] {
        let c = find(&g.listeners[i].conditions, "Conflicted");
        assert_eq!(
            (c.status, c.reason),
            (true, reason),
            "{}",
            g.listeners[i].name
        );
        assert!(!find(&g.listeners[i].conditions, "Accepted").status);
    }
    assert!(
        g.listeners[3]
            .conditions
            .iter()
            .all(|c| c.type_ != "Conflicted")
    );
    assert_eq!(find(&g.conditions, "Accepted").reason, "ListenersNotValid");
    let mut w = World::new();
    w.gateway("g", json!([{"name": "a", "port": 80, "protocol": "HTTP"}, {"name": "b", "port": 80, "protocol": "HTTP"}]));
    let m = w.model();
    assert_eq!(
        find(&m.gateways[0].listeners[1].conditions, "Conflicted").reason,
        "HostnameConflict"
    );
}

#[test]
fn gateway_secret_missing_reference_grant() {
    let mut w = World::new();
    w.gateway("g", json!([{"name": "https", "port": 443, "protocol": "HTTPS", "tls": {"certificateRefs": [{"name": "certificate", "namespace": WEB}]}}]));
    let m = w.model();
    let l = &m.gateways[0].listeners[0];
    let c = find(&l.conditions, "ResolvedRefs");
    assert_eq!((c.status, c.reason), (false, "RefNotPermitted"));
    assert_eq!(find(&l.conditions, "Programmed").reason, "Invalid");
    // With a grant the reference is permitted; the Secret is missing, so the certificate
    // is invalid instead.
    w.grants.push(arc(
        json!({"metadata": {"name": "g", "namespace": WEB}, "spec": {
        "from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": INFRA}],
        "to": [{"group": "", "kind": "Secret", "name": "certificate"}]}}),
    ));
    let m = w.model();
    assert_eq!(
        find(&m.gateways[0].listeners[0].conditions, "ResolvedRefs").reason,
        "InvalidCertificateRef"
    );
}

#[test]
fn gateway_invalid_tls_configuration() {
    let mut w = World::new();
    for (name, cert) in [
        ("missing", json!({"name": "nonexistent"})),
        (
            "group",
            json!({"group": "wrong.example", "kind": "Secret", "name": "c"}),
        ),
        ("kind", json!({"kind": "WrongKind", "name": "c"})),
    ] {
        w.gateway(name, json!([{"name": "https", "port": 443, "protocol": "HTTPS", "tls": {"certificateRefs": [cert]}}]));
    }
    let m = w.model();
    assert_eq!(m.gateways.len(), 3, "the loop below sees every Gateway");
    for g in &m.gateways {
        let l = &g.listeners[0];
        assert_eq!(l.supported_kinds[0].kind, "HTTPRoute", "{}", g.name);
        assert_eq!(l.attached_routes, 0);
        let c = find(&l.conditions, "ResolvedRefs");
        assert_eq!(
            (c.status, c.reason),
            (false, "InvalidCertificateRef"),
            "{}",
            g.name
        );
    }
}

#[test]
fn gateway_addresses_come_from_the_pool() {
    let mut w = World::new();
    w.gateway("a", json!([http("http", "Same")]))
        .gateway("b", json!([http("http", "Same")]))
        .gateway("c", json!([http("http", "Same")]));
    let m = w.model();
    let addr = |n: &str| {
        m.gateways
            .iter()
            .find(|g| g.name == n)
            .unwrap()
            .addresses
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        (addr("a"), addr("b")),
        (vec!["10.0.0.10".to_string()], vec!["10.0.0.11".to_string()])
    );
    let c = &m
        .gateways
        .iter()
        .find(|g| g.name == "c")
        .unwrap()
        .conditions;
    assert_eq!(
        (find(c, "Programmed").status, find(c, "Programmed").reason),
        (false, "AddressNotAssigned")
    );
    // A pool of one address is shared.
    w.settings.addresses = vec!["127.0.7.1".parse().unwrap()];
    let m = w.model();
    assert!(
        m.gateways
            .iter()
            .all(|g| g.addresses.len() == 1 && g.addresses[0].to_string() == "127.0.7.1")
    );
}

#[test]
fn httproute_simple_same_namespace() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    w.route(INFRA, "gateway-conformance-infra-test", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"backendRefs": [backend("infra-backend-v1")]}]}));
    let m = w.model();
    assert_eq!(
        route_cond(&m, "gateway-conformance-infra-test", "Accepted"),
        (true, "Accepted")
    );
    assert_eq!(
        route_cond(&m, "gateway-conformance-infra-test", "ResolvedRefs"),
        (true, "ResolvedRefs")
    );
    let p = &m.http_routes[0].parents[0];
    assert_eq!(p.controller_name, "leafgate.io/gateway-controller");
    assert_eq!(p.conditions[0].observed_generation, 2);
    assert_eq!(attached(&m, "same-namespace"), [1]);
    let r = &m.routes[0];
    assert_eq!(
        (r.host.clone(), r.path.clone()),
        (HostPattern::Any, PathMatch::Prefix("/".into()))
    );
    assert_eq!(
        r.name,
        format!("httproute/{INFRA}/gateway-conformance-infra-test/0")
    );
    let Action::Forward(b) = &r.action else {
        panic!()
    };
    assert!(
        matches!(&b[0].backend, Backend::Service(s) if s.key() == format!("{INFRA}/infra-backend-v1:8080"))
    );
    let g = &m.gateways[0];
    assert!(find(&g.conditions, "Accepted").status && find(&g.conditions, "Programmed").status);
    for t in ["Accepted", "Programmed", "ResolvedRefs"] {
        assert!(find(&g.listeners[0].conditions, t).status, "{t}");
    }
}

#[test]
fn httproute_invalid_cross_namespace_parent_ref() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    w.route(WEB, "invalid-cross-namespace-parent-ref", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace", "namespace": INFRA}], "rules": [{"backendRefs": [backend("web-backend")]}]}));
    let m = w.model();
    assert_eq!(
        route_cond(&m, "invalid-cross-namespace-parent-ref", "Accepted"),
        (false, "NotAllowedByListeners")
    );
    assert_eq!(attached(&m, "same-namespace"), [0]);
    assert!(m.routes.is_empty());
}

#[test]
fn httproute_cross_namespace() {
    let mut w = World::new();
    w.gateway("backend-namespaces", json!([{"name": "http", "port": 80, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "Selector", "selector": {"matchLabels": {"gateway-conformance": "backend"}}}}}]));
    w.route(WEB, "cross-namespace", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "backend-namespaces", "namespace": INFRA}], "rules": [{"backendRefs": [backend("web-backend")]}]}));
    w.route(
        INFRA,
        "infra",
        "2026-01-02T00:00:00Z",
        json!({"parentRefs": [{"name": "backend-namespaces"}]}),
    );
    let m = w.model();
    assert_eq!(
        route_cond(&m, "cross-namespace", "Accepted"),
        (true, "Accepted")
    );
    assert_eq!(
        route_cond(&m, "infra", "Accepted"),
        (false, "NotAllowedByListeners")
    );
}

#[test]
fn httproute_invalid_parent_ref_not_matching_section_name() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    w.route(
        INFRA,
        "r",
        "2026-01-02T00:00:00Z",
        json!({"parentRefs": [{"name": "same-namespace", "sectionName": "http1", "port": 80}]}),
    );
    w.route(
        INFRA,
        "by-port",
        "2026-01-02T00:00:00Z",
        json!({"parentRefs": [{"name": "same-namespace", "port": 8080}]}),
    );
    w.route(
        INFRA,
        "ok",
        "2026-01-02T00:00:00Z",
        json!({"parentRefs": [{"name": "same-namespace", "sectionName": "http", "port": 80}]}),
    );
    let m = w.model();
    assert_eq!(route_cond(&m, "r", "Accepted"), (false, "NoMatchingParent"));
    assert_eq!(
        route_cond(&m, "by-port", "Accepted"),
        (false, "NoMatchingParent")
    );
    assert_eq!(route_cond(&m, "ok", "Accepted"), (true, "Accepted"));
    assert_eq!(attached(&m, "same-namespace"), [1]);
}

#[test]
fn httproute_hostname_intersection() {
    let mut w = World::new();
    w.gateway("httproute-hostname-intersection", json!([
        {"name": "listener-1", "port": 80, "protocol": "HTTP", "hostname": "very.specific.com"},
        {"name": "listener-2", "port": 80, "protocol": "HTTP", "hostname": "*.wildcard.io"},
        {"name": "listener-3", "port": 80, "protocol": "HTTP", "hostname": "*.anotherwildcard.io"},
    ]));
    let parent = json!([{"name": "httproute-hostname-intersection"}]);
    w.route(INFRA, "specific-host-matches-listener-specific-host", "2026-01-02T00:00:00Z", json!({"parentRefs": parent, "hostnames": ["non.matching.com", "very.specific.com"], "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/s1"}}]}]}));
    w.route(INFRA, "specific-host-matches-listener-wildcard-host", "2026-01-02T00:00:00Z", json!({"parentRefs": parent, "hostnames": ["non.matching.com", "wildcard.io", "foo.wildcard.io", "bar.wildcard.io", "foo.bar.wildcard.io"], "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/s2"}}]}]}));
    w.route(INFRA, "wildcard-host-matches-listener-specific-host", "2026-01-02T00:00:00Z", json!({"parentRefs": parent, "hostnames": ["non.matching.com", "*.specific.com"], "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/s3"}}]}]}));
    w.route(INFRA, "wildcard-host-matches-listener-wildcard-host", "2026-01-02T00:00:00Z", json!({"parentRefs": parent, "hostnames": ["*.anotherwildcard.io"], "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/s4"}}]}]}));
    w.route(INFRA, "no-intersecting-hosts", "2026-01-02T00:00:00Z", json!({"parentRefs": parent, "hostnames": ["specific.but.wrong.com", "wildcard.io"], "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/s5"}}]}]}));
    let m = w.model();
    assert_eq!(
        served(&m, "specific-host-matches-listener-specific-host"),
        [("very.specific.com".into(), "prefix /s1".into())]
    );
    let s2: Vec<String> = served(&m, "specific-host-matches-listener-wildcard-host")
        .into_iter()
        .map(|(h, _)| h)
        .collect();
    // The longest name first; wildcard.io does not match *.wildcard.io.
    assert_eq!(
        s2,
        ["foo.bar.wildcard.io", "foo.wildcard.io", "bar.wildcard.io"]
    );
    assert_eq!(
        served(&m, "wildcard-host-matches-listener-specific-host"),
        [("very.specific.com".into(), "prefix /s3".into())]
    );
    assert_eq!(
        served(&m, "wildcard-host-matches-listener-wildcard-host"),
        [("*.anotherwildcard.io".into(), "prefix /s4".into())]
    );
    assert_eq!(
        route_cond(&m, "no-intersecting-hosts", "Accepted"),
        (false, "NoMatchingListenerHostname")
    );
    assert!(served(&m, "no-intersecting-hosts").is_empty());
    assert_eq!(attached(&m, "httproute-hostname-intersection"), [2, 1, 1]);
}

#[test]
fn hostname_intersection_rules() {
    use super::hostnames::{invalid, pattern};
    // The intersection of two hostnames as written, written back.
    let intersect = |listener: Option<&str>, route: &str| {
        super::hostnames::intersect(listener.map(pattern).as_ref(), &pattern(route))
            .map(|h| h.to_string())
    };
    assert_eq!(
        intersect(Some("test.example.com"), "*.example.com").as_deref(),
        Some("test.example.com")
    );
    assert_eq!(
        intersect(Some("*.example.com"), "foo.test.example.com").as_deref(),
        Some("foo.test.example.com")
    );
    assert_eq!(intersect(Some("*.example.com"), "example.com"), None);
    assert_eq!(intersect(Some("*.example.com"), "test.example.net"), None);
    assert_eq!(
        intersect(Some("*.example.com"), "*.a.example.com").as_deref(),
        Some("*.a.example.com")
    );
    assert_eq!(
        intersect(Some("*.a.example.com"), "*.example.com").as_deref(),
        Some("*.a.example.com")
    );
    assert_eq!(
        intersect(Some("*.example.com"), "*.example.com").as_deref(),
        Some("*.example.com")
    );
    assert_eq!(intersect(None, "x.com").as_deref(), Some("x.com"));
    assert!(
        invalid("10.0.0.1").is_some()
            && invalid("Upper.com").is_some()
            && invalid("a.*.com").is_some()
    );
    assert!(invalid("*.example.com").is_none() && invalid("example.com").is_none());
}

#[test]
fn httproute_invalid_cross_namespace_backend_ref() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    w.route(INFRA, "invalid-cross-namespace-backend-ref", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"backendRefs": [{"name": "web-backend", "namespace": WEB, "port": 8080}]}]}));
    let m = w.model();
    assert_eq!(
        route_cond(&m, "invalid-cross-namespace-backend-ref", "Accepted"),
        (true, "Accepted")
    );
    assert_eq!(
        route_cond(&m, "invalid-cross-namespace-backend-ref", "ResolvedRefs"),
        (false, "RefNotPermitted")
    );
    let Action::Forward(b) = &m.routes[0].action else {
        panic!()
    };
    assert!(
        matches!(b[0].backend, Backend::Invalid { .. }),
        "answers 500"
    );
}

#[test]
fn httproute_reference_grant() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    w.route(INFRA, "reference-grant", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"backendRefs": [{"name": "web-backend", "namespace": WEB, "port": 8080}]}]}));
    let grant = |to_name: &str, from_kind: &str| {
        arc::<ReferenceGrant>(
            json!({"metadata": {"name": "g", "namespace": WEB}, "spec": {
        "from": [{"group": "gateway.networking.k8s.io", "kind": from_kind, "namespace": INFRA}],
        "to": [{"group": "", "kind": "Service", "name": to_name}]}}),
        )
    };
    w.grants.push(grant("web-backend", "HTTPRoute"));
    let m = w.model();
    assert_eq!(
        route_cond(&m, "reference-grant", "ResolvedRefs"),
        (true, "ResolvedRefs")
    );
    let Action::Forward(b) = &m.routes[0].action else {
        panic!()
    };
    assert!(
        matches!(&b[0].backend, Backend::Service(s) if s.key() == format!("{WEB}/web-backend:8080"))
    );
    // HTTPRouteInvalidReferenceGrant: a grant wrong in one field permits nothing.
    for g in [
        grant("not-web-backend", "HTTPRoute"),
        grant("web-backend", "GRPCRoute"),
    ] {
        w.grants = vec![g];
        assert_eq!(
            route_cond(&w.model(), "reference-grant", "ResolvedRefs"),
            (false, "RefNotPermitted")
        );
    }
    // The grant deleted: refused again.
    w.grants.clear();
    assert_eq!(
        route_cond(&w.model(), "reference-grant", "ResolvedRefs"),
        (false, "RefNotPermitted")
    );
}

#[test]
fn httproute_invalid_backend_refs() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    w.route(INFRA, "nonexistent", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"backendRefs": [backend("nonexistent")]}]}));
    w.route(INFRA, "unknown-kind", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"backendRefs": [{"group": "unknownkind.example.com", "kind": "NonExistent", "name": "x"}]}]}));
    w.route(INFRA, "no-backends", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"matches": [{"path": {"type": "Exact", "value": "/omitted"}}]}]}));
    let m = w.model();
    assert_eq!(
        route_cond(&m, "nonexistent", "ResolvedRefs"),
        (false, "BackendNotFound")
    );
    assert_eq!(
        route_cond(&m, "unknown-kind", "ResolvedRefs"),
        (false, "InvalidKind")
    );
    // HTTPRouteNoBackendRefs: still ResolvedRefs True, and 500 (no backends).
    assert_eq!(
        route_cond(&m, "no-backends", "ResolvedRefs"),
        (true, "ResolvedRefs")
    );
    let r = m
        .routes
        .iter()
        .find(|r| r.name.contains("/no-backends/"))
        .unwrap();
    assert!(matches!(&r.action, Action::Forward(b) if b.is_empty()));
}

#[test]
fn httproute_unsupported_values_refuse_the_route() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    for (name, rule) in [
        (
            "regex-path",
            json!({"matches": [{"path": {"type": "RegularExpression", "value": "/.*"}}]}),
        ),
        (
            "regex-header",
            json!({"matches": [{"headers": [{"type": "RegularExpression", "name": "a", "value": "b"}]}]}),
        ),
        (
            "mirror",
            json!({"filters": [{"type": "RequestMirror", "requestMirror": {"backendRef": backend("infra-backend-v1")}}]}),
        ),
        (
            "bad-code",
            json!({"filters": [{"type": "RequestRedirect", "requestRedirect": {"statusCode": 304}}]}),
        ),
        (
            "bad-scheme",
            json!({"filters": [{"type": "RequestRedirect", "requestRedirect": {"scheme": "ftp"}}]}),
        ),
        ("bad-method", json!({"matches": [{"method": "BREW"}]})),
    ] {
        w.route(
            INFRA,
            name,
            "2026-01-02T00:00:00Z",
            json!({"parentRefs": [{"name": "same-namespace"}], "rules": [rule]}),
        );
    }
    w.route(INFRA, "both", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"filters": [
        {"type": "RequestRedirect", "requestRedirect": {"hostname": "example.org"}}, {"type": "URLRewrite", "urlRewrite": {"hostname": "example.org"}}]}]}));
    let m = w.model();
    for name in [
        "regex-path",
        "regex-header",
        "mirror",
        "bad-code",
        "bad-scheme",
        "bad-method",
    ] {
        assert_eq!(
            route_cond(&m, name, "Accepted"),
            (false, "UnsupportedValue"),
            "{name}"
        );
    }
    assert_eq!(
        route_cond(&m, "both", "Accepted"),
        (false, "IncompatibleFilters")
    );
    assert!(m.routes.is_empty());
    assert_eq!(attached(&m, "same-namespace"), [0]);
}

#[test]
fn httproute_path_match_order() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    let rule = |t: &str, v: &str, b: &str| json!({"matches": [{"path": {"type": t, "value": v}}], "backendRefs": [backend(b)]});
    w.route(INFRA, "path-matching-order", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [
        rule("Exact", "/match", "infra-backend-v1"), rule("Exact", "/match/exact", "infra-backend-v2"), rule("Exact", "/match/exact/one", "infra-backend-v3"),
        rule("PathPrefix", "/match/", "infra-backend-v3"), rule("PathPrefix", "/match/prefix/", "infra-backend-v1"), rule("PathPrefix", "/match/prefix/one", "infra-backend-v2"),
    ]}));
    let m = w.model();
    let order: Vec<String> = m.routes.iter().map(|r| r.path.to_string()).collect();
    assert_eq!(
        order,
        [
            "exact /match/exact/one",
            "exact /match/exact",
            "exact /match",
            "prefix /match/prefix/one",
            "prefix /match/prefix",
            "prefix /match"
        ]
    );
}

#[test]
fn httproute_header_matching_precedence() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    let h = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(n, v)| json!({"name": n, "value": v}))
            .collect::<Vec<_>>()
    };
    w.route(
        INFRA,
        "b-newer",
        "2026-01-03T00:00:00Z",
        json!({"parentRefs": [{"name": "same-namespace"}], "rules": [
        {"matches": [{"headers": h(&[("version", "one")])}]}]}),
    );
    w.route(INFRA, "a-older", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [
        {"matches": [{"headers": h(&[("version", "two")])}]},
        {"matches": [{"headers": h(&[("version", "two"), ("Color", "orange"), ("color", "ignored")])}]},
        {"matches": [{"method": "GET"}]},
        {"matches": [{"queryParams": [{"name": "animal", "value": "whale"}]}]},
        {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}]},
    ]}));
    w.route(
        INFRA,
        "c-same-age",
        "2026-01-02T00:00:00Z",
        json!({"parentRefs": [{"name": "same-namespace"}], "rules": [
        {"matches": [{"headers": h(&[("version", "three")])}]}]}),
    );
    let m = w.model();
    let order: Vec<(String, usize, bool, usize)> = m
        .routes
        .iter()
        .map(|r| {
            (
                r.name.rsplit('/').nth(1).unwrap().to_string(),
                r.headers.len(),
                r.method.is_some(),
                r.query.len(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("a-older".to_string(), 0, true, 0),     // a method match first
            ("a-older".to_string(), 2, false, 0), // then the most headers (equivalent names once)
            ("a-older".to_string(), 1, false, 0), // one header: oldest route first,
            ("c-same-age".to_string(), 1, false, 0), // then {namespace}/{name},
            ("b-newer".to_string(), 1, false, 0), // then the newer route
            ("a-older".to_string(), 0, false, 1), // query params
            ("a-older".to_string(), 0, false, 0),
        ]
    );
    assert_eq!(
        m.routes[1].headers,
        [
            ("version".to_string(), "two".to_string()),
            ("color".to_string(), "orange".to_string())
        ]
    );
}

#[test]
fn httproute_redirects_and_rewrites() {
    let mut w = World::new();
    w.gateway(
        "same-namespace",
        json!([{"name": "http", "port": 8080, "protocol": "HTTP"}]),
    );
    let redirect =
        |r: Value| json!({"filters": [{"type": "RequestRedirect", "requestRedirect": r}]});
    w.route(INFRA, "r", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [
        redirect(json!({"hostname": "example.org"})),
        redirect(json!({"scheme": "https"})),
        redirect(json!({"port": 80, "statusCode": 301})),
        {"matches": [{"path": {"type": "PathPrefix", "value": "/prefix/"}}], "filters": [{"type": "RequestRedirect", "requestRedirect": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/other"}}}]},
        {"matches": [{"path": {"type": "PathPrefix", "value": "/rewrite"}}], "filters": [{"type": "URLRewrite", "urlRewrite": {"hostname": "one.example.org", "path": {"type": "ReplaceFullPath", "replaceFullPath": "/one"}}}], "backendRefs": [backend("infra-backend-v1")]},
        {"matches": [{"path": {"type": "Exact", "value": "/t"}}], "timeouts": {"request": "1h30m", "backendRequest": "500ms"}},
        {"matches": [{"path": {"type": "Exact", "value": "/headers"}}], "filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": {"set": [{"name": "X-Header-Set", "value": "set"}], "add": [{"name": "X-Header-Add", "value": "add-appends-values"}], "remove": ["X-Header-Remove"]}}]},
    ]}));
    let m = w.model();
    let rule = |n: &str| {
        m.routes
            .iter()
            .find(|r| r.name.ends_with(&format!("/{n}")))
            .unwrap()
    };
    let Action::Redirect(r) = &rule("0").action else {
        panic!()
    };
    assert_eq!(
        (r.scheme, r.hostname.as_deref(), r.port, r.status),
        ("http", Some("example.org"), Some(8080), 302),
        "the listener's port, 302 by default"
    );
    let Action::Redirect(r) = &rule("1").action else {
        panic!()
    };
    assert_eq!(
        (r.scheme, r.port),
        ("https", None),
        "a scheme's well-known port, left out"
    );
    let Action::Redirect(r) = &rule("2").action else {
        panic!()
    };
    assert_eq!((r.port, r.status), (None, 301), "http on 80 is left out");
    let Action::Redirect(r) = &rule("3").action else {
        panic!()
    };
    assert_eq!(
        r.path,
        Some(PathModifier::Prefix {
            matched: "/prefix".into(),
            replacement: "/other".into()
        })
    );
    let rw = rule("4").rewrite.clone().unwrap();
    assert_eq!(
        (rw.hostname.as_deref(), rw.path),
        (
            Some("one.example.org"),
            Some(PathModifier::Full("/one".into()))
        )
    );
    let t = rule("5").timeouts;
    assert_eq!(
        (t.request, t.backend_request),
        (
            Some(std::time::Duration::from_secs(5400)),
            Some(std::time::Duration::from_millis(500))
        )
    );
    let h = &rule("6").request_headers;
    assert_eq!(
        (
            h.set[0].0.as_str(),
            h.add[0].0.as_str(),
            h.remove[0].as_str()
        ),
        ("x-header-set", "x-header-add", "x-header-remove")
    );
}

#[test]
fn httproute_weight() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    w.route(INFRA, "weighted-backends", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"backendRefs": [
        {"name": "infra-backend-v1", "port": 8080, "weight": 70}, {"name": "infra-backend-v2", "port": 8080, "weight": 30}, {"name": "infra-backend-v3", "port": 8080, "weight": 0}, {"name": "infra-backend-v1", "port": 8080}]}]}));
    let m = w.model();
    let Action::Forward(b) = &m.routes[0].action else {
        panic!()
    };
    assert_eq!(
        b.iter().map(|b| b.weight).collect::<Vec<_>>(),
        [70, 30, 0, 1]
    );
}

#[test]
fn gep_2257_durations() {
    assert_eq!(duration("0s"), Some(std::time::Duration::ZERO));
    assert_eq!(
        duration("1h1m1s1ms"),
        Some(std::time::Duration::from_millis(3_661_001))
    );
    for bad in ["", "1", "1d", "123456s", "1h1m1s1ms1h", "-1s", "1.5s"] {
        assert_eq!(duration(bad), None, "{bad}");
    }
}

#[test]
fn tenant_hosts_bound_route_hostnames() {
    let mut w = World::new();
    let mut t = TenantBounds::new("team-web", &[WEB]);
    t.hosts = Some(vec![HostPattern::parse("*.team-web.example").unwrap()]);
    w.settings.tenants = vec![t];
    w.gateway("all-namespaces", json!([http("http", "All")]));
    w.route(WEB, "outside", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "all-namespaces", "namespace": INFRA}], "hostnames": ["bank.example"]}));
    w.route(
        WEB,
        "no-hostname",
        "2026-01-02T00:00:00Z",
        json!({"parentRefs": [{"name": "all-namespaces", "namespace": INFRA}]}),
    );
    w.route(WEB, "partly", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "all-namespaces", "namespace": INFRA}], "hostnames": ["bank.example", "app.team-web.example"]}));
    let m = w.model();
    assert_eq!(
        route_cond(&m, "outside", "Accepted"),
        (false, "HostnameNotAllowed")
    );
    let r = m.http_routes.iter().find(|r| r.name == "outside").unwrap();
    assert!(
        r.parents[0].conditions[0]
            .message
            .contains("tenant team-web may claim only hosts matching *.team-web.example"),
        "{:?}",
        r.parents[0].conditions[0]
    );
    assert_eq!(
        route_cond(&m, "no-hostname", "Accepted"),
        (false, "HostnameNotAllowed"),
        "a route without hostnames takes every host"
    );
    assert_eq!(route_cond(&m, "partly", "Accepted"), (true, "Accepted"));
    let hosts: Vec<String> = m.routes.iter().map(|r| r.host.to_string()).collect();
    assert_eq!(hosts, ["app.team-web.example"]);
    assert_eq!(m.routes[0].tenant.as_deref(), Some("team-web"));
}

/// A rewrite's hostname is the `Host` the tenant's backend is sent: within its `hosts`,
/// as the route's own hostnames; a redirect's is where the client goes, not bounded.
#[test]
fn tenant_hosts_bound_rewrite_hostnames_not_redirect_ones() {
    let mut w = World::new();
    let mut t = TenantBounds::new("team-web", &[WEB]);
    t.hosts = Some(vec![HostPattern::parse("*.team-web.example").unwrap()]);
    w.settings.tenants = vec![t];
    w.gateway("all-namespaces", json!([http("http", "All")]));
    let rule = |filter: Value| json!({"parentRefs": [{"name": "all-namespaces", "namespace": INFRA}], "hostnames": ["app.team-web.example"], "rules": [{"filters": [filter]}]});
    let rewrite = |h: &str| json!({"type": "URLRewrite", "urlRewrite": {"hostname": h}});
    w.route(
        WEB,
        "outside",
        "2026-01-02T00:00:00Z",
        rule(rewrite("bank.example")),
    );
    w.route(
        WEB,
        "inside",
        "2026-01-02T00:00:00Z",
        rule(rewrite("api.team-web.example")),
    );
    w.route(
        WEB,
        "redirect",
        "2026-01-02T00:00:00Z",
        rule(json!({"type": "RequestRedirect", "requestRedirect": {"hostname": "bank.example"}})),
    );
    let m = w.model();
    assert_eq!(
        route_cond(&m, "outside", "Accepted"),
        (false, "UnsupportedValue")
    );
    let r = m.http_routes.iter().find(|r| r.name == "outside").unwrap();
    assert!(
        find(&r.parents[0].conditions, "Accepted").message.contains(
            "URLRewrite hostname bank.example is not allowed (tenant team-web may claim only hosts matching *.team-web.example)"
        ),
        "{:?}",
        r.parents[0].conditions
    );
    assert_eq!(route_cond(&m, "inside", "Accepted"), (true, "Accepted"));
    assert_eq!(route_cond(&m, "redirect", "Accepted"), (true, "Accepted"));
}

#[test]
fn routes_of_other_controllers_get_no_status() {
    let mut w = World::new();
    w.gateways.push(arc(json!({"metadata": {"name": "theirs", "namespace": INFRA}, "spec": {"gatewayClassName": "other", "listeners": [http("http", "Same")]}})));
    w.route(INFRA, "r", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "theirs"}, {"name": "missing"}, {"kind": "Service", "group": "", "name": "x"}]}));
    let m = w.model();
    assert!(m.gateways.is_empty() && m.http_routes.is_empty() && m.routes.is_empty());
    // Beside a Gateway of ours, only its parentRef gets a status: the emptiness above is
    // the other controller's, not a translation that makes nothing.
    w.gateway("ours", json!([http("http", "Same")]));
    w.routes.clear();
    w.route(
        INFRA,
        "r",
        "2026-01-02T00:00:00Z",
        json!({"parentRefs": [{"name": "theirs"}, {"name": "ours"}]}),
    );
    let m = w.model();
    assert_eq!(m.gateways.len(), 1);
    let parents = &m.http_routes[0].parents;
    assert_eq!(parents.len(), 1);
    assert_eq!(parents[0].parent_ref.name, "ours");
}

/// A route as a hostile author could write it, past the CRD's bounds: it is refused whole,
/// before its lists are read, so what the translation spends on it is bounded by the
/// bounds, not by the lists (no timing: the entries and statuses it makes are counted).
#[test]
fn a_route_past_the_crds_bounds_is_refused_before_its_lists_are_read() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    let many = |n: usize| (0..n).map(|i| format!("h{i}.example")).collect::<Vec<_>>();
    w.route(INFRA, "hosts", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "hostnames": many(5_000), "rules": [{"backendRefs": [backend("infra-backend-v1")]}]}));
    let parents: Vec<Value> = (0..5_000)
        .map(|_| json!({"name": "same-namespace"}))
        .collect();
    w.route(
        INFRA,
        "parents",
        "2026-01-02T00:00:00Z",
        json!({"parentRefs": parents}),
    );
    let refs: Vec<Value> = (0..5_000).map(|_| backend("infra-backend-v1")).collect();
    w.route(
        INFRA,
        "backends",
        "2026-01-02T00:00:00Z",
        json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"backendRefs": refs}]}),
    );
    let matches: Vec<Value> = (0..5_000)
        .map(|i| json!({"path": {"type": "Exact", "value": format!("/{i}")}}))
        .collect();
    w.route(
        INFRA,
        "matches",
        "2026-01-02T00:00:00Z",
        json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"matches": matches}]}),
    );
    // 16 rules of 8 matches each: 128 in all, the most a route may have.
    let rule: Vec<Value> = (0..8)
        .map(|i| json!({"path": {"type": "Exact", "value": format!("/{i}")}}))
        .collect();
    let rules: Vec<Value> = (0..17).map(|_| json!({"matches": rule})).collect();
    w.route(
        INFRA,
        "rules",
        "2026-01-02T00:00:00Z",
        json!({"parentRefs": [{"name": "same-namespace"}], "rules": rules}),
    );
    let m = w.model();
    for name in ["hosts", "parents", "backends", "matches", "rules"] {
        assert_eq!(
            route_cond(&m, name, "Accepted"),
            (false, "UnsupportedValue"),
            "{name}"
        );
    }
    assert!(m.routes.is_empty(), "no entry of a refused route");
    let parents = &m
        .http_routes
        .iter()
        .find(|r| r.name == "parents")
        .unwrap()
        .parents;
    assert_eq!(
        parents.len(),
        32,
        "a status for the CRD's 32 parentRefs at most"
    );
    assert_eq!(attached(&m, "same-namespace"), [0]);

    // At the bounds the route is served: one entry per hostname and match, counted.
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    let rules: Vec<Value> = (0..16).map(|_| json!({"matches": rule})).collect();
    w.route(
        INFRA,
        "full",
        "2026-01-02T00:00:00Z",
        json!({"parentRefs": [{"name": "same-namespace"}], "hostnames": many(16), "rules": rules}),
    );
    let m = w.model();
    assert_eq!(route_cond(&m, "full", "Accepted"), (true, "Accepted"));
    assert_eq!(m.routes.len(), 16 * 16 * 8);
}

/// Weights past the CRD's maximum would overflow a sum of them: refused, as negative ones
/// are; 16 of the maximum sum within `u32`.
#[test]
fn weights_stay_within_the_crds_bounds_so_their_sum_cannot_overflow() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    for (name, weight) in [("negative", -1), ("huge", i32::MAX), ("past", 1_000_001)] {
        w.route(INFRA, name, "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"backendRefs": [{"name": "infra-backend-v1", "port": 8080, "weight": weight}]}]}));
    }
    let refs: Vec<Value> = (0..16)
        .map(|_| json!({"name": "infra-backend-v1", "port": 8080, "weight": 1_000_000}))
        .collect();
    w.route(
        INFRA,
        "max",
        "2026-01-02T00:00:00Z",
        json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"backendRefs": refs}]}),
    );
    let m = w.model();
    for name in ["negative", "huge", "past"] {
        assert_eq!(
            route_cond(&m, name, "Accepted"),
            (false, "UnsupportedValue"),
            "{name}"
        );
    }
    assert_eq!(route_cond(&m, "max", "Accepted"), (true, "Accepted"));
    let Action::Forward(b) = &m.routes[0].action else {
        panic!()
    };
    let sum = b.iter().try_fold(0u32, |s, b| s.checked_add(b.weight));
    assert_eq!(sum, Some(16_000_000));
}

/// Hostnames the CRD's pattern refuses, as the store may still hold them: a bare `*`, an
/// empty wildcard, uppercase, a trailing dot, IP literals, a port, empty labels.
#[test]
fn route_hostnames_that_are_not_gateway_api_hostnames_refuse_the_route() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    let bad = [
        "*",
        "*.",
        "*.*.example",
        "a.*.example",
        "Bank.example",
        "bank.example.",
        "10.0.0.1",
        "::1",
        "[::1]",
        "bank.example:80",
        "a..example",
        "-a.example",
        "a_b.example",
        "",
    ];
    for (i, h) in bad.iter().enumerate() {
        w.route(
            INFRA,
            &format!("bad-{i}"),
            "2026-01-02T00:00:00Z",
            json!({"parentRefs": [{"name": "same-namespace"}], "hostnames": ["ok.example", h]}),
        );
    }
    let m = w.model();
    for (i, h) in bad.iter().enumerate() {
        assert_eq!(
            route_cond(&m, &format!("bad-{i}"), "Accepted"),
            (false, "UnsupportedValue"),
            "{h:?}"
        );
    }
    assert!(m.routes.is_empty());
}

/// Wildcards against a tenant's `hosts`: only names and wildcards its patterns cover.
#[test]
fn wildcard_hostnames_stay_within_the_tenants_hosts() {
    let mut w = World::new();
    let mut t = TenantBounds::new("team-web", &[WEB]);
    t.hosts = Some(vec![HostPattern::parse("*.team-web.example").unwrap()]);
    w.settings.tenants = vec![t];
    w.gateway("all-namespaces", json!([http("http", "All")]));
    let cases = [
        ("*.example", false),
        ("*.web.example", false),
        ("team-web.example", false),
        ("evilteam-web.example", false),
        ("*.evilteam-web.example", false),
        ("*.team-web.example", true),
        ("*.a.team-web.example", true),
        ("a.b.team-web.example", true),
    ];
    for (i, (h, _)) in cases.iter().enumerate() {
        w.route(WEB, &format!("r{i}"), "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "all-namespaces", "namespace": INFRA}], "hostnames": [h]}));
    }
    let m = w.model();
    for (i, (h, allowed)) in cases.iter().enumerate() {
        let want = match allowed {
            true => (true, "Accepted"),
            false => (false, "HostnameNotAllowed"),
        };
        assert_eq!(route_cond(&m, &format!("r{i}"), "Accepted"), want, "{h}");
    }
    let mut hosts: Vec<String> = m.routes.iter().map(|r| r.host.to_string()).collect();
    hosts.sort();
    assert_eq!(
        hosts,
        [
            "*.a.team-web.example",
            "*.team-web.example",
            "a.b.team-web.example"
        ]
    );
}

/// What the proxy would write into a head (header names and values, a rewrite's or a
/// redirect's hostname and path) must be one: no second line, no other authority.
#[test]
fn values_written_into_heads_cannot_inject_a_line_or_an_authority() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    let modifier = |m: Value| json!({"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": m}]});
    let rewrite = |r: Value| json!({"filters": [{"type": "URLRewrite", "urlRewrite": r}]});
    let redirect =
        |r: Value| json!({"filters": [{"type": "RequestRedirect", "requestRedirect": r}]});
    let prefix = |p: &str| json!({"type": "ReplacePrefixMatch", "replacePrefixMatch": p});
    let full = |p: &str| json!({"type": "ReplaceFullPath", "replaceFullPath": p});
    let one_prefix = |mut rule: Value| {
        rule["matches"] = json!([{"path": {"type": "PathPrefix", "value": "/p"}}]);
        rule
    };
    let bad = [
        modifier(json!({"set": [{"name": "X-A", "value": "a\r\nX-Injected: 1"}]})),
        modifier(json!({"add": [{"name": "X-A", "value": "a\nb"}]})),
        modifier(json!({"set": [{"name": "X A", "value": "a"}]})),
        modifier(json!({"set": [{"name": "X-A\r\nX-B", "value": "a"}]})),
        modifier(json!({"remove": ["a:b"]})),
        // Names the proxy frames the message with or writes for the backend to trust.
        modifier(json!({"set": [{"name": "Host", "value": "bank.example"}]})),
        modifier(json!({"add": [{"name": "X-Forwarded-For", "value": "10.0.0.1"}]})),
        modifier(json!({"set": [{"name": "forwarded", "value": "for=10.0.0.1"}]})),
        modifier(json!({"remove": ["Connection"]})),
        modifier(json!({"set": [{"name": "Transfer-Encoding", "value": "chunked"}]})),
        json!({"filters": [{"type": "ResponseHeaderModifier", "responseHeaderModifier": {"set": [{"name": "Content-Length", "value": "0"}]}}]}),
        json!({"matches": [{"headers": [{"name": "X-A", "value": "a\r\nb"}]}]}),
        json!({"matches": [{"path": {"type": "Exact", "value": "/a b"}}]}),
        json!({"matches": [{"path": {"type": "PathPrefix", "value": "/a\r\nb"}}]}),
        json!({"matches": [{"path": {"type": "Exact", "value": "/%zz"}}]}),
        rewrite(json!({"hostname": "evil.example\r\nX-Injected: 1"})),
        rewrite(json!({"hostname": "*.example.org"})),
        rewrite(json!({"path": full("@evil.example/")})),
        rewrite(json!({"path": full("/a\r\nb")})),
        one_prefix(rewrite(json!({"path": prefix("evil.example")}))),
        redirect(json!({"hostname": "*.example.org"})),
        redirect(json!({"hostname": "evil.example/x"})),
        redirect(json!({"path": full("//evil.example")})),
        one_prefix(redirect(json!({"path": prefix("@evil.example")}))),
        // ReplacePrefixMatch needs exactly one PathPrefix match.
        json!({"matches": [{"path": {"type": "Exact", "value": "/p"}}], "filters": [{"type": "URLRewrite", "urlRewrite": {"path": prefix("/q")}}]}),
        json!({"matches": [{"path": {"value": "/p"}}, {"path": {"value": "/r"}}], "filters": [{"type": "URLRewrite", "urlRewrite": {"path": prefix("/q")}}]}),
    ];
    for (i, rule) in bad.iter().enumerate() {
        w.route(
            INFRA,
            &format!("bad-{i}"),
            "2026-01-02T00:00:00Z",
            json!({"parentRefs": [{"name": "same-namespace"}], "rules": [rule]}),
        );
    }
    let good = [
        one_prefix(rewrite(json!({"path": prefix("")}))),
        one_prefix(rewrite(json!({"path": prefix("/q")}))),
        rewrite(json!({"hostname": "one.example.org", "path": full("/a/%2e;b@c")})),
        modifier(json!({"set": [{"name": "X-A", "value": "a\tb é"}], "remove": ["x-b"]})),
    ];
    for (i, rule) in good.iter().enumerate() {
        w.route(
            INFRA,
            &format!("good-{i}"),
            "2026-01-02T00:00:00Z",
            json!({"parentRefs": [{"name": "same-namespace"}], "rules": [rule]}),
        );
    }
    let m = w.model();
    for (i, rule) in bad.iter().enumerate() {
        assert_eq!(
            route_cond(&m, &format!("bad-{i}"), "Accepted"),
            (false, "UnsupportedValue"),
            "{rule}"
        );
    }
    for (i, rule) in good.iter().enumerate() {
        assert_eq!(
            route_cond(&m, &format!("good-{i}"), "Accepted"),
            (true, "Accepted"),
            "{rule}"
        );
    }
    assert_eq!(m.routes.len(), good.len());
}

/// Ports outside 1-65535 on a listener refuse it; on a backendRef the Service has no such
/// port.
#[test]
fn ports_outside_the_tcp_range() {
    let mut w = World::new();
    w.gateway(
        "g",
        json!([
            {"name": "zero", "port": 0, "protocol": "HTTP"},
            {"name": "negative", "port": -80, "protocol": "HTTP"},
            {"name": "past", "port": 65_616, "protocol": "HTTP"},
            {"name": "ok", "port": 80, "protocol": "HTTP"},
        ]),
    );
    for port in [0, -1, 65_536 + 8080] {
        w.route(INFRA, &format!("p{port}"), "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "g", "sectionName": "ok"}], "rules": [{"backendRefs": [{"name": "infra-backend-v1", "port": port}]}]}));
    }
    let m = w.model();
    let g = &m.gateways[0];
    for l in &g.listeners[..3] {
        let c = find(&l.conditions, "Accepted");
        assert_eq!(
            (c.status, c.reason),
            (false, "UnsupportedValue"),
            "{}",
            l.name
        );
    }
    assert!(find(&g.listeners[3].conditions, "Accepted").status);
    for port in [0, -1, 65_536 + 8080] {
        assert_eq!(
            route_cond(&m, &format!("p{port}"), "ResolvedRefs"),
            (false, "BackendNotFound"),
            "{port}"
        );
    }
}

/// Endpoints at the gateway's own listener or admin address, or loopback ones, are
/// refused as the Ingress model refuses them: the backend answers 503, never the gateway
/// itself.
#[test]
fn backends_at_the_gateways_own_address_are_refused() {
    use crate::k8s::ingress::model::IngressBackend;
    let mut w = World::new();
    w.settings.backends.own = vec!["10.1.0.1:3000".parse().unwrap()];
    w.services.push(arc(json!({"metadata": {"name": "loop", "namespace": INFRA}, "spec": {"ports": [{"port": 8080}]}})));
    w.slices.push(arc(json!({
        "metadata": {"name": "loop-1", "namespace": INFRA, "labels": {"kubernetes.io/service-name": "loop", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
        "addressType": "IPv4", "ports": [{"port": 8080}], "endpoints": [{"addresses": ["127.0.0.1"]}]
    })));
    w.gateway("same-namespace", json!([http("http", "Same")]));
    for (name, svc) in [("own", "infra-backend-v1"), ("loop", "loop")] {
        w.route(INFRA, name, "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "hostnames": [format!("{name}.example")], "rules": [{"backendRefs": [backend(svc)]}]}));
    }
    let m = w.model();
    for (name, why) in [
        ("own", "one of the gateway's own addresses"),
        ("loop", "a loopback address"),
    ] {
        let r = m
            .routes
            .iter()
            .find(|r| r.name.contains(&format!("/{name}/")))
            .unwrap();
        let Action::Forward(b) = &r.action else {
            panic!()
        };
        assert!(
            matches!(&b[0].backend, Backend::Service(IngressBackend::Unavailable { reason, .. }) if reason.contains(why)),
            "{name}: {:?}",
            b[0].backend
        );
    }
}

/// The status types read a status as the API server holds it (with `metav1.Condition`s),
/// the ones the translation makes carrying its own conditions.
#[test]
fn statuses_read_as_the_api_server_holds_them() {
    let condition = json!({"type": "Accepted", "status": "True", "reason": "Accepted", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 3});
    let g: Gateway = serde_json::from_value(json!({
        "metadata": {"name": "g"},
        "spec": {"gatewayClassName": "leafgate", "addresses": [{"value": "10.0.0.10"}]},
        "status": {"addresses": [{"type": "IPAddress", "value": "10.0.0.10"}], "listeners": [{"name": "http", "attachedRoutes": 1, "supportedKinds": [{"kind": "HTTPRoute"}], "conditions": [condition]}]}
    }))
    .unwrap();
    let status = g.status.unwrap();
    assert_eq!(
        (
            status.addresses[0].value.as_str(),
            g.spec.addresses[0].value.as_str()
        ),
        ("10.0.0.10", "10.0.0.10")
    );
    let l = &status.listeners[0];
    assert_eq!(
        (
            l.attached_routes,
            l.conditions[0].type_.as_str(),
            l.conditions[0].observed_generation
        ),
        (1, "Accepted", Some(3))
    );
    let r: HttpRoute = serde_json::from_value(json!({
        "metadata": {"name": "r"},
        "status": {"parents": [{"parentRef": {"name": "g"}, "controllerName": "leafgate.io/gateway-controller", "conditions": [condition]}]}
    }))
    .unwrap();
    let p = &r.status.unwrap().parents[0];
    assert_eq!(
        (p.parent_ref.name.as_str(), p.conditions[0].status.as_str()),
        ("g", "True")
    );
}
