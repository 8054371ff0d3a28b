//! The conformance tests of backends whose Service port names its protocol, ported.
//! `appProtocol: kubernetes.io/ws`: a real WebSocket client (tokio-tungstenite) through
//! the Gateway to the echo backend's `/ws`, a text and a binary message each echoed, three
//! sessions in a row (`AwaitConvergence` with `RequiredConsecutiveSuccesses`). Beyond
//! upstream: the connection is hijacked and spliced as any leafgate upgrade, its bytes
//! counted under the route and the tenant owning the namespace. `appProtocol:
//! kubernetes.io/h2c`: a prior-knowledge HTTP/2 request to the Gateway reaches the
//! backend's h2c port, which answers anything but HTTP/2 with a 400, as echo-basic's.

use std::net::SocketAddr;

use futures_util::{SinkExt, StreamExt};
use leafgate_tests::Config;
use leafgate_tests::config::Tenant;
use leafgate_tests::gateway_api::{INFRA, Suite, fixture, until};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

/// One session: dial `ws://{addr}/ws`, send a text and a binary message, each echoed.
async fn session(addr: SocketAddr) -> Result<(), String> {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/ws"))
        .await
        .map_err(|e| format!("dial: {e}"))?;
    for sent in [
        Message::text("Websocket Support!"),
        Message::binary(vec![1u8, 2, 3, 4, 5, 6, 7]),
    ] {
        ws.send(sent.clone())
            .await
            .map_err(|e| format!("send: {e}"))?;
        match ws.next().await {
            Some(Ok(got)) if got == sent => {}
            other => return Err(format!("sent {sent:?}, got {other:?}")),
        }
    }
    ws.close(None).await.map_err(|e| format!("close: {e}"))
}

#[tokio::test]
async fn http_route_backend_protocol_websocket() {
    let tenant = Tenant::new("infra").namespaces([INFRA]);
    let suite = Suite::start(141, Config::new().tenant(tenant)).await;
    let ws = (
        "httproute-backend-protocol-websocket.yaml",
        "backend-protocol-ws",
    );
    three_in_a_row(&suite, ws, "a WebSocket session", session).await;
    let metrics = leafgate_tests::client::get(suite.gateway.admin(), "admin", "/metrics")
        .await
        .text();
    let series = "leafgate_spliced_bytes_total{route=\"httproute/gateway-conformance-infra/backend-protocol-ws/0\",tenant=\"infra\",direction=\"upstream_to_client\"}";
    let spliced: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix(series))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{metrics}"));
    // Three sessions' echoes, each a text and a binary frame (their payloads alone are
    // 25 bytes).
    assert!(spliced >= 75.0, "{spliced} bytes spliced");
}

/// A prior-knowledge h2c `GET /` to `addr` (`roundtripper.H2CPriorKnowledgeProtocol`):
/// whether a pod of `infra-backend-v1` in the infra namespace answered 200, and over
/// HTTP/2 (the echo's `proto`).
async fn h2c_served(addr: SocketAddr) -> Result<(), String> {
    let a = leafgate_tests::client::get_h2c(addr, &addr.to_string(), "/").await;
    let body: Value = serde_json::from_slice(&a.body).unwrap_or(Value::Null);
    let (ns, pod, _) = leafgate_tests::echo::read(&body);
    match (a.status.as_u16(), ns, body["proto"].as_str()) {
        (200, INFRA, Some("HTTP/2.0")) if pod.starts_with("infra-backend-v1") => Ok(()),
        _ => Err(format!("{} {}", a.status, String::from_utf8_lossy(&a.body))),
    }
}

#[tokio::test]
async fn http_route_backend_protocol_h2c() {
    let suite = Suite::start(143, Config::new()).await;
    let h2c = (
        "httproute-backend-protocol-h2c.yaml",
        "backend-protocol-h2c",
    );
    three_in_a_row(&suite, h2c, "an h2c request", h2c_served).await;
}

/// Applies `manifest` and, once its `route` is Accepted on `same-namespace`, until one
/// `exchange` through the Gateway (`what`) succeeds, then two more in a row (the
/// harness's `RequiredConsecutiveSuccesses`).
async fn three_in_a_row<F, Fut>(
    suite: &Suite,
    (manifest, route): (&str, &str),
    what: &str,
    exchange: F,
) where
    F: Fn(SocketAddr) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    suite.apply(&fixture(manifest)).await;
    let addr = suite.accepted("same-namespace", INFRA, route).await;
    until(&format!("{what} through the Gateway"), || async {
        exchange(addr).await.is_ok()
    })
    .await;
    for n in 2..=3 {
        exchange(addr)
            .await
            .unwrap_or_else(|e| panic!("{what}, {n} in a row: {e}"));
    }
}
