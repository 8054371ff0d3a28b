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
use crate::k8s::ingress::Builder;
use crate::k8s::ingress::model::{self, BackendPolicy, HostOwners, Model, Settings, TenantBounds};
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
    let mut own: Vec<_> = config.listeners.iter().map(|l| l.bind).collect();
    own.extend(config.admin.as_ref().map(|a| a.bind));
    Some(Settings {
        class: ingress.class.clone(),
        namespaces: ingress.namespaces.clone(),
        tenants: config
            .tenants
            .iter()
            .map(|t| TenantBounds {
                name: t.name.clone(),
                namespaces: t.namespaces.clone(),
                bandwidth: t.bandwidth,
                hosts: t.hosts.clone(),
            })
            .collect(),
        toml_hosts: model::toml_hosts(config, &ingress.listeners),
        toml_certs: toml_certs(config, &ingress.listeners),
        backends: BackendPolicy {
            deny: ingress.deny_backends.clone(),
            allow: ingress.allow_backends.clone(),
            own,
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
    stop: CancellationToken,
) {
    // Keeps the model between builds, so a change costs only what it concerns.
    let mut builder = Builder::default();
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
        let started = Instant::now();
        let Some(settings) = settings(&gateway.snapshot().config) else {
            continue;
        };
        let changes = std::mem::take(&mut *lock(&provider.changes));
        let source = stores.clone();
        let mut taken = std::mem::take(&mut builder);
        let built = tokio::task::spawn_blocking(move || {
            let model = taken.apply(&source, changes, &settings);
            (taken, model)
        })
        .await;
        let build_ms = started.elapsed().as_secs_f64() * 1000.0;
        let model = match built {
            Ok((kept, m)) => {
                builder = kept;
                Arc::new(m)
            }
            Err(e) => {
                // The builder went with the thread: the next build starts from scratch.
                lock(&provider.changes).all = true;
                warn!(error = %e, "ingress provider: the model build was interrupted");
                lock(&provider.report).apply_error = Some(e.to_string());
                continue;
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
                Err(e) => r.apply_error = Some(e.clone()),
            }
        }
        match applied {
            Ok(()) => {
                record_metrics(gateway.metrics(), &model, models.borrow().as_deref());
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
}

/// Gauges for the new model; backends gone since `previous` lose their series.
fn record_metrics(metrics: &crate::metrics::Metrics, model: &Model, previous: Option<&Model>) {
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
    let endpoints = backend_endpoints(model);
    if let Some(prev) = previous {
        for key in backend_endpoints(prev).keys() {
            if !endpoints.contains_key(key) {
                m.backend_endpoints.remove(&IngressBackendLabels {
                    backend: key.clone(),
                });
            }
        }
    }
    for (backend, n) in endpoints {
        m.backend_endpoints
            .get_or_create(&IngressBackendLabels { backend })
            .set(n as i64);
    }
}

/// Ready endpoints per backend key.
fn backend_endpoints(model: &Model) -> HashMap<String, usize> {
    model
        .routes
        .iter()
        .map(|r| {
            let n = match &r.backend {
                model::IngressBackend::Service { upstream, .. } => upstream.backends.len(),
                model::IngressBackend::Unavailable { .. } => 0,
            };
            (r.backend.key().to_string(), n)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
