//! The model against real `k8s_openapi` objects built from JSON, as the API server would
//! send them; paths and hosts are checked through the real router.

use std::sync::Arc;

use base64::Engine;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use serde_json::{Value, json};

use super::events::{HOST_NOT_ALLOWED, HOST_TAKEN, notices};
use super::model::{IngressBackend, Model, Objects, Refusal, Settings, TenantBounds};
use super::{Builder, Changes, Indexed, build, key_of};
use crate::config::{HostOwner, HostPattern, PathMatch, UpstreamProtocol};
use crate::routing::Router;

fn obj<T: serde::de::DeserializeOwned>(v: Value) -> Arc<T> {
    Arc::new(serde_json::from_value(v).expect("a valid object"))
}

/// The objects of one test, with our IngressClass registered by default.
#[derive(Default)]
struct World {
    ingresses: Vec<Arc<Ingress>>,
    classes: Vec<Arc<IngressClass>>,
    services: Vec<Arc<Service>>,
    slices: Vec<Arc<EndpointSlice>>,
    secrets: Vec<Arc<Secret>>,
}

impl World {
    fn new() -> Self {
        World {
            classes: vec![class("leafgate", "leafgate.io/ingress-controller", false)],
            ..Default::default()
        }
    }

    fn build(&self) -> Model {
        self.build_with(&settings())
    }

    /// The model [`build`] makes, checked against a [`Builder`]'s full build of the same
    /// objects: every model a test looks at is made both ways.
    fn build_with(&self, settings: &Settings) -> Model {
        let full = build(&self.objects(), settings);
        let kept = Builder::default().apply(
            &Indexed::new(&self.objects()),
            Changes::everything(),
            settings,
        );
        assert_eq!(format!("{kept:?}"), format!("{full:?}"), "Builder::apply");
        full
    }

    fn objects(&self) -> Objects<'_> {
        Objects {
            ingresses: &self.ingresses,
            classes: &self.classes,
            services: &self.services,
            slices: &self.slices,
            secrets: &self.secrets,
        }
    }

    /// Service `ns/name` with one port `http` 80 and a slice with `ips` ready on 8080.
    fn web(&mut self, ns: &str, name: &str, ips: &[&str]) {
        self.services
            .push(service(ns, name, json!([{"name": "http", "port": 80}])));
        let endpoints: Vec<Value> = ips
            .iter()
            .map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}}))
            .collect();
        self.slices.push(slice(
            ns,
            name,
            &format!("{name}-abc"),
            "IPv4",
            json!([{"name": "http", "port": 8080}]),
            json!(endpoints),
        ));
    }
}

fn settings() -> Settings {
    Settings {
        class: "leafgate".into(),
        namespaces: None,
        tenants: vec![
            TenantBounds::new("team-a", &["team-a", "team-a-*"]),
            TenantBounds::new("team-b", &["team-b"]),
        ],
        ..Settings::default()
    }
}

fn class(name: &str, controller: &str, default: bool) -> Arc<IngressClass> {
    let mut v = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": name},
        "spec": {"controller": controller}
    });
    if default {
        v["metadata"]["annotations"] =
            json!({"ingressclass.kubernetes.io/is-default-class": "true"});
    }
    obj(v)
}

fn service(ns: &str, name: &str, ports: Value) -> Arc<Service> {
    obj(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"namespace": ns, "name": name},
        "spec": {"ports": ports}
    }))
}

fn slice(
    ns: &str,
    service: &str,
    name: &str,
    address_type: &str,
    ports: Value,
    endpoints: Value,
) -> Arc<EndpointSlice> {
    obj(json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"namespace": ns, "name": name,
                     "labels": {"kubernetes.io/service-name": service,
                                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
        "addressType": address_type,
        "ports": ports,
        "endpoints": endpoints
    }))
}

/// An Ingress of class `leafgate` with `rules` (JSON), created at `created`.
fn ingress(ns: &str, name: &str, created: &str, spec: Value) -> Value {
    let mut spec = spec;
    if spec.get("ingressClassName").is_none() {
        spec["ingressClassName"] = json!("leafgate");
    }
    json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"namespace": ns, "name": name, "uid": format!("uid-{ns}-{name}"),
                     "resourceVersion": "7", "creationTimestamp": created},
        "spec": spec
    })
}

/// A one-rule spec: `host` (or none), one path to `svc` port `port` (`{"number": 80}`).
fn rule(host: Option<&str>, paths: &[(&str, &str, &str)], port: Value) -> Value {
    let paths: Vec<Value> = paths
        .iter()
        .map(|(path, ty, svc)| {
            json!({"path": path, "pathType": ty,
                   "backend": {"service": {"name": svc, "port": port.clone()}}})
        })
        .collect();
    let mut rule = json!({"http": {"paths": paths}});
    if let Some(h) = host {
        rule["host"] = json!(h);
    }
    json!({"rules": [rule]})
}

const T0: &str = "2026-01-01T00:00:00Z";
const T1: &str = "2026-01-02T00:00:00Z";

fn names(model: &Model) -> Vec<String> {
    model.routes.iter().map(|r| r.name.clone()).collect()
}

fn served(model: &Model) -> Vec<String> {
    model.served.iter().map(ToString::to_string).collect()
}

fn backends(model: &Model, route: &str) -> Vec<String> {
    let r = model
        .routes
        .iter()
        .find(|r| r.name == route)
        .unwrap_or_else(|| panic!("no route {route} in {:?}", names(model)));
    match &r.backend {
        IngressBackend::Service { upstream, .. } => {
            upstream.backends.iter().map(ToString::to_string).collect()
        }
        IngressBackend::Unavailable { reason, .. } => vec![format!("503 {reason}")],
    }
}

/// The model's routes as a router answering the route's path (`prefix /x`, `exact /x`).
fn router(model: &Model) -> Router<String> {
    Router::new(
        model
            .routes
            .iter()
            .map(|r| (r.host.clone(), r.path.clone(), r.path.to_string())),
    )
}

#[test]
fn ingresses_of_our_class_are_served_and_the_others_ignored() {
    let mut w = World::new();
    w.classes.push(class("other", "example.com/other", true));
    let spec = |class: Option<&str>| {
        let mut s = rule(
            Some("a.example"),
            &[("/", "Prefix", "web")],
            json!({"number": 80}),
        );
        s["ingressClassName"] = class.map_or(Value::Null, |c| json!(c));
        s
    };
    let mut legacy = ingress("ns", "legacy", T0, spec(None));
    legacy["metadata"]["annotations"] = json!({"kubernetes.io/ingress.class": "leafgate"});
    let mut legacy_other = ingress("ns", "legacy-other", T0, spec(None));
    legacy_other["metadata"]["annotations"] = json!({"kubernetes.io/ingress.class": "nginx"});
    for v in [
        ingress("ns", "named", T0, spec(Some("leafgate"))),
        ingress("ns", "other-class", T0, spec(Some("other"))),
        ingress("ns", "missing-class", T0, spec(Some("nope"))),
        ingress("ns", "no-class", T0, spec(None)),
        legacy,
        legacy_other,
    ] {
        w.ingresses.push(obj(v));
    }
    let m = w.build();
    // `other` is the default class, not ours: a class-less Ingress is not ours.
    assert_eq!(served(&m), ["ns/legacy", "ns/named"]);
    assert!(m.skipped.is_empty());

    // Our class marked default takes the class-less ones (not those naming a class).
    w.classes[0] = class("leafgate", "leafgate.io/ingress-controller", true);
    w.classes.pop();
    assert_eq!(served(&w.build()), ["ns/legacy", "ns/named", "ns/no-class"]);

    // An IngressClass named like ours but for another controller is not ours.
    w.classes[0] = class("leafgate", "example.com/other", true);
    assert_eq!(served(&w.build()), ["ns/legacy"]);
}

#[test]
fn only_the_configured_namespaces_are_served() {
    let mut w = World::new();
    for ns in ["team-a", "team-a-dev", "web", "kube-system"] {
        w.ingresses.push(obj(ingress(
            ns,
            "app",
            T0,
            rule(
                Some(&format!("{ns}.example")),
                &[("/", "Prefix", "s")],
                json!({"number": 80}),
            ),
        )));
    }
    let mut s = settings();
    s.namespaces = Some(vec!["team-*".into(), "web".into()]);
    assert_eq!(
        served(&w.build_with(&s)),
        ["team-a/app", "team-a-dev/app", "web/app"]
    );
    assert_eq!(w.build().served.len(), 4);
}

/// (pathType, path) pairs, a request path, and the path expected to serve it.
type Example = (
    &'static [(&'static str, &'static str)],
    &'static str,
    Option<&'static str>,
);

