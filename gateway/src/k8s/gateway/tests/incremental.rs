//! The translation kept between builds (`incremental`): a change translates again only
//! the routes whose inputs it changed (counted), and every model it makes is the one the
//! translation from scratch makes of the same objects.

use std::sync::Arc;
use std::time::Instant;

use serde_json::{Value, json};

use super::{INFRA, World, arc, backend, http, own_host_route};
use crate::k8s::gateway::incremental::{Translator, translate};
use crate::k8s::gateway::serve::{served, served_after};

/// Route `r{i}`: its own hostname, to infra-backend-v2 for the first ten, else v1.
fn numbered(i: usize, generation: i64) -> Value {
    let svc = if i < 10 {
        "infra-backend-v2"
    } else {
        "infra-backend-v1"
    };
    own_host_route(i, generation, svc)
}

fn world(routes: usize) -> World {
    let mut w = World::new();
    w.gateway("all", json!([http("http", "All")]));
    for i in 0..routes {
        w.routes.push(arc(numbered(i, 1)));
    }
    w
}

/// The model `t` makes of `w`, checked against the translation from scratch; how many
/// routes `t` translated again.
fn build(t: &mut Translator, w: &World) -> usize {
    let kept = t.translate(&w.objects(), &w.settings);
    let fresh = translate(&w.objects(), &w.settings);
    assert_eq!(format!("{kept:?}"), format!("{fresh:?}"));
    t.translated
}

#[test]
fn a_change_to_one_route_translates_one_route() {
    let mut w = world(200);
    let mut t = Translator::default();
    assert_eq!(
        build(&mut t, &w),
        200,
        "the first build translates every route"
    );
    assert_eq!(build(&mut t, &w), 0, "nothing changed");
    // One route's spec changes (a new generation): that route only.
    let mut r7 = numbered(7, 2);
    r7["spec"]["hostnames"] = json!(["seven.example"]);
    w.routes[7] = arc(r7);
    assert_eq!(build(&mut t, &w), 1);
    // A status write alone bumps the resourceVersion, not the generation: nothing.
    let mut r8 = numbered(8, 1);
    r8["metadata"]["resourceVersion"] = json!("99");
    w.routes[8] = arc(r8);
    assert_eq!(build(&mut t, &w), 0);
    // A new route: that route.
    w.routes.push(arc(numbered(200, 1)));
    assert_eq!(build(&mut t, &w), 1);
    // A route deleted: nothing to translate, and it is gone from the model.
    w.routes.remove(3);
    assert_eq!(build(&mut t, &w), 0);
    assert!(
        !t.translate(&w.objects(), &w.settings)
            .http_routes
            .iter()
            .any(|r| r.name == "r3")
    );
}

