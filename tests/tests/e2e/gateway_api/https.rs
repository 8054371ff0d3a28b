//! The TLS tests of the core suite: HTTPS listeners terminating TLS with certificates from
//! `kubernetes.io/tls` Secrets chosen by SNI, and the listener status of certificateRefs
//! that do not resolve. Ranges 182..=189.

use std::net::SocketAddr;

use leafgate_tests::Config;
use leafgate_tests::gateway_api::{
    Expect, GROUP, INFRA, Suite, WEB, condition, expect, expect_tls, fixture, kubectl, send_over,
    trusting,
};
use serde_json::Value;

const HTTPS_GATEWAY: &str = "same-namespace-with-https-listener";

#[tokio::test]
async fn http_route_https_listener() {
    let suite = Suite::start(182, Config::new()).await;
    suite.apply(&fixture("httproute-https-listener.yaml")).await;
    let ip = suite.gateway_address(HTTPS_GATEWAY).await;
    for route in ["httproute-https-test", "httproute-https-test-no-hostname"] {
        suite
            .route_parent(INFRA, route, HTTPS_GATEWAY, "Accepted", true, "Accepted")
            .await;
        suite.resolved(INFRA, route, HTTPS_GATEWAY).await;
    }
    let addr = SocketAddr::new(ip, 443);
    for e in [
        Expect::ok("example.org", "/", "infra-backend-v1"),
        Expect::status("unknown-example.org", "/", 404),
        Expect::ok("second-example.org", "/", "infra-backend-v2"),
    ] {
        expect_tls(addr, suite.tls(), &e).await;
    }
    // The certificate is verified: a client that does not trust the suite's CA is refused.
    let other = leafgate_tests::certs::TestCa::new("another");
    let untrusting = Some(trusting(other.roots()));
    let refused = send_over(addr, untrusting, "GET", "example.org", "/", &[]).await;
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("TLS handshake")),
        "{:?}",
        refused.map(|a| a.status)
    );
}

/// `GatewayStatusMustHaveListeners`: one listener `https`, supporting HTTPRoute, with no
/// route attached and each of `conditions` (type, status, reason or any).
async fn listener_has(
    suite: &Suite,
    gateway: &str,
    conditions: &[(&str, bool, Option<&str>)],
) -> Value {
    listener_with(suite, gateway, ("https", 0), conditions).await
}

/// [`listener_has`] for the one listener `name` with `attached` routes.
async fn listener_with(
    suite: &Suite,
    gateway: &str,
    (name, attached): (&str, i64),
    conditions: &[(&str, bool, Option<&str>)],
) -> Value {
    suite
        .until(
            &format!("listener {name} with {attached} routes, {conditions:?}"),
            "Gateway",
            INFRA,
            gateway,
            |g| {
                let ls = &g["status"]["listeners"];
                ls.as_array().is_some_and(|ls| ls.len() == 1)
                    && ls[0]["name"] == name
                    && ls[0]["supportedKinds"]
                        == serde_json::json!([{"group": GROUP, "kind": "HTTPRoute"}])
                    && ls[0]["attachedRoutes"] == attached
                    && conditions.iter().all(|(type_, status, reason)| {
                        condition(&ls[0]["conditions"], type_).is_some_and(|c| {
                            c["status"] == if *status { "True" } else { "False" }
                                && reason.is_none_or(|r| c["reason"] == r)
                        })
                    })
            },
        )
        .await
}

async fn listener_unresolved(suite: &Suite, gateway: &str, reason: &str) -> Value {
    listener_has(suite, gateway, &[("ResolvedRefs", false, Some(reason))]).await
}

/// The Gateway's HTTPS listener at port 443 answers over TLS with a certificate of the
/// suite's CA (404: no route is attached), or refuses (`serving` false).
async fn https_serves(suite: &Suite, g: &Value, serving: bool) {
    let ip = g["status"]["addresses"][0]["value"].as_str();
    let Some(ip) = ip else {
        assert!(!serving, "no address: {g:#}");
        return;
    };
    let addr = SocketAddr::new(ip.parse().unwrap(), 443);
    leafgate_tests::gateway_api::until(&format!("{addr} serving={serving}"), || async {
        let sent = send_over(addr, Some(suite.tls()), "GET", "example.org", "/", &[]).await;
        match serving {
            true => sent.is_ok_and(|a| a.status == 404),
            false => sent.is_err(),
        }
    })
    .await;
}

