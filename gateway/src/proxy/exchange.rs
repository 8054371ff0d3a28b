//! A proxied request's surroundings: the route it is counted under, who the client is
//! (for the forwarding headers, and for the warnings about it), and the metrics its
//! failures go to. Both ways to a backend (`forward` in the parent module, and
//! `upgrade`) take one.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::metrics::{Metrics, UpstreamErrorLabels};

use super::error::ProxyError;
use super::headers::ClientSide;

/// Everything about the request's surroundings the proxy needs.
pub struct Exchange<'a> {
    pub route: &'a str,
    pub client: ClientSide<'a>,
    pub conn: Conn<'a>,
    pub metrics: &'a Metrics,
}

/// The client connection a request came on, as a warning about it names it. (Connections
/// have no span of their own at `info`: built at every accept, it cost more than any
/// other step of an exec's setup.)
#[derive(Clone, Copy)]
pub struct Conn<'a> {
    pub listener: &'a Arc<str>,
    pub peer: SocketAddr,
}

/// On a request: the access log writes its line, so the backend's answer carries an
/// [`Upstreamed`] (`proxy::forward`).
#[derive(Clone, Copy)]
pub struct NoteUpstream;

/// On an answer from a backend, for the access log: which backend, what it answered
/// (`None`: leafgate answered for it) and when its head came.
#[derive(Clone)]
pub struct Upstreamed {
    pub backend: String,
    pub status: Option<u16>,
    pub first_byte: std::time::Duration,
    /// How long the new connection it came on took to make (`None`: a reused one).
    pub connect: Option<std::time::Duration>,
}

impl Exchange<'_> {
    pub fn count_error(&self, err: &ProxyError) {
        self.metrics
            .upstream_errors
            .get_or_create(&UpstreamErrorLabels {
                route: self.route.to_string(),
                backend: err.backend().to_string(),
                kind: err.kind(),
            })
            .inc();
    }
}
