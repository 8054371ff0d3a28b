//! `[kubernetes]` (the root cluster leafgate publishes virtual nodes in and reads Ingresses
//! from), `[kubernetes.ingress]` and `[[virtual_node]]`: their raw TOML shapes, their typed
//! form and their validation.
//!
//! Values that come from the environment (`gateway_address = { env = "POD_IP" }`) are read
//! here, once, so a missing variable is a config error at its key and line, not a Node
//! published with an empty address. Nothing here talks to an API server.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::kubeconfig;
use super::raw::ListenerKind;
use super::units::HumanDuration;
use super::validate::Validator;

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
}

/// `[kubernetes.ingress]`: leafgate as the ingress controller of one IngressClass.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIngress {
    pub class: Option<Spanned<String>>,
    pub namespaces: Option<Vec<Spanned<String>>>,
    pub listeners: Option<Vec<Spanned<String>>>,
    pub publish_address: Option<Spanned<RawValue>>,
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

const DEFAULT_TAINT: &str = "virtual-kubelet.io/provider=leafgate:NoSchedule";

impl Validator<'_, '_> {
    /// `[kubernetes]`; `table` is its span (errors about keys it lacks point there), and
    /// `virtual_nodes` says whether the node-publishing keys are required.
    pub(super) fn kubernetes(
        &mut self,
        raw: &RawKubernetes,
        table: std::ops::Range<usize>,
        listeners: &[super::ListenerConfig],
        virtual_nodes: bool,
    ) -> Option<KubernetesConfig> {
        let kubeconfig = match &raw.kubeconfig {
            Some(k) => {
                let path = self.readable_file(k, "kubernetes.kubeconfig")?;
                let context = raw.context.as_ref().map(|c| c.get_ref().as_str());
                if let Err(p) = kubeconfig::resolve(&path, context) {
                    let (span, field) = match (p.at, &raw.context) {
                        (kubeconfig::At::Context, Some(c)) => (c.span(), "context"),
                        _ => (k.span(), "kubeconfig"),
                    };
                    self.report
                        .error(span, format!("kubernetes.{field}"), p.message);
                    return None;
                }
                Some(path)
            }
            None if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() => None,
            None => {
                self.report.error(
                    table.clone(),
                    "kubernetes.kubeconfig",
                    "no `kubeconfig` and not running in a pod (KUBERNETES_SERVICE_HOST is unset): name the root cluster's kubeconfig",
                );
                return None;
            }
        };
        // `Some(None)`: written but unusable (reported); the config fails after every key
        // has been checked.
        let gateway_address = raw
            .gateway_address
            .as_ref()
            .map(|g| self.value(g, "kubernetes.gateway_address"));
        if let Some(l) = &raw.node_api_listener {
            let listener = l.get_ref();
            match listeners.iter().find(|x| &x.name == listener) {
                Some(x) if x.kind == ListenerKind::NodeApi => {}
                found => self.report.error(
                    l.span(),
                    "kubernetes.node_api_listener",
                    match found {
                        Some(_) => format!("listener `{listener}` is not `kind = \"node-api\"`"),
                        None => format!("no [[listener]] is named `{listener}`"),
                    },
                ),
            }
        }
        if virtual_nodes {
            for (missing, key) in [
                (raw.gateway_address.is_none(), "gateway_address"),
                (raw.node_api_listener.is_none(), "node_api_listener"),
            ] {
                if missing {
                    self.report.error(
                        table.clone(),
                        format!("kubernetes.{key}"),
                        format!("[[virtual_node]]s need `{key}` in [kubernetes] (what the root API server dials, and on which listener)"),
                    );
                }
            }
        }
        let ingress = raw.ingress.as_ref().map(|i| self.ingress(i, listeners));
        let identity = match &raw.identity {
            Some(i) => self.value(i, "kubernetes.identity"),
            None => Some(default_identity()),
        };
        let preferred_address_types = match &raw.preferred_address_types {
            None => NodeAddressType::API_SERVER_DEFAULT.to_vec(),
            Some(types) => types
                .iter()
                .enumerate()
                .filter_map(|(i, t)| {
                    let parsed = NodeAddressType::parse(t.get_ref());
                    if parsed.is_none() {
                        self.report.error(
                            t.span(),
                            format!("kubernetes.preferred_address_types[{i}]"),
                            format!("`{}` is not a node address type: use Hostname, InternalDNS, InternalIP, ExternalDNS or ExternalIP", t.get_ref()),
                        );
                    }
                    parsed
                })
                .collect(),
        };
        let defaults = ElectionTimings::default();
        let pick = |v: Option<HumanDuration>, d: Duration| v.map_or(d, |h| h.0);
        let election = ElectionTimings {
            lease_duration: pick(raw.election.lease_duration, defaults.lease_duration),
            renew_deadline: pick(raw.election.renew_deadline, defaults.renew_deadline),
            retry_period: pick(raw.election.retry_period, defaults.retry_period),
        };
        if !(election.retry_period < election.renew_deadline
            && election.renew_deadline < election.lease_duration)
        {
            self.report.error(
                table,
                "kubernetes.election",
                format!(
                    "need retry_period < renew_deadline < lease_duration (have {:?} / {:?} / {:?}): a leader must give up before its lease can pass to another",
                    election.retry_period, election.renew_deadline, election.lease_duration
                ),
            );
        }
        Some(KubernetesConfig {
            kubeconfig,
            context: raw.context.as_ref().map(|c| c.get_ref().clone()),
            gateway_address: gateway_address.map_or(Some(None), |g| g.map(Some))?,
            node_api_listener: raw.node_api_listener.as_ref().map(|l| l.get_ref().clone()),
            namespace: raw
                .namespace
                .as_ref()
                .map_or_else(|| "leafgate".to_string(), |n| n.get_ref().clone()),
            identity: identity?,
            preferred_address_types,
            election,
            heartbeat: raw.heartbeat.map_or(Duration::from_secs(10), |h| h.0),
            ingress: ingress.map_or(Some(None), |i| i.map(Some))?,
        })
    }

