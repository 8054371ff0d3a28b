//! Connection hijack: forwards a request that asks to switch protocols, reads the backend's
//! answer, and on `101 Switching Protocols` takes both raw connections over and splices
//! them, as kube-apiserver's `UpgradeAwareHandler` does for `kubectl exec`.
//!
//! The backend gets the request over a fresh HTTP/1.1 connection (upgrades exist only
//! there) with `Connection`, `Upgrade`, `Sec-WebSocket-*` and `X-Stream-Protocol-Version`
//! untouched, repeated lines kept as repeated lines. Any answer other than 101 is relayed as
//! an ordinary response. On 101 the client gets the backend's head as it came, and bytes
//! either side sent right behind its head (already in hyper's read buffer) travel with the
//! upgraded stream, so nothing is lost.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tower_service::Service;
use tracing::{Instrument, debug, info_span, warn};

use super::body::IdleTimeout;
use crate::metrics::{Metrics, SpliceLabels};

use super::upstream::Upstream;
use super::{Body, Exchange, ProxyError, headers, root_cause};

/// Forwards an upgrade request. On 101 the splice runs on its own task in `job.tasks` (so
/// shutdown and reload can wait for it) and the backend's 101 head is returned.
pub async fn forward(
    mut req: Request<Incoming>,
    upstream: &Upstream,
    exchange: &Exchange<'_>,
    job: SpliceJob,
) -> Result<Response<Body>, ProxyError> {
    let client_upgrade = hyper::upgrade::on(&mut req);
    let (mut parts, body) = req.into_parts();
    headers::strip_hop_by_hop(&mut parts.headers, true);
    headers::add_forwarded(&mut parts.headers, &exchange.client, parts.version);
    if let Some(host) = exchange.client.host {
        if let Ok(v) = http::HeaderValue::from_str(host) {
            parts.headers.insert(http::header::HOST, v);
        }
    }
    parts.version = http::Version::HTTP_11;
    let timeouts = upstream.timeouts;

    let backend = upstream.pick();
    let label = backend.label.clone();
    parts.uri = Upstream::uri(&backend.backend, parts.uri.path_and_query());

    let mut connector = upstream.connector.clone();
    let io = match tokio::time::timeout(timeouts.connect, connector.call(parts.uri.clone())).await {
        Ok(Ok(io)) => io,
        Ok(Err(e)) => {
            upstream.eject(backend);
            let err = ProxyError::Connect {
                backend: label,
                reason: root_cause(e.as_ref()),
            };
            exchange.count_error(&err);
            return Err(err);
        }
        Err(_) => {
            upstream.eject(backend);
            let err = ProxyError::ConnectTimeout {
                backend: label,
                after: timeouts.connect,
            };
            exchange.count_error(&err);
            return Err(err);
        }
    };
    let (mut sender, conn) = http1::Builder::new()
        .handshake::<_, Body>(io)
        .await
        .map_err(|e| ProxyError::Upgrade {
            backend: label.clone(),
            reason: root_cause(&e),
        })?;
    // Drives the backend connection until it is upgraded (then hands its I/O over) or closed.
    tokio::spawn(
        async move {
            if let Err(e) = conn.with_upgrades().await {
                debug!(error = %e, "upgrade connection to the backend ended with an error");
            }
        }
        .in_current_span(),
    );

    // Outgoing URIs on HTTP/1.1 are origin-form; the authority went into Host above.
    let mut out = Request::from_parts(parts, IdleTimeout::new(body, timeouts.idle).boxed_unsync());
    *out.uri_mut() = out
        .uri()
        .path_and_query()
        .map(|pq| {
            pq.as_str()
                .parse()
                .expect("a path and query is a valid URI")
        })
        .unwrap_or_else(|| http::Uri::from_static("/"));

    let mut res =
        match tokio::time::timeout(timeouts.response_header, sender.send_request(out)).await {
            Ok(Ok(res)) => res,
            Ok(Err(e)) => {
                let err = ProxyError::Reset {
                    backend: label,
                    reason: root_cause(&e),
                };
                exchange.count_error(&err);
                return Err(err);
            }
            Err(_) => {
                let err = ProxyError::ResponseTimeout {
                    backend: label,
                    after: timeouts.response_header,
                };
                exchange.count_error(&err);
                return Err(err);
            }
        };

    if res.status() != StatusCode::SWITCHING_PROTOCOLS {
        debug!(status = %res.status(), "backend declined the upgrade; relaying its answer");
        let (mut parts, body) = res.into_parts();
        headers::strip_hop_by_hop(&mut parts.headers, false);
        headers::add_via(&mut parts.headers, parts.version);
        return Ok(Response::from_parts(
            parts,
            IdleTimeout::new(body, timeouts.idle).boxed_unsync(),
        ));
    }

    let upstream_upgrade = hyper::upgrade::on(&mut res);
    let span = info_span!("splice", route = %job.route, backend = %label);
    let idle = timeouts.upgraded_idle;
    let tasks = job.tasks.clone();
    tasks.spawn(
        async move {
            let (client, backend) = match tokio::join!(client_upgrade, upstream_upgrade) {
                (Ok(c), Ok(b)) => (TokioIo::new(c), TokioIo::new(b)),
                (Err(e), _) => {
                    warn!(side = "client", error = %e, "the client side of an upgrade failed");
                    return;
                }
                (_, Err(e)) => {
                    warn!(side = "upstream", error = %e, "the upstream side of an upgrade failed");
                    return;
                }
            };
            job.run(client, backend, idle).await;
        }
        .instrument(span),
    );

    // The client gets the backend's 101 head as it came: hyper writes what it is handed.
    let (parts, _) = res.into_parts();
    Ok(Response::from_parts(
        parts,
        super::full(bytes::Bytes::new()),
    ))
}

/// What a hijacked connection needs once both sides said 101: the task tracker that
/// shutdown and reload wait on, the signal that ends it when the grace period is over, and
/// its meters.
pub struct SpliceJob {
    pub tasks: TaskTracker,
    pub kill: CancellationToken,
    pub metrics: Arc<Metrics>,
    pub route: String,
    pub tenant: String,
}

impl SpliceJob {
    async fn run<C, U>(self, mut client: C, mut backend: U, idle: Duration)
    where
        C: AsyncRead + AsyncWrite + Unpin,
        U: AsyncRead + AsyncWrite + Unpin,
    {
        let labels = SpliceLabels {
            route: self.route.clone(),
            tenant: self.tenant.clone(),
        };
        self.metrics.upgraded_total.get_or_create(&labels).inc();
        let active = self.metrics.upgraded_active.get_or_create(&labels).clone();
        active.inc();
        let _ = idle;
        tokio::select! {
            r = tokio::io::copy_bidirectional(&mut client, &mut backend) => match r {
                Ok((up, down)) => debug!(up, down, "splice finished"),
                Err(e) => warn!(error = %e, "splice ended with an error"),
            },
            _ = self.kill.cancelled() => debug!("splice closed by shutdown"),
        }
        active.dec();
    }
}
