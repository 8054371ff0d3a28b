//! One Ingress of ours translated on its own, then all translations merged: the routes
//! of each rule (`defaultBackend` as the catch-all and as the `/` of each of the
//! Ingress's hosts lacking one), each resolved against the Services, EndpointSlices and
//! Secrets it names; which hosts its tenant may claim (`hosts`), who owns a host (TOML,
//! else the oldest Ingress's namespace, or its tenant), who wins a host and path within it
//! (the oldest Ingress) and the report.
//!
//! No I/O, no clock: the objects and the settings in, [`Translated`] and the model out.

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use k8s_openapi::api::networking::v1::Ingress;
use rustls::pki_types::CertificateDer;
use rustls::sign::CertifiedKey;

use super::annotations;
use super::backends::{self, Backends};
use super::certs::Certs;
use super::model::{
    Conflict, IngressBackend, IngressRef, IngressRoute, Model, Problem, Refusal, Refused, Settings,
    Skipped, TenantBounds,
};
use super::rules::{ingress_host, wanted};
use crate::config::{HostOwner, HostPattern, PathMatch, glob_matches};

/// One Ingress of ours translated on its own: what it asks for, resolved against the
/// Services, EndpointSlices and Secrets it names. What depends on the other Ingresses
/// (who wins a host and path) is decided by [`merge`].
#[derive(Debug)]
pub(super) struct Translated {
    pub reference: IngressRef,
    pub outcome: Result<Served, Skipped>,
}

/// A served Ingress's routes and certificates before the merge.
#[derive(Debug)]
pub(super) struct Served {
    /// The tenant owning the namespace, as an index into `Settings::tenants` (the settings
    /// it was translated under: a change of settings translates every Ingress again).
    pub tenant: Option<usize>,
    /// Rules that could not be read, reported first.
    pub rule_problems: Vec<String>,
    /// In spec order: each (host, path) once as a route, then again as a repeat.
    pub items: Vec<Item>,
    pub tls_problems: Vec<String>,
    pub certs: Vec<(HostPattern, Arc<CertifiedKey>)>,
}

#[derive(Debug)]
pub(super) enum Item {
    /// The first claim of a (host, path) by this Ingress, and what is wrong with its
    /// backend (reported only if the route wins).
    Route {
        route: Arc<IngressRoute>,
        problem: Option<String>,
    },
    /// The same (host, path) again in this Ingress.
    Repeat { key: (HostPattern, PathMatch) },
}

/// What a translation read besides the Ingress: `(namespace, name)` of the Services (with
/// their slices) and of the Secrets, so a cache can tell when it is stale.
#[derive(Debug, Default)]
pub(super) struct Reads {
    pub services: Vec<(String, String)>,
    pub secrets: Vec<(String, String)>,
}

