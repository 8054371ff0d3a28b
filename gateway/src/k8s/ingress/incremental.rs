//! The model kept between builds and updated from what changed: a [`Builder`] is told by
//! the reflectors' events which Ingresses, Services (with their EndpointSlices) and Secrets
//! changed ([`Changes`]), translates again only the Ingresses those concern, and merges
//! again only the hosts they name. With 10,000 Ingresses a change to one costs the work of
//! that one and of the Ingresses sharing its hosts, not a pass over all of them.
//!
//! Who wins a host and a path depends only on the Ingresses naming that host, oldest first
//! (see `translate::merge`), so the merge is kept per host: each host's owner, the winner
//! of each of its paths with the losers, and the certificates listed for it. An Ingress's
//! own report (refusals, problems, certificates) is then read off the states of its hosts.
//!
//! [`build`] makes the model from scratch with `translate::merge` over every Ingress; the
//! builder always makes the model `build` makes from the same objects (the tests check it
//! on every model they build).
//!
//! Long file: the builder is one state machine (the per-host states, the reverse indexes
//! from objects to the Ingresses and hosts they concern, and the passes that update them),
//! and its invariant is that it makes what `build` makes; split, each half would hold the
//! other's indexes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use rustls::sign::CertifiedKey;

use super::backends::{Backends, SERVICE_NAME_LABEL};
use super::certs::Certs;
use super::class::{ClassDecision, ClassSelector};
use super::model::{
    Conflict, IngressRef, IngressRoute, Model, Objects, Problem, Refusal, Refused, Settings,
};
use super::translate::{
    Item, Reads, Served, Translated, age_order, merge, namespace_selected, not_allowed, taken_from,
    translate,
};
use crate::config::{HostPattern, PathMatch};

/// An object's `(namespace, name)`.
pub type Key = (String, String);

/// What changed since the last build, as the reflectors' events tell it.
#[derive(Debug, Default, Clone)]
pub struct Changes {
    /// Everything is looked at again: the first build, a reflector's relist, an
    /// IngressClass.
    pub all: bool,
    pub ingresses: HashSet<Key>,
    /// Services, by their own key, whose object or EndpointSlices changed.
    pub services: HashSet<Key>,
    pub secrets: HashSet<Key>,
}

impl Changes {
    /// A change that makes the builder look at everything.
    pub fn everything() -> Self {
        Changes {
            all: true,
            ..Changes::default()
        }
    }
}

/// Where a [`Builder`] reads the objects: the reflectors' stores, or [`Indexed`] objects.
pub trait Source {
    /// Every Ingress (a full build).
    fn ingresses(&self) -> Vec<Arc<Ingress>>;
    fn ingress(&self, namespace: &str, name: &str) -> Option<Arc<Ingress>>;
    fn classes(&self) -> Vec<Arc<IngressClass>>;
    fn service(&self, namespace: &str, name: &str) -> Option<Arc<Service>>;
    /// The EndpointSlices labelled with Service `namespace/service`'s name.
    fn slices(&self, namespace: &str, service: &str) -> Vec<Arc<EndpointSlice>>;
    fn secret(&self, namespace: &str, name: &str) -> Option<Arc<Secret>>;
}

