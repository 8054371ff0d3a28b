//! Random sequences of changes (routes added, deleted and modified, a Service or its
//! EndpointSlice moved, a grant deleted and put back, a namespace's labels, a Gateway's
//! listeners), each told to the translator as the reflectors tell it (the routes and
//! Services by name, nothing of the other kinds): after each one, the model, what is
//! served and what the snapshot routes are those a build from scratch makes, and what the
//! change did not touch is kept (counted).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{INFRA, WEB, World, arc, backend, http, own_host_route};
use crate::config::{Config, HostPattern, PathMatch};
use crate::k8s::gateway::incremental::{Changes, Translator, translate};
use crate::k8s::gateway::model::Objects;
use crate::k8s::gateway::serve::{Served, served, served_after};
use crate::snapshot::{Action, GatewayRoutes, Route};

/// xorshift64*: the same sequence for a seed, no crate needed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

const SERVICES: [(&str, &str); 4] = [
    (INFRA, "infra-backend-v1"),
    (INFRA, "infra-backend-v2"),
    (INFRA, "infra-backend-v3"),
    (WEB, "web-backend"),
];

/// Route `name` in `ns` (created at second `created`): one of a few hosts (shared, so
/// routes meet on a host; one a wildcard), a path, maybe a header match, to one Service
/// (across namespaces from WEB to INFRA: the grant's).
fn route(rng: &mut Rng, ns: &str, name: &str, created: usize, generation: i64) -> Value {
    let hosts = [
        "a.example",
        "b.example",
        "c.example",
        "*.wild.example",
        "d.wild.example",
    ];
    let host = hosts[rng.below(hosts.len())];
    let path = ["/", "/v1", "/v2"][rng.below(3)];
    let (svc_ns, svc) = SERVICES[rng.below(SERVICES.len())];
    let mut b = backend(svc);
    if svc_ns != ns {
        b["namespace"] = json!(svc_ns);
    }
    let mut m = json!({"path": {"type": "PathPrefix", "value": path}});
    if rng.below(3) == 0 {
        m["headers"] = json!([{"name": "version", "value": "two"}]);
    }
    json!({
        "metadata": {"name": name, "namespace": ns, "generation": generation,
                     "uid": format!("uid-{ns}-{name}-{generation}"),
                     "creationTimestamp": format!("2026-01-02T00:00:{:02}Z", created % 60)},
        "spec": {"parentRefs": [{"name": "all", "namespace": INFRA}], "hostnames": [host],
                 "rules": [{"matches": [m], "backendRefs": [b]}]}
    })
}

fn grant() -> Value {
    json!({"metadata": {"name": "from-web", "namespace": INFRA, "uid": "uid-grant", "resourceVersion": "1"},
           "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "namespace": WEB}],
                    "to": [{"group": "", "kind": "Service"}]}})
}

