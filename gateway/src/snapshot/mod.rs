//! The compiled, immutable state the gateway serves from.
//!
//! A validated [`Config`] compiles into one [`Snapshot`]: per listener its routing table and
//! TLS config, per route its upstream pool (pooled client, TLS, round-robin state), and the
//! tenants, per leaf cluster its client and pod reflector, and the pod index they feed.
//! The gateway holds the current one in an `ArcSwap`; a request (or a new
//! connection) loads it once at its start and uses only that, so a reload is a single
//! store and whatever started on the old snapshot finishes on it. Nothing here changes
//! after `build` returns, apart from the upstreams' own counters.
//!
//! The Ingress routes (`ingress`) are the other input: the Ingress provider swaps in a
//! snapshot that differs from the current one only by them ([`Snapshot::with_ingress`]),
//! and a config reload compiles the current ones again against the new config. On an
//! ingress listener the router holds the TOML routes first, then the Ingress routes on
//! hosts no TOML route there owns (the others are reported as shadowed); its TLS serves
//! the Ingress certificates after the TOML ones, never for a name the TOML ones cover.

pub mod choice;
pub mod gateway;
pub mod ingress;
mod rewrite;
mod route;
pub mod tls;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::SystemTime;

use crate::config::ConfigErrors;
use crate::config::{Config, HostPattern, ListenerConfig, PathMatch, RouteAction, RouteConfig};
use crate::k8s::access::AccessReviews;
use crate::k8s::ingress::model::HostOwners;
use crate::k8s::{Leaf, LeafError, PodIndex};
use crate::limit::SharedLimits;
use crate::metrics::Metrics;
use crate::plugins::TenantPlugins;
use crate::proxy::upstream::Upstream;
use crate::routing::Router;

pub use self::gateway::GatewayRoutes;
pub use self::ingress::IngressRoutes;
use self::route::PreviousRoutes;
pub use self::route::{Action, Fast, Route, Tenant};

pub struct Snapshot {
    /// 1 for the config leafgate started with, +1 per successful reload.
    pub generation: u64,
    pub loaded_at: SystemTime,
    pub config: Arc<Config>,
    pub listeners: HashMap<String, ListenerState>,
    pub tenants: HashMap<String, Arc<Tenant>>,
    /// Every route, in config order (for `/status`).
    pub routes: Vec<Arc<Route>>,
    /// The leaf clusters, by name. Shared with the next snapshot when a reload leaves a
    /// leaf's config and files unchanged, so its connections and reflector carry on.
    pub leaves: HashMap<String, Arc<Leaf>>,
    /// Which leaves hold which pods; one for the gateway's life, handed from snapshot to
    /// snapshot.
    pub pods: Arc<PodIndex>,
    /// The Ingress routes (`[kubernetes.ingress]`), compiled against this config.
    pub ingress: Arc<IngressRoutes>,
    /// The Gateway API routes (`[kubernetes.gateway]`), compiled against this config; their
    /// listeners (`gateway/<addr>`) are in `listeners`.
    pub gateway: Arc<GatewayRoutes>,
    /// Ingress routes not served because a TOML route on an ingress listener owns their
    /// host (the model refuses them too; this covers a reload before the next build).
    pub shadowed: Vec<Shadowed>,
    /// SubjectAccessReviews at the root cluster, for node-api listeners without
    /// `allowed_clients`; kept (with their cached answers) while the root stays the same.
    pub access: Option<Arc<AccessReviews>>,
}

/// An Ingress route a TOML route wins over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shadowed {
    /// `namespace/name` of the Ingress.
    pub ingress: String,
    pub host: String,
    pub path: String,
    /// The TOML route that owns that host.
    pub route: String,
}

