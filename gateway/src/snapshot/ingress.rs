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
//! It does not read Kubernetes objects (that is `k8s::ingress::model`) and does not
//! decide when to swap (that is the provider).

use std::cmp::Ordering;
use std::collections::{HashMap as StdHashMap, HashSet};

use foldhash::{HashMap, HashMapExt};
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};

use crate::config::{Config, DirectResponse, HostPattern, PathMatch, Timeouts};
use crate::k8s::ingress::model::{IngressBackend, IngressRoute, Model};
use crate::limit::SharedLimits;
use crate::proxy::upstream::Upstream;

use super::route::{Action, Fast, Route, Tenant};

/// The Ingress routes a snapshot serves.
#[derive(Default)]
pub struct IngressRoutes {
    /// What they were compiled from; `None` until the provider's first build (or without
    /// `[kubernetes.ingress]`). A config reload compiles it again against the new tenants.
    pub model: Option<Arc<Model>>,
    /// One per `model.routes`, in the same order.
    pub routes: Vec<Arc<Route>>,
    /// Upstreams by backend key (`ns/svc:port`), for the next compilation to reuse.
    upstreams: HashMap<Arc<str>, Arc<Upstream>>,
    /// Routes whose upstream could not be built, as `(ingress, problem)`.
    pub problems: Vec<(String, String)>,
}

