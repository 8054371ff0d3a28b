//! The model built again after a change without translating every Ingress again: a
//! [`Builder`] keeps each Ingress's translation with the versions of what it read, and
//! reuses it while the Ingress (uid and `resourceVersion`), the Services, EndpointSlices
//! and Secrets it names, the settings and the class decision are all unchanged. With
//! 10,000 Ingresses a change to one re-translates one; the merge (who wins each host and
//! path) still runs over all of them, since one Ingress can change another's routes.
//!
//! An object without a `resourceVersion` (tests build such objects) cannot be told apart
//! from its next version, so whatever depends on one is translated at every build. The
//! result is always the model [`build`] makes from the same objects.

use foldhash::HashMap;
use k8s_openapi::api::networking::v1::Ingress;

use super::backends::Backends;
use super::certs::Certs;
use super::class::{ClassDecision, ClassSelector};
use super::model::{Model, Objects, Settings};
use super::translate::{Reads, Translated, age_order, merge, namespace_selected, translate};

/// Rebuilds the model from the reflectors' objects, reusing the translations of the
/// Ingresses nothing changed for. One per provider; [`Default`] starts empty.
#[derive(Debug, Default)]
pub struct Builder {
    /// The settings and class decision the entries were translated under: when either
    /// changes every Ingress is translated again.
    under: Option<(Settings, ClassDecision)>,
    /// By Ingress uid.
    entries: HashMap<String, Entry>,
}

#[derive(Debug)]
struct Entry {
    resource_version: String,
    reads: Reads,
    /// The version of each thing in `reads` (services, then secrets) when translated.
    versions: Vec<u64>,
    translated: Translated,
}

/// Where the translation of one Ingress of this build is.
enum Slot<'i> {
    /// In `entries`, under this uid.
    Kept(&'i str),
    /// In the build's list of uncacheable translations, at this index.
    Fresh(usize),
}

impl Builder {
    /// The model of `objects` under `settings`, as [`build`] makes it.
    pub fn build(&mut self, objects: &Objects<'_>, settings: &Settings) -> Model {
        let classes = ClassSelector::new(objects.classes, &settings.class);
        let backends = Backends::index(objects.services, objects.slices);
        let certs = Certs::index(objects.secrets);
        let under = (settings.clone(), classes.decision());
        if self.under.as_ref() != Some(&under) {
            self.entries.clear();
            self.under = Some(under);
        }

        let mut ours: Vec<&Ingress> = objects
            .ingresses
            .iter()
            .map(AsRef::as_ref)
            .filter(|i| classes.ours(i) && namespace_selected(i, settings))
            .collect();
        ours.sort_by(|a, b| age_order(a).cmp(&age_order(b)));

        let mut previous = std::mem::take(&mut self.entries);
        let mut fresh: Vec<Translated> = Vec::new();
        let mut slots: Vec<Slot<'_>> = Vec::with_capacity(ours.len());
        for ingress in &ours {
            let m = &ingress.metadata;
            // Without a uid and version, or with the same uid twice in one store, there is
            // nothing to key a cache by: translated afresh every time.
            let key = match (m.uid.as_deref(), m.resource_version.as_deref()) {
                (Some(u), Some(v)) if !u.is_empty() && !v.is_empty() => {
                    Some((u, v)).filter(|_| !self.entries.contains_key(u))
                }
                _ => None,
            };
            let Some((uid, version)) = key else {
                slots.push(Slot::Fresh(fresh.len()));
                fresh.push(translate(
                    ingress,
                    &backends,
                    &certs,
                    settings,
                    &mut Reads::default(),
                ));
                continue;
            };
            let kept = previous.remove(uid).filter(|e| {
                e.resource_version == version
                    && versions(&e.reads, &backends, &certs).eq(e.versions.iter().map(|v| Some(*v)))
            });
            let entry = match kept {
                Some(e) => e,
                None => {
                    let mut reads = Reads::default();
                    let translated = translate(ingress, &backends, &certs, settings, &mut reads);
                    let Some(versions) = versions(&reads, &backends, &certs).collect() else {
                        slots.push(Slot::Fresh(fresh.len()));
                        fresh.push(translated);
                        continue;
                    };
                    Entry {
                        resource_version: version.to_string(),
                        reads,
                        versions,
                        translated,
                    }
                }
            };
            self.entries.insert(uid.to_string(), entry);
            slots.push(Slot::Kept(uid));
        }
        merge(
            slots.iter().map(|slot| match slot {
                Slot::Kept(uid) => &self.entries[*uid].translated,
                Slot::Fresh(i) => &fresh[*i],
            }),
            settings,
        )
    }
}

/// The current version of each thing `reads` names, services then secrets; `None` for
/// one that cannot be versioned.
fn versions<'r>(
    reads: &'r Reads,
    backends: &'r Backends<'_>,
    certs: &'r Certs<'_>,
) -> impl Iterator<Item = Option<u64>> + 'r {
    let services = reads
        .services
        .iter()
        .map(|(ns, name)| backends.version(ns, name));
    let secrets = reads
        .secrets
        .iter()
        .map(|(ns, name)| certs.version(ns, name));
    services.chain(secrets)
}

/// Builds the routes, certificates and report from `objects`. Ingresses that are not ours
/// (another class, a namespace not configured) are left out entirely: not served, not
/// skipped. Deterministic: the same objects give the same model in any store order.
///
/// The provider keeps a [`Builder`] instead, which translates again only the Ingresses
/// whose object or referenced objects changed since its last build.
pub fn build(objects: &Objects<'_>, settings: &Settings) -> Model {
    Builder::default().build(objects, settings)
}
