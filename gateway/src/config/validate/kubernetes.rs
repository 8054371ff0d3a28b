//! `[kubernetes]`, `[kubernetes.ingress]`, `[kubernetes.gateway]` and `[[virtual_node]]`s
//! validated: the root cluster's kubeconfig resolved, the listeners and leaves they name exist and are of the
//! right kind, election timings ordered, node modes complete.
//!
//! Values that come from the environment (`gateway_address = { env = "POD_IP" }`) are read
//! here, once, so a missing variable is a config error at its key and line, not a Node
//! published with an empty address. Nothing here talks to an API server.

use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use toml::Spanned;

use crate::config::model::cidr::Cidr;
use crate::config::model::units::HumanDuration;
use crate::config::model::{
    DEFAULT_GATEWAY_CONTROLLER, DEFAULT_INGRESS_CLASS, ElectionTimings, GatewayApiConfig,
    IngressConfig, KubernetesConfig, ListenerConfig, ListenerKind, NodeAddressType, PublishAddress,
    Taint, TenantConfig, VirtualNodeConfig, VirtualNodeKind,
};
use crate::config::raw::RawConfig;
use crate::config::raw::kubernetes::{
    RawGatewayApi, RawIngress, RawKubernetes, RawValue, RawVirtualNode, VirtualNodeMode,
};

use super::kubeconfig;
use super::names::Names;
use super::validator::Validator;

const DEFAULT_TAINT: &str = "virtual-kubelet.io/provider=leafgate:NoSchedule";