/// `(namespace, name)` of an object.
pub fn key_of(meta: &ObjectMeta) -> Key {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// The service an EndpointSlice belongs to, by its label.
pub fn slice_service(slice: &EndpointSlice) -> Option<Key> {
    let service = slice.metadata.labels.as_ref()?.get(SERVICE_NAME_LABEL)?;
    Some((
        slice.metadata.namespace.clone().unwrap_or_default(),
        service.clone(),
    ))
}

/// [`Objects`] indexed by key, as a [`Source`] (tests and benchmarks).
#[derive(Debug, Default, Clone)]
pub struct Indexed {
    ingresses: HashMap<Key, Arc<Ingress>>,
    classes: Vec<Arc<IngressClass>>,
    services: HashMap<Key, Arc<Service>>,
    slices: HashMap<Key, Vec<Arc<EndpointSlice>>>,
    secrets: HashMap<Key, Arc<Secret>>,
}

impl Indexed {
    pub fn new(objects: &Objects<'_>) -> Self {
        let mut index = Indexed {
            classes: objects.classes.to_vec(),
            ..Indexed::default()
        };
        for i in objects.ingresses {
            index.ingresses.insert(key_of(&i.metadata), i.clone());
        }
        for s in objects.services {
            index.services.insert(key_of(&s.metadata), s.clone());
        }
        for s in objects.slices {
            if let Some(service) = slice_service(s) {
                index.slices.entry(service).or_default().push(s.clone());
            }
        }
        for s in objects.secrets {
            index.secrets.insert(key_of(&s.metadata), s.clone());
        }
        index
    }

    /// Puts `ingress` in place of the one with its namespace and name; its key.
    pub fn put_ingress(&mut self, ingress: Arc<Ingress>) -> Key {
        let key = key_of(&ingress.metadata);
        self.ingresses.insert(key.clone(), ingress);
        key
    }
}

fn key(namespace: &str, name: &str) -> Key {
    (namespace.to_string(), name.to_string())
}

impl Source for Indexed {
    fn ingresses(&self) -> Vec<Arc<Ingress>> {
        self.ingresses.values().cloned().collect()
    }
    fn ingress(&self, namespace: &str, name: &str) -> Option<Arc<Ingress>> {
        self.ingresses.get(&key(namespace, name)).cloned()
    }
    fn classes(&self) -> Vec<Arc<IngressClass>> {
        self.classes.clone()
    }
    fn service(&self, namespace: &str, name: &str) -> Option<Arc<Service>> {
        self.services.get(&key(namespace, name)).cloned()
    }
    fn slices(&self, namespace: &str, service: &str) -> Vec<Arc<EndpointSlice>> {
        self.slices
            .get(&key(namespace, service))
            .cloned()
            .unwrap_or_default()
    }
    fn secret(&self, namespace: &str, name: &str) -> Option<Arc<Secret>> {
        self.secrets.get(&key(namespace, name)).cloned()
    }
}

/// The order Ingresses win in: oldest `creationTimestamp` first (one without comes last),
/// then namespace, then name (`translate::age_order`, owned).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Age {
    unknown: bool,
    created: Option<Timestamp>,
    namespace: String,
    name: String,
}

