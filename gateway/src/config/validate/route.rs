//! `[[route]]`s validated: host and path parsed, the listeners and tenant named exist, one
//! action (a direct answer or backends, with their TLS loaded), and no two routes with the
//! same host and path on a listener they share. Routes validated before are reused when
//! nothing they read changed ([`RouteContext`], [`Prior`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use rustls::pki_types::ServerName;
use toml::Spanned;

use crate::config::model::{
    Backend, ClientCert, DirectResponse, HostPattern, PathMatch, RouteAction, RouteConfig,
    Timeouts, UpstreamConfig, UpstreamTls,
};
use crate::config::raw::{RawConfig, RawDirect, RawRoute, RawUpstreamTls};

use super::names::{Names, Sites};
use super::validator::{Validator, bandwidth, timeouts};

/// Everything the validation of a route reads besides the route itself: the folder
/// relative paths resolve against, the default timeouts, and the listener and tenant names
/// a route may name (sorted). A route validated under an equal context, from the same raw
/// route, validates the same again (see [`Prior`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::config) struct RouteContext {
    base: PathBuf,
    timeouts: Timeouts,
    listeners: Vec<String>,
    tenants: Vec<String>,
}

impl RouteContext {
    pub(super) fn new(base: &Path, timeouts: Timeouts, listeners: &Names, tenants: &Names) -> Self {
        Self {
            base: base.to_path_buf(),
            timeouts,
            listeners: listeners.sorted(),
            tenants: tenants.sorted(),
        }
    }
}

/// Routes validated before (by the reloader's parse cache), one per raw route of the file
/// being validated: `Some` where the raw route is the one that gave it, and its validation
/// read nothing but the route and its [`RouteContext`] (no file: no upstream `tls`). They
/// are taken as they are when `context` equals this file's; otherwise all are validated.
pub(in crate::config) struct Prior<'p> {
    pub(in crate::config) context: &'p RouteContext,
    pub(in crate::config) routes: &'p [Option<Arc<RouteConfig>>],
}

impl Validator<'_, '_> {
    /// Every `[[route]]` that validates, in `context` (whose timeouts are the defaults);
    /// those `prior` holds are taken as they are when its context is this one.
    pub(super) fn routes(
        &mut self,
        raw: &RawConfig,
        context: &RouteContext,
        prior: Option<Prior<'_>>,
        listener_names: &Names,
        tenant_names: &Names,
    ) -> Vec<Arc<RouteConfig>> {
        let defaults = context.timeouts;
        let prior = prior
            .filter(|p| p.context == context && p.routes.len() == raw.routes.len())
            .map_or(&[][..], |p| p.routes);
        let mut route_names = Names::default();
        let mut routes: Vec<Arc<RouteConfig>> = Vec::with_capacity(raw.routes.len());
        let mut sites = Sites::with_capacity(raw.routes.len());
        // One buffer for the key of every route validated here: it is read only when there
        // is an error.
        let mut key = String::new();
        for (i, r) in raw.routes.iter().enumerate() {
            let route = match prior.get(i) {
                Some(Some(same)) => same.clone(),
                _ => {
                    key.clear();
                    // Writing into a String cannot fail.
                    let _ = write!(key, "route[{i}]");
                    match self.route(r, &key, defaults, listener_names, tenant_names) {
                        Some(route) => Arc::new(route),
                        None => continue,
                    }
                }
            };
            if let Some(name) = &r.name {
                route_names.insert(self.report, name, &format!("route[{i}].name"), "route");
            }
            let place = r
                .exact
                .as_ref()
                .or(r.path.as_ref())
                .map_or(r.host.span(), |p| p.span());
            if let Some(first) = sites.add(&routes, &route, place.clone()) {
                let (line, col) = self.report.line_column(first.start);
                self.report.error(
                    place,
                    format!("route[{i}]"),
                    format!(
                        "duplicate route: host `{}` {} is already routed at {line}:{col}; remove one or change its host or path",
                        route.host, route.path
                    ),
                );
            }
            routes.push(route);
        }
        routes
    }

    /// One route, `key` its key (`route[3]`); `defaults` are the `[timeouts]`.
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
            (Some(d), true) => self.direct(d, key).map(RouteAction::Direct),
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
            timeouts: timeouts(defaults, &r.timeouts),
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
                Some(Arc::new(ClientCert {
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
            insecure_skip_verify: false,
        })
    }

    /// A route's `direct` response; `route` is the route's key (`route[3]`), extended here
    /// only when there is an error to report, since a config may hold thousands of these.
    fn direct(&mut self, d: &Spanned<RawDirect>, route: &str) -> Option<DirectResponse> {
        let raw = d.get_ref();
        let status = match StatusCode::from_u16(*raw.status.get_ref()) {
            Ok(s) => s,
            Err(_) => {
                self.report.error(
                    raw.status.span(),
                    format!("{route}.direct.status"),
                    "not an HTTP status code (100-999)",
                );
                return None;
            }
        };
        let mut headers = HeaderMap::new();
        for (name, value) in &raw.headers {
            let header_key = || format!("{route}.direct.headers.{name}");
            match (
                HeaderName::try_from(name.as_str()),
                HeaderValue::try_from(value.get_ref().as_str()),
            ) {
                (Ok(n), Ok(v)) => {
                    headers.append(n, v);
                }
                (Err(_), _) => self.report.error(
                    value.span(),
                    header_key(),
                    format!("`{name}` is not a valid header name"),
                ),
                (_, Err(_)) => self.report.error(
                    value.span(),
                    header_key(),
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
}

/// A backend: `host:port`, `http://host:port` or `https://host:port`.
pub(super) fn parse_backend(text: &str) -> Result<Backend, String> {
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
    use super::parse_backend;

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
