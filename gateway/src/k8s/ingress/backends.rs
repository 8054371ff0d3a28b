//! An Ingress backend (`service.name` + port name or number) resolved to the ready
//! endpoints of that Service port, as kube-proxy and ingress-nginx read them: the Service
//! port, then the EndpointSlices labelled `kubernetes.io/service-name`, the slice port
//! whose `name` equals the Service port's name (its `port` is the target port), and the
//! endpoints whose `conditions.ready` is true or absent, first address of each.
//!
//! Only pod endpoints are followed ([`BackendPolicy`]): an address that is loopback,
//! link-local, unspecified, multicast (or broadcast), one of the gateway's own listener
//! or admin addresses, or in the operator's `deny_backends` is refused with a reason, and
//! so is every EndpointSlice the EndpointSlice controller does not manage (label
//! `endpointslice.kubernetes.io/managed-by`) unless the operator allows them: whoever can
//! write an Ingress and an EndpointSlice could otherwise point the public listener at the
//! admin API or at the node's own services.
//!
//! Services and slices are indexed by namespace and name once per build, so resolving
//! 10,000 backends is 10,000 hash lookups, not a scan each.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};

use foldhash::HashMap;
use k8s_openapi::api::core::v1::{Service, ServicePort};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{IngressServiceBackend, ServiceBackendPort};

use super::annotations::BackendProtocol;
use super::model::{BackendPolicy, IngressBackend};
use crate::config::{Backend, UpstreamConfig, UpstreamProtocol, UpstreamTls};

/// The label an EndpointSlice names its Service by.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The label naming who manages an EndpointSlice, and the EndpointSlice controller's value.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
pub const SLICE_CONTROLLER: &str = "endpointslice-controller.k8s.io";

/// Services and EndpointSlices by `(namespace, name)`, borrowed from the stores.
#[derive(Debug, Default)]
pub struct Backends<'a> {
    services: HashMap<(&'a str, &'a str), &'a Service>,
    /// By `(namespace, service name)`.
    slices: HashMap<(&'a str, &'a str), Vec<&'a EndpointSlice>>,
}

/// A resolved backend, and what is wrong with the objects when it is unavailable because
/// of them (`None` when it only lacks ready endpoints, a normal, passing state).
pub struct Resolved {
    pub backend: IngressBackend,
    pub problem: Option<String>,
    /// The Service or the port it names does not exist (the Gateway API's
    /// `BackendNotFound`; an ExternalName Service or refused endpoints are not that).
    pub missing: bool,
}

