//! The provider's five reflectors on the root cluster (`watcher(..).default_backoff()
//! .reflect(writer)`, each restarted with backoff by kube-runtime): Ingresses,
//! IngressClasses, Services, EndpointSlices and `kubernetes.io/tls` Secrets. Each event
//! that can change routes wakes the builder; an Ingress's status alone only asks the
//! leader to look again.

use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::SystemTime;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::api::{Api, ResourceExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::errors::{self, Causes};

use super::state::IngressProvider;

/// The reflectors' stores.
#[derive(Clone)]
pub(super) struct Stores {
    pub(super) ingresses: Store<Ingress>,
    pub(super) classes: Store<IngressClass>,
    pub(super) services: Store<Service>,
    pub(super) slices: Store<EndpointSlice>,
    pub(super) secrets: Store<Secret>,
}

/// Starts the five reflectors; they run until `stop`.
pub(super) fn start_reflectors(
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
                    let reason = errors::describe(&e, Causes::All);
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

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
}