/// A listener's share of the snapshot.
#[derive(Clone)]
pub struct ListenerState {
    pub config: ListenerConfig,
    /// Shared with the next snapshot when an Ingress change leaves it as it is.
    pub router: Arc<Router<Arc<Route>>>,
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

impl ListenerState {
    /// Whether a request for `host` on a connection whose client asked for `sni` is
    /// misdirected ([`tls::misdirected`]): on a Gateway's listener with HTTPS
    /// certificates, when the client sent a server name (a TOML listener routes by host
    /// alone, as before).
    pub fn misdirected(&self, sni: Option<&str>, host: &str) -> bool {
        match (&self.config.tls, sni) {
            (Some(certs), Some(sni)) if self.config.name.starts_with(GatewayRoutes::PREFIX) => {
                tls::misdirected(certs, sni, host)
            }
            _ => false,
        }
    }
}

/// A config that validated but could not be compiled: rustls refused a TLS setting, or a
/// plugin did not compile or fit its world.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("listener `{listener}`: TLS: {source}")]
    ListenerTls {
        listener: String,
        source: rustls::Error,
    },
    #[error("route `{route}`: {source}")]
    Upstream {
        route: String,
        source: crate::proxy::upstream::UpstreamBuildError,
    },
    /// Plugins that do not compile or do not fit their world, each at its config key.
    #[error("{0}")]
    Plugins(ConfigErrors),
    #[error("{0}")]
    Leaf(#[from] LeafError),
}

impl Snapshot {
    /// Compiles `config`. Bandwidth totals whose tenant or route and limit are unchanged
    /// from `previous` keep their buckets: a reload neither refills a tenant's budget nor
    /// lets old and new connections each spend a full one. Routes of `previous` that
    /// `config` leaves as they were (and that name no tenant) are kept whole.
    ///
    /// Every plugin is compiled (or found in the process-wide cache by content) and checked
    /// against its world here, on the caller's (blocking) thread; any failure fails the
    /// build, so a reload with a broken plugin leaves the running snapshot as it was.
    ///
    /// Leaves whose config and files are unchanged from `previous` are kept; new or changed
    /// ones start their pod reflector on the current runtime (the caller's), which must be
    /// the gateway's control runtime.
    pub fn build(
        config: Arc<Config>,
        generation: u64,
        previous: Option<&Snapshot>,
        metrics: &Metrics,
    ) -> Result<Snapshot, BuildError> {
        let mut plugins = crate::plugins::load(&config, &metrics.plugins)
            .map_err(|e| BuildError::Plugins(ConfigErrors(e)))?;
        let tenants: HashMap<String, Arc<Tenant>> = config
            .tenants
            .iter()
            .map(|t| {
                let before = previous.and_then(|p| p.tenants.get(&t.name));
                let totals = match before {
                    Some(b) if b.bandwidth.total == t.bandwidth.total => b.totals.clone(),
                    _ => SharedLimits::new(t.bandwidth.total),
                };
                let plugins = plugins
                    .take(&t.name)
                    .unwrap_or_else(|| Arc::new(TenantPlugins::none(&t.name)));
                let tenant = Tenant {
                    name: t.name.clone(),
                    bandwidth: t.bandwidth,
                    totals,
                    plugins,
                };
                (t.name.clone(), Arc::new(tenant))
            })
            .collect();
        let mut previous_routes = PreviousRoutes::new(previous.map_or(&[][..], |p| &p.routes));

        let routes = config
            .routes
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let before = previous_routes.find(i, r);
                if let Some(same) = before.filter(|b| b.built_from(r)) {
                    // A reload of a large file changes few routes: keep the others whole.
                    return Ok(same.clone());
                }
                let action = match &r.action {
                    RouteAction::Direct(d) => Action::Direct(d.clone()),
                    RouteAction::Proxy(u) => {
                        let kept = before.and_then(|b| match &b.action {
                            Action::Proxy(up) if up.built_from(u, r.timeouts) => Some(up.clone()),
                            _ => None,
                        });
                        let upstream = match kept {
                            Some(up) => up,
                            None => Arc::new(Upstream::new(u, r.timeouts).map_err(|source| {
                                BuildError::Upstream {
                                    route: r.name.clone(),
                                    source,
                                }
                            })?),
                        };
                        Action::Proxy(upstream)
                    }
                };
                let totals = match before {
                    Some(b) if b.bandwidth.total == r.bandwidth.total => b.totals.clone(),
                    _ => SharedLimits::new(r.bandwidth.total),
                };
                let fast = Fast::of(&action);
                Ok(Arc::new(Route {
                    name: r.name.clone(),
                    source: Some(r.clone()),
                    action,
                    tenant: r.tenant.as_ref().and_then(|t| tenants.get(t).cloned()),
                    bandwidth: r.bandwidth,
                    totals,
                    timeouts: r.timeouts,
                    fast,
                }))
            })
            .collect::<Result<Vec<_>, BuildError>>()?;