    /// `[kubernetes.ingress]`: every problem reported at its key.
    fn ingress(
        &mut self,
        raw: &Spanned<RawIngress>,
        listeners: &[super::ListenerConfig],
    ) -> Option<IngressConfig> {
        let table = raw.span();
        let raw = raw.get_ref();
        let mut ok = true;
        let class = match &raw.class {
            Some(c) if c.get_ref().is_empty() => {
                self.report
                    .error(c.span(), "kubernetes.ingress.class", "must not be empty");
                ok = false;
                String::new()
            }
            Some(c) => c.get_ref().clone(),
            None => DEFAULT_INGRESS_CLASS.to_string(),
        };
        let namespaces = raw.namespaces.as_ref().map(|globs| {
            for (i, g) in globs.iter().enumerate() {
                if g.get_ref().is_empty() {
                    self.report.error(
                        g.span(),
                        format!("kubernetes.ingress.namespaces[{i}]"),
                        "an empty pattern matches no namespace: write a name or a glob like `team-*`",
                    );
                    ok = false;
                }
            }
            globs.iter().map(|g| g.get_ref().clone()).collect()
        });
        let listeners = match &raw.listeners {
            Some(names) => {
                for (i, n) in names.iter().enumerate() {
                    match listeners.iter().find(|l| &l.name == n.get_ref()) {
                        Some(l) if l.kind == ListenerKind::Http => {}
                        found => {
                            ok = false;
                            self.report.error(
                                n.span(),
                                format!("kubernetes.ingress.listeners[{i}]"),
                                match found {
                                    Some(_) => format!("listener `{}` is not `kind = \"http\"`: Ingress routes are served on http listeners", n.get_ref()),
                                    None => format!("no [[listener]] is named `{}`", n.get_ref()),
                                },
                            );
                        }
                    }
                }
                names.iter().map(|n| n.get_ref().clone()).collect()
            }
            None => {
                let all: Vec<String> = listeners
                    .iter()
                    .filter(|l| l.kind == ListenerKind::Http)
                    .map(|l| l.name.clone())
                    .collect();
                if all.is_empty() && !listeners.is_empty() {
                    self.report.error(
                        table,
                        "kubernetes.ingress.listeners",
                        "no `kind = \"http\"` listener serves Ingress routes: add one",
                    );
                    ok = false;
                }
                all
            }
        };
        let publish_address = match &raw.publish_address {
            Some(v) => {
                let text = self.value(v, "kubernetes.ingress.publish_address")?;
                match PublishAddress::parse(&text) {
                    Ok(a) => Some(a),
                    Err(why) => {
                        self.report
                            .error(v.span(), "kubernetes.ingress.publish_address", why);
                        return None;
                    }
                }
            }
            None => None,
        };
        ok.then_some(IngressConfig {
            class,
            namespaces,
            listeners,
            publish_address,
        })
    }

