//! The Gateway API conformance tests of gateway-api v1.6.1 (`conformance/tests/*.go`),
//! ported: each is named after its upstream `ShortName`, applies the upstream manifests
//! (`tests/fixtures/gateway-api`) to a kubesim root with the real kubectl, and checks what
//! the Go test checks, with the harness's timings (see `leafgate_tests::gateway_api`).
//! Each test owns one suite and one address range (the number passed to `Suite::start`).
//! The tests of header, query-parameter and method matches are in `matching`; those of
//! weights and header modifiers in `filters`; those of redirects, rewrites, timeouts and
//! WebSocket backends in `redirect`, `rewrite`, `timeouts` and `websocket`.

mod core;
mod differential;
mod filters;
mod https;
mod matching;
mod redirect;
mod rewrite;
mod timeouts;
mod websocket;

use leafgate_tests::Config;
use leafgate_tests::gateway_api::{
    CONTROLLER, Expect, INFRA, Suite, WEB, all_latest, condition, expect, fixture, kubectl, latest,
    parents,
};
use serde_json::Value;

/// Every condition of the Gateway and of each of its listeners at its generation.
fn gateway_latest(g: &Value) -> bool {
    all_latest(g, &g["status"]["conditions"])
        && g["status"]["listeners"]
            .as_array()
            .is_some_and(|ls| ls.iter().all(|l| all_latest(g, &l["conditions"])))
}