impl IngressRoutes {
    /// Compiles `model` for `config`, reusing what `previous` built from equal inputs.
    ///
    /// Both models keep their routes in name order, so each route meets its previous
    /// version by walking the two lists side by side; one the provider kept from the last
    /// build (the same `Arc`) under the same tenant and timeouts is the previous `Route`
    /// as it was, for the cost of a pointer comparison.
    pub fn compile(
        model: Arc<Model>,
        config: &Config,
        tenants: &StdHashMap<String, Arc<Tenant>>,
        previous: Option<&IngressRoutes>,
    ) -> IngressRoutes {
        let before: Vec<(&Arc<IngressRoute>, &Arc<Route>)> = previous
            .map(|p| p.model_routes().iter().zip(&p.routes).collect())
            .unwrap_or_default();
        let mut next = 0;
        let mut upstreams: HashMap<Arc<str>, Arc<Upstream>> = HashMap::new();
        let mut problems = Vec::new();
        let mut routes = Vec::with_capacity(model.routes.len());
        for r in &model.routes {
            // The previous route of the same name, if any. Models keep their routes in
            // name order (were one not to, a route would miss its previous version and be
            // built afresh, its upstream still found by key).
            while before.get(next).is_some_and(|(m, _)| m.name < r.name) {
                next += 1;
            }
            let old = before.get(next).copied().filter(|(m, _)| m.name == r.name);
            let timeouts = Timeouts {
                upgraded_idle: r.upgraded_idle.unwrap_or(config.timeouts.upgraded_idle),
                ..config.timeouts
            };
            let tenant = r.tenant.as_ref().and_then(|t| tenants.get(t).cloned());
            if let Some((m, old)) = old
                && Arc::ptr_eq(m, r)
                && same_tenant(&old.tenant, &tenant)
                && old.timeouts == timeouts
            {
                if let (Action::Proxy(u), IngressBackend::Service { key, .. }) =
                    (&old.action, &r.backend)
                {
                    upstreams.entry(key.clone()).or_insert_with(|| u.clone());
                }
                routes.push(old.clone());
                continue;
            }
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
                            Ok(u) => Action::Proxy(Arc::new(u)),
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
            let old = old.map(|(_, route)| route);
            if let Some(old) = old.filter(|o| unchanged(o, &action, &tenant, r, timeouts)) {
                routes.push(old.clone());
                continue;
            }
            let totals = match old {
                Some(o) if o.bandwidth.total == r.bandwidth.total => o.totals.clone(),
                _ => SharedLimits::new(r.bandwidth.total),
            };
            let fast = Fast::of(&action);
            routes.push(Arc::new(Route {
                name: r.name.clone(),
                source: None,
                action,
                tenant,
                bandwidth: r.bandwidth,
                totals,
                timeouts,
                fast,
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
    pub fn model_routes(&self) -> &[Arc<IngressRoute>] {
        self.model.as_ref().map_or(&[][..], |m| &m.routes[..])
    }
}

/// The hosts whose Ingress routes differ between `before` and `after` (a route added,
/// removed, or compiled into another `Route`): what a router built for `before` must build
/// again to serve `after`. `None` when that is not worth telling (no routes before, or most
/// hosts changed) or cannot be told cheaply (routes not in name order, as models keep them).
///
/// Both lists are walked side by side in name order; a route kept from one build to the
/// next is the same `Arc` on both sides, so an unchanged one costs a pointer comparison.
pub fn touched_hosts(
    before: &IngressRoutes,
    after: &IngressRoutes,
) -> Option<HashSet<HostPattern>> {
    before.model.as_ref()?;
    let old: Vec<_> = before.model_routes().iter().zip(&before.routes).collect();
    let new: Vec<_> = after.model_routes().iter().zip(&after.routes).collect();
    let sorted = |list: &[(&Arc<IngressRoute>, &Arc<Route>)]| {
        list.windows(2).all(|w| w[0].0.name < w[1].0.name)
    };
    if !sorted(&old) || !sorted(&new) {
        return None;
    }
    let mut touched = HashSet::new();
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        let order = match (old.get(i), new.get(j)) {
            (Some(o), Some(n)) if Arc::ptr_eq(o.0, n.0) => Ordering::Equal,
            (Some(o), Some(n)) => o.0.name.cmp(&n.0.name),
            (Some(_), None) => Ordering::Less,
            (None, _) => Ordering::Greater,
        };
        match order {
            Ordering::Equal => {
                let ((om, or), (nm, nr)) = (old[i], new[j]);
                let same = Arc::ptr_eq(or, nr)
                    && (Arc::ptr_eq(om, nm) || (om.host == nm.host && om.path == nm.path));
                if !same {
                    touched.insert(om.host.clone());
                    touched.insert(nm.host.clone());
                }
                i += 1;
                j += 1;
            }
            Ordering::Less => {
                touched.insert(old[i].0.host.clone());
                i += 1;
            }
            Ordering::Greater => {
                touched.insert(new[j].0.host.clone());
                j += 1;
            }
        }
        if touched.len() > new.len().max(old.len()) / 2 {
            return None;
        }
    }
    Some(touched)
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
    same_action
        && same_tenant(&old.tenant, tenant)
        && old.bandwidth == r.bandwidth
        && old.timeouts == timeouts
}

/// The same tenant: both none, or the same `Arc`.
fn same_tenant(a: &Option<Arc<Tenant>>, b: &Option<Arc<Tenant>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

fn ingress_name(r: &IngressRoute) -> String {
    format!("{}/{}", r.ingress.namespace, r.ingress.name)
}

/// A backend leafgate cannot reach: 503 with the reason, so whoever calls sees why.
fn unavailable(reason: &str) -> Action {
    direct(StatusCode::SERVICE_UNAVAILABLE, reason)
}

/// A direct answer with `reason` as its plain-text body.
pub(super) fn direct(status: StatusCode, reason: &str) -> Action {
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{Backend, BandwidthConfig, UpstreamConfig, UpstreamProtocol};
    use crate::k8s::ingress::model::IngressRef;
    use crate::metrics::Metrics;
    use crate::snapshot::Snapshot;

    /// A root kubeconfig that validates (nothing dials it here).
    fn kubeconfig(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("root.kubeconfig");
        std::fs::write(
            &path,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user: {}\ncurrent-context: x\n",
        )
        .unwrap();
        path
    }

    /// Listeners `web` (serves Ingress routes) and `other` (does not), a TOML route for
    /// `app.example`, then `extra`.
    fn config(dir: &Path, extra: &str) -> Arc<Config> {
        let src = format!(
            "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n[[listener]]\nname = \"other\"\nbind = \"127.0.0.1:0\"\n\
             [[tenant]]\nname = \"team\"\nnamespaces = [\"team-*\"]\n\
             [[route]]\nname = \"toml-app\"\nhost = \"app.example\"\nbackends = [\"127.0.0.1:9\"]\n{extra}\
             [kubernetes]\nkubeconfig = \"{}\"\n[kubernetes.ingress]\nlisteners = [\"web\"]\n",
            kubeconfig(dir).display()
        );
        Arc::new(Config::parse(&dir.join("t.toml"), &src).unwrap())
    }

    fn route(ns: &str, name: &str, host: &str, backends: &[&str]) -> IngressRoute {
        let host = HostPattern::parse_ingress(host).unwrap();
        let backend = if backends.is_empty() {
            IngressBackend::Unavailable {
                key: format!("{ns}/{name}:http"),
                reason: format!("service {ns}/{name} has no ready endpoints"),
            }
        } else {
            IngressBackend::Service {
                key: format!("{ns}/{name}:http").into(),
                upstream: UpstreamConfig {
                    backends: backends
                        .iter()
                        .map(|b| Backend {
                            tls: false,
                            authority: b.parse().unwrap(),
                        })
                        .collect(),
                    protocol: UpstreamProtocol::Auto,
                    tls: None,
                },
            }
        };
        IngressRoute {
            name: format!("ingress/{ns}/{name}/{host}/prefix /"),
            ingress: IngressRef {
                namespace: ns.into(),
                name: name.into(),
                uid: format!("uid-{name}"),
                resource_version: "1".into(),
            },
            host,
            path: PathMatch::Prefix("/".into()),
            backend,
            tenant: ns.starts_with("team-").then(|| "team".to_string()),
            bandwidth: BandwidthConfig::default(),
            upgraded_idle: None,
        }
    }

    fn model(routes: Vec<IngressRoute>) -> Arc<Model> {
        Arc::new(Model {
            routes: routes.into_iter().map(Arc::new).collect(),
            ..Model::default()
        })
    }

    fn served_by<'a>(s: &'a Snapshot, listener: &str, host: &str) -> Option<&'a str> {
        s.listeners[listener]
            .router
            .lookup(host, "/x")
            .map(|r| r.name.as_str())
    }

    #[test]
    fn toml_routes_win_ingress_routes_serve_only_their_listeners_and_shadows_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let base = Snapshot::build(config(dir.path(), ""), 1, None, &Metrics::new()).unwrap();
        let s = base
            .with_ingress(model(vec![
                route("team-a", "app", "app.example", &["127.0.0.1:10"]),
                route("team-a", "web", "*.web.example", &["127.0.0.1:11"]),
            ]))
            .unwrap();
        assert_eq!(served_by(&s, "web", "app.example"), Some("toml-app"));
        assert_eq!(
            served_by(&s, "web", "a.web.example"),
            Some("ingress/team-a/web/*.web.example/prefix /")
        );
        assert_eq!(
            served_by(&s, "web", "a.b.web.example"),
            None,
            "one label only"
        );
        assert_eq!(served_by(&s, "other", "a.web.example"), None);
        assert_eq!(
            s.shadowed,
            vec![crate::snapshot::Shadowed {
                ingress: "team-a/app".into(),
                host: "app.example".into(),
                path: "prefix /".into(),
                route: "toml-app".into(),
            }]
        );
        // The tenant comes from the route, resolved against the snapshot's tenants.
        let r = s.listeners["web"]
            .router
            .lookup("a.web.example", "/")
            .unwrap();
        assert_eq!(r.tenant.as_ref().map(|t| t.name.as_str()), Some("team"));
        // The listener that serves no Ingress routes keeps its state.
        assert!(s.listeners["other"].tls.is_none());
        assert_eq!(s.generation, base.generation);
    }

    #[test]
    fn unchanged_routes_and_upstreams_are_kept_and_changed_ones_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let base = Snapshot::build(config(dir.path(), ""), 1, None, &Metrics::new()).unwrap();
        let one = base
            .with_ingress(model(vec![
                route("web", "a", "a.example", &["127.0.0.1:10"]),
                route("web", "b", "b.example", &["127.0.0.1:11"]),
            ]))
            .unwrap();
        let two = one
            .with_ingress(model(vec![
                route("web", "a", "a.example", &["127.0.0.1:10"]),
                route("web", "b", "b.example", &["127.0.0.1:11", "127.0.0.1:12"]),
            ]))
            .unwrap();
        assert!(Arc::ptr_eq(&one.ingress.routes[0], &two.ingress.routes[0]));
        assert!(!Arc::ptr_eq(&one.ingress.routes[1], &two.ingress.routes[1]));
        let upstream = |s: &Snapshot, i: usize| match &s.ingress.routes[i].action {
            Action::Proxy(u) => u.len(),
            Action::Direct(_) | Action::Gateway(_) => 0,
        };
        assert_eq!((upstream(&two, 0), upstream(&two, 1)), (1, 2));
        // The TOML routes are the same objects.
        assert!(Arc::ptr_eq(&one.routes[0], &two.routes[0]));
    }

    #[test]
    fn an_ingress_change_builds_again_only_the_hosts_it_touches_and_serves_as_a_full_build() {
        let dir = tempfile::tempdir().unwrap();
        let base = Snapshot::build(config(dir.path(), ""), 1, None, &Metrics::new()).unwrap();
        let host = |i: usize| format!("h{i}.example");
        let sorted = |mut routes: Vec<Arc<IngressRoute>>| {
            routes.sort_by(|a, b| a.name.cmp(&b.name));
            Arc::new(Model {
                routes,
                ..Model::default()
            })
        };
        let mut routes: Vec<Arc<IngressRoute>> = (0..20)
            .map(|i| Arc::new(route("web", &format!("i{i}"), &host(i), &["127.0.0.1:10"])))
            .collect();
        // Shadowed by the TOML route on `app.example`, before and after.
        routes.push(Arc::new(route(
            "web",
            "app",
            "app.example",
            &["127.0.0.1:10"],
        )));
        let one = base.with_ingress(sorted(routes.clone())).unwrap();

        // As the model builder hands them: the routes of unchanged Ingresses are the same
        // `Arc`s. One backend moved, one Ingress gone, one new.
        routes[3] = Arc::new(route("web", "i3", &host(3), &["127.0.0.1:11"]));
        routes.remove(5);
        routes.push(Arc::new(route("web", "i20", &host(20), &["127.0.0.1:12"])));
        let next = sorted(routes);
        let two = one.with_ingress(next.clone()).unwrap();
        let touched = touched_hosts(&one.ingress, &two.ingress).expect("a few hosts");
        let mut names: Vec<String> = touched.iter().map(ToString::to_string).collect();
        names.sort();
        assert_eq!(names, [host(20), host(3), host(5)]);

        let full = base.with_ingress(next).unwrap();
        assert!(touched_hosts(&base.ingress, &full.ingress).is_none());
        for h in (0..22).map(host).chain(["app.example".to_string()]) {
            let (a, b) = (served_by(&two, "web", &h), served_by(&full, "web", &h));
            assert_eq!(a, b, "{h}");
            assert_eq!(served_by(&two, "other", &h), served_by(&full, "other", &h));
        }
        assert_eq!(served_by(&two, "web", &host(5)), None);
        assert_eq!(two.shadowed, full.shadowed);
        assert_eq!(two.shadowed.len(), 1);
        let route_of = |s: &Snapshot, h: &str| s.listeners["web"].router.lookup(h, "/").cloned();
        // Untouched hosts serve the same routes; the moved one a new route.
        assert!(Arc::ptr_eq(
            &route_of(&one, &host(7)).unwrap(),
            &route_of(&two, &host(7)).unwrap()
        ));
        assert!(!Arc::ptr_eq(
            &route_of(&one, &host(3)).unwrap(),
            &route_of(&two, &host(3)).unwrap()
        ));
        // The listener without Ingress routes keeps its router.
        assert!(Arc::ptr_eq(
            &one.listeners["other"].router,
            &two.listeners["other"].router
        ));
    }

    #[test]
    fn a_backend_without_endpoints_answers_503_with_its_reason() {
        let dir = tempfile::tempdir().unwrap();
        let base = Snapshot::build(config(dir.path(), ""), 1, None, &Metrics::new()).unwrap();
        let s = base
            .with_ingress(model(vec![route("web", "gone", "gone.example", &[])]))
            .unwrap();
        let r = s.listeners["web"]
            .router
            .lookup("gone.example", "/")
            .unwrap();
        match &r.action {
            Action::Direct(d) => {
                assert_eq!(d.status, StatusCode::SERVICE_UNAVAILABLE);
                assert_eq!(&d.body[..], b"service web/gone has no ready endpoints\n");
            }
            _ => panic!("a route with no endpoints must not proxy"),
        }
    }

    #[test]
    fn a_reload_keeps_the_ingress_routes_against_the_new_config() {
        let dir = tempfile::tempdir().unwrap();
        let metrics = Metrics::new();
        let base = Snapshot::build(config(dir.path(), ""), 1, None, &metrics).unwrap();
        let with = base
            .with_ingress(model(vec![
                route("team-a", "x", "x.example", &["127.0.0.1:10"]),
                route("team-a", "y", "y.example", &["127.0.0.1:11"]),
            ]))
            .unwrap();
        // The reload adds a TOML route for y.example: it now wins there.
        let reloaded = Snapshot::build(
            config(
                dir.path(),
                "[[route]]\nname = \"toml-y\"\nhost = \"y.example\"\nbackends = [\"127.0.0.1:9\"]\n",
            ),
            2,
            Some(&with),
            &metrics,
        )
        .unwrap();
        assert_eq!(
            served_by(&reloaded, "web", "x.example"),
            Some("ingress/team-a/x/x.example/prefix /")
        );
        assert_eq!(served_by(&reloaded, "web", "y.example"), Some("toml-y"));
        let shadowed: Vec<(&str, &str)> = reloaded
            .shadowed
            .iter()
            .map(|s| (s.ingress.as_str(), s.route.as_str()))
            .collect();
        assert_eq!(shadowed, [("team-a/y", "toml-y")]);
        // Same backend, same settings: the upstream (and its pool) carried over, while
        // the route points at the reload's tenant.
        let (a, b) = (&with.ingress.routes[0], &reloaded.ingress.routes[0]);
        match (&a.action, &b.action) {
            (Action::Proxy(x), Action::Proxy(y)) => assert!(Arc::ptr_eq(x, y)),
            _ => panic!("both proxy"),
        }
        assert!(Arc::ptr_eq(
            b.tenant.as_ref().unwrap(),
            &reloaded.tenants["team"]
        ));
    }
}