/// The Ingress spec's path examples (kubernetes.io, "Ingress: Examples" under path
/// types), each a set of paths and a request path with the path expected to serve it.
#[test]
fn the_spec_path_examples_hold() {
    let table: &[Example] = &[
        (&[("Prefix", "/")], "/anything/at/all", Some("prefix /")),
        (&[("Exact", "/foo")], "/foo", Some("exact /foo")),
        (&[("Exact", "/foo")], "/bar", None),
        (&[("Exact", "/foo")], "/foo/", None),
        (&[("Exact", "/foo/")], "/foo", None),
        (&[("Prefix", "/foo")], "/foo", Some("prefix /foo")),
        (&[("Prefix", "/foo")], "/foo/", Some("prefix /foo")),
        (&[("Prefix", "/foo/")], "/foo", Some("prefix /foo")),
        (&[("Prefix", "/foo/")], "/foo/", Some("prefix /foo")),
        (&[("Prefix", "/aaa/bb")], "/aaa/bbb", None),
        (
            &[("Prefix", "/aaa/bbb")],
            "/aaa/bbb",
            Some("prefix /aaa/bbb"),
        ),
        (
            &[("Prefix", "/aaa/bbb/")],
            "/aaa/bbb",
            Some("prefix /aaa/bbb"),
        ),
        (
            &[("Prefix", "/aaa/bbb")],
            "/aaa/bbb/",
            Some("prefix /aaa/bbb"),
        ),
        (
            &[("Prefix", "/aaa/bbb")],
            "/aaa/bbb/ccc",
            Some("prefix /aaa/bbb"),
        ),
        (&[("Prefix", "/aaa/bbb")], "/aaa/bbbxyz", None),
        (
            &[("Prefix", "/"), ("Prefix", "/aaa")],
            "/aaa/ccc",
            Some("prefix /aaa"),
        ),
        (
            &[("Prefix", "/"), ("Prefix", "/aaa"), ("Prefix", "/aaa/bbb")],
            "/aaa/bbb",
            Some("prefix /aaa/bbb"),
        ),
        (
            &[("Prefix", "/"), ("Prefix", "/aaa"), ("Prefix", "/aaa/bbb")],
            "/ccc",
            Some("prefix /"),
        ),
        (&[("Prefix", "/aaa")], "/ccc", None),
        (
            &[("Prefix", "/foo"), ("Exact", "/foo")],
            "/foo",
            Some("exact /foo"),
        ),
        // The issue's own: `/foo` matches `/foo/` and `/foo/bar`, not `/foobar`.
        (&[("Prefix", "/foo")], "/foo/bar", Some("prefix /foo")),
        (&[("Prefix", "/foo")], "/foobar", None),
        (
            &[("ImplementationSpecific", "/foo")],
            "/foo/bar",
            Some("prefix /foo"),
        ),
        (&[("ImplementationSpecific", "/foo")], "/foobar", None),
    ];
    for (paths, request, expected) in table {
        let mut w = World::new();
        let paths: Vec<(&str, &str, &str)> = paths.iter().map(|(t, p)| (*p, *t, "s")).collect();
        w.ingresses.push(obj(ingress(
            "ns",
            "paths",
            T0,
            rule(Some("h.example"), &paths, json!({"number": 80})),
        )));
        let m = w.build();
        assert!(
            m.problems.iter().all(|p| p.problem.contains("not found")),
            "{:?}",
            m.problems
        );
        assert_eq!(
            router(&m).lookup("h.example", request).map(String::as_str),
            *expected,
            "paths {paths:?}, request {request}"
        );
    }
}

#[test]
fn bad_paths_are_problems_and_the_rest_serves() {
    let mut w = World::new();
    w.web("ns", "s", &["10.0.0.1"]);
    w.ingresses.push(obj(ingress(
        "ns",
        "bad",
        T0,
        rule(
            Some("h.example"),
            &[
                ("relative", "Prefix", "s"),
                ("/x", "Regex", "s"),
                ("/ok", "Exact", "s"),
            ],
            json!({"number": 80}),
        ),
    )));
    let m = w.build();
    assert_eq!(names(&m), ["ingress/ns/bad/h.example/exact /ok"]);
    let problems: Vec<&str> = m.problems.iter().map(|p| p.problem.as_str()).collect();
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("`relative` does not start with `/`"));
    assert!(problems[1].contains("pathType `Regex` is unknown"));
}

/// The Ingress spec's host examples: `*.foo.com` covers exactly one label.
#[test]
fn the_spec_wildcard_host_examples_hold() {
    let mut w = World::new();
    w.web("ns", "s", &["10.0.0.1"]);
    w.ingresses.push(obj(ingress(
        "ns",
        "wild",
        T0,
        rule(
            Some("*.foo.com"),
            &[("/", "Prefix", "s")],
            json!({"number": 80}),
        ),
    )));
    let m = w.build();
    assert_eq!(
        m.routes[0].host,
        HostPattern::WildcardLabel(".foo.com".into())
    );
    assert_eq!(m.routes[0].name, "ingress/ns/wild/*.foo.com/prefix /");
    let r = router(&m);
    assert!(r.lookup("bar.foo.com", "/").is_some());
    assert!(r.lookup("BAR.Foo.com:443", "/x").is_some());
    assert!(r.lookup("baz.bar.foo.com", "/").is_none());
    assert!(r.lookup("foo.com", "/").is_none());
}

#[test]
fn hosts_are_lowercased_and_no_host_means_any() {
    let mut w = World::new();
    w.web("ns", "s", &["10.0.0.1"]);
    w.ingresses.push(obj(ingress(
        "ns",
        "a",
        T0,
        json!({"rules": [
            {"host": "App.Example", "http": {"paths": [
                {"path": "/", "pathType": "Prefix",
                 "backend": {"service": {"name": "s", "port": {"number": 80}}}}]}},
            {"http": {"paths": [
                {"path": "/any", "pathType": "Prefix",
                 "backend": {"service": {"name": "s", "port": {"number": 80}}}}]}},
        ]}),
    )));
    let m = w.build();
    assert_eq!(
        names(&m),
        [
            "ingress/ns/a/*/prefix /any",
            "ingress/ns/a/app.example/prefix /"
        ]
    );
    assert_eq!(m.routes[0].host, HostPattern::Any);
    assert!(router(&m).lookup("elsewhere.example", "/any/x").is_some());
}

#[test]
fn the_default_backend_is_the_catch_all_and_the_root_of_hosts_without_one() {
    let mut w = World::new();
    w.web("ns", "s", &["10.0.0.1"]);
    w.web("ns", "fallback", &["10.0.0.9"]);
    w.ingresses.push(obj(ingress(
        "ns",
        "d",
        T0,
        json!({
            "defaultBackend": {"service": {"name": "fallback", "port": {"name": "http"}}},
            "rules": [
                {"host": "api.example", "http": {"paths": [
                    {"path": "/v1", "pathType": "Prefix",
                     "backend": {"service": {"name": "s", "port": {"number": 80}}}}]}},
                {"host": "www.example", "http": {"paths": [
                    {"path": "/", "pathType": "Prefix",
                     "backend": {"service": {"name": "s", "port": {"number": 80}}}}]}},
            ]
        }),
    )));
    let m = w.build();
    assert_eq!(
        names(&m),
        [
            "ingress/ns/d/*/prefix /",
            "ingress/ns/d/api.example/prefix /",
            "ingress/ns/d/api.example/prefix /v1",
            "ingress/ns/d/www.example/prefix /",
        ]
    );
    assert_eq!(
        backends(&m, "ingress/ns/d/*/prefix /"),
        ["http://10.0.0.9:8080"]
    );
    assert_eq!(
        backends(&m, "ingress/ns/d/api.example/prefix /"),
        ["http://10.0.0.9:8080"]
    );
    assert_eq!(
        backends(&m, "ingress/ns/d/www.example/prefix /"),
        ["http://10.0.0.1:8080"]
    );
    assert_eq!(m.routes[0].backend.key(), "ns/fallback:http");
}

#[test]
fn backends_are_the_ready_endpoints_first_address_of_the_named_port() {
    let mut w = World::new();
    w.services.push(service(
        "ns",
        "s",
        json!([{"name": "http", "port": 80}, {"name": "admin", "port": 9000}]),
    ));
    w.slices.push(slice(
        "ns",
        "s",
        "s-v4",
        "IPv4",
        json!([{"name": "admin", "port": 9001}, {"name": "http", "port": 8080}]),
        json!([
            {"addresses": ["10.0.0.2", "10.0.0.99"], "conditions": {"ready": true}},
            {"addresses": ["10.0.0.1"]},
            {"addresses": ["10.0.0.3"], "conditions": {"ready": false}},
        ]),
    ));
    w.slices.push(slice(
        "ns",
        "s",
        "s-v6",
        "IPv6",
        json!([{"name": "http", "port": 8080}]),
        json!([{"addresses": ["fd00::1"], "conditions": {"ready": true}}]),
    ));
    w.slices.push(slice(
        "ns",
        "s",
        "s-fqdn",
        "FQDN",
        json!([{"name": "http", "port": 8080}]),
        json!([{"addresses": ["pod.example"], "conditions": {"ready": true}}]),
    ));
    // Another Service's slice in the namespace, and one of the same name elsewhere.
    w.web("ns", "other", &["10.9.9.9"]);
    w.web("elsewhere", "s", &["10.8.8.8"]);
    w.ingresses.push(obj(ingress(
        "ns",
        "a",
        T0,
        rule(
            Some("a.example"),
            &[("/", "Prefix", "s")],
            json!({"name": "http"}),
        ),
    )));
    w.ingresses.push(obj(ingress(
        "ns",
        "b",
        T0,
        rule(
            Some("b.example"),
            &[("/", "Prefix", "s")],
            json!({"number": 9000}),
        ),
    )));
    let m = w.build();
    assert_eq!(
        backends(&m, "ingress/ns/a/a.example/prefix /"),
        [
            "http://10.0.0.1:8080",
            "http://10.0.0.2:8080",
            "http://[fd00::1]:8080"
        ]
    );
    assert_eq!(
        backends(&m, "ingress/ns/b/b.example/prefix /"),
        ["http://10.0.0.1:9001", "http://10.0.0.2:9001"]
    );
    assert_eq!(m.routes[0].backend.key(), "ns/s:http");
    assert_eq!(m.routes[1].backend.key(), "ns/s:9000");
    assert!(m.problems.is_empty(), "{:?}", m.problems);
}

