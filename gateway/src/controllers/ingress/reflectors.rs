//! The provider's reflectors on the root cluster (`watcher(..).default_backoff()
//! .reflect(writer)`, each restarted with backoff by kube-runtime): Services,
//! EndpointSlices and `kubernetes.io/tls` Secrets for both sources; Ingresses and
//! IngressClasses with `[kubernetes.ingress]`; GatewayClasses, Gateways, HTTPRoutes,
//! ReferenceGrants and Namespaces with `[kubernetes.gateway]`. Each event that can change
//! routes is noted in the provider's [`Changes`] (for the Gateway API translation, in its
//! own notes: the HTTPRoutes and Services by name, its other kinds as a change alone) and
//! wakes the builder; a status write alone only asks the leader
//! to look again. A relist (the first list included) changes everything.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use kube::api::{Api, ResourceExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::errors::{self, Causes};
use crate::k8s::gateway::incremental::Source as GatewaySource;
use crate::k8s::gateway::types::{Gateway, GatewayClass, HttpRoute, ReferenceGrant};
use crate::k8s::ingress::{Changes, Key, Source, key_of, slice_service};

use super::state::{GatewayNotes, IngressProvider, lock};

/// The reflectors' stores.
#[derive(Clone)]
pub(super) struct Stores {
    /// With `[kubernetes.ingress]`.
    pub(super) ingress: Option<IngressStores>,
    /// With `[kubernetes.gateway]`.
    pub(super) gateway: Option<GatewayStores>,
    pub(super) services: Store<Service>,
    pub(super) slices: Store<EndpointSlice>,
    pub(super) secrets: Store<Secret>,
    /// EndpointSlices by the Service they are labelled with. It may hold a slice deleted
    /// during a relist: [`Source::slices`] reads each from the store.
    slice_index: Arc<Mutex<SliceIndex>>,
}

#[derive(Clone)]
pub(super) struct IngressStores {
    pub(super) ingresses: Store<Ingress>,
    pub(super) classes: Store<IngressClass>,
}

#[derive(Clone)]
pub(super) struct GatewayStores {
    pub(super) classes: Store<GatewayClass>,
    pub(super) gateways: Store<Gateway>,
    pub(super) routes: Store<HttpRoute>,
    pub(super) grants: Store<ReferenceGrant>,
    pub(super) namespaces: Store<Namespace>,
}

impl Source for Stores {
    fn ingresses(&self) -> Vec<Arc<Ingress>> {
        self.ingress
            .as_ref()
            .map(|i| i.ingresses.state())
            .unwrap_or_default()
    }
    fn ingress(&self, namespace: &str, name: &str) -> Option<Arc<Ingress>> {
        self.ingress
            .as_ref()?
            .ingresses
            .get(&ObjectRef::new(name).within(namespace))
    }
    fn classes(&self) -> Vec<Arc<IngressClass>> {
        self.ingress
            .as_ref()
            .map(|i| i.classes.state())
            .unwrap_or_default()
    }
    fn service(&self, namespace: &str, name: &str) -> Option<Arc<Service>> {
        self.services.get(&ObjectRef::new(name).within(namespace))
    }
    fn slices(&self, namespace: &str, service: &str) -> Vec<Arc<EndpointSlice>> {
        let key = (namespace.to_string(), service.to_string());
        let names = lock(&self.slice_index).names(&key);
        names
            .iter()
            .filter_map(|name| self.slices.get(&ObjectRef::new(name).within(namespace)))
            .filter(|s| slice_service(s).as_ref() == Some(&key))
            .collect()
    }
    fn secret(&self, namespace: &str, name: &str) -> Option<Arc<Secret>> {
        self.secrets.get(&ObjectRef::new(name).within(namespace))
    }
}

/// The HTTPRoutes, Services and EndpointSlices as the Gateway API translation reads them.
impl GatewaySource for Stores {
    fn routes(&self) -> Vec<Arc<HttpRoute>> {
        (self.gateway.as_ref())
            .map(|g| g.routes.state())
            .unwrap_or_default()
    }
    fn route(&self, namespace: &str, name: &str) -> Option<Arc<HttpRoute>> {
        (self.gateway.as_ref()?.routes).get(&ObjectRef::new(name).within(namespace))
    }
    fn services(&self) -> Vec<Arc<Service>> {
        self.services.state()
    }
    fn service(&self, namespace: &str, name: &str) -> Option<Arc<Service>> {
        Source::service(self, namespace, name)
    }
    fn slices(&self) -> Vec<Arc<EndpointSlice>> {
        self.slices.state()
    }
    fn slices_of(&self, namespace: &str, service: &str) -> Vec<Arc<EndpointSlice>> {
        Source::slices(self, namespace, service)
    }
}

