//! The Ingress provider at runtime: reflectors on the root cluster, the debounced rebuild
//! that swaps Ingress routes into the snapshot, and the leader's status and Event writers.
//!
//! Five reflectors (`watcher(..).default_backoff().reflect(writer)`, each restarted with
//! backoff by kube-runtime) keep Ingresses, IngressClasses, Services, EndpointSlices and
//! `kubernetes.io/tls` Secrets in memory. Any change that can alter routes wakes the
//! builder; once every reflector has listed, it waits for a short quiet spell
//! ([`DEBOUNCE`], at most [`MAX_WAIT`] after the first change), builds the model on a
//! blocking thread (a [`model::Builder`] kept across builds, which translates again only
//! the Ingresses the change concerns) and hands it to the gateway, which swaps it in with the same lock and
//! store as a config reload. A change to an Ingress's status alone (the leader's own
//! writes among them) does not rebuild.
//!
//! While this replica leads, the writer puts `status.loadBalancer` on served Ingresses and
//! Events on skipped ones; it starts with each term and is dropped when the term ends.
//! Nothing here serves a request or changes a route by hand.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::api::{Api, ResourceExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::config::{Config, IngressConfig, KubernetesConfig};
use crate::control::Control;
use crate::metrics::{IngressBackendLabels, IngressStateLabels};
use crate::snapshot::Snapshot;

use super::super::election::Leadership;
use super::super::leaf_pods::causes;
use super::events::{self, EventLog};
use super::model::{self, Model, Objects, Settings};
use super::status::StatusWriter;

/// A rebuild starts once no change has come for this long...
pub const DEBOUNCE: Duration = Duration::from_millis(10);
/// ...or this long after the first change it covers, whichever is sooner.
pub const MAX_WAIT: Duration = Duration::from_millis(50);
/// The leader re-checks every Ingress's status this often, besides after each change.
const STATUS_RESYNC: Duration = Duration::from_secs(30);
/// Status-only changes (the leader's own writes come back this way) are gathered this long
/// before the status is checked again.
const STATUS_SETTLE: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The provider as `/status` shows it, and the handle the gateway pokes after a reload.
pub struct IngressProvider {
    report: Mutex<Report>,
    /// Something that can change the routes happened.
    changed: Notify,
    /// Some Ingress changed (maybe only its status): the leader checks statuses.
    statuses: Notify,
}

#[derive(Debug, Default)]
struct Report {
    connect_error: Option<String>,
    watches: BTreeMap<&'static str, WatchReport>,
    last_build_ms: Option<f64>,
    applied: u64,
    apply_error: Option<String>,
    status_error: Option<String>,
    events_error: Option<String>,
}

#[derive(Debug, Default, Clone)]
struct WatchReport {
    /// The first full list has arrived.
    synced: bool,
    restarts: u64,
    last_error: Option<(SystemTime, String)>,
}

const KINDS: [&str; 5] = [
    "ingresses",
    "ingressclasses",
    "services",
    "endpointslices",
    "secrets",
];

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl IngressProvider {
    /// Asks for a rebuild: a reload may have changed the tenants or `[kubernetes.ingress]`.
    pub fn kick(&self) {
        self.changed.notify_one();
    }

    fn synced(&self) -> bool {
        let r = lock(&self.report);
        KINDS
            .iter()
            .all(|k| r.watches.get(k).is_some_and(|w| w.synced))
    }

    /// The `ingress` section of `/status`, with what `snapshot` serves.
    pub fn status(&self, snapshot: &Snapshot) -> Value {
        let r = lock(&self.report);
        let synced = KINDS
            .iter()
            .all(|k| r.watches.get(k).is_some_and(|w| w.synced));
        let model = snapshot.ingress.model.as_deref();
        let skipped: Vec<Value> = model
            .map(|m| {
                m.skipped
                    .iter()
                    .map(
                        |s| json!({"ingress": s.ingress.to_string(), "reason": events::message(s)}),
                    )
                    .collect()
            })
            .unwrap_or_default();
        let conflicts: Vec<Value> = model
            .map(|m| {
                m.conflicts
                    .iter()
                    .map(|c| json!({"host": c.host, "path": c.path, "winner": c.winner, "losers": c.losers}))
                    .collect()
            })
            .unwrap_or_default();
        let mut problems: Vec<Value> = model
            .map(|m| {
                m.problems
                    .iter()
                    .map(|p| json!({"ingress": p.ingress, "problem": p.problem}))
                    .collect()
            })
            .unwrap_or_default();
        problems.extend(
            snapshot
                .ingress
                .problems
                .iter()
                .map(|(i, p)| json!({"ingress": i, "problem": p})),
        );
        let shadowed: Vec<Value> = snapshot
            .shadowed
            .iter()
            .map(
                |s| json!({"ingress": s.ingress, "host": s.host, "path": s.path, "route": s.route}),
            )
            .collect();
        let watches: BTreeMap<&str, Value> = r
            .watches
            .iter()
            .map(|(k, w)| {
                (
                    *k,
                    json!({
                        "synced": w.synced,
                        "restarts": w.restarts,
                        "last_error": w.last_error.as_ref().map(|(_, e)| e),
                        "last_error_at": w.last_error.as_ref().map(|(at, _)| humantime::format_rfc3339_seconds(*at).to_string()),
                    }),
                )
            })
            .collect();
        json!({
            "synced": synced,
            "served": model.map_or(0, |m| m.served.len()),
            "routes": snapshot.ingress.routes.len(),
            "skipped": skipped,
            "conflicts": conflicts,
            "shadowed": shadowed,
            "problems": problems,
            "last_build_ms": r.last_build_ms,
            "applied": r.applied,
            "connect_error": r.connect_error,
            "apply_error": r.apply_error,
            "status_error": r.status_error,
            "events_error": r.events_error,
            "watches": watches,
        })
    }

    fn watch_report(&self, kind: &'static str, f: impl FnOnce(&mut WatchReport)) {
        f(lock(&self.report).watches.entry(kind).or_default());
    }
}