impl Age {
    fn of(ingress: &Ingress) -> Age {
        let (unknown, _, namespace, name) = age_order(ingress);
        Age {
            unknown,
            created: ingress.metadata.creation_timestamp.as_ref().map(|t| t.0),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    fn key(&self) -> Key {
        (self.namespace.clone(), self.name.clone())
    }
}

/// One Ingress of ours: its translation and what the merge gave it.
#[derive(Debug)]
struct Entry {
    translated: Translated,
    reads: Reads,
    /// Each host it names, with its items and certificates naming it (in their order):
    /// merging a host looks its members' up here, so an Ingress naming thousands of hosts
    /// costs each of them one lookup.
    hosts: HashMap<HostPattern, Vec<Named>>,
    /// Its part of the model's report.
    out: Outcome,
}

/// An item (`Served::items`) or a certificate (`Served::certs`) of an Ingress, by index.
#[derive(Debug, Clone, Copy)]
enum Named {
    Item(usize),
    Cert(usize),
}

#[derive(Debug, Default)]
struct Outcome {
    refused: Vec<Refused>,
    problems: Vec<Problem>,
    certs: Vec<(HostPattern, Arc<CertifiedKey>)>,
}

/// The merge of one host over the Ingresses naming it.
#[derive(Debug, Default)]
struct HostState {
    /// The Ingresses naming it, oldest first.
    members: BTreeSet<Age>,
    /// The oldest Ingress that took it, and the tenant owning its namespace.
    owner: Option<(Key, Option<usize>)>,
    claims: HashMap<PathMatch, Claim>,
    /// Each certificate chain served for it: the certificate and who listed it first
    /// (the Ingress and the index in its `certs`).
    listed: Vec<(Arc<CertifiedKey>, Key, usize)>,
}

/// The route that won a path, and who else asked for it (`ns/name`, in order).
#[derive(Debug)]
struct Claim {
    winner: Arc<IngressRoute>,
    losers: Vec<String>,
}

/// Keeps the model between builds and updates it from [`Changes`]. One per provider;
/// [`Default`] starts empty (the first build is a full one).
#[derive(Debug, Default)]
pub struct Builder {
    /// The settings and class decision the model was built under: when either changes,
    /// everything is built again.
    under: Option<(Settings, ClassDecision)>,
    /// Ours, oldest first.
    entries: BTreeMap<Age, Entry>,
    ages: HashMap<Key, Age>,
    hosts: HashMap<HostPattern, HostState>,
    /// Service -> the Ingresses whose translation read it; the same for Secrets.
    service_readers: HashMap<Key, HashSet<Key>>,
    secret_readers: HashMap<Key, HashSet<Key>>,
    served: BTreeSet<IngressRef>,
    /// The winning routes by name.
    routes: BTreeMap<String, Arc<IngressRoute>>,
    conflicts: BTreeMap<(String, String), Conflict>,
}

impl Builder {
    /// The model after `changes`, read from `source`, under `settings`: what [`build`]
    /// makes from the same objects.
    pub fn apply(&mut self, source: &dyn Source, changes: Changes, settings: &Settings) -> Model {
        let class_list = source.classes();
        let classes = ClassSelector::new(&class_list, &settings.class);
        let under = (settings.clone(), classes.decision());
        let everything = changes.all || self.under.as_ref() != Some(&under);

        // The Ingresses to translate again (or drop), with their current objects.
        let dirty: Vec<(Key, Option<Arc<Ingress>>)> = if everything {
            *self = Builder {
                under: Some(under),
                ..Builder::default()
            };
            source
                .ingresses()
                .into_iter()
                .map(|i| (key_of(&i.metadata), Some(i)))
                .collect()
        } else {
            let mut keys = changes.ingresses;
            let readers = [
                (&changes.services, &self.service_readers),
                (&changes.secrets, &self.secret_readers),
            ];
            for (changed, readers) in readers {
                for object in changed {
                    keys.extend(readers.get(object).into_iter().flatten().cloned());
                }
            }
            keys.into_iter()
                .map(|k| {
                    let ingress = source.ingress(&k.0, &k.1);
                    (k, ingress)
                })
                .collect()
        };
        let dirty: Vec<(Key, Option<Arc<Ingress>>)> = dirty
            .into_iter()
            .map(|(k, i)| {
                let ours = i.filter(|i| classes.ours(i) && namespace_selected(i, settings));
                (k, ours)
            })
            .collect();

        // One index over just the Services, slices and Secrets those Ingresses name.
        let needed = Needed::of(dirty.iter().filter_map(|(_, i)| i.as_deref()), source);
        let backends = Backends::index(&needed.services, &needed.slices);
        let certs = Certs::index(&needed.secrets);

        let mut touched: HashSet<HostPattern> = HashSet::new();
        let mut replay: HashSet<Key> = HashSet::new();
        for (key, ingress) in dirty {
            self.remove(&key, &mut touched);
            if let Some(ingress) = ingress {
                let mut reads = Reads::default();
                let translated = translate(&ingress, &backends, &certs, settings, &mut reads);
                self.insert(
                    key.clone(),
                    Age::of(&ingress),
                    translated,
                    reads,
                    &mut touched,
                );
                replay.insert(key);
            }
        }
        for host in touched {
            self.merge_host(host, settings, &mut replay);
        }
        for key in replay {
            self.report(&key, settings);
        }
        self.model()
    }

    /// Forgets the Ingress `key`, noting the hosts it named.
    fn remove(&mut self, key: &Key, touched: &mut HashSet<HostPattern>) {
        let Some(age) = self.ages.remove(key) else {
            return;
        };
        let Some(entry) = self.entries.remove(&age) else {
            return;
        };
        for host in entry.hosts.into_keys() {
            if let Some(state) = self.hosts.get_mut(&host) {
                state.members.remove(&age);
            }
            touched.insert(host);
        }
        let reads = [
            (&entry.reads.services, &mut self.service_readers),
            (&entry.reads.secrets, &mut self.secret_readers),
        ];
        for (read, readers) in reads {
            for object in read {
                if let Some(set) = readers.get_mut(object) {
                    set.remove(key);
                    if set.is_empty() {
                        readers.remove(object);
                    }
                }
            }
        }
        if entry.translated.outcome.is_ok() {
            self.served.remove(&entry.translated.reference);
        }
    }

    /// Adds the Ingress `key`'s translation, noting the hosts it names.
    fn insert(
        &mut self,
        key: Key,
        age: Age,
        translated: Translated,
        reads: Reads,
        touched: &mut HashSet<HostPattern>,
    ) {
        let hosts = match &translated.outcome {
            Ok(served) => hosts_of(served),
            Err(_) => HashMap::new(),
        };
        for host in hosts.keys() {
            let state = self.hosts.entry(host.clone()).or_default();
            state.members.insert(age.clone());
            touched.insert(host.clone());
        }
        let reads_by = [
            (&reads.services, &mut self.service_readers),
            (&reads.secrets, &mut self.secret_readers),
        ];
        for (read, readers) in reads_by {
            for object in read {
                readers
                    .entry(object.clone())
                    .or_default()
                    .insert(key.clone());
            }
        }
        if translated.outcome.is_ok() {
            self.served.insert(translated.reference.clone());
        }
        self.ages.insert(key, age.clone());
        self.entries.insert(
            age,
            Entry {
                translated,
                reads,
                hosts,
                out: Outcome::default(),
            },
        );
    }

    /// Merges `host` again over the Ingresses naming it, oldest first, as
    /// `translate::merge` does for it; every one of them gets its report made again.
    fn merge_host(&mut self, host: HostPattern, settings: &Settings, replay: &mut HashSet<Key>) {
        let Some(state) = self.hosts.get_mut(&host) else {
            return;
        };
        for (path, claim) in state.claims.drain() {
            self.routes.remove(&claim.winner.name);
            if !claim.losers.is_empty() {
                self.conflicts.remove(&(host.to_string(), path.to_string()));
            }
        }
        state.owner = None;
        state.listed.clear();
        if state.members.is_empty() {
            self.hosts.remove(&host);
            return;
        }
        for age in &state.members {
            let Some(entry) = self.entries.get(age) else {
                continue;
            };
            let key = age.key();
            let Ok(served) = &entry.translated.outcome else {
                replay.insert(key);
                continue;
            };
            let me = &entry.translated.reference;
            let named = entry.hosts.get(&host).map_or(&[][..], |n| &n[..]);
            // Whether `host` is refused to this Ingress; the first asked owns it.
            let refused = |owner: &mut Option<(Key, Option<usize>)>| {
                not_allowed(settings, served.tenant, &host).is_some()
                    || settings.toml_hosts.owner_of(&host).is_some()
                    || {
                        let (owner, tenant) =
                            owner.get_or_insert_with(|| (key.clone(), served.tenant));
                        taken_from(
                            settings,
                            (&owner.0, &owner.1),
                            *tenant,
                            (&me.namespace, served.tenant),
                        )
                        .is_some()
                    }
            };
            for named in named {
                match *named {
                    Named::Item(i) => match &served.items[i] {
                        Item::Route { route, .. } => {
                            if refused(&mut state.owner) {
                                continue;
                            }
                            match state.claims.get_mut(&route.path) {
                                Some(claim) => claim.losers.push(me.to_string()),
                                None => {
                                    let claim = Claim {
                                        winner: route.clone(),
                                        losers: Vec::new(),
                                    };
                                    state.claims.insert(route.path.clone(), claim);
                                }
                            }
                        }
                        Item::Repeat { key: (_, path) } => {
                            if refused(&mut state.owner) {
                                continue;
                            }
                            if let Some(claim) = state.claims.get_mut(path)
                                && claim.winner.ingress != *me
                            {
                                claim.losers.push(me.to_string());
                            }
                        }
                    },
                    Named::Cert(j) => {
                        let cert = &served.certs[j].1;
                        // As its rules, but a TOML certificate for the host comes
                        // before ownership.
                        if not_allowed(settings, served.tenant, &host).is_some()
                            || settings.toml_certs.owner_of(&host).is_some()
                            || refused(&mut state.owner)
                        {
                            continue;
                        }
                        if !state.listed.iter().any(|(c, ..)| c.cert == cert.cert) {
                            state.listed.push((cert.clone(), key.clone(), j));
                        }
                    }
                }
            }
            replay.insert(key);
        }
        for (path, claim) in &mut state.claims {
            self.routes
                .insert(claim.winner.name.clone(), claim.winner.clone());
            if !claim.losers.is_empty() {
                claim.losers.dedup();
                let conflict = Conflict {
                    host: host.to_string(),
                    path: path.to_string(),
                    winner: claim.winner.ingress.to_string(),
                    losers: claim.losers.clone(),
                };
                self.conflicts
                    .insert((conflict.host.clone(), conflict.path.clone()), conflict);
            }
        }
    }

    /// Makes the Ingress `key`'s report again from the states of its hosts, as
    /// `translate::merge` reports it.
    fn report(&mut self, key: &Key, settings: &Settings) {
        let Some(age) = self.ages.get(key) else {
            return;
        };
        let Some(entry) = self.entries.get_mut(age) else {
            return;
        };
        let Ok(served) = &entry.translated.outcome else {
            entry.out = Outcome::default();
            return;
        };
        let hosts = &self.hosts;
        let me = &entry.translated.reference;
        let not_allowed = |host: &HostPattern| not_allowed(settings, served.tenant, host);
        let taken = |host: &HostPattern| -> Option<Refusal> {
            if let Some(toml) = settings.toml_hosts.owner_of(host) {
                return Some(Refusal::Taken {
                    owner: toml.to_string(),
                });
            }
            let (owner, tenant) = hosts.get(host)?.owner.as_ref()?;
            taken_from(
                settings,
                (&owner.0, &owner.1),
                *tenant,
                (&me.namespace, served.tenant),
            )
        };
        let claim = |host: &HostPattern, path: &PathMatch| hosts.get(host)?.claims.get(path);
        let mut out = Outcome::default();
        // Each (host, certificate) refused once.
        let mut reported: HashSet<(HostPattern, bool)> = HashSet::new();
        let mut refuse =
            |out: &mut Outcome, host: &HostPattern, certificate: bool, why: Refusal| {
                if reported.insert((host.clone(), certificate)) {
                    out.refused.push(Refused {
                        ingress: me.clone(),
                        host: host.to_string(),
                        certificate,
                        why,
                    });
                }
            };
        let mut problems = served.rule_problems.clone();
        for item in &served.items {
            match item {
                Item::Route { route, problem } => {
                    if let Some(why) = not_allowed(&route.host).or_else(|| taken(&route.host)) {
                        refuse(&mut out, &route.host, false, why);
                        continue;
                    }
                    if claim(&route.host, &route.path)
                        .is_some_and(|c| Arc::ptr_eq(&c.winner, route))
                    {
                        problems.extend(problem.iter().cloned());
                    }
                }
                Item::Repeat { key: (host, path) } => {
                    if not_allowed(host).is_some() || taken(host).is_some() {
                        continue;
                    }
                    if claim(host, path).is_some_and(|c| c.winner.ingress == *me) {
                        problems.push(format!("{host} {path} appears twice; the first is served"));
                    }
                }
            }
        }
        problems.extend(served.tls_problems.iter().cloned());
        for (j, (host, cert)) in served.certs.iter().enumerate() {
            let why = not_allowed(host)
                .or_else(|| {
                    settings.toml_certs.owner_of(host).map(|o| Refusal::Taken {
                        owner: o.to_string(),
                    })
                })
                .or_else(|| taken(host));
            if let Some(why) = why {
                refuse(&mut out, host, true, why);
                continue;
            }
            let first = hosts
                .get(host)
                .is_some_and(|s| s.listed.iter().any(|(_, k, i)| k == key && *i == j));
            if first {
                out.certs.push((host.clone(), cert.clone()));
            }
        }
        out.problems = problems
            .into_iter()
            .map(|problem| Problem {
                ingress: me.to_string(),
                problem,
            })
            .collect();
        entry.out = out;
    }

    /// The model as it stands.
    fn model(&self) -> Model {
        let mut model = Model {
            routes: self.routes.values().cloned().collect(),
            served: self.served.iter().cloned().collect(),
            conflicts: self.conflicts.values().cloned().collect(),
            ..Model::default()
        };
        for entry in self.entries.values() {
            match &entry.translated.outcome {
                Err(skipped) => model.skipped.push(skipped.clone()),
                Ok(_) => {
                    model.refused.extend(entry.out.refused.iter().cloned());
                    model.problems.extend(entry.out.problems.iter().cloned());
                    model.certs.extend(entry.out.certs.iter().cloned());
                }
            }
        }
        model
    }
}

/// Each host a served Ingress names, with its items, then its certificates, naming it.
fn hosts_of(served: &Served) -> HashMap<HostPattern, Vec<Named>> {
    let mut hosts: HashMap<HostPattern, Vec<Named>> = HashMap::new();
    let items = served.items.iter().enumerate().map(|(i, item)| {
        let host = match item {
            Item::Route { route, .. } => &route.host,
            Item::Repeat { key } => &key.0,
        };
        (host, Named::Item(i))
    });
    let certs = (served.certs.iter().enumerate()).map(|(j, (host, _))| (host, Named::Cert(j)));
    for (host, named) in items.chain(certs) {
        match hosts.get_mut(host) {
            Some(list) => list.push(named),
            None => {
                hosts.insert(host.clone(), vec![named]);
            }
        }
    }
    hosts
}

/// The Services (with their slices) and Secrets some Ingresses name, read from a source.
struct Needed {
    services: Vec<Arc<Service>>,
    slices: Vec<Arc<EndpointSlice>>,
    secrets: Vec<Arc<Secret>>,
}

impl Needed {
    fn of<'i>(ingresses: impl Iterator<Item = &'i Ingress>, source: &dyn Source) -> Needed {
        let mut services: HashSet<(&str, &str)> = HashSet::new();
        let mut secrets: HashSet<(&str, &str)> = HashSet::new();
        for ingress in ingresses {
            let Some(spec) = &ingress.spec else {
                continue;
            };
            let namespace = ingress.metadata.namespace.as_deref().unwrap_or("");
            let paths = spec.rules.iter().flatten().flat_map(|r| &r.http);
            let backends = paths
                .flat_map(|h| &h.paths)
                .map(|p| &p.backend)
                .chain(&spec.default_backend);
            for backend in backends {
                if let Some(service) = &backend.service {
                    services.insert((namespace, &service.name));
                }
            }
            for tls in spec.tls.iter().flatten() {
                if let Some(secret) = tls.secret_name.as_deref() {
                    secrets.insert((namespace, secret));
                }
            }
        }
        let mut needed = Needed {
            services: Vec::with_capacity(services.len()),
            slices: Vec::new(),
            secrets: Vec::with_capacity(secrets.len()),
        };
        for (namespace, name) in services {
            needed.services.extend(source.service(namespace, name));
            needed.slices.extend(source.slices(namespace, name));
        }
        for (namespace, name) in secrets {
            needed.secrets.extend(source.secret(namespace, name));
        }
        needed
    }
}

/// Builds the routes, certificates and report from `objects`. Ingresses that are not ours
/// (another class, a namespace not configured) are left out entirely: not served, not
/// skipped. Deterministic: the same objects give the same model in any store order.
///
/// The provider keeps a [`Builder`] instead, which translates and merges again only what
/// a change concerns.
pub fn build(objects: &Objects<'_>, settings: &Settings) -> Model {
    let classes = ClassSelector::new(objects.classes, &settings.class);
    let backends = Backends::index(objects.services, objects.slices);
    let certs = Certs::index(objects.secrets);
    let mut ours: Vec<&Ingress> = objects
        .ingresses
        .iter()
        .map(AsRef::as_ref)
        .filter(|i| classes.ours(i) && namespace_selected(i, settings))
        .collect();
    ours.sort_by(|a, b| age_order(a).cmp(&age_order(b)));
    let translated: Vec<Translated> = ours
        .into_iter()
        .map(|i| translate(i, &backends, &certs, settings, &mut Reads::default()))
        .collect();
    merge(&translated, settings)
}
