//! The debounced rebuild: once every reflector has listed, each change waits for a short
//! quiet spell ([`DEBOUNCE`], at most [`MAX_WAIT`] after the first change), the model is
//! updated on a blocking thread (a [`Builder`] kept across builds, told by the reflectors
//! which objects changed: it translates and merges again only what those concern) and
//! handed to the gateway, which swaps it in with the same lock and store as a config
//! reload.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::reflectors::Stores;
use super::state::{IngressProvider, lock};
use crate::config::{Config, IngressConfig};
use crate::control::Control;
use crate::k8s::gateway::model::Model as GatewayModel;
use crate::k8s::ingress::Builder;
use crate::k8s::ingress::model::{self, BackendPolicy, HostOwners, IngressRoute, Model, Settings};
use crate::metrics::{IngressBackendLabels, IngressRefusedLabels, IngressStateLabels};

/// A rebuild starts once no change has come for this long... The events of one write (an
/// Ingress with its Service and EndpointSlice) arrive well inside it; a burst longer than
/// it still coalesces, as the changes that come during a build are built together next.
pub const DEBOUNCE: Duration = Duration::from_millis(2);
/// ...or this long after the first change it covers, whichever is sooner.
pub const MAX_WAIT: Duration = Duration::from_millis(50);

/// The model's settings from the snapshot's config; `None` once `[kubernetes.ingress]`
/// is gone from it.
pub(super) fn settings(config: &Config) -> Option<Settings> {
    let ingress: &IngressConfig = config.kubernetes.as_ref()?.ingress.as_ref()?;
    Some(Settings {
        class: ingress.class.clone(),
        namespaces: ingress.namespaces.clone(),
        tenants: super::settings::tenant_bounds(config),
        toml_hosts: model::toml_hosts(config, &ingress.listeners),
        toml_certs: toml_certs(config, &ingress.listeners),
        backends: BackendPolicy {
            deny: ingress.deny_backends.clone(),
            allow: ingress.allow_backends.clone(),
            own: super::settings::own_addresses(config),
            allow_unmanaged: ingress.allow_unmanaged_endpointslices,
        },
        host_owner: ingress.host_owner,
    })
}

/// The names the TOML certificates of the ingress listeners cover.
fn toml_certs(config: &Config, ingress_listeners: &[String]) -> HostOwners {
    let mut owners = HostOwners::default();
    for l in &config.listeners {
        if !ingress_listeners.contains(&l.name) {
            continue;
        }
        for (host, _) in l.tls.iter().flat_map(|t| &t.by_host) {
            owners.add(
                host,
                &format!("the TOML certificate of listener `{}`", l.name),
            );
        }
    }
    owners
}

/// Waits for changes, debounces them and applies each rebuild, until `stop`.
pub(super) async fn rebuild_loop(
    gateway: Arc<dyn Control>,
    provider: Arc<IngressProvider>,
    stores: Stores,
    models: watch::Sender<Option<Arc<Model>>>,
    gateway_models: watch::Sender<Option<Arc<GatewayModel>>>,
    stop: CancellationToken,
) {
    // Keeps the model between builds, so a change costs only what it concerns.
    let mut builder = Builder::default();
    // And each HTTPRoute's translation, with the inputs it read.
    let mut kept = super::gateway::Kept::default();
    // Routes per backend key in the last model recorded (for the endpoint gauges).
    let mut uses: HashMap<String, usize> = HashMap::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = provider.changed.notified() => {}
        }
        if !provider.synced() {
            continue;
        }
        let first = Instant::now();
        loop {
            let left = MAX_WAIT.saturating_sub(first.elapsed());
            if left.is_zero() {
                break;
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(DEBOUNCE.min(left)) => break,
                _ = provider.changed.notified() => {}
            }
        }
        if stores.ingress.is_some() {
            build_ingress(
                &gateway,
                &provider,
                &stores,
                &models,
                &mut builder,
                &mut uses,
            )
            .await;
        }
        super::gateway::build(&gateway, &provider, &stores, &gateway_models, &mut kept).await;
    }
}

