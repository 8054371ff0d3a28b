//! The conformance test of a backend whose Service port says `appProtocol:
//! kubernetes.io/ws`, ported: a real WebSocket client (tokio-tungstenite) through the
//! Gateway to the echo backend's `/ws`, a text and a binary message each echoed, three
//! sessions in a row (`AwaitConvergence` with `RequiredConsecutiveSuccesses`). Beyond
//! upstream: the connection is hijacked and spliced as any leafgate upgrade, its bytes
//! counted under the route and the tenant owning the namespace.

use std::net::SocketAddr;

use futures_util::{SinkExt, StreamExt};
use leafgate_tests::Config;
use leafgate_tests::config::Tenant;
use leafgate_tests::gateway_api::{INFRA, Suite, fixture, until};
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
    suite
        .apply(&fixture("httproute-backend-protocol-websocket.yaml"))
        .await;
    let addr = suite
        .accepted("same-namespace", INFRA, "backend-protocol-ws")
        .await;
    until("a WebSocket session through the Gateway", || async {
        session(addr).await.is_ok()
    })
    .await;
    for n in 2..=3 {
        session(addr)
            .await
            .unwrap_or_else(|e| panic!("session {n} in a row: {e}"));
    }
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
