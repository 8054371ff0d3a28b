//! The config file, parsed once into types.
//!
//! `load` reads TOML (`raw`), checks its meaning and loads every file it names
//! (certificates, keys) into a typed [`Config`]; every problem is reported with its key and
//! line:column, all at once. Code past this module never sees a raw string that should have
//! been a type. This module builds nothing that serves traffic: that is `snapshot`.

mod error;
pub mod plugins;
mod raw;
pub mod units;

use std::collections::{BTreeSet, HashMap};
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::sign::CertifiedKey;
use toml::Spanned;

pub use error::{ConfigError, ConfigErrors};
pub use raw::{ListenerKind, UpstreamProtocol};
pub use units::{ByteRate, ByteSize, HumanDuration, RateLimit};

use error::Reporter;
use raw::*;

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
    pub routes: Vec<RouteConfig>,
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
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(5),
            response_header: Duration::from_secs(60),
            idle: Duration::from_secs(90),
            upgraded_idle: Duration::from_secs(3600),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

impl Timeouts {
    fn overlay(self, raw: &RawTimeouts) -> Self {
        let pick = |v: Option<HumanDuration>, d: Duration| v.map_or(d, |h| h.0);
        Self {
            connect: pick(raw.connect, self.connect),
            response_header: pick(raw.response_header, self.response_header),
            idle: pick(raw.idle, self.idle),
            upgraded_idle: pick(raw.upgraded_idle, self.upgraded_idle),
            shutdown_grace: pick(raw.shutdown_grace, self.shutdown_grace),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ListenerConfig {
    pub name: String,
    pub bind: SocketAddr,
    pub kind: ListenerKind,
    pub tls: Option<ServerTls>,
}

/// A listener's certificates, loaded: the default one and those chosen by SNI.
#[derive(Debug, Clone)]
pub struct ServerTls {
    pub default: Arc<CertifiedKey>,
    pub by_host: Vec<(HostPattern, Arc<CertifiedKey>)>,
    /// When set, clients must present a certificate signed by one of these.
    pub client_ca: Option<Arc<rustls::RootCertStore>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantConfig {
    pub name: String,
    pub namespaces: Vec<String>,
    pub bandwidth: BandwidthConfig,
    /// The tenant's policy plugins (`[tenant.plugins]`), paths resolved, not yet compiled.
    pub plugins: plugins::TenantPlugins,
}

/// Byte-rate limits applied to both directions of a connection, independently.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BandwidthConfig {
    /// Each connection on its own.
    pub per_connection: Option<RateLimit>,
    /// All connections of the route (or tenant) together.
    pub total: Option<RateLimit>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafConfig {
    pub name: String,
    pub kubeconfig: PathBuf,
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
            HostPattern::Any => true,
        }
    }
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostPattern::Exact(h) => f.write_str(h),
            HostPattern::Wildcard(s) => write!(f, "*{s}"),
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
}

#[derive(Debug)]
pub struct ClientIdentity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

impl Config {
    /// Reads, parses and validates the config file, loading every file it names.
    pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
        let source = std::fs::read_to_string(path).map_err(|e| {
            ConfigErrors(vec![ConfigError {
                file: path.to_path_buf(),
                position: None,
                key: String::new(),
                message: format!("cannot read the config file: {e}"),
            }])
        })?;
        Self::parse(path, &source)
    }

    /// Parses and validates `source`; relative paths in it resolve against `path`'s folder.
    pub fn parse(path: &Path, source: &str) -> Result<Config, ConfigErrors> {
        let mut report = Reporter::new(path, source);
        let raw: RawConfig = match toml::from_str(source) {
            Ok(raw) => raw,
            Err(e) => {
                report.toml(&e);
                return Err(ConfigErrors(report.errors));
            }
        };
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let config = Validator {
            report: &mut report,
            base: &base,
            files: BTreeSet::new(),
        }
        .config(path, raw);
        if report.errors.is_empty() {
            Ok(config)
        } else {
            Err(ConfigErrors(report.errors))
        }
    }
}

/// Where a (host, path) pair was routed: the route's listeners and the span of its path.
type RouteSite = (Option<Vec<String>>, Range<usize>);

struct Validator<'r, 'a> {
    report: &'r mut Reporter<'a>,
    base: &'r Path,
    files: BTreeSet<PathBuf>,
}

impl Validator<'_, '_> {
    fn config(mut self, path: &Path, raw: RawConfig) -> Config {
        let timeouts = Timeouts::default().overlay(&raw.timeouts);
        let admin = raw.admin.as_ref().and_then(|a| {
            self.socket_addr(&a.bind, "admin.bind")
                .map(|bind| AdminConfig { bind })
        });

        let mut binds: HashMap<SocketAddr, (String, Range<usize>)> = HashMap::new();
        if let (Some(a), Some(raw_admin)) = (&admin, &raw.admin) {
            binds.insert(a.bind, ("admin.bind".into(), raw_admin.bind.span()));
        }
        let mut listener_names = Names::default();
        let listeners: Vec<ListenerConfig> = raw
            .listeners
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                let key = format!("listener[{i}]");
                listener_names.insert(self.report, &l.name, &format!("{key}.name"), "listener");
                let bind = self.socket_addr(&l.bind, &format!("{key}.bind"))?;
                if bind.port() != 0 {
                    if let Some((other, span)) = binds.get(&bind) {
                        let (line, col) = self.report.line_column(span.start);
                        self.report.error(
                            l.bind.span(),
                            format!("{key}.bind"),
                            format!("{bind} is already bound by {other} at {line}:{col}; give each listener its own address"),
                        );
                    }
                    binds.insert(bind, (format!("{key}.bind"), l.bind.span()));
                }
                let tls = self.server_tls(l, &key);
                Some(ListenerConfig { name: l.name.get_ref().clone(), bind, kind: l.kind, tls })
            })
            .collect();

