//! Gateway API routes inside a snapshot: what the Gateway provider serves
//! ([`Served`]: routes of the one route model, by bound address and port), each address's
//! routes compiled as Ingress routes are ([`IngressRoutes::compile`], reusing the previous
//! compilation's upstreams and routes), and one listener per address, named
//! `gateway/<addr>`, which the snapshot serves beside the TOML ones.
//!
//! The gateway binds and stops those listeners' sockets as [`GatewayRoutes::addrs`]
//! changes; the listener, proxy and fast-path code serve them as any other listener.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use http::StatusCode;

use crate::config::{Config, HostPattern, ListenerConfig, ListenerKind};
use crate::k8s::gateway::serve::Served;
use crate::k8s::gateway::table::{Answer, Candidate, Table, Target};
use crate::k8s::ingress::model::Model;
use crate::limit::SharedLimits;
use crate::routing::Router;

use super::choice::{Choice, Rules, Split};
use super::ingress::{IngressRoutes, direct};
use super::route::{Action, Fast, Route, Tenant};

/// The Gateway listeners a snapshot serves.
#[derive(Default)]
pub struct GatewayRoutes {
    /// What they were compiled from; `None` before the provider's first build.
    pub served: Option<Arc<Served>>,
    /// Each bound address's routes, in address order.
    pub listeners: Vec<GatewayListener>,
    /// `[kubernetes.gateway] http1_fast_path`.
    pub http1_fast_path: bool,
    /// The config and tenants they were compiled against: a compilation against the same
    /// ones keeps the router entries of every host whose table did not change.
    basis: Option<Basis>,
}

/// A config and its tenants.
type Basis = (Arc<Config>, HashMap<String, Arc<Tenant>>);

/// A router of Gateway routes.
pub type GatewayRouter = Arc<Router<Arc<Route>>>;

/// One bound address's routes.
pub struct GatewayListener {
    pub addr: SocketAddr,
    /// The Service backends, compiled as Ingress routes are.
    pub routes: IngressRoutes,
    /// The router over the table's hosts and paths: each entry a backend route itself, a
    /// 500, or the candidates to choose among ([`Action::Gateway`]).
    pub router: GatewayRouter,
    /// The table the router was built from (the served listener's).
    table: Arc<Table>,
    /// Hosts whose router entries the last compilation built (`None`: all of them).
    pub built: Option<usize>,
    /// The certificates of its HTTPS listeners and their rustls config (`None`: plain).
    pub tls: Option<(crate::config::ServerTls, Arc<rustls::ServerConfig>)>,
}

impl GatewayRoutes {
    /// What the names of Gateway listeners start with; no `[[listener]]` name may.
    pub const PREFIX: &str = crate::config::GATEWAY_LISTENERS;

    /// The listener name of a Gateway address: `gateway/10.0.0.10:80`.
    pub fn listener_name(addr: SocketAddr) -> String {
        format!("{}{addr}", Self::PREFIX)
    }

