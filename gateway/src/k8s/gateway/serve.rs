//! What the proxy serves of a translated [`Model`]: on the address and port of each
//! Gateway listener, the router's hosts and paths, each with the candidates the proxy
//! tries in precedence order (`table`: header, query-parameter and method matches, what
//! the chosen one answers with), and the Service backends they forward to as ordinary
//! routes of the Ingress model ([`IngressRoute`], the one route model both sources compile
//! into); and the statuses told what it does not serve yet.
//!
//! A rule without backends, or the share of an invalid backendRef, answers 500; a
//! `RequestRedirect` is answered by leafgate itself; a `URLRewrite` and `timeouts` go with
//! the candidate to the proxy. An HTTPS listener whose certificateRefs resolve terminates
//! TLS on its address and port, the certificate chosen by SNI among the listeners there
//! (a listener's hostname, exact before wildcard; a hostless one's is the default); one
//! whose refs do not resolve is not programmed and serves nothing.

use std::collections::BTreeMap;

use foldhash::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use super::model::{Action, Backend, Cond, GatewayRoute, ListenerCerts, Model};
use super::table::{Answer, Candidate, Placed, ServedPath, Share, Table, Target, retable, table};
use super::types::Gateway;
use crate::config::HostPattern;
use crate::config::ServerTls;
use crate::k8s::ingress::model::{IngressRef, IngressRoute};

/// What one bound address and port serves.
#[derive(Debug, Clone)]
pub struct ServedListener {
    pub addr: SocketAddr,
    /// The Service backends its candidates forward to, one per rule and backendRef (the
    /// rule's name, `/<k>` after it for the `k`th of several), in name order (as the route
    /// compiler expects them).
    pub routes: Vec<Arc<IngressRoute>>,
    /// The router's hosts and paths, each with its candidates in precedence order.
    pub table: Arc<Table>,
    /// The certificates of its HTTPS listeners (`None`: plain HTTP).
    pub tls: Option<ServerTls>,
    /// The model's entries it was built from, in the model's order: the next build keeps
    /// its routes and table when it has the same ones.
    pub entries: Vec<Arc<GatewayRoute>>,
    /// Each entry's candidate, in the same order: the next build keeps those of the
    /// entries it still has (the same `Arc`), with their Service backends.
    pub candidates: Vec<Arc<Candidate>>,
}

impl ServedListener {
    /// The router's hosts and paths, host by host.
    pub fn paths(&self) -> impl Iterator<Item = &ServedPath> {
        self.table.values().flat_map(|paths| paths.iter())
    }
}

/// Every address and port the Gateways of ours listen on, in address order.
#[derive(Debug, Default)]
pub struct Served {
    pub listeners: Vec<ServedListener>,
}

/// `entry` as the proxy tries it; the Service backends it forwards to are added to
/// `routes` (by name: the entries of one rule share them).
fn candidate(
    entry: &GatewayRoute,
    (ns, name): (&str, &str),
    routes: &mut BTreeMap<String, Arc<IngressRoute>>,
) -> Candidate {
    let answer = match &entry.action {
        Action::Redirect(r) => Answer::Redirect(r.clone()),
        Action::Forward(backends) => {
            let mut shares: Vec<Share> = Vec::new();
            for (k, b) in backends.iter().enumerate().filter(|(_, b)| b.weight > 0) {
                let target = match &b.backend {
                    Backend::Invalid { reason } => Target::Invalid(reason.clone()),
                    Backend::Service(backend) => {
                        let route = match backends.len() {
                            1 => entry.name.clone(),
                            _ => format!("{}/{k}", entry.name),
                        };
                        routes.entry(route.clone()).or_insert_with(|| {
                            Arc::new(IngressRoute {
                                name: route.clone(),
                                ingress: IngressRef {
                                    namespace: ns.to_string(),
                                    name: name.to_string(),
                                    uid: String::new(),
                                    resource_version: String::new(),
                                },
                                host: entry.host.clone(),
                                path: entry.path.clone(),
                                backend: backend.clone(),
                                tenant: entry.tenant.clone(),
                                bandwidth: entry.bandwidth,
                                upgraded_idle: None,
                            })
                        });
                        Target::Backend(route)
                    }
                };
                shares.push(Share {
                    weight: b.weight,
                    target,
                });
            }
            if shares.is_empty() {
                shares.push(Share {
                    weight: 1,
                    target: Target::Invalid("the rule has no backendRefs with weight".into()),
                });
            }
            Answer::Split(shares)
        }
    };
    Candidate {
        name: entry.name.clone(),
        tenant: entry.tenant.clone(),
        headers: entry.headers.clone(),
        query: entry.query.clone(),
        method: entry.method.clone(),
        request_headers: entry.request_headers.clone(),
        response_headers: entry.response_headers.clone(),
        rewrite: entry.rewrite.clone(),
        timeouts: entry.timeouts,
        answer,
    }
}

