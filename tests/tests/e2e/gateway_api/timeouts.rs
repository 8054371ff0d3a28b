//! The conformance tests of a rule's `timeouts`, ported: the echo backend's `?delay=1s`
//! answers after a second, past a timeout of 500ms (leafgate answers 504) and within one
//! of `0s` (none).

use leafgate_tests::Config;
use leafgate_tests::gateway_api::{Expect, INFRA, Suite, expect, fixture};

/// The suite on range `n` with `manifest`'s route `route`; a request to `bounded` is
/// answered, one to it that the backend answers a second later gets 504, and one to
/// `unbounded` as late is answered.
async fn timeouts(n: u8, manifest: &str, route: &str, bounded: &str, unbounded: &str) {
    let suite = Suite::start(n, Config::new()).await;
    suite.apply(&fixture(manifest)).await;
    let addr = suite.accepted("same-namespace", INFRA, route).await;
    suite.resolved(INFRA, route, "same-namespace").await;
    let late = format!("{bounded}?delay=1s");
    let late_unbounded = format!("{unbounded}?delay=1s");
    for e in [
        Expect::ok("", bounded, "infra-backend-v1"),
        Expect::status("", &late, 504),
        Expect::ok("", &late_unbounded, "infra-backend-v1"),
    ] {
        expect(addr, &e).await;
    }
}

#[tokio::test]
async fn http_route_timeout_request() {
    timeouts(
        139,
        "httproute-timeout-request.yaml",
        "request-timeout",
        "/request-timeout",
        "/disable-request-timeout",
    )
    .await;
}

#[tokio::test]
async fn http_route_timeout_backend_request() {
    timeouts(
        140,
        "httproute-timeout-backend-request.yaml",
        "backend-request-timeout",
        "/backend-timeout",
        "/disable-backend-timeout",
    )
    .await;
}