        let ingress = match (
            &config.kubernetes.as_ref().and_then(|k| k.ingress.as_ref()),
            previous.and_then(|p| p.ingress.model.clone()),
        ) {
            (Some(_), Some(model)) => Arc::new(IngressRoutes::compile(
                model,
                &config,
                &tenants,
                previous.map(|p| &*p.ingress),
            )),
            _ => Arc::new(IngressRoutes::default()),
        };
        let gateway = match (
            &config.kubernetes.as_ref().and_then(|k| k.gateway.as_ref()),
            previous.and_then(|p| p.gateway.served.clone()),
        ) {
            (Some(_), Some(served)) => Arc::new(GatewayRoutes::compile(
                served,
                &config,
                &tenants,
                previous.map(|p| &*p.gateway),
            )),
            _ => Arc::new(GatewayRoutes::default()),
        };
        let (mut listeners, shadowed) = assemble(&config, &routes, &ingress, None)?;
        add_gateway_listeners(&mut listeners, &gateway);

        let pods = previous.map_or_else(PodIndex::new, |p| p.pods.clone());
        let leaves = config
            .leaves
            .iter()
            .map(|l| {
                let kept = previous
                    .and_then(|p| p.leaves.get(&l.name))
                    .filter(|leaf| leaf.built_from(l));
                let leaf = match kept {
                    Some(leaf) => leaf.clone(),
                    None => Arc::new(Leaf::new(l, &pods, Some(metrics.leaves.clone()))?),
                };
                Ok((l.name.clone(), leaf))
            })
            .collect::<Result<HashMap<_, _>, BuildError>>()?;
        // Once every leaf is built: a failed build leaves the running leaves' kinds alone.
        // Without a kube-api listener no tenant is served any, and no leaf watches them.
        let fronted = config
            .listeners
            .iter()
            .any(|l| l.kind == crate::config::ListenerKind::KubeApi);
        let served: &[crate::config::TenantConfig] = if fronted { &config.tenants } else { &[] };
        for leaf in leaves.values() {
            leaf.serve_kinds(served);
        }
        let reviewed = config.listeners.iter().any(|l| {
            l.kind == crate::config::ListenerKind::NodeApi && l.allowed_clients.is_empty()
        });
        let access = match &config.kubernetes {
            Some(k) if reviewed => Some(
                previous
                    .and_then(|p| p.access.clone())
                    .filter(|a| a.built_from(k))
                    .unwrap_or_else(|| Arc::new(AccessReviews::new(k))),
            ),
            _ => None,
        };