#[test]
fn missing_services_ports_and_endpoints_answer_503_with_a_reason() {
    let mut w = World::new();
    w.web("web", "s", &[]);
    w.services.push(obj(json!({
        "metadata": {"namespace": "web", "name": "ext"},
        "spec": {"type": "ExternalName", "externalName": "example.org",
                 "ports": [{"port": 80}]}
    })));
    for (name, svc, port) in [
        ("external", "ext", json!({"number": 80})),
        ("no-service", "x", json!({"number": 80})),
        ("no-port-number", "s", json!({"number": 8080})),
        ("no-port-name", "s", json!({"name": "grpc"})),
        ("no-endpoints", "s", json!({"number": 80})),
    ] {
        w.ingresses.push(obj(ingress(
            "web",
            name,
            T0,
            rule(
                Some(&format!("{name}.example")),
                &[("/", "Prefix", svc)],
                port,
            ),
        )));
    }
    let m = w.build();
    let reasons: Vec<(String, String)> = m
        .routes
        .iter()
        .map(|r| match &r.backend {
            IngressBackend::Unavailable { key, reason } => (key.clone(), reason.clone()),
            IngressBackend::Service { key, .. } => panic!("{key} should be unavailable"),
        })
        .collect();
    assert_eq!(reasons[0].0, "web/ext:80");
    assert!(reasons[0].1.contains("ExternalName"), "{}", reasons[0].1);
    assert_eq!(
        reasons[1..],
        [
            (
                "web/s:80".to_string(),
                "no ready endpoints for web/s:80".to_string()
            ),
            ("web/s:grpc".into(), "service web/s has no port grpc".into()),
            ("web/s:8080".into(), "service web/s has no port 8080".into()),
            ("web/x:80".into(), "service web/x not found".into()),
        ]
    );
    // All still served; the broken objects (not the empty endpoint set) are problems.
    assert_eq!(m.served.len(), 5);
    let problems: Vec<String> = m
        .problems
        .iter()
        .map(|p| format!("{}: {}", p.ingress, p.problem))
        .collect();
    assert!(problems[0].starts_with("web/external: service web/ext is of type ExternalName"));
    assert_eq!(
        problems[1..],
        [
            "web/no-port-name: service web/s has no port grpc",
            "web/no-port-number: service web/s has no port 8080",
            "web/no-service: service web/x not found",
        ]
    );
}

#[test]
fn a_renamed_or_renumbered_service_port_is_followed() {
    let by_name = rule(
        Some("a.example"),
        &[("/", "Prefix", "s")],
        json!({"name": "http"}),
    );
    let by_number = rule(
        Some("b.example"),
        &[("/", "Prefix", "s")],
        json!({"number": 80}),
    );
    let mut w = World::new();
    w.web("ns", "s", &["10.0.0.1"]);
    w.ingresses.push(obj(ingress("ns", "a", T0, by_name)));
    w.ingresses.push(obj(ingress("ns", "b", T0, by_number)));
    let a = "ingress/ns/a/a.example/prefix /";
    let b = "ingress/ns/b/b.example/prefix /";
    let m = w.build();
    assert_eq!(backends(&m, a), ["http://10.0.0.1:8080"]);
    assert_eq!(backends(&m, b), ["http://10.0.0.1:8080"]);

    // The Service port renumbered 80 -> 81 and the pods moved to 9090: by name follows,
    // by number loses it.
    w.services = vec![service("ns", "s", json!([{"name": "http", "port": 81}]))];
    w.slices = vec![slice(
        "ns",
        "s",
        "s-1",
        "IPv4",
        json!([{"name": "http", "port": 9090}]),
        json!([{"addresses": ["10.0.0.1"]}]),
    )];
    let m = w.build();
    assert_eq!(backends(&m, a), ["http://10.0.0.1:9090"]);
    assert_eq!(backends(&m, b), ["503 service ns/s has no port 80"]);

    // Renamed http -> web (number 80 again): by number follows (the slice port is matched
    // by the new name), by name loses it.
    w.services = vec![service("ns", "s", json!([{"name": "web", "port": 80}]))];
    w.slices = vec![slice(
        "ns",
        "s",
        "s-1",
        "IPv4",
        json!([{"name": "web", "port": 9091}]),
        json!([{"addresses": ["10.0.0.1"]}]),
    )];
    let m = w.build();
    assert_eq!(backends(&m, a), ["503 service ns/s has no port http"]);
    assert_eq!(backends(&m, b), ["http://10.0.0.1:9091"]);
}

#[test]
fn an_endpoint_turning_not_ready_leaves_the_backends() {
    let mut w = World::new();
    w.web("ns", "s", &["10.0.0.1", "10.0.0.2"]);
    w.ingresses.push(obj(ingress(
        "ns",
        "a",
        T0,
        rule(
            Some("app.example"),
            &[("/", "Prefix", "s")],
            json!({"number": 80}),
        ),
    )));
    let route = "ingress/ns/a/app.example/prefix /";
    assert_eq!(
        backends(&w.build(), route),
        ["http://10.0.0.1:8080", "http://10.0.0.2:8080"]
    );
    w.slices[0] = slice(
        "ns",
        "s",
        "s-abc",
        "IPv4",
        json!([{"name": "http", "port": 8080}]),
        json!([
            {"addresses": ["10.0.0.1"], "conditions": {"ready": false, "terminating": true}},
            {"addresses": ["10.0.0.2"], "conditions": {"ready": true}},
        ]),
    );
    assert_eq!(backends(&w.build(), route), ["http://10.0.0.2:8080"]);
}

#[test]
fn app_protocol_and_the_annotation_choose_the_backend_protocol() {
    let mut w = World::new();
    w.services.push(service(
        "ns",
        "s",
        json!([
            {"name": "plain", "port": 1},
            {"name": "h2c", "port": 2, "appProtocol": "kubernetes.io/h2c"},
            {"name": "tls", "port": 3, "appProtocol": "https"},
            {"name": "wss", "port": 4, "appProtocol": "kubernetes.io/wss"},
        ]),
    ));
    w.slices.push(slice(
        "ns",
        "s",
        "s-1",
        "IPv4",
        json!([{"name": "plain", "port": 81}, {"name": "h2c", "port": 82},
               {"name": "tls", "port": 83}, {"name": "wss", "port": 84}]),
        json!([{"addresses": ["10.0.0.1"]}]),
    ));
    for port in ["plain", "h2c", "tls", "wss"] {
        w.ingresses.push(obj(ingress(
            "ns",
            port,
            T0,
            rule(
                Some(&format!("{port}.example")),
                &[("/", "Prefix", "s")],
                json!({"name": port}),
            ),
        )));
    }
    let mut overridden = ingress(
        "ns",
        "override",
        T0,
        rule(
            Some("o.example"),
            &[("/", "Prefix", "s")],
            json!({"name": "plain"}),
        ),
    );
    overridden["metadata"]["annotations"] = json!({"leafgate.io/backend-protocol": "H2"});
    w.ingresses.push(obj(overridden));
    let m = w.build();
    let seen: Vec<(String, UpstreamProtocol, bool, Option<bool>)> = m
        .routes
        .iter()
        .map(|r| match &r.backend {
            IngressBackend::Service { upstream, .. } => (
                r.ingress.name.clone(),
                upstream.protocol,
                upstream.backends[0].tls,
                upstream.tls.as_ref().map(|t| t.insecure_skip_verify),
            ),
            IngressBackend::Unavailable { reason, .. } => panic!("{reason}"),
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("h2c".into(), UpstreamProtocol::H2, false, None),
            ("override".into(), UpstreamProtocol::H2, true, Some(true)),
            ("plain".into(), UpstreamProtocol::Auto, false, None),
            ("tls".into(), UpstreamProtocol::Auto, true, Some(true)),
            ("wss".into(), UpstreamProtocol::Auto, true, Some(true)),
        ]
    );
}

#[test]
fn annotations_set_tenant_bandwidth_and_idle_timeout_and_the_namespace_gives_the_tenant() {
    let mut w = World::new();
    w.web("team-a-dev", "s", &["10.0.0.1"]);
    w.web("team-b", "s", &["10.0.0.2"]);
    w.web("web", "s", &["10.0.0.3"]);
    // The annotation names the tenant owning the namespace: naming another is refused.
    let mut annotated = ingress(
        "team-b",
        "annotated",
        T0,
        rule(
            Some("a.example"),
            &[("/", "Prefix", "s")],
            json!({"number": 80}),
        ),
    );
    annotated["metadata"]["annotations"] = json!({
        "leafgate.io/tenant": "team-b",
        "leafgate.io/bandwidth-per-connection": "1MiB/s",
        "leafgate.io/bandwidth-total": "10MiB/s",
        "leafgate.io/upgraded-idle-timeout": "1h",
        "nginx.ingress.kubernetes.io/rewrite-target": "/",
    });
    w.ingresses.push(obj(annotated));
    w.ingresses.push(obj(ingress(
        "team-a-dev",
        "plain",
        T0,
        rule(
            Some("p.example"),
            &[("/", "Prefix", "s")],
            json!({"number": 80}),
        ),
    )));
    w.ingresses.push(obj(ingress(
        "web",
        "untenanted",
        T0,
        rule(
            Some("w.example"),
            &[("/", "Prefix", "s")],
            json!({"number": 80}),
        ),
    )));
    let m = w.build();
    let a = &m.routes[1];
    assert_eq!(a.ingress.name, "annotated");
    assert_eq!(a.tenant.as_deref(), Some("team-b"));
    assert_eq!(
        a.bandwidth.per_connection.map(|r| r.rate.0.get()),
        Some(1 << 20)
    );
    assert_eq!(a.bandwidth.total.map(|r| r.rate.0.get()), Some(10 << 20));
    assert_eq!(a.upgraded_idle, Some(std::time::Duration::from_secs(3600)));
    assert_eq!(m.routes[0].ingress.name, "plain");
    assert_eq!(m.routes[0].tenant.as_deref(), Some("team-a"));
    assert_eq!(m.routes[0].bandwidth, Default::default());
    assert_eq!(m.routes[0].upgraded_idle, None);
    assert_eq!(m.routes[2].tenant, None);
}