#[tokio::test]
async fn gateway_invalid_tls_configuration() {
    let suite = Suite::start(183, Config::new()).await;
    suite
        .apply(&fixture("gateway-invalid-tls-configuration.yaml"))
        .await;
    for gateway in [
        "gateway-certificate-nonexistent-secret",
        "gateway-certificate-unsupported-group",
        "gateway-certificate-unsupported-kind",
        "gateway-certificate-malformed-secret",
    ] {
        let g = listener_unresolved(&suite, gateway, "InvalidCertificateRef").await;
        let listener = &g["status"]["listeners"][0];
        // Not programmed, and so the Gateway is not either: it serves nothing.
        let programmed = condition(&listener["conditions"], "Programmed").unwrap();
        assert_eq!(programmed["status"], "False", "{gateway}: {listener:#}");
        let gw = condition(&g["status"]["conditions"], "Programmed").unwrap();
        assert_eq!(gw["status"], "False", "{gateway}: {g:#}");
        https_serves(&suite, &g, false).await;
    }
}

/// A Secret of another namespace that no grant (`fixture`'s) covers for `gateway`:
/// `RefNotPermitted`, and nothing served.
async fn not_permitted(n: u8, file: &str, gateway: &str) {
    let suite = Suite::start(n, Config::new()).await;
    suite.apply(&fixture(file)).await;
    let g = listener_unresolved(&suite, gateway, "RefNotPermitted").await;
    https_serves(&suite, &g, false).await;
}

#[tokio::test]
async fn gateway_secret_missing_reference_grant() {
    let name = "gateway-secret-missing-reference-grant";
    not_permitted(184, &format!("{name}.yaml"), name).await;
}

#[tokio::test]
async fn gateway_secret_invalid_reference_grant() {
    let name = "gateway-secret-invalid-reference-grant";
    not_permitted(185, &format!("{name}.yaml"), name).await;
}

/// A granted certificate: the listener is programmed with `ResolvedRefs=True` and serves.
async fn granted(suite: &Suite, gateway: &str) -> Value {
    let g = listener_has(
        suite,
        gateway,
        &[
            ("Programmed", true, Some("Programmed")),
            ("ResolvedRefs", true, None),
        ],
    )
    .await;
    https_serves(suite, &g, true).await;
    g
}

#[tokio::test]
async fn gateway_secret_reference_grant_all_in_namespace() {
    let suite = Suite::start(186, Config::new()).await;
    suite
        .apply(&fixture(
            "gateway-secret-reference-grant-all-in-namespace.yaml",
        ))
        .await;
    granted(&suite, "gateway-secret-reference-grant-all-in-namespace").await;
}

#[tokio::test]
async fn gateway_secret_reference_grant_specific() {
    let suite = Suite::start(187, Config::new()).await;
    suite
        .apply(&fixture("gateway-secret-reference-grant-specific.yaml"))
        .await;
    let gateway = "gateway-secret-reference-grant-specific";
    granted(&suite, gateway).await;
    // The grant deleted while running takes effect: refused, and no longer served.
    kubectl(
        suite.dir(),
        &[
            "delete",
            "referencegrant",
            "-n",
            WEB,
            "reference-grant-specific",
        ],
        None,
    )
    .await;
    let g = listener_unresolved(&suite, gateway, "RefNotPermitted").await;
    https_serves(&suite, &g, false).await;
}