impl Validator<'_, '_> {
    /// Every `[[virtual_node]]` that validates; each needs `[kubernetes]`, a `[[leaf]]`
    /// and, when it names one, a `[[tenant]]`.
    pub(super) fn virtual_nodes(
        &mut self,
        raw: &RawConfig,
        tenants: &[TenantConfig],
    ) -> Vec<VirtualNodeConfig> {
        // Named leaves, valid or not: a leaf with a broken kubeconfig is reported there,
        // not again at every virtual node of it.
        let leaf_names: Vec<&str> = raw
            .leaves
            .iter()
            .map(|l| l.name.get_ref().as_str())
            .collect();
        let mut node_names = Names::default();
        raw.virtual_nodes
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let key = format!("virtual_node[{i}]");
                if let Some(name) = &v.get_ref().name {
                    node_names.insert(self.report, name, &format!("{key}.name"), "virtual node");
                }
                if raw.kubernetes.is_none() {
                    self.report.error(
                        v.span(),
                        key.clone(),
                        "a virtual node needs [kubernetes] (the root cluster to publish it in)",
                    );
                }
                self.virtual_node(v.get_ref(), &key, &leaf_names, tenants)
            })
            .collect()
    }

    /// `[kubernetes]`; `table` is its span (errors about keys it lacks point there), and
    /// `virtual_nodes` says whether the node-publishing keys are required.
    pub(super) fn kubernetes(
        &mut self,
        raw: &RawKubernetes,
        table: Range<usize>,
        listeners: &[ListenerConfig],
        virtual_nodes: bool,
    ) -> Option<KubernetesConfig> {
        let kubeconfig = self.root_kubeconfig(raw, &table)?;
        // `Some(None)`: written but unusable (reported); the config fails after every key
        // has been checked.
        let gateway_address = raw
            .gateway_address
            .as_ref()
            .map(|g| self.value(g, "kubernetes.gateway_address"));
        self.node_keys(raw, &table, listeners, virtual_nodes);
        let ingress = raw.ingress.as_ref().map(|i| self.ingress(i, listeners));
        let gateway = raw.gateway.as_ref().map(|g| self.gateway_api(g));
        let identity = match &raw.identity {
            Some(i) => self.value(i, "kubernetes.identity"),
            None => Some(default_identity()),
        };
        let preferred_address_types = self.preferred_address_types(raw);
        let election = self.election(raw, table);
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
            gateway: gateway.map_or(Some(None), |g| g.map(Some))?,
        })
    }

    /// The root cluster's kubeconfig, resolved: `Some(None)` in a pod without one (the
    /// service account), `None` when it cannot be used (reported).
    fn root_kubeconfig(
        &mut self,
        raw: &RawKubernetes,
        table: &Range<usize>,
    ) -> Option<Option<PathBuf>> {
        match &raw.kubeconfig {
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
                Some(Some(path))
            }
            None if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() => Some(None),
            None => {
                self.report.error(
                    table.clone(),
                    "kubernetes.kubeconfig",
                    "no `kubeconfig` and not running in a pod (KUBERNETES_SERVICE_HOST is unset): name the root cluster's kubeconfig",
                );
                None
            }
        }
    }

    /// `node_api_listener` names a `node-api` listener, and virtual nodes have the keys
    /// they need.
    fn node_keys(
        &mut self,
        raw: &RawKubernetes,
        table: &Range<usize>,
        listeners: &[ListenerConfig],
        virtual_nodes: bool,
    ) {
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
    }

    /// `preferred_address_types`, kube-apiserver's default when left out.
    fn preferred_address_types(&mut self, raw: &RawKubernetes) -> Vec<NodeAddressType> {
        match &raw.preferred_address_types {
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
        }
    }

    /// `kubernetes.election` over client-go's defaults, in the order that lets a leader
    /// give up before its lease passes to another.
    fn election(&mut self, raw: &RawKubernetes, table: Range<usize>) -> ElectionTimings {
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
        election
    }

    /// `[kubernetes.ingress]`: every problem reported at its key.
    fn ingress(
        &mut self,
        raw: &Spanned<RawIngress>,
        listeners: &[ListenerConfig],
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
        let deny_backends = self.ranges(
            &raw.deny_backends,
            "kubernetes.ingress.deny_backends",
            &mut ok,
        );
        let allow_backends = self.ranges(
            &raw.allow_backends,
            "kubernetes.ingress.allow_backends",
            &mut ok,
        );
        ok.then_some(IngressConfig {
            class,
            namespaces,
            listeners,
            publish_address,
            deny_backends,
            allow_backends,
            allow_unmanaged_endpointslices: raw.allow_unmanaged_endpointslices.unwrap_or(false),
            host_owner: raw.host_owner.unwrap_or_default(),
        })
    }

    /// CIDRs (or bare addresses) at `key[i]`; a bad one is reported and clears `ok`.
    fn ranges(&mut self, list: &[Spanned<String>], key: &str, ok: &mut bool) -> Vec<Cidr> {
        list.iter()
            .enumerate()
            .filter_map(|(i, net)| {
                net.get_ref()
                    .parse::<Cidr>()
                    .map_err(|why| {
                        *ok = false;
                        self.report.error(net.span(), format!("{key}[{i}]"), why);
                    })
                    .ok()
            })
            .collect()
    }

    /// `[kubernetes.gateway]`: every problem reported at its key.
    fn gateway_api(&mut self, raw: &Spanned<RawGatewayApi>) -> Option<GatewayApiConfig> {
        let table = raw.span();
        let raw = raw.get_ref();
        let mut ok = true;
        let controller_name = match &raw.controller_name {
            Some(c) => {
                if let Err(why) = controller_name(c.get_ref()) {
                    self.report
                        .error(c.span(), "kubernetes.gateway.controller_name", why);
                    ok = false;
                }
                c.get_ref().clone()
            }
            None => DEFAULT_GATEWAY_CONTROLLER.to_string(),
        };
        let addresses = match &raw.addresses {
            None => {
                self.report.error(
                    table,
                    "kubernetes.gateway.addresses",
                    "missing: list the IPs or CIDRs leafgate may bind Gateways on (`addresses = [\"10.0.0.10\"]`)",
                );
                ok = false;
                Vec::new()
            }
            Some(list) if list.get_ref().is_empty() => {
                self.report.error(
                    list.span(),
                    "kubernetes.gateway.addresses",
                    "no address: no Gateway could be given one; list the IPs or CIDRs leafgate may bind Gateways on",
                );
                ok = false;
                Vec::new()
            }
            Some(list) => {
                let pool = self.ranges(list.get_ref(), "kubernetes.gateway.addresses", &mut ok);
                if pool.len() == list.get_ref().len() {
                    self.address_pool(list.get_ref(), &pool, &mut ok);
                }
                pool
            }
        };
        let deny_backends = self.ranges(
            &raw.deny_backends,
            "kubernetes.gateway.deny_backends",
            &mut ok,
        );
        let allow_backends = self.ranges(
            &raw.allow_backends,
            "kubernetes.gateway.allow_backends",
            &mut ok,
        );
        ok.then_some(GatewayApiConfig {
            controller_name,
            addresses,
            deny_backends,
            allow_backends,
            allow_unmanaged_endpointslices: raw.allow_unmanaged_endpointslices.unwrap_or(false),
            http1_fast_path: raw.http1_fast_path.unwrap_or(true),
        })
    }

    /// The address pool binds somewhere real: no unspecified or multicast range (a
    /// Gateway's address is one clients dial), and no entry inside another (each address
    /// is handed out once).
    fn address_pool(&mut self, written: &[Spanned<String>], pool: &[Cidr], ok: &mut bool) {
        // The entries kept so far, by index.
        let mut kept: Vec<usize> = Vec::new();
        for (i, (net, text)) in pool.iter().zip(written).enumerate() {
            let key = format!("kubernetes.gateway.addresses[{i}]");
            let ip = net.network();
            if ip.is_unspecified() || ip.is_multicast() {
                self.report.error(
                    text.span(),
                    key,
                    format!("`{net}` is not an address a Gateway can be reached on: list unicast IPs or ranges of them"),
                );
                *ok = false;
                continue;
            }
            if let Some(&j) = kept.iter().find(|&&j| pool[j].overlaps(net)) {
                let (line, column) = self.report.line_column(written[j].span().start);
                self.report.error(
                    text.span(),
                    key,
                    format!(
                        "`{net}` overlaps `{}` (at {line}:{column}): list each address once",
                        pool[j]
                    ),
                );
                *ok = false;
                continue;
            }
            kept.push(i);
        }
    }

    fn virtual_node(
        &mut self,
        raw: &RawVirtualNode,
        key: &str,
        leaves: &[&str],
        tenants: &[TenantConfig],
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

/// A GatewayClass `controllerName` as the Gateway API validates it: a domain-prefixed path
/// (`example.com/gateway-controller`) of at most 253 characters.
fn controller_name(text: &str) -> Result<(), String> {
    let bad = || {
        format!(
            "`{text}` is not a Gateway API controller name: write a domain-prefixed path such as `leafgate.io/gateway-controller`"
        )
    };
    let (domain, path) = text.split_once('/').ok_or_else(bad)?;
    let label = |l: &str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    let path_ok = !path.is_empty()
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&b));
    match text.len() <= 253 && domain.split('.').all(label) && path_ok {
        true => Ok(()),
        false => Err(bad()),
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
