//! The whole translation: which GatewayClasses and Gateways are ours, each Gateway's
//! address and listeners, each HTTPRoute's attachment to each parent (sectionName, port,
//! allowedRoutes namespaces and kinds, hostname intersection, its tenant's `hosts`), its
//! entries in the spec's precedence order, and every status.
//!
//! No I/O, no clock: the objects and the settings in; each HTTPRoute's part
//! ([`RouteOut`]) on its own, which `incremental` keeps between builds and assembles into
//! the [`Model`].

use foldhash::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use super::entries::{Key, entry, precedence};
use super::hostnames;
use super::listeners::{self, ListenerState, Why};
use super::model::{
    ClassStatus, Cond, GatewayRoute, GatewayStatusOut, ListenerCerts, ListenerKey, Model, Objects,
    RouteStatusOut, Settings,
};
use super::rules::{self, Bounds};
use super::selector;
use super::types::{GROUP, Gateway, GatewayClass, HttpRoute, ParentReference, RouteParentStatus};
use crate::config::HostPattern;
use crate::config::cidr::Cidr;
use crate::k8s::ingress::backends::Backends;
use crate::k8s::ingress::certs::Certs;
use crate::k8s::ingress::model::may_claim_only;

/// The features `status.supportedFeatures` names, sorted: what leafgate serves of the
/// GATEWAY-HTTP profile, each held by its ported conformance test: a class must not claim
/// a feature the suite would then test and fail.
pub const SUPPORTED_FEATURES: [&str; 18] = [
    "Gateway",
    "HTTPRoute",
    "HTTPRoute303RedirectStatusCode",
    "HTTPRoute307RedirectStatusCode",
    "HTTPRoute308RedirectStatusCode",
    "HTTPRouteBackendProtocolH2C",
    "HTTPRouteBackendProtocolWebSocket",
    "HTTPRouteBackendTimeout",
    "HTTPRouteHostRewrite",
    "HTTPRouteMethodMatching",
    "HTTPRoutePathRedirect",
    "HTTPRoutePathRewrite",
    "HTTPRoutePortRedirect",
    "HTTPRouteQueryParamMatching",
    "HTTPRouteRequestTimeout",
    "HTTPRouteResponseHeaderModification",
    "HTTPRouteSchemeRedirect",
    "ReferenceGrant",
];

fn cond(type_: &'static str, problem: Option<Why>, good: &'static str, generation: i64) -> Cond {
    let status = problem.is_none();
    let (reason, message) = problem.unwrap_or((good, good.to_ascii_lowercase()));
    Cond {
        type_,
        status,
        reason,
        message,
        observed_generation: generation,
    }
}

