//! The compiled, immutable state the gateway serves from.
//!
//! A validated [`Config`] compiles into one [`Snapshot`]: per listener its routing table and
//! TLS config, per route its upstream pool (pooled client, TLS, round-robin state), and the
//! tenants, per leaf cluster its client and pod reflector, and the pod index they feed.
//! The gateway holds the current one in an `ArcSwap`; a request (or a new
//! connection) loads it once at its start and uses only that, so a reload is a single
//! store and whatever started on the old snapshot finishes on it. Nothing here changes
//! after `build` returns, apart from the upstreams' own counters.

pub mod tls;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

use crate::config::ConfigErrors;
use crate::config::{
    BandwidthConfig, Config, DirectResponse, ListenerConfig, RouteAction, Timeouts,
};
use crate::kube::{Leaf, LeafError, PodIndex};
use crate::limit::{self, Limiter, SharedLimits};
use crate::metrics::Metrics;
use crate::plugins::TenantPlugins;
use crate::proxy::upstream::Upstream;
use crate::routing::Router;

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
}

/// A listener's share of the snapshot.
pub struct ListenerState {
    pub config: ListenerConfig,
    pub router: Router<Arc<Route>>,
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

pub struct Tenant {
    pub name: String,
    pub bandwidth: BandwidthConfig,
    /// The tenant's total, shared by all its connections on every route.
    pub totals: SharedLimits,
    /// The tenant's policy plugins, compiled and ready.
    pub plugins: Arc<TenantPlugins>,
}

pub struct Route {
    pub name: String,
    pub action: Action,
    pub tenant: Option<Arc<Tenant>>,
    pub bandwidth: BandwidthConfig,
    /// The route's total, shared by all its connections.
    pub totals: SharedLimits,
    pub timeouts: Timeouts,
}

impl Route {
    /// The limiters of a new hijacked connection, `(client -> upstream, upstream ->
    /// client)`: its own per-connection bucket (the route's setting, else the tenant's),
    /// then the route's total, then the tenant's total.
    pub fn connection_limiters(&self) -> (Limiter, Limiter) {
        let tenant = self.tenant.as_deref();
        let per_connection = self
            .bandwidth
            .per_connection
            .or(tenant.and_then(|t| t.bandwidth.per_connection));
        let mut shared = vec![&self.totals];
        if let Some(t) = tenant {
            shared.push(&t.totals);
        }
        limit::connection_limiters(per_connection, &shared)
    }
}

pub enum Action {
    Direct(DirectResponse),
    /// Shared with the next snapshot when a reload leaves the route's upstream unchanged.
    Proxy(Arc<Upstream>),
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
    /// lets old and new connections each spend a full one.
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
        let previous_routes: HashMap<&str, &Route> = previous
            .map(|p| p.routes.iter().map(|r| (r.name.as_str(), &**r)).collect())
            .unwrap_or_default();

        let routes = config
            .routes
            .iter()
            .map(|r| {
                let action = match &r.action {
                    RouteAction::Direct(d) => Action::Direct(d.clone()),
                    RouteAction::Proxy(u) => {
                        let kept =
                            previous_routes
                                .get(r.name.as_str())
                                .and_then(|b| match &b.action {
                                    Action::Proxy(up) if up.built_from(u, r.timeouts) => {
                                        Some(up.clone())
                                    }
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
                let totals = match previous_routes.get(r.name.as_str()) {
                    Some(b) if b.bandwidth.total == r.bandwidth.total => b.totals.clone(),
                    _ => SharedLimits::new(r.bandwidth.total),
                };
                Ok(Arc::new(Route {
                    name: r.name.clone(),
                    action,
                    tenant: r.tenant.as_ref().and_then(|t| tenants.get(t).cloned()),
                    bandwidth: r.bandwidth,
                    totals,
                    timeouts: r.timeouts,
                }))
            })
            .collect::<Result<Vec<_>, BuildError>>()?;

        let listeners = config
            .listeners
            .iter()
            .map(|l| {
                let entries = config.routes.iter().zip(&routes).filter(|(rc, _)| {
                    rc.listeners
                        .as_ref()
                        .is_none_or(|names| names.contains(&l.name))
                });
                let router = Router::new(
                    entries.map(|(rc, route)| (rc.host.clone(), rc.path.clone(), route.clone())),
                );
                let tls = l
                    .tls
                    .as_ref()
                    .map(tls::server_config)
                    .transpose()
                    .map_err(|source| BuildError::ListenerTls {
                        listener: l.name.clone(),
                        source,
                    })?;
                Ok((
                    l.name.clone(),
                    ListenerState {
                        config: l.clone(),
                        router,
                        tls,
                    },
                ))
            })
            .collect::<Result<HashMap<_, _>, BuildError>>()?;

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

        Ok(Snapshot {
            generation,
            loaded_at: SystemTime::now(),
            config,
            listeners,
            tenants,
            routes,
            leaves,
            pods,
        })
    }
}
