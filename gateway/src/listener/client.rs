//! The client end of a connection, shared by its requests: who it is (peer, TLS, the
//! verified certificate's names), which front serves it, and the metric series its last
//! request was counted in.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::Response;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::Histogram;
use tokio::time::Instant;

use super::identity::ClientIdentity;
use crate::config::ListenerKind;
use crate::metrics::{RequestLabels, RouteLabels};
use crate::proxy::Body;
use crate::proxy::exchange::Conn;
use crate::proxy::headers::Peer;
use crate::runtime::Shared;

/// Which of a listener's three fronts answers a connection's requests, chosen once when
/// it is accepted (from the listener's `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    /// Host and path routes: proxy, direct answers, upgrades.
    Routes,
    /// The kubelet API of virtual nodes.
    NodeApi,
    /// One Kubernetes API endpoint for tenants' `kubectl`.
    KubeApi,
}

impl Front {
    /// The route label a Kubernetes front's requests are counted and spliced under.
    pub const fn label(self) -> &'static str {
        match self {
            Front::Routes => "routes",
            Front::NodeApi => "node-api",
            Front::KubeApi => "kube-api",
        }
    }

    pub fn of(kind: ListenerKind) -> Front {
        match kind {
            ListenerKind::NodeApi => Front::NodeApi,
            ListenerKind::KubeApi => Front::KubeApi,
            ListenerKind::Http => Front::Routes,
        }
    }
}

/// The client end of a connection, shared by its requests.
pub struct Client {
    pub listener: Arc<str>,
    pub peer: SocketAddr,
    pub tls: bool,
    /// What the TLS handshake agreed, for the access log (`None` on a plain connection).
    pub handshake: Option<Handshake>,
    /// The verified client certificate's names (listeners with `client_ca`).
    pub identity: Option<Arc<ClientIdentity>>,
    pub shared: Arc<Shared>,
    /// The front chosen when the connection was accepted.
    pub front: Front,
    /// The metric series this connection's last request was counted in: a keep-alive
    /// connection usually asks the same route and gets the same status, and reusing the
    /// handles saves building, hashing and looking up the label sets per request.
    last_series: Mutex<Option<Series>>,
    /// The peer as the forwarding headers write it, rendered once for all its requests.
    pub forwarded_peer: Peer,
    /// Set when the connection ends with bytes the client sent unread (leafgate's own
    /// closing answer, hyper's answer to a bad head): it lingers before it closes
    /// (`listener::linger`).
    lingers: AtomicBool,
}

/// A TLS connection's handshake as the access log writes it: the server name the client
/// asked for (`sni`) and the protocol version (`tls_version`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handshake {
    pub sni: Option<Arc<str>>,
    pub version: &'static str,
}

impl Handshake {
    /// The handshake `session` completed.
    pub fn of(session: &rustls::ServerConnection) -> Handshake {
        let version = match session.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3",
            Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2",
            _ => "TLS",
        };
        Handshake {
            sni: session.server_name().map(Arc::from),
            version,
        }
    }
}

/// A request's counter and latency histogram, for one route and status on this listener.
struct Series {
    route: String,
    status: u16,
    requests: Counter,
    duration: Histogram,
}

impl Client {
    pub fn new(
        listener: Arc<str>,
        peer: SocketAddr,
        handshake: Option<Handshake>,
        identity: Option<Arc<ClientIdentity>>,
        shared: Arc<Shared>,
        front: Front,
    ) -> Self {
        Client {
            listener,
            peer,
            tls: handshake.is_some(),
            handshake,
            identity,
            shared,
            front,
            last_series: Mutex::new(None),
            forwarded_peer: Peer::new(peer.ip()),
            lingers: AtomicBool::new(false),
        }
    }

    /// Notes `res`, an answer hyper is about to write: one that ends the connection
    /// (`proxy::own_answer` with the request's body unread) makes it linger.
    pub fn answering(&self, res: &Response<Body>) {
        let closes = res.headers().get(http::header::CONNECTION);
        if closes.is_some_and(|v| v.as_bytes() == b"close") {
            self.ends_unread();
        }
    }

    /// Notes that the connection ends with bytes the client sent unread (hyper's own
    /// answer to a head it could not take): it lingers.
    pub fn ends_unread(&self) {
        self.lingers.store(true, Ordering::Relaxed);
    }

    /// True once the connection is to end with bytes the client sent unread.
    pub fn lingers(&self) -> bool {
        self.lingers.load(Ordering::Relaxed)
    }

    /// This connection, as the warnings about its requests name it.
    pub fn conn(&self) -> Conn<'_> {
        Conn {
            listener: &self.listener,
            peer: self.peer,
        }
    }

    /// Counts one answered request under `route` and its status, timed from `started`.
    pub fn record(&self, route: &str, res: &Response<Body>, started: Instant) {
        self.count(route, res.status().as_u16(), started);
    }

    /// Counts one answered request under `route` and `status`, timed from `started`.
    pub fn count(&self, route: &str, status: u16, started: Instant) {
        tracing::Span::current().record("status", status);
        self.count_elapsed(route, status, started.elapsed());
    }

    /// Counts one answered request under `route` and `status` that took `elapsed`, with no
    /// request span to note the status on (the fast path makes none).
    pub fn count_elapsed(&self, route: &str, status: u16, elapsed: Duration) {
        let elapsed = elapsed.as_secs_f64();
        // A poisoned cache only costs the lookup; the metrics stay right.
        let mut last = self.last_series.lock().unwrap_or_else(|e| e.into_inner());
        match last.as_ref() {
            Some(s) if s.status == status && s.route == route => {
                s.requests.inc();
                s.duration.observe(elapsed);
            }
            _ => {
                let metrics = &self.shared.metrics;
                let series = Series {
                    route: route.to_string(),
                    status,
                    requests: metrics
                        .requests
                        .get_or_create(&RequestLabels {
                            listener: self.listener.to_string(),
                            route: route.to_string(),
                            status,
                        })
                        .clone(),
                    duration: metrics
                        .request_duration
                        .get_or_create(&RouteLabels {
                            route: route.to_string(),
                        })
                        .clone(),
                };
                series.requests.inc();
                series.duration.observe(elapsed);
                *last = Some(series);
            }
        }
    }
}
