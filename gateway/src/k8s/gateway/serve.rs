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
use super::table::{Answer, Candidate, Placed, ServedPath, Share, Target, table};
use super::types::Gateway;
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
    pub paths: Arc<Vec<ServedPath>>,
    /// The certificates of its HTTPS listeners (`None`: plain HTTP).
    pub tls: Option<ServerTls>,
    /// The model's entries it was built from, in the model's order: the next build keeps
    /// its routes and table when it has the same ones.
    pub entries: Vec<Arc<GatewayRoute>>,
    /// Each entry's candidate, in the same order: the next build keeps those of the
    /// entries it still has (the same `Arc`), with their Service backends.
    pub candidates: Vec<Arc<Candidate>>,
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
                let same = |b: &&&ServedListener| {
                    b.entries.len() == entries.len()
                        && b.entries
                            .iter()
                            .zip(&entries)
                            .all(|(b, (_, e))| Arc::ptr_eq(b, e))
                };
                if let Some(b) = before.get(&addr).filter(same) {
                    return ServedListener {
                        addr,
                        routes: b.routes.clone(),
                        paths: b.paths.clone(),
                        tls,
                        entries: b.entries.clone(),
                        candidates: b.candidates.clone(),
                    };
                }
                // The candidates (and backends) of the entries the last build had here.
                let kept: HashMap<*const GatewayRoute, usize> = before
                    .get(&addr)
                    .iter()
                    .flat_map(|b| b.entries.iter().enumerate())
                    .map(|(i, e)| (Arc::as_ptr(e), i))
                    .collect();
                let mut routes: BTreeMap<String, Arc<IngressRoute>> = BTreeMap::new();
                let mut candidates = Vec::with_capacity(entries.len());
                for &(_, e) in &entries {
                    let reused = kept.get(&Arc::as_ptr(e)).and_then(|&i| {
                        let b = before.get(&addr)?;
                        let c = b.candidates.get(i)?.clone();
                        for name in backend_names(&c) {
                            let at = b.routes.binary_search_by(|r| r.name.as_str().cmp(name));
                            routes.insert(name.to_string(), b.routes.get(at.ok()?)?.clone());
                        }
                        Some(c)
                    });
                    candidates.push(
                        reused.unwrap_or_else(|| Arc::new(candidate(e, route_of(e), &mut routes))),
                    );
                }
                let placed = entries
                    .iter()
                    .zip(&candidates)
                    .map(|(&(index, e), c)| Placed {
                        host: e.host.clone(),
                        path: e.path.clone(),
                        index,
                        candidate: c.clone(),
                    })
                    .collect();
                ServedListener {
                    addr,
                    routes: routes.into_values().collect(),
                    paths: Arc::new(table(placed)),
                    tls,
                    entries: entries.into_iter().map(|(_, e)| e.clone()).collect(),
                    candidates,
                }
            })
            .collect(),
    }
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