#[tokio::test]
async fn gateway_with_attached_routes() {
    let suite = Suite::start(188, Config::new()).await;
    suite
        .apply(&fixture("gateway-with-attached-routes.yaml"))
        .await;
    let valid = [("Accepted", true, None), ("ResolvedRefs", true, None)];
    listener_with(
        &suite,
        "gateway-with-one-attached-route",
        ("http", 1),
        &valid,
    )
    .await;
    let two = "gateway-with-two-attached-routes";
    listener_with(&suite, two, ("http", 2), &valid).await;
    suite
        .route_parent(
            INFRA,
            "http-route-not-accepted",
            two,
            "Accepted",
            false,
            "NoMatchingListenerHostname",
        )
        .await;
    // (c): a listener whose certificateRef does not resolve still counts its route.
    let unresolved = "unresolved-gateway-with-one-attached-unresolved-route";
    let not = [("Programmed", false, None), ("ResolvedRefs", false, None)];
    listener_with(&suite, unresolved, ("tls", 1), &not).await;
    suite
        .until(
            "http-route-4 ResolvedRefs=False",
            "HTTPRoute",
            INFRA,
            "http-route-4",
            |r| {
                leafgate_tests::gateway_api::parents(r, unresolved).any(|p| {
                    condition(&p["conditions"], "ResolvedRefs")
                        .is_some_and(|c| c["status"] == "False")
                })
            },
        )
        .await;
}

/// `GatewayStatusMustHaveListeners` with `GatewayMustHaveLatestConditions`: exactly the
/// listeners `want` (name, attached routes), each supporting HTTPRoute with `Accepted`
/// and `ResolvedRefs` True, every condition at the Gateway's latest generation.
fn listeners_ready(g: &Value, want: &[(&str, i64)]) -> bool {
    let Some(ls) = g["status"]["listeners"].as_array() else {
        return false;
    };
    super::gateway_latest(g)
        && ls.len() == want.len()
        && want.iter().all(|(name, attached)| {
            ls.iter().any(|l| {
                l["name"] == *name
                    && l["supportedKinds"]
                        == serde_json::json!([{"group": GROUP, "kind": "HTTPRoute"}])
                    && l["attachedRoutes"] == *attached
                    && ["Accepted", "ResolvedRefs"].iter().all(|type_| {
                        condition(&l["conditions"], type_).is_some_and(|c| c["status"] == "True")
                    })
            })
        })
}

#[tokio::test]
async fn gateway_modify_listeners() {
    let suite = Suite::start(189, Config::new()).await;
    suite.apply(&fixture("gateway-modify-listeners.yaml")).await;

    // Adding a listener: it becomes available for routing.
    let add = "gateway-add-listener";
    let before = suite
        .until("one https listener", "Gateway", INFRA, add, |g| {
            listeners_ready(g, &[("https", 1)])
        })
        .await;
    kubectl(
        suite.dir(),
        &[
            "patch", "gateway", add, "-n", INFRA, "--type=json", "-p",
            r#"[{"op":"add","path":"/spec/listeners/-","value":{"name":"http","port":80,"protocol":"HTTP","hostname":"data.test.com","allowedRoutes":{"namespaces":{"from":"All"}}}}]"#,
        ],
        None,
    )
    .await;
    let after = suite
        .until("https and http listeners", "Gateway", INFRA, add, |g| {
            listeners_ready(g, &[("https", 1), ("http", 1)])
        })
        .await;
    assert_ne!(
        before["metadata"]["generation"],
        after["metadata"]["generation"]
    );
    // Beyond upstream's status checks: the new listener routes.
    let ip = suite.gateway_address(add).await;
    expect(
        SocketAddr::new(ip, 80),
        &Expect::ok("data.test.com", "/", "infra-backend-v1"),
    )
    .await;

    // Removing one: the other keeps its route, and the removed one stops serving.
    let remove = "gateway-remove-listener";
    let before = suite
        .until("https and http listeners", "Gateway", INFRA, remove, |g| {
            listeners_ready(g, &[("https", 1), ("http", 1)])
        })
        .await;
    assert_eq!(before["spec"]["listeners"][0]["name"], "https");
    kubectl(
        suite.dir(),
        &[
            "patch",
            "gateway",
            remove,
            "-n",
            INFRA,
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/spec/listeners/0"}]"#,
        ],
        None,
    )
    .await;
    let after = suite
        .until("the http listener alone", "Gateway", INFRA, remove, |g| {
            listeners_ready(g, &[("http", 1)])
        })
        .await;
    assert_ne!(
        before["metadata"]["generation"],
        after["metadata"]["generation"]
    );
    https_serves(&suite, &after, false).await;
}
