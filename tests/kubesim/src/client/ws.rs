//! The WebSocket exec client, as client-go's `NewWebSocketExecutor` speaks it: GET with the
//! subprotocol `v5.channel.k8s.io`, stdin on channel 0 then the v5 CLOSE `[255, 0]`, and
//! stdout (1), stderr (2) and the Status (3) read until the server closes.

use std::net::SocketAddr;
use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{self, Message};

use super::{Answer, CALL_TIMEOUT, ClientError, ExecOutcome, asked};
use crate::remote::channel::ChannelProtocol;

/// The subprotocol offered unless the caller names its own.
pub const PROTOCOL: &str = "v5.channel.k8s.io";

/// Runs an exec (or attach) call over WebSocket; see `spdy::spdy_exec` for the query and
/// `stdin` conventions. `headers` are added to the handshake request.
pub async fn ws_exec(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    path_and_query: &str,
    headers: &[(&str, &str)],
    stdin: &[u8],
) -> Result<ExecOutcome, ClientError> {
    let query = crate::query::Query::parse(path_and_query.split_once('?').map(|(_, q)| q));
    let ws_err = |e: tungstenite::Error| ClientError::WebSocket(e.to_string());
    let call = async {
        let conn = super::connect(addr, tls).await?;
        let mut req = format!("wss://{addr}{path_and_query}")
            .into_client_request()
            .map_err(ws_err)?;
        for (k, v) in headers {
            let name = tungstenite::http::HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| ClientError::WebSocket(e.to_string()))?;
            let value =
                HeaderValue::from_str(v).map_err(|e| ClientError::WebSocket(e.to_string()))?;
            req.headers_mut().append(name, value);
        }
        if !req.headers().contains_key("sec-websocket-protocol") {
            req.headers_mut()
                .insert("sec-websocket-protocol", HeaderValue::from_static(PROTOCOL));
        }
        let (mut ws, resp) = match tokio_tungstenite::client_async(req, conn).await {
            Ok(ok) => ok,
            Err(tungstenite::Error::Http(resp)) => {
                let (parts, body) = resp.into_parts();
                return Ok(ExecOutcome {
                    refused: Some(Answer {
                        raw_head: Vec::new(),
                        status: parts.status.as_u16(),
                        headers: parts
                            .headers
                            .iter()
                            .map(|(k, v)| {
                                (
                                    k.to_string(),
                                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                                )
                            })
                            .collect(),
                        body: body.unwrap_or_default(),
                    }),
                    ..ExecOutcome::default()
                });
            }
            Err(e) => return Err(ws_err(e)),
        };
        let protocol = resp
            .headers()
            .get("sec-websocket-protocol")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let channels = ChannelProtocol::from_name(&protocol).ok_or_else(|| {
            ClientError::WebSocket(format!(
                "the server chose an unknown subprotocol {protocol:?}"
            ))
        })?;
        if asked(&query, "input", "stdin") {
            if !stdin.is_empty() {
                ws.send(channels.data(0, stdin)).await.map_err(ws_err)?;
            }
            if channels.v5 {
                ws.send(channels.close(0)).await.map_err(ws_err)?;
            }
        }
        let mut out = ExecOutcome {
            protocol,
            ..ExecOutcome::default()
        };
        let mut status = Vec::new();
        while let Some(msg) = ws.next().await {
            let msg = match msg {
                Ok(m) => m,
                Err(_) => break,
            };
            if let Message::Close(_) = msg {
                break;
            }
            if let crate::remote::channel::Incoming::Data(ch, data) = channels.parse(&msg) {
                match ch {
                    1 => out.stdout.extend_from_slice(&data),
                    2 => out.stderr.extend_from_slice(&data),
                    3 => status.extend_from_slice(&data),
                    _ => {}
                }
            }
        }
        out.status = serde_json::from_slice(&status).ok();
        Ok(out)
    };
    tokio::time::timeout(CALL_TIMEOUT, call)
        .await
        .map_err(|_| ClientError::Timeout)?
}
