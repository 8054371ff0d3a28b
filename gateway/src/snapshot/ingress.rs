//! Ingress routes inside a snapshot: the provider's latest [`Model`] compiled into
//! snapshot [`Route`]s against this snapshot's tenants and timeouts, ready to be merged
//! with the TOML routes on the ingress listeners.
//!
//! A compiled Ingress route is an ordinary [`Route`]: the listener, proxy, hijack and
//! splice code cannot tell it from a TOML one. Compilation reuses what did not change:
//! an [`Upstream`] whose backend key and settings are the same (so its pooled connections
//! and ejection marks survive an EndpointSlice change elsewhere), a route's bandwidth
//! totals, and the whole `Arc<Route>` when nothing about it changed. It never fails: an
//! upstream rustls refuses becomes a 502 route and a problem in `/status`.
//!
//! It does not read Kubernetes objects (that is `kube::ingress::model`) and does not
//! decide when to swap (that is the provider).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};

use crate::config::{Config, DirectResponse, HostPattern, PathMatch, Timeouts};
use crate::kube::ingress::model::{IngressBackend, IngressRoute, Model};
use crate::limit::SharedLimits;
use crate::proxy::upstream::Upstream;

use super::{Action, Route, Tenant};

/// The Ingress routes a snapshot serves.
#[derive(Default)]
pub struct IngressRoutes {
    /// What they were compiled from; `None` until the provider's first build (or without
    /// `[kubernetes.ingress]`). A config reload compiles it again against the new tenants.
    pub model: Option<Arc<Model>>,
    /// One per `model.routes`, in the same order.
    pub routes: Vec<Arc<Route>>,
    /// Upstreams by backend key (`ns/svc:port`), for the next compilation to reuse.
    upstreams: HashMap<String, Arc<Upstream>>,
    /// Routes whose upstream could not be built, as `(ingress, problem)`.
    pub problems: Vec<(String, String)>,
}

impl IngressRoutes {
    /// Compiles `model` for `config`, reusing what `previous` built from equal inputs.
    pub fn compile(
        model: Arc<Model>,
        config: &Config,
        tenants: &HashMap<String, Arc<Tenant>>,
        previous: Option<&IngressRoutes>,
    ) -> IngressRoutes {
        let before: HashMap<&str, &Arc<Route>> = previous
            .map(|p| p.routes.iter().map(|r| (r.name.as_str(), r)).collect())
            .unwrap_or_default();
        let mut upstreams: HashMap<String, Arc<Upstream>> = HashMap::new();
        let mut problems = Vec::new();
        let mut routes = Vec::with_capacity(model.routes.len());
        for r in &model.routes {
            let timeouts = Timeouts {
                upgraded_idle: r.upgraded_idle.unwrap_or(config.timeouts.upgraded_idle),
                ..config.timeouts
            };
            let action = match &r.backend {
                IngressBackend::Unavailable { reason, .. } => unavailable(reason),
                IngressBackend::Service { upstream, .. } if upstream.backends.is_empty() => {
                    unavailable("the Service has no ready endpoints")
                }
                IngressBackend::Service { key, upstream } => {
                    let reuse = |u: &Arc<Upstream>| u.built_from(upstream, timeouts);
                    let kept = upstreams.get(key).filter(|u| reuse(u)).or_else(|| {
                        previous
                            .and_then(|p| p.upstreams.get(key))
                            .filter(|u| reuse(u))
                    });
                    match kept {
                        Some(u) => Action::Proxy(u.clone()),
                        None => match Upstream::new(upstream, timeouts) {
                            Ok(u) => {
                                let u = Arc::new(u);
                                upstreams.entry(key.clone()).or_insert_with(|| u.clone());
                                Action::Proxy(u)
                            }
                            Err(e) => {
                                let problem = format!("backend {key}: {e}");
                                problems.push((ingress_name(r), problem.clone()));
                                direct(StatusCode::BAD_GATEWAY, &problem)
                            }
                        },
                    }
                }
            };
            if let Action::Proxy(u) = &action
                && let IngressBackend::Service { key, .. } = &r.backend
            {
                upstreams.entry(key.clone()).or_insert_with(|| u.clone());
            }
            let tenant = r.tenant.as_ref().and_then(|t| tenants.get(t).cloned());
            let old = before.get(r.name.as_str());
            if let Some(old) = old.filter(|o| unchanged(o, &action, &tenant, r, timeouts)) {
                routes.push((*old).clone());
                continue;
            }
            let totals = match old {
                Some(o) if o.bandwidth.total == r.bandwidth.total => o.totals.clone(),
                _ => SharedLimits::new(r.bandwidth.total),
            };
            routes.push(Arc::new(Route {
                name: r.name.clone(),
                action,
                tenant,
                bandwidth: r.bandwidth,
                totals,
                timeouts,
            }));
        }
        IngressRoutes {
            model: Some(model),
            routes,
            upstreams,
            problems,
        }
    }

    /// `(host, path, route)` for each Ingress route, for a listener's router.
    pub fn entries(&self) -> impl Iterator<Item = (&HostPattern, &PathMatch, &Arc<Route>)> {
        let model_routes = self.model.as_ref().map_or(&[][..], |m| &m.routes[..]);
        model_routes
            .iter()
            .zip(&self.routes)
            .map(|(m, r)| (&m.host, &m.path, r))
    }

    /// The model's routes (empty before the first build).
    pub fn model_routes(&self) -> &[IngressRoute] {
        self.model.as_ref().map_or(&[][..], |m| &m.routes[..])
    }
}

/// True when `old` is what compiling `r` again would build: same upstream (the same
/// `Arc`), tenant, bandwidth and timeouts; a direct answer compares status and body.
fn unchanged(
    old: &Route,
    action: &Action,
    tenant: &Option<Arc<Tenant>>,
    r: &IngressRoute,
    timeouts: Timeouts,
) -> bool {
    let same_action = match (&old.action, action) {
        (Action::Proxy(a), Action::Proxy(b)) => Arc::ptr_eq(a, b),
        (Action::Direct(a), Action::Direct(b)) => a.status == b.status && a.body == b.body,
        _ => false,
    };
    let same_tenant = match (&old.tenant, tenant) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    };
    same_action && same_tenant && old.bandwidth == r.bandwidth && old.timeouts == timeouts
}

fn ingress_name(r: &IngressRoute) -> String {
    format!("{}/{}", r.ingress.namespace, r.ingress.name)
}

/// A backend leafgate cannot reach: 503 with the reason, so whoever calls sees why.
fn unavailable(reason: &str) -> Action {
    direct(StatusCode::SERVICE_UNAVAILABLE, reason)
}

fn direct(status: StatusCode, reason: &str) -> Action {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    Action::Direct(DirectResponse {
        status,
        headers,
        body: Bytes::from(format!("{reason}\n")),
    })
}
