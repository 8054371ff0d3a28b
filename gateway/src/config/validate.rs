//! Validation: the raw TOML tree checked for meaning (names unique, references resolved,
//! addresses, hosts, paths, rates) into the typed [`Config`], every problem reported with
//! its key and line:column, all at once.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use rustls::pki_types::ServerName;
use toml::Spanned;

use super::cidr::Cidr;
use super::error::Reporter;
use super::kubeconfig;
use super::model::*;
use super::plugins;
use super::raw::*;

pub(super) struct Validator<'r, 'a> {
    pub(super) report: &'r mut Reporter<'a>,
    pub(super) base: &'r Path,
    pub(super) files: BTreeSet<PathBuf>,
}

/// Everything the validation of a route reads besides the route itself: the folder
/// relative paths resolve against, the default timeouts, and the listener and tenant names
/// a route may name (sorted). A route validated under an equal context, from the same raw
/// route, validates the same again (see [`Prior`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RouteContext {
    base: PathBuf,
    timeouts: Timeouts,
    listeners: Vec<String>,
    tenants: Vec<String>,
}

impl RouteContext {
    fn new(base: &Path, timeouts: Timeouts, listeners: &Names, tenants: &Names) -> Self {
        let sorted = |names: &Names| {
            let mut v: Vec<String> = names.0.keys().cloned().collect();
            v.sort_unstable();
            v
        };
        Self {
            base: base.to_path_buf(),
            timeouts,
            listeners: sorted(listeners),
            tenants: sorted(tenants),
        }
    }
}

/// Routes validated before (by the reloader's parse cache), one per raw route of the file
/// being validated: `Some` where the raw route is the one that gave it, and its validation
/// read nothing but the route and its [`RouteContext`] (no file: no upstream `tls`). They
/// are taken as they are when `context` equals this file's; otherwise all are validated.
pub(super) struct Prior<'p> {
    pub(super) context: &'p RouteContext,
    pub(super) routes: &'p [Option<Arc<RouteConfig>>],
}