impl<'a> Backends<'a> {
    pub fn index(services: &'a [Arc<Service>], slices: &'a [Arc<EndpointSlice>]) -> Self {
        let mut index = Backends::default();
        for s in services {
            if let (Some(ns), Some(name)) = (&s.metadata.namespace, &s.metadata.name) {
                index.services.insert((ns.as_str(), name.as_str()), s);
            }
        }
        for s in slices {
            let service = s
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(SERVICE_NAME_LABEL));
            if let (Some(ns), Some(service)) = (&s.metadata.namespace, service) {
                index
                    .slices
                    .entry((ns.as_str(), service.as_str()))
                    .or_default()
                    .push(s);
            }
        }
        index
    }

    /// Feeds `h` what [`Backends::resolve`] reads of Service `namespace/name`: the
    /// resourceVersions of the Service and of its EndpointSlices, by slice name (the
    /// stores' order may differ between builds).
    pub fn digest(&self, namespace: &str, name: &str, h: &mut impl std::hash::Hasher) {
        use std::hash::Hash;
        let key = (namespace, name);
        self.services
            .get(&key)
            .map(|s| &s.metadata.resource_version)
            .hash(h);
        let mut slices: Vec<(&Option<String>, &Option<String>)> = self
            .slices
            .get(&key)
            .into_iter()
            .flatten()
            .map(|s| (&s.metadata.name, &s.metadata.resource_version))
            .collect();
        slices.sort_unstable();
        slices.hash(h);
    }

    /// Resolves `backend` of an Ingress in `namespace`. `protocol` is the annotation's,
    /// which overrides the Service port's `appProtocol`. Endpoints `policy` refuses are
    /// left out and reported as the problem, even when others serve.
    pub fn resolve(
        &self,
        namespace: &str,
        backend: &IngressServiceBackend,
        protocol: Option<BackendProtocol>,
        policy: &BackendPolicy,
    ) -> Resolved {
        let port_ref = backend.port.as_ref();
        let key = format!("{namespace}/{}:{}", backend.name, port_label(port_ref));
        let unavailable = |key: String, reason: String, problem: bool| Resolved {
            problem: problem.then(|| reason.clone()),
            backend: IngressBackend::Unavailable { key, reason },
            missing: false,
        };
        let missing = |key: String, reason: String| Resolved {
            missing: true,
            ..unavailable(key, reason, true)
        };
        let Some(service) = self.services.get(&(namespace, backend.name.as_str())) else {
            let reason = format!("service {namespace}/{} not found", backend.name);
            return missing(key, reason);
        };
        if service.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("ExternalName") {
            let reason = format!(
                "service {namespace}/{} is of type ExternalName, which leafgate does not follow: point the Ingress at a Service with endpoints",
                backend.name
            );
            return unavailable(key, reason, true);
        }
        let Some(port) = service_port(service, port_ref) else {
            let reason = format!(
                "service {namespace}/{} has no port {}",
                backend.name,
                port_label(port_ref)
            );
            return missing(key, reason);
        };
        let protocol = protocol
            .unwrap_or_else(|| BackendProtocol::of_app_protocol(port.app_protocol.as_deref()));
        let mut refused = Vec::new();
        let endpoints = self.ready_endpoints(
            namespace,
            &backend.name,
            port,
            protocol.tls(),
            policy,
            &mut refused,
        );
        let refused = (!refused.is_empty()).then(|| format!("{key}: {}", refused.join("; ")));
        if endpoints.is_empty() {
            return match refused {
                Some(why) => unavailable(key, format!("no endpoints allowed for {why}"), true),
                None => {
                    let reason = format!("no ready endpoints for {key}");
                    unavailable(key, reason, false)
                }
            };
        }
        Resolved {
            backend: IngressBackend::Service {
                key: key.into(),
                upstream: upstream(endpoints, protocol),
            },
            problem: refused.map(|why| format!("endpoints refused for {why}")),
            missing: false,
        }
    }

    /// The ready endpoints of `port`, sorted and without duplicates, so an unchanged set
    /// compares equal across builds and the provider keeps its connection pool.
    /// Refused slices and endpoints are noted in `refused`, with why.
    fn ready_endpoints(
        &self,
        namespace: &str,
        service: &str,
        port: &ServicePort,
        tls: bool,
        policy: &BackendPolicy,
        refused: &mut Vec<String>,
    ) -> Vec<Backend> {
        let mut out = Vec::new();
        for slice in self.slices.get(&(namespace, service)).into_iter().flatten() {
            let managed_by = slice
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(MANAGED_BY_LABEL))
                .map_or("", String::as_str);
            if managed_by != SLICE_CONTROLLER && !policy.allow_unmanaged {
                refused.push(format!(
                    "EndpointSlice {} is not managed by the EndpointSlice controller ({MANAGED_BY_LABEL}: {}); set allow_unmanaged_endpointslices to follow it",
                    slice.metadata.name.as_deref().unwrap_or(""),
                    if managed_by.is_empty() { "unset" } else { managed_by }
                ));
                continue;
            }
            let ipv6 = match slice.address_type.as_str() {
                "IPv4" => false,
                "IPv6" => true,
                // FQDN slices (deprecated) name hosts, not endpoints we can dial as listed.
                _ => continue,
            };
            let Some(target) = slice.ports.iter().flatten().find_map(|p| {
                (p.name.as_deref().unwrap_or("") == port.name.as_deref().unwrap_or(""))
                    .then_some(p.port)
                    .flatten()
            }) else {
                continue;
            };
            let Ok(target) = u16::try_from(target) else {
                continue;
            };
            for endpoint in &slice.endpoints {
                let ready = endpoint
                    .conditions
                    .as_ref()
                    .and_then(|c| c.ready)
                    .unwrap_or(true);
                let Some(address) = endpoint.addresses.first().filter(|_| ready) else {
                    continue;
                };
                let Ok(ip) = address.parse::<IpAddr>() else {
                    continue;
                };
                if let Some(why) = refusal(ip, target, policy) {
                    refused.push(format!("endpoint {address} port {target} is {why}"));
                    continue;
                }
                if let Some(authority) = authority(address, ipv6, target) {
                    out.push(Backend { tls, authority });
                }
            }
        }
        out.sort_by(|a, b| a.authority.as_str().cmp(b.authority.as_str()));
        out.dedup();
        out
    }
}

