//! The Gateway API translation's types: the objects and settings in, the route entries and
//! the statuses out. Conditions carry no `lastTransitionTime`: the translation reads no
//! clock; the status writer keeps an unchanged condition's time and stamps a changed one.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;

use super::types::{
    Gateway, GatewayClass, HttpRoute, ListenerStatus, ReferenceGrant, RouteParentStatus,
};
use crate::config::cidr::Cidr;
use crate::config::{BandwidthConfig, HostPattern, PathMatch};
use crate::k8s::ingress::model::{BackendPolicy, IngressBackend, TenantBounds};

/// What `[kubernetes.gateway]` and the tenants say, as the translation needs it.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// GatewayClasses naming this `controllerName` are ours.
    pub controller_name: String,
    /// The address pool, in config order.
    pub addresses: Vec<Cidr>,
    /// Every configured tenant, in config order (the first whose globs match a route's
    /// namespace is its tenant).
    pub tenants: Vec<TenantBounds>,
    pub backends: BackendPolicy,
}

/// The objects the reflectors hold.
#[derive(Debug, Clone, Copy)]
pub struct Objects<'a> {
    pub classes: &'a [Arc<GatewayClass>],
    pub gateways: &'a [Arc<Gateway>],
    pub routes: &'a [Arc<HttpRoute>],
    pub grants: &'a [Arc<ReferenceGrant>],
    /// For `allowedRoutes.namespaces.selector`.
    pub namespaces: &'a [Arc<Namespace>],
    pub services: &'a [Arc<Service>],
    pub slices: &'a [Arc<EndpointSlice>],
    pub secrets: &'a [Arc<Secret>],
}

/// One condition as the spec names it. `status` is True or False (the translation never
/// leaves one Unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cond {
    pub type_: &'static str,
    pub status: bool,
    pub reason: &'static str,
    pub message: String,
    pub observed_generation: i64,
}

/// The translation's output.
#[derive(Debug, Default)]
pub struct Model {
    /// Every served match, in the spec's precedence order within each listener (see
    /// `translate::precedence`).
    pub routes: Vec<Arc<GatewayRoute>>,
    pub classes: Vec<ClassStatus>,
    pub gateways: Vec<GatewayStatusOut>,
    /// In the routes' age order; one build's may be the same `Arc`s as the last's.
    pub http_routes: Vec<Arc<RouteStatusOut>>,
    /// The certificates of each programmed HTTPS listener.
    pub certs: Vec<ListenerCerts>,
}

/// A programmed HTTPS listener's hostname and certificates (the first is served).
#[derive(Debug, Clone)]
pub struct ListenerCerts {
    pub namespace: String,
    pub gateway: String,
    pub listener: String,
    /// Its `hostname` (`None`: any host, the default certificate of its address and port).
    pub host: Option<crate::config::HostPattern>,
    pub certs: Vec<std::sync::Arc<rustls::sign::CertifiedKey>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassStatus {
    pub name: String,
    pub conditions: Vec<Cond>,
    /// Sorted, as `status.supportedFeatures` lists them.
    pub supported_features: Vec<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayStatusOut {
    pub namespace: String,
    pub name: String,
    /// `status.addresses`, each `{type: IPAddress, value}`.
    pub addresses: Vec<IpAddr>,
    pub conditions: Vec<Cond>,
    pub listeners: Vec<ListenerStatus<Cond>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteStatusOut {
    pub namespace: String,
    pub name: String,
    /// One per parentRef naming a Gateway of ours, in spec order.
    pub parents: Vec<RouteParentStatus<Cond>>,
}

impl RouteStatusOut {
    /// At least one parent accepts the route.
    pub fn accepted(&self) -> bool {
        self.parents.iter().any(|p| {
            p.conditions
                .iter()
                .any(|c| c.type_ == "Accepted" && c.status)
        })
    }
}

/// Which listener a route entry serves on.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ListenerKey {
    pub namespace: String,
    pub gateway: String,
    pub listener: String,
    pub port: u16,
}

/// One match of one rule of an HTTPRoute, on one listener and hostname.
#[derive(Debug, Clone)]
pub struct GatewayRoute {
    /// `httproute/<ns>/<name>/<rule>`, the rule by its `name` or its index: the name in
    /// metrics and logs (several matches and hosts of a rule share it).
    pub name: String,
    pub listener: ListenerKey,
    /// The intersection of the listener's and the route's hostnames.
    pub host: HostPattern,
    pub path: PathMatch,
    /// Lowercase names, exact values; the first of equivalent names only.
    pub headers: Vec<(String, String)>,
    /// Exact names and values; the first of equal names only.
    pub query: Vec<(String, String)>,
    pub method: Option<String>,
    pub action: Action,
    pub request_headers: HeaderModifier,
    pub response_headers: HeaderModifier,
    pub rewrite: Option<Rewrite>,
    pub timeouts: Timeouts,
    /// The tenant owning the route's namespace.
    pub tenant: Option<String>,
    pub bandwidth: BandwidthConfig,
}

/// What a matched request gets.
#[derive(Debug, Clone)]
pub enum Action {
    /// Split by weight; empty (no backendRefs): 500.
    Forward(Vec<WeightedBackend>),
    Redirect(Redirect),
}

#[derive(Debug, Clone)]
pub struct WeightedBackend {
    pub weight: u32,
    pub backend: Backend,
}

#[derive(Debug, Clone)]
pub enum Backend {
    /// A Service port: its ready endpoints, or a 503 with a reason when none is.
    Service(IngressBackend),
    /// An invalid backendRef (unknown kind, not permitted, not found): its share of the
    /// requests gets 500.
    Invalid { reason: String },
}

/// `RequestHeaderModifier` / `ResponseHeaderModifier`, names lowercase.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderModifier {
    pub set: Vec<(String, String)>,
    /// Appended to the values already present.
    pub add: Vec<(String, String)>,
    pub remove: Vec<String>,
}

impl HeaderModifier {
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.add.is_empty() && self.remove.is_empty()
    }
}

/// A path modifier, with the prefix it replaces for `ReplacePrefixMatch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathModifier {
    Full(String),
    Prefix {
        matched: String,
        replacement: String,
    },
}

/// `RequestRedirect`, resolved against the listener: the `Location` is
/// `scheme://hostname[:port]path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub scheme: &'static str,
    /// `None`: the request's host (without its port).
    pub hostname: Option<String>,
    /// `None`: the request's path.
    pub path: Option<PathModifier>,
    /// `None`: left out (http on 80, https on 443).
    pub port: Option<u16>,
    pub status: u16,
}

/// `URLRewrite`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    pub hostname: Option<String>,
    pub path: Option<PathModifier>,
}

/// `timeouts`; `Some(Duration::ZERO)` disables the timeout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timeouts {
    pub request: Option<Duration>,
    pub backend_request: Option<Duration>,
}