/// The reflectors' stores.
#[derive(Clone)]
struct Stores {
    ingresses: Store<Ingress>,
    classes: Store<IngressClass>,
    services: Store<Service>,
    slices: Store<EndpointSlice>,
    secrets: Store<Secret>,
}

/// Starts the provider when the config has `[kubernetes.ingress]`: it connects, watches
/// and rebuilds until `stop`; `leadership` says when this replica may write statuses and
/// Events. `[kubernetes]` is read once, here; the ingress settings are read from the
/// snapshot at every build.
pub fn spawn(
    gateway: Arc<dyn Control>,
    leadership: watch::Receiver<Leadership>,
    stop: CancellationToken,
) -> Option<Arc<IngressProvider>> {
    let kubernetes = gateway.snapshot().config.kubernetes.clone()?;
    kubernetes.ingress.as_ref()?;
    let provider = Arc::new(IngressProvider {
        report: Mutex::new(Report::default()),
        changed: Notify::new(),
        statuses: Notify::new(),
    });
    let running = provider.clone();
    tokio::spawn(async move {
        let Some(client) = connect(&kubernetes, &running, &stop).await else {
            return;
        };
        let stores = start_reflectors(&client, &running, &stop);
        let (models_tx, models_rx) = watch::channel::<Option<Arc<Model>>>(None);
        tokio::spawn(lead(
            client,
            gateway.clone(),
            running.clone(),
            stores.ingresses.clone(),
            models_rx,
            leadership,
            kubernetes.identity.clone(),
            stop.clone(),
        ));
        rebuild_loop(gateway, running, stores, models_tx, stop).await;
    });
    Some(provider)
}

