//! The raw `[kubernetes]`, `[kubernetes.ingress]`, `[kubernetes.gateway]` and
//! `[[virtual_node]]` tables.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use crate::config::model::HostOwner;
use crate::config::model::units::HumanDuration;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKubernetes {
    pub kubeconfig: Option<Spanned<String>>,
    pub context: Option<Spanned<String>>,
    /// Required only with `[[virtual_node]]`s (checked where the nodes are known).
    pub gateway_address: Option<Spanned<RawValue>>,
    pub node_api_listener: Option<Spanned<String>>,
    pub namespace: Option<Spanned<String>>,
    pub identity: Option<Spanned<RawValue>>,
    pub preferred_address_types: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    pub election: RawElection,
    pub heartbeat: Option<HumanDuration>,
    pub ingress: Option<Spanned<RawIngress>>,
    pub gateway: Option<Spanned<RawGatewayApi>>,
}

/// `[kubernetes.ingress]`: leafgate as the ingress controller of one IngressClass.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIngress {
    pub class: Option<Spanned<String>>,
    pub namespaces: Option<Vec<Spanned<String>>>,
    pub listeners: Option<Vec<Spanned<String>>>,
    pub publish_address: Option<Spanned<RawValue>>,
    #[serde(default)]
    pub deny_backends: Vec<Spanned<String>>,
    #[serde(default)]
    pub allow_backends: Vec<Spanned<String>>,
    pub allow_unmanaged_endpointslices: Option<bool>,
    /// `"namespace"` (the default) or `"tenant"`.
    pub host_owner: Option<HostOwner>,
}

/// `[kubernetes.gateway]`: leafgate as the Gateway API controller of the GatewayClasses
/// naming `controller_name`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGatewayApi {
    pub controller_name: Option<Spanned<String>>,
    /// Required (checked in `validate`, at the table).
    pub addresses: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default)]
    pub deny_backends: Vec<Spanned<String>>,
    #[serde(default)]
    pub allow_backends: Vec<Spanned<String>>,
    pub allow_unmanaged_endpointslices: Option<bool>,
    pub http1_fast_path: Option<bool>,
}

/// A string written inline or read from an environment variable at load time.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum RawValue {
    Text(String),
    Env { env: String },
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawElection {
    pub lease_duration: Option<HumanDuration>,
    pub renew_deadline: Option<HumanDuration>,
    pub retry_period: Option<HumanDuration>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVirtualNode {
    pub name: Option<Spanned<String>>,
    pub leaf: Spanned<String>,
    pub mode: Spanned<VirtualNodeMode>,
    pub selector: Option<Spanned<String>>,
    pub tenant: Option<Spanned<String>>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    pub taints: Option<Vec<Spanned<String>>>,
    pub not_ready_after: Option<HumanDuration>,
}

/// Who owns a virtual node's Node object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VirtualNodeMode {
    /// leafgate creates the Node and writes all of it.
    Own,
    /// Another system owns the Nodes matched by `selector`; leafgate writes only
    /// `status.addresses` and `status.daemonEndpoints`.
    Patch,
}
