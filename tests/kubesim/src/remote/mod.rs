//! The streaming pod subresources: `exec`, `attach` and `portforward`, over SPDY/3.1 and
//! over WebSocket, as the kubelet serves them behind kube-apiserver.
//!
//! The API router has already authenticated the caller, found the pod and parsed the
//! client-facing query (`stdin`, `stdout`, `stderr`, `tty`, `container`, `command`, `ports`);
//! this module negotiates the stream protocol and runs the call.
//!
//! - `negotiate`: SPDY or WebSocket, which protocol, and the `101`/`400`/`403` answers.
//! - `spdy`: the SPDY/3.1 server (frames, header compression, streams, flow control).
//! - `channel`: the WebSocket channel framing (binary, base64, v5 CLOSE).
//! - `tunnel`: SPDY carried inside WebSocket binary messages (port-forward, kubectl >= 1.31).
//! - `command`: exec and attach (the process, the Status) over SPDY or WebSocket.
//! - `forward`: port-forward to the local address a pod annotation names.

pub mod channel;
pub mod command;
pub mod forward;
pub mod negotiate;
pub mod spdy;
pub mod tunnel;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::Role;

use channel::ChannelProtocol;
use negotiate::Transport;

/// What the caller asked for.
#[derive(Debug, Clone)]
pub enum RemoteKind {
    /// Run `command` (argv, as the repeated `command` query parameter gives it).
    Exec { command: Vec<String> },
    /// Attach to the container's main process.
    Attach,
    /// Forward `ports` (from `ports`; empty when the protocol carries them per stream).
    PortForward { ports: Vec<u16> },
}

/// One streaming call, resolved by the API router.
#[derive(Debug, Clone)]
pub struct RemoteCall {
    pub kind: RemoteKind,
    pub namespace: String,
    pub pod: String,
    /// The container, already defaulted when the pod has exactly one.
    pub container: String,
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
    /// The pod object as stored (annotations, containers' commands).
    pub pod_object: serde_json::Value,
}

/// Answers a streaming call: negotiates SPDY/3.1 or WebSocket from the request's headers,
/// answers `101` and serves the streams on the upgraded connection, or answers the refusal
/// the kubelet would (plain text, as `http.Error` writes it).
pub async fn serve(mut req: Request<Incoming>, mut call: RemoteCall) -> Response<Full<Bytes>> {
    let forward = matches!(call.kind, RemoteKind::PortForward { .. });
    if !forward {
        // The kubelet's own option checks (`remotecommand.NewOptions`), before any upgrade:
        // a TTY merges stderr into stdout, and a call must carry at least one stream.
        if call.tty {
            call.stderr = false;
        }
        if !(call.stdin || call.stdout || call.stderr) {
            return negotiate::refusal(
                hyper::StatusCode::BAD_REQUEST,
                "you must specify at least 1 of stdin, stdout, stderr",
            );
        }
    }
    let (transport, answer) = match negotiate::negotiate(req.headers(), forward) {
        Ok(ok) => ok,
        Err(refusal) => return *refusal,
    };
    if let (Transport::WebSocket(p), RemoteKind::PortForward { ports }) = (transport, &call.kind)
        && p != negotiate::WS_TUNNEL
    {
        // The v4 channels are laid out from the query, so it must name the ports, and two
        // channels per port must fit a one-byte channel number.
        if ports.is_empty() {
            return negotiate::refusal(
                hyper::StatusCode::BAD_REQUEST,
                "query parameter \"port\" is required",
            );
        }
        if ports.len() > forward::websocket::MAX_PORTS {
            return negotiate::refusal(
                hyper::StatusCode::BAD_REQUEST,
                &format!(
                    "at most {} ports can be forwarded at once",
                    forward::websocket::MAX_PORTS
                ),
            );
        }
    }
    let upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let io = match upgrade.await {
            Ok(upgraded) => TokioIo::new(upgraded),
            Err(e) => {
                tracing::debug!(error = %e, "remote: upgrade failed");
                return;
            }
        };
        run(io, transport, call).await;
    });
    answer
}

/// Serves the call on the upgraded connection until it ends.
async fn run<S>(io: S, transport: Transport, call: RemoteCall)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    match transport {
        Transport::Spdy(_) => {
            let session = spdy::Session::serve(io);
            match call.kind {
                RemoteKind::PortForward { .. } => forward::spdy::serve(session, call).await,
                _ => command::spdy::serve(session, call).await,
            }
        }
        Transport::WebSocket(protocol) => {
            let ws = WebSocketStream::from_raw_socket(io, Role::Server, None).await;
            match (&call.kind, ChannelProtocol::from_name(protocol)) {
                (RemoteKind::PortForward { .. }, _) if protocol == negotiate::WS_TUNNEL => {
                    let session = spdy::Session::serve(tunnel::byte_stream(ws));
                    forward::spdy::serve(session, call).await;
                }
                (RemoteKind::PortForward { ports }, Some(proto)) => {
                    let ports = ports.clone();
                    forward::websocket::serve(ws, proto, call.pod_object, ports).await;
                }
                (_, Some(proto)) => command::websocket::serve(ws, proto, call).await,
                (_, None) => tracing::debug!(protocol, "remote: negotiated an unserved protocol"),
            }
        }
    }
}
