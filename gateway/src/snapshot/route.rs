//! A compiled route and what it answers with, the tenant it counts against, and how a
//! reload finds the route a new one replaces (so unchanged routes and their upstreams are
//! shared between snapshots).

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::{BandwidthConfig, DirectResponse, RouteAction, RouteConfig, Timeouts};
use crate::limit::{self, Limiter, SharedLimits};
use crate::plugins::TenantPlugins;
use crate::proxy::upstream::Upstream;

use super::choice::{Choice, Rules};

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
    /// The TOML route this was built from (`None` for an Ingress route): a reload whose
    /// config hands over the same one (the parse cache reused it) keeps this route as it is.
    pub source: Option<Arc<RouteConfig>>,
    pub action: Action,
    pub tenant: Option<Arc<Tenant>>,
    pub bandwidth: BandwidthConfig,
    /// The route's total, shared by all its connections.
    pub totals: SharedLimits,
    pub timeouts: Timeouts,
    /// Whether the HTTP/1.1 fast path serves this route's requests ([`Fast::of`]).
    pub fast: Fast,
}

/// Whether a route's requests may take the HTTP/1.1 fast path (`listener::fast`), decided
/// once when the snapshot is built. The fast path implements a route that proxies to
/// plain HTTP/1.1 backends with its timeouts and retries, and nothing more: every other
/// feature of a route sends its requests to hyper's path, and this is the one place that
/// says so. A route feature added later is taught here (the listener asks nothing else
/// of the route), or its requests would silently skip it on the fast path.
pub enum Fast {
    /// Served on the fast path, through this upstream's raw pool.
    Proxy(Arc<Upstream>),
    /// Gateway API candidates served on the fast path: each request's chosen by its
    /// head, through one of the candidate's backend routes (each a [`Fast::Proxy`]), its
    /// header modifiers and rewrite written into the heads.
    Choose,
    /// Served by hyper, for this reason.
    Hyper(&'static str),
}

impl Fast {
    /// The fast path's verdict on a route that answers with `action`.
    pub fn of(action: &Action) -> Fast {
        match action {
            Action::Direct(_) => Fast::Hyper("a direct answer"),
            Action::Gateway(rules) => rules
                .choices
                .iter()
                .find_map(|c| {
                    c.slow().or_else(|| {
                        c.split.routes().find_map(|r| match &r.fast {
                            Fast::Proxy(_) => None,
                            Fast::Choose => Some("a choice of choices"),
                            Fast::Hyper(why) => Some(*why),
                        })
                    })
                })
                .map_or(Fast::Choose, Fast::Hyper),
            Action::Proxy(upstream) if upstream.raw().is_none() => {
                Fast::Hyper("TLS or HTTP/2 backends")
            }
            Action::Proxy(upstream) => Fast::Proxy(upstream.clone()),
        }
    }

    pub fn is_fast(&self) -> bool {
        !matches!(self, Fast::Hyper(_))
    }
}

impl Route {
    /// The route that serves `req` when the router found this one for it, and the Gateway
    /// API candidate that chose it (whose filters apply); `None`: no candidate's matches
    /// hold (a 404).
    pub fn pick<B>(self: &Arc<Self>, req: &http::Request<B>) -> Option<Picked<'_>> {
        let Action::Gateway(rules) = &self.action else {
            return Some((self.clone(), None));
        };
        let choice = rules.choose(req)?;
        Some((choice.split.pick().clone(), Some(choice)))
    }

    /// The Gateway API candidate, and its place, that a request of `method`, `header`
    /// (the first value by lowercase name) and `query` satisfies (`Rules::choose_by`);
    /// `None` too for a route that is no Gateway API entry.
    pub fn choice_by<'h>(
        &self,
        method: &str,
        header: impl Fn(&str) -> Option<&'h [u8]>,
        query: Option<&str>,
    ) -> Option<(usize, &Choice<Arc<Route>>)> {
        match &self.action {
            Action::Gateway(rules) => rules.choose_by(method, header, query),
            _ => None,
        }
    }

    /// Candidate `i` of a Gateway API entry.
    pub fn choice(&self, i: usize) -> Option<&Choice<Arc<Route>>> {
        match &self.action {
            Action::Gateway(rules) => rules.choices.get(i),
            _ => None,
        }
    }

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

impl Route {
    /// Whether building `config` would give this route again: same action, limits and
    /// timeouts, and no tenant (tenants are built afresh on every reload, so a route that
    /// names one must point at the new one).
    pub(super) fn built_from(&self, config: &Arc<RouteConfig>) -> bool {
        if self.tenant.is_none()
            && self
                .source
                .as_ref()
                .is_some_and(|source| Arc::ptr_eq(source, config))
        {
            return true;
        }
        self.name == config.name
            && self.tenant.is_none()
            && config.tenant.is_none()
            && self.bandwidth == config.bandwidth
            && self.timeouts == config.timeouts
            && match (&self.action, &config.action) {
                (Action::Direct(a), RouteAction::Direct(b)) => {
                    a.status == b.status && a.headers == b.headers && a.body == b.body
                }
                (Action::Proxy(up), RouteAction::Proxy(u)) => up.built_from(u, config.timeouts),
                _ => false,
            }
    }
}

/// The routes of the previous snapshot, to find the one a new route replaces: at the same
/// place (a reload keeps most routes where they were, or shifted by the routes inserted or
/// removed before them), else the last one of the same name.
pub(super) struct PreviousRoutes<'p> {
    routes: &'p [Arc<Route>],
    /// How far the routes have moved since the last one found by name.
    shift: isize,
    /// Routes looked up by name so far: a few are found by scanning, more by this index.
    misses: usize,
    by_name: Option<HashMap<&'p str, usize, foldhash::fast::RandomState>>,
}

impl<'p> PreviousRoutes<'p> {
    /// Past this many routes not in place, an index by name beats scanning.
    const SCANS: usize = 8;

    pub(super) fn new(routes: &'p [Arc<Route>]) -> Self {
        Self {
            routes,
            shift: 0,
            misses: 0,
            by_name: None,
        }
    }

    /// The previous route for `config`, the route at `at` in the new config.
    pub(super) fn find(&mut self, at: usize, config: &Arc<RouteConfig>) -> Option<&'p Arc<Route>> {
        let routes = self.routes;
        let placed = at
            .checked_add_signed(self.shift)
            .and_then(|j| routes.get(j))
            .filter(|r| r.source.as_ref().is_some_and(|s| Arc::ptr_eq(s, config)));
        if placed.is_some() {
            return placed;
        }
        self.misses += 1;
        let found = if self.misses <= Self::SCANS {
            routes.iter().rposition(|r| r.name == config.name)
        } else {
            let by_name = self.by_name.get_or_insert_with(|| {
                // Collecting keeps the last of equal names, as the scan finds it.
                routes
                    .iter()
                    .enumerate()
                    .map(|(j, r)| (r.name.as_str(), j))
                    .collect()
            });
            by_name.get(config.name.as_str()).copied()
        }?;
        self.shift = found as isize - at as isize;
        routes.get(found)
    }
}

/// The route that serves a request, and the Gateway API candidate that chose it.
pub type Picked<'r> = (Arc<Route>, Option<&'r Choice<Arc<Route>>>);

pub enum Action {
    Direct(DirectResponse),
    /// Shared with the next snapshot when a reload leaves the route's upstream unchanged.
    Proxy(Arc<Upstream>),
    /// Gateway API candidates, each with its matches and filters, choosing one of their
    /// backend routes ([`super::choice::pick`]).
    Gateway(Arc<Rules<Arc<Route>>>),
}
