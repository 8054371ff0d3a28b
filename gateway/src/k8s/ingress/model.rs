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
//! - conflicts between Ingresses on the same host and path (the oldest wins).
//!
//! It must not talk to the API server, read files or the clock, or know about listeners:
//! the provider merges its routes with the TOML ones.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use rustls::sign::CertifiedKey;

use crate::config::{BandwidthConfig, HostPattern, PathMatch, UpstreamConfig};

/// The `spec.controller` of the IngressClass leafgate serves.
pub const CONTROLLER: &str = "leafgate.io/ingress-controller";

/// What `[kubernetes.ingress]` and the tenants say, as the model needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The IngressClass name (`class`, default `leafgate`).
    pub class: String,
    /// Namespace globs (`team-*`); `None`: every namespace.
    pub namespaces: Option<Vec<String>>,
    /// Every configured tenant: its name and its `namespaces` globs, in config order (the
    /// first whose globs match an Ingress's namespace is its tenant by default).
    pub tenants: Vec<(String, Vec<String>)>,
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

/// The routes and the report of one build.
#[derive(Debug, Default)]
pub struct Model {
    /// Conflict-resolved: one per (host, path), sorted by name.
    pub routes: Vec<IngressRoute>,
    /// Certificates by host from the served Ingresses' `spec.tls`; on the same host the
    /// Ingress that wins conflicts (the oldest) comes first.
    pub certs: Vec<(HostPattern, Arc<CertifiedKey>)>,
    /// Ours and valid: the leader writes `status.loadBalancer` on these.
    pub served: Vec<IngressRef>,
    /// Ours but refused (a bad annotation): reported as an Event on the Ingress.
    pub skipped: Vec<Skipped>,
    pub conflicts: Vec<Conflict>,
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
        key: String,
        upstream: UpstreamConfig,
    },
    /// 503 with this reason (no ready endpoints, missing Service or port...).
    Unavailable { key: String, reason: String },
}

impl IngressBackend {
    /// `ns/svc:port`, the label of `leafgate_ingress_backend_endpoints`.
    pub fn key(&self) -> &str {
        match self {
            IngressBackend::Service { key, .. } | IngressBackend::Unavailable { key, .. } => key,
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

/// Something a served Ingress names that is missing or broken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `ns/name`.
    pub ingress: String,
    pub problem: String,
}

/// A digest of an object's presence and `resourceVersion`: `None` when it has none.
pub(super) fn object_version(resource_version: Option<Option<&str>>) -> Option<u64> {
    let mut h = DefaultHasher::new();
    match resource_version {
        None => 0u8.hash(&mut h),
        Some(v) => {
            1u8.hash(&mut h);
            v.filter(|v| !v.is_empty())?.hash(&mut h);
        }
    }
    Some(h.finish())
}