    pub(super) fn virtual_node(
        &mut self,
        raw: &RawVirtualNode,
        key: &str,
        leaves: &[&str],
        tenants: &[super::TenantConfig],
    ) -> Option<VirtualNodeConfig> {
        let leaf = raw.leaf.get_ref();
        if !leaves.contains(&leaf.as_str()) {
            self.report.error(
                raw.leaf.span(),
                format!("{key}.leaf"),
                format!("no [[leaf]] is named `{leaf}`"),
            );
        }
        if let Some(t) = &raw.tenant
            && !tenants.iter().any(|x| &x.name == t.get_ref())
        {
            self.report.error(
                t.span(),
                format!("{key}.tenant"),
                format!("no [[tenant]] is named `{}`", t.get_ref()),
            );
        }
        let mode = match (raw.mode.get_ref(), &raw.name, &raw.selector) {
            (VirtualNodeMode::Own, Some(name), None) => {
                let taints = match &raw.taints {
                    None => vec![Taint::parse(DEFAULT_TAINT).ok()?],
                    Some(list) => list
                        .iter()
                        .enumerate()
                        .filter_map(|(i, t)| {
                            Taint::parse(t.get_ref())
                                .map_err(|why| {
                                    self.report
                                        .error(t.span(), format!("{key}.taints[{i}]"), why)
                                })
                                .ok()
                        })
                        .collect(),
                };
                VirtualNodeKind::Own {
                    name: name.get_ref().clone(),
                    labels: raw.labels.clone(),
                    taints,
                }
            }
            (VirtualNodeMode::Patch, None, Some(selector))
                if raw.labels.is_empty() && raw.taints.is_none() =>
            {
                VirtualNodeKind::Patch {
                    selector: selector.get_ref().clone(),
                }
            }
            (VirtualNodeMode::Own, _, _) => {
                self.report.error(
                    raw.mode.span(),
                    key.to_string(),
                    "`mode = \"own\"` needs `name` (the Node leafgate creates) and no `selector`",
                );
                return None;
            }
            (VirtualNodeMode::Patch, _, _) => {
                self.report.error(
                    raw.mode.span(),
                    key.to_string(),
                    "`mode = \"patch\"` needs `selector` (the Nodes another system owns) and no `name`, `labels` or `taints`",
                );
                return None;
            }
        };
        Some(VirtualNodeConfig {
            leaf: leaf.clone(),
            mode,
            tenant: raw.tenant.as_ref().map(|t| t.get_ref().clone()),
            not_ready_after: raw.not_ready_after.map_or(Duration::from_secs(40), |d| d.0),
        })
    }

    fn value(&mut self, v: &Spanned<RawValue>, key: &str) -> Option<String> {
        match v.get_ref() {
            RawValue::Text(t) if !t.is_empty() => Some(t.clone()),
            RawValue::Text(_) => {
                self.report.error(v.span(), key, "must not be empty");
                None
            }
            RawValue::Env { env } => match std::env::var(env) {
                Ok(t) if !t.is_empty() => Some(t),
                _ => {
                    self.report.error(
                        v.span(),
                        key,
                        format!("environment variable `{env}` is unset or empty (in a pod, set it from the downward API)"),
                    );
                    None
                }
            },
        }
    }
}

