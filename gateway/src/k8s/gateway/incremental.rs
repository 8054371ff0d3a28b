//! The translation kept between builds: a [`Translator`] remembers each HTTPRoute's part
//! ([`RouteOut`]: its status, the listeners it attaches to, its entries) with a digest of
//! every input it read, and translates again only the routes whose digest changed. With
//! 10,000 routes, a moved backend translates the routes naming that Service, a new route
//! translates that route, and a changed Gateway the routes naming it.
//!
//! A route's inputs: the route (uid and generation: the leader's own status writes bump
//! only its resourceVersion), the settings (tenants, backend policy, controller name),
//! each parent Gateway as routes see it ([`GatewayState::digest`]), its namespace's labels
//! (`allowedRoutes.namespaces.selector`), each Service it names with its EndpointSlices
//! (their resourceVersions), and the ReferenceGrants of each other namespace it names.
//!
//! What a build costs is what it is told changed ([`Changes`]: the reflectors name the
//! HTTPRoutes and Services): the inputs every route reads (settings, Gateways, Namespaces,
//! grants: few objects) are digested at each build, and while that digest holds, only the
//! routes named and those naming a Service named are digested, against an index of the
//! Services they name alone. The model is assembled from what is kept in order across
//! builds: the statuses by route age, the entries in precedence order (the route's age in
//! the key in place of its index among routes, so an entry keeps its key while routes
//! come and go), the attachments per listener. Every build makes the model [`translate`]
//! makes from scratch (the tests check it).

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::jiff::Timestamp;

use super::entries::Key;
use super::model::{GatewayRoute, ListenerKey, Model, Objects, RouteStatusOut, Settings};
use super::translate::{self, GatewayState, RouteOut};
use super::types::{GROUP, HttpRoute};
use crate::k8s::ingress::backends::{Backends, SERVICE_NAME_LABEL};
use crate::k8s::ingress::certs::Certs;

/// An object's `(namespace, name)`.
pub type Name = (String, String);

/// What changed since the last build, as the reflectors' events tell it: the HTTPRoutes
/// whose generation moved (or that went), and the Services whose object or EndpointSlices
/// changed. Every other input (classes, Gateways, grants, Namespaces, Secrets, the
/// settings) is few objects, read again at each build and compared with the last one's.
#[derive(Debug, Default, Clone)]
pub struct Changes {
    /// Every route is looked at again: the first build, a relist (objects may have gone
    /// without an event), a build that did not finish.
    pub all: bool,
    pub routes: HashSet<Name>,
    pub services: HashSet<Name>,
}

impl Changes {
    pub fn everything() -> Changes {
        Changes {
            all: true,
            ..Changes::default()
        }
    }

    /// `other`'s changes too.
    pub fn extend(&mut self, other: Changes) {
        self.all |= other.all;
        self.routes.extend(other.routes);
        self.services.extend(other.services);
    }
}

/// Where a [`Translator`] reads HTTPRoutes, Services and EndpointSlices: all of them for a
/// build that looks at every route, by name for one that looks only at what changed.
pub trait Source {
    fn routes(&self) -> Vec<Arc<HttpRoute>>;
    fn route(&self, namespace: &str, name: &str) -> Option<Arc<HttpRoute>>;
    fn services(&self) -> Vec<Arc<Service>>;
    fn service(&self, namespace: &str, name: &str) -> Option<Arc<Service>>;
    fn slices(&self) -> Vec<Arc<EndpointSlice>>;
    /// The EndpointSlices labelled with Service `namespace/service`'s name.
    fn slices_of(&self, namespace: &str, service: &str) -> Vec<Arc<EndpointSlice>>;
}

fn named(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ns: &str,
    name: &str,
) -> bool {
    meta.namespace.as_deref() == Some(ns) && meta.name.as_deref() == Some(name)
}

/// The objects' own lists, searched (the translation from scratch reads only the lists).
impl Source for Objects<'_> {
    fn routes(&self) -> Vec<Arc<HttpRoute>> {
        self.routes.to_vec()
    }
    fn route(&self, namespace: &str, name: &str) -> Option<Arc<HttpRoute>> {
        let found = self
            .routes
            .iter()
            .find(|r| named(&r.metadata, namespace, name));
        found.cloned()
    }
    fn services(&self) -> Vec<Arc<Service>> {
        self.services.to_vec()
    }
    fn service(&self, namespace: &str, name: &str) -> Option<Arc<Service>> {
        let found = self
            .services
            .iter()
            .find(|s| named(&s.metadata, namespace, name));
        found.cloned()
    }
    fn slices(&self) -> Vec<Arc<EndpointSlice>> {
        self.slices.to_vec()
    }
    fn slices_of(&self, namespace: &str, service: &str) -> Vec<Arc<EndpointSlice>> {
        let labelled = |s: &&Arc<EndpointSlice>| {
            s.metadata.namespace.as_deref() == Some(namespace)
                && (s.metadata.labels.as_ref())
                    .and_then(|l| l.get(SERVICE_NAME_LABEL))
                    .is_some_and(|n| n == service)
        };
        self.slices.iter().filter(labelled).cloned().collect()
    }
}