/// Starts the reflectors the sources need (`ingress`, `gateway`: whether each is
/// configured); they run until `stop`.
pub(super) fn start_reflectors(
    client: &kube::Client,
    provider: &Arc<IngressProvider>,
    ingress: bool,
    gateway: bool,
    stop: &CancellationToken,
) -> Stores {
    let all = watcher::Config::default();
    let slice_index: Arc<Mutex<SliceIndex>> = Arc::default();
    let index = slice_index.clone();
    // A Service, slice or Secret may be a Gateway route's too.
    let notes = provider.gateway_notes();
    let (on_slice, on_service, on_secret) = (notes.clone(), notes.clone(), notes.clone());
    let slices = reflect(
        Api::all(client.clone()),
        all.clone(),
        "endpointslices",
        provider.clone(),
        stop.clone(),
        move |slice: &EndpointSlice, deleted, changes: &mut Changes| {
            let mut services = Changes::default();
            lock(&index).note(slice, deleted, &mut services);
            on_slice.note(|g| g.services.extend(services.services.iter().cloned()));
            changes.services.extend(services.services);
            true
        },
    );
    Stores {
        ingress: ingress.then(|| ingress_reflectors(client, provider, stop)),
        gateway: gateway.then(|| gateway_reflectors(client, provider, notes, stop)),
        services: reflect(
            Api::all(client.clone()),
            all.clone(),
            "services",
            provider.clone(),
            stop.clone(),
            move |s: &Service, _, changes: &mut Changes| {
                let key = key_of(&s.metadata);
                on_service.note(|g| {
                    g.services.insert(key.clone());
                });
                changes.services.insert(key);
                true
            },
        ),
        slices,
        secrets: reflect(
            Api::all(client.clone()),
            all.fields("type=kubernetes.io/tls"),
            "secrets",
            provider.clone(),
            stop.clone(),
            move |s: &Secret, _, changes: &mut Changes| {
                changes.secrets.insert(key_of(&s.metadata));
                on_secret.note(|_| {});
                true
            },
        ),
        slice_index,
    }
}

fn ingress_reflectors(
    client: &kube::Client,
    provider: &Arc<IngressProvider>,
    stop: &CancellationToken,
) -> IngressStores {
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
        move |ing: &Ingress, deleted, changes: &mut Changes| {
            let uid = ing.uid().unwrap_or_default();
            let changed = match deleted {
                true => {
                    seen.remove(&uid);
                    true
                }
                false => {
                    let print = routing_fingerprint(ing);
                    seen.insert(uid, print) != Some(print)
                }
            };
            if changed {
                changes.ingresses.insert(key_of(&ing.metadata));
            }
            changed
        },
    );
    IngressStores {
        ingresses,
        classes: reflect(
            Api::all(client.clone()),
            all,
            "ingressclasses",
            provider.clone(),
            stop.clone(),
            |_: &IngressClass, _, changes: &mut Changes| {
                changes.all = true;
                true
            },
        ),
    }
}

/// The Gateway API kinds and Namespaces (for `allowedRoutes` selectors). A GatewayClass,
/// Gateway or HTTPRoute changes routes when its generation does (the spec; a status write
/// leaves it), or when it goes; a ReferenceGrant or Namespace at every change.
fn gateway_reflectors(
    client: &kube::Client,
    provider: &Arc<IngressProvider>,
    notes: Arc<GatewayNotes>,
    stop: &CancellationToken,
) -> GatewayStores {
    /// Notes an object whose generation moved, or that went: by name when `by_name` (the
    /// HTTPRoutes, the translation looks at those it is told), else as a change alone.
    fn generations<K: kube::Resource>(
        notes: &Arc<GatewayNotes>,
        by_name: bool,
    ) -> impl FnMut(&K, bool, &mut Changes) -> bool + Send + 'static {
        let notes = notes.clone();
        let mut seen: HashMap<String, i64> = HashMap::new();
        move |o: &K, deleted, _: &mut Changes| {
            let uid = o.meta().uid.clone().unwrap_or_default();
            let moved = match deleted {
                true => {
                    seen.remove(&uid);
                    true
                }
                false => seen.insert(uid, o.meta().generation.unwrap_or(0)) != o.meta().generation,
            };
            if moved {
                notes.note(|g| {
                    if by_name {
                        g.routes.insert(key_of(o.meta()));
                    }
                });
            }
            moved
        }
    }
    fn always<K>(
        notes: &Arc<GatewayNotes>,
    ) -> impl FnMut(&K, bool, &mut Changes) -> bool + Send + 'static {
        let notes = notes.clone();
        move |_: &K, _, _: &mut Changes| {
            notes.note(|_| {});
            true
        }
    }
    let all = watcher::Config::default();
    GatewayStores {
        classes: reflect(
            Api::all(client.clone()),
            all.clone(),
            "gatewayclasses",
            provider.clone(),
            stop.clone(),
            generations::<GatewayClass>(&notes, false),
        ),
        gateways: reflect(
            Api::all(client.clone()),
            all.clone(),
            "gateways",
            provider.clone(),
            stop.clone(),
            generations::<Gateway>(&notes, false),
        ),
        routes: reflect(
            Api::all(client.clone()),
            all.clone(),
            "httproutes",
            provider.clone(),
            stop.clone(),
            generations::<HttpRoute>(&notes, true),
        ),
        grants: reflect(
            Api::all(client.clone()),
            all.clone(),
            "referencegrants",
            provider.clone(),
            stop.clone(),
            always::<ReferenceGrant>(&notes),
        ),
        namespaces: reflect(
            Api::all(client.clone()),
            all,
            "namespaces",
            provider.clone(),
            stop.clone(),
            always::<Namespace>(&notes),
        ),
    }
}