fn slice(ns: &str, svc: &str, ip: &str, version: usize) -> Value {
    json!({
        "metadata": {"name": format!("{svc}-1"), "namespace": ns, "resourceVersion": version.to_string(),
                     "labels": {"kubernetes.io/service-name": svc,
                                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
        "addressType": "IPv4", "ports": [{"port": 3000}], "endpoints": [{"addresses": [ip]}]
    })
}

/// The kinds besides routes, Services and slices, as the controller hands them.
fn few(w: &World) -> Objects<'_> {
    Objects {
        routes: &[],
        services: &[],
        slices: &[],
        ..w.objects()
    }
}

fn config() -> Arc<Config> {
    let src = "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n";
    Arc::new(Config::parse(std::path::Path::new("t.toml"), src).unwrap())
}

/// A route as the router serves it: its name and what it does, its choices' routes too.
fn describe(r: &Route) -> String {
    let action = match &r.action {
        Action::Direct(d) => format!("direct {} {:?}", d.status, d.body),
        Action::Proxy(u) => {
            let backends: Vec<String> = (0..u.len())
                .filter_map(|i| u.backend(i))
                .map(|b| format!("{:?}", b.backend))
                .collect();
            format!("proxy {backends:?}")
        }
        Action::Gateway(rules) => {
            let choices: Vec<String> = (rules.choices.iter())
                .map(|c| {
                    c.split
                        .routes()
                        .map(|r| describe(r))
                        .collect::<Vec<_>>()
                        .join(" | ")
                })
                .collect();
            format!("choose [{}]", choices.join("; "))
        }
    };
    format!("{} {action}", r.name)
}

/// A request host and path the router sends to `host` and `path`.
fn request(host: &HostPattern, path: &PathMatch) -> (String, String) {
    let host = match host {
        HostPattern::Exact(h) => h.clone(),
        HostPattern::Wildcard(s) | HostPattern::WildcardLabel(s) => format!("zz{s}"),
        HostPattern::Any => "any.host".into(),
    };
    let path = match path {
        PathMatch::Exact(p) | PathMatch::Prefix(p) => p.clone(),
    };
    (host, path)
}

/// Every host and path of `served` routes alike in both compilations, and every backend
/// route `kept`'s routers hold is one it compiled this time (none left from before).
fn same_routers(served: &Served, kept: &GatewayRoutes, fresh: &GatewayRoutes) {
    assert_eq!(kept.listeners.len(), fresh.listeners.len());
    for ((s, k), f) in served
        .listeners
        .iter()
        .zip(&kept.listeners)
        .zip(&fresh.listeners)
    {
        for p in s.paths() {
            let (host, path) = request(&p.host, &p.path);
            let (a, b) = (k.router.lookup(&host, &path), f.router.lookup(&host, &path));
            assert_eq!(
                a.map(|r| describe(r)),
                b.map(|r| describe(r)),
                "{host}{path}"
            );
            let mut backends: Vec<&Arc<Route>> = Vec::new();
            match a.map(|r| &r.action) {
                Some(Action::Gateway(rules)) => {
                    backends.extend(rules.choices.iter().flat_map(|c| c.split.routes()));
                }
                Some(_) => backends.extend(a),
                None => {}
            }
            for r in backends
                .iter()
                .filter(|r| matches!(r.action, Action::Proxy(_)))
            {
                assert!(
                    k.routes.routes.iter().any(|c| Arc::ptr_eq(c, r)),
                    "{host}{path}: {} is not this compilation's",
                    r.name
                );
            }
        }
    }
}

#[test]
fn after_random_changes_each_build_is_the_build_from_scratch() {
    let config = config();
    let tenants = HashMap::new();
    for seed in 1..=12u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut w = World::new();
        w.gateway("all", json!([http("http", "All")]));
        w.grants.push(arc(grant()));
        let mut made = 0;
        for _ in 0..12 {
            let ns = [INFRA, WEB][rng.below(2)];
            w.routes
                .push(arc(route(&mut rng, ns, &format!("r{made}"), made, 1)));
            made += 1;
        }
        let mut t = Translator::default();
        let mut model = t.apply(&few(&w), &w.objects(), &Changes::everything(), &w.settings);
        let mut s = Arc::new(served(&mut model, &w.gateways));
        let mut g = GatewayRoutes::compile(s.clone(), &config, &tenants, None);
        for step in 0..40 {
            let mut changes = Changes::default();
            let what = rng.below(9);
            match what {
                // A route added.
                0 | 1 => {
                    let ns = [INFRA, WEB][rng.below(2)];
                    let name = format!("r{made}");
                    w.routes.push(arc(route(&mut rng, ns, &name, made, 1)));
                    changes.routes.insert((ns.to_string(), name));
                    made += 1;
                }
                // A route deleted.
                2 if !w.routes.is_empty() => {
                    let gone = w.routes.remove(rng.below(w.routes.len()));
                    let m = &gone.metadata;
                    changes
                        .routes
                        .insert((m.namespace.clone().unwrap(), m.name.clone().unwrap()));
                }
                // A route's spec changed (a new generation, its creation kept).
                3 if !w.routes.is_empty() => {
                    let i = rng.below(w.routes.len());
                    let m = w.routes[i].metadata.clone();
                    let (ns, name) = (m.namespace.unwrap(), m.name.unwrap());
                    let created: usize = name[1..].parse().unwrap();
                    let mut r = route(&mut rng, &ns, &name, created, m.generation.unwrap() + 1);
                    r["metadata"]["uid"] = json!(m.uid);
                    w.routes[i] = arc(r);
                    changes.routes.insert((ns, name));
                }
                // A Service's EndpointSlice lists another address, or the Service moves
                // its target port.
                4 | 5 => {
                    let (ns, svc) = SERVICES[rng.below(SERVICES.len())];
                    let i = w
                        .slices
                        .iter()
                        .position(|s| s.metadata.name.as_deref() == Some(&format!("{svc}-1")));
                    let ip = format!("10.2.{}.{}", step, rng.below(200) + 1);
                    if what == 4 {
                        w.slices[i.unwrap()] = arc(slice(ns, svc, &ip, 100 + step));
                    } else {
                        let k = w
                            .services
                            .iter()
                            .position(|s| s.metadata.name.as_deref() == Some(svc));
                        w.services[k.unwrap()] = arc(
                            json!({"metadata": {"name": svc, "namespace": ns, "resourceVersion": format!("s{step}")},
                            "spec": {"ports": [{"port": 8080, "targetPort": 3000 + rng.below(2)}]}}),
                        );
                    }
                    changes.services.insert((ns.to_string(), svc.to_string()));
                }
                // The grant deleted, or put back: nothing is told by name.
                6 => match w.grants.is_empty() {
                    true => w.grants.push(arc(grant())),
                    false => w.grants.clear(),
                },
                // A namespace's labels.
                7 => {
                    let label = format!("step-{step}");
                    w.namespaces[1] = arc(
                        json!({"metadata": {"name": WEB, "labels": {"gateway-conformance": label}}}),
                    );
                }
                // The Gateway's listeners: a second one, or back to one.
                _ => {
                    let generation = w.gateways[0].metadata.generation.unwrap() + 1;
                    let listeners = match generation % 2 {
                        0 => {
                            json!([http("http", "All"), {"name": "alt", "port": 8080, "protocol": "HTTP", "allowedRoutes": {"namespaces": {"from": "Same"}}}])
                        }
                        _ => json!([http("http", "All")]),
                    };
                    w.gateways[0] = arc(json!({
                        "metadata": {"name": "all", "namespace": INFRA, "generation": generation, "creationTimestamp": "2026-01-01T00:00:00Z"},
                        "spec": {"gatewayClassName": "leafgate", "listeners": listeners}
                    }));
                }
            }
            let mut kept = t.apply(&few(&w), &w.objects(), &changes, &w.settings);
            let mut fresh = translate(&w.objects(), &w.settings);
            let at = format!("seed {seed}, step {step}, change {what}");
            assert_eq!(format!("{kept:?}"), format!("{fresh:?}"), "{at}: model");
            let next = Arc::new(served_after(&mut kept, &w.gateways, Some(&s)));
            let scratch = served(&mut fresh, &w.gateways);
            assert_eq!(next.listeners.len(), scratch.listeners.len(), "{at}");
            for (a, b) in next.listeners.iter().zip(&scratch.listeners) {
                assert_eq!(a.addr, b.addr, "{at}");
                assert_eq!(
                    format!("{:?}", a.table),
                    format!("{:?}", b.table),
                    "{at}: table"
                );
                assert_eq!(
                    format!("{:?}", a.routes),
                    format!("{:?}", b.routes),
                    "{at}: backends"
                );
            }
            let compiled = GatewayRoutes::compile(next.clone(), &config, &tenants, Some(&g));
            let from_scratch = GatewayRoutes::compile(Arc::new(scratch), &config, &tenants, None);
            same_routers(&next, &compiled, &from_scratch);
            (s, g) = (next, compiled);
        }
    }
}