/// The names of the Service backends a candidate forwards to.
fn backend_names(c: &Candidate) -> impl Iterator<Item = &str> {
    let shares = match &c.answer {
        Answer::Split(shares) => &shares[..],
        Answer::Redirect(_) => &[],
    };
    shares.iter().filter_map(|s| match &s.target {
        Target::Backend(name) => Some(name.as_str()),
        Target::Invalid(_) => None,
    })
}

/// `namespace/name` of an entry's HTTPRoute, from its name `httproute/<ns>/<name>/<rule>`.
fn route_of(entry: &GatewayRoute) -> (&str, &str) {
    let mut parts = entry.name.splitn(4, '/').skip(1);
    (parts.next().unwrap_or(""), parts.next().unwrap_or(""))
}

/// What the proxy serves of `model`, whose statuses it amends (see the module's doc).
/// `gateways` are the objects translated, for their listeners' protocols.
pub fn served(model: &mut Model, gateways: &[Arc<Gateway>]) -> Served {
    served_after(model, gateways, None)
}

/// [`served`], keeping from `previous` the routes and table of each address whose entries
/// are the same (the same `Arc`s, in the same order: the translation kept every route on
/// it): a change builds again only the addresses it concerns.
pub fn served_after(
    model: &mut Model,
    gateways: &[Arc<Gateway>],
    previous: Option<&Served>,
) -> Served {
    let certs = std::mem::take(&mut model.certs);
    let with_certs: HashSet<(&str, &str, &str)> = certs
        .iter()
        .map(|c| {
            (
                c.namespace.as_str(),
                c.gateway.as_str(),
                c.listener.as_str(),
            )
        })
        .collect();
    // HTTPS listeners without certificates (not programmed) serve nothing.
    let https: HashSet<(&str, &str, &str)> = gateways
        .iter()
        .flat_map(|g| {
            let ns = g.metadata.namespace.as_deref().unwrap_or("");
            let name = g.metadata.name.as_deref().unwrap_or("");
            g.spec
                .listeners
                .iter()
                .filter(|l| l.protocol == "HTTPS")
                .map(move |l| (ns, name, l.name.as_str()))
        })
        .filter(|k| !with_certs.contains(k))
        .collect();
    let addresses: HashMap<(&str, &str), IpAddr> = model
        .gateways
        .iter()
        .filter_map(|g| {
            Some((
                (g.namespace.as_str(), g.name.as_str()),
                *g.addresses.first()?,
            ))
        })
        .collect();
    // Each address's entries, with their place in the model's order.
    let mut by_addr: BTreeMap<SocketAddr, Vec<(usize, &Arc<GatewayRoute>)>> = BTreeMap::new();
    for (index, e) in model.routes.iter().enumerate() {
        let l = &e.listener;
        if https.contains(&(
            l.namespace.as_str(),
            l.gateway.as_str(),
            l.listener.as_str(),
        )) {
            continue;
        }
        let Some(ip) = addresses.get(&(l.namespace.as_str(), l.gateway.as_str())) else {
            continue;
        };
        by_addr
            .entry(SocketAddr::new(*ip, l.port))
            .or_default()
            .push((index, e));
    }
    // Every bound address serves, with routes or none (its 404s).
    for g in &model.gateways {
        let ns = g.namespace.as_str();
        for l in g.listeners.iter().filter(|l| listening(l)) {
            if https.contains(&(ns, g.name.as_str(), l.name.as_str())) {
                continue;
            }
            let Some(ip) = g.addresses.first() else {
                continue;
            };
            if let Some(port) = port_of(gateways, ns, &g.name, &l.name) {
                by_addr.entry(SocketAddr::new(*ip, port)).or_default();
            }
        }
    }
    let mut tls_of: BTreeMap<SocketAddr, Vec<&ListenerCerts>> = BTreeMap::new();
    for c in &certs {
        let Some(ip) = addresses.get(&(c.namespace.as_str(), c.gateway.as_str())) else {
            continue;
        };
        if let Some(port) = port_of(gateways, &c.namespace, &c.gateway, &c.listener) {
            tls_of
                .entry(SocketAddr::new(*ip, port))
                .or_default()
                .push(c);
        }
    }
    // On an address Gateways share, the older Gateway's listener keeps a hostname both
    // name (creation time, then namespace and name, as the spec orders conflicting
    // objects): its certificate is listed first, and the SNI resolver takes the first
    // of a name. A stable sort: a Gateway's own listeners stay in their order.
    let age = |c: &&ListenerCerts| {
        let g = gateways.iter().find(|g| {
            g.metadata.namespace.as_deref() == Some(c.namespace.as_str())
                && g.metadata.name.as_deref() == Some(c.gateway.as_str())
        });
        (g.is_none(), g.map(|g| super::translate::age(&g.metadata)))
    };
    for listeners in tls_of.values_mut() {
        listeners.sort_by_cached_key(age);
    }
    let before: HashMap<SocketAddr, &ServedListener> = previous
        .iter()
        .flat_map(|p| &p.listeners)
        .map(|l| (l.addr, l))
        .collect();
    Served {
        listeners: by_addr
            .into_iter()
            .map(|(addr, entries)| {
                let tls = tls_of.get(&addr).and_then(|c| server_tls(c));
                let before = before.get(&addr).copied();
                let same = |b: &&ServedListener| {
                    b.entries.len() == entries.len()
                        && b.entries
                            .iter()
                            .zip(&entries)
                            .all(|(b, (_, e))| Arc::ptr_eq(b, e))
                };
                if let Some(b) = before.filter(same) {
                    return ServedListener {
                        addr,
                        routes: b.routes.clone(),
                        table: b.table.clone(),
                        tls,
                        entries: b.entries.clone(),
                        candidates: b.candidates.clone(),
                    };
                }
                before
                    .and_then(|b| changed(b, &entries, tls.clone()))
                    .unwrap_or_else(|| whole(addr, &entries, before, tls))
            })
            .collect(),
    }
}