/// Translates one Ingress of ours, noting what it read in `reads`.
pub(super) fn translate(
    ingress: &Ingress,
    backends: &Backends<'_>,
    certs: &Certs<'_>,
    settings: &Settings,
    reads: &mut Reads,
) -> Translated {
    let reference = IngressRef::of(ingress);
    let parsed = annotations::parse(
        ingress.metadata.annotations.as_ref(),
        &reference.namespace,
        &settings.tenants,
    );
    let mut annotations = match parsed {
        Ok(a) => a,
        Err(e) => {
            return Translated {
                outcome: Err(Skipped {
                    ingress: reference.clone(),
                    annotation: e.annotation,
                    reason: e.reason,
                }),
                reference,
            };
        }
    };
    // The tenant whose `hosts` bound the Ingress and who owns its hosts with `host_owner =
    // "tenant"`. The annotation may name only this one (tenants' namespaces are disjoint).
    let namespace_tenant = tenant_of(&reference.namespace, &settings.tenants);
    let tenant = match &annotations.tenant {
        Some(name) => settings.tenants.iter().find(|t| t.name == *name),
        None => namespace_tenant.map(|i| &settings.tenants[i]),
    };
    let mut rule_problems = tenant.map_or_else(Vec::new, |t| annotations.clamp(t));
    let tenant = tenant.map(|t| t.name.clone());
    let mut items: Vec<Item> = Vec::new();
    let mut own: HashSet<(HostPattern, PathMatch)> = HashSet::new();
    for (host, path, backend) in wanted(ingress, &mut rule_problems) {
        let key = (host, path);
        if own.contains(&key) {
            items.push(Item::Repeat { key });
            continue;
        }
        let resolved = match backend {
            Some(service) => {
                reads
                    .services
                    .push((reference.namespace.clone(), service.name.clone()));
                backends.resolve(
                    &reference.namespace,
                    service,
                    annotations.protocol,
                    &settings.backends,
                )
            }
            None => backends::Resolved {
                backend: IngressBackend::Unavailable {
                    key: format!("{reference}/<resource>"),
                    reason: "resource backends are not supported; use a service".into(),
                },
                problem: Some("resource backends are not supported; use a service".into()),
                missing: false,
            },
        };
        own.insert(key.clone());
        items.push(Item::Route {
            route: Arc::new(IngressRoute {
                name: route_name(&reference, &key.0, &key.1),
                ingress: reference.clone(),
                host: key.0,
                path: key.1,
                backend: resolved.backend,
                tenant: tenant.clone(),
                bandwidth: annotations.bandwidth,
                upgraded_idle: annotations.upgraded_idle,
            }),
            problem: resolved.problem,
        });
    }
    let mut tls_problems = Vec::new();
    let mut own_certs = Vec::new();
    tls_certs(
        ingress,
        &reference,
        certs,
        &mut own_certs,
        &mut tls_problems,
        reads,
    );
    Translated {
        reference,
        outcome: Ok(Served {
            tenant: namespace_tenant,
            rule_problems,
            items,
            tls_problems,
            certs: own_certs,
        }),
    }
}