        let mut tenant_names = Names::default();
        let tenants = raw
            .tenants
            .iter()
            .enumerate()
            .map(|(i, t)| {
                tenant_names.insert(self.report, &t.name, &format!("tenant[{i}].name"), "tenant");
                TenantConfig {
                    name: t.name.get_ref().clone(),
                    namespaces: t.namespaces.iter().map(|n| n.get_ref().clone()).collect(),
                    bandwidth: bandwidth(&t.bandwidth),
                    plugins: plugins::validate(
                        self.report,
                        path,
                        self.base,
                        &format!("tenant[{i}].plugins"),
                        &t.plugins,
                        &mut self.files,
                    ),
                }
            })
            .collect();

        let mut leaf_names = Names::default();
        let leaves = raw
            .leaves
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                leaf_names.insert(self.report, &l.name, &format!("leaf[{i}].name"), "leaf");
                let kubeconfig =
                    self.readable_file(&l.kubeconfig, &format!("leaf[{i}].kubeconfig"))?;
                Some(LeafConfig {
                    name: l.name.get_ref().clone(),
                    kubeconfig,
                })
            })
            .collect();

        let mut route_names = Names::default();
        // Per listener (None = all): (host, path) -> where it was first defined.
        let mut seen: HashMap<(HostPattern, PathMatch), Vec<RouteSite>> = HashMap::new();
        let mut routes = Vec::new();
        for (i, r) in raw.routes.iter().enumerate() {
            let key = format!("route[{i}]");
            let Some(route) = self.route(r, &key, timeouts, &listener_names, &tenant_names) else {
                continue;
            };
            if let Some(name) = &r.name {
                route_names.insert(self.report, name, &format!("{key}.name"), "route");
            }
            let place = r
                .exact
                .as_ref()
                .or(r.path.as_ref())
                .map_or(r.host.span(), |p| p.span());
            let same = seen
                .entry((route.host.clone(), route.path.clone()))
                .or_default();
            if let Some((_, first)) = same.iter().find(|(ls, _)| overlaps(ls, &route.listeners)) {
                let (line, col) = self.report.line_column(first.start);
                self.report.error(
                    place.clone(),
                    key.clone(),
                    format!(
                        "duplicate route: host `{}` {} is already routed at {line}:{col}; remove one or change its host or path",
                        route.host, route.path
                    ),
                );
            }
            same.push((route.listeners.clone(), place));
            routes.push(route);
        }

        Config {
            path: path.to_path_buf(),
            admin,
            timeouts,
            listeners,
            tenants,
            leaves,
            routes,
            files: self.files,
        }
    }

    fn route(
        &mut self,
        r: &RawRoute,
        key: &str,
        defaults: Timeouts,
        listeners: &Names,
        tenants: &Names,
    ) -> Option<RouteConfig> {
        let host = HostPattern::parse(r.host.get_ref())
            .map_err(|m| self.report.error(r.host.span(), format!("{key}.host"), m))
            .ok();
        let path = match (&r.path, &r.exact) {
            (Some(_), Some(exact)) => {
                self.report.error(
                    exact.span(),
                    format!("{key}.exact"),
                    "set either `path` (prefix) or `exact`, not both",
                );
                None
            }
            (_, Some(p)) => self
                .url_path(p, &format!("{key}.exact"))
                .map(PathMatch::Exact),
            (Some(p), None) => self
                .url_path(p, &format!("{key}.path"))
                .map(PathMatch::Prefix),
            (None, None) => Some(PathMatch::Prefix("/".into())),
        };

        let route_listeners = r.listeners.as_ref().map(|ls| {
            ls.iter()
                .enumerate()
                .map(|(j, l)| {
                    if !listeners.contains(l.get_ref()) {
                        self.report.error(
                            l.span(),
                            format!("{key}.listeners[{j}]"),
                            format!(
                                "no listener is named `{}`; name one of the [[listener]] entries",
                                l.get_ref()
                            ),
                        );
                    }
                    l.get_ref().clone()
                })
                .collect::<Vec<_>>()
        });
        if let Some(t) = &r.tenant
            && !tenants.contains(t.get_ref())
        {
            self.report.error(
                t.span(),
                format!("{key}.tenant"),
                format!(
                    "no tenant is named `{}`; add a [[tenant]] with that name or fix the spelling",
                    t.get_ref()
                ),
            );
        }

        let action = match (&r.direct, r.backends.get_ref().is_empty()) {
            (Some(_), false) => {
                self.report.error(
                    r.backends.span(),
                    format!("{key}.backends"),
                    "a route has either `backends` or `direct`, not both",
                );
                None
            }
            (None, true) => {
                self.report.error(
                    r.host.span(),
                    key.to_string(),
                    "the route has nowhere to go: add `backends = [\"host:port\"]` or a `direct` response",
                );
                None
            }
            (Some(d), true) => self
                .direct(d, &format!("{key}.direct"))
                .map(RouteAction::Direct),
            (None, false) => self.upstream(r, key).map(RouteAction::Proxy),
        };

        let (host, path, action) = (host?, path?, action?);
        let name = r.name.as_ref().map_or_else(
            || match &path {
                PathMatch::Exact(p) | PathMatch::Prefix(p) => format!("{host}{p}"),
            },
            |n| n.get_ref().clone(),
        );
        Some(RouteConfig {
            name,
            listeners: route_listeners,
            host,
            path,
            action,
            tenant: r.tenant.as_ref().map(|t| t.get_ref().clone()),
            bandwidth: r
                .bandwidth
                .as_ref()
                .map(|b| bandwidth(&b.0))
                .unwrap_or_default(),
            timeouts: defaults.overlay(&r.timeouts),
        })
    }

    fn upstream(&mut self, r: &RawRoute, key: &str) -> Option<UpstreamConfig> {
        let mut ok = true;
        let backends: Vec<Backend> = r
            .backends
            .get_ref()
            .iter()
            .enumerate()
            .filter_map(|(j, b)| {
                let parsed = parse_backend(b.get_ref());
                if let Err(m) = &parsed {
                    self.report
                        .error(b.span(), format!("{key}.backends[{j}]"), m.clone());
                    ok = false;
                }
                parsed.ok()
            })
            .collect();
        let any_tls = backends.iter().any(|b| b.tls);
        if any_tls && backends.iter().any(|b| !b.tls) {
            self.report.error(
                r.backends.span(),
                format!("{key}.backends"),
                "mixes http and https backends; a route's backends share one protocol",
            );
            ok = false;
        }
        let protocol = r.protocol.unwrap_or_default();
        let tls = match (&r.tls, any_tls) {
            (Some(t), false) => {
                let span =
                    t.ca.as_ref()
                        .or(t.cert.as_ref())
                        .or(t.server_name.as_ref())
                        .map_or(r.host.span(), |s| s.span());
                self.report.error(span, format!("{key}.tls"), "`tls` is set but the backends are plain http: write them as `https://host:port`");
                ok = false;
                None
            }
            (raw_tls, true) => self.upstream_tls(raw_tls.as_ref(), &format!("{key}.tls")),
            (None, false) => None,
        };
        if any_tls && protocol == UpstreamProtocol::H2c {
            self.report.error(
                r.backends.span(),
                format!("{key}.protocol"),
                "`h2c` is for plain-TCP backends; TLS backends negotiate HTTP/2 by ALPN",
            );
            ok = false;
        }
        (ok && (tls.is_some() || !any_tls)).then_some(UpstreamConfig {
            backends,
            protocol,
            tls,
        })
    }

    fn upstream_tls(&mut self, raw: Option<&RawUpstreamTls>, key: &str) -> Option<UpstreamTls> {
        let mut roots = rustls::RootCertStore::empty();
        match raw.and_then(|t| t.ca.as_ref()) {
            Some(ca) => {
                let certs = self.certificates(ca, &format!("{key}.ca"))?;
                for c in certs {
                    if let Err(e) = roots.add(c) {
                        self.report.error(
                            ca.span(),
                            format!("{key}.ca"),
                            format!("a CA certificate is invalid: {e}"),
                        );
                        return None;
                    }
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        let identity = match raw.map(|t| (&t.cert, &t.key)) {
            Some((Some(cert), Some(k))) => {
                let chain = self.certificates(cert, &format!("{key}.cert"))?;
                let key_der = self.private_key(k, &format!("{key}.key"))?;
                Some(Arc::new(ClientIdentity {
                    chain,
                    key: key_der,
                }))
            }
            Some((Some(c), None)) | Some((None, Some(c))) => {
                self.report.error(
                    c.span(),
                    key.to_string(),
                    "a client certificate needs both `cert` and `key`",
                );
                return None;
            }
            _ => None,
        };
        let server_name = match raw.and_then(|t| t.server_name.as_ref()) {
            Some(n) => match ServerName::try_from(n.get_ref().clone()) {
                Ok(name) => Some(name),
                Err(e) => {
                    self.report.error(
                        n.span(),
                        format!("{key}.server_name"),
                        format!("not a DNS name or IP address: {e}"),
                    );
                    return None;
                }
            },
            None => None,
        };
        Some(UpstreamTls {
            roots: Arc::new(roots),
            identity,
            server_name,
        })
    }

    fn direct(&mut self, d: &Spanned<RawDirect>, key: &str) -> Option<DirectResponse> {
        let raw = d.get_ref();
        let status = match StatusCode::from_u16(*raw.status.get_ref()) {
            Ok(s) => s,
            Err(_) => {
                self.report.error(
                    raw.status.span(),
                    format!("{key}.status"),
                    "not an HTTP status code (100-999)",
                );
                return None;
            }
        };
        let mut headers = HeaderMap::new();
        for (name, value) in &raw.headers {
            let header_key = format!("{key}.headers.{name}");
            match (
                HeaderName::try_from(name.as_str()),
                HeaderValue::try_from(value.get_ref().as_str()),
            ) {
                (Ok(n), Ok(v)) => {
                    headers.append(n, v);
                }
                (Err(_), _) => self.report.error(
                    value.span(),
                    header_key,
                    format!("`{name}` is not a valid header name"),
                ),
                (_, Err(_)) => self.report.error(
                    value.span(),
                    header_key,
                    "the value has characters a header cannot carry",
                ),
            }
        }
        Some(DirectResponse {
            status,
            headers,
            body: Bytes::from(raw.body.clone()),
        })
    }

    fn server_tls(&mut self, l: &RawListener, key: &str) -> Option<ServerTls> {
        let Some(tls) = &l.tls else {
            if let Some(c) = l.certificate.first() {
                self.report.error(
                    c.cert.span(),
                    format!("{key}.certificate"),
                    "SNI certificates need `tls` (the default certificate) on the listener",
                );
            }
            return None;
        };
        let default = self.certified_key(&tls.cert, &tls.key, &format!("{key}.tls"));
        let mut by_host = Vec::new();
        for (j, c) in l.certificate.iter().enumerate() {
            let ckey = format!("{key}.certificate[{j}]");
            if c.hosts.get_ref().is_empty() {
                self.report.error(
                    c.hosts.span(),
                    format!("{ckey}.hosts"),
                    "list at least one host this certificate serves",
                );
            }
            let Some(certified) = self.certified_key(&c.cert, &c.key, &ckey) else {
                continue;
            };
            for (h, host) in c.hosts.get_ref().iter().enumerate() {
                match HostPattern::parse(host.get_ref()) {
                    Ok(p) => by_host.push((p, certified.clone())),
                    Err(m) => self
                        .report
                        .error(host.span(), format!("{ckey}.hosts[{h}]"), m),
                }
            }
        }
        let client_ca = match &tls.client_ca {
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                for c in self.certificates(ca, &format!("{key}.tls.client_ca"))? {
                    if let Err(e) = roots.add(c) {
                        self.report.error(
                            ca.span(),
                            format!("{key}.tls.client_ca"),
                            format!("a CA certificate is invalid: {e}"),
                        );
                    }
                }
                Some(Arc::new(roots))
            }
            None => None,
        };
        Some(ServerTls {
            default: default?,
            by_host,
            client_ca,
        })
    }

    fn certified_key(
        &mut self,
        cert: &Spanned<String>,
        key: &Spanned<String>,
        at: &str,
    ) -> Option<Arc<CertifiedKey>> {
        let chain = self.certificates(cert, &format!("{at}.cert"));
        let private = self.private_key(key, &format!("{at}.key"));
        let provider = rustls::crypto::ring::default_provider();
        match CertifiedKey::from_der(chain?, private?, &provider) {
            Ok(ck) => Some(Arc::new(ck)),
            Err(e) => {
                self.report.error(
                    key.span(),
                    format!("{at}.key"),
                    format!(
                        "the key does not fit the certificate {}: {e}",
                        cert.get_ref()
                    ),
                );
                None
            }
        }
    }

    fn certificates(
        &mut self,
        file: &Spanned<String>,
        key: &str,
    ) -> Option<Vec<CertificateDer<'static>>> {
        let path = self.readable_file(file, key)?;
        let certs: Result<Vec<_>, _> = match CertificateDer::pem_file_iter(&path) {
            Ok(iter) => iter.collect(),
            Err(e) => Err(e),
        };
        match certs {
            Ok(c) if !c.is_empty() => Some(c),
            Ok(_) => {
                self.report.error(
                    file.span(),
                    key.to_string(),
                    format!("{} holds no PEM certificate", path.display()),
                );
                None
            }
            Err(e) => {
                self.report.error(
                    file.span(),
                    key.to_string(),
                    format!("cannot read certificates from {}: {e}", path.display()),
                );
                None
            }
        }
    }

    fn private_key(&mut self, file: &Spanned<String>, key: &str) -> Option<PrivateKeyDer<'static>> {
        let path = self.readable_file(file, key)?;
        PrivateKeyDer::from_pem_file(&path)
            .map_err(|e| {
                self.report.error(
                    file.span(),
                    key.to_string(),
                    format!("cannot read a PEM private key from {}: {e}", path.display()),
                )
            })
            .ok()
    }

    /// Resolves `file` against the config's folder and checks it can be read.
    fn readable_file(&mut self, file: &Spanned<String>, key: &str) -> Option<PathBuf> {
        let path = self.base.join(file.get_ref());
        match std::fs::File::open(&path) {
            Ok(_) => {
                self.files.insert(path.clone());
                Some(path)
            }
            Err(e) => {
                self.report.error(
                    file.span(),
                    key.to_string(),
                    format!("cannot read {}: {e}", path.display()),
                );
                None
            }
        }
    }

    fn socket_addr(&mut self, text: &Spanned<String>, key: &str) -> Option<SocketAddr> {
        text.get_ref()
            .parse()
            .map_err(|_| {
                self.report.error(
                    text.span(),
                    key.to_string(),
                    format!("`{}` is not an address: write IP:port, like \"127.0.0.1:8080\" or \"[::]:8443\"", text.get_ref()),
                )
            })
            .ok()
    }

    fn url_path(&mut self, p: &Spanned<String>, key: &str) -> Option<String> {
        let path = p.get_ref();
        if path.starts_with('/') && !path.contains(['?', '#', ' ']) {
            Some(path.clone())
        } else {
            self.report.error(
                p.span(),
                key.to_string(),
                format!("`{path}` is not a path: start it with `/`, without query or fragment"),
            );
            None
        }
    }
}

