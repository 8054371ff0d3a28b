//! The rest of the GATEWAY-HTTP core tests of gateway-api v1.6.1 that need no TLS: the
//! Gateway status tests (`GatewayInvalidParametersRef`, `GatewayListenerUnsupportedProtocol`,
//! `GatewayInvalidRouteKind`) and the HTTPRoute ones on path order, listener hostnames,
//! several Gateways, Service types, rules without backends and invalid grants. Ranges
//! 170..=179.

use leafgate_tests::Config;
use leafgate_tests::echo::EchoPod;
use leafgate_tests::gateway_api::{
    APP, Expect, GROUP, INFRA, Suite, WEB, condition, expect, fixture, kubectl, latest, request,
    until,
};
use serde_json::{Value, json};
use std::net::Ipv6Addr;

/// A listener as `GatewayStatusMustHaveListeners` expects it: its name, the kinds that
/// must be in `supportedKinds` (none: the list must be empty), conditions by type, status
/// and reason, and `attachedRoutes`.
struct Listener<'a> {
    name: &'a str,
    kinds: &'a [&'a str],
    conditions: &'a [(&'a str, bool, &'a str)],
    attached: u64,
}

/// The harness's `gatewayListenersMatch`: as many listeners as expected, each found by
/// name with its kinds, conditions and count.
fn listeners_match(g: &Value, expected: &[Listener]) -> bool {
    let Some(actual) = g["status"]["listeners"].as_array() else {
        return false;
    };
    actual.len() == expected.len()
        && expected.iter().all(|e| {
            let Some(a) = actual.iter().find(|a| a["name"] == e.name) else {
                return false;
            };
            let kinds = a["supportedKinds"].as_array().cloned().unwrap_or_default();
            let kinds_ok = if e.kinds.is_empty() {
                kinds.is_empty()
            } else {
                e.kinds.iter().all(|k| {
                    kinds
                        .iter()
                        .any(|a| a["kind"] == *k && a["group"].as_str().unwrap_or(GROUP) == GROUP)
                })
            };
            kinds_ok
                && a["attachedRoutes"] == e.attached
                && e.conditions.iter().all(|(type_, status, reason)| {
                    condition(&a["conditions"], type_).is_some_and(|c| {
                        c["status"] == if *status { "True" } else { "False" }
                            && c["reason"] == *reason
                    })
                })
        })
}