/// The whole translation of `objects`, from scratch.
pub fn translate(objects: &Objects<'_>, settings: &Settings) -> Model {
    Translator::default().translate(objects, settings)
}

/// Each route's last translation, by namespace and name, with the digest of its inputs,
/// and what the model is assembled from, kept in order: the routes' statuses by age, their
/// entries in precedence order, the attachments per listener, and the routes naming each
/// Service.
#[derive(Default)]
pub struct Translator {
    kept: HashMap<Name, Kept>,
    /// Each route's status, oldest route first (`None`: it names no Gateway of ours).
    order: BTreeMap<Arc<Age>, Option<Arc<RouteStatusOut>>>,
    /// Every entry of every route, in the spec's precedence order.
    sorted: BTreeMap<Place, Arc<GatewayRoute>>,
    /// The routes naming each Service (by backendRef, whatever its kind).
    uses: HashMap<Name, HashSet<Name>>,
    /// The routes attached to each Gateway listener `(namespace, name, listener index)`.
    attached: HashMap<(String, String, usize), i32>,
    /// The digest of the inputs every route reads (settings, Gateways, Namespaces, grants)
    /// at the last build: when it changes, every route is looked at again.
    inputs: Option<u64>,
    /// The builds made, to tell the routes a build looking at all of them met.
    builds: u64,
    /// HTTPRoutes the last build translated again.
    pub translated: usize,
    /// HTTPRoutes the last build digested (every one, or those a change concerns).
    pub digested: usize,
}

/// A route's place among routes: oldest first, then by namespace and name (the spec's
/// order; `translate::age`).
type Age = (bool, Option<Timestamp>, String, String);

/// An entry's place in the model: its precedence key, with the route's age in place of
/// its index among routes, then its place among the route's entries (the order a stable
/// sort of the routes' entries in age order keeps).
type Place = (
    ListenerKey,
    (u8, Reverse<usize>),
    (u8, Reverse<usize>),
    bool,
    Reverse<usize>,
    Reverse<usize>,
    Arc<Age>,
    usize,
    usize,
    usize,
);

fn place(key: &Key, age: &Arc<Age>, at: usize) -> Place {
    (
        key.0.clone(),
        key.1,
        key.2,
        key.3,
        key.4,
        key.5,
        age.clone(),
        key.7,
        key.8,
        at,
    )
}

struct Kept {
    digest: u64,
    /// The last build looking at every route that met it.
    build: u64,
    age: Arc<Age>,
    /// The Services its backendRefs name.
    services: Vec<Name>,
    out: RouteOut,
}