#[tokio::test]
async fn gateway_class_observed_generation_bump() {
    let suite = Suite::start(101, Config::new()).await;
    let name = "gatewayclass-observed-generation-bump";
    suite
        .apply(&fixture("gatewayclass-observed-generation-bump.yaml"))
        .await;
    let accepted_at_latest = |c: &Value| {
        all_latest(c, &c["status"]["conditions"])
            && condition(&c["status"]["conditions"], "Accepted").is_some()
    };
    let before = suite
        .until(
            "Accepted at the first generation",
            "GatewayClass",
            "",
            name,
            accepted_at_latest,
        )
        .await;
    kubectl(
        suite.dir(),
        &[
            "patch",
            "gatewayclass",
            name,
            "--type=merge",
            "-p",
            r#"{"spec":{"description":"new"}}"#,
        ],
        None,
    )
    .await;
    let after = suite
        .until(
            "Accepted at the new generation",
            "GatewayClass",
            "",
            name,
            |c| {
                c["metadata"]["generation"] != before["metadata"]["generation"]
                    && accepted_at_latest(c)
            },
        )
        .await;
    assert!(latest(
        &after,
        &after["status"]["conditions"],
        "Accepted",
        true
    ));
    // What the class supports, as the suite reads it to choose its tests.
    let features: Vec<&str> = after["status"]["supportedFeatures"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    assert!(
        features.contains(&"Gateway") && features.contains(&"HTTPRoute"),
        "{features:?}"
    );
}

#[tokio::test]
async fn gateway_observed_generation_bump() {
    let suite = Suite::start(102, Config::new()).await;
    let name = "gateway-observed-generation-bump";
    suite
        .apply(&fixture("gateway-observed-generation-bump.yaml"))
        .await;
    suite.gateway_address(name).await;
    let before = suite
        .until(
            "conditions at the first generation",
            "Gateway",
            INFRA,
            name,
            gateway_latest,
        )
        .await;
    kubectl(
        suite.dir(),
        &[
            "patch", "gateway", name, "-n", INFRA, "--type=json", "-p",
            r#"[{"op":"add","path":"/spec/listeners/-","value":{"name":"alternate","hostname":"foo.com","port":80,"protocol":"HTTP","allowedRoutes":{"namespaces":{"from":"All"}}}}]"#,
        ],
        None,
    )
    .await;
    let after = suite
        .until(
            "conditions at the new generation",
            "Gateway",
            INFRA,
            name,
            |g| {
                g["metadata"]["generation"] != before["metadata"]["generation"]
                    && gateway_latest(g)
                    && g["status"]["listeners"]
                        .as_array()
                        .is_some_and(|l| l.len() == 2)
            },
        )
        .await;
    suite.gateway_address(name).await;
    assert_ne!(
        before["metadata"]["generation"],
        after["metadata"]["generation"]
    );
}

#[tokio::test]
async fn http_route_simple_same_namespace() {
    let suite = Suite::start(103, Config::new()).await;
    suite
        .apply(&fixture("httproute-simple-same-namespace.yaml"))
        .await;
    let addr = suite
        .accepted("same-namespace", INFRA, "gateway-conformance-infra-test")
        .await;
    expect(addr, &Expect::ok("", "/", "infra-backend-v1")).await;
    // Served by the pods of the Service: both answer.
    let mut pods = std::collections::BTreeSet::new();
    for _ in 0..40 {
        let a = leafgate_tests::gateway_api::request(addr, &addr.to_string(), "/", &[])
            .await
            .unwrap();
        pods.insert(a.json()["pod"].as_str().unwrap_or("").to_string());
        if pods.len() == 2 {
            break;
        }
    }
    assert_eq!(pods.len(), 2, "both pods of infra-backend-v1: {pods:?}");
    // An ordinary route: the HTTP/1.1 fast path served these requests (unless the suite
    // runs on hyper's path, `LEAFGATE_TEST_HTTP1_FAST_PATH=off`).
    let fast = suite
        .gateway
        .read_in_place(&format!("gateway/{addr}"))
        .await;
    match std::env::var("LEAFGATE_TEST_HTTP1_FAST_PATH").as_deref() {
        Ok("off") => assert_eq!(fast, 0, "requests on the fast path"),
        _ => assert!(fast >= 3, "{fast} requests on the fast path"),
    }
}

#[tokio::test]
async fn http_route_exact_path_matching() {
    let suite = Suite::start(104, Config::new()).await;
    suite
        .apply(&fixture("httproute-exact-path-matching.yaml"))
        .await;
    let addr = suite
        .accepted("same-namespace", INFRA, "exact-matching")
        .await;
    for e in [
        Expect::ok("", "/one", "infra-backend-v1"),
        Expect::ok("", "/two", "infra-backend-v2"),
        Expect::status("", "/", 404),
        Expect::status("", "/one/example", 404),
        Expect::status("", "/two/", 404),
        Expect::status("", "/Two", 404),
    ] {
        expect(addr, &e).await;
    }
}

#[tokio::test]
async fn http_route_cross_namespace() {
    let suite = Suite::start(105, Config::new()).await;
    suite
        .apply(&fixture("httproute-cross-namespace.yaml"))
        .await;
    let addr = suite
        .accepted("backend-namespaces", WEB, "cross-namespace")
        .await;
    expect(addr, &Expect::ok("", "/", "web-backend").namespace(WEB)).await;
}

#[tokio::test]
async fn http_route_hostname_intersection() {
    let suite = Suite::start(106, Config::new()).await;
    suite
        .apply(&fixture("httproute-hostname-intersection.yaml"))
        .await;
    let gateway = "httproute-hostname-intersection";
    let ip = suite.gateway_address(gateway).await;
    for route in [
        "specific-host-matches-listener-specific-host",
        "specific-host-matches-listener-wildcard-host",
        "wildcard-host-matches-listener-specific-host",
        "wildcard-host-matches-listener-wildcard-host",
    ] {
        suite
            .route_parent(INFRA, route, gateway, "Accepted", true, "Accepted")
            .await;
        suite
            .route_parent(INFRA, route, gateway, "ResolvedRefs", true, "ResolvedRefs")
            .await;
    }
    let addr = std::net::SocketAddr::new(ip, 80);
    let (v1, v2, v3) = ("infra-backend-v1", "infra-backend-v2", "infra-backend-v3");
    for e in [
        Expect::ok("very.specific.com", "/s1", v1),
        // The Host header's port is not part of the match.
        Expect::ok("very.specific.com:1234", "/s1", v1),
        Expect::status("non.matching.com", "/s1", 404),
        Expect::status("foo.nonmatchingwildcard.io", "/s1", 404),
        Expect::status("foo.wildcard.io", "/s1", 404),
        Expect::status("very.specific.com", "/non-matching-prefix", 404),
        Expect::ok("foo.wildcard.io", "/s2", v2),
        Expect::ok("bar.wildcard.io", "/s2", v2),
        Expect::ok("foo.bar.wildcard.io", "/s2", v2),
        Expect::status("non.matching.com", "/s2", 404),
        Expect::status("wildcard.io", "/s2", 404),
        Expect::status("very.specific.com", "/s2", 404),
        Expect::status("foo.wildcard.io", "/non-matching-prefix", 404),
        Expect::ok("very.specific.com", "/s3", v3),
        Expect::status("non.matching.com", "/s3", 404),
        Expect::status("foo.specific.com", "/s3", 404),
        Expect::status("foo.wildcard.io", "/s3", 404),
        Expect::status("very.specific.com", "/non-matching-prefix", 404),
        Expect::ok("foo.anotherwildcard.io", "/s4", v1),
        Expect::ok("bar.anotherwildcard.io", "/s4", v1),
        Expect::ok("foo.bar.anotherwildcard.io", "/s4", v1),
        Expect::status("anotherwildcard.io", "/s4", 404),
        Expect::status("foo.wildcard.io", "/s4", 404),
        Expect::status("very.specific.com", "/s4", 404),
        Expect::status("foo.anotherwildcard.io", "/non-matching-prefix", 404),
    ] {
        expect(addr, &e).await;
    }
    // The route whose hostnames meet no listener's: refused, never served, not attached.
    suite
        .route_parent(
            INFRA,
            "no-intersecting-hosts",
            gateway,
            "Accepted",
            false,
            "NoMatchingListenerHostname",
        )
        .await;
    for e in [
        Expect::status("specific.but.wrong.com", "/s5", 404),
        Expect::status("wildcard.io", "/s5", 404),
    ] {
        expect(addr, &e).await;
    }
    let g = suite.object("Gateway", INFRA, gateway).unwrap();
    let attached: Vec<&Value> = g["status"]["listeners"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["attachedRoutes"])
        .collect();
    assert_eq!(attached, [2, 1, 1]);
}

#[tokio::test]
async fn http_route_reference_grant() {
    let suite = Suite::start(107, Config::new()).await;
    suite
        .apply(&fixture("httproute-reference-grant.yaml"))
        .await;
    let route = "reference-grant";
    let addr = suite.accepted("same-namespace", INFRA, route).await;
    suite
        .route_parent(
            INFRA,
            route,
            "same-namespace",
            "ResolvedRefs",
            true,
            "ResolvedRefs",
        )
        .await;
    expect(addr, &Expect::ok("", "/", "web-backend").namespace(WEB)).await;
    // The grant deleted: the reference is refused and its requests get 500.
    kubectl(
        suite.dir(),
        &["delete", "referencegrant", "-n", WEB, "reference-grant"],
        None,
    )
    .await;
    suite
        .route_parent(
            INFRA,
            route,
            "same-namespace",
            "ResolvedRefs",
            false,
            "RefNotPermitted",
        )
        .await;
    expect(addr, &Expect::status("", "/", 500)).await;
}

#[tokio::test]
async fn http_route_invalid_cross_namespace_parent_ref() {
    let suite = Suite::start(108, Config::new()).await;
    suite
        .apply(&fixture(
            "httproute-invalid-cross-namespace-parent-ref.yaml",
        ))
        .await;
    let route = "invalid-cross-namespace-parent-ref";
    let ip = suite.gateway_address("same-namespace").await;
    let r = suite
        .route_parent(
            WEB,
            route,
            "same-namespace",
            "Accepted",
            false,
            "NotAllowedByListeners",
        )
        .await;
    assert!(parents(&r, "same-namespace").all(|p| p["controllerName"] == CONTROLLER));
    let g = suite.object("Gateway", INFRA, "same-namespace").unwrap();
    assert_eq!(g["status"]["listeners"][0]["attachedRoutes"], 0);
    // Never served: the Gateway's port answers 404.
    expect(
        std::net::SocketAddr::new(ip, 80),
        &Expect::status("", "/", 404),
    )
    .await;
}

#[tokio::test]
async fn http_route_invalid_parent_ref_not_matching_section_name() {
    let suite = Suite::start(109, Config::new()).await;
    suite
        .apply(&fixture(
            "httproute-invalid-parentref-not-matching-section-name.yaml",
        ))
        .await;
    suite.gateway_address("same-namespace").await;
    suite
        .route_parent(
            INFRA,
            "httproute-listener-not-matching-section-name",
            "same-namespace",
            "Accepted",
            false,
            "NoMatchingParent",
        )
        .await;
    let g = suite.object("Gateway", INFRA, "same-namespace").unwrap();
    assert_eq!(g["status"]["listeners"][0]["attachedRoutes"], 0);
}

/// A route whose only backendRef does not resolve: accepted, `ResolvedRefs=False` with
/// `reason`, and its requests get 500.
async fn invalid_backend(n: u8, manifest: &str, route: &str, reason: &str) {
    let suite = Suite::start(n, Config::new()).await;
    suite.apply(&fixture(manifest)).await;
    let addr = suite.accepted("same-namespace", INFRA, route).await;
    suite
        .route_parent(
            INFRA,
            route,
            "same-namespace",
            "ResolvedRefs",
            false,
            reason,
        )
        .await;
    expect(addr, &Expect::status("", "/", 500)).await;
}

#[tokio::test]
async fn http_route_invalid_backend_ref_unknown_kind() {
    invalid_backend(
        110,
        "httproute-invalid-backendref-unknown-kind.yaml",
        "invalid-backend-ref-unknown-kind",
        "InvalidKind",
    )
    .await;
}

#[tokio::test]
async fn http_route_invalid_non_existent_backend_ref() {
    invalid_backend(
        111,
        "httproute-invalid-nonexistent-backendref.yaml",
        "invalid-nonexistent-backend-ref",
        "BackendNotFound",
    )
    .await;
}

#[tokio::test]
async fn http_route_invalid_cross_namespace_backend_ref() {
    invalid_backend(
        112,
        "httproute-invalid-cross-namespace-backend-ref.yaml",
        "invalid-cross-namespace-backend-ref",
        "RefNotPermitted",
    )
    .await;
}

/// A route whose parentRef names no listener of its Gateway: `NoMatchingParent`, no parent
/// accepts it, and every listener of the Gateway counts 0 routes.
async fn no_matching_parent(suite: &Suite, route: &str, gateway: &str) {
    let r = suite
        .route_parent(INFRA, route, gateway, "Accepted", false, "NoMatchingParent")
        .await;
    assert!(
        !r["status"]["parents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| latest(&r, &p["conditions"], "Accepted", true)),
        "no accepted parent: {r:#}"
    );
    // The harness's GatewayMustHaveZeroRoutes polls: the Gateway's status may be written
    // after the route's.
    suite
        .until("no route attached", "Gateway", INFRA, gateway, |g| {
            g["status"]["listeners"]
                .as_array()
                .is_some_and(|ls| !ls.is_empty() && ls.iter().all(|l| l["attachedRoutes"] == 0))
        })
        .await;
}

#[tokio::test]
async fn http_route_invalid_parent_ref_not_matching_listener_port() {
    let suite = Suite::start(113, Config::new()).await;
    suite
        .apply(&fixture(
            "httproute-invalid-parentref-not-matching-listener-port.yaml",
        ))
        .await;
    let route = "httproute-listener-not-matching-route-port";
    suite
        .route_parent(
            INFRA,
            route,
            "same-namespace",
            "ResolvedRefs",
            true,
            "ResolvedRefs",
        )
        .await;
    no_matching_parent(&suite, route, "same-namespace").await;
}

#[tokio::test]
async fn http_route_invalid_parent_ref_section_name_not_matching_port() {
    let suite = Suite::start(114, Config::new()).await;
    suite
        .apply(&fixture(
            "httproute-invalid-parentref-section-name-not-matching-port.yaml",
        ))
        .await;
    no_matching_parent(
        &suite,
        "httproute-listener-section-name-not-matching-port",
        "gateway-with-one-not-matching-port-and-section-name-route",
    )
    .await;
}

#[tokio::test]
async fn http_route_observed_generation_bump() {
    let suite = Suite::start(115, Config::new()).await;
    suite
        .apply(&fixture("httproute-observed-generation-bump.yaml"))
        .await;
    let route = "observed-generation-bump";
    let addr = suite.accepted("same-namespace", INFRA, route).await;
    let at_latest = |r: &Value| {
        parents(r, "same-namespace").any(|p| {
            all_latest(r, &p["conditions"])
                && latest(r, &p["conditions"], "Accepted", true)
                && latest(r, &p["conditions"], "ResolvedRefs", true)
        })
    };
    let before = suite
        .until(
            "conditions at the first generation",
            "HTTPRoute",
            INFRA,
            route,
            at_latest,
        )
        .await;
    kubectl(
        suite.dir(),
        &[
            "patch", "httproute", route, "-n", INFRA, "--type=json", "-p",
            r#"[{"op":"replace","path":"/spec/rules/0/backendRefs/0/name","value":"infra-backend-v2"}]"#,
        ],
        None,
    )
    .await;
    suite
        .until(
            "conditions at the new generation",
            "HTTPRoute",
            INFRA,
            route,
            |r| r["metadata"]["generation"] != before["metadata"]["generation"] && at_latest(r),
        )
        .await;
    // Not in the upstream test, which checks statuses only: the new backend serves.
    expect(addr, &Expect::ok("", "/", "infra-backend-v2")).await;
}