        Ok(Snapshot {
            generation,
            loaded_at: SystemTime::now(),
            config,
            listeners,
            tenants,
            routes,
            leaves,
            pods,
            ingress,
            gateway,
            shadowed,
            access,
        })
    }

    /// This snapshot with `model`'s Ingress routes in place of its own: everything else
    /// (config, tenants, TOML routes, leaves, the TLS of listeners that serve no Ingress
    /// routes) is shared, and Ingress upstreams and routes that did not change are kept.
    pub fn with_ingress(
        &self,
        model: Arc<crate::k8s::ingress::model::Model>,
    ) -> Result<Snapshot, BuildError> {
        let ingress = Arc::new(IngressRoutes::compile(
            model,
            &self.config,
            &self.tenants,
            Some(&self.ingress),
        ));
        let touched = ingress::touched_hosts(&self.ingress, &ingress);
        let (mut listeners, shadowed) = assemble(
            &self.config,
            &self.routes,
            &ingress,
            Some(Previous {
                snapshot: self,
                touched: touched.as_ref(),
            }),
        )?;
        add_gateway_listeners(&mut listeners, &self.gateway);
        Ok(Snapshot {
            generation: self.generation,
            loaded_at: self.loaded_at,
            config: self.config.clone(),
            listeners,
            tenants: self.tenants.clone(),
            routes: self.routes.clone(),
            leaves: self.leaves.clone(),
            pods: self.pods.clone(),
            ingress,
            gateway: self.gateway.clone(),
            shadowed,
            access: self.access.clone(),
        })
    }

    /// This snapshot with `served`'s Gateway routes and listeners in place of its own;
    /// everything else is shared, the TOML and Ingress listeners' routers and TLS too.
    pub fn with_gateway(&self, served: Arc<crate::k8s::gateway::serve::Served>) -> Snapshot {
        let gateway = Arc::new(GatewayRoutes::compile(
            served,
            &self.config,
            &self.tenants,
            Some(&self.gateway),
        ));
        let mut listeners: HashMap<String, ListenerState> = self
            .listeners
            .iter()
            .filter(|(name, _)| !name.starts_with(GatewayRoutes::PREFIX))
            .map(|(name, l)| (name.clone(), l.clone()))
            .collect();
        add_gateway_listeners(&mut listeners, &gateway);
        Snapshot {
            generation: self.generation,
            loaded_at: self.loaded_at,
            config: self.config.clone(),
            listeners,
            tenants: self.tenants.clone(),
            routes: self.routes.clone(),
            leaves: self.leaves.clone(),
            pods: self.pods.clone(),
            ingress: self.ingress.clone(),
            gateway,
            shadowed: self.shadowed.clone(),
            access: self.access.clone(),
        }
    }
}

/// Adds `gateway`'s listeners (`gateway/<addr>`) to `listeners`.
fn add_gateway_listeners(listeners: &mut HashMap<String, ListenerState>, gateway: &GatewayRoutes) {
    for (config, router, tls) in gateway.listeners() {
        let state = ListenerState {
            config,
            router,
            tls,
        };
        listeners.insert(state.config.name.clone(), state);
    }
}

/// The snapshot a new one differs from only by its Ingress routes, and the hosts whose
/// Ingress routes changed (`None`: too many to tell, build every router again).
struct Previous<'a> {
    snapshot: &'a Snapshot,
    touched: Option<&'a HashSet<HostPattern>>,
}

