//! An upstream: a route's pool of backends, the connections to them, and which one is next.
//!
//! Built once per snapshot from [`UpstreamConfig`]. It owns the pooled hyper-util client
//! (HTTP/1.1 or prior-knowledge h2c, TLS by rustls with the route's CA, client certificate
//! and SNI name), round-robin selection, and passive failure marking: a backend that
//! refused a connection is skipped for [`EJECT_FOR`], unless every backend is marked, in
//! which case leafgate still tries (a pool never answers "no backend" on its own).
//! It must not know about requests' meaning; `proxy` decides what to send.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use http::Uri;
use hyper_rustls::{FixedServerNameResolver, HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use crate::config::{Backend, Timeouts, UpstreamConfig, UpstreamProtocol, UpstreamTls};
use crate::workers;

use super::Body;

/// How long a backend that refused a connection is skipped.
pub const EJECT_FOR: Duration = Duration::from_secs(10);

pub type Connector = HttpsConnector<HttpConnector>;

/// A route's backends and the client that reaches them.
pub struct Upstream {
    backends: Vec<BackendState>,
    next: AtomicUsize,
    /// Pooled clients for ordinary requests, one per serving thread, so a connection's
    /// upstream exchanges stay on its thread (see `workers`).
    clients: Vec<Client<Connector, Body>>,
    /// Dials one fresh HTTP/1.1 connection (TLS when the backend is https) for upgrades.
    pub connector: Connector,
    pub protocol: UpstreamProtocol,
    pub timeouts: Timeouts,
    epoch: Instant,
    /// What it was built from, so a reload with the same settings can keep it (and its
    /// pooled connections and ejection marks).
    config: UpstreamConfig,
}

pub struct BackendState {
    pub backend: Backend,
    /// The backend as text, for logs, errors and metric labels.
    pub label: String,
    /// Milliseconds since `Upstream::epoch` until which this backend is skipped.
    ejected_until: AtomicU64,
}

/// Why an upstream could not be built (a TLS setting rustls refuses).
#[derive(Debug, thiserror::Error)]
#[error("upstream TLS: {0}")]
pub struct UpstreamBuildError(#[from] rustls::Error);

impl Upstream {
    pub fn new(config: &UpstreamConfig, timeouts: Timeouts) -> Result<Self, UpstreamBuildError> {
        let connector = connector(config, timeouts, false)?;
        let clients = (0..workers::count())
            .map(|_| {
                Client::builder(TokioExecutor::new())
                    .pool_timer(TokioTimer::new())
                    .timer(TokioTimer::new())
                    .pool_idle_timeout(timeouts.idle)
                    .http2_only(config.protocol == UpstreamProtocol::H2c)
                    .build(connector.clone())
            })
            .collect();
        Ok(Upstream {
            backends: config
                .backends
                .iter()
                .map(|b| BackendState {
                    label: b.to_string(),
                    backend: b.clone(),
                    ejected_until: AtomicU64::new(0),
                })
                .collect(),
            next: AtomicUsize::new(0),
            clients,
            connector: self::connector(config, timeouts, true)?,
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

    /// The pooled client of the serving thread we are on.
    pub fn client(&self) -> &Client<Connector, Body> {
        &self.clients[workers::current_index() % self.clients.len()]
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
        let now = self.now_ms();
        (0..n)
            .map(|i| &self.backends[(start + i) % n])
            .find(|b| b.ejected_until.load(Ordering::Relaxed) <= now)
            .unwrap_or(&self.backends[start % n])
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

fn same_tls(a: &UpstreamTls, b: &UpstreamTls) -> bool {
    let same_identity = match (&a.identity, &b.identity) {
        (None, None) => true,
        (Some(x), Some(y)) => x.chain == y.chain && x.key.secret_der() == y.key.secret_der(),
        _ => false,
    };
    (Arc::ptr_eq(&a.roots, &b.roots) || a.roots.roots == b.roots.roots)
        && same_identity
        && a.server_name == b.server_name
}

/// The public web roots, built once: a config with thousands of routes must not copy them
/// thousands of times.
fn web_roots() -> Arc<rustls::RootCertStore> {
    static ROOTS: OnceLock<Arc<rustls::RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            Arc::new(rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            })
        })
        .clone()
}

/// An HTTPS-or-HTTP connector with the route's TLS settings. `upgrade` connectors offer only
/// HTTP/1.1 by ALPN: a protocol switch exists only there.
fn connector(
    config: &UpstreamConfig,
    timeouts: Timeouts,
    upgrade: bool,
) -> Result<Connector, UpstreamBuildError> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(timeouts.connect));

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?;
    let (roots, identity, server_name) = match &config.tls {
        Some(t) => (t.roots.clone(), t.identity.clone(), t.server_name.clone()),
        None => (web_roots(), None, None),
    };
    let builder = builder.with_root_certificates(roots);
    let tls = match identity {
        Some(id) => builder.with_client_auth_cert(id.chain.clone(), id.key.clone_key())?,
        None => builder.with_no_client_auth(),
    };

    let https = HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    let https = match server_name {
        Some(name) => https.with_server_name_resolver(FixedServerNameResolver::new(name)),
        None => https,
    };
    let h2 = !upgrade && config.protocol == UpstreamProtocol::H2c;
    Ok(if h2 {
        https.enable_http2().wrap_connector(http)
    } else {
        https.enable_http1().wrap_connector(http)
    })
}