#[test]
fn a_bad_annotation_skips_that_ingress_alone() {
    let mut w = World::new();
    w.web("ns", "s", &["10.0.0.1"]);
    let cases = [
        ("bad-rate", "leafgate.io/bandwidth-per-connection", "fast"),
        ("zero-rate", "leafgate.io/bandwidth-total", "0/s"),
        ("bad-duration", "leafgate.io/upgraded-idle-timeout", "soon"),
        ("bad-protocol", "leafgate.io/backend-protocol", "grpc"),
        ("unknown-tenant", "leafgate.io/tenant", "team-z"),
        ("unknown-key", "leafgate.io/rewrite", "/"),
    ];
    for (name, key, value) in cases {
        let mut v = ingress(
            "ns",
            name,
            T0,
            rule(
                Some(&format!("{name}.example")),
                &[("/", "Prefix", "s")],
                json!({"number": 80}),
            ),
        );
        v["metadata"]["annotations"] = json!({ key: value });
        w.ingresses.push(obj(v));
    }
    w.ingresses.push(obj(ingress(
        "ns",
        "good",
        T0,
        rule(
            Some("good.example"),
            &[("/", "Prefix", "s")],
            json!({"number": 80}),
        ),
    )));
    let m = w.build();
    assert_eq!(served(&m), ["ns/good"]);
    assert_eq!(names(&m), ["ingress/ns/good/good.example/prefix /"]);
    assert_eq!(m.skipped.len(), cases.len());
    for (name, key, value) in cases {
        let s = m.skipped.iter().find(|s| s.ingress.name == name).unwrap();
        assert_eq!(s.annotation, key);
        assert_eq!(s.ingress.uid, format!("uid-ns-{name}"));
        assert_eq!(s.ingress.resource_version, "7");
        assert!(
            s.reason.contains(value) || name == "unknown-key",
            "{name}: {}",
            s.reason
        );
    }
    let unknown = m
        .skipped
        .iter()
        .find(|s| s.ingress.name == "unknown-key")
        .unwrap();
    assert!(
        unknown.reason.contains("unknown leafgate annotation"),
        "{}",
        unknown.reason
    );
}

#[test]
fn the_oldest_ingress_wins_a_host_and_path_and_the_conflict_is_reported() {
    // One namespace: across namespaces the host itself has one owner (tested below).
    let mut w = World::new();
    w.web("a", "s", &["10.0.0.1"]);
    let spec = || {
        rule(
            Some("app.example"),
            &[("/", "Prefix", "s"), ("/own", "Prefix", "s")],
            json!({"number": 80}),
        )
    };
    // Listed youngest first: the order of the store must not matter.
    let mut c = spec();
    c["rules"][0]["http"]["paths"][1]["path"] = json!("/c-only");
    w.ingresses.push(obj(ingress("a", "late", T1, c)));
    w.ingresses.push(obj(ingress("a", "tie2", T0, spec())));
    w.ingresses.push(obj(ingress("a", "tie", T0, spec())));
    let m = w.build();
    assert_eq!(
        names(&m),
        [
            "ingress/a/late/app.example/prefix /c-only",
            "ingress/a/tie/app.example/prefix /",
            "ingress/a/tie/app.example/prefix /own",
        ]
    );
    assert_eq!(
        m.conflicts
            .iter()
            .map(|c| (
                c.host.as_str(),
                c.path.as_str(),
                c.winner.as_str(),
                c.losers.clone()
            ))
            .collect::<Vec<_>>(),
        [
            (
                "app.example",
                "prefix /",
                "a/tie",
                vec!["a/tie2".to_string(), "a/late".into()]
            ),
            (
                "app.example",
                "prefix /own",
                "a/tie",
                vec!["a/tie2".to_string()]
            ),
        ]
    );
    // Losers are still ours: they get status.
    assert_eq!(served(&m), ["a/late", "a/tie", "a/tie2"]);
    assert_eq!(
        backends(&m, "ingress/a/tie/app.example/prefix /"),
        ["http://10.0.0.1:8080"]
    );

    // The same objects in another order build the same model.
    w.ingresses.reverse();
    let again = w.build();
    assert_eq!(names(&again), names(&m));
    assert_eq!(again.conflicts, m.conflicts);
}

fn tls_secret(ns: &str, name: &str, hosts: &[&str]) -> Arc<Secret> {
    let key =
        rcgen::generate_simple_self_signed(hosts.iter().map(|h| h.to_string()).collect::<Vec<_>>())
            .unwrap();
    secret(
        ns,
        name,
        "kubernetes.io/tls",
        key.cert.pem().as_bytes(),
        key.signing_key.serialize_pem().as_bytes(),
    )
}

fn secret(ns: &str, name: &str, ty: &str, crt: &[u8], key: &[u8]) -> Arc<Secret> {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    obj(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"namespace": ns, "name": name},
        "type": ty,
        "data": {"tls.crt": b64(crt), "tls.key": b64(key)}
    }))
}

#[test]
fn tls_secrets_serve_their_hosts_and_broken_ones_are_problems() {
    let mut w = World::new();
    w.web("ns", "s", &["10.0.0.1"]);
    w.secrets.push(tls_secret("ns", "listed", &["a.example"]));
    w.secrets.push(tls_secret("ns", "rules", &["b.example"]));
    w.secrets
        .push(tls_secret("other", "elsewhere", &["c.example"]));
    w.secrets.push(secret(
        "ns",
        "garbage",
        "kubernetes.io/tls",
        b"not pem",
        b"nor this",
    ));
    w.secrets.push(secret("ns", "opaque", "Opaque", b"x", b"y"));
    let mut spec = json!({
        "tls": [
            {"hosts": ["a.example", "*.wild.example"], "secretName": "listed"},
            {"secretName": "rules"},
            {"hosts": ["c.example"], "secretName": "elsewhere"},
            {"hosts": ["d.example"], "secretName": "garbage"},
            {"hosts": ["e.example"], "secretName": "opaque"},
        ]
    });
    spec["rules"] = rule(
        Some("b.example"),
        &[("/", "Prefix", "s")],
        json!({"number": 80}),
    )["rules"]
        .clone();
    w.ingresses.push(obj(ingress("ns", "tls", T0, spec)));
    let m = w.build();
    let hosts: Vec<String> = m.certs.iter().map(|(h, _)| format!("{h:?}")).collect();
    assert_eq!(
        hosts,
        [
            "Exact(\"a.example\")",
            "WildcardLabel(\".wild.example\")",
            "Exact(\"b.example\")",
        ]
    );
    assert!(Arc::ptr_eq(&m.certs[0].1, &m.certs[1].1));
    assert!(!Arc::ptr_eq(&m.certs[0].1, &m.certs[2].1));
    let problems: Vec<&str> = m.problems.iter().map(|p| p.problem.as_str()).collect();
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert_eq!(problems[0], "secret ns/elsewhere not found");
    assert!(
        problems[1].starts_with("secret ns/garbage: tls.crt holds no PEM"),
        "{}",
        problems[1]
    );
    assert_eq!(
        problems[2],
        "secret ns/opaque: type is Opaque, not kubernetes.io/tls"
    );
    // Still served: a broken certificate does not drop the routes.
    assert_eq!(names(&m), ["ingress/ns/tls/b.example/prefix /"]);
}

#[test]
fn route_names_are_stable_across_builds() {
    let mut w = World::new();
    w.web("ns", "s", &["10.0.0.1"]);
    w.ingresses.push(obj(ingress(
        "ns",
        "a",
        T0,
        rule(
            Some("a.example"),
            &[("/x", "Exact", "s")],
            json!({"number": 80}),
        ),
    )));
    let first = w.build();
    assert_eq!(names(&first), ["ingress/ns/a/a.example/exact /x"]);
    assert_eq!(first.routes[0].path, PathMatch::Exact("/x".into()));
    let second = w.build();
    assert_eq!(names(&first), names(&second));
}

/// A TLS server on 127.0.0.1:0 with a self-signed certificate for a name nobody dials,
/// answering every request `200 ok`, as a pod serving https would.
async fn pod_with_self_signed_tls() -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let key = rcgen::generate_simple_self_signed(vec!["pod.invalid".to_string()]).unwrap();
    let chain = vec![key.cert.der().clone()];
    let private =
        rustls::pki_types::PrivateKeyDer::try_from(key.signing_key.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(stream).await else {
                    return;
                };
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
                let _ = tls.write_all(answer).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    addr
}