fn name_of(route: &HttpRoute) -> Name {
    let meta = &route.metadata;
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

fn age_of(route: &HttpRoute) -> Age {
    let meta = &route.metadata;
    let created = meta.creation_timestamp.as_ref().map(|t| t.0);
    (
        created.is_none(),
        created,
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// The Services `route`'s backendRefs name, by namespace and name.
fn services_of(route: &HttpRoute) -> Vec<Name> {
    let namespace = route.metadata.namespace.as_deref().unwrap_or("");
    let mut names: Vec<Name> = (route.spec.rules.iter().flat_map(|r| &r.backend_refs))
        .map(|b| {
            let ns = b.namespace.as_deref().unwrap_or(namespace);
            (ns.to_string(), b.name.clone())
        })
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

fn hasher() -> impl Hasher {
    foldhash::fast::FixedState::with_seed(0x6c65_6166).build_hasher()
}

impl Translator {
    /// The model of `objects`, looking at every route and translating again only those
    /// whose inputs changed since the last build.
    pub fn translate(&mut self, objects: &Objects<'_>, settings: &Settings) -> Model {
        self.apply(objects, objects, &Changes::everything(), settings)
    }

    /// The model after `changes`: classes, Gateways, grants, Namespaces and Secrets are
    /// read from `objects` (its routes, Services and slices are not read), HTTPRoutes,
    /// Services and EndpointSlices from `source`. Unless the inputs every route reads
    /// changed (or `changes.all`), only the routes `changes` names and those naming a
    /// Service it names are looked at: the cost is what the change concerns, plus a walk
    /// of the kept statuses and entries to hand the model out.
    pub fn apply(
        &mut self,
        objects: &Objects<'_>,
        source: &dyn Source,
        changes: &Changes,
        settings: &Settings,
    ) -> Model {
        let mut model = Model::default();
        let (ours, classes) = translate::classes(objects, settings);
        model.classes = classes;
        let certs = Certs::index(objects.secrets);
        let mut states = translate::gateways(objects, settings, &ours, &certs);
        let index: HashMap<(&str, &str), usize> = states
            .iter()
            .enumerate()
            .map(|(i, s)| ((s.namespace, s.name), i))
            .collect();
        let inputs = Inputs::of(objects, settings, &states);
        let everything = changes.all || self.inputs != Some(inputs.digest);
        self.inputs = Some(inputs.digest);
        self.translated = 0;
        self.digested = 0;
        let read = Read {
            objects,
            settings,
            states: &states,
            index: &index,
            inputs: &inputs,
        };
        if everything {
            let (services, slices) = (source.services(), source.slices());
            let backends = Backends::index(&services, &slices);
            self.builds += 1;
            let build = self.builds;
            for route in source.routes() {
                self.look_at(name_of(&route), &route, &read, &backends, Some(build));
            }
            let gone: Vec<Name> = (self.kept.iter())
                .filter(|(_, k)| k.build != build)
                .map(|(name, _)| name.clone())
                .collect();
            for name in gone {
                self.forget(&name);
            }
        } else {
            let mut names: HashSet<&Name> = changes.routes.iter().collect();
            for s in &changes.services {
                names.extend(self.uses.get(s).into_iter().flatten());
            }
            let routes: Vec<(Name, Option<Arc<HttpRoute>>)> = names
                .into_iter()
                .map(|n| (n.clone(), source.route(&n.0, &n.1)))
                .collect();
            // The Services these routes name, with their slices: the index reads them only.
            let mut wanted: HashSet<Name> = HashSet::new();
            let (mut services, mut slices) = (Vec::new(), Vec::new());
            for route in routes.iter().filter_map(|(_, r)| r.as_deref()) {
                for s in services_of(route) {
                    if wanted.insert(s.clone()) {
                        services.extend(source.service(&s.0, &s.1));
                        slices.extend(source.slices_of(&s.0, &s.1));
                    }
                }
            }
            let backends = Backends::index(&services, &slices);
            for (name, route) in routes {
                match route {
                    Some(route) => self.look_at(name, &route, &read, &backends, None),
                    None => {
                        self.forget(&name);
                    }
                }
            }
        }

        // Assembly: statuses by route age, attachments, entries in precedence order.
        model.http_routes = self.order.values().flatten().cloned().collect();
        for ((ns, name, li), n) in &self.attached {
            let state = index
                .get(&(ns.as_str(), name.as_str()))
                .map(|&i| &mut states[i]);
            if let Some(l) = state.and_then(|s| s.listeners.get_mut(*li)) {
                l.attached += *n;
            }
        }
        model.routes = self.sorted.values().cloned().collect();
        translate::finish(states, &mut model);
        model
    }

    /// Digests `route` and translates it again when that changed; `build`: the build
    /// looking at every route, which marks it met.
    fn look_at(
        &mut self,
        name: Name,
        route: &HttpRoute,
        read: &Read<'_, '_>,
        backends: &Backends<'_>,
        build: Option<u64>,
    ) {
        self.digested += 1;
        let digest = read.inputs.route(route, read.index, backends);
        if let Some(k) = self.kept.get_mut(&name)
            && k.digest == digest
        {
            k.build = build.unwrap_or(k.build);
            return;
        }
        self.translated += 1;
        let out = translate::route(
            route,
            read.states,
            read.index,
            read.objects,
            backends,
            read.settings,
        );
        let previous = self.forget(&name);
        let kept = Kept {
            digest,
            build: build.or(previous.map(|k| k.build)).unwrap_or(self.builds),
            age: Arc::new(age_of(route)),
            services: services_of(route),
            out,
        };
        self.keep(name, kept);
    }

    /// Takes a route out of the kept ones and every index.
    fn forget(&mut self, name: &Name) -> Option<Kept> {
        let k = self.kept.remove(name)?;
        self.order.remove(&k.age);
        for (at, (key, _)) in k.out.entries.iter().enumerate() {
            self.sorted.remove(&place(key, &k.age, at));
        }
        for s in &k.services {
            if let Some(routes) = self.uses.get_mut(s) {
                routes.remove(name);
                if routes.is_empty() {
                    self.uses.remove(s);
                }
            }
        }
        for (ns, gateway, li) in &k.out.attached {
            let key = (ns.clone(), gateway.clone(), *li);
            if let Some(n) = self.attached.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    self.attached.remove(&key);
                }
            }
        }
        Some(k)
    }

    /// Puts a route's translation into the kept ones and every index.
    fn keep(&mut self, name: Name, k: Kept) {
        self.order.insert(k.age.clone(), k.out.status.clone());
        for (at, (key, entry)) in k.out.entries.iter().enumerate() {
            self.sorted.insert(place(key, &k.age, at), entry.clone());
        }
        for s in &k.services {
            self.uses.entry(s.clone()).or_default().insert(name.clone());
        }
        for (ns, gateway, li) in &k.out.attached {
            *self
                .attached
                .entry((ns.clone(), gateway.clone(), *li))
                .or_default() += 1;
        }
        self.kept.insert(name, k);
    }
}

/// What a build reads besides the routes and their backends.
struct Read<'b, 'o> {
    objects: &'b Objects<'o>,
    settings: &'b Settings,
    states: &'b [GatewayState<'o>],
    index: &'b HashMap<(&'o str, &'o str), usize>,
    inputs: &'b Inputs<'o>,
}

/// The inputs every route may read, digested once per build: the settings, each Gateway
/// as routes see it, each Namespace's labels and each namespace's ReferenceGrants; and all
/// of them as one digest, to tell whether any changed since the last build.
struct Inputs<'o> {
    settings: u64,
    gateways: Vec<u64>,
    namespaces: HashMap<&'o str, u64>,
    grants: HashMap<&'o str, u64>,
    digest: u64,
}

