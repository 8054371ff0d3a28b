//! `[timeouts]` and a route's `timeouts`, typed: the defaults every route starts from.

use std::time::Duration;

/// Timeouts for upstream traffic and shutdown; `[timeouts]` sets the defaults and a route's
/// `timeouts` table overrides any of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the TCP (and TLS) connection to a backend.
    pub connect: Duration,
    /// From the request being sent to the backend's response head arriving.
    pub response_header: Duration,
    /// No bytes in either direction on a proxied body, or a pooled connection unused.
    pub idle: Duration,
    /// No bytes in either direction on a hijacked (upgraded) connection.
    pub upgraded_idle: Duration,
    /// How long shutdown waits for in-flight requests before closing them.
    pub shutdown_grace: Duration,
    /// Listeners only: how long a new client connection may stay silent before its first
    /// byte (the TLS ClientHello or the first request byte) before it is closed.
    pub first_byte: Duration,
    /// Listeners only: how long a client connection with no request in flight is kept
    /// open (HTTP/1.1 keep-alive, HTTP/2 with no open stream).
    pub client_idle: Duration,
    /// Shutdown only: how long listeners keep serving after `/readyz` turned 503, before
    /// they stop accepting.
    pub shutdown_delay: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(5),
            response_header: Duration::from_secs(60),
            idle: Duration::from_secs(90),
            upgraded_idle: Duration::from_secs(3600),
            shutdown_grace: Duration::from_secs(30),
            first_byte: Duration::from_secs(10),
            client_idle: Duration::from_secs(60),
            shutdown_delay: Duration::from_secs(5),
        }
    }
}