#[tokio::test]
async fn https_backends_are_reached_without_verifying_the_pod_certificate() {
    use http_body_util::{BodyExt, Empty};

    use crate::config::Timeouts;
    use crate::proxy::upstream::Upstream;

    let pod = pod_with_self_signed_tls().await;
    let mut w = World::new();
    w.services.push(service(
        "ns",
        "s",
        json!([{"name": "https", "port": 443, "appProtocol": "https"}]),
    ));
    w.slices.push(slice(
        "ns",
        "s",
        "s-1",
        "IPv4",
        json!([{"name": "https", "port": pod.port()}]),
        json!([{"addresses": ["127.0.0.1"]}]),
    ));
    w.ingresses.push(obj(ingress(
        "ns",
        "a",
        T0,
        rule(
            Some("a.example"),
            &[("/", "Prefix", "s")],
            json!({"name": "https"}),
        ),
    )));
    // The test pod listens on loopback, which only an operator's allow_backends opens.
    let mut loopback = settings();
    loopback.backends.allow = vec!["127.0.0.0/8".parse().unwrap()];
    let m = w.build_with(&loopback);
    let IngressBackend::Service { upstream, .. } = &m.routes[0].backend else {
        panic!("{:?}", m.routes[0].backend);
    };

    let get = |config: crate::config::UpstreamConfig| async move {
        let upstream = Upstream::new(&config, Timeouts::default()).unwrap();
        let req = http::Request::get("/")
            .header(http::header::HOST, "a.example")
            .body(Empty::new().map_err(Into::into).boxed_unsync())
            .unwrap();
        upstream.send(upstream.pick(), req, Some("a.example")).await
    };
    let response = get(upstream.clone()).await.expect("the pod answers");
    assert_eq!(response.status(), http::StatusCode::OK);

    // The same backend with verification on fails: the flag is what lets it through.
    let mut verified = upstream.clone();
    if let Some(tls) = verified.tls.as_mut() {
        tls.insecure_skip_verify = false;
    }
    assert!(get(verified).await.is_err());
}

/// A builder kept across the changes of `w`, told only what changed, checked against a
/// full [`build`] of the same objects after each.
struct Follower {
    builder: Builder,
    settings: Settings,
}

impl Follower {
    fn new(w: &World, settings: Settings) -> Self {
        let mut f = Follower {
            builder: Builder::default(),
            settings,
        };
        f.check(w, Changes::everything(), "first build");
        f
    }

    fn check(&mut self, w: &World, changes: Changes, step: &str) -> Model {
        let kept = self
            .builder
            .apply(&Indexed::new(&w.objects()), changes, &self.settings);
        let full = build(&w.objects(), &self.settings);
        assert_eq!(format!("{kept:?}"), format!("{full:?}"), "after: {step}");
        kept
    }
}

fn changed_ingress(i: &Ingress) -> Changes {
    let mut c = Changes::default();
    c.ingresses.insert(key_of(&i.metadata));
    c
}

fn changed_service(ns: &str, name: &str) -> Changes {
    let mut c = Changes::default();
    c.services.insert((ns.to_string(), name.to_string()));
    c
}

#[test]
fn the_builder_told_what_changed_makes_the_model_a_full_build_makes() {
    let mut w = World::new();
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        w.web("web", name, &[&format!("10.0.0.{}", i + 1)]);
        w.ingresses.push(obj(ingress(
            "web",
            name,
            T1,
            rule(
                Some(&format!("{name}.example")),
                &[("/", "Prefix", name)],
                json!({"name": "http"}),
            ),
        )));
    }
    let mut f = Follower::new(&w, settings());
    f.check(&w, Changes::default(), "nothing changed");

    // An endpoint moves: only b's slice changed.
    w.slices[1] = slice(
        "web",
        "b",
        "b-abc",
        "IPv4",
        json!([{"name": "http", "port": 8080}]),
        json!([{"addresses": ["10.0.0.9"]}]),
    );
    let m = f.check(&w, changed_service("web", "b"), "slice changed");
    assert_eq!(
        backends(&m, "ingress/web/b/b.example/prefix /"),
        ["http://10.0.0.9:8080"]
    );

    // An older Ingress takes c's host; then a's Service goes away.
    let old: Arc<Ingress> = obj(ingress(
        "web",
        "old",
        T0,
        rule(
            Some("c.example"),
            &[("/", "Prefix", "a")],
            json!({"name": "http"}),
        ),
    ));
    w.ingresses.push(old.clone());
    let m = f.check(&w, changed_ingress(&old), "an older Ingress took a host");
    assert_eq!(m.conflicts.len(), 1);
    w.services.remove(0);
    let m = f.check(&w, changed_service("web", "a"), "a Service deleted");
    assert!(backends(&m, "ingress/web/a/a.example/prefix /")[0].starts_with("503"));
    assert!(backends(&m, "ingress/web/old/c.example/prefix /")[0].starts_with("503"));

    // c moves to another host; the old one goes and c.example is old's alone.
    let moved: Arc<Ingress> = obj(ingress(
        "web",
        "c",
        T1,
        rule(
            Some("d.example"),
            &[("/", "Prefix", "c")],
            json!({"name": "http"}),
        ),
    ));
    w.ingresses[2] = moved.clone();
    let m = f.check(&w, changed_ingress(&moved), "an Ingress changed");
    assert!(names(&m).contains(&"ingress/web/c/d.example/prefix /".to_string()));
    assert!(m.conflicts.is_empty());
    let gone = w.ingresses.remove(3);
    let m = f.check(&w, changed_ingress(&gone), "an Ingress deleted");
    assert!(!names(&m).iter().any(|n| n.contains("c.example")));

    // New settings are a full build, whatever the changes say.
    let mut other = settings();
    other.tenants.push(TenantBounds::new("web", &["web"]));
    f.settings = other;
    let m = f.check(&w, Changes::default(), "the tenants changed");
    assert!(m.routes.iter().all(|r| r.tenant.as_deref() == Some("web")));
}

/// An Ingress author's Ingress naming thousands of hosts (and a second one sharing them):
/// a change to it costs the builder about what a full build of the same objects costs (a
/// small multiple), not the square of its hosts, so one author cannot stall every other
/// tenant's updates. With a host's items found by a scan of the Ingress's hosts, this
/// change took 13x the full build.
#[test]
fn an_ingress_with_thousands_of_hosts_costs_a_change_in_proportion_not_squared() {
    const HOSTS: usize = 6_000;
    let mut w = World::new();
    w.web("web", "s", &["10.0.0.1"]);
    let many = |name: &str, created: &str, path: &str| -> Arc<Ingress> {
        let rules: Vec<Value> = (0..HOSTS)
            .map(|i| {
                json!({"host": format!("h{i}.example"), "http": {"paths": [
                    {"path": path, "pathType": "Prefix",
                     "backend": {"service": {"name": "s", "port": {"name": "http"}}}}
                ]}})
            })
            .collect();
        obj(ingress("web", name, created, json!({"rules": rules})))
    };
    w.ingresses.push(many("big", T0, "/"));
    w.ingresses.push(many("late", T1, "/"));
    let mut f = Follower::new(&w, settings());
    let changed = many("big", T0, "/v2");
    w.ingresses[0] = changed.clone();

    let started = std::time::Instant::now();
    let full = build(&w.objects(), &settings());
    let full_took = started.elapsed();
    let started = std::time::Instant::now();
    let kept = f.builder.apply(
        &Indexed::new(&w.objects()),
        changed_ingress(&changed),
        &settings(),
    );
    let change_took = started.elapsed();
    assert_eq!(format!("{kept:?}"), format!("{full:?}"));
    assert_eq!(kept.routes.len(), 2 * HOSTS);
    assert!(
        change_took < full_took * 4,
        "a change took {change_took:?}, a full build {full_took:?}"
    );
}

/// What one step of [`a_builder_follows_any_sequence_of_changes`] does.
#[derive(Debug, Clone)]
enum Step {
    /// Puts Ingress `n` with the spec drawn from `spec`, created at `age`.
    Put {
        n: u8,
        spec: u16,
        age: u8,
    },
    Delete {
        n: u8,
    },
    /// Moves Service `n`'s endpoints (or removes the Service, then brings it back).
    Endpoints {
        n: u8,
        ip: u8,
    },
    ToggleService {
        n: u8,
    },
    /// Replaces or removes the TLS Secret.
    ToggleSecret,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        4 => (0..8u8, any::<u16>(), 0..4u8).prop_map(|(n, spec, age)| Step::Put { n, spec, age }),
        1 => (0..8u8).prop_map(|n| Step::Delete { n }),
        2 => (0..3u8, 0..4u8).prop_map(|(n, ip)| Step::Endpoints { n, ip }),
        1 => (0..3u8).prop_map(|n| Step::ToggleService { n }),
        1 => Just(Step::ToggleSecret),
    ]
}

/// The namespace of Ingress `n`: two tenants' (one with two namespaces) and one without.
fn step_namespace(n: u8) -> &'static str {
    ["team-a", "team-a-dev", "team-b", "web"][usize::from(n % 4)]
}

/// An Ingress spec drawn from the bits of `bits`: hosts shared with the others (exact, a
/// wildcard, none), two paths, three Services, a default backend, a TLS entry, a bad
/// annotation.
fn step_ingress(n: u8, bits: u16, age: u8) -> Arc<Ingress> {
    let hosts = [
        Some("shop.example"),
        Some("app.example"),
        Some("*.x.example"),
        Some("team-a.example.com"),
        Some("a.toml.example"),
        None,
        Some("shop.example"),
        Some("b.cert.example"),
    ];
    let pick = |shift: u16, n: u16| usize::from((bits >> shift) % n);
    let host = hosts[pick(0, 8)];
    let path = ["/", "/api"][pick(3, 2)];
    let service = format!("s{}", pick(4, 3));
    let mut spec = rule(host, &[(path, "Prefix", &service)], json!({"name": "http"}));
    if bits & (1 << 6) != 0 {
        let second = hosts[pick(7, 8)];
        let mut more = rule(second, &[("/", "Prefix", "s0")], json!({"name": "http"}));
        let extra = more["rules"][0].take();
        spec["rules"].as_array_mut().unwrap().push(extra);
    }
    if bits & (1 << 10) != 0 {
        spec["defaultBackend"] = json!({"service": {"name": "s1", "port": {"name": "http"}}});
    }
    if bits & (1 << 11) != 0 {
        spec["tls"] = json!([{"secretName": "cert"}]);
    }
    let namespace = step_namespace(n);
    let created = [
        "2026-01-01T00:00:00Z",
        "2026-01-02T00:00:00Z",
        "2026-01-03T00:00:00Z",
    ];
    let mut v = ingress(namespace, &format!("i{n}"), "", spec);
    v["metadata"]["creationTimestamp"] = match created.get(usize::from(age)) {
        Some(t) => json!(t),
        None => Value::Null,
    };
    if bits & (1 << 12) != 0 {
        v["metadata"]["annotations"] = json!({"leafgate.io/bandwidth-total": "lots"});
    }
    if bits & (1 << 13) != 0 {
        v["spec"]["ingressClassName"] = json!("other");
    }
    obj(v)
}