/// Names of one kind of entry, each unique.
#[derive(Default)]
struct Names(HashMap<String, Range<usize>>);

impl Names {
    fn insert(&mut self, report: &mut Reporter<'_>, name: &Spanned<String>, key: &str, what: &str) {
        if name.get_ref().is_empty() {
            report.error(
                name.span(),
                key.to_string(),
                format!("a {what} needs a non-empty name"),
            );
        } else if let Some(first) = self.0.get(name.get_ref()) {
            let (line, col) = report.line_column(first.start);
            report.error(
                name.span(),
                key.to_string(),
                format!(
                    "duplicate {what} name `{}` (first at {line}:{col}); names must be unique",
                    name.get_ref()
                ),
            );
        } else {
            self.0.insert(name.get_ref().clone(), name.span());
        }
    }

    fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
}

fn overlaps(a: &Option<Vec<String>>, b: &Option<Vec<String>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.iter().any(|x| b.contains(x)),
        _ => true,
    }
}

fn bandwidth(raw: &RawBandwidth) -> BandwidthConfig {
    BandwidthConfig {
        per_connection: raw.per_connection,
        total: raw.total,
    }
}

fn parse_backend(text: &str) -> Result<Backend, String> {
    let (tls, rest) = if let Some(r) = text.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = text.strip_prefix("http://") {
        (false, r)
    } else if text.contains("://") {
        return Err(format!(
            "`{text}` has an unknown scheme: use `host:port`, `http://host:port` or `https://host:port`"
        ));
    } else {
        (false, text)
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let authority: http::uri::Authority = rest
        .parse()
        .map_err(|_| format!("`{text}` is not a backend address: write `host:port`"))?;
    if authority.port_u16().is_none() || rest.contains('/') || rest.contains('@') {
        return Err(format!(
            "`{text}` needs a port and nothing after it: write `host:port`"
        ));
    }
    Ok(Backend { tls, authority })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> Result<Config, ConfigErrors> {
        Config::parse(Path::new("test.toml"), src)
    }

    fn first_error(src: &str) -> String {
        parse(src).unwrap_err().0[0].to_string()
    }

    #[test]
    fn host_patterns() {
        assert_eq!(
            HostPattern::parse("App.Example.com"),
            Ok(HostPattern::Exact("app.example.com".into()))
        );
        let w = HostPattern::parse("*.example.com").unwrap();
        assert!(w.matches("a.example.com") && w.matches("a.b.EXAMPLE.com"));
        assert!(!w.matches("example.com") && !w.matches("aexample.com"));
        assert!(HostPattern::parse("http://x").is_err());
        assert!(HostPattern::parse("x:80").is_err());
    }

    #[test]
    fn a_minimal_config_validates() {
        let c = parse(
            "[admin]\nbind = \"127.0.0.1:0\"\n[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n\
             [[route]]\nhost = \"*\"\ndirect = { status = 200, body = \"hi\" }\n\
             [[route]]\nhost = \"a.example\"\npath = \"/api\"\nbackends = [\"127.0.0.1:1\", \"http://localhost:2\"]\ntimeouts = { connect = \"1s\" }\n",
        )
        .unwrap();
        assert_eq!(c.routes.len(), 2);
        assert_eq!(c.routes[0].name, "*/");
        assert_eq!(c.routes[1].timeouts.connect, Duration::from_secs(1));
        assert_eq!(c.routes[1].timeouts.idle, Timeouts::default().idle);
    }

    #[test]
    fn errors_name_the_key_and_position() {
        let e = first_error("[[listener]]\nname = \"a\"\nbind = \"127.0.0.1:0\"\nbogus = 1\n");
        assert!(e.starts_with("test.toml:4:1: listener[0].bogus: "), "{e}");
        let e =
            first_error("[[route]]\nhost = \"a\"\nbackends = [\"x:1\"]\nbandwidth = \"fast\"\n");
        assert!(e.starts_with("test.toml:4:13: route[0].bandwidth: "), "{e}");
        let e = first_error(
            "[[route]]\nhost = \"a\"\nbackends = [\"x:1\"]\n[[route]]\nhost = \"A\"\nbackends = [\"x:2\"]\n",
        );
        assert!(
            e.contains("5:8: route[1]: duplicate route") && e.contains("2:8"),
            "{e}"
        );
        let e = first_error("[[route]]\nhost = \"a\"\nbackends = [\"x:1\"]\ntenant = \"nobody\"\n");
        assert!(e.contains("4:10: route[0].tenant: no tenant"), "{e}");
        let e = first_error(
            "[[listener]]\nname = \"a\"\nbind = \"0.0.0.0:1\"\ntls = { cert = \"missing.pem\", key = \"k.pem\" }\n",
        );
        assert!(e.contains("4:16: listener[0].tls.cert: cannot read"), "{e}");
    }

    #[test]
    fn validation_reports_every_error_at_once() {
        let errs = parse(
            "[[listener]]\nname = \"a\"\nbind = \"nowhere\"\n[[listener]]\nname = \"a\"\nbind = \"127.0.0.1:1\"\n\
             [[route]]\nhost = \"a b\"\nbackends = [\"ftp://x\"]\n",
        )
        .unwrap_err();
        let text = errs.to_string();
        assert_eq!(errs.0.len(), 4, "{text}");
        assert!(
            text.contains("listener[0].bind")
                && text.contains("listener[1].name: duplicate listener name")
        );
        assert!(text.contains("route[0].host") && text.contains("route[0].backends[0]"));
    }

    #[test]
    fn routes_on_different_listeners_may_share_host_and_path() {
        let src = "[[listener]]\nname = \"a\"\nbind = \"127.0.0.1:0\"\n[[listener]]\nname = \"b\"\nbind = \"127.0.0.1:0\"\n\
                   [[route]]\nlisteners = [\"a\"]\nhost = \"x\"\nbackends = [\"x:1\"]\n[[route]]\nlisteners = [\"b\"]\nhost = \"x\"\nbackends = [\"x:1\"]\n";
        assert!(parse(src).is_ok());
    }

    #[test]
    fn backends() {
        assert_eq!(
            parse_backend("https://h:443").unwrap().to_string(),
            "https://h:443"
        );
        assert!(!parse_backend("127.0.0.1:80").unwrap().tls);
        assert!(parse_backend("h").is_err());
        assert!(parse_backend("http://h:1/path").is_err());
    }
}
