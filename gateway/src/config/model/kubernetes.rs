//! `[kubernetes]`, `[kubernetes.ingress]`, `[kubernetes.gateway]` and `[[virtual_node]]`,
//! typed: the root cluster leafgate publishes virtual nodes in and reads Ingresses and
//! Gateway API objects from, and how it appears there.
//! Nothing here reads the environment or talks to an API server.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::cidr::Cidr;

/// Kubernetes' `NodeAddressType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeAddressType {
    Hostname,
    InternalDns,
    InternalIp,
    ExternalDns,
    ExternalIp,
}

impl NodeAddressType {
    /// kube-apiserver's default `--kubelet-preferred-address-types`.
    pub const API_SERVER_DEFAULT: [NodeAddressType; 5] = [
        NodeAddressType::Hostname,
        NodeAddressType::InternalDns,
        NodeAddressType::InternalIp,
        NodeAddressType::ExternalDns,
        NodeAddressType::ExternalIp,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            NodeAddressType::Hostname => "Hostname",
            NodeAddressType::InternalDns => "InternalDNS",
            NodeAddressType::InternalIp => "InternalIP",
            NodeAddressType::ExternalDns => "ExternalDNS",
            NodeAddressType::ExternalIp => "ExternalIP",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::API_SERVER_DEFAULT
            .into_iter()
            .find(|t| t.as_str() == text)
    }
}

/// The root cluster and how leafgate appears in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubernetesConfig {
    /// The root cluster's kubeconfig; `None`: the in-cluster service account.
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// What the root API server dials to reach the node-api listener (an IP or a name).
    /// Always set when the config has `[[virtual_node]]`s.
    pub gateway_address: Option<String>,
    /// The `node-api` listener whose port Nodes publish as their kubelet port. Always set
    /// when the config has `[[virtual_node]]`s.
    pub node_api_listener: Option<String>,
    /// Where leafgate's own objects (the leader Lease) live.
    pub namespace: String,
    /// This replica's name in the leader Lease: `identity`, else `POD_NAME`, else the
    /// host name.
    pub identity: String,
    /// The root API server's `--kubelet-preferred-address-types`, in order.
    pub preferred_address_types: Vec<NodeAddressType>,
    pub election: ElectionTimings,
    /// How often a node's heartbeat Lease in `kube-node-lease` is renewed.
    pub heartbeat: Duration,
    /// `[kubernetes.ingress]`: serve the Ingresses of a class.
    pub ingress: Option<IngressConfig>,
    /// `[kubernetes.gateway]`: serve the Gateways of the classes naming our controller.
    pub gateway: Option<GatewayApiConfig>,
}

/// The IngressClass name used when `[kubernetes.ingress]` names none.
pub const DEFAULT_INGRESS_CLASS: &str = "leafgate";

/// `[kubernetes.ingress]`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngressConfig {
    /// The IngressClass whose Ingresses leafgate serves.
    pub class: String,
    /// Namespace globs (as tenants' `namespaces`); `None`: every namespace.
    pub namespaces: Option<Vec<String>>,
    /// The listeners that serve Ingress routes: those named, else every `http` one.
    pub listeners: Vec<String>,
    /// What the leader writes into `status.loadBalancer.ingress`; `None`: no status.
    pub publish_address: Option<PublishAddress>,
    /// Endpoint ranges no Ingress may send to (the gateway's own addresses, loopback,
    /// link-local, unspecified and multicast ones are refused besides).
    pub deny_backends: Vec<Cidr>,
    /// Loopback, link-local... ranges Ingresses may send to after all (a development
    /// cluster on one host); never over `deny_backends` or the gateway's own addresses.
    pub allow_backends: Vec<Cidr>,
    /// Follow EndpointSlices that the EndpointSlice controller does not manage.
    pub allow_unmanaged_endpointslices: bool,
    /// Who owns a host no TOML route owns: the namespace of its oldest Ingress, or the
    /// tenant owning that namespace.
    pub host_owner: HostOwner,
}

/// The `spec.controllerName` of the GatewayClasses leafgate serves when
/// `[kubernetes.gateway]` names none.
pub const DEFAULT_GATEWAY_CONTROLLER: &str = "leafgate.io/gateway-controller";

/// What the names of the listeners leafgate binds for Gateways start with
/// (`gateway/10.0.0.10:80`); no `[[listener]]` may take one.
pub const GATEWAY_LISTENERS: &str = "gateway/";

/// `[kubernetes.gateway]`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayApiConfig {
    /// GatewayClasses whose `spec.controllerName` is this are leafgate's.
    pub controller_name: String,
    /// The addresses leafgate may bind Gateways on (a bare IP is a range of one), in
    /// config order: each Gateway gets one of them.
    pub addresses: Vec<Cidr>,
    /// As `[kubernetes.ingress]`'s: endpoint ranges no route may send to.
    pub deny_backends: Vec<Cidr>,
    /// As `[kubernetes.ingress]`'s: loopback, link-local... ranges routes may send to.
    pub allow_backends: Vec<Cidr>,
    /// As `[kubernetes.ingress]`'s.
    pub allow_unmanaged_endpointslices: bool,
    /// Whether the Gateways' listeners serve HTTP/1.1 on the fast path, as a
    /// `[[listener]]`'s `http1_fast_path` (default true).
    pub http1_fast_path: bool,
}

