//! The Ingress model's types: the objects in, the settings, and the routes, certificates
//! and report out. The model is a pure function of the objects and the settings
//! (`translate` one Ingress at a time, `incremental` over all of them), so the provider can
//! rebuild it off the hot path on every change and swap the result in, and tests can check
//! it without an API server.
//!
//! What it decides, as the Ingress spec and ingress-nginx do:
//! - which Ingresses are ours (`class`), in the namespaces configured;
//! - one route per (host, path) of each rule, `defaultBackend` as the catch-all and as the
//!   `/` of each of the Ingress's hosts lacking one;
//! - the backend of each: the Service port's ready endpoints, or a 503 with a reason;
//! - the certificates of `spec.tls` by host;
//! - conflicts between Ingresses on the same host and path (the oldest wins);
//! - who owns a host: TOML first (its exact and wildcard hosts whole, its `*` over
//!   host-less rules), else the namespace of the oldest Ingress naming it (or the tenant
//!   owning that namespace, with `host_owner = "tenant"`); rules and certificates for a
//!   host owned elsewhere, or outside the `hosts` patterns of the Ingress's tenant, are
//!   refused and reported ([`Refused`]);
//! - which endpoints an Ingress may send to ([`BackendPolicy`]) and within which limits
//!   its annotations stay (its tenant's).
//!
//! It must not talk to the API server, read files or the clock, or know about listeners:
//! the provider merges its routes with the TOML ones.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use rustls::sign::CertifiedKey;

use crate::config::cidr::Cidr;
use crate::config::{
    BandwidthConfig, Config, HostOwner, HostPattern, PathMatch, UpstreamConfig, glob_matches,
    one_label_before,
};

/// The `spec.controller` of the IngressClass leafgate serves.
pub const CONTROLLER: &str = "leafgate.io/ingress-controller";

/// What `[kubernetes.ingress]`, the tenants and the TOML config say, as the model needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// The IngressClass name (`class`, default `leafgate`).
    pub class: String,
    /// Namespace globs (`team-*`); `None`: every namespace.
    pub namespaces: Option<Vec<String>>,
    /// Every configured tenant, in config order (the first whose globs match an Ingress's
    /// namespace is its tenant).
    pub tenants: Vec<TenantBounds>,
    /// The hosts the TOML routes on the ingress listeners own.
    pub toml_hosts: HostOwners,
    /// The names the TOML certificates of the ingress listeners cover.
    pub toml_certs: HostOwners,
    pub backends: BackendPolicy,
    /// Whom the oldest Ingress naming a host gives it to: its namespace, or its tenant.
    pub host_owner: HostOwner,
}

/// A tenant as the Ingress model bounds it: which namespaces may name it, and the limits
/// no annotation may raise.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantBounds {
    pub name: String,
    /// Its `namespaces` globs.
    pub namespaces: Vec<String>,
    pub bandwidth: BandwidthConfig,
    /// Its `hosts` patterns: the hosts its namespaces' Ingresses may claim; `None`: any.
    pub hosts: Option<Vec<HostPattern>>,
}

impl TenantBounds {
    /// A tenant of `namespaces` without limits.
    pub fn new(name: &str, namespaces: &[&str]) -> Self {
        TenantBounds {
            name: name.to_string(),
            namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
            bandwidth: BandwidthConfig::default(),
            hosts: None,
        }
    }

    /// Whether it owns `namespace`: one of its `namespaces` globs matches it. The first
    /// configured tenant owning a namespace is the tenant of the Ingresses and routes in it.
    pub fn owns(&self, namespace: &str) -> bool {
        self.namespaces.iter().any(|g| glob_matches(g, namespace))
    }

    /// Whether its Ingresses may claim `host` (an Ingress host: exact, one-label
    /// wildcard, or `Any` for rules without a host and `defaultBackend`): only when one
    /// of its `hosts` patterns covers it ([`HostPattern::covers`]). An exact name needs a
    /// pattern matching it; a wildcard `*.s` needs a wildcard pattern on `s` or a suffix
    /// of it; the catch-all needs the pattern `*` (a tenant limited to some hosts must not
    /// take every host nobody routes).
    pub fn may_claim(&self, host: &HostPattern) -> bool {
        let Some(patterns) = &self.hosts else {
            return true;
        };
        patterns.iter().any(|p| p.covers(host))
    }
}

