//! An upstream: a route's pool of backends, the connections to them, and which one is next.
//!
//! Built once per snapshot from [`UpstreamConfig`]. It owns the HTTP/1.1 pool of plain
//! backends (`http1`), the pooled hyper-util client for HTTP/1.1 over TLS, the HTTP/2
//! connections (`h2`: prior-knowledge h2c, or h2 chosen by ALPN), TLS by rustls with the
//! route's CA, client certificate and SNI name, round-robin selection, and passive failure
//! marking: a backend that refused a connection is skipped for [`EJECT_FOR`], unless every
//! backend is marked, in which case leafgate still tries (a pool never answers "no backend"
//! on its own).
//! It must not know about requests' meaning; `proxy` decides what to send.

use std::sync::atomic::{AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use http::{Request, Response, Uri};
use http_body_util::Either;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tracing::{debug, warn};

use crate::config::{Backend, Timeouts, UpstreamConfig, UpstreamProtocol, UpstreamTls};
use crate::tls::{self, Verify};
use crate::workers;

use super::body::Body;
use super::dialled::{Dialled, Timed};
use super::error::{ProxyError, SendError};
use super::exchange::Exchange;
use super::fast::pool::RawPool;
use super::h2::{Dialed, H2Conns, H2Dialer};
use super::http1::{Http1Pool, PooledBody};

/// How long a backend that refused a connection is skipped.
pub const EJECT_FOR: Duration = Duration::from_secs(10);

pub type Connector = tls::HttpsConnector;

/// A route's backends and the client that reaches them.
pub struct Upstream {
    backends: Vec<BackendState>,
    next: AtomicUsize,
    /// HTTP/1.1 to plain backends: our own per-thread pool (`http1`).
    plain: Http1Pool,
    /// Raw sockets to the same backends, for the listener's fast path; `Some` when every
    /// backend is plain and the route does not insist on HTTP/2.
    raw: Option<RawPool>,
    /// Pooled HTTP/1.1 clients for TLS backends, one per serving thread, so a
    /// connection's upstream exchanges stay on its thread (see `workers`).
    clients: Vec<Client<Timed, Body>>,
    /// HTTP/2 connections, for `h2`/`h2c` routes and TLS backends that chose h2 by ALPN.
    h2: H2Conns,
    dialer: H2Dialer,
    /// Dials one fresh HTTP/1.1 connection (TLS when the backend is https) for upgrades.
    pub connector: Connector,
    pub protocol: UpstreamProtocol,
    pub timeouts: Timeouts,
    epoch: Instant,
    /// What it was built from, so a reload with the same settings can keep it (and its
    /// pooled connections and ejection marks).
    config: UpstreamConfig,
}

impl BackendState {
    /// The backend's place in its upstream, which picks its pool slot.
    pub fn index(&self) -> usize {
        self.index
    }
}

pub struct BackendState {
    pub backend: Backend,
    /// The backend as text, for logs, errors and metric labels.
    pub label: String,
    /// Milliseconds since `Upstream::epoch` until which this backend is skipped.
    ejected_until: AtomicU64,
    index: usize,
    /// What a TLS backend of an `auto` route chose by ALPN: `UNKNOWN`, `HTTP1` or `H2`.
    speaks: AtomicU8,
}

const UNKNOWN: u8 = 0;
const HTTP1: u8 = 1;
const H2: u8 = 2;

/// Why an upstream could not be built (a TLS setting rustls refuses).
#[derive(Debug, thiserror::Error)]
#[error("upstream TLS: {0}")]
pub struct UpstreamBuildError(#[from] rustls::Error);

impl Upstream {
    pub fn new(config: &UpstreamConfig, timeouts: Timeouts) -> Result<Self, UpstreamBuildError> {
        let connector = connector(config, timeouts)?;
        let clients = (0..workers::count())
            .map(|_| {
                Client::builder(TokioExecutor::new())
                    .pool_timer(TokioTimer::new())
                    .timer(TokioTimer::new())
                    .pool_idle_timeout(timeouts.idle)
                    .build(Timed(connector.clone()))
            })
            .collect();
        let alpn: &[&[u8]] = match config.protocol {
            UpstreamProtocol::H2 => &[b"h2"],
            _ => &[b"h2", b"http/1.1"],
        };
        let dialer = H2Dialer {
            tls: match config.backends.iter().any(|b| b.tls) {
                true => Some(Arc::new(tls_config(config, alpn)?)),
                false => None,
            },
            server_name: config.tls.as_ref().and_then(|t| t.server_name.clone()),
            connect: timeouts.connect,
            http1_allowed: config.protocol == UpstreamProtocol::Auto,
            keep_alive: H2_KEEP_ALIVE,
        };
        Ok(Upstream {
            backends: config
                .backends
                .iter()
                .enumerate()
                .map(|(index, b)| BackendState {
                    label: b.to_string(),
                    backend: b.clone(),
                    ejected_until: AtomicU64::new(0),
                    index,
                    speaks: AtomicU8::new(UNKNOWN),
                })
                .collect(),
            next: AtomicUsize::new(0),
            plain: Http1Pool::new(config.backends.len(), timeouts.connect, timeouts.idle),
            raw: (config.protocol != UpstreamProtocol::H2
                && config.backends.iter().all(|b| !b.tls))
            .then(|| RawPool::new(config.backends.len(), timeouts.connect, timeouts.idle)),
            clients,
            h2: H2Conns::new(config.backends.len()),
            dialer,
            connector,
            protocol: config.protocol,
            timeouts,
            epoch: Instant::now(),
            config: config.clone(),
        })
    }

    /// Whether this upstream was built from the same backends, protocol, TLS settings and
    /// timeouts: then a reload keeps it instead of building a new one.
    pub fn built_from(&self, config: &UpstreamConfig, timeouts: Timeouts) -> bool {
        let (a, b) = (&self.config, config);
        self.timeouts == timeouts
            && a.backends == b.backends
            && a.protocol == b.protocol
            && match (&a.tls, &b.tls) {
                (None, None) => true,
                (Some(x), Some(y)) => same_tls(x, y),
                _ => false,
            }
    }

    /// The pooled HTTP/1.1 client of the serving thread we are on.
    fn client(&self) -> &Client<Timed, Body> {
        &self.clients[workers::current_index() % self.clients.len()]
    }

    /// Sends `req` (origin-form URI, headers final) to `backend` over HTTP/1.1 or HTTP/2, as
    /// the route's `protocol` and, for `auto` TLS backends, their ALPN answer decide.
    /// HTTP/2 requests carry `host` (the client's) as `:authority`, not the backend's address.
    pub async fn send(
        &self,
        backend: &BackendState,
        mut req: Request<Body>,
        host: Option<&str>,
    ) -> Result<Response<Either<PooledBody, Incoming>>, SendError> {
        if !backend.backend.tls && self.protocol != UpstreamProtocol::H2 {
            let res = self
                .plain
                .send(backend.index, &backend.backend, req)
                .await?;
            return Ok(res.map(Either::Left));
        }
        let path = req.uri().path_and_query().cloned();
        let h2 = match (self.protocol, backend.backend.tls) {
            (UpstreamProtocol::Http1, _) | (UpstreamProtocol::Auto, false) => false,
            (UpstreamProtocol::H2, _) => true,
            (UpstreamProtocol::Auto, true) => backend.speaks.load(Ordering::Relaxed) != HTTP1,
        };
        if h2 {
            match self
                .h2
                .get(backend.index, &backend.backend, &self.dialer)
                .await?
            {
                (Dialed::H2(mut sender), dialled) => {
                    backend.speaks.store(H2, Ordering::Relaxed);
                    *req.uri_mut() = h2_uri(&backend.backend, host, path.as_ref());
                    req.headers_mut().remove(http::header::HOST);
                    sender.ready().await?;
                    let mut res = sender.send_request(req).await?;
                    if let Some(took) = dialled {
                        res.extensions_mut().insert(Dialled::new(took));
                    }
                    return Ok(res.map(Either::Right));
                }
                (Dialed::Http1, _) => backend.speaks.store(HTTP1, Ordering::Relaxed),
            }
        }
        *req.uri_mut() = Self::uri(&backend.backend, path.as_ref());
        Ok(self.client().request(req).await?.map(Either::Right))
    }

    /// The raw HTTP/1.1 pool of the fast path, when every backend can be reached by it.
    pub fn raw(&self) -> Option<&RawPool> {
        self.raw.as_ref()
    }

    /// The backend at `index` (`BackendState::index`).
    pub fn backend(&self, index: usize) -> Option<&BackendState> {
        self.backends.get(index)
    }

    pub fn len(&self) -> usize {
        self.backends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.backends.is_empty()
    }

    /// The next backend in round-robin order that is not marked failed; when all are
    /// marked, the next one regardless.
    pub fn pick(&self) -> &BackendState {
        let n = self.backends.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        // The clock is read only when a backend was ever ejected.
        let mut now = None;
        (0..n)
            .map(|i| &self.backends[(start + i) % n])
            .find(|b| match b.ejected_until.load(Ordering::Relaxed) {
                0 => true,
                until => until <= *now.get_or_insert_with(|| self.now_ms()),
            })
            .unwrap_or(&self.backends[start % n])
    }

    /// Settles a failed attempt on `backend`: counts `err`, marks a backend that refused
    /// the connection failed, and says whether to try the next backend (only after a
    /// refusal, and only when `again` allows: a request whose body is sent cannot be).
    pub fn failed(
        &self,
        backend: &BackendState,
        err: &ProxyError,
        exchange: &Exchange<'_>,
        again: bool,
    ) -> bool {
        exchange.count_error(err);
        let refused = matches!(
            err,
            ProxyError::Connect { .. } | ProxyError::ConnectTimeout { .. }
        );
        if refused {
            self.eject(backend);
        }
        if refused && again {
            debug!(backend = %backend.label, error = %err, "backend refused; trying the next one");
            return true;
        }
        warn!(
            listener = %exchange.conn.listener,
            peer = %exchange.conn.peer,
            route = exchange.route,
            backend = %backend.label,
            error = %err,
            "upstream failed"
        );
        false
    }

    /// Marks `backend` failed: `pick` skips it for [`EJECT_FOR`].
    pub fn eject(&self, backend: &BackendState) {
        let until = self.now_ms() + EJECT_FOR.as_millis() as u64;
        backend.ejected_until.store(until, Ordering::Relaxed);
    }

    /// The URI of `path_and_query` on `backend`.
    pub fn uri(backend: &Backend, path_and_query: Option<&http::uri::PathAndQuery>) -> Uri {
        let mut parts = http::uri::Parts::default();
        parts.scheme = Some(if backend.tls {
            http::uri::Scheme::HTTPS
        } else {
            http::uri::Scheme::HTTP
        });
        parts.authority = Some(backend.authority.clone());
        parts.path_and_query = Some(
            path_and_query
                .cloned()
                .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/")),
        );
        Uri::from_parts(parts).expect("scheme, authority and path make a valid URI")
    }

    fn now_ms(&self) -> u64 {
        // Never 0, so a fresh backend (ejected_until = 0) is always eligible.
        self.epoch.elapsed().as_millis() as u64 + 1
    }
}

/// How often an idle HTTP/2 connection to a backend is pinged, so a dead one is noticed.
const H2_KEEP_ALIVE: Duration = Duration::from_secs(20);

/// The URI of an HTTP/2 request: the backend's scheme, the client's host as authority
/// (the backend's own when the client named none or an invalid one).
fn h2_uri(backend: &Backend, host: Option<&str>, path: Option<&http::uri::PathAndQuery>) -> Uri {
    let authority = host
        .and_then(|h| h.parse::<http::uri::Authority>().ok())
        .unwrap_or_else(|| backend.authority.clone());
    let mut parts = http::uri::Parts::default();
    parts.scheme = Some(if backend.tls {
        http::uri::Scheme::HTTPS
    } else {
        http::uri::Scheme::HTTP
    });
    parts.authority = Some(authority);
    parts.path_and_query = Some(
        path.cloned()
            .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/")),
    );
    Uri::from_parts(parts).expect("scheme, authority and path make a valid URI")
}

fn same_tls(a: &UpstreamTls, b: &UpstreamTls) -> bool {
    let same_identity = match (&a.identity, &b.identity) {
        (None, None) => true,
        (Some(x), Some(y)) => x.chain == y.chain && x.key.secret_der() == y.key.secret_der(),
        _ => false,
    };
    (Arc::ptr_eq(&a.roots, &b.roots) || a.roots.roots == b.roots.roots)
        && same_identity
        && a.server_name == b.server_name
        && a.insecure_skip_verify == b.insecure_skip_verify
}

/// The route's rustls client settings (roots, client certificate) offering `alpn`.
fn tls_config(
    config: &UpstreamConfig,
    alpn: &[&[u8]],
) -> Result<rustls::ClientConfig, UpstreamBuildError> {
    // Without `tls` settings every upstream checks the public roots and shows no identity:
    // that config is built once and copied (a copy shares its verifier and session cache),
    // so 10,000 Ingress backends do not build 10,000 verifiers.
    if config.tls.is_none() {
        static PUBLIC: OnceLock<rustls::ClientConfig> = OnceLock::new();
        let public = match PUBLIC.get() {
            Some(c) => c,
            None => {
                let built = tls::client_config(Verify::Roots(tls::web_roots()), None)?;
                PUBLIC.get_or_init(|| built)
            }
        };
        let mut tls = public.clone();
        tls.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        return Ok(tls);
    }
    let verify = match &config.tls {
        Some(t) if t.insecure_skip_verify => Verify::Nothing,
        Some(t) => Verify::Roots(t.roots.clone()),
        None => Verify::Roots(tls::web_roots()),
    };
    let identity = config.tls.as_ref().and_then(|t| t.identity.as_ref());
    let mut tls = tls::client_config(verify, identity.map(|id| (&id.chain[..], &id.key)))?;
    tls.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(tls)
}

/// An HTTPS-or-HTTP connector for HTTP/1.1 with the route's TLS settings: the pooled client
/// of ordinary requests, and upgrades (a protocol switch exists only in HTTP/1.1).
fn connector(config: &UpstreamConfig, timeouts: Timeouts) -> Result<Connector, UpstreamBuildError> {
    let server_name = config.tls.as_ref().and_then(|t| t.server_name.clone());
    Ok(tls::https_connector(
        tls_config(config, &[])?,
        server_name,
        timeouts.connect,
    ))
}