impl Validator<'_, '_> {
    /// The config `raw` says, and the context its routes were validated in.
    pub(super) fn config(
        mut self,
        path: &Path,
        raw: &RawConfig,
        prior: Option<Prior<'_>>,
    ) -> (Config, RouteContext) {
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
                let kind = l.kind.as_ref().map_or(ListenerKind::Http, |k| *k.get_ref());
                let tls = self.server_tls(l, &key).map(|mut tls| {
                    tls.client_cert_optional = kind == ListenerKind::KubeApi;
                    tls
                });
                let client_ca = l.tls.as_ref().is_some_and(|t| t.client_ca.is_some());
                if kind == ListenerKind::NodeApi && !client_ca {
                    let span = l.kind.as_ref().map_or(l.name.span(), |k| k.span());
                    self.report.error(
                        span,
                        format!("{key}.kind"),
                        "a `node-api` listener needs `tls` with `client_ca` (the root API server's kubelet-client CA): the kubelet API is never served to anonymous clients",
                    );
                }
                if kind == ListenerKind::KubeApi && l.tls.is_none() {
                    let span = l.kind.as_ref().map_or(l.name.span(), |k| k.span());
                    self.report.error(
                        span,
                        format!("{key}.kind"),
                        "a `kube-api` listener needs `tls` (cert, key; `client_ca` to accept client certificates): bearer tokens never travel in clear text",
                    );
                }
                if let Some(first) = l.allowed_clients.first().filter(|_| kind == ListenerKind::KubeApi) {
                    self.report.error(
                        first.span(),
                        format!("{key}.allowed_clients"),
                        "a `kube-api` listener lets in the certificates named in tenants' `client_names`; move these names there",
                    );
                }
                if let Some(first) = l.allowed_clients.first().filter(|_| !client_ca) {
                    self.report.error(
                        first.span(),
                        format!("{key}.allowed_clients"),
                        "`allowed_clients` names client certificates; set `tls.client_ca` so clients present one",
                    );
                }
                let max_connections = match &l.max_connections {
                    Some(m) if *m.get_ref() == 0 => {
                        self.report.error(
                            m.span(),
                            format!("{key}.max_connections"),
                            "must be at least 1; leave it out to size it from the descriptor limit".to_string(),
                        );
                        None
                    }
                    Some(m) => Some(usize::try_from(*m.get_ref()).unwrap_or(usize::MAX)),
                    None => None,
                };
                let trusted_proxies = l
                    .trusted_proxies
                    .iter()
                    .enumerate()
                    .filter_map(|(j, net)| {
                        net.get_ref().parse::<Cidr>().map_err(|why| {
                            self.report.error(net.span(), format!("{key}.trusted_proxies[{j}]"), why);
                        }).ok()
                    })
                    .collect();
                Some(ListenerConfig {
                    name: l.name.get_ref().clone(),
                    bind,
                    kind,
                    tls,
                    max_connections,
                    trusted_proxies,
                    allowed_clients: l.allowed_clients.iter().map(|c| c.get_ref().clone()).collect(),
                })
            })
            .collect();

        let mut tenant_names = Names::default();
        let mut slots = plugins::Slots::default();
        let tenants: Vec<TenantConfig> = raw
            .tenants
            .iter()
            .enumerate()
            .map(|(i, t)| {
                tenant_names.insert(self.report, &t.name, &format!("tenant[{i}].name"), "tenant");
                TenantConfig {
                    name: t.name.get_ref().clone(),
                    namespaces: t.namespaces.iter().map(|n| n.get_ref().clone()).collect(),
                    leaves: t.leaves.as_ref().map(|ls| {
                        for (j, leaf) in ls.iter().enumerate() {
                            if !raw
                                .leaves
                                .iter()
                                .any(|l| l.name.get_ref() == leaf.get_ref())
                            {
                                self.report.error(
                                    leaf.span(),
                                    format!("tenant[{i}].leaves[{j}]"),
                                    format!("no [[leaf]] is named `{}`", leaf.get_ref()),
                                );
                            }
                        }
                        ls.iter().map(|l| l.get_ref().clone()).collect()
                    }),
                    tokens: self.tokens(t, &format!("tenant[{i}].tokens_file")),
                    client_names: t.client_names.iter().map(|c| c.get_ref().clone()).collect(),
                    bandwidth: bandwidth(&t.bandwidth),
                    plugins: plugins::validate(
                        self.report,
                        path,
                        self.base,
                        &format!("tenant[{i}].plugins"),
                        &t.plugins,
                        &mut self.files,
                        &mut slots,
                    ),
                }
            })
            .collect();

        let mut leaf_names = Names::default();
        let leaves: Vec<LeafConfig> = raw
            .leaves
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                leaf_names.insert(self.report, &l.name, &format!("leaf[{i}].name"), "leaf");
                self.leaf(l, &format!("leaf[{i}]"))
            })
            .collect();

        let context = RouteContext::new(self.base, timeouts, &listener_names, &tenant_names);
        let prior = prior
            .filter(|p| *p.context == context && p.routes.len() == raw.routes.len())
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
                    match self.route(r, &key, timeouts, &listener_names, &tenant_names) {
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

        let kubernetes = raw.kubernetes.as_ref().and_then(|k| {
            self.kubernetes(
                k.get_ref(),
                k.span(),
                &listeners,
                !raw.virtual_nodes.is_empty(),
            )
        });
        // Named leaves, valid or not: a leaf with a broken kubeconfig is reported there,
        // not again at every virtual node of it.
        let leaf_names: Vec<&str> = raw
            .leaves
            .iter()
            .map(|l| l.name.get_ref().as_str())
            .collect();
        let mut node_names = Names::default();
        let virtual_nodes = raw
            .virtual_nodes
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let key = format!("virtual_node[{i}]");
                if let Some(name) = &v.get_ref().name {
                    node_names.insert(self.report, name, &format!("{key}.name"), "virtual node");
                }
                if raw.kubernetes.is_none() {
                    self.report.error(
                        v.span(),
                        key.clone(),
                        "a virtual node needs [kubernetes] (the root cluster to publish it in)",
                    );
                }
                self.virtual_node(v.get_ref(), &key, &leaf_names, &tenants)
            })
            .collect();

        let config = Config {
            path: path.to_path_buf(),
            kubernetes,
            virtual_nodes,
            admin,
            timeouts,
            listeners,
            tenants,
            leaves,
            routes,
            files: self.files,
        };
        (config, context)
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
            timeouts: defaults.overlay(&r.timeouts),
        })
    }

    /// A `[[leaf]]`: its kubeconfig read and checked; a problem inside the kubeconfig is
    /// reported at `kubeconfig` (or `context`) and names the kubeconfig field.
    fn leaf(&mut self, l: &RawLeaf, key: &str) -> Option<LeafConfig> {
        let path = self.readable_file(&l.kubeconfig, &format!("{key}.kubeconfig"))?;
        let context = l.context.as_ref().map(|c| c.get_ref().as_str());
        match kubeconfig::resolve(&path, context) {
            Ok(r) => {
                self.files.extend(r.files);
                Some(LeafConfig {
                    name: l.name.get_ref().clone(),
                    kubeconfig: path,
                    context: r.context,
                    server: r.server,
                    namespace: r.namespace,
                    tls: r.tls,
                    auth: r.auth,
                    fingerprint: r.fingerprint,
                })
            }
            Err(p) => {
                let (span, field) = match (p.at, &l.context) {
                    (kubeconfig::At::Context, Some(c)) => (c.span(), "context"),
                    _ => (l.kubeconfig.span(), "kubeconfig"),
                };
                self.report.error(span, format!("{key}.{field}"), p.message);
                None
            }
        }
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

    /// A tenant's `tokens_file`, read now; the file joins the watched ones so editing it
    /// reloads the config. An unreadable file is an error; an empty one lets nobody in.
    fn tokens(&mut self, t: &RawTenant, key: &str) -> Tokens {
        let Some(file) = &t.tokens_file else {
            return Tokens::default();
        };
        let Some(path) = self.readable_file(file, key) else {
            return Tokens::default();
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Tokens::parse(&text),
            Err(e) => {
                self.report.error(
                    file.span(),
                    key.to_string(),
                    format!("cannot read {} as text: {e}", path.display()),
                );
                Tokens::default()
            }
        }
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
            client_cert_optional: false,
        })
    }
}