    /// Compiles `served` for `config`, reusing what `previous` built for each address:
    /// its compiled backends (as [`IngressRoutes::compile`] reuses them), and, compiled
    /// against the same config and tenants, the router entries of every host whose paths
    /// are the same (`Arc`) in both tables ([`Router::with_hosts`]): a change builds again
    /// only the hosts it touched.
    pub fn compile(
        served: Arc<Served>,
        config: &Arc<Config>,
        tenants: &HashMap<String, Arc<Tenant>>,
        previous: Option<&GatewayRoutes>,
    ) -> GatewayRoutes {
        let same_basis = previous
            .and_then(|p| p.basis.as_ref())
            .is_some_and(|(c, t)| {
                Arc::ptr_eq(c, config)
                    && t.len() == tenants.len()
                    && t.iter()
                        .all(|(name, a)| tenants.get(name).is_some_and(|b| Arc::ptr_eq(a, b)))
            });
        let listeners = served
            .listeners
            .iter()
            .map(|l| {
                let before = previous.and_then(|p| p.listeners.iter().find(|g| g.addr == l.addr));
                let model = Arc::new(Model {
                    routes: l.routes.clone(),
                    ..Model::default()
                });
                let routes =
                    IngressRoutes::compile(model, config, tenants, before.map(|g| &g.routes));
                let targets = Targets {
                    backends: &routes,
                    config,
                    tenants,
                };
                let (router, built) = match before.filter(|_| same_basis) {
                    Some(b) if Arc::ptr_eq(&b.table, &l.table) => (b.router.clone(), Some(0)),
                    Some(b) => match touched(&b.table, &l.table) {
                        Some(hosts) => {
                            let built = hosts.len();
                            let entries = hosts.into_iter().map(|host| {
                                let paths = l.table.get(host).map_or(&[][..], |p| &p[..]);
                                let paths = paths
                                    .iter()
                                    .map(|p| (p.path.clone(), targets.entry(&p.candidates)))
                                    .collect();
                                (host.clone(), paths)
                            });
                            (Arc::new(b.router.with_hosts(entries)), Some(built))
                        }
                        None => (Arc::new(targets.router(&l.table)), None),
                    },
                    None => (Arc::new(targets.router(&l.table)), None),
                };
                let tls = l.tls.as_ref().and_then(|t| match super::tls::server_config(t) {
                    Ok(config) => Some((t.clone(), config)),
                    Err(e) => {
                        tracing::warn!(addr = %l.addr, error = %e, "a Gateway listener's TLS config was refused");
                        None
                    }
                });
                GatewayListener {
                    addr: l.addr,
                    routes,
                    router,
                    table: l.table.clone(),
                    built,
                    tls,
                }
            })
            .collect();
        GatewayRoutes {
            served: Some(served),
            listeners,
            http1_fast_path: (config.kubernetes.as_ref())
                .and_then(|k| k.gateway.as_ref())
                .is_none_or(|g| g.http1_fast_path),
            basis: Some((config.clone(), tenants.clone())),
        }
    }

    /// The addresses to listen on.
    pub fn addrs(&self) -> impl Iterator<Item = SocketAddr> + '_ {
        self.listeners.iter().map(|g| g.addr)
    }

    /// An HTTP listener per address, behind TLS when it has certificates: its config, its
    /// router (the first of one host and path wins, as the model ordered them), and its
    /// rustls config.
    pub fn listeners(
        &self,
    ) -> impl Iterator<
        Item = (
            ListenerConfig,
            GatewayRouter,
            Option<Arc<rustls::ServerConfig>>,
        ),
    > + '_ {
        self.listeners.iter().map(|g| {
            let config = ListenerConfig {
                name: Self::listener_name(g.addr),
                bind: g.addr,
                kind: ListenerKind::Http,
                tls: g.tls.as_ref().map(|(t, _)| t.clone()),
                max_connections: None,
                trusted_proxies: Vec::new(),
                http1_fast_path: self.http1_fast_path,
                allowed_clients: Vec::new(),
                kubernetes_version: None,
            };
            (
                config,
                g.router.clone(),
                g.tls.as_ref().map(|(_, c)| c.clone()),
            )
        })
    }
}

/// The hosts whose paths differ between two tables (in one only, or not the same `Arc`):
/// both are walked in host order, an unchanged host costing a pointer comparison. `None`
/// when most hosts differ (the router is better built whole).
fn touched<'t>(before: &'t Table, after: &'t Table) -> Option<Vec<&'t HostPattern>> {
    let mut touched = Vec::new();
    let (mut old, mut new) = (before.iter().peekable(), after.iter().peekable());
    loop {
        let host = match (old.peek(), new.peek()) {
            (None, None) => break,
            (Some((_, o)), Some((_, n))) if Arc::ptr_eq(o, n) => {
                old.next();
                new.next();
                continue;
            }
            (Some((o, _)), Some((n, _))) => match o.cmp(n) {
                std::cmp::Ordering::Less => old.next().map(|(h, _)| h),
                std::cmp::Ordering::Greater => new.next().map(|(h, _)| h),
                std::cmp::Ordering::Equal => {
                    old.next();
                    new.next().map(|(h, _)| h)
                }
            },
            (Some(_), None) => old.next().map(|(h, _)| h),
            (None, Some(_)) => new.next().map(|(h, _)| h),
        };
        touched.extend(host);
        if touched.len() > before.len().max(after.len()) / 2 {
            return None;
        }
    }
    Some(touched)
}