/// Every listener's router and TLS: the TOML routes that serve it, then, on ingress
/// listeners, the Ingress routes no TOML route there claims; the TOML certificates, then
/// the Ingress ones. Given the `previous` snapshot (same config), a listener that serves no
/// Ingress routes keeps its router and TLS, and an ingress listener's router is the
/// previous one with only the touched hosts built again.
fn assemble(
    config: &Config,
    routes: &[Arc<Route>],
    ingress: &IngressRoutes,
    previous: Option<Previous<'_>>,
) -> Result<(HashMap<String, ListenerState>, Vec<Shadowed>), BuildError> {
    let ingress_listeners: &[String] = config
        .kubernetes
        .as_ref()
        .and_then(|k| k.ingress.as_ref())
        .map_or(&[], |i| &i.listeners);
    let certs = ingress.model.as_ref().map_or(&[][..], |m| &m.certs[..]);
    let mut shadowed: Vec<Shadowed> = Vec::new();
    let mut reported: HashSet<&str> = HashSet::new();
    let mut listeners = HashMap::with_capacity(config.listeners.len());
    for l in &config.listeners {
        let toml: Vec<(&Arc<RouteConfig>, &Arc<Route>)> = config
            .routes
            .iter()
            .zip(routes)
            .filter(|(rc, _)| {
                rc.listeners
                    .as_ref()
                    .is_none_or(|names| names.contains(&l.name))
            })
            .collect();
        let serves_ingress = ingress_listeners.contains(&l.name);
        let before = previous
            .as_ref()
            .and_then(|p| Some((p.snapshot.listeners.get(&l.name)?, p.touched)));
        // The hosts the TOML routes here own: an Ingress route on one is not served. The
        // model refuses those already; this holds between a reload and the next build.
        let mut owners = HostOwners::default();
        if serves_ingress {
            for (rc, _) in &toml {
                owners.add(&rc.host, &rc.name);
            }
        }
        // Which Ingress routes this router is built from: all of them, or those on the
        // touched hosts.
        let wanted = |host: &HostPattern| match before {
            Some((_, Some(touched))) => touched.contains(host),
            _ => true,
        };
        let mut ingress_entries: Vec<(&HostPattern, &PathMatch, &Arc<Route>)> = Vec::new();
        if serves_ingress {
            for (m, r) in ingress.model_routes().iter().zip(&ingress.routes) {
                match owners.owner_of(&m.host) {
                    Some(winner) if reported.insert(m.name.as_str()) => {
                        shadowed.push(Shadowed {
                            ingress: format!("{}/{}", m.ingress.namespace, m.ingress.name),
                            host: m.host.to_string(),
                            path: m.path.to_string(),
                            route: winner.to_string(),
                        });
                    }
                    Some(_) => {}
                    None if wanted(&m.host) => ingress_entries.push((&m.host, &m.path, r)),
                    None => {}
                }
            }
        }
        let router = match before {
            // Same config: the TOML routes are the same, and so is a router without
            // Ingress routes.
            Some((prev, _)) if !serves_ingress => prev.router.clone(),
            Some((prev, Some(touched))) => {
                let mut by_host: HashMap<&HostPattern, Vec<(PathMatch, Arc<Route>)>> =
                    touched.iter().map(|h| (h, Vec::new())).collect();
                let entries = toml
                    .iter()
                    .map(|(rc, r)| (&rc.host, &rc.path, *r))
                    .chain(ingress_entries);
                for (host, path, route) in entries {
                    if let Some(paths) = by_host.get_mut(host) {
                        paths.push((path.clone(), route.clone()));
                    }
                }
                Arc::new(
                    prev.router
                        .with_hosts(by_host.into_iter().map(|(h, paths)| (h.clone(), paths))),
                )
            }
            _ => Arc::new(Router::new(
                toml.iter()
                    .map(|(rc, r)| (&rc.host, &rc.path, *r))
                    .chain(ingress_entries)
                    .map(|(host, path, route)| (host.clone(), path.clone(), route.clone())),
            )),
        };
        // Same config: a listener's TLS changes only when it serves the Ingress
        // certificates and they changed (a Secret rotated, a host added).
        let kept = previous.as_ref().map(|p| p.snapshot).filter(|prev| {
            !serves_ingress
                || same_certs(
                    prev.ingress
                        .model
                        .as_ref()
                        .map_or(&[][..], |m| &m.certs[..]),
                    certs,
                )
        });
        let tls = match (&l.tls, kept) {
            (None, _) => None,
            (Some(_), Some(prev)) => prev.listeners.get(&l.name).and_then(|p| p.tls.clone()),
            (Some(t), _) => {
                let with_certs;
                let t = if serves_ingress && !certs.is_empty() {
                    let mut all = t.clone();
                    // Never an Ingress certificate for a name the TOML ones or routes own.
                    let mut toml_certs = HostOwners::default();
                    for (host, _) in &t.by_host {
                        toml_certs.add(host, "");
                    }
                    all.by_host.extend(
                        certs
                            .iter()
                            .filter(|(h, _)| {
                                toml_certs.owner_of(h).is_none() && owners.owner_of(h).is_none()
                            })
                            .cloned(),
                    );
                    with_certs = all;
                    &with_certs
                } else {
                    t
                };
                Some(
                    tls::server_config(t).map_err(|source| BuildError::ListenerTls {
                        listener: l.name.clone(),
                        source,
                    })?,
                )
            }
        };
        listeners.insert(
            l.name.clone(),
            ListenerState {
                config: l.clone(),
                router,
                tls,
            },
        );
    }
    Ok((listeners, shadowed))
}