fn generation(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> i64 {
    meta.generation.unwrap_or(0)
}

/// Oldest first (none last), then namespace, then name: the spec's order across routes
/// (and, in `serve`, across the Gateways sharing an address).
pub(super) fn age(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> (bool, Option<impl Ord + use<>>, &str, &str) {
    let created = meta.creation_timestamp.as_ref().map(|t| t.0);
    (
        created.is_none(),
        created,
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or(""),
    )
}

/// A GatewayClass of ours: Accepted unless it names parameters (leafgate takes none).
fn class_status(class: &GatewayClass) -> ClassStatus {
    let problem = class.spec.parameters_ref.as_ref().map(|p| {
        (
            "InvalidParameters",
            format!(
                "parametersRef {}/{} {}: leafgate takes no parameters",
                p.group, p.kind, p.name
            ),
        )
    });
    ClassStatus {
        name: class.metadata.name.clone().unwrap_or_default(),
        conditions: vec![cond(
            "Accepted",
            problem,
            "Accepted",
            generation(&class.metadata),
        )],
        supported_features: SUPPORTED_FEATURES.to_vec(),
    }
}

/// The `n`th address of `range`, if it has that many.
fn nth(range: &Cidr, n: u128) -> Option<IpAddr> {
    match range.network() {
        IpAddr::V4(a) => {
            let size = 1u128 << (32 - u32::from(range.prefix()));
            (n < size).then(|| IpAddr::V4((u32::from(a) + n as u32).into()))
        }
        IpAddr::V6(a) => {
            let bits = 128 - u32::from(range.prefix());
            (bits == 128 || n < (1u128 << bits)).then(|| IpAddr::V6((u128::from(a) + n).into()))
        }
    }
}

/// Hands out the pool: a Gateway's `spec.addresses` IPAddress when it is in the pool and
/// free, else the next free address; a pool of one address is shared by all.
struct Pool<'s> {
    pool: &'s [Cidr],
    taken: Vec<IpAddr>,
}

impl Pool<'_> {
    fn shared(&self) -> Option<IpAddr> {
        match self.pool {
            [one] if nth(one, 1).is_none() => Some(one.network()),
            _ => None,
        }
    }

    fn assign(&mut self, gateway: &Gateway) -> Result<IpAddr, Why> {
        let requested = gateway
            .spec
            .addresses
            .iter()
            .find(|a| a.type_.as_deref().unwrap_or("IPAddress") == "IPAddress");
        if let Some(shared) = self.shared() {
            return match requested.map(|a| a.value.parse::<IpAddr>()) {
                Some(Ok(ip)) if ip != shared => Err((
                    "AddressNotUsable",
                    format!("address {ip} is not in leafgate's pool"),
                )),
                _ => Ok(shared),
            };
        }
        if let Some(a) = requested {
            let ip = a.value.parse::<IpAddr>().map_err(|_| {
                (
                    "AddressNotUsable",
                    format!("`{}` is not an IP address", a.value),
                )
            })?;
            if !self.pool.iter().any(|c| c.contains(ip)) {
                return Err((
                    "AddressNotUsable",
                    format!("address {ip} is not in leafgate's pool"),
                ));
            }
            if self.taken.contains(&ip) {
                return Err((
                    "AddressNotUsable",
                    format!("address {ip} is another Gateway's"),
                ));
            }
            self.taken.push(ip);
            return Ok(ip);
        }
        for range in self.pool {
            let mut n = 0u128;
            while let Some(ip) = nth(range, n) {
                if !self.taken.contains(&ip) {
                    self.taken.push(ip);
                    return Ok(ip);
                }
                n += 1;
            }
        }
        Err((
            "AddressNotAssigned",
            "leafgate's address pool is used up".to_string(),
        ))
    }
}

/// A Gateway of ours as the routes see it: its address and listeners, read on their own.
pub struct GatewayState<'o> {
    pub gateway: &'o Gateway,
    pub namespace: &'o str,
    pub name: &'o str,
    not_accepted: Option<Why>,
    address: Result<IpAddr, Why>,
    pub listeners: Vec<ListenerState<'o>>,
}

impl GatewayState<'_> {
    /// What a route's translation reads of the Gateway, as one value: its uid and
    /// generation (its spec), whether it is accepted, its address, and which listeners
    /// admit routes of which kinds (a Secret or grant that changes only a listener's
    /// certificates changes none of it).
    pub fn digest(&self, h: &mut impl std::hash::Hasher) {
        use std::hash::Hash;
        let meta = &self.gateway.metadata;
        meta.uid.hash(h);
        match meta.generation {
            Some(g) => g.hash(h),
            None => meta.resource_version.hash(h),
        }
        self.not_accepted.hash(h);
        self.address.hash(h);
        for l in &self.listeners {
            (l.valid(), l.supported_kinds.len()).hash(h);
        }
    }
}

/// The classes of ours, in name order, and their statuses.
pub fn classes<'o>(
    objects: &Objects<'o>,
    settings: &Settings,
) -> (Vec<&'o GatewayClass>, Vec<ClassStatus>) {
    let ours: Vec<&GatewayClass> = objects
        .classes
        .iter()
        .map(Arc::as_ref)
        .filter(|c| c.spec.controller_name == settings.controller_name)
        .collect();
    let mut statuses: Vec<ClassStatus> = ours.iter().map(|c| class_status(c)).collect();
    statuses.sort_by(|a, b| a.name.cmp(&b.name));
    (ours, statuses)
}

