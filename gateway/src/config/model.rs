//! The typed config: what a validated file says, with every file it names loaded. Built
//! by `validate`; read by everything past the config layer, never changed after.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::sign::CertifiedKey;

use super::cidr::Cidr;
use super::plugins;
use super::raw::*;
use super::units::{HumanDuration, RateLimit};

/// A validated config: what the file says, with every named file loaded.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file this came from.
    pub path: PathBuf,
    pub admin: Option<AdminConfig>,
    pub timeouts: Timeouts,
    pub listeners: Vec<ListenerConfig>,
    pub tenants: Vec<TenantConfig>,
    pub leaves: Vec<LeafConfig>,
    /// Shared, so that the reloader's parse cache can hand a route that did not change to
    /// the next config without validating or copying it again.
    pub routes: Vec<Arc<RouteConfig>>,
    /// `[kubernetes]`: the root cluster virtual nodes are published in.
    pub kubernetes: Option<super::kubernetes::KubernetesConfig>,
    pub virtual_nodes: Vec<super::kubernetes::VirtualNodeConfig>,
    /// Every file the config names (certificates, keys, kubeconfigs): reload watches them.
    pub files: BTreeSet<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminConfig {
    pub bind: SocketAddr,
}

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

impl Timeouts {
    pub(super) fn overlay(self, raw: &RawTimeouts) -> Self {
        let pick = |v: Option<HumanDuration>, d: Duration| v.map_or(d, |h| h.0);
        Self {
            connect: pick(raw.connect, self.connect),
            response_header: pick(raw.response_header, self.response_header),
            idle: pick(raw.idle, self.idle),
            upgraded_idle: pick(raw.upgraded_idle, self.upgraded_idle),
            shutdown_grace: pick(raw.shutdown_grace, self.shutdown_grace),
            first_byte: pick(raw.first_byte, self.first_byte),
            client_idle: pick(raw.client_idle, self.client_idle),
            shutdown_delay: pick(raw.shutdown_delay, self.shutdown_delay),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ListenerConfig {
    pub name: String,
    pub bind: SocketAddr,
    pub kind: ListenerKind,
    pub tls: Option<ServerTls>,
    /// Connections served at once; past it the listener stops accepting (new clients wait
    /// in the kernel backlog) until one closes. `None`: sized from the descriptor limit.
    pub max_connections: Option<usize>,
    /// Peers whose `X-Forwarded-*`, `Forwarded` and `X-Real-IP` are kept and appended to;
    /// from any other peer they are replaced by leafgate's own.
    pub trusted_proxies: Vec<Cidr>,
    /// Client certificate names (CN, DNS or URI SAN) let in; empty: any the CA signed.
    pub allowed_clients: Vec<String>,
}

impl ListenerConfig {
    /// True when forwarding headers from `peer` are believed (see `trusted_proxies`).
    pub fn trusts(&self, peer: std::net::IpAddr) -> bool {
        self.trusted_proxies.iter().any(|net| net.contains(peer))
    }
}

/// A listener's certificates, loaded: the default one and those chosen by SNI.
#[derive(Debug, Clone)]
pub struct ServerTls {
    pub default: Arc<CertifiedKey>,
    pub by_host: Vec<(HostPattern, Arc<CertifiedKey>)>,
    /// When set, clients must present a certificate signed by one of these.
    pub client_ca: Option<Arc<rustls::RootCertStore>>,
    /// With `client_ca`: a client may also come without a certificate (kube-api, where
    /// bearer tokens authenticate too). One that presents a certificate is still verified.
    pub client_cert_optional: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantConfig {
    pub name: String,
    pub namespaces: Vec<String>,
    pub bandwidth: BandwidthConfig,
    /// The tenant's policy plugins (`[tenant.plugins]`), paths resolved, not yet compiled.
    pub plugins: plugins::TenantPlugins,
    /// The leaves the tenant's pods may be reached in; `None`: all.
    pub leaves: Option<Vec<String>>,
    /// kube-api front: the bearer tokens read from `tokens_file` (re-read on every reload,
    /// and the file is watched like every file the config names).
    pub tokens: Tokens,
    /// kube-api front: client certificate names (CN, DNS or URI SAN) of this tenant.
    pub client_names: Vec<String>,
}

/// A tenant's bearer tokens. Never printed: `Debug` shows only how many there are.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Tokens(BTreeSet<String>);

impl Tokens {
    /// Parses a tokens file: one token per line, blank lines and `#` comments skipped,
    /// surrounding whitespace trimmed.
    pub fn parse(text: &str) -> Tokens {
        Tokens(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string)
                .collect(),
        )
    }

    pub fn contains(&self, token: &str) -> bool {
        self.0.contains(token)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tokens(<{} redacted>)", self.0.len())
    }
}

impl TenantConfig {
    /// True when one of the tenant's `namespaces` patterns matches `namespace`.
    pub fn owns(&self, namespace: &str) -> bool {
        self.namespaces.iter().any(|p| glob_matches(p, namespace))
    }

    /// True when the tenant may reach `leaf`.
    pub fn may_reach(&self, leaf: &str) -> bool {
        self.leaves
            .as_ref()
            .is_none_or(|l| l.iter().any(|n| n == leaf))
    }
}

/// A namespace pattern: `*` stands for any run of characters (`team-a-*`, `*-prod`, `*`);
/// everything else matches itself.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Byte-rate limits applied to both directions of a connection, independently.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BandwidthConfig {
    /// Each connection on its own.
    pub per_connection: Option<RateLimit>,
    /// All connections of the route (or tenant) together.
    pub total: Option<RateLimit>,
}

/// A `[[leaf]]`: its kubeconfig read, the context chosen and every file it names loaded.
/// Only what leafgate supports gets here: `exec`, `auth-provider`, `proxy-url` and the
/// like are config errors, not silently ignored settings.
#[derive(Debug, Clone)]
pub struct LeafConfig {
    pub name: String,
    pub kubeconfig: PathBuf,
    /// The context used: `context` from the TOML, else the kubeconfig's `current-context`.
    pub context: String,
    /// The API server, `https://host:port` (or `http://`), with any path prefix kept.
    pub server: http::Uri,
    /// The context's namespace, `default` when it names none.
    pub namespace: String,
    pub tls: LeafTls,
    pub auth: LeafAuth,
    /// SHA-256 over the context name, the kubeconfig and every file it names (but not a
    /// `tokenFile`, which is re-read while running): equal fingerprints mean a reload can
    /// keep the leaf's connections and pod index.
    pub fingerprint: [u8; 32],
}

impl PartialEq for LeafConfig {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.kubeconfig == other.kubeconfig
            && self.fingerprint == other.fingerprint
    }
}

impl Eq for LeafConfig {}

/// How leafgate checks a leaf's API server and proves itself to it.
#[derive(Debug, Clone)]
pub struct LeafTls {
    /// `certificate-authority(-data)`; `None`: the public web roots.
    pub roots: Option<Vec<CertificateDer<'static>>>,
    /// `insecure-skip-tls-verify`: the server's certificate is not checked (warned about).
    pub insecure_skip_verify: bool,
    /// `tls-server-name`: the name to verify and send as SNI instead of the server's host.
    pub server_name: Option<ServerName<'static>>,
    /// `client-certificate(-data)` + `client-key(-data)`.
    pub identity: Option<Arc<ClientIdentity>>,
}

/// The `Authorization` a leaf gets, besides (or instead of) a client certificate.
#[derive(Clone)]
pub enum LeafAuth {
    None,
    /// `token`: a fixed bearer token.
    Token(String),
    /// `tokenFile`: a bearer token read from this file, re-read whenever it changes
    /// (projected service-account tokens rotate).
    TokenFile(PathBuf),
}

impl std::fmt::Debug for LeafAuth {
    /// Never prints a token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeafAuth::None => f.write_str("None"),
            LeafAuth::Token(_) => f.write_str("Token(<redacted>)"),
            LeafAuth::TokenFile(p) => write!(f, "TokenFile({})", p.display()),
        }
    }
}

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
    pub identity: Option<Arc<ClientIdentity>>,
    /// The name to verify (and send as SNI) instead of the backend's host.
    pub server_name: Option<ServerName<'static>>,
    /// Accept any server certificate (`roots` and `server_name` are then unused for
    /// verification). Never set from TOML: Ingress https backends only, as ingress-nginx's
    /// default `proxy-ssl-verify off`, since pod certificates rarely name what we dial.
    pub insecure_skip_verify: bool,
}

#[derive(Debug)]
pub struct ClientIdentity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

#[cfg(test)]
mod token_tests {
    use super::Tokens;

    #[test]
    fn tokens_files_skip_comments_and_blanks_and_never_print_a_token() {
        let t = Tokens::parse("# ci\n\n  abc  \ndef\n#ghi\n");
        assert!(t.contains("abc") && t.contains("def"));
        assert!(!t.contains("#ghi") && !t.contains("ghi") && !t.contains(""));
        assert_eq!(t.len(), 2);
        assert_eq!(format!("{t:?}"), "Tokens(<2 redacted>)");
    }
}
