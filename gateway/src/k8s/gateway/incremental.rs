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
//! Its place among routes (age order) is not an input: the assembly puts it into the
//! precedence keys, and the routes' entries are ordered again at each build.
//!
//! Classes and Gateways are read again at each build (there are few); every build makes
//! the model [`translate`] makes from scratch (the tests check it).

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use super::model::{ListenerKey, Model, Objects, Settings};
use super::translate::{self, RouteOut};
use super::types::{GROUP, HttpRoute};
use crate::k8s::ingress::backends::Backends;
use crate::k8s::ingress::certs::Certs;

/// The whole translation of `objects`, from scratch.
pub fn translate(objects: &Objects<'_>, settings: &Settings) -> Model {
    Translator::default().translate(objects, settings)
}

/// Each route's last translation, by uid (by `namespace/name` when it has none), with the
/// digest of its inputs.
#[derive(Default)]
pub struct Translator {
    kept: foldhash::HashMap<String, Kept>,
    /// The builds made, to tell the routes the last one met from those gone.
    builds: u64,
    /// HTTPRoutes the last [`Translator::translate`] translated again.
    pub translated: usize,
}

struct Kept {
    digest: u64,
    /// The last build that met the route.
    build: u64,
    out: RouteOut,
}

/// A route's key in the [`Translator`]: its uid, or `namespace/name` without one.
fn key_of(route: &HttpRoute) -> std::borrow::Cow<'_, str> {
    match route.metadata.uid.as_deref() {
        Some(uid) if !uid.is_empty() => uid.into(),
        _ => format!(
            "{}/{}",
            route.metadata.namespace.as_deref().unwrap_or(""),
            route.metadata.name.as_deref().unwrap_or("")
        )
        .into(),
    }
}

fn hasher() -> impl Hasher {
    foldhash::fast::FixedState::with_seed(0x6c65_6166).build_hasher()
}

impl Translator {
    /// The model of `objects`, translating again only the routes whose inputs changed
    /// since the last call.
    pub fn translate(&mut self, objects: &Objects<'_>, settings: &Settings) -> Model {
        let mut model = Model::default();
        let (ours, classes) = translate::classes(objects, settings);
        model.classes = classes;
        let certs = Certs::index(objects.secrets);
        let backends = Backends::index(objects.services, objects.slices);
        let mut states = translate::gateways(objects, settings, &ours, &certs);
        let index: HashMap<(&str, &str), usize> = states
            .iter()
            .enumerate()
            .map(|(i, s)| ((s.namespace, s.name), i))
            .collect();
        let gateway_digests: Vec<u64> = states
            .iter()
            .map(|s| {
                let mut h = hasher();
                s.digest(&mut h);
                h.finish()
            })
            .collect();
        let settings_digest = {
            let mut h = hasher();
            format!("{settings:?}").hash(&mut h);
            h.finish()
        };
        let namespace_digests: HashMap<&str, u64> = objects
            .namespaces
            .iter()
            .map(|n| {
                let mut h = hasher();
                n.metadata.labels.hash(&mut h);
                (n.metadata.name.as_deref().unwrap_or(""), h.finish())
            })
            .collect();
        let mut grant_digests: HashMap<&str, u64> = HashMap::new();
        for g in objects.grants {
            let d = grant_digests
                .entry(g.metadata.namespace.as_deref().unwrap_or(""))
                .or_default();
            let mut h = hasher();
            (&g.metadata.uid, &g.metadata.resource_version).hash(&mut h);
            // Order-free: the store's order is not the grants'.
            *d ^= h.finish();
        }
        let digests = Digests {
            settings: settings_digest,
            gateways: &gateway_digests,
            index: &index,
            namespaces: &namespace_digests,
            grants: &grant_digests,
            backends: &backends,
        };

        let routes = translate::by_age(objects.routes);
        self.builds += 1;
        let build = self.builds;
        self.translated = 0;
        for route in &routes {
            let key = key_of(route);
            let digest = digests.of(route);
            match self.kept.get_mut(key.as_ref()) {
                Some(k) if k.digest == digest => k.build = build,
                found => {
                    self.translated += 1;
                    let kept = Kept {
                        digest,
                        build,
                        out: translate::route(route, &states, &index, objects, &backends, settings),
                    };
                    match found {
                        Some(k) => *k = kept,
                        None => {
                            self.kept.insert(key.into_owned(), kept);
                        }
                    }
                }
            }
        }
        self.kept.retain(|_, k| k.build == build);

        // Assembly, in age order: attachments, statuses, entries in precedence order.
        let mut entries = Vec::new();
        for (order, route) in routes.iter().enumerate() {
            let Some(kept) = self.kept.get(key_of(route).as_ref()) else {
                continue;
            };
            let out = &kept.out;
            for (ns, name, li) in &out.attached {
                if let Some(&i) = index.get(&(ns.as_str(), name.as_str())) {
                    states[i].listeners[*li].attached += 1;
                }
            }
            if let Some(status) = &out.status {
                model.http_routes.push(status.clone());
            }
            entries.extend(out.entries.iter().map(|(k, e)| (0u32, k, order, e)));
        }
        // The listeners' order as small numbers, so the sort compares no strings.
        let mut listeners: Vec<&ListenerKey> = entries.iter().map(|(_, k, _, _)| &k.0).collect();
        listeners.sort_unstable();
        listeners.dedup();
        let ordinals: HashMap<&ListenerKey, u32> = listeners
            .iter()
            .enumerate()
            .map(|(i, l)| (*l, i as u32))
            .collect();
        for e in &mut entries {
            e.0 = ordinals[&e.1.0];
        }
        entries.sort_by(|(al, a, ao, _), (bl, b, bo, _)| {
            (al, &a.1, &a.2, a.3, &a.4, &a.5, ao, a.7, a.8)
                .cmp(&(bl, &b.1, &b.2, b.3, &b.4, &b.5, bo, b.7, b.8))
        });
        model.routes = entries.into_iter().map(|(_, _, _, e)| e.clone()).collect();
        translate::finish(states, &mut model);
        model
    }
}

/// What the digest of a route's inputs reads, computed once per build.
struct Digests<'b> {
    settings: u64,
    gateways: &'b [u64],
    index: &'b HashMap<(&'b str, &'b str), usize>,
    namespaces: &'b HashMap<&'b str, u64>,
    grants: &'b HashMap<&'b str, u64>,
    backends: &'b Backends<'b>,
}

impl Digests<'_> {
    fn of(&self, route: &HttpRoute) -> u64 {
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
            self.index
                .get(&(gw_ns, parent.name.as_str()))
                .map(|&i| self.gateways[i])
                .hash(&mut h);
        }
        for b in route.spec.rules.iter().flat_map(|r| &r.backend_refs) {
            let ns = b.namespace.as_deref().unwrap_or(namespace);
            self.backends.digest(ns, &b.name, &mut h);
            if ns != namespace {
                self.grants.get(ns).hash(&mut h);
            }
        }
        h.finish()
    }
}