impl<'o> Inputs<'o> {
    fn of(objects: &Objects<'o>, settings: &Settings, states: &[GatewayState<'o>]) -> Self {
        let settings = {
            let mut h = hasher();
            format!("{settings:?}").hash(&mut h);
            h.finish()
        };
        let gateways: Vec<u64> = states
            .iter()
            .map(|s| {
                let mut h = hasher();
                s.digest(&mut h);
                h.finish()
            })
            .collect();
        let namespaces: HashMap<&str, u64> = objects
            .namespaces
            .iter()
            .map(|n| {
                let mut h = hasher();
                n.metadata.labels.hash(&mut h);
                (n.metadata.name.as_deref().unwrap_or(""), h.finish())
            })
            .collect();
        let mut grants: HashMap<&str, u64> = HashMap::new();
        for g in objects.grants {
            let d = grants
                .entry(g.metadata.namespace.as_deref().unwrap_or(""))
                .or_default();
            let mut h = hasher();
            (&g.metadata.uid, &g.metadata.resource_version).hash(&mut h);
            // Order-free: the store's order is not the grants'.
            *d ^= h.finish();
        }
        // The stores' order is not the objects': each list in key order.
        let mut h = hasher();
        settings.hash(&mut h);
        let mut keyed: Vec<((&str, &str), u64)> = (states.iter().map(|s| (s.namespace, s.name)))
            .zip(gateways.iter().copied())
            .collect();
        keyed.sort_unstable();
        keyed.hash(&mut h);
        let mut sorted: Vec<(&str, u64)> = namespaces.iter().map(|(n, d)| (*n, *d)).collect();
        sorted.sort_unstable();
        sorted.hash(&mut h);
        let mut sorted: Vec<(&str, u64)> = grants.iter().map(|(n, d)| (*n, *d)).collect();
        sorted.sort_unstable();
        sorted.hash(&mut h);
        Inputs {
            settings,
            gateways,
            namespaces,
            grants,
            digest: h.finish(),
        }
    }

    /// The digest of what `route`'s translation reads.
    fn route(
        &self,
        route: &HttpRoute,
        index: &HashMap<(&str, &str), usize>,
        backends: &Backends<'_>,
    ) -> u64 {
        let mut h = hasher();
        let meta = &route.metadata;
        let namespace = meta.namespace.as_deref().unwrap_or("");
        self.settings.hash(&mut h);
        meta.uid.hash(&mut h);
        match meta.generation {
            Some(g) => g.hash(&mut h),
            None => meta.resource_version.hash(&mut h),
        }
        self.namespaces.get(namespace).hash(&mut h);
        for parent in &route.spec.parent_refs {
            if parent.group.as_deref().unwrap_or(GROUP) != GROUP
                || parent.kind.as_deref().unwrap_or("Gateway") != "Gateway"
            {
                continue;
            }
            let gw_ns = parent.namespace.as_deref().unwrap_or(namespace);
            index
                .get(&(gw_ns, parent.name.as_str()))
                .map(|&i| self.gateways[i])
                .hash(&mut h);
        }
        for b in route.spec.rules.iter().flat_map(|r| &r.backend_refs) {
            let ns = b.namespace.as_deref().unwrap_or(namespace);
            backends.digest(ns, &b.name, &mut h);
            if ns != namespace {
                self.grants.get(ns).hash(&mut h);
            }
        }
        h.finish()
    }
}
