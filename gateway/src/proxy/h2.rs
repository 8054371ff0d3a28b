//! HTTP/2 to backends: one multiplexed connection per backend and serving thread, dialled
//! here rather than by hyper-util's pooled client.
//!
//! The pooled client writes the URI it dials into `:authority`, so an HTTP/2 backend would
//! read `10.0.0.5:8080` where an HTTP/1.1 one reads the client's `Host`. Dialling here lets
//! each request name the client's host as `:authority` while the connection goes to the
//! backend, as RFC 9113 §8.3.1 asks of an intermediary. It also sees the ALPN answer, so a
//! TLS backend left to `protocol = "auto"` is asked once and then remembered.

use std::sync::Arc;
use std::time::Duration;

use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

use crate::config::Backend;
use crate::workers;

use super::body::Body;
use super::error::DialError;

/// What dialling found: an HTTP/2 connection, or a TLS backend that chose HTTP/1.1.
pub enum Dialed {
    H2(SendRequest<Body>),
    Http1,
}

/// How to reach the backends over HTTP/2.
pub struct H2Dialer {
    /// With the ALPN list the route's protocol allows; `None` for plain backends.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The name to verify instead of the backend's host.
    pub server_name: Option<ServerName<'static>>,
    pub connect: Duration,
    /// Whether a TLS backend choosing HTTP/1.1 is an answer (`auto`) or an error (`h2`).
    pub http1_allowed: bool,
    pub keep_alive: Duration,
}

trait Io: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Io for T {}

impl H2Dialer {
    async fn dial(&self, backend: &Backend) -> Result<Dialed, DialError> {
        let tcp = tokio::time::timeout(
            self.connect,
            TcpStream::connect((
                backend.dial_host(),
                backend.authority.port_u16().unwrap_or(80),
            )),
        )
        .await
        .map_err(|_| DialError::Timeout(self.connect))??;
        tcp.set_nodelay(true)?;
        let io: Box<dyn Io> = match (&self.tls, backend.tls) {
            (Some(tls), true) => {
                let name = match &self.server_name {
                    Some(n) => n.clone(),
                    None => ServerName::try_from(backend.dial_host().to_string())
                        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?,
                };
                let stream = tokio::time::timeout(
                    self.connect,
                    tokio_rustls::TlsConnector::from(tls.clone()).connect(name, tcp),
                )
                .await
                .map_err(|_| DialError::Timeout(self.connect))?
                .map_err(no_common_protocol)?;
                let alpn = stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
                if alpn.as_deref() != Some(b"h2") {
                    if self.http1_allowed {
                        return Ok(Dialed::Http1);
                    }
                    let offered = alpn
                        .map(|p| String::from_utf8_lossy(&p).into_owned())
                        .unwrap_or_else(|| "nothing".to_string());
                    return Err(DialError::NoH2(offered));
                }
                Box::new(stream)
            }
            _ => Box::new(tcp),
        };
        let (sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .keep_alive_interval(self.keep_alive)
            .keep_alive_while_idle(true)
            .handshake(TokioIo::new(io))
            .await?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "HTTP/2 upstream connection ended");
            }
        });
        Ok(Dialed::H2(sender))
    }
}

/// A backend that shares no ALPN protocol with us ends the handshake with an alert
/// (RFC 7301 §3.2); say that in the words of the route's setting.
fn no_common_protocol(err: std::io::Error) -> DialError {
    let alert = rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol);
    match err
        .get_ref()
        .and_then(|e| e.downcast_ref::<rustls::Error>())
    {
        Some(e) if *e == alert => DialError::NoH2("no protocol leafgate offered".to_string()),
        _ => DialError::Io(err),
    }
}

/// The live HTTP/2 connection to each backend, per serving thread.
pub struct H2Conns {
    /// `[thread][backend]`. The lock is held while dialling, so a burst of requests to a
    /// cold backend opens one connection, not one each.
    slots: Vec<Vec<Mutex<Option<SendRequest<Body>>>>>,
}

impl H2Conns {
    pub fn new(backends: usize) -> Self {
        Self {
            slots: (0..workers::count())
                .map(|_| (0..backends).map(|_| Mutex::new(None)).collect())
                .collect(),
        }
    }

    /// A sender on the backend's connection, dialling one when there is none or it closed;
    /// with how long the dial took when this call made the connection (the request that
    /// waited for it says so in its access log line; those sharing it after say nothing).
    pub async fn get(
        &self,
        index: usize,
        backend: &Backend,
        dialer: &H2Dialer,
    ) -> Result<(Dialed, Option<Duration>), DialError> {
        let thread = &self.slots[workers::current_index() % self.slots.len()];
        let mut slot = thread[index].lock().await;
        if let Some(sender) = slot.as_ref().filter(|s| !s.is_closed()) {
            return Ok((Dialed::H2(sender.clone()), None));
        }
        *slot = None;
        let dialling = std::time::Instant::now();
        let dialed = dialer.dial(backend).await?;
        let took = dialling.elapsed();
        if let Dialed::H2(sender) = &dialed {
            *slot = Some(sender.clone());
        }
        Ok((dialed, Some(took)))
    }
}