/// `GatewayStatusMustHaveListeners` (the Gateway's conditions at its generation, then the
/// listeners), and, when given, `GatewayMustHaveCondition` for `Accepted`.
async fn gateway_listeners(
    suite: &Suite,
    name: &str,
    accepted: Option<(bool, &str)>,
    expected: &[Listener<'_>],
) -> Value {
    suite
        .until(
            &format!("the listeners of {name}"),
            "Gateway",
            INFRA,
            name,
            |g| {
                leafgate_tests::gateway_api::all_latest(g, &g["status"]["conditions"])
                    && accepted.is_none_or(|(status, reason)| {
                        latest(g, &g["status"]["conditions"], "Accepted", status)
                            && condition(&g["status"]["conditions"], "Accepted")
                                .is_some_and(|c| c["reason"] == reason)
                    })
                    && listeners_match(g, expected)
            },
        )
        .await
}

#[tokio::test]
async fn gateway_invalid_parameters_ref() {
    let suite = Suite::start(170, Config::new()).await;
    suite
        .apply(&fixture("gateway-invalid-parameters-ref.yaml"))
        .await;
    let g = gateway_listeners(
        &suite,
        "gateway-invalid-parameters-ref",
        Some((false, "InvalidParameters")),
        &[Listener {
            name: "http",
            kinds: &["HTTPRoute"],
            conditions: &[],
            attached: 0,
        }],
    )
    .await;
    // Refused: not programmed, nothing bound for it.
    assert!(
        !latest(&g, &g["status"]["conditions"], "Programmed", true),
        "{g:#}"
    );
}

#[tokio::test]
async fn gateway_listener_unsupported_protocol() {
    let suite = Suite::start(171, Config::new()).await;
    suite
        .apply(&fixture(
            "gateway-invalid-listeners-unsupported-protocol.yaml",
        ))
        .await;
    let invalid = Listener {
        name: "invalid",
        kinds: &[],
        conditions: &[("Accepted", false, "UnsupportedProtocol")],
        attached: 0,
    };
    gateway_listeners(
        &suite,
        "gateway-only-unsupported-protocols",
        Some((false, "ListenersNotValid")),
        std::slice::from_ref(&invalid),
    )
    .await;
    gateway_listeners(
        &suite,
        "gateway-supported-and-unsupported-protocols",
        Some((true, "ListenersNotValid")),
        &[
            Listener {
                name: "http",
                kinds: &["HTTPRoute"],
                conditions: &[("Accepted", true, "Accepted")],
                attached: 0,
            },
            invalid,
        ],
    )
    .await;
}

#[tokio::test]
async fn gateway_invalid_route_kind() {
    let suite = Suite::start(172, Config::new()).await;
    suite
        .apply(&fixture("gateway-invalid-route-kind.yaml"))
        .await;
    for (name, kinds) in [
        ("gateway-only-invalid-route-kind", &[][..]),
        (
            "gateway-supported-and-invalid-route-kind",
            &["HTTPRoute"][..],
        ),
    ] {
        gateway_listeners(
            &suite,
            name,
            None,
            &[Listener {
                name: "http",
                kinds,
                conditions: &[("ResolvedRefs", false, "InvalidRouteKinds")],
                attached: 0,
            }],
        )
        .await;
    }
}

#[tokio::test]
async fn http_route_path_match_order() {
    let suite = Suite::start(173, Config::new()).await;
    suite
        .apply(&fixture("httproute-path-match-order.yaml"))
        .await;
    let route = "path-matching-order";
    let addr = suite.accepted("same-namespace", INFRA, route).await;
    suite.resolved(INFRA, route, "same-namespace").await;
    let (v1, v2, v3) = ("infra-backend-v1", "infra-backend-v2", "infra-backend-v3");
    for e in [
        Expect::ok("", "/match/exact/one", v3),
        Expect::ok("", "/match/exact", v2),
        Expect::ok("", "/match", v1),
        Expect::ok("", "/match/prefix/one/any", v2),
        Expect::ok("", "/match/prefix/any", v1),
        Expect::ok("", "/match/any", v3),
    ] {
        expect(addr, &e).await;
    }
}

#[tokio::test]
async fn http_route_listener_hostname_matching() {
    let suite = Suite::start(174, Config::new()).await;
    suite
        .apply(&fixture("httproute-listener-hostname-matching.yaml"))
        .await;
    let gateway = "httproute-listener-hostname-matching";
    let ip = suite.gateway_address(gateway).await;
    for route in ["backend-v1", "backend-v2", "backend-v3"] {
        suite
            .route_parent(INFRA, route, gateway, "Accepted", true, "Accepted")
            .await;
        suite.resolved(INFRA, route, gateway).await;
    }
    // Every listener is programmed, with the routes that name it.
    gateway_listeners(
        &suite,
        gateway,
        Some((true, "Accepted")),
        &[
            ("listener-1", 1),
            ("listener-2", 1),
            ("listener-3", 1),
            ("listener-4", 1),
        ]
        .map(|(name, attached)| Listener {
            name,
            kinds: &["HTTPRoute"],
            conditions: &[
                ("Accepted", true, "Accepted"),
                ("Programmed", true, "Programmed"),
                ("ResolvedRefs", true, "ResolvedRefs"),
            ],
            attached,
        }),
    )
    .await;
    let addr = std::net::SocketAddr::new(ip, 80);
    let (v1, v2, v3) = ("infra-backend-v1", "infra-backend-v2", "infra-backend-v3");
    for e in [
        Expect::ok("bar.com", "/", v1),
        Expect::ok("foo.bar.com", "/", v2),
        Expect::ok("baz.bar.com", "/", v3),
        Expect::ok("boo.bar.com", "/", v3),
        Expect::ok("multiple.prefixes.bar.com", "/", v3),
        Expect::ok("multiple.prefixes.foo.com", "/", v3),
        Expect::status("foo.com", "/", 404),
        Expect::status("no.matching.host", "/", 404),
    ] {
        expect(addr, &e).await;
    }
}

#[tokio::test]
async fn http_route_multiple_gateways() {
    let suite = Suite::start(175, Config::new()).await;
    suite
        .apply(&fixture("httproute-multiple-gateways.yaml"))
        .await;
    let shared = "multiple-gateways-shared-route";
    let mut addrs = Vec::new();
    for (gateway, dedicated, backend) in [
        (
            "same-namespace",
            "same-namespace-dedicated-route",
            "infra-backend-v2",
        ),
        (
            "all-namespaces",
            "all-namespaces-dedicated-route",
            "infra-backend-v3",
        ),
    ] {
        let addr = suite.accepted(gateway, INFRA, shared).await;
        suite
            .route_parent(INFRA, dedicated, gateway, "Accepted", true, "Accepted")
            .await;
        expect(addr, &Expect::ok("", "/shared", "infra-backend-v1")).await;
        expect(addr, &Expect::ok("", "/", backend)).await;
        addrs.push(addr);
    }
    // Each Gateway on its own address, as the harness sends to each one's.
    assert_ne!(addrs[0].ip(), addrs[1].ip());
}

/// The Services of `httproute-service-types.yaml` get what a cluster would give them: the
/// headless one with a selector its EndpointSlice as the EndpointSlice controller writes
/// it, and the selector-less ones' slices the pods' addresses, patched in as upstream's
/// `setupEndpointSlices` does (each address family's slice the pods' addresses of that
/// family). The first pod is dual-stack: IPv6 loopback is `::1` alone, so its IPv6 address
/// is `::1` (an echo server of the same pod on `[::1]:3000`; no other test binds it), and
/// the `-ip6` slices list it. Beyond upstream: with the IPv4 slice of
/// `manual-endpointslices` emptied, its requests are still served, by the IPv6 endpoint.
#[tokio::test]
async fn http_route_service_types() {
    let suite = Suite::start_with(
        176,
        Config::new(),
        // The manual slices are not the EndpointSlice controller's.
        // The pods' IPv6 address (`::1`) besides their range.
        json!({"allow_unmanaged_endpointslices": true,
               "allow_backends": ["127.176.0.0/16", "::1/128"]}),
    )
    .await;
    suite.apply(&fixture("httproute-service-types.yaml")).await;
    let route = "service-types";
    let addr = suite.accepted("same-namespace", INFRA, route).await;
    suite.resolved(INFRA, route, "same-namespace").await;
    let pods: Vec<_> = suite
        .pods
        .iter()
        .filter(|p| p.namespace == INFRA && p.name.starts_with("infra-backend-v1-"))
        .collect();
    assert!(!pods.is_empty(), "infra-backend-v1 has pods");
    let v6 = EchoPod::start(INFRA, &pods[0].name, Ipv6Addr::LOCALHOST.into()).await;
    let addresses: Vec<&EchoPod> = pods.iter().copied().chain([&v6]).collect();
    let endpoints = |v4: bool| -> Vec<Value> {
        addresses
            .iter()
            .filter(|p| p.addr.ip().is_ipv4() == v4)
            .map(|p| {
                json!({
                    "addresses": [p.addr.ip().to_string()],
                    "conditions": {"ready": true, "serving": true, "terminating": false},
                    "targetRef": {"kind": "Pod", "name": p.name, "namespace": p.namespace},
                })
            })
            .collect()
    };
    suite
        .apply(
            &json!({
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "headless-x7k2p", "namespace": INFRA,
                    "labels": {"kubernetes.io/service-name": "headless",
                        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
                "addressType": "IPv4",
                "ports": [{"name": "first-port", "port": 3000, "protocol": "TCP"}],
                "endpoints": endpoints(true),
            })
            .to_string(),
        )
        .await;
    for prefix in ["manual-endpointslices", "headless-manual-endpointslices"] {
        for (suffix, v4) in [("ip4", true), ("ip6", false)] {
            let eps = endpoints(v4);
            if eps.is_empty() {
                continue;
            }
            kubectl(
                suite.dir(),
                &[
                    "patch",
                    "endpointslice",
                    &format!("{prefix}-{suffix}"),
                    "-n",
                    INFRA,
                    "--type=merge",
                    "-p",
                    &json!({ "endpoints": eps }).to_string(),
                ],
                None,
            )
            .await;
        }
    }
    for path in [
        "/manual-endpointslices",
        "/headless-manual-endpointslices",
        "/headless",
    ] {
        expect(addr, &Expect::ok("", path, "infra-backend-v1")).await;
    }
    kubectl(
        suite.dir(),
        &[
            "patch",
            "endpointslice",
            "manual-endpointslices-ip4",
            "-n",
            INFRA,
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/endpoints"}]"#,
        ],
        None,
    )
    .await;
    // Until three requests in a row are each answered by the IPv6 endpoint (the change
    // of the slice takes effect, and nothing else is left to answer).
    until("the IPv6 endpoint alone serving", || async {
        for _ in 0..3 {
            let before = v6.served();
            let answered = request(addr, &addr.to_string(), "/manual-endpointslices", &[])
                .await
                .is_ok_and(|a| a.status == 200 && a.json()["pod"] == v6.name.as_str());
            if !answered || v6.served() != before + 1 {
                return false;
            }
        }
        true
    })
    .await;
}

#[tokio::test]
async fn http_route_no_backend_refs() {
    let suite = Suite::start(177, Config::new()).await;
    suite
        .apply(&fixture("httproute-omitted-backendrefs.yaml"))
        .await;
    let route = "omitted-backendrefs";
    let addr = suite.accepted("same-namespace", INFRA, route).await;
    // A rule without backends is no unresolved reference.
    suite.resolved(INFRA, route, "same-namespace").await;
    for e in [
        Expect::ok("", "/forward", "infra-backend-v1"),
        Expect::status("", "/omitted-no-forward", 500),
        Expect::status("", "/empty-no-forward", 500),
    ] {
        expect(addr, &e).await;
    }
}

#[tokio::test]
async fn http_route_invalid_reference_grant() {
    let suite = Suite::start(178, Config::new()).await;
    suite
        .apply(&fixture("httproute-invalid-reference-grant.yaml"))
        .await;
    let route = "reference-grant";
    let addr = suite.accepted("same-namespace", INFRA, route).await;
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
    // None of the seven grants covers the reference: web-backend is never reached.
    expect(addr, &Expect::status("", "/", 500).namespace(WEB)).await;
}

#[tokio::test]
async fn http_route_partially_invalid_via_invalid_reference_grant() {
    let suite = Suite::start(179, Config::new()).await;
    suite
        .apply(&fixture(
            "httproute-partially-invalid-via-invalid-reference-grant.yaml",
        ))
        .await;
    let route = "invalid-reference-grant";
    let addr = suite.accepted("same-namespace", INFRA, route).await;
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
    expect(addr, &Expect::status("", "/v2", 500)).await;
    expect(addr, &Expect::ok("", "/", "app-backend-v1").namespace(APP)).await;
}