#[test]
fn a_builder_follows_any_sequence_of_changes() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    // One certificate for every name the specs use, made once.
    let cert = tls_secret(
        "team-a",
        "cert",
        &[
            "shop.example",
            "app.example",
            "*.x.example",
            "b.cert.example",
        ],
    );
    let mut runner = TestRunner::new(Config {
        cases: 48,
        failure_persistence: None,
        ..Config::default()
    });
    let mut ownership = settings();
    ownership.host_owner = HostOwner::Tenant;
    let all_settings = [
        settings(),
        toml_settings(true),
        limited_settings(),
        ownership,
    ];
    let strategy = (0..all_settings.len(), prop::collection::vec(step(), 1..24));
    runner
        .run(&strategy, |(which, steps)| {
            let mut w = World::new();
            for ns in ["team-a", "team-a-dev", "team-b", "web"] {
                for s in 0..3 {
                    w.web(ns, &format!("s{s}"), &[&format!("10.0.{s}.1")]);
                }
            }
            let mut f = Follower::new(&w, all_settings[which].clone());
            for (i, step) in steps.iter().enumerate() {
                let changes = match *step {
                    Step::Put { n, spec, age } => {
                        let new = step_ingress(n, spec, age);
                        let key = key_of(&new.metadata);
                        w.ingresses.retain(|i| key_of(&i.metadata) != key);
                        w.ingresses.push(new.clone());
                        changed_ingress(&new)
                    }
                    Step::Delete { n } => {
                        let name = format!("i{n}");
                        let ns = step_namespace(n);
                        w.ingresses.retain(|i| {
                            i.metadata.name.as_deref() != Some(name.as_str())
                                || i.metadata.namespace.as_deref() != Some(ns)
                        });
                        let mut c = Changes::default();
                        c.ingresses.insert((ns.to_string(), name));
                        c
                    }
                    Step::Endpoints { n, ip } => {
                        let name = format!("s{n}");
                        let mut c = Changes::default();
                        for ns in ["team-a", "team-a-dev", "team-b", "web"] {
                            if let Some(at) = w.slices.iter().position(|s| {
                                s.metadata.namespace.as_deref() == Some(ns)
                                    && s.metadata.name.as_deref()
                                        == Some(format!("{name}-abc").as_str())
                            }) {
                                w.slices[at] = slice(
                                    ns,
                                    &name,
                                    &format!("{name}-abc"),
                                    "IPv4",
                                    json!([{"name": "http", "port": 8080}]),
                                    json!([{"addresses": [format!("10.1.{n}.{ip}")]}]),
                                );
                            }
                            c.services.insert((ns.to_string(), name.clone()));
                        }
                        c
                    }
                    Step::ToggleService { n } => {
                        let name = format!("s{n}");
                        let ns = "team-a";
                        let at = w.services.iter().position(|s| {
                            s.metadata.namespace.as_deref() == Some(ns)
                                && s.metadata.name.as_deref() == Some(name.as_str())
                        });
                        match at {
                            Some(at) => {
                                w.services.remove(at);
                            }
                            None => w.services.push(service(
                                ns,
                                &name,
                                json!([{"name": "http", "port": 80}]),
                            )),
                        }
                        changed_service(ns, &name)
                    }
                    Step::ToggleSecret => {
                        match w.secrets.is_empty() {
                            true => w.secrets.push(cert.clone()),
                            false => w.secrets.clear(),
                        }
                        let mut c = Changes::default();
                        c.secrets.insert(("team-a".to_string(), "cert".to_string()));
                        c
                    }
                };
                f.check(&w, changes, &format!("step {i}: {step:?}"));
            }
            Ok(())
        })
        .unwrap();
}

/// `(ingress, host, certificate, owner)` of each refusal; the owner of a host outside
/// the tenant's `hosts` is written `not allowed to tenant <name>`.
fn refused(model: &Model) -> Vec<(String, String, bool, String)> {
    model
        .refused
        .iter()
        .map(|r| {
            (
                r.ingress.to_string(),
                r.host.clone(),
                r.certificate,
                match &r.why {
                    Refusal::Taken { owner } => owner.clone(),
                    Refusal::NotAllowed { tenant, .. } => format!("not allowed to tenant {tenant}"),
                },
            )
        })
        .collect()
}

/// Settings where TOML routes own `app.example` and `*.toml.example`, and `*` when
/// `catch_all`; TOML certificates cover `*.cert.example`.
fn toml_settings(catch_all: bool) -> Settings {
    let mut s = settings();
    for (host, route) in [("app.example", "login"), ("*.toml.example", "wild")] {
        let host = HostPattern::parse(host).unwrap();
        s.toml_hosts.add(&host, &format!("TOML route `{route}`"));
    }
    if catch_all {
        s.toml_hosts.add(&HostPattern::Any, "TOML route `fallback`");
    }
    s.toml_certs.add(
        &HostPattern::parse("*.cert.example").unwrap(),
        "the TOML certificate of listener `web`",
    );
    s
}

#[test]
fn an_ingress_cannot_take_a_host_the_toml_routes_own() {
    let mut w = World::new();
    w.web("team-b", "s", &["10.0.0.2"]);
    let paths = &[("/login", "Prefix", "s")][..];
    for (name, host) in [
        ("path", Some("app.example")),
        ("under-wildcard", Some("x.toml.example")),
        ("deeper-wildcard", Some("*.a.toml.example")),
        ("same-wildcard", Some("*.toml.example")),
        ("hostless", None),
        ("mine", Some("b.example")),
    ] {
        w.ingresses.push(obj(ingress(
            "team-b",
            name,
            T0,
            rule(host, paths, json!({"number": 80})),
        )));
    }
    let mut default = ingress("team-b", "default", T1, json!({}));
    default["spec"]["defaultBackend"] = json!({"service": {"name": "s", "port": {"number": 80}}});
    w.ingresses.push(obj(default));

    // Without a TOML `*`, host-less rules and defaultBackend serve the hosts nobody routes.
    let m = w.build_with(&toml_settings(false));
    assert_eq!(
        names(&m),
        [
            "ingress/team-b/default/*/prefix /",
            "ingress/team-b/hostless/*/prefix /login",
            "ingress/team-b/mine/b.example/prefix /login",
        ]
    );
    let owner = |r: &str| format!("TOML route `{r}`");
    assert_eq!(
        refused(&m),
        [
            (
                "team-b/deeper-wildcard".into(),
                "*.a.toml.example".into(),
                false,
                owner("wild")
            ),
            (
                "team-b/path".into(),
                "app.example".into(),
                false,
                owner("login")
            ),
            (
                "team-b/same-wildcard".into(),
                "*.toml.example".into(),
                false,
                owner("wild")
            ),
            (
                "team-b/under-wildcard".into(),
                "x.toml.example".into(),
                false,
                owner("wild")
            ),
        ]
    );
    assert_eq!(
        m.refused[1].message(),
        "host app.example is taken by TOML route `login`: its rules for it are not served"
    );
    // With one, the catch-all is TOML's: neither a host-less rule nor a defaultBackend.
    let m = w.build_with(&toml_settings(true));
    assert_eq!(names(&m), ["ingress/team-b/mine/b.example/prefix /login"]);
    let catch_all: Vec<_> = refused(&m)
        .into_iter()
        .filter(|r| r.1 == "*")
        .map(|r| (r.0, r.3))
        .collect();
    assert_eq!(
        catch_all,
        [
            ("team-b/hostless".to_string(), owner("fallback")),
            ("team-b/default".to_string(), owner("fallback")),
        ]
    );
}

#[test]
fn a_host_belongs_to_the_namespace_of_its_oldest_ingress() {
    let mut w = World::new();
    w.web("team-a", "s", &["10.0.0.1"]);
    w.web("team-b", "s", &["10.0.0.2"]);
    let r = |host, path| rule(Some(host), &[(path, "Prefix", "s")], json!({"number": 80}));
    w.ingresses.push(obj(ingress(
        "team-b",
        "late",
        T1,
        r("shop.example", "/admin"),
    )));
    w.ingresses
        .push(obj(ingress("team-a", "shop", T0, r("shop.example", "/"))));
    w.ingresses.push(obj(ingress(
        "team-a",
        "more",
        T1,
        r("shop.example", "/more"),
    )));
    let m = w.build();
    assert_eq!(
        names(&m),
        [
            "ingress/team-a/more/shop.example/prefix /more",
            "ingress/team-a/shop/shop.example/prefix /",
        ]
    );
    assert_eq!(
        refused(&m),
        [(
            "team-b/late".into(),
            "shop.example".into(),
            false,
            "namespace team-a (Ingress team-a/shop)".into()
        )]
    );
    // Once team-a's Ingresses are gone, the host is team-b's.
    w.ingresses
        .retain(|i| i.metadata.namespace.as_deref() == Some("team-b"));
    let m = w.build();
    assert_eq!(
        names(&m),
        ["ingress/team-b/late/shop.example/prefix /admin"]
    );
    assert!(m.refused.is_empty());
}