#[test]
fn a_moved_backend_translates_the_routes_naming_it_and_a_gateway_change_its_routes() {
    let mut w = world(100);
    let mut t = Translator::default();
    build(&mut t, &w);
    // infra-backend-v2's EndpointSlice lists another address: the ten routes naming it.
    let i = w
        .slices
        .iter()
        .position(|s| s.metadata.name.as_deref() == Some("infra-backend-v2-1"))
        .unwrap();
    w.slices[i] = arc(json!({
        "metadata": {"name": "infra-backend-v2-1", "namespace": INFRA, "resourceVersion": "7",
                     "labels": {"kubernetes.io/service-name": "infra-backend-v2",
                                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
        "addressType": "IPv4", "ports": [{"port": 3000}], "endpoints": [{"addresses": ["10.1.0.9"]}]
    }));
    assert_eq!(build(&mut t, &w), 10);
    let m = t.translate(&w.objects(), &w.settings);
    let moved = m
        .routes
        .iter()
        .filter(|r| format!("{:?}", r.action).contains("10.1.0.9"));
    assert_eq!(moved.count(), 10);
    // A namespace's labels (what a Selector listener reads): the routes in it.
    w.namespaces[0] =
        arc(json!({"metadata": {"name": INFRA, "labels": {"gateway-conformance": "moved"}}}));
    assert_eq!(build(&mut t, &w), 100);
    // The Gateway's spec changes (a new generation): every route on it.
    w.gateways[0] = arc(json!({
        "metadata": {"name": "all", "namespace": INFRA, "generation": 2, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"gatewayClassName": "leafgate", "listeners": [http("http", "Same")]}
    }));
    assert_eq!(build(&mut t, &w), 100);
    // A tenant added (the settings): every route.
    w.settings.tenants = vec![crate::k8s::ingress::model::TenantBounds::new(
        "infra",
        &[INFRA],
    )];
    assert_eq!(build(&mut t, &w), 100);
}

#[test]
fn translating_10000_routes_costs_what_a_change_concerns() {
    let mut w = world(10_000);
    let mut t = Translator::default();
    let started = Instant::now();
    let mut m = t.translate(&w.objects(), &w.settings);
    let first = started.elapsed();
    let started = Instant::now();
    let s = served(&mut m, &w.gateways);
    let serve = started.elapsed();
    assert_eq!(s.listeners[0].routes.len(), 10_000);
    let mut r = numbered(5_000, 2);
    r["spec"]["hostnames"] = json!(["moved.example"]);
    w.routes[5_000] = arc(r);
    let started = Instant::now();
    let mut next = t.translate(&w.objects(), &w.settings);
    let change = started.elapsed();
    let started = Instant::now();
    let s = served_after(&mut next, &w.gateways, Some(&s));
    let serve_change = started.elapsed();
    assert_eq!(s.listeners[0].routes.len(), 10_000);
    assert_eq!(t.translated, 1);
    assert_eq!(next.http_routes.len(), 10_000);
    // The routes it did not translate again are the same statuses and entries.
    assert!(Arc::ptr_eq(&m.http_routes[0], &next.http_routes[0]));
    let before: std::collections::HashSet<_> = m.routes.iter().map(Arc::as_ptr).collect();
    let kept = next
        .routes
        .iter()
        .filter(|e| before.contains(&Arc::as_ptr(e)));
    assert_eq!(kept.count(), 9_999);
    let started = Instant::now();
    let fresh = translate(&w.objects(), &w.settings);
    let scratch = started.elapsed();
    assert_eq!(fresh.routes.len(), next.routes.len());
    eprintln!(
        "10,000 HTTPRoutes (this build's profile): first translation {first:?}, served {serve:?}, \
         one route changed {change:?} (1 translated) and served {serve_change:?}, from scratch \
         {scratch:?}"
    );
}

#[test]
fn a_change_builds_again_only_the_addresses_it_concerns() {
    let mut w = world(20);
    w.gateway("other", json!([http("http", "All")]));
    w.routes.push(arc(json!({
        "metadata": {"name": "o1", "namespace": INFRA, "generation": 1, "uid": "uid-o1",
                     "creationTimestamp": "2026-01-02T00:00:00Z"},
        "spec": {"parentRefs": [{"name": "other"}], "hostnames": ["o1.example"],
                 "rules": [{"backendRefs": [backend("infra-backend-v1")]}]}
    })));
    let mut t = Translator::default();
    let mut m = t.translate(&w.objects(), &w.settings);
    let first = served(&mut m, &w.gateways);
    assert_eq!(first.listeners.len(), 2, "one address per Gateway");
    // A route on `all` changes: `all`'s address is built again, `other`'s is kept.
    let mut r7 = numbered(7, 2);
    r7["spec"]["hostnames"] = json!(["seven.example"]);
    w.routes[7] = arc(r7);
    let mut m = t.translate(&w.objects(), &w.settings);
    let next = served_after(&mut m, &w.gateways, Some(&first));
    assert!(!Arc::ptr_eq(
        &first.listeners[0].table,
        &next.listeners[0].table
    ));
    assert!(Arc::ptr_eq(
        &first.listeners[1].table,
        &next.listeners[1].table
    ));
    // On `all`'s address, every entry but r7's keeps its candidate and its backend.
    let (before, after) = (&first.listeners[0], &next.listeners[0]);
    let kept = after
        .entries
        .iter()
        .zip(&after.candidates)
        .filter(|(e, c)| {
            before
                .entries
                .iter()
                .zip(&before.candidates)
                .any(|(b, bc)| Arc::ptr_eq(b, e) && Arc::ptr_eq(bc, c))
        })
        .count();
    assert_eq!((after.entries.len(), kept), (20, 19));
    let same_backends = after
        .routes
        .iter()
        .filter(|r| before.routes.iter().any(|b| Arc::ptr_eq(b, r)))
        .count();
    assert_eq!(same_backends, 19);
    // Either way, what is served is what a build from scratch serves.
    let fresh = served(&mut translate(&w.objects(), &w.settings), &w.gateways);
    for (kept, fresh) in next.listeners.iter().zip(&fresh.listeners) {
        assert_eq!(kept.addr, fresh.addr);
        assert_eq!(format!("{:?}", kept.table), format!("{:?}", fresh.table));
        assert_eq!(format!("{:?}", kept.routes), format!("{:?}", fresh.routes));
    }
    assert!(
        next.listeners[0]
            .paths()
            .any(|p| p.host.to_string() == "seven.example")
    );
}