/// The model from the translations of our Ingresses, oldest first (ties by
/// namespace/name). A host outside the `hosts` patterns of an Ingress's tenant is refused
/// to it (and it takes nothing by naming it). A host the TOML config owns is refused to all
/// of them; any other belongs to the namespace of the first to name it (in a rule or in
/// `spec.tls`), or to the tenant owning that namespace with `host_owner = "tenant"`, and
/// is refused to the others; within it the first to claim a path wins it.
pub(super) fn merge<'t>(
    ours: impl IntoIterator<Item = &'t Translated>,
    settings: &Settings,
) -> Model {
    let mut model = Model::default();
    // Host (as written) -> the oldest Ingress naming it, among the hosts TOML leaves, and
    // the tenant owning its namespace.
    let mut owners: HashMap<&HostPattern, (&IngressRef, Option<usize>)> = HashMap::new();
    // (host, path) -> index in `routes`, and who else claimed it.
    let mut claimed: HashMap<(&HostPattern, &PathMatch), (usize, Vec<String>)> = HashMap::new();
    let mut routes: Vec<&Arc<IngressRoute>> = Vec::new();
    // Certificates already listed, so each (host, certificate chain) appears once.
    let mut listed: HashSet<(&HostPattern, &[CertificateDer<'static>])> = HashSet::new();
    for t in ours {
        let reference = &t.reference;
        let served = match &t.outcome {
            Ok(served) => served,
            Err(skipped) => {
                model.skipped.push(skipped.clone());
                continue;
            }
        };
        let tenant = served.tenant;
        // Outside the `hosts` patterns of the Ingress's tenant: checked before ownership,
        // so a host refused this way is never taken from anyone.
        let not_allowed = |host: &HostPattern| not_allowed(settings, tenant, host);
        // Who else owns `host`, if anyone: TOML, or another namespace's (tenant's) older
        // Ingress.
        let mut taken = |host: &'t HostPattern| -> Option<Refusal> {
            if let Some(toml) = settings.toml_hosts.owner_of(host) {
                return Some(Refusal::Taken {
                    owner: toml.to_string(),
                });
            }
            let (owner, owner_tenant) = *owners.entry(host).or_insert((reference, tenant));
            taken_from(
                settings,
                (&owner.namespace, &owner.name),
                owner_tenant,
                (&reference.namespace, tenant),
            )
        };
        // (host, certificate) already refused for this Ingress: reported once.
        let mut refused: HashSet<(&HostPattern, bool)> = HashSet::new();
        let mut refuse = |host: &'t HostPattern, certificate: bool, why: Refusal| {
            if refused.insert((host, certificate)) {
                model.refused.push(Refused {
                    ingress: reference.clone(),
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
                        refuse(&route.host, false, why);
                        continue;
                    }
                    if let Some((_, losers)) = claimed.get_mut(&(&route.host, &route.path)) {
                        losers.push(reference.to_string());
                        continue;
                    }
                    problems.extend(problem.iter().cloned());
                    claimed.insert((&route.host, &route.path), (routes.len(), Vec::new()));
                    routes.push(route);
                }
                // Refused with its first, already reported.
                Item::Repeat { key }
                    if not_allowed(&key.0).is_some() || taken(&key.0).is_some() => {}
                // The first of them was claimed just before, by this Ingress or another.
                Item::Repeat { key } => match claimed.get_mut(&(&key.0, &key.1)) {
                    Some((winner, _)) if routes[*winner].ingress == *reference => {
                        problems.push(format!(
                            "{} {} appears twice; the first is served",
                            key.0, key.1
                        ));
                    }
                    Some((_, losers)) => losers.push(reference.to_string()),
                    None => {}
                },
            }
        }
        problems.extend(served.tls_problems.iter().cloned());
        for (host, cert) in &served.certs {
            let why = not_allowed(host)
                .or_else(|| {
                    settings.toml_certs.owner_of(host).map(|o| Refusal::Taken {
                        owner: o.to_string(),
                    })
                })
                .or_else(|| taken(host));
            if let Some(why) = why {
                refuse(host, true, why);
                continue;
            }
            if listed.insert((host, &cert.cert[..])) {
                model.certs.push((host.clone(), cert.clone()));
            }
        }
        model
            .problems
            .extend(problems.into_iter().map(|problem| Problem {
                ingress: reference.to_string(),
                problem,
            }));
        model.served.push(reference.clone());
    }

    let mut conflicts: Vec<Conflict> = claimed
        .into_iter()
        .filter(|(_, (_, losers))| !losers.is_empty())
        .map(|((host, path), (i, mut losers))| {
            losers.dedup();
            Conflict {
                host: host.to_string(),
                path: path.to_string(),
                winner: routes[i].ingress.to_string(),
                losers,
            }
        })
        .collect();
    conflicts.sort_by(|a, b| (&a.host, &a.path).cmp(&(&b.host, &b.path)));
    let mut routes: Vec<Arc<IngressRoute>> = routes.into_iter().cloned().collect();
    routes.sort_by(|a, b| a.name.cmp(&b.name));
    model.served.sort();
    model.routes = routes;
    model.conflicts = conflicts;
    model
}

/// Why the tenant `tenant` (an index into `settings.tenants`) may not claim `host`: it is
/// outside its `hosts` patterns. Checked before ownership, so a host refused this way is
/// never taken from anyone.
pub(super) fn not_allowed(
    settings: &Settings,
    tenant: Option<usize>,
    host: &HostPattern,
) -> Option<Refusal> {
    let t = &settings.tenants[tenant?];
    (!t.may_claim(host)).then(|| Refusal::NotAllowed {
        tenant: t.name.clone(),
        hosts: t.hosts.iter().flatten().map(ToString::to_string).collect(),
    })
}