#[test]
fn an_ingress_certificate_is_never_served_for_a_name_it_does_not_own() {
    let mut w = World::new();
    w.web("team-a", "s", &["10.0.0.1"]);
    w.web("team-b", "s", &["10.0.0.2"]);
    w.secrets.push(tls_secret("team-a", "own", &["a.example"]));
    w.secrets.push(tls_secret("team-b", "evil", &["a.example"]));
    let with_tls = |host: &str, hosts: &[&str], secret: &str| {
        let mut spec = rule(Some(host), &[("/", "Prefix", "s")], json!({"number": 80}));
        spec["tls"] = json!([{"hosts": hosts, "secretName": secret}]);
        spec
    };
    w.ingresses.push(obj(ingress(
        "team-a",
        "site",
        T0,
        with_tls("a.example", &["a.example"], "own"),
    )));
    w.ingresses.push(obj(ingress(
        "team-b",
        "steal",
        T1,
        with_tls(
            "b.example",
            &["a.example", "x.cert.example", "app.example", "b.example"],
            "evil",
        ),
    )));
    let m = w.build_with(&toml_settings(false));
    let hosts: Vec<String> = m.certs.iter().map(|(h, _)| h.to_string()).collect();
    assert_eq!(hosts, ["a.example", "b.example"]);
    assert_eq!(m.certs[0].1.cert, m.certs[0].1.cert);
    assert!(!Arc::ptr_eq(&m.certs[0].1, &m.certs[1].1));
    assert_eq!(
        refused(&m),
        [
            (
                "team-b/steal".into(),
                "a.example".into(),
                true,
                "namespace team-a (Ingress team-a/site)".into()
            ),
            (
                "team-b/steal".into(),
                "x.cert.example".into(),
                true,
                "the TOML certificate of listener `web`".into()
            ),
            (
                "team-b/steal".into(),
                "app.example".into(),
                true,
                "TOML route `login`".into()
            ),
        ]
    );
    assert!(
        m.refused[0]
            .message()
            .contains("its TLS certificate is not served")
    );
}