/// An address's entries: each with its place in the model's order.
type Entries<'m> = [(usize, &'m Arc<GatewayRoute>)];

/// What an address serves, built from its entries, keeping the candidates (with their
/// backends) of those `before` had too.
fn whole(
    addr: SocketAddr,
    entries: &Entries<'_>,
    before: Option<&ServedListener>,
    tls: Option<ServerTls>,
) -> ServedListener {
    // The candidates (and backends) of the entries the last build had here.
    let kept: HashMap<*const GatewayRoute, usize> = before
        .iter()
        .flat_map(|b| b.entries.iter().enumerate())
        .map(|(i, e)| (Arc::as_ptr(e), i))
        .collect();
    let mut routes: BTreeMap<String, Arc<IngressRoute>> = BTreeMap::new();
    let mut candidates = Vec::with_capacity(entries.len());
    for &(_, e) in entries {
        let reused = kept.get(&Arc::as_ptr(e)).and_then(|&i| {
            let b = before?;
            let c = b.candidates.get(i)?.clone();
            for name in backend_names(&c) {
                let at = b.routes.binary_search_by(|r| r.name.as_str().cmp(name));
                routes.insert(name.to_string(), b.routes.get(at.ok()?)?.clone());
            }
            Some(c)
        });
        candidates.push(reused.unwrap_or_else(|| Arc::new(candidate(e, route_of(e), &mut routes))));
    }
    ServedListener {
        addr,
        routes: routes.into_values().collect(),
        table: Arc::new(table(placed(entries, &candidates, |_| true))),
        tls,
        entries: entries.iter().map(|(_, e)| (*e).clone()).collect(),
        candidates,
    }
}