/// Why a host owned by the Ingress `owner` (`(namespace, name)`, of tenant `owner_tenant`)
/// is not the Ingress's in namespace `me.0` of tenant `me.1`: another namespace owns it, or
/// another tenant with `host_owner = "tenant"`.
pub(super) fn taken_from(
    settings: &Settings,
    owner: (&str, &str),
    owner_tenant: Option<usize>,
    me: (&str, Option<usize>),
) -> Option<Refusal> {
    let by_tenant = match (settings.host_owner, owner_tenant) {
        (HostOwner::Tenant, Some(t)) => Some(t),
        _ => None,
    };
    let same = match by_tenant {
        Some(t) => me.1 == Some(t),
        None => owner.0 == me.0,
    };
    let (namespace, name) = owner;
    (!same).then(|| Refusal::Taken {
        owner: match by_tenant {
            Some(t) => format!(
                "tenant {} (Ingress {namespace}/{name})",
                settings.tenants[t].name
            ),
            None => format!("namespace {namespace} (Ingress {namespace}/{name})"),
        },
    })
}

pub(super) fn namespace_selected(ingress: &Ingress, settings: &Settings) -> bool {
    let namespace = ingress.metadata.namespace.as_deref().unwrap_or("");
    settings
        .namespaces
        .as_ref()
        .is_none_or(|globs| globs.iter().any(|g| glob_matches(g, namespace)))
}

/// Oldest `creationTimestamp` first (one without comes last), then namespace, then name.
pub(super) fn age_order(ingress: &Ingress) -> (bool, Option<impl Ord + use<>>, &str, &str) {
    let m = &ingress.metadata;
    let created = m.creation_timestamp.as_ref().map(|t| t.0);
    (
        created.is_none(),
        created,
        m.namespace.as_deref().unwrap_or(""),
        m.name.as_deref().unwrap_or(""),
    )
}

/// The index of the first configured tenant whose `namespaces` globs match `namespace`.
fn tenant_of(namespace: &str, tenants: &[TenantBounds]) -> Option<usize> {
    tenants.iter().position(|t| t.owns(namespace))
}

/// `ingress/<ns>/<name>/<host or *>/<exact|prefix> <path>`.
fn route_name(ingress: &IngressRef, host: &HostPattern, path: &PathMatch) -> String {
    format!(
        "ingress/{}/{}/{host}/{path}",
        ingress.namespace, ingress.name
    )
}

/// The certificates of `spec.tls`: each entry's Secret for its `hosts`, or for the rule
/// hosts when it lists none.
fn tls_certs(
    ingress: &Ingress,
    reference: &IngressRef,
    certs: &Certs<'_>,
    out: &mut Vec<(HostPattern, Arc<CertifiedKey>)>,
    problems: &mut Vec<String>,
    reads: &mut Reads,
) {
    let Some(spec) = ingress.spec.as_ref() else {
        return;
    };
    for tls in spec.tls.iter().flatten() {
        let Some(secret) = tls.secret_name.as_deref().filter(|s| !s.is_empty()) else {
            problems.push("a tls entry names no secretName".to_string());
            continue;
        };
        reads
            .secrets
            .push((reference.namespace.clone(), secret.to_string()));
        let cert = match certs.get(&reference.namespace, secret) {
            Ok(cert) => cert,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let listed: Vec<&str> = match tls.hosts.as_ref().filter(|h| !h.is_empty()) {
            Some(hosts) => hosts.iter().map(String::as_str).collect(),
            None => spec
                .rules
                .iter()
                .flatten()
                .filter_map(|r| r.host.as_deref().filter(|h| !h.is_empty()))
                .collect(),
        };
        if listed.is_empty() {
            problems.push(format!(
                "the tls entry of secret {secret} serves no host: list `hosts` or give the rules hosts"
            ));
        }
        for text in listed {
            match ingress_host(text) {
                Ok(host) => {
                    if !out
                        .iter()
                        .rev()
                        .any(|(h, c)| *h == host && Arc::ptr_eq(c, &cert))
                    {
                        out.push((host, cert.clone()));
                    }
                }
                Err(e) => problems.push(e),
            }
        }
    }
}