async fn connect(
    config: &KubernetesConfig,
    provider: &IngressProvider,
    stop: &CancellationToken,
) -> Option<kube::Client> {
    let mut backoff = Duration::from_secs(1);
    loop {
        match super::super::root::connect(config).await {
            Ok(c) => {
                lock(&provider.report).connect_error = None;
                return Some(c);
            }
            Err(e) => {
                warn!(error = %e, "ingress: cannot build the root cluster's client; retrying");
                lock(&provider.report).connect_error = Some(e.to_string());
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return None,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

fn start_reflectors(
    client: &kube::Client,
    provider: &Arc<IngressProvider>,
    stop: &CancellationToken,
) -> Stores {
    let all = watcher::Config::default();
    // Ingresses: only a change of spec, annotations or labels can change routes; a status
    // write (ours, or another controller's) only asks the leader to look again.
    let mut seen: HashMap<String, u64> = HashMap::new();
    let ingresses = reflect(
        Api::all(client.clone()),
        all.clone(),
        "ingresses",
        provider.clone(),
        stop.clone(),
        move |ing: &Ingress, deleted| {
            let uid = ing.uid().unwrap_or_default();
            if deleted {
                seen.remove(&uid);
                return true;
            }
            let print = routing_fingerprint(ing);
            seen.insert(uid, print) != Some(print)
        },
    );
    Stores {
        ingresses,
        classes: reflect(
            Api::all(client.clone()),
            all.clone(),
            "ingressclasses",
            provider.clone(),
            stop.clone(),
            |_: &IngressClass, _| true,
        ),
        services: reflect(
            Api::all(client.clone()),
            all.clone(),
            "services",
            provider.clone(),
            stop.clone(),
            |_: &Service, _| true,
        ),
        slices: reflect(
            Api::all(client.clone()),
            all.clone(),
            "endpointslices",
            provider.clone(),
            stop.clone(),
            |_: &EndpointSlice, _| true,
        ),
        secrets: reflect(
            Api::all(client.clone()),
            all.fields("type=kubernetes.io/tls"),
            "secrets",
            provider.clone(),
            stop.clone(),
            |_: &Secret, _| true,
        ),
    }
}

/// A digest of what of an Ingress can change routes: its spec, annotations and class
/// annotation (labels do not route).
fn routing_fingerprint(ing: &Ingress) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(&ing.spec)
        .unwrap_or_default()
        .hash(&mut h);
    ing.metadata.annotations.hash(&mut h);
    ing.metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .hash(&mut h);
    h.finish()
}

/// Runs one reflector until `stop`; `routes_changed(object, deleted)` says whether an
/// event can change the routes (and wakes the builder).
fn reflect<K>(
    api: Api<K>,
    config: watcher::Config,
    kind: &'static str,
    provider: Arc<IngressProvider>,
    stop: CancellationToken,
    mut routes_changed: impl FnMut(&K, bool) -> bool + Send + 'static,
) -> Store<K>
where
    K: kube::Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
{
    let (store, writer) = reflector::store::<K>();
    provider.watch_report(kind, |_| {});
    let stream = watcher::watcher(api, config)
        .modify(|o| {
            o.managed_fields_mut().clear();
            o.annotations_mut()
                .remove("kubectl.kubernetes.io/last-applied-configuration");
        })
        .default_backoff()
        .reflect(writer);
    tokio::spawn(async move {
        futures_util::pin_mut!(stream);
        loop {
            let event = tokio::select! {
                _ = stop.cancelled() => return,
                e = stream.next() => match e {
                    Some(e) => e,
                    None => return,
                },
            };
            match event {
                Ok(Event::Apply(o)) => {
                    if routes_changed(&o, false) {
                        provider.changed.notify_one();
                    }
                    if kind == "ingresses" {
                        provider.statuses.notify_one();
                    }
                }
                Ok(Event::Delete(o)) => {
                    routes_changed(&o, true);
                    provider.changed.notify_one();
                }
                Ok(Event::InitApply(o)) => {
                    routes_changed(&o, false);
                }
                Ok(Event::Init) => {}
                Ok(Event::InitDone) => {
                    provider.watch_report(kind, |w| w.synced = true);
                    info!(kind, "ingress provider: listed");
                    provider.changed.notify_one();
                    provider.statuses.notify_one();
                }
                Err(e) => {
                    let reason = causes(&e);
                    warn!(kind, error = %reason, "ingress provider: watch failed; retrying after backoff");
                    provider.watch_report(kind, |w| {
                        w.restarts += 1;
                        w.last_error = Some((SystemTime::now(), reason));
                    });
                }
            }
        }
    });
    store
}

/// The model's settings from the snapshot's config; `None` once `[kubernetes.ingress]`
/// is gone from it.
fn settings(config: &Config) -> Option<Settings> {
    let ingress: &IngressConfig = config.kubernetes.as_ref()?.ingress.as_ref()?;
    Some(Settings {
        class: ingress.class.clone(),
        namespaces: ingress.namespaces.clone(),
        tenants: config
            .tenants
            .iter()
            .map(|t| (t.name.clone(), t.namespaces.clone()))
            .collect(),
    })
}

/// Waits for changes, debounces them and applies each rebuild, until `stop`.
async fn rebuild_loop(
    gateway: Arc<dyn Control>,
    provider: Arc<IngressProvider>,
    stores: Stores,
    models: watch::Sender<Option<Arc<Model>>>,
    stop: CancellationToken,
) {
    // Keeps each Ingress's translation, so a change re-translates only what it concerns.
    let mut builder = model::Builder::default();
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
        let objects = stores.clone();
        let mut taken = std::mem::take(&mut builder);
        let built = tokio::task::spawn_blocking(move || {
            let (ingresses, classes, services, slices, secrets) = (
                objects.ingresses.state(),
                objects.classes.state(),
                objects.services.state(),
                objects.slices.state(),
                objects.secrets.state(),
            );
            let model = taken.build(
                &Objects {
                    ingresses: &ingresses,
                    classes: &classes,
                    services: &services,
                    slices: &slices,
                    secrets: &secrets,
                },
                &settings,
            );
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

/// Runs the status and Event writer for each term this replica leads.
#[allow(clippy::too_many_arguments)]
async fn lead(
    client: kube::Client,
    gateway: Arc<dyn Control>,
    provider: Arc<IngressProvider>,
    ingresses: Store<Ingress>,
    mut models: watch::Receiver<Option<Arc<Model>>>,
    mut leadership: watch::Receiver<Leadership>,
    identity: String,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            r = leadership.wait_for(|l| l.leading) => if r.is_err() { return },
        }
        info!("ingress provider: leading; writing Ingress statuses and Events");
        let term = term(
            &client,
            &gateway,
            &provider,
            &ingresses,
            &mut models,
            &identity,
        );
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = leadership.wait_for(|l| !l.leading) => {}
            _ = term => {}
        }
        info!("ingress provider: no longer leading; stopped writing statuses and Events");
    }
}

/// One term: after every new model, every status-changing event and every resync, write
/// what is due. Never returns on its own.
async fn term(
    client: &kube::Client,
    gateway: &Arc<dyn Control>,
    provider: &IngressProvider,
    ingresses: &Store<Ingress>,
    models: &mut watch::Receiver<Option<Arc<Model>>>,
    identity: &str,
) {
    let mut log = EventLog::default();
    let mut writer: Option<StatusWriter> = None;
    let mut resync = tokio::time::interval(STATUS_RESYNC);
    loop {
        let model = models.borrow_and_update().clone();
        // The address is read each time: a reload may set or change it.
        let address = gateway
            .snapshot()
            .config
            .kubernetes
            .as_ref()
            .and_then(|k| k.ingress.as_ref())
            .and_then(|i| i.publish_address.clone());
        if let Some(model) = model {
            let result = events::emit(client, &mut log, &model, identity).await;
            lock(&provider.report).events_error = result.err();
            // A writer lives for the whole term once there was an address: when a reload
            // changes or removes it, the old one is still to be cleared.
            if writer.is_none() && address.is_some() {
                writer = Some(StatusWriter::new(client.clone()));
            }
            if let Some(w) = writer.as_mut() {
                w.publish(address);
                let outcome = w.sync(&ingresses.state(), &model).await;
                if outcome.written + outcome.cleared > 0 {
                    info!(
                        written = outcome.written,
                        cleared = outcome.cleared,
                        failed = outcome.failed,
                        "ingress statuses written"
                    );
                }
                lock(&provider.report).status_error = outcome.error;
            }
        }
        tokio::select! {
            r = models.changed() => if r.is_err() {
                // The builder has stopped: so is the gateway.
                std::future::pending::<()>().await;
            },
            _ = provider.statuses.notified() => {
                tokio::time::sleep(STATUS_SETTLE).await;
            }
            _ = resync.tick() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ingress(annotations: Value, spec: Value, status: Value) -> Ingress {
        serde_json::from_value(json!({
            "metadata": {"namespace": "web", "name": "app", "uid": "u1", "annotations": annotations},
            "spec": spec,
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_status_write_does_not_count_as_a_routing_change() {
        let spec = json!({"rules": [{"host": "app.example"}]});
        let base = ingress(json!({}), spec.clone(), json!({}));
        let written = ingress(
            json!({}),
            spec.clone(),
            json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}),
        );
        assert_eq!(routing_fingerprint(&base), routing_fingerprint(&written));
        let annotated = ingress(json!({"leafgate.io/tenant": "x"}), spec, json!({}));
        assert_ne!(routing_fingerprint(&base), routing_fingerprint(&annotated));
        let moved = ingress(
            json!({}),
            json!({"rules": [{"host": "b.example"}]}),
            json!({}),
        );
        assert_ne!(routing_fingerprint(&base), routing_fingerprint(&moved));
    }

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
        assert_eq!(s.tenants, vec![("t".to_string(), vec!["t-*".to_string()])]);
        let without = Config::parse(&dir.path().join("b.toml"), &src("")).unwrap();
        assert!(settings(&without).is_none());
    }
}