/// What the candidates of one address resolve their targets against.
struct Targets<'a> {
    /// The compiled backend routes (in name order).
    backends: &'a IngressRoutes,
    config: &'a Config,
    tenants: &'a HashMap<String, Arc<Tenant>>,
}

impl Targets<'_> {
    /// The router over every host and path of `table`.
    fn router(&self, table: &Table) -> Router<Arc<Route>> {
        Router::new(
            table
                .values()
                .flat_map(|paths| paths.iter())
                .map(|p| (p.host.clone(), p.path.clone(), self.entry(&p.candidates))),
        )
    }

    /// The compiled backend route named `name`.
    fn backend(&self, name: &str) -> Option<&Arc<Route>> {
        let at = (self.backends.model_routes())
            .binary_search_by(|m| m.name.as_str().cmp(name))
            .ok()?;
        self.backends.routes.get(at)
    }

    /// The router's entry for `candidates`: the one plain candidate's target itself (the
    /// fast path serves it as an Ingress route), else a route choosing among them (which
    /// the fast path serves too when `Fast::of` finds nothing it lacks).
    fn entry(&self, candidates: &[Arc<Candidate>]) -> Arc<Route> {
        if let [one] = candidates
            && let Some(target) = one.plain()
        {
            return self.target(one, target);
        }
        let choices = candidates.iter().map(|c| self.choice(c)).collect();
        let first = &candidates[0];
        let action = Action::Gateway(Arc::new(Rules { choices }));
        Arc::new(Route {
            name: first.name.clone(),
            source: None,
            fast: Fast::of(&action),
            action,
            tenant: self.tenant(first),
            bandwidth: Default::default(),
            totals: SharedLimits::new(None),
            timeouts: self.config.timeouts,
        })
    }

    /// Candidate `c` as the proxy tries it: its backend routes by weight, or a redirect's
    /// direct answer (its status; the choice adds the `Location`).
    fn choice(&self, c: &Candidate) -> Choice<Arc<Route>> {
        let shares = match &c.answer {
            Answer::Split(shares) => shares
                .iter()
                .map(|s| (s.weight, self.target(c, &s.target)))
                .collect(),
            Answer::Redirect(r) => {
                let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::FOUND);
                let answer = Action::Direct(crate::config::DirectResponse {
                    status,
                    headers: http::HeaderMap::new(),
                    body: bytes::Bytes::new(),
                });
                vec![(1, self.answer(c, answer))]
            }
        };
        Choice::new(c, Split::new(shares))
    }

    /// The backend route of `target`, or a 500 with its reason, counted under the
    /// candidate's name.
    fn target(&self, c: &Candidate, target: &Target) -> Arc<Route> {
        let reason = match target {
            Target::Backend(name) => match self.backend(name) {
                Some(route) => return route.clone(),
                None => "the backend route was not compiled",
            },
            Target::Invalid(reason) => reason.as_str(),
        };
        self.answer(c, direct(StatusCode::INTERNAL_SERVER_ERROR, reason))
    }

    /// A route of candidate `c` that answers with `action` itself.
    fn answer(&self, c: &Candidate, action: Action) -> Arc<Route> {
        Arc::new(Route {
            name: c.name.clone(),
            source: None,
            fast: Fast::of(&action),
            action,
            tenant: self.tenant(c),
            bandwidth: Default::default(),
            totals: SharedLimits::new(None),
            timeouts: self.config.timeouts,
        })
    }

    fn tenant(&self, c: &Candidate) -> Option<Arc<Tenant>> {
        c.tenant.as_ref().and_then(|t| self.tenants.get(t).cloned())
    }
}