/// The table's entries (those `wanted` by host), with their candidates.
fn placed(
    entries: &Entries<'_>,
    candidates: &[Arc<Candidate>],
    wanted: impl Fn(&HostPattern) -> bool,
) -> Vec<Placed> {
    entries
        .iter()
        .zip(candidates)
        .filter(|((_, e), _)| wanted(&e.host))
        .map(|(&(index, e), c)| Placed {
            host: e.host.clone(),
            path: e.path.clone(),
            index,
            candidate: c.clone(),
        })
        .collect()
}

/// What an address serves after a change to some of its entries, made from what it
/// served `before`: the entries it still has keep their candidates and backends, the new
/// ones get theirs, and only the hosts whose entries came or went have their paths built
/// again ([`retable`]), so the cost is what the change concerns plus a walk of the
/// entries. `None` when the address is better built whole: the entries kept are not in
/// their previous order, a wildcard host or `*` is touched (its entries cover the exact
/// hosts), or a kept entry shares a backend route's name with one that came or went.
fn changed(
    b: &ServedListener,
    entries: &Entries<'_>,
    tls: Option<ServerTls>,
) -> Option<ServedListener> {
    let old: HashSet<*const GatewayRoute> = b.entries.iter().map(Arc::as_ptr).collect();
    let new: HashSet<*const GatewayRoute> = entries.iter().map(|(_, e)| Arc::as_ptr(e)).collect();
    let mut candidates: Vec<Arc<Candidate>> = Vec::with_capacity(entries.len());
    let mut kept: Vec<bool> = Vec::with_capacity(entries.len());
    let mut added: BTreeMap<String, Arc<IngressRoute>> = BTreeMap::new();
    let mut removed: HashSet<&str> = HashSet::default();
    let mut touched: HashSet<HostPattern> = HashSet::default();
    let (mut i, mut j) = (0, 0);
    loop {
        match (b.entries.get(i), entries.get(j)) {
            (None, None) => break,
            (Some(o), Some((_, n))) if Arc::ptr_eq(o, n) => {
                candidates.push(b.candidates.get(i)?.clone());
                kept.push(true);
                (i, j) = (i + 1, j + 1);
            }
            (Some(o), _) if !new.contains(&Arc::as_ptr(o)) => {
                touched.insert(o.host.clone());
                removed.extend(backend_names(b.candidates.get(i)?));
                i += 1;
            }
            (_, Some((_, n))) if !old.contains(&Arc::as_ptr(n)) => {
                touched.insert(n.host.clone());
                candidates.push(Arc::new(candidate(n, route_of(n), &mut added)));
                kept.push(false);
                j += 1;
            }
            // A kept entry met out of its previous order.
            _ => return None,
        }
    }
    if touched.iter().any(|h| !matches!(h, HostPattern::Exact(_))) {
        return None;
    }
    if !removed.is_empty() || !added.is_empty() {
        let shared = candidates
            .iter()
            .zip(&kept)
            .filter(|(_, k)| **k)
            .flat_map(|(c, _)| backend_names(c))
            .any(|name| removed.contains(name) || added.contains_key(name));
        if shared {
            return None;
        }
    }
    // The backends: the previous ones (in name order) without those gone, with the new.
    let mut gone: Vec<usize> = removed
        .iter()
        .filter_map(|name| {
            b.routes
                .binary_search_by(|r| r.name.as_str().cmp(name))
                .ok()
        })
        .collect();
    gone.sort_unstable();
    let mut routes = Vec::with_capacity(b.routes.len() + added.len());
    let mut added = added.into_values().peekable();
    for (k, r) in b.routes.iter().enumerate() {
        while let Some(a) = added.next_if(|a| a.name < r.name) {
            routes.push(a);
        }
        if let Some(a) = added.next_if(|a| a.name == r.name) {
            routes.push(a);
        } else if gone.binary_search(&k).is_err() {
            routes.push(r.clone());
        }
    }
    routes.extend(added);
    let wanted = |h: &HostPattern| !matches!(h, HostPattern::Exact(_)) || touched.contains(h);
    let table = retable(&b.table, placed(entries, &candidates, wanted), &touched);
    Some(ServedListener {
        addr: b.addr,
        routes,
        table: Arc::new(table),
        tls,
        entries: entries.iter().map(|(_, e)| (*e).clone()).collect(),
        candidates,
    })
}

