//! Clients for the streaming calls, for tests here and in other crates (leafgate's
//! end-to-end tests point them at its node-api listener): each takes an address, a rustls
//! `ClientConfig` (with the client certificate), a path and query, and extra headers.
//!
//! - `spdy`: `spdy_exec` and `spdy_port_forward`, SPDY/3.1 as client-go speaks it.
//! - `ws`: `ws_exec`, `v5.channel.k8s.io` as client-go's WebSocket executor speaks it.
//!
//! The TLS server name is the address's IP. Every call is bounded by `CALL_TIMEOUT`.

pub mod spdy;
pub mod ws;

pub use spdy::{PortForwardOutcome, spdy_exec, spdy_port_forward};
pub use ws::ws_exec;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The longest any one call (connect, upgrade, streams) may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a call could not be made (a refusal from the server is not an error: see
/// `ExecOutcome::refused`).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("connecting to {addr}: {source}")]
    Connect {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("reading the upgrade response: {0}")]
    Head(#[from] crate::http1::HeadError),
    #[error("writing the request: {0}")]
    Write(std::io::Error),
    #[error("SPDY: {0}")]
    Spdy(String),
    #[error("WebSocket: {0}")]
    WebSocket(String),
    #[error("the call did not finish within {CALL_TIMEOUT:?}")]
    Timeout,
}

/// A response that was not `101 Switching Protocols`.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The response head exactly as it came (empty when the WebSocket client parsed it).
    pub raw_head: Vec<u8>,
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What an exec or attach call gave back.
#[derive(Debug, Clone, Default)]
pub struct ExecOutcome {
    /// The non-`101` answer, when the upgrade was refused (then nothing else is set).
    pub refused: Option<Answer>,
    /// The protocol the server chose (`X-Stream-Protocol-Version` or the WebSocket
    /// subprotocol).
    pub protocol: String,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The error stream's `metav1.Status`, when the server wrote one.
    pub status: Option<Value>,
}

impl ExecOutcome {
    /// The exit code the Status carries: 0 for `Success`, the `ExitCode` cause for
    /// `NonZeroExitCode`.
    pub fn exit_code(&self) -> Option<i32> {
        let s = self.status.as_ref()?;
        if s["status"] == "Success" {
            return Some(0);
        }
        s.pointer("/details/causes")?
            .as_array()?
            .iter()
            .find(|c| c["reason"] == "ExitCode")?["message"]
            .as_str()?
            .parse()
            .ok()
    }
}

async fn connect(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
) -> Result<TlsStream<TcpStream>, ClientError> {
    let err = |source| ClientError::Connect { addr, source };
    let tcp = TcpStream::connect(addr).await.map_err(err)?;
    // client-go is Go: its TCP connections have Nagle off.
    let _ = tcp.set_nodelay(true);
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(err)
}

/// Sends an upgrade request and reads the answer: the connection (and the bytes already
/// read past the `101`) with the response headers, or the refusal.
async fn upgrade(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    path_and_query: &str,
    headers: &[(String, String)],
) -> Result<Result<(TlsStream<TcpStream>, BytesMut, Vec<(String, String)>), Answer>, ClientError> {
    let mut conn = connect(addr, tls).await?;
    crate::http1::write_request(
        &mut conn,
        "POST",
        path_and_query,
        &addr.to_string(),
        headers,
    )
    .await
    .map_err(ClientError::Write)?;
    let mut buf = BytesMut::new();
    let head = crate::http1::read_head(&mut conn, &mut buf).await?;
    if head.status == 101 {
        return Ok(Ok((conn, buf, head.headers)));
    }
    let body =
        crate::http1::read_body(&mut conn, buf, &head, 1 << 20, Duration::from_secs(10)).await;
    Ok(Err(Answer {
        raw_head: head.raw.to_vec(),
        status: head.status,
        headers: head.headers,
        body,
    }))
}

/// Whether the query turns stream `kubelet_name` (`input`, ...) or `api_name` (`stdin`,
/// ...) on: `1` for the kubelet's names, a true boolean for the apiserver's.
fn asked(query: &crate::query::Query, kubelet_name: &str, api_name: &str) -> bool {
    query.get(kubelet_name) == Some("1") || query.flag(api_name).unwrap_or(false)
}