/// `[kubernetes.ingress] host_owner`: to whom the oldest Ingress naming a host gives it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HostOwner {
    /// Its namespace: another namespace's rules for the host are refused.
    #[default]
    Namespace,
    /// The tenant owning its namespace (its namespace when no tenant owns it): the
    /// tenant's other namespaces may add paths and certificates; other tenants' and
    /// tenant-less namespaces' are refused.
    Tenant,
}

/// The address an Ingress's status publishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublishAddress {
    /// Written as `{"ip": ...}`.
    Ip(std::net::IpAddr),
    /// Written as `{"hostname": ...}`.
    Hostname(String),
}

impl PublishAddress {
    /// An IP address, else a DNS name (lowercased); anything else is refused.
    pub fn parse(text: &str) -> Result<PublishAddress, String> {
        if let Ok(ip) = text.parse() {
            return Ok(PublishAddress::Ip(ip));
        }
        let name = text.trim_end_matches('.').to_ascii_lowercase();
        let valid = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && !label.starts_with('-')
                    && !label.ends_with('-')
                    && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            });
        if valid {
            Ok(PublishAddress::Hostname(name))
        } else {
            Err(format!(
                "`{text}` is neither an IP address nor a host name: write `203.0.113.7` or `lb.example.com`"
            ))
        }
    }

    /// The `status.loadBalancer.ingress[]` entry for this address.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            PublishAddress::Ip(ip) => serde_json::json!({ "ip": ip.to_string() }),
            PublishAddress::Hostname(h) => serde_json::json!({ "hostname": h }),
        }
    }
}

/// client-go's leader election parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElectionTimings {
    /// How long a lease holds without renewal before others may take it.
    pub lease_duration: Duration,
    /// How long the leader keeps leading without a successful renewal: past it, it stops
    /// writing, well before the lease expires for the others.
    pub renew_deadline: Duration,
    /// How often the leader renews and the others try to acquire.
    pub retry_period: Duration,
}

impl Default for ElectionTimings {
    fn default() -> Self {
        Self {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(5),
            retry_period: Duration::from_secs(2),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualNodeConfig {
    pub leaf: String,
    pub mode: VirtualNodeKind,
    /// Whose `address_rewriter` decides the addresses; `None`: the built-in rule.
    pub tenant: Option<String>,
    /// A virtual node stays Ready while its leaf is unreachable for less than this.
    pub not_ready_after: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VirtualNodeKind {
    Own {
        name: String,
        labels: BTreeMap<String, String>,
        taints: Vec<Taint>,
    },
    Patch {
        /// A label selector, as the API's `labelSelector` takes it.
        selector: String,
    },
}

impl VirtualNodeConfig {
    /// The Node's name (own mode) or the selector (patch mode), for logs and `/status`.
    pub fn describe(&self) -> String {
        match &self.mode {
            VirtualNodeKind::Own { name, .. } => name.clone(),
            VirtualNodeKind::Patch { selector } => format!("selector {selector}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: Option<String>,
    pub effect: String,
}

impl Taint {
    /// `key=value:Effect` or `key:Effect`, as `kubectl taint` writes them.
    pub fn parse(text: &str) -> Result<Taint, String> {
        let bad = || {
            format!(
                "`{text}` is not a taint: write `key=value:Effect` or `key:Effect` with Effect NoSchedule, PreferNoSchedule or NoExecute"
            )
        };
        let (kv, effect) = text.rsplit_once(':').ok_or_else(bad)?;
        if !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            return Err(bad());
        }
        let (key, value) = match kv.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (kv, None),
        };
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(bad());
        }
        Ok(Taint {
            key: key.to_string(),
            value,
            effect: effect.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taints_parse_like_kubectl() {
        let t = Taint::parse("a/b=c:NoExecute").unwrap();
        assert_eq!(
            (t.key.as_str(), t.value.as_deref(), t.effect.as_str()),
            ("a/b", Some("c"), "NoExecute")
        );
        assert_eq!(Taint::parse("k:NoSchedule").unwrap().value, None);
        assert!(Taint::parse("k=v").is_err() && Taint::parse("k=v:Sometimes").is_err());
    }

    #[test]
    fn publish_addresses_are_ips_or_host_names() {
        assert_eq!(
            PublishAddress::parse("203.0.113.7").unwrap().to_json(),
            serde_json::json!({"ip": "203.0.113.7"})
        );
        assert_eq!(
            PublishAddress::parse("lb.example.com.").unwrap().to_json(),
            serde_json::json!({"hostname": "lb.example.com"})
        );
        assert!(PublishAddress::parse("-bad.example").is_err());
        assert!(PublishAddress::parse("a..b").is_err());
    }
}