/// The certificates of the HTTPS listeners on one address and port: each listener's first
/// certificate for its hostname, the first hostless listener's as the default (else the
/// first listener's).
fn server_tls(listeners: &[&ListenerCerts]) -> Option<ServerTls> {
    let first = |c: &&ListenerCerts| c.certs.first().cloned();
    let default = listeners
        .iter()
        .filter(|c| c.host.is_none())
        .find_map(first)
        .or_else(|| listeners.iter().find_map(first))?;
    Some(ServerTls {
        default,
        by_host: listeners
            .iter()
            .filter_map(|c| Some((c.host.clone()?, c.certs.first()?.clone())))
            .collect(),
        client_ca: None,
        client_cert_optional: false,
    })
}

fn listening(l: &super::types::ListenerStatus<Cond>) -> bool {
    l.conditions
        .iter()
        .any(|c| c.type_ == "Programmed" && c.status)
}

fn port_of(gateways: &[Arc<Gateway>], ns: &str, gateway: &str, listener: &str) -> Option<u16> {
    let g = gateways.iter().find(|g| {
        g.metadata.namespace.as_deref() == Some(ns) && g.metadata.name.as_deref() == Some(gateway)
    })?;
    let l = g.spec.listeners.iter().find(|l| l.name == listener)?;
    u16::try_from(l.port).ok()
}

/// The listeners on an address and port the gateway could not bind (`failed`, with why):
/// `Accepted=False` and `Programmed=False`, reason `PortUnavailable`; a Gateway left with no
/// programmed listener is not programmed either.
pub fn unbound(model: &mut Model, gateways: &[Arc<Gateway>], failed: &[(SocketAddr, String)]) {
    for g in &mut model.gateways {
        let Some(ip) = g.addresses.first().copied() else {
            continue;
        };
        let before = g.listeners.iter().any(listening);
        for l in &mut g.listeners {
            let Some(port) = port_of(gateways, &g.namespace, &g.name, &l.name) else {
                continue;
            };
            let Some((_, why)) = failed.iter().find(|(a, _)| *a == SocketAddr::new(ip, port))
            else {
                continue;
            };
            for c in l
                .conditions
                .iter_mut()
                .filter(|c| c.type_ == "Accepted" || c.type_ == "Programmed")
            {
                c.status = false;
                c.reason = "PortUnavailable";
                c.message = why.clone();
            }
        }
        if before && !g.listeners.iter().any(listening) {
            for c in g.conditions.iter_mut().filter(|c| c.type_ == "Programmed") {
                c.status = false;
                c.reason = "Invalid";
                c.message = "no listener is programmed: see their conditions".into();
            }
        }
    }
}