/// The Gateways of the classes `ours`, oldest first, each with its address from the pool
/// and its listeners.
pub fn gateways<'o>(
    objects: &Objects<'o>,
    settings: &Settings,
    ours: &[&'o GatewayClass],
    certs: &Certs<'_>,
) -> Vec<GatewayState<'o>> {
    let mut gateways: Vec<&Gateway> = objects
        .gateways
        .iter()
        .map(Arc::as_ref)
        .filter(|g| {
            ours.iter()
                .any(|c| c.metadata.name.as_deref() == Some(g.spec.gateway_class_name.as_str()))
        })
        .collect();
    gateways.sort_by(|a, b| age(&a.metadata).cmp(&age(&b.metadata)));
    let mut pool = Pool {
        pool: &settings.addresses,
        taken: Vec::new(),
    };
    gateways
        .iter()
        .map(|g| {
            let class = ours
                .iter()
                .find(|c| c.metadata.name.as_deref() == Some(g.spec.gateway_class_name.as_str()));
            let not_accepted = if class.is_some_and(|c| c.spec.parameters_ref.is_some()) {
                Some((
                    "Pending",
                    format!("GatewayClass {} is not accepted", g.spec.gateway_class_name),
                ))
            } else if let Some(p) = g
                .spec
                .infrastructure
                .as_ref()
                .and_then(|i| i.parameters_ref.as_ref())
            {
                Some((
                    "InvalidParameters",
                    format!(
                        "infrastructure.parametersRef {}/{} {}: leafgate takes no parameters",
                        p.group, p.kind, p.name
                    ),
                ))
            } else {
                g.spec
                    .addresses
                    .iter()
                    .find(|a| a.type_.as_deref().unwrap_or("IPAddress") != "IPAddress")
                    .map(|a| {
                        (
                            "UnsupportedAddress",
                            format!(
                                "address type {} is not supported: use IPAddress",
                                a.type_.as_deref().unwrap_or("")
                            ),
                        )
                    })
            };
            let address = match not_accepted {
                None => pool.assign(g),
                Some(_) => Err(("Invalid", "the Gateway is not accepted".to_string())),
            };
            GatewayState {
                gateway: g,
                namespace: g.metadata.namespace.as_deref().unwrap_or(""),
                name: g.metadata.name.as_deref().unwrap_or(""),
                not_accepted,
                address,
                listeners: listeners::listeners(g, objects.grants, certs),
            }
        })
        .collect()
}

/// HTTPRoutes oldest first, then by namespace and name: the spec's order across routes.
pub fn by_age(routes: &[Arc<HttpRoute>]) -> Vec<&HttpRoute> {
    let mut routes: Vec<&HttpRoute> = routes.iter().map(Arc::as_ref).collect();
    routes.sort_by(|a, b| age(&a.metadata).cmp(&age(&b.metadata)));
    routes
}

/// One HTTPRoute translated on its own: its status, the listeners it attaches to, and its
/// entries, each with its precedence key but for the route's place among routes (`0`: the
/// assembly puts its age order there).
#[derive(Debug, Default)]
pub struct RouteOut {
    /// `None`: it names no Gateway of ours.
    pub status: Option<Arc<RouteStatusOut>>,
    /// `(Gateway namespace, Gateway name, listener index)`, once per attachment.
    pub attached: Vec<(String, String, usize)>,
    pub entries: Vec<(Key, Arc<GatewayRoute>)>,
}