impl Validator<'_, '_> {
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

/// The routes validated so far, by (host, path), to find duplicates: per hash of the pair a
/// chain of sites, newest first, each pointing into the routes themselves, so that no host
/// or path is copied per route (a config may have tens of thousands).
struct Sites {
    heads: HashMap<u64, usize, foldhash::fast::RandomState>,
    sites: Vec<Site>,
    hasher: foldhash::fast::RandomState,
}

struct Site {
    /// Index into the routes.
    route: usize,
    /// The span of the route's path (or host).
    place: Range<usize>,
    next: Option<usize>,
}

impl Sites {
    /// Room for `routes` routes, so that the index is not grown route by route.
    fn with_capacity(routes: usize) -> Self {
        let hasher = foldhash::fast::RandomState::default();
        Self {
            heads: HashMap::with_capacity_and_hasher(routes, hasher.clone()),
            sites: Vec::with_capacity(routes),
            hasher,
        }
    }

    /// Records `route`, about to be pushed onto `routes`, defined at `place`; returns the
    /// place of the first earlier route with the same host and path on a listener it
    /// shares, if any.
    fn add(
        &mut self,
        routes: &[Arc<RouteConfig>],
        route: &RouteConfig,
        place: Range<usize>,
    ) -> Option<Range<usize>> {
        let hash = self.hasher.hash_one((&route.host, &route.path));
        let mut first = None;
        let mut at = self.heads.get(&hash).copied();
        while let Some(s) = at {
            let site = &self.sites[s];
            let other = &routes[site.route];
            if other.host == route.host
                && other.path == route.path
                && overlaps(&other.listeners, &route.listeners)
            {
                // Newest first: the last match is the first defined.
                first = Some(site.place.clone());
            }
            at = site.next;
        }
        let next = self.heads.insert(hash, self.sites.len());
        self.sites.push(Site {
            route: routes.len(),
            place,
            next,
        });
        first
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