/// `POD_NAME` (from the downward API), else the host name (a pod's is its name too).
fn default_identity() -> String {
    std::env::var("POD_NAME")
        .ok()
        .filter(|n| !n.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_string())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| format!("leafgate-{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::path::Path;

    const BASE: &str = "[[listener]]\nname = \"kubelet\"\nbind = \"127.0.0.1:0\"\n[[leaf]]\nname = \"leaf-1\"\nkubeconfig = \"/nonexistent\"\n";

    fn errors(src: &str) -> String {
        Config::parse(Path::new("t.toml"), src)
            .unwrap_err()
            .to_string()
    }

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
    fn errors_point_at_the_key() {
        let e = errors(&format!(
            "{BASE}[kubernetes]\nkubeconfig = \"/nonexistent-root\"\ngateway_address = {{ env = \"LEAFGATE_TEST_UNSET_VAR\" }}\nnode_api_listener = \"kubelet\"\npreferred_address_types = [\"InternalIP\", \"Bogus\"]\n"
        ));
        assert!(
            e.contains("t.toml:8:14: kubernetes.kubeconfig: cannot read"),
            "{e}"
        );
        let e = errors(&format!(
            "{BASE}[kubernetes]\nkubeconfig = \"/proc/self/cmdline\"\ngateway_address = {{ env = \"LEAFGATE_TEST_UNSET_VAR\" }}\nnode_api_listener = \"nope\"\n"
        ));
        assert!(e.contains("kubernetes.kubeconfig"), "{e}");
        let e = errors(&format!(
            "{BASE}[[virtual_node]]\nleaf = \"leaf-2\"\nmode = \"own\"\ntaints = [\"x\"]\n"
        ));
        assert!(
            e.contains("virtual_node[0]: `mode = \"own\"` needs `name`"),
            "{e}"
        );
        assert!(
            e.contains("t.toml:8:8: virtual_node[0].leaf: no [[leaf]]"),
            "{e}"
        );
        assert!(e.contains("needs [kubernetes]"), "{e}");
        let e = errors(&format!(
            "{BASE}[[virtual_node]]\nleaf = \"leaf-1\"\nmode = \"sideways\"\n"
        ));
        assert!(e.contains("t.toml:9:8: virtual_node[0].mode"), "{e}");
        let twice = "[[virtual_node]]\nname = \"vn\"\nleaf = \"leaf-1\"\nmode = \"own\"\n";
        let e = errors(&format!("{BASE}{twice}{twice}"));
        assert!(
            e.contains(
                "t.toml:12:8: virtual_node[1].name: duplicate virtual node name `vn` (first at 8:8)"
            ),
            "{e}"
        );
    }

    fn root_kubeconfig() -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        std::io::Write::write_all(
            &mut f,
            b"apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user: {}\ncurrent-context: x\n",
        )
        .unwrap();
        f
    }

    #[test]
    fn ingress_alone_needs_no_node_keys_and_defaults_its_settings() {
        let kc = root_kubeconfig();
        let src = format!(
            "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n[[listener]]\nname = \"api\"\nbind = \"127.0.0.1:0\"\nkind = \"kube-api\"\ntls = {{ cert = \"/nonexistent\", key = \"/nonexistent\" }}\n[kubernetes]\nkubeconfig = \"{}\"\n[kubernetes.ingress]\n",
            kc.path().display()
        );
        // The kube-api listener's missing files fail the config; what matters here is
        // that nothing about [kubernetes] does.
        let e = errors(&src);
        assert!(!e.contains("kubernetes"), "{e}");
        let src = format!(
            "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n[kubernetes]\nkubeconfig = \"{}\"\n[kubernetes.ingress]\npublish_address = \"LB.example.com\"\n",
            kc.path().display()
        );
        let c = Config::parse(Path::new("t.toml"), &src).unwrap();
        let k = c.kubernetes.unwrap();
        assert_eq!((k.gateway_address, k.node_api_listener), (None, None));
        let i = k.ingress.unwrap();
        assert_eq!(i.class, DEFAULT_INGRESS_CLASS);
        assert_eq!(i.listeners, vec!["web".to_string()]);
        assert_eq!(i.namespaces, None);
        assert_eq!(
            i.publish_address,
            Some(PublishAddress::Hostname("lb.example.com".into()))
        );
    }

    #[test]
    fn ingress_errors_name_their_key() {
        let kc = root_kubeconfig();
        let src = format!(
            "{BASE}[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n[kubernetes]\nkubeconfig = \"{}\"\n[kubernetes.ingress]\nclass = \"\"\nnamespaces = [\"\"]\nlisteners = [\"web\", \"nope\"]\npublish_address = \"not an address!\"\n",
            kc.path().display()
        );
        let e = errors(&src);
        assert!(
            e.contains("t.toml:13:9: kubernetes.ingress.class: must not be empty"),
            "{e}"
        );
        assert!(
            e.contains("t.toml:14:15: kubernetes.ingress.namespaces[0]"),
            "{e}"
        );
        assert!(
            e.contains(
                "t.toml:15:21: kubernetes.ingress.listeners[1]: no [[listener]] is named `nope`"
            ),
            "{e}"
        );
        assert!(
            e.contains(
                "t.toml:16:19: kubernetes.ingress.publish_address: `not an address!` is neither"
            ),
            "{e}"
        );
    }

    #[test]
    fn virtual_nodes_need_the_node_keys_reported_at_the_kubernetes_table() {
        let kc = root_kubeconfig();
        let src = format!(
            "{BASE}[kubernetes]\nkubeconfig = \"{}\"\n[[virtual_node]]\nname = \"vn\"\nleaf = \"leaf-1\"\nmode = \"own\"\n",
            kc.path().display()
        );
        let e = errors(&src);
        assert!(
            e.contains(":7:1: kubernetes.gateway_address: [[virtual_node]]s need"),
            "{e}"
        );
        assert!(
            e.contains(":7:1: kubernetes.node_api_listener: [[virtual_node]]s need"),
            "{e}"
        );
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
