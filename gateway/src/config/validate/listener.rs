//! `[[listener]]`s validated: each address bound once (the admin's included), the rules of
//! each kind (a `node-api` listener needs a client CA and someone to authorize its callers:
//! `allowed_clients` or the root cluster of `[kubernetes]`; a `kube-api` one needs TLS),
//! the certificates loaded, `allowed_clients` entries, connection limits and trusted proxy
//! ranges typed.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::Arc;

use crate::config::model::GATEWAY_LISTENERS;
use crate::config::model::cidr::Cidr;
use crate::config::model::{
    AdminConfig, AllowedClient, HostPattern, KubernetesVersion, ListenerConfig, ListenerKind,
    ServerTls,
};
use crate::config::raw::{RawConfig, RawListener};

use super::names::Names;
use super::validator::Validator;

/// The addresses bound so far, with the key and span of whoever bound each.
type Binds = HashMap<SocketAddr, (String, Range<usize>)>;

impl Validator<'_, '_> {
    /// Every `[[listener]]` that validates, and the names of all of them (valid or not)
    /// for the routes that name one. `admin`'s address counts as bound.
    pub(super) fn listeners(
        &mut self,
        raw: &RawConfig,
        admin: Option<&AdminConfig>,
    ) -> (Vec<ListenerConfig>, Names) {
        let mut binds = Binds::new();
        if let (Some(a), Some(raw_admin)) = (admin, &raw.admin) {
            binds.insert(a.bind, ("admin.bind".into(), raw_admin.bind.span()));
        }
        let root = raw.kubernetes.is_some();
        let mut names = Names::default();
        let mut listeners = Vec::with_capacity(raw.listeners.len());
        for (i, l) in raw.listeners.iter().enumerate() {
            let key = format!("listener[{i}]");
            names.insert(self.report, &l.name, &format!("{key}.name"), "listener");
            if l.name.get_ref().starts_with(GATEWAY_LISTENERS) {
                self.report.error(
                    l.name.span(),
                    format!("{key}.name"),
                    format!("names starting with `{GATEWAY_LISTENERS}` are the Gateway API listeners'; choose another"),
                );
            }
            listeners.extend(self.listener(l, &key, &mut binds, root));
        }
        (listeners, names)
    }

    /// One listener; `None` when its address is not one (nothing else is checked then).
    /// `root`: the config names a root cluster (`[kubernetes]`).
    fn listener(
        &mut self,
        l: &RawListener,
        key: &str,
        binds: &mut Binds,
        root: bool,
    ) -> Option<ListenerConfig> {
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
        let tls = self.server_tls(l, key).map(|mut tls| {
            tls.client_cert_optional = kind == ListenerKind::KubeApi;
            tls
        });
        self.kind_rules(l, key, kind, root);
        let allowed_clients = self.allowed_clients(l, key);
        let max_connections = self.max_connections(l, key);
        let trusted_proxies = self.trusted_proxies(l, key);
        let kubernetes_version = self.kubernetes_version(l, key, kind);
        Some(ListenerConfig {
            name: l.name.get_ref().clone(),
            bind,
            kind,
            tls,
            max_connections,
            trusted_proxies,
            http1_fast_path: l.http1_fast_path.unwrap_or(true),
            allowed_clients,
            kubernetes_version,
        })
    }

    /// `kubernetes_version`: a kube-api listener's pinned `/version`.
    fn kubernetes_version(
        &mut self,
        l: &RawListener,
        key: &str,
        kind: ListenerKind,
    ) -> Option<KubernetesVersion> {
        let raw = l.kubernetes_version.as_ref()?;
        let key = format!("{key}.kubernetes_version");
        if kind != ListenerKind::KubeApi {
            self.report.error(
                raw.span(),
                key,
                "`kubernetes_version` is what a `kube-api` listener reports at `/version`; other kinds have none",
            );
            return None;
        }
        KubernetesVersion::parse(raw.get_ref())
            .map_err(|why| self.report.error(raw.span(), key, why))
            .ok()
    }

    /// `allowed_clients`, each entry that reads as `CN` or `CN/O`.
    fn allowed_clients(&mut self, l: &RawListener, key: &str) -> Vec<AllowedClient> {
        l.allowed_clients
            .iter()
            .enumerate()
            .filter_map(|(j, entry)| {
                AllowedClient::parse(entry.get_ref())
                    .map_err(|why| {
                        self.report
                            .error(entry.span(), format!("{key}.allowed_clients[{j}]"), why);
                    })
                    .ok()
            })
            .collect()
    }

    /// What each kind of listener requires of its `tls` and `allowed_clients`; `root`:
    /// the config has `[kubernetes]`, a root cluster to ask SubjectAccessReviews.
    fn kind_rules(&mut self, l: &RawListener, key: &str, kind: ListenerKind, root: bool) {
        let client_ca = l.tls.as_ref().is_some_and(|t| t.client_ca.is_some());
        if kind == ListenerKind::NodeApi && !client_ca {
            let span = l.kind.as_ref().map_or(l.name.span(), |k| k.span());
            self.report.error(
                span,
                format!("{key}.kind"),
                "a `node-api` listener needs `tls` with `client_ca` (the root API server's kubelet-client CA): the kubelet API is never served to anonymous clients",
            );
        }
        if kind == ListenerKind::NodeApi && l.allowed_clients.is_empty() && !root {
            // Every certificate the client CA signs reaches the listener (in kubeadm
            // clusters that CA also signs users', nodes' and CSR-issued ones): someone
            // must decide who among them may exec into pods.
            let span = l.kind.as_ref().map_or(l.name.span(), |k| k.span());
            self.report.error(
                span,
                format!("{key}.allowed_clients"),
                "a `node-api` listener needs `allowed_clients` (the root API server's kubelet-client CN, e.g. [\"kube-apiserver-kubelet-client\"]) or a root cluster in `[kubernetes]` to authorize each caller with a SubjectAccessReview on nodes/proxy, as the kubelet does; without either, any certificate the CA signed would reach every pod",
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
        if let Some(first) = l
            .allowed_clients
            .first()
            .filter(|_| kind == ListenerKind::KubeApi)
        {
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
    }

    /// `max_connections`: `None` when left out (sized from the descriptor limit) or 0.
    fn max_connections(&mut self, l: &RawListener, key: &str) -> Option<usize> {
        match &l.max_connections {
            Some(m) if *m.get_ref() == 0 => {
                self.report.error(
                    m.span(),
                    format!("{key}.max_connections"),
                    "must be at least 1; leave it out to size it from the descriptor limit"
                        .to_string(),
                );
                None
            }
            Some(m) => Some(usize::try_from(*m.get_ref()).unwrap_or(usize::MAX)),
            None => None,
        }
    }

    /// `trusted_proxies`, each range that parses.
    fn trusted_proxies(&mut self, l: &RawListener, key: &str) -> Vec<Cidr> {
        l.trusted_proxies
            .iter()
            .enumerate()
            .filter_map(|(j, net)| {
                net.get_ref()
                    .parse::<Cidr>()
                    .map_err(|why| {
                        self.report
                            .error(net.span(), format!("{key}.trusted_proxies[{j}]"), why);
                    })
                    .ok()
            })
            .collect()
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
