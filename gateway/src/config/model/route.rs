//! A `[[route]]`, typed: which host and path it serves and what it does with a request
//! (a direct answer or a pool of backends, and how to speak to them).

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use rustls::pki_types::ServerName;
use serde::Deserialize;

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

/// Which hosts a route or certificate serves. Matching is case-insensitive and without port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostPattern {
    /// `app.example.com`, stored lowercase.
    Exact(String),
    /// `*.example.com`, stored as the suffix `.example.com`: one or more labels before it.
    Wildcard(String),
    /// `*.example.com` as a Kubernetes Ingress means it, stored as the suffix
    /// `.example.com`: exactly ONE label before it (`a.example.com`, not `a.b.example.com`).
    /// Never produced by TOML parsing; only Ingress hosts make it.
    WildcardLabel(String),
    /// `*`: any host.
    Any,
}

impl HostPattern {
    pub fn parse(text: &str) -> Result<Self, String> {
        let host = text.trim().to_ascii_lowercase();
        if host == "*" {
            return Ok(HostPattern::Any);
        }
        let (wild, name) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host.as_str()),
        };
        let valid = !name.is_empty()
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            });
        if !valid {
            return Err(format!(
                "`{text}` is not a host name: write `app.example.com`, `*.example.com` or `*` (no scheme, port or path)"
            ));
        }
        Ok(if wild {
            HostPattern::Wildcard(format!(".{name}"))
        } else {
            HostPattern::Exact(name.to_string())
        })
    }

    pub fn matches(&self, host: &str) -> bool {
        match self {
            HostPattern::Exact(h) => h.eq_ignore_ascii_case(host),
            HostPattern::Wildcard(suffix) => {
                host.len() > suffix.len()
                    && host.as_bytes()[host.len() - suffix.len()..]
                        .eq_ignore_ascii_case(suffix.as_bytes())
            }
            HostPattern::WildcardLabel(suffix) => one_label_before(host, suffix),
            HostPattern::Any => true,
        }
    }

    /// An Ingress rule's `host`: exact (lowercased) or `*.suffix` matching one label.
    /// The same syntax as TOML hosts; only the wildcard's meaning differs.
    pub fn parse_ingress(text: &str) -> Result<Self, String> {
        Ok(match Self::parse(text)? {
            HostPattern::Wildcard(suffix) => HostPattern::WildcardLabel(suffix),
            other => other,
        })
    }
}

/// True when `host` is one non-empty label followed by `suffix` (`.example.com`), compared
/// without regard to ASCII case.
pub fn one_label_before(host: &str, suffix: &str) -> bool {
    host.len() > suffix.len()
        && host.as_bytes()[host.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
        && !host.as_bytes()[..host.len() - suffix.len()].contains(&b'.')
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostPattern::Exact(h) => f.write_str(h),
            HostPattern::Wildcard(s) | HostPattern::WildcardLabel(s) => write!(f, "*{s}"),
            HostPattern::Any => f.write_str("*"),
        }
    }
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