/// Why `policy` refuses endpoint `ip`:`port`, or `None` when it may be dialled.
fn refusal(ip: IpAddr, port: u16, policy: &BackendPolicy) -> Option<String> {
    let ip = ip.to_canonical();
    let special = match ip {
        IpAddr::V4(v4) if v4.is_loopback() => Some("a loopback address"),
        IpAddr::V4(v4) if v4.is_link_local() => Some("a link-local address"),
        IpAddr::V4(v4) if v4.is_unspecified() => Some("the unspecified address"),
        IpAddr::V4(v4) if v4.is_multicast() || v4.is_broadcast() => {
            Some("a multicast or broadcast address")
        }
        IpAddr::V6(v6) if v6.is_loopback() => Some("a loopback address"),
        IpAddr::V6(v6) if v6.is_unicast_link_local() => Some("a link-local address"),
        IpAddr::V6(v6) if v6.is_unspecified() => Some("the unspecified address"),
        IpAddr::V6(v6) if v6.is_multicast() => Some("a multicast address"),
        _ => None,
    };
    if let Some(why) = special.filter(|_| !policy.allow.iter().any(|c| c.contains(ip))) {
        return Some(why.to_string());
    }
    let own = policy.own.iter().any(|a: &SocketAddr| {
        a.port() == port && (a.ip().is_unspecified() || a.ip().to_canonical() == ip)
    });
    if own {
        return Some("one of the gateway's own addresses".to_string());
    }
    policy
        .deny
        .iter()
        .find(|c| c.contains(ip))
        .map(|c| format!("in deny_backends ({c})"))
}

/// The port as the Ingress names it: its name, else its number.
fn port_label(port: Option<&ServiceBackendPort>) -> String {
    match port {
        Some(ServiceBackendPort {
            name: Some(name), ..
        }) if !name.is_empty() => name.clone(),
        Some(ServiceBackendPort {
            number: Some(n), ..
        }) => n.to_string(),
        _ => "<no port>".to_string(),
    }
}

/// The Service port the Ingress names, by name or by number.
fn service_port<'s>(
    service: &'s Service,
    port: Option<&ServiceBackendPort>,
) -> Option<&'s ServicePort> {
    let ports = service.spec.as_ref()?.ports.as_ref()?;
    let port = port?;
    match (&port.name, port.number) {
        (Some(name), _) if !name.is_empty() => ports
            .iter()
            .find(|p| p.name.as_deref() == Some(name.as_str())),
        (_, Some(number)) => ports.iter().find(|p| p.port == number),
        _ => None,
    }
}

/// `10.0.0.1:8080` or `[fd00::1]:8080`; `None` for an address that is not an IP of the
/// slice's family (the API server validates them, but a store holds what it was sent).
fn authority(address: &str, ipv6: bool, port: u16) -> Option<http::uri::Authority> {
    let text = match address.parse::<IpAddr>().ok()? {
        IpAddr::V4(ip) if !ipv6 => format!("{ip}:{port}"),
        IpAddr::V6(ip) if ipv6 => format!("[{ip}]:{port}"),
        _ => return None,
    };
    text.parse().ok()
}

fn upstream(backends: Vec<Backend>, protocol: BackendProtocol) -> UpstreamConfig {
    UpstreamConfig {
        backends,
        protocol: match protocol {
            BackendProtocol::Http | BackendProtocol::Https => UpstreamProtocol::Auto,
            BackendProtocol::H2c | BackendProtocol::H2 => UpstreamProtocol::H2,
        },
        tls: protocol.tls().then(unverified_tls),
    }
}

/// TLS to pods without verifying their certificate, as ingress-nginx does by default
/// (`proxy-ssl-verify off`): pod certificates are rarely issued for a name we could check.
fn unverified_tls() -> UpstreamTls {
    static EMPTY: OnceLock<Arc<rustls::RootCertStore>> = OnceLock::new();
    UpstreamTls {
        roots: EMPTY
            .get_or_init(|| Arc::new(rustls::RootCertStore::empty()))
            .clone(),
        identity: None,
        server_name: None,
        insecure_skip_verify: true,
    }
}
