//! A `[[route]]`, typed: which host and path it serves and what it does with a request
//! (a direct answer or a pool of backends, and how to speak to them).

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use rustls::pki_types::ServerName;
use serde::Deserialize;

use super::host::HostPattern;
use super::tenant::BandwidthConfig;
use super::timeouts::Timeouts;
use super::tls::ClientCert;

#[derive(Debug, Clone)]
pub struct RouteConfig {
    /// `name`, or `host` + path when the route has none.
    pub name: String,
    /// The listeners this route is served on; `None` means every HTTP listener.
    pub listeners: Option<Vec<String>>,
    pub host: HostPattern,
    pub path: PathMatch,
    pub action: RouteAction,
    pub tenant: Option<String>,
    pub bandwidth: BandwidthConfig,
    pub timeouts: Timeouts,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PathMatch {
    Exact(String),
    Prefix(String),
}

impl std::fmt::Display for PathMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathMatch::Exact(p) => write!(f, "exact {p}"),
            PathMatch::Prefix(p) => write!(f, "prefix {p}"),
        }
    }
}

#[derive(Debug, Clone)]
pub enum RouteAction {
    /// Answer from the gateway itself.
    Direct(DirectResponse),
    /// Forward to a pool of backends.
    Proxy(UpstreamConfig),
}

#[derive(Debug, Clone)]
pub struct DirectResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    pub backends: Vec<Backend>,
    pub protocol: UpstreamProtocol,
    pub tls: Option<UpstreamTls>,
}

/// How leafgate speaks to a route's backends.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UpstreamProtocol {
    /// HTTP/1.1 to plain backends; TLS backends choose HTTP/2 or HTTP/1.1 by ALPN.
    #[default]
    Auto,
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 only: prior knowledge to plain backends (h2c), ALPN `h2` to TLS ones.
    #[serde(alias = "h2c")]
    H2,
}

/// One backend: `host:port` over plain TCP or TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    pub tls: bool,
    /// `host:port`, as dialed and as written into the upstream request's URI.
    pub authority: http::uri::Authority,
}

impl Backend {
    /// The host to dial: the authority's host, an IPv6 address without its brackets
    /// (`[::1]:3000` dials `::1`, which a resolver reads as an address).
    pub fn dial_host(&self) -> &str {
        let host = self.authority.host();
        host.strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host)
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}://{}",
            if self.tls { "https" } else { "http" },
            self.authority
        )
    }
}

/// How leafgate authenticates TLS backends and itself to them.
#[derive(Debug, Clone)]
pub struct UpstreamTls {
    /// Trusted roots; the public web roots when the config names no CA.
    pub roots: Arc<rustls::RootCertStore>,
    /// Client certificate chain and key for mutual TLS.
    pub identity: Option<Arc<ClientCert>>,
    /// The name to verify (and send as SNI) instead of the backend's host.
    pub server_name: Option<ServerName<'static>>,
    /// Accept any server certificate (`roots` and `server_name` are then unused for
    /// verification). Never set from TOML: Ingress https backends only, as ingress-nginx's
    /// default `proxy-ssl-verify off`, since pod certificates rarely name what we dial.
    pub insecure_skip_verify: bool,
}

#[cfg(test)]
mod tests {
    use super::Backend;

    fn host(authority: &str) -> String {
        Backend {
            tls: false,
            authority: authority.parse().unwrap(),
        }
        .dial_host()
        .to_string()
    }

    #[test]
    fn ipv6_hosts_are_dialled_without_brackets() {
        assert_eq!(host("[::1]:3000"), "::1");
        assert_eq!(host("[fd00::1]:8080"), "fd00::1");
        assert_eq!(host("10.0.0.1:8080"), "10.0.0.1");
        assert_eq!(host("app.example.com:80"), "app.example.com");
        // What a resolver reads as an address, as connect gets it.
        let addr: std::net::IpAddr = host("[fd00::1]:8080").parse().unwrap();
        assert!(addr.is_ipv6());
    }
}