/// Whether two certificate lists serve the same certificates for the same hosts, in order
/// (a key must match its certificate, so equal chains mean equal keys).
fn same_certs(
    a: &[(HostPattern, Arc<rustls::sign::CertifiedKey>)],
    b: &[(HostPattern, Arc<rustls::sign::CertifiedKey>)],
) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|((ha, ca), (hb, cb))| ha == hb && (Arc::ptr_eq(ca, cb) || ca.cert == cb.cert))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const BASE: &str = "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n\
        [[tenant]]\nname = \"t\"\n\
        [[route]]\nhost = \"a\"\ndirect = { status = 200, body = \"a\" }\n\
        [[route]]\nhost = \"b\"\nbackends = [\"127.0.0.1:1\"]\n\
        [[route]]\nhost = \"c\"\ntenant = \"t\"\ndirect = { status = 200, body = \"c\" }\n\
        [[route]]\nhost = \"d\"\ndirect = { status = 200, body = \"d\", headers = { x = \"1\" } }\n";

    fn build(src: &str, previous: Option<&Snapshot>) -> Snapshot {
        let config = Config::parse(Path::new("t.toml"), src).unwrap();
        Snapshot::build(Arc::new(config), 1, previous, &Metrics::new()).unwrap()
    }

    /// The fast path's verdict is made once, from the route: every feature it does not
    /// implement (a direct answer, HTTP/2 or TLS backends) sends the route to hyper, and
    /// the listener's plan asks nothing else of the route.
    #[test]
    fn a_route_with_a_feature_the_fast_path_lacks_is_served_by_hyper() {
        let s = build(
            "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n\
             [[route]]\nhost = \"plain\"\nbackends = [\"127.0.0.1:1\", \"127.0.0.1:2\"]\n\
             [[route]]\nhost = \"direct\"\ndirect = { status = 200, body = \"d\" }\n\
             [[route]]\nhost = \"h2c\"\nbackends = [\"127.0.0.1:1\"]\nprotocol = \"h2c\"\n\
             [[route]]\nhost = \"tls\"\nbackends = [\"https://127.0.0.1:1\"]\n",
            None,
        );
        let verdict = |host: &str| match &s.listeners["web"].router.lookup(host, "/").unwrap().fast
        {
            Fast::Proxy(upstream) => {
                assert!(
                    upstream.raw().is_some(),
                    "{host}: a fast route has a raw pool"
                );
                "fast"
            }
            Fast::Choose => "choose",
            Fast::Hyper(why) => why,
        };
        assert_eq!(verdict("plain"), "fast");
        assert_eq!(verdict("direct"), "a direct answer");
        assert_eq!(verdict("h2c"), "TLS or HTTP/2 backends");
        assert_eq!(verdict("tls"), "TLS or HTTP/2 backends");
    }

    /// What a route serves, for comparing a reused route with a freshly built one.
    fn served(s: &Snapshot, host: &str) -> String {
        let r = s.listeners["web"].router.lookup(host, "/").unwrap();
        let action = match &r.action {
            Action::Direct(d) => format!("{} {:?} {:?}", d.status, d.headers, d.body),
            Action::Proxy(_) => "proxy".to_string(),
            Action::Gateway(_) => "gateway".to_string(),
        };
        let tenant = r.tenant.as_ref().map(|t| t.name.as_str());
        format!(
            "{} {action} {tenant:?} {:?} {:?}",
            r.name, r.bandwidth, r.timeouts
        )
    }

    #[tokio::test]
    async fn unchanged_routes_are_kept_and_serve_as_a_fresh_build_does() {
        let first = build(BASE, None);
        let edited = BASE.replace("body = \"d\"", "body = \"d2\"").replace(
            "[[route]]\nhost = \"a\"",
            "[[route]]\nhost = \"new\"\ndirect = { status = 204 }\n[[route]]\nhost = \"a\"",
        );
        let next = build(&edited, Some(&first));
        let fresh = build(&edited, None);
        let same = |a: &Snapshot, b: &Snapshot, host: &str| {
            Arc::ptr_eq(
                a.listeners["web"].router.lookup(host, "/").unwrap(),
                b.listeners["web"].router.lookup(host, "/").unwrap(),
            )
        };
        // Kept: unchanged and no tenant. Built again: changed, new, or naming a tenant
        // (which must be the new snapshot's tenant).
        assert!(same(&first, &next, "a") && same(&first, &next, "b"));
        assert!(!same(&first, &next, "c") && !same(&first, &next, "d"));
        let c = next.listeners["web"].router.lookup("c", "/").unwrap();
        assert!(Arc::ptr_eq(c.tenant.as_ref().unwrap(), &next.tenants["t"]));
        for host in ["new", "a", "b", "c", "d"] {
            assert_eq!(served(&next, host), served(&fresh, host), "{host}");
        }
        assert_eq!(next.routes.len(), fresh.routes.len());
        let b = next.listeners["web"].router.lookup("b", "/").unwrap();
        let b_config = fresh.config.routes.iter().find(|r| r.name == "b/").unwrap();
        match (&b.action, &b_config.action) {
            (Action::Proxy(up), RouteAction::Proxy(u)) => {
                assert!(up.built_from(u, b_config.timeouts))
            }
            _ => panic!("route b proxies"),
        }
    }

    /// A config of the routes `hosts`, each with a total limit (so that a rebuilt route is
    /// seen to keep its bucket), `h5`'s body being `body5`.
    fn hosts_config(hosts: &[String], body5: &str) -> String {
        let mut text = String::from("[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n");
        for h in hosts {
            let body = if h == "h5" { body5 } else { h };
            text.push_str(&format!(
                "[[route]]\nhost = \"{h}\"\ndirect = {{ status = 200, body = \"{body}\" }}\nbandwidth = {{ total = \"1MiB/s\" }}\n"
            ));
        }
        text
    }

    /// What an edit of the route hosts does, and the edit.
    type Edit = (&'static str, fn(&mut Vec<String>));

    #[tokio::test]
    async fn routes_reused_by_the_parse_cache_are_found_in_place_or_by_name() {
        let path = Path::new("t.toml");
        let metrics = Metrics::new();
        let mut cache = crate::config::ParseCache::new();
        let mut hosts: Vec<String> = (0..20).map(|i| format!("h{i}")).collect();
        let config = Config::parse_cached(path, &hosts_config(&hosts, "h5"), &mut cache).unwrap();
        let mut previous = Snapshot::build(Arc::new(config), 1, None, &metrics).unwrap();
        let route = |s: &Snapshot, host: &str| s.listeners["web"].router.lookup(host, "/").cloned();
        let edits: [Edit; 4] = [
            ("nothing moved", |_| {}),
            // More than the routes found by scanning: the index by name takes over.
            ("routes inserted first", |h| {
                h.splice(0..0, (0..12).map(|i| format!("new{i}")));
            }),
            ("routes removed", |h| {
                h.retain(|h| h != "h0" && h != "h1" && h != "new3");
            }),
            ("a route moved", |h| {
                let at = h.iter().position(|h| h == "h10").unwrap();
                let moved = h.remove(at);
                h.insert(0, moved);
            }),
        ];
        for (round, (what, edit)) in edits.into_iter().enumerate() {
            edit(&mut hosts);
            // h5 changes every round: rebuilt, but it keeps its bucket.
            let text = hosts_config(&hosts, &format!("h5-{round}"));
            let config = Config::parse_cached(path, &text, &mut cache).unwrap();
            let next = Snapshot::build(Arc::new(config), 2, Some(&previous), &metrics).unwrap();
            let fresh = build(&text, None);
            for h in &hosts {
                assert_eq!(served(&next, h), served(&fresh, h), "{what}: {h}");
                let (Some(now), before) = (route(&next, h), route(&previous, h)) else {
                    panic!("{what}: {h} is not routed");
                };
                let Some(before) = before else {
                    continue;
                };
                let totals_kept = Arc::ptr_eq(
                    now.totals.up.as_ref().unwrap(),
                    before.totals.up.as_ref().unwrap(),
                );
                assert!(totals_kept, "{what}: {h} lost its bucket");
                assert_eq!(Arc::ptr_eq(&now, &before), h != "h5", "{what}: {h}");
            }
            assert_eq!(next.routes.len(), hosts.len(), "{what}");
            previous = next;
        }
    }
}