/// Route `r{i}` on its own hostname `r{i}.example`, to infra-backend-v1 (v2 for `r0`).
fn own(i: usize, generation: i64) -> Value {
    let svc = if i == 0 {
        "infra-backend-v2"
    } else {
        "infra-backend-v1"
    };
    own_host_route(i, generation, svc)
}

#[test]
fn a_change_digests_translates_and_compiles_only_what_it_concerns() {
    let config = config();
    let tenants = HashMap::new();
    let mut w = World::new();
    w.gateway("all", json!([http("http", "All")]));
    for i in 0..50 {
        w.routes.push(arc(own(i, 1)));
    }
    let mut t = Translator::default();
    let mut m = t.apply(&few(&w), &w.objects(), &Changes::everything(), &w.settings);
    assert_eq!((t.digested, t.translated), (50, 50));
    let first = Arc::new(served(&mut m, &w.gateways));
    let g1 = GatewayRoutes::compile(first.clone(), &config, &tenants, None);
    assert_eq!(
        g1.listeners[0].built, None,
        "the first compilation builds every host"
    );

    // r0's Service moves its endpoint: r0 alone is digested, translated, served and
    // compiled again.
    let i = (w.slices.iter())
        .position(|s| s.metadata.name.as_deref() == Some("infra-backend-v2-1"))
        .unwrap();
    w.slices[i] = arc(slice(INFRA, "infra-backend-v2", "10.1.0.99", 7));
    let changes = Changes {
        services: [(INFRA.to_string(), "infra-backend-v2".to_string())]
            .into_iter()
            .collect(),
        ..Changes::default()
    };
    let mut m = t.apply(&few(&w), &w.objects(), &changes, &w.settings);
    assert_eq!((t.digested, t.translated), (1, 1));
    let next = Arc::new(served_after(&mut m, &w.gateways, Some(&first)));
    let (a, b) = (&first.listeners[0].table, &next.listeners[0].table);
    let same = a
        .iter()
        .filter(|(h, p)| b.get(*h).is_some_and(|q| Arc::ptr_eq(p, q)));
    assert_eq!(same.count(), 49, "every other host keeps its paths");
    let g2 = GatewayRoutes::compile(next.clone(), &config, &tenants, Some(&g1));
    assert_eq!(
        g2.listeners[0].built,
        Some(1),
        "one host's router entries built"
    );
    let route =
        |g: &GatewayRoutes, host: &str| g.listeners[0].router.lookup(host, "/").cloned().unwrap();
    for i in 1..50 {
        let host = format!("r{i}.example");
        assert!(
            Arc::ptr_eq(&route(&g1, &host), &route(&g2, &host)),
            "{host}"
        );
    }
    assert!(!Arc::ptr_eq(
        &route(&g1, "r0.example"),
        &route(&g2, "r0.example")
    ));
    assert!(describe(&route(&g2, "r0.example")).contains("10.1.0.99"));

    // A route told changed whose generation did not move: digested, not translated, and
    // everything is kept down to the router.
    let changes = Changes {
        routes: [(INFRA.to_string(), "r7".to_string())]
            .into_iter()
            .collect(),
        ..Changes::default()
    };
    let mut m = t.apply(&few(&w), &w.objects(), &changes, &w.settings);
    assert_eq!((t.digested, t.translated), (1, 0));
    let again = Arc::new(served_after(&mut m, &w.gateways, Some(&next)));
    assert!(Arc::ptr_eq(
        &again.listeners[0].table,
        &next.listeners[0].table
    ));
    let g3 = GatewayRoutes::compile(again, &config, &tenants, Some(&g2));
    assert!(Arc::ptr_eq(
        &g3.listeners[0].router,
        &g2.listeners[0].router
    ));

    // Against another config (a reload), every host is built again.
    let g4 = GatewayRoutes::compile(next, &self::config(), &tenants, Some(&g3));
    assert_eq!(g4.listeners[0].built, None);
}
