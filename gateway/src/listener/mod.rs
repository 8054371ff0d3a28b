//! Accepts connections on one listener and serves HTTP on them.
//!
//! One task accepts; each connection gets its own task: TLS handshake (when the listener
//! has certificates) with the snapshot current at accept, then hyper-util's auto server,
//! which speaks HTTP/1.1 and HTTP/2 on the same port (h2 by ALPN on TLS, prior-knowledge
//! h2c on plain TCP) and lets a request switch protocols. Each request is dispatched by
//! [`service::handle`].
//!
//! Stopping has two steps. `stop` (shutdown, or the listener was removed by a reload)
//! closes the socket and asks every connection to finish gracefully: in-flight requests
//! complete, keep-alive ends. `kill` (the grace period ran out) drops whatever is left.

pub mod service;
pub mod tls;
pub mod workers;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::gateway::Shared;
use crate::metrics::ListenerLabels;

/// How long a client has to finish its TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client has to send a complete request head on a fresh HTTP/1.1 connection.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Accepts on `socket` until `stop` is cancelled. Returns when the socket is closed; the
/// connections it started are tracked by `shared.tasks`.
pub async fn serve(
    name: Arc<str>,
    socket: TcpListener,
    shared: Arc<Shared>,
    stop: CancellationToken,
) {
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    http.http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_secs(30)));
    let http = Arc::new(http);
    let worker = workers::current_index();
    if let Ok(addr) = socket.local_addr() {
        info!(listener = %name, %addr, worker, "listening");
    }
    loop {
        let (stream, peer) = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = socket.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning on the error.
                    warn!(listener = %name, error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let conn = Connection {
            listener: name.clone(),
            peer,
            shared: shared.clone(),
            http: http.clone(),
            stop: stop.clone(),
        };
        let span = info_span!("conn", listener = %name, peer = %peer);
        shared.tasks.spawn(conn.run(stream).instrument(span));
    }
    info!(listener = %name, worker, "stopped accepting");
}

struct Connection {
    listener: Arc<str>,
    peer: SocketAddr,
    shared: Arc<Shared>,
    http: Arc<auto::Builder<TokioExecutor>>,
    stop: CancellationToken,
}

impl Connection {
    async fn run(self, stream: TcpStream) {
        let labels = ListenerLabels {
            listener: self.listener.to_string(),
        };
        self.shared.metrics.connections.get_or_create(&labels).inc();
        let active = self
            .shared
            .metrics
            .active_connections
            .get_or_create(&labels)
            .clone();
        active.inc();

        let tls = self
            .shared
            .snapshot
            .load()
            .listeners
            .get(&*self.listener)
            .and_then(|l| l.tls.clone());
        match tls {
            None => self.serve_http(TokioIo::new(stream), false).await,
            Some(config) => {
                let acceptor = tokio_rustls::TlsAcceptor::from(config);
                match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => self.serve_http(TokioIo::new(tls), true).await,
                    Ok(Err(e)) => debug!(error = %e, "TLS handshake failed"),
                    Err(_) => debug!("TLS handshake timed out"),
                }
            }
        }
        active.dec();
    }

    async fn serve_http<I>(self, io: TokioIo<I>, tls: bool)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let client = Arc::new(service::Client {
            listener: self.listener.clone(),
            peer: self.peer,
            tls,
            shared: self.shared.clone(),
        });
        let svc = hyper::service::service_fn(move |req| service::handle(req, client.clone()));
        let conn = self.http.serve_connection_with_upgrades(io, svc);
        tokio::pin!(conn);
        let kill = self.shared.kill.clone();
        let result = tokio::select! {
            r = conn.as_mut() => r,
            _ = self.stop.cancelled() => {
                conn.as_mut().graceful_shutdown();
                tokio::select! {
                    r = conn.as_mut() => r,
                    _ = kill.cancelled() => Ok(()),
                }
            }
            _ = kill.cancelled() => Ok(()),
        };
        if let Err(e) = result {
            debug!(error = %e, "connection ended with an error");
        }
    }
}