/// The translation of `route` on the Gateways `states` (`index`: by namespace and name).
pub fn route(
    route: &HttpRoute,
    states: &[GatewayState<'_>],
    index: &HashMap<(&str, &str), usize>,
    objects: &Objects<'_>,
    backends: &Backends<'_>,
    settings: &Settings,
) -> RouteOut {
    let mut out = RouteOut::default();
    let namespace = route.metadata.namespace.as_deref().unwrap_or("");
    let name = route.metadata.name.as_deref().unwrap_or("");
    let tenant = settings.tenants.iter().find(|t| t.owns(namespace));
    let read = rules::read(route, backends, objects.grants, &settings.backends, tenant);
    let generation = generation(&route.metadata);
    let mut parents = Vec::new();
    // At most the CRD's bound get a status; more refuse the route (`rules::read`).
    for parent in route.spec.parent_refs.iter().take(Bounds::PARENT_REFS) {
        if parent.group.as_deref().unwrap_or(GROUP) != GROUP
            || parent.kind.as_deref().unwrap_or("Gateway") != "Gateway"
        {
            continue;
        }
        let gw_ns = parent.namespace.as_deref().unwrap_or(namespace);
        let Some(state) = index
            .get(&(gw_ns, parent.name.as_str()))
            .map(|&i| &states[i])
        else {
            continue;
        };
        let attached = attach(route, &read.hostnames, parent, state, objects, tenant);
        let accepted = match (&attached, &read.rules) {
            (Err(why), _) => Some(why.clone()),
            (Ok(_), Err(why)) => Some(why.clone()),
            (Ok(_), Ok(_)) => None,
        };
        if let (None, Ok(on), Ok(rules)) = (&accepted, attached, &read.rules) {
            for (li, hosts) in on {
                let l = &state.listeners[li];
                out.attached
                    .push((state.namespace.into(), state.name.into(), li));
                let key = ListenerKey {
                    namespace: state.namespace.into(),
                    gateway: state.name.into(),
                    listener: l.listener.name.clone(),
                    port: l.port,
                };
                let https = l.listener.protocol == "HTTPS";
                for host in &hosts {
                    for (ri, rule) in rules.iter().enumerate() {
                        for (mi, m) in rule.matches.iter().enumerate() {
                            let entry = entry(
                                namespace,
                                name,
                                &key,
                                https,
                                host,
                                rule,
                                m,
                                tenant.map(|t| t.name.clone()),
                            );
                            out.entries.push((
                                precedence(&key, &entry.host, m, 0, ri, mi),
                                Arc::new(entry),
                            ));
                        }
                    }
                }
            }
        }
        parents.push(RouteParentStatus {
            parent_ref: parent.clone(),
            controller_name: settings.controller_name.clone(),
            conditions: vec![
                cond("Accepted", accepted, "Accepted", generation),
                cond(
                    "ResolvedRefs",
                    read.unresolved.clone(),
                    "ResolvedRefs",
                    generation,
                ),
            ],
        });
    }
    if !parents.is_empty() {
        out.status = Some(Arc::new(RouteStatusOut {
            namespace: namespace.into(),
            name: name.into(),
            parents,
        }));
    }
    out
}

/// The certificates of each programmed HTTPS listener, and every Gateway's status, once
/// the routes have attached (`attached` counted into the listeners).
pub fn finish(states: Vec<GatewayState<'_>>, model: &mut Model) {
    for s in &states {
        for l in s
            .listeners
            .iter()
            .filter(|l| l.programmed() && !l.certs.is_empty())
        {
            model.certs.push(ListenerCerts {
                namespace: s.namespace.into(),
                gateway: s.name.into(),
                listener: l.listener.name.clone(),
                host: l.host.clone(),
                certs: l.certs.clone(),
            });
        }
    }
    model.gateways = states
        .into_iter()
        .map(|s| {
            let generation = generation(&s.gateway.metadata);
            GatewayStatusOut {
                namespace: s.namespace.into(),
                name: s.name.into(),
                conditions: listeners::gateway_conditions(
                    &s.listeners,
                    s.not_accepted.clone(),
                    &s.address,
                    generation,
                ),
                addresses: s.address.iter().copied().collect(),
                listeners: s.listeners.iter().map(|l| l.status(generation)).collect(),
            }
        })
        .collect();
}

/// The listeners of `state` the route attaches to through `parent`, each with the
/// hostnames it serves there, or why it attaches to none: `NoMatchingParent` (no listener
/// has that sectionName and port), `NotAllowedByListeners` (none admits the route's
/// kind and namespace), `NoMatchingListenerHostname`, or `HostnameNotAllowed` (every
/// hostname is outside its tenant's `hosts`).
fn attach(
    route: &HttpRoute,
    hostnames: &[HostPattern],
    parent: &ParentReference,
    state: &GatewayState<'_>,
    objects: &Objects<'_>,
    tenant: Option<&crate::k8s::ingress::model::TenantBounds>,
) -> Result<Vec<(usize, Vec<HostPattern>)>, Why> {
    if let Some(why) = &state.not_accepted {
        return Err((
            "NotAllowedByListeners",
            format!(
                "Gateway {}/{} is not accepted: {}",
                state.namespace, state.name, why.1
            ),
        ));
    }
    let namespace = route.metadata.namespace.as_deref().unwrap_or("");
    let candidates: Vec<usize> = (0..state.listeners.len())
        .filter(|&i| {
            let l = state.listeners[i].listener;
            parent.section_name.as_ref().is_none_or(|s| *s == l.name)
                && parent.port.is_none_or(|p| p == l.port)
        })
        .collect();
    if candidates.is_empty() {
        return Err((
            "NoMatchingParent",
            "no listener matches the parentRef's sectionName and port".into(),
        ));
    }
    let allowed: Vec<usize> = candidates
        .into_iter()
        .filter(|&i| admits(&state.listeners[i], state.namespace, namespace, objects))
        .collect();
    if allowed.is_empty() {
        return Err((
            "NotAllowedByListeners",
            format!("no listener admits HTTPRoutes from namespace {namespace}"),
        ));
    }
    let with_hosts: Vec<(usize, Vec<HostPattern>)> = allowed
        .into_iter()
        .filter_map(|i| {
            hostnames::effective(state.listeners[i].host.as_ref(), hostnames).map(|h| (i, h))
        })
        .collect();
    if with_hosts.is_empty() {
        return Err((
            "NoMatchingListenerHostname",
            "no listener hostname intersects the route's hostnames".into(),
        ));
    }
    let Some(t) = tenant.filter(|t| t.hosts.is_some()) else {
        return Ok(with_hosts);
    };
    let mut refused: Vec<String> = Vec::new();
    let kept: Vec<(usize, Vec<HostPattern>)> = with_hosts
        .into_iter()
        .filter_map(|(i, hosts)| {
            let (ok, bad): (Vec<HostPattern>, Vec<HostPattern>) =
                hosts.into_iter().partition(|h| t.may_claim(h));
            for h in bad.iter().map(ToString::to_string) {
                if !refused.contains(&h) {
                    refused.push(h);
                }
            }
            (!ok.is_empty()).then_some((i, ok))
        })
        .collect();
    if kept.is_empty() {
        let hosts: Vec<String> = t.hosts.iter().flatten().map(ToString::to_string).collect();
        let may = may_claim_only(&hosts);
        return Err((
            "HostnameNotAllowed",
            format!(
                "hostnames {} are not allowed (tenant {} {may})",
                refused.join(", "),
                t.name
            ),
        ));
    }
    Ok(kept)
}

/// Whether the listener takes HTTPRoutes from `route_ns` (allowedRoutes.namespaces:
/// `Same`, the default; `All`; `Selector` on the namespace's labels).
fn admits(l: &ListenerState<'_>, gateway_ns: &str, route_ns: &str, objects: &Objects<'_>) -> bool {
    if !l.valid() || l.supported_kinds.is_empty() {
        return false;
    }
    let namespaces = l
        .listener
        .allowed_routes
        .as_ref()
        .and_then(|a| a.namespaces.as_ref());
    match namespaces.and_then(|n| n.from.as_deref()).unwrap_or("Same") {
        "All" => true,
        "Same" => gateway_ns == route_ns,
        "Selector" => {
            let Some(sel) = namespaces.and_then(|n| n.selector.as_ref()) else {
                return false;
            };
            objects
                .namespaces
                .iter()
                .find(|n| n.metadata.name.as_deref() == Some(route_ns))
                .is_some_and(|n| selector::matches(sel, n.metadata.labels.as_ref()))
        }
        _ => false,
    }
}