#[test]
fn backends_are_only_pod_endpoints() {
    let mut w = World::new();
    w.services
        .push(service("ns", "s", json!([{"name": "http", "port": 80}])));
    let endpoints = [
        "10.0.0.1",
        "127.0.0.1",
        "169.254.169.254",
        "0.0.0.0",
        "224.0.0.1",
        "192.0.2.7",
        "10.9.0.5",
        "10.0.0.9",
    ];
    w.slices.push(slice(
        "ns",
        "s",
        "s-1",
        "IPv4",
        json!([{"name": "http", "port": 9901}]),
        json!(
            endpoints
                .iter()
                .map(|a| json!({"addresses": [a]}))
                .collect::<Vec<_>>()
        ),
    ));
    // A slice written by hand (or another controller) may name anything.
    let mut manual: Value = serde_json::to_value(&*slice(
        "ns",
        "s",
        "s-manual",
        "IPv4",
        json!([{"name": "http", "port": 8080}]),
        json!([{"addresses": ["10.0.0.2"]}]),
    ))
    .unwrap();
    manual["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] = json!("someone");
    w.slices.push(obj(manual));
    w.ingresses.push(obj(ingress(
        "ns",
        "a",
        T0,
        rule(
            Some("a.example"),
            &[("/", "Prefix", "s")],
            json!({"number": 80}),
        ),
    )));
    let mut s = settings();
    s.backends.deny = vec!["10.9.0.0/16".parse().unwrap()];
    s.backends.own = vec![
        "192.0.2.7:9901".parse().unwrap(),
        "0.0.0.0:9901".parse().unwrap(),
    ];
    let route = "ingress/ns/a/a.example/prefix /";
    // The gateway's admin port on any address, when it listens on all of them.
    let m = w.build_with(&s);
    let problem = &m.problems[0].problem;
    for why in [
        "endpoint 127.0.0.1 port 9901 is a loopback address",
        "endpoint 169.254.169.254 port 9901 is a link-local address",
        "endpoint 0.0.0.0 port 9901 is the unspecified address",
        "endpoint 224.0.0.1 port 9901 is a multicast or broadcast address",
        "endpoint 192.0.2.7 port 9901 is one of the gateway's own addresses",
        "endpoint 10.0.0.1 port 9901 is one of the gateway's own addresses",
        "endpoint 10.9.0.5 port 9901 is one of the gateway's own addresses",
        "EndpointSlice s-manual is not managed by the EndpointSlice controller (endpointslice.kubernetes.io/managed-by: someone)",
    ] {
        assert!(problem.contains(why), "{why}: {problem}");
    }
    assert_eq!(
        backends(&m, route)[0].split(':').next(),
        Some("503 no endpoints allowed for ns/s")
    );

    // Only the admin's own address: the rest of the pods serve; deny_backends still holds.
    s.backends.own.pop();
    s.backends.allow_unmanaged = true;
    let m = w.build_with(&s);
    assert_eq!(
        backends(&m, route),
        [
            "http://10.0.0.1:9901",
            "http://10.0.0.2:8080",
            "http://10.0.0.9:9901"
        ]
    );
    let problem = &m.problems[0].problem;
    assert!(
        problem.starts_with("endpoints refused for ns/s:80: "),
        "{problem}"
    );
    assert!(
        problem.contains("10.9.0.5 port 9901 is in deny_backends (10.9.0.0/16)"),
        "{problem}"
    );
    // The operator may open loopback (one-host clusters), never the gateway's own address.
    s.backends.allow = vec![
        "127.0.0.0/8".parse().unwrap(),
        "192.0.2.0/24".parse().unwrap(),
    ];
    let m = w.build_with(&s);
    assert!(backends(&m, route).contains(&"http://127.0.0.1:9901".to_string()));
    assert!(!backends(&m, route).contains(&"http://192.0.2.7:9901".to_string()));
}

#[test]
fn annotations_stay_within_the_tenants_bounds() {
    let mut w = World::new();
    w.web("team-b", "s", &["10.0.0.2"]);
    let annotated = |name: &str, pairs: Value| {
        let mut v = ingress(
            "team-b",
            name,
            T0,
            rule(
                Some(&format!("{name}.example")),
                &[("/", "Prefix", "s")],
                json!({"number": 80}),
            ),
        );
        v["metadata"]["annotations"] = pairs;
        obj(v)
    };
    w.ingresses
        .push(annotated("other", json!({"leafgate.io/tenant": "team-a"})));
    w.ingresses.push(annotated(
        "fast",
        json!({
            "leafgate.io/bandwidth-per-connection": "44KiB/s",
            "leafgate.io/bandwidth-total": "1KiB/s",
            "leafgate.io/upgraded-idle-timeout": "1000h",
        }),
    ));
    let mut s = settings();
    let limit = |text: &str| crate::config::RateLimit {
        rate: text.parse().unwrap(),
        burst: None,
    };
    s.tenants[1].bandwidth.per_connection = Some(limit("20KiB/s"));
    s.tenants[1].bandwidth.total = Some(limit("100KiB/s"));
    let m = w.build_with(&s);
    assert_eq!(served(&m), ["team-b/fast"]);
    assert_eq!(m.skipped.len(), 1);
    assert_eq!(m.skipped[0].annotation, "leafgate.io/tenant");
    assert!(
        m.skipped[0]
            .reason
            .contains("tenant `team-a` does not own namespace team-b"),
        "{}",
        m.skipped[0].reason
    );
    let r = &m.routes[0];
    assert_eq!(r.tenant.as_deref(), Some("team-b"));
    assert_eq!(
        r.bandwidth.per_connection,
        Some(limit("20KiB/s")),
        "lowered"
    );
    assert_eq!(
        r.bandwidth.total,
        Some(limit("1KiB/s")),
        "below the tenant's: kept"
    );
    assert_eq!(r.upgraded_idle, Some(super::annotations::MAX_UPGRADED_IDLE));
    assert_eq!(
        m.problems
            .iter()
            .map(|p| p.problem.as_str())
            .collect::<Vec<_>>(),
        ["leafgate.io/bandwidth-per-connection is above tenant team-b's limit: lowered to it"]
    );
}

fn hosts(patterns: &[&str]) -> Option<Vec<HostPattern>> {
    Some(
        patterns
            .iter()
            .map(|p| HostPattern::parse(p).unwrap())
            .collect(),
    )
}

#[test]
fn a_tenants_hosts_patterns_cover_exact_names_and_whole_wildcards_only() {
    let mut t = TenantBounds::new("team-a", &["team-a"]);
    let ingress = |h: &str| HostPattern::parse_ingress(h).unwrap();
    assert!(t.may_claim(&ingress("evil.example")) && t.may_claim(&HostPattern::Any));
    t.hosts = hosts(&["team-a.example.com", "*.team-a.example.com"]);
    for host in [
        "team-a.example.com",
        "app.team-a.example.com",
        "a.b.team-a.example.com",
        "*.team-a.example.com",
        "*.x.team-a.example.com",
    ] {
        assert!(t.may_claim(&ingress(host)), "{host}");
    }
    for host in [
        "evil.example",
        "example.com",
        "xteam-a.example.com",
        "team-a.example.com.evil",
        // Matches names outside the patterns (www.example.com).
        "*.example.com",
    ] {
        assert!(!t.may_claim(&ingress(host)), "{host}");
    }
    assert!(
        !t.may_claim(&HostPattern::Any),
        "the catch-all is outside any list of hosts"
    );
    // An exact pattern is one name: it covers no wildcard.
    t.hosts = hosts(&["app.example"]);
    assert!(!t.may_claim(&ingress("*.app.example")));
    t.hosts = hosts(&["*"]);
    assert!(t.may_claim(&HostPattern::Any) && t.may_claim(&ingress("*.example.com")));
    t.hosts = Some(Vec::new());
    assert!(!t.may_claim(&ingress("team-a.example.com")));
}

/// team-a limited to `team-a.example.com` and `*.team-a.example.com`, team-b unlimited.
fn limited_settings() -> Settings {
    let mut s = settings();
    s.tenants[0].hosts = hosts(&["team-a.example.com", "*.team-a.example.com"]);
    s
}

#[test]
fn an_ingress_claims_only_hosts_its_tenants_patterns_cover() {
    let mut w = World::new();
    for ns in ["team-a", "team-b", "other"] {
        w.web(ns, "s", &["10.0.0.1"]);
    }
    w.secrets.push(tls_secret(
        "team-a",
        "tls",
        &["evil.example", "app.team-a.example.com"],
    ));
    let r = |host: Option<&str>| rule(host, &[("/", "Prefix", "s")], json!({"number": 80}));
    for (name, host) in [
        ("apex", Some("team-a.example.com")),
        ("app", Some("app.team-a.example.com")),
        ("wild", Some("*.x.team-a.example.com")),
        ("evil", Some("evil.example")),
        ("wide", Some("*.example.com")),
        ("hostless", None),
    ] {
        w.ingresses.push(obj(ingress("team-a", name, T0, r(host))));
    }
    let mut default = ingress("team-a", "default", T0, json!({}));
    default["spec"]["defaultBackend"] = json!({"service": {"name": "s", "port": {"number": 80}}});
    w.ingresses.push(obj(default));
    let mut certs = ingress("team-a", "certs", T0, r(Some("app.team-a.example.com")));
    certs["spec"]["tls"] =
        json!([{"hosts": ["evil.example", "app.team-a.example.com"], "secretName": "tls"}]);
    w.ingresses.push(obj(certs));
    // Younger, but team-a's refused claims took nothing: team-b (no `hosts`) and a
    // namespace no tenant owns get what they name.
    w.ingresses
        .push(obj(ingress("team-b", "evil", T1, r(Some("evil.example")))));
    w.ingresses
        .push(obj(ingress("other", "hostless", T1, r(None))));

    let m = w.build_with(&limited_settings());
    assert_eq!(
        names(&m),
        [
            "ingress/other/hostless/*/prefix /",
            "ingress/team-a/apex/team-a.example.com/prefix /",
            "ingress/team-a/app/app.team-a.example.com/prefix /",
            "ingress/team-a/wild/*.x.team-a.example.com/prefix /",
            "ingress/team-b/evil/evil.example/prefix /",
        ]
    );
    let hosts: Vec<String> = m.certs.iter().map(|(h, _)| h.to_string()).collect();
    assert_eq!(hosts, ["app.team-a.example.com"]);
    let no = |ingress: &str, host: &str, certificate| {
        (
            format!("team-a/{ingress}"),
            host.to_string(),
            certificate,
            "not allowed to tenant team-a".to_string(),
        )
    };
    let mut got = refused(&m);
    got.sort();
    assert_eq!(
        got,
        [
            no("certs", "evil.example", true),
            no("default", "*", false),
            no("evil", "evil.example", false),
            no("hostless", "*", false),
            no("wide", "*.example.com", false),
        ]
    );
    let message = |ingress: &str, certificate: bool| {
        m.refused
            .iter()
            .find(|r| r.ingress.name == ingress && r.certificate == certificate)
            .unwrap()
            .message()
    };
    assert_eq!(
        message("evil", false),
        "host evil.example is not allowed (tenant team-a may claim only hosts matching team-a.example.com, *.team-a.example.com): its rules for it are not served"
    );
    assert_eq!(
        message("certs", true),
        "host evil.example is not allowed (tenant team-a may claim only hosts matching team-a.example.com, *.team-a.example.com): its TLS certificate is not served for it"
    );
    assert_eq!(
        message("hostless", false),
        "host * (rules without a host and defaultBackend) is not allowed (tenant team-a may claim only hosts matching team-a.example.com, *.team-a.example.com): its rules for it are not served"
    );
    // Reported as its own Event reason, never as a taken host.
    let reasons: Vec<(&str, &str)> = notices(&m)
        .iter()
        .map(|n| (n.ingress.name.as_str(), n.reason))
        .collect();
    assert!(reasons.contains(&("evil", HOST_NOT_ALLOWED)), "{reasons:?}");
    assert!(
        !reasons.iter().any(|(_, r)| *r == HOST_TAKEN),
        "{reasons:?}"
    );

    // Without `hosts`, the same objects: team-a takes them all, oldest first.
    let m = w.build();
    assert!(names(&m).contains(&"ingress/team-a/evil/evil.example/prefix /".to_string()));
    assert_eq!(
        refused(&m)
            .iter()
            .filter(|r| r.0 == "team-b/evil")
            .map(|r| r.3.as_str())
            .collect::<Vec<_>>(),
        // Named first by team-a/certs's `spec.tls` (same age, sorted by name).
        ["namespace team-a (Ingress team-a/certs)"]
    );
    // A host TOML owns outside the patterns is reported as not allowed: the tenant's
    // bound says why whoever owns it.
    let mut s = limited_settings();
    s.toml_hosts.add(
        &HostPattern::parse("evil.example").unwrap(),
        "TOML route `x`",
    );
    let m = w.build_with(&s);
    assert!(
        refused(&m).contains(&no("evil", "evil.example", false)),
        "{:?}",
        refused(&m)
    );
    // An empty list: nothing at all.
    let mut s = settings();
    s.tenants[0].hosts = Some(Vec::new());
    let m = w.build_with(&s);
    assert!(names(&m).iter().all(|n| !n.starts_with("ingress/team-a/")));
    assert!(
        m.refused[0]
            .message()
            .contains("(tenant team-a may claim no host)"),
        "{}",
        m.refused[0].message()
    );
}

/// team-a owns `team-a` and `team-a-*`, team-b owns `team-b`; `other` is no tenant's.
fn ownership_world() -> World {
    let mut w = World::new();
    for ns in ["team-a", "team-a-admin", "team-b", "other"] {
        w.web(ns, "s", &["10.0.0.1"]);
    }
    w.secrets
        .push(tls_secret("team-a-admin", "shop", &["shop.example"]));
    let r =
        |host: &str, path: &str| rule(Some(host), &[(path, "Prefix", "s")], json!({"number": 80}));
    w.ingresses
        .push(obj(ingress("team-a", "shop", T0, r("shop.example", "/"))));
    let mut admin = ingress("team-a-admin", "admin", T1, r("shop.example", "/admin"));
    admin["spec"]["tls"] = json!([{"hosts": ["shop.example"], "secretName": "shop"}]);
    w.ingresses.push(obj(admin));
    for ns in ["team-b", "other"] {
        w.ingresses
            .push(obj(ingress(ns, "late", T1, r("shop.example", "/late"))));
    }
    // A host a tenant-less namespace named first stays that namespace's.
    w.ingresses
        .push(obj(ingress("other", "first", T0, r("o.example", "/"))));
    w.ingresses
        .push(obj(ingress("team-a", "late", T1, r("o.example", "/a"))));
    w
}

#[test]
fn with_tenant_ownership_a_host_belongs_to_the_tenant_of_its_oldest_ingress() {
    let w = ownership_world();
    let mut s = settings();
    s.host_owner = HostOwner::Tenant;
    let m = w.build_with(&s);
    assert_eq!(
        names(&m),
        [
            "ingress/other/first/o.example/prefix /",
            "ingress/team-a-admin/admin/shop.example/prefix /admin",
            "ingress/team-a/shop/shop.example/prefix /",
        ]
    );
    let hosts: Vec<String> = m.certs.iter().map(|(h, _)| h.to_string()).collect();
    assert_eq!(
        hosts,
        ["shop.example"],
        "the second namespace's certificate"
    );
    let tenant_a = "tenant team-a (Ingress team-a/shop)".to_string();
    let mut got = refused(&m);
    got.sort();
    assert_eq!(
        got,
        [
            (
                "other/late".into(),
                "shop.example".into(),
                false,
                tenant_a.clone()
            ),
            (
                "team-a/late".into(),
                "o.example".into(),
                false,
                "namespace other (Ingress other/first)".into()
            ),
            ("team-b/late".into(), "shop.example".into(), false, tenant_a),
        ]
    );
    assert!(
        m.refused
            .iter()
            .find(|r| r.ingress.namespace == "team-b")
            .unwrap()
            .message()
            .starts_with("host shop.example is taken by tenant team-a (Ingress team-a/shop): ")
    );
}

#[test]
fn by_default_a_tenants_second_namespace_is_refused_like_any_other() {
    let m = ownership_world().build();
    assert_eq!(HostOwner::default(), HostOwner::Namespace);
    assert_eq!(
        names(&m),
        [
            "ingress/other/first/o.example/prefix /",
            "ingress/team-a/shop/shop.example/prefix /",
        ]
    );
    assert!(m.certs.is_empty());
    let owner = "namespace team-a (Ingress team-a/shop)";
    let admin: Vec<(bool, String)> = refused(&m)
        .into_iter()
        .filter(|r| r.0 == "team-a-admin/admin")
        .map(|r| (r.2, r.3))
        .collect();
    assert_eq!(admin, [(false, owner.into()), (true, owner.into())]);
}