/// The endpoints an Ingress may not send to, besides loopback, link-local, unspecified
/// and multicast addresses, which are refused unless `allow` lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackendPolicy {
    /// `[kubernetes.ingress] deny_backends`.
    pub deny: Vec<Cidr>,
    /// `[kubernetes.ingress] allow_backends`: ranges the operator lets Ingresses reach
    /// although they are loopback, link-local... (a development cluster on one host);
    /// never the gateway's own addresses nor `deny`.
    pub allow: Vec<Cidr>,
    /// The gateway's own listener and admin addresses. One bound on an unspecified
    /// address refuses its port on any address (a pod endpoint on the gateway's own port
    /// is indistinguishable from the gateway itself when it runs on the host network).
    pub own: Vec<SocketAddr>,
    /// `[kubernetes.ingress] allow_unmanaged_endpointslices`: follow EndpointSlices that
    /// the EndpointSlice controller does not manage (written by hand or by another
    /// controller, they can name any address).
    pub allow_unmanaged: bool,
}

/// Who owns which hosts, as routing chooses among them: an exact name, a wildcard (one
/// or more labels, or one only), and `*`. `owner_of` answers for an Ingress host pattern:
/// the owner it would take hosts from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostOwners {
    exact: HashMap<String, String>,
    /// `(".suffix", one label only, owner)`, in the order added.
    wildcard: Vec<(String, bool, String)>,
    any: Option<String>,
}

impl HostOwners {
    /// `owner` owns what `host` matches, unless an earlier call already gave it away.
    pub fn add(&mut self, host: &HostPattern, owner: &str) {
        match host {
            HostPattern::Exact(h) => {
                self.exact
                    .entry(h.clone())
                    .or_insert_with(|| owner.to_string());
            }
            HostPattern::Wildcard(s) | HostPattern::WildcardLabel(s) => {
                let one_label = matches!(host, HostPattern::WildcardLabel(_));
                if !self
                    .wildcard
                    .iter()
                    .any(|(t, o, _)| t == s && *o == one_label)
                {
                    self.wildcard
                        .push((s.clone(), one_label, owner.to_string()));
                }
            }
            HostPattern::Any => {
                self.any.get_or_insert_with(|| owner.to_string());
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.wildcard.is_empty() && self.any.is_none()
    }

    /// The owner an Ingress's `host` would take hosts from: for an exact name, whoever
    /// matches it (an exact name beats any wildcard, so claiming it takes it whole); for
    /// a one-label wildcard `*.s`, a wildcard matching every `x.s` (one on `.s` itself or
    /// a shorter suffix: the Ingress's would win those hosts by length or kind; an exact
    /// name under it still beats it, so it takes nothing from one); for `*`, only `*`.
    pub fn owner_of(&self, host: &HostPattern) -> Option<&str> {
        match host {
            HostPattern::Exact(h) => self.exact.get(h).map(String::as_str).or_else(|| {
                self.wildcard
                    .iter()
                    .find(|(s, one_label, _)| match one_label {
                        true => one_label_before(h, s),
                        false => h.len() > s.len() && h.ends_with(s.as_str()),
                    })
                    .map(|(_, _, o)| o.as_str())
            }),
            HostPattern::Wildcard(s) | HostPattern::WildcardLabel(s) => self
                .wildcard
                .iter()
                .find(|(t, one_label, _)| match one_label {
                    true => t == s,
                    false => s.ends_with(t.as_str()),
                })
                .map(|(_, _, o)| o.as_str()),
            HostPattern::Any => self.any.as_deref(),
        }
    }
}

/// The objects the reflectors hold, as `kube::runtime` stores hand them out.
#[derive(Debug, Clone, Copy)]
pub struct Objects<'a> {
    pub ingresses: &'a [Arc<Ingress>],
    pub classes: &'a [Arc<IngressClass>],
    pub services: &'a [Arc<Service>],
    pub slices: &'a [Arc<EndpointSlice>],
    pub secrets: &'a [Arc<Secret>],
}

/// The hosts the TOML routes serving any of `listeners` own, each to its first route.
pub fn toml_hosts(config: &Config, listeners: &[String]) -> HostOwners {
    let mut owners = HostOwners::default();
    for r in &config.routes {
        let serves = r
            .listeners
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| listeners.contains(n)));
        if serves {
            owners.add(&r.host, &format!("TOML route `{}`", r.name));
        }
    }
    owners
}

/// The routes and the report of one build.
#[derive(Debug, Default)]
pub struct Model {
    /// Conflict-resolved: one per (host, path), sorted by name. Shared with the builder's
    /// cached translations, so a build copies no route and an unchanged route is the same
    /// `Arc` in the next model.
    pub routes: Vec<Arc<IngressRoute>>,
    /// Certificates by host from the served Ingresses' `spec.tls`; on the same host the
    /// Ingress that wins conflicts (the oldest) comes first.
    pub certs: Vec<(HostPattern, Arc<CertifiedKey>)>,
    /// Ours and valid: the leader writes `status.loadBalancer` on these.
    pub served: Vec<IngressRef>,
    /// Ours but refused (a bad annotation): reported as an Event on the Ingress.
    pub skipped: Vec<Skipped>,
    pub conflicts: Vec<Conflict>,
    /// Rules and certificates refused because their host belongs to someone else: never
    /// served, reported as `HostTaken` Events.
    pub refused: Vec<Refused>,
    /// Served, but something it names is missing or broken (a Service, a port, a Secret).
    pub problems: Vec<Problem>,
}