/// One Ingress build: the model updated with what changed, applied, recorded.
async fn build_ingress(
    gateway: &Arc<dyn Control>,
    provider: &IngressProvider,
    stores: &Stores,
    models: &watch::Sender<Option<Arc<Model>>>,
    builder: &mut Builder,
    uses: &mut HashMap<String, usize>,
) {
    let started = Instant::now();
    let Some(settings) = settings(&gateway.snapshot().config) else {
        return;
    };
    let changes = std::mem::take(&mut *lock(&provider.changes));
    let source = stores.clone();
    let mut taken = std::mem::take(builder);
    let built = tokio::task::spawn_blocking(move || {
        let model = taken.apply(&source, changes, &settings);
        (taken, model)
    })
    .await;
    let build_ms = started.elapsed().as_secs_f64() * 1000.0;
    let model = match built {
        Ok((kept, m)) => {
            *builder = kept;
            Arc::new(m)
        }
        Err(e) => {
            // The builder went with the thread: the next build starts from scratch.
            lock(&provider.changes).all = true;
            warn!(error = %e, "ingress provider: the model build was interrupted");
            lock(&provider.report).apply_error = Some(e.to_string());
            return;
        }
    };
    let applied = gateway.apply_ingress(model.clone()).await;
    let took = started.elapsed();
    let metrics = &gateway.metrics().ingress;
    metrics.build_seconds.observe(took.as_secs_f64());
    {
        let mut r = lock(&provider.report);
        r.last_build_ms = Some(took.as_secs_f64() * 1000.0);
        match &applied {
            Ok(()) => {
                r.applied += 1;
                r.apply_error = None;
            }
            Err(e) => r.apply_error = Some(e.to_string()),
        }
    }
    match applied {
        Ok(()) => {
            let previous = models.borrow().clone();
            record_metrics(gateway.metrics(), &model, previous.as_deref(), uses);
            info!(
                served = model.served.len(),
                skipped = model.skipped.len(),
                routes = model.routes.len(),
                ms = took.as_secs_f64() * 1000.0,
                build_ms,
                "ingress routes applied"
            );
            models.send_replace(Some(model));
        }
        Err(e) => warn!(error = %e, "ingress routes could not be applied"),
    }
}

/// Gauges for the new model. `uses` counts the routes of each backend key in the model
/// last recorded; only the routes that differ from `previous` (not the same `Arc`) are
/// looked at, and a backend no route uses any more loses its series.
fn record_metrics(
    metrics: &crate::metrics::Metrics,
    model: &Model,
    previous: Option<&Model>,
    uses: &mut HashMap<String, usize>,
) {
    let m = &metrics.ingress;
    m.ingresses
        .get_or_create(&IngressStateLabels { state: "served" })
        .set(model.served.len() as i64);
    m.ingresses
        .get_or_create(&IngressStateLabels { state: "skipped" })
        .set(model.skipped.len() as i64);
    for (what, certificate) in [("rules", false), ("certificate", true)] {
        let n = model
            .refused
            .iter()
            .filter(|r| r.certificate == certificate)
            .count();
        m.refused
            .get_or_create(&IngressRefusedLabels { what })
            .set(n as i64);
    }
    let before = previous.map_or(&[][..], |p| &p.routes[..]);
    let (gone, new) = changed_routes(before, &model.routes);
    for route in gone {
        let key = route.backend.key();
        let Some(n) = uses.get_mut(key) else {
            continue;
        };
        *n -= 1;
        if *n == 0 {
            uses.remove(key);
            m.backend_endpoints.remove(&IngressBackendLabels {
                backend: key.to_string(),
            });
        }
    }
    for route in new {
        let key = route.backend.key();
        *uses.entry(key.to_string()).or_default() += 1;
        let n = match &route.backend {
            model::IngressBackend::Service { upstream, .. } => upstream.backends.len(),
            model::IngressBackend::Unavailable { .. } => 0,
        };
        m.backend_endpoints
            .get_or_create(&IngressBackendLabels {
                backend: key.to_string(),
            })
            .set(n as i64);
    }
}