/// Which EndpointSlices each Service has, by their label, as the slice events tell it.
#[derive(Debug, Default)]
struct SliceIndex {
    /// Slice names by the Service they are labelled with.
    by_service: HashMap<Key, BTreeSet<String>>,
    /// The Service each slice was last labelled with, so a relabelled or deleted slice
    /// changes the Service it left too.
    service_of: HashMap<Key, Key>,
}

impl SliceIndex {
    /// Takes in one slice event, noting in `changes` each Service it concerns.
    fn note(&mut self, slice: &EndpointSlice, deleted: bool, changes: &mut Changes) {
        let key = key_of(&slice.metadata);
        let now = slice_service(slice).filter(|_| !deleted);
        let before = match &now {
            Some(service) => self.service_of.insert(key.clone(), service.clone()),
            None => self.service_of.remove(&key),
        };
        if let Some(service) = before.filter(|b| Some(b) != now.as_ref()) {
            if let Some(set) = self.by_service.get_mut(&service) {
                set.remove(&key.1);
                if set.is_empty() {
                    self.by_service.remove(&service);
                }
            }
            changes.services.insert(service);
        }
        if let Some(service) = now {
            self.by_service
                .entry(service.clone())
                .or_default()
                .insert(key.1);
            changes.services.insert(service);
        }
    }

    /// The names of the slices labelled with `service`'s name.
    fn names(&self, service: &Key) -> Vec<String> {
        self.by_service
            .get(service)
            .map(|n| n.iter().cloned().collect())
            .unwrap_or_default()
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

/// The kinds whose status the leader writes: any event of theirs asks it to look again.
const STATUSES: [&str; 4] = ["ingresses", "gatewayclasses", "gateways", "httproutes"];

/// Runs one reflector until `stop`; `routes_changed(object, deleted, changes)` notes in
/// `changes` what an event changed and says whether it can change the routes (and wakes
/// the builder).
fn reflect<K>(
    api: Api<K>,
    config: watcher::Config,
    kind: &'static str,
    provider: Arc<IngressProvider>,
    stop: CancellationToken,
    mut routes_changed: impl FnMut(&K, bool, &mut Changes) -> bool + Send + 'static,
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
                    if routes_changed(&o, false, &mut lock(&provider.changes)) {
                        provider.changed.notify_one();
                    }
                    if STATUSES.contains(&kind) {
                        provider.statuses.notify_one();
                    }
                }
                Ok(Event::Delete(o)) => {
                    routes_changed(&o, true, &mut lock(&provider.changes));
                    provider.changed.notify_one();
                }
                // A relist: the store is replaced at its end, objects deleted meanwhile
                // with no event, so the next build looks at everything.
                Ok(Event::InitApply(o)) => {
                    routes_changed(&o, false, &mut lock(&provider.changes));
                }
                Ok(Event::Init) => {}
                Ok(Event::InitDone) => {
                    lock(&provider.changes).all = true;
                    // Objects deleted during the relist went without an event.
                    provider.gateway_changed();
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

    fn slice(name: &str, service: &str) -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"namespace": "web", "name": name,
                         "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4", "endpoints": []
        }))
        .unwrap()
    }

    fn key(name: &str) -> Key {
        ("web".to_string(), name.to_string())
    }

    /// The Services one event changed, sorted.
    fn noted(index: &mut SliceIndex, slice: &EndpointSlice, deleted: bool) -> Vec<String> {
        let mut changes = Changes::default();
        index.note(slice, deleted, &mut changes);
        let mut services: Vec<String> = changes.services.into_iter().map(|k| k.1).collect();
        services.sort();
        services
    }

    #[test]
    fn a_relabelled_or_deleted_slice_changes_the_service_it_left() {
        let mut index = SliceIndex::default();
        assert_eq!(noted(&mut index, &slice("s-1", "a"), false), ["a"]);
        assert_eq!(noted(&mut index, &slice("s-2", "a"), false), ["a"]);
        assert_eq!(index.names(&key("a")), ["s-1", "s-2"]);
        // Someone relabels s-1 to Service b: a loses it, both Services are built again.
        assert_eq!(noted(&mut index, &slice("s-1", "b"), false), ["a", "b"]);
        assert_eq!(index.names(&key("a")), ["s-2"]);
        assert_eq!(index.names(&key("b")), ["s-1"]);
        // A label taken off is a slice gone from b.
        let mut unlabelled = slice("s-1", "b");
        unlabelled.metadata.labels = None;
        assert_eq!(noted(&mut index, &unlabelled, false), ["b"]);
        assert!(index.names(&key("b")).is_empty());
        // Deleted: a loses s-2 and forgets the Service.
        assert_eq!(noted(&mut index, &slice("s-2", "a"), true), ["a"]);
        assert!(index.by_service.is_empty() && index.service_of.is_empty());
    }
}