/// One Ingress object, as status writes and Events name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IngressRef {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
}

impl IngressRef {
    pub(super) fn of(ingress: &Ingress) -> Self {
        let m = &ingress.metadata;
        IngressRef {
            namespace: m.namespace.clone().unwrap_or_default(),
            name: m.name.clone().unwrap_or_default(),
            uid: m.uid.clone().unwrap_or_default(),
            resource_version: m.resource_version.clone().unwrap_or_default(),
        }
    }
}

impl std::fmt::Display for IngressRef {
    /// `namespace/name`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// One (host, path) of a served Ingress.
#[derive(Debug, Clone)]
pub struct IngressRoute {
    /// `ingress/<ns>/<name>/<host or *>/<path>`: stable across builds, used in metrics
    /// labels and /status. The path is written `exact /x` or `prefix /x`.
    pub name: String,
    pub ingress: IngressRef,
    /// Exact, the one-label wildcard, or `Any` (a rule without host, `defaultBackend`).
    pub host: HostPattern,
    pub path: PathMatch,
    pub backend: IngressBackend,
    /// `leafgate.io/tenant`, else the tenant owning the namespace, else none.
    pub tenant: Option<String>,
    pub bandwidth: BandwidthConfig,
    /// `leafgate.io/upgraded-idle-timeout`; `None`: the `[timeouts]` default.
    pub upgraded_idle: Option<Duration>,
}

/// Where an Ingress route's requests go.
#[derive(Debug, Clone)]
pub enum IngressBackend {
    /// `key` = "ns/svc:port" (the port as the Ingress names it); `upstream.backends` = the
    /// ready endpoints, never empty.
    Service {
        key: Arc<str>,
        upstream: UpstreamConfig,
    },
    /// 503 with this reason (no ready endpoints, missing Service or port...).
    Unavailable { key: String, reason: String },
}

impl IngressBackend {
    /// `ns/svc:port`, the label of `leafgate_ingress_backend_endpoints`.
    pub fn key(&self) -> &str {
        match self {
            IngressBackend::Service { key, .. } => key,
            IngressBackend::Unavailable { key, .. } => key,
        }
    }
}

/// An Ingress of ours refused whole because of one annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub ingress: IngressRef,
    /// The full annotation key, `leafgate.io/...`.
    pub annotation: String,
    pub reason: String,
}

/// Several Ingresses on one host and path: `winner` serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// As the route name writes it (`app.example`, `*.example.com`, `*`).
    pub host: String,
    /// `exact /x` or `prefix /x`.
    pub path: String,
    /// `ns/name`.
    pub winner: String,
    /// `ns/name`, oldest first.
    pub losers: Vec<String>,
}

/// An Ingress's rules (or certificate) for one host, refused because the host is owned
/// by the TOML config, another namespace or another tenant, or lies outside its tenant's
/// `hosts` patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub ingress: IngressRef,
    /// As the route name writes it (`app.example`, `*.example.com`, `*`).
    pub host: String,
    /// The certificate of `spec.tls` for this host, not its rules.
    pub certificate: bool,
    pub why: Refusal,
}

/// Why a host was refused to an Ingress.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Someone else owns it: `TOML route \`login\``, `namespace team-a (Ingress
    /// team-a/web)`, `tenant team-a (Ingress team-a/web)`.
    Taken { owner: String },
    /// The tenant owning the Ingress's namespace may not claim it.
    NotAllowed {
        tenant: String,
        /// Its `hosts` patterns, as written (`*.team-a.example.com`).
        hosts: Vec<String>,
    },
}

impl Refused {
    /// The Event's and `/status`'s sentence.
    pub fn message(&self) -> String {
        let what = match self.certificate {
            true => "its TLS certificate is not served for it",
            false => "its rules for it are not served",
        };
        match &self.why {
            Refusal::Taken { owner } => format!("host {} is taken by {owner}: {what}", self.host),
            Refusal::NotAllowed { tenant, hosts } => {
                let host = match self.host.as_str() {
                    "*" => "* (rules without a host and defaultBackend)",
                    h => h,
                };
                let may = may_claim_only(hosts);
                format!("host {host} is not allowed (tenant {tenant} {may}): {what}")
            }
        }
    }
}

/// What a tenant of `hosts` patterns (as written) may claim, as refusals say it.
pub fn may_claim_only(hosts: &[String]) -> String {
    match hosts.is_empty() {
        true => "may claim no host".to_string(),
        false => format!("may claim only hosts matching {}", hosts.join(", ")),
    }
}

/// Something a served Ingress names that is missing or broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `ns/name`.
    pub ingress: String,
    pub problem: String,
}