/// The routes of `before` that `after` does not keep, and those of `after` that are new,
/// walking both in name order (as models keep them); a kept route is the same `Arc`.
fn changed_routes<'m>(
    before: &'m [Arc<IngressRoute>],
    after: &'m [Arc<IngressRoute>],
) -> (Vec<&'m Arc<IngressRoute>>, Vec<&'m Arc<IngressRoute>>) {
    let (mut gone, mut new) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    loop {
        match (before.get(i), after.get(j)) {
            (Some(b), Some(a)) if Arc::ptr_eq(b, a) => (i, j) = (i + 1, j + 1),
            (Some(b), Some(a)) if b.name == a.name => {
                gone.push(b);
                new.push(a);
                (i, j) = (i + 1, j + 1);
            }
            (Some(b), Some(a)) if b.name < a.name => {
                gone.push(b);
                i += 1;
            }
            (Some(b), None) => {
                gone.push(b);
                i += 1;
            }
            (_, Some(a)) => {
                new.push(a);
                j += 1;
            }
            (None, None) => return (gone, new),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::ingress::model::TenantBounds;

    #[test]
    fn settings_follow_the_config_and_vanish_without_the_ingress_table() {
        let dir = tempfile::tempdir().unwrap();
        let kc = dir.path().join("root.kubeconfig");
        std::fs::write(
            &kc,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user: {}\ncurrent-context: x\n",
        )
        .unwrap();
        let src = |ingress: &str| {
            format!(
                "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n[[tenant]]\nname = \"t\"\nnamespaces = [\"t-*\"]\n[kubernetes]\nkubeconfig = \"{}\"\n{ingress}",
                kc.display()
            )
        };
        let with = Config::parse(
            &dir.path().join("a.toml"),
            &src("[kubernetes.ingress]\nclass = \"edge\"\nnamespaces = [\"web\"]\n"),
        )
        .unwrap();
        let s = settings(&with).unwrap();
        assert_eq!(s.class, "edge");
        assert_eq!(s.namespaces, Some(vec!["web".to_string()]));
        assert_eq!(s.tenants, vec![TenantBounds::new("t", &["t-*"])]);
        let without = Config::parse(&dir.path().join("b.toml"), &src("")).unwrap();
        assert!(settings(&without).is_none());
    }

    fn route(name: &str, key: &str, endpoints: usize) -> Arc<IngressRoute> {
        use crate::config::{Backend, UpstreamConfig, UpstreamProtocol};
        use crate::k8s::ingress::model::{IngressBackend, IngressRef};
        let backend = match endpoints {
            0 => IngressBackend::Unavailable {
                key: key.to_string(),
                reason: "no ready endpoints".into(),
            },
            n => IngressBackend::Service {
                key: key.into(),
                upstream: UpstreamConfig {
                    backends: (0..n)
                        .map(|i| Backend {
                            tls: false,
                            authority: format!("10.0.0.{}:80", i + 1).parse().unwrap(),
                        })
                        .collect(),
                    protocol: UpstreamProtocol::Auto,
                    tls: None,
                },
            },
        };
        Arc::new(IngressRoute {
            name: name.to_string(),
            ingress: IngressRef {
                namespace: "web".into(),
                name: name.into(),
                uid: "u".into(),
                resource_version: "1".into(),
            },
            host: crate::config::HostPattern::Any,
            path: crate::config::PathMatch::Prefix("/".into()),
            backend,
            tenant: None,
            bandwidth: Default::default(),
            upgraded_idle: None,
        })
    }

    /// The endpoint gauges after each model, by backend.
    fn gauges(metrics: &crate::metrics::Metrics) -> Vec<String> {
        let mut lines: Vec<String> = metrics
            .encode()
            .lines()
            .filter(|l| l.starts_with("leafgate_ingress_backend_endpoints{"))
            .map(str::to_string)
            .collect();
        lines.sort();
        lines
    }

    #[test]
    fn endpoint_gauges_follow_only_the_routes_that_changed_and_go_with_the_last_user() {
        let metrics = crate::metrics::Metrics::new();
        let mut uses = HashMap::new();
        let (a, b) = (route("a", "web/s:http", 2), route("b", "web/s:http", 2));
        let c = route("c", "web/t:http", 1);
        let first = Model {
            routes: vec![a.clone(), b.clone(), c.clone()],
            ..Model::default()
        };
        record_metrics(&metrics, &first, None, &mut uses);
        assert_eq!(
            gauges(&metrics),
            [
                "leafgate_ingress_backend_endpoints{backend=\"web/s:http\"} 2",
                "leafgate_ingress_backend_endpoints{backend=\"web/t:http\"} 1",
            ]
        );
        // a goes, c loses its endpoints: s is still b's, t reads 0.
        let second = Model {
            routes: vec![b.clone(), route("c", "web/t:http", 0)],
            ..Model::default()
        };
        record_metrics(&metrics, &second, Some(&first), &mut uses);
        assert_eq!(
            gauges(&metrics),
            [
                "leafgate_ingress_backend_endpoints{backend=\"web/s:http\"} 2",
                "leafgate_ingress_backend_endpoints{backend=\"web/t:http\"} 0",
            ]
        );
        // b goes too: s has no route left and loses its series.
        let third = Model {
            routes: vec![second.routes[1].clone()],
            ..Model::default()
        };
        record_metrics(&metrics, &third, Some(&second), &mut uses);
        assert_eq!(
            gauges(&metrics),
            ["leafgate_ingress_backend_endpoints{backend=\"web/t:http\"} 0"]
        );
    }
}
