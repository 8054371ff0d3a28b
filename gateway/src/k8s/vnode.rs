//! What a virtual node publishes: its addresses (the preferred-address trick, or the
//! tenant's `address_rewriter`), its kubelet port, and for `own` nodes the whole Node:
//! labels, taints, capacity summed over the leaf's Ready nodes, the Ready condition and
//! the leaf's version.
//!
//! Everything here builds JSON from facts handed in; `root` decides when to write and
//! writes. Nothing here talks to the root cluster.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use serde_json::{Value, json};

use crate::config::{NodeAddressType, Taint};
use crate::plugins::{AddressRewriteRequest, NodeAddress, TenantPlugins};

/// The addresses the Node should list, and a warning for `/status` when they do not let
/// the root API server reach leafgate.
pub struct Addresses {
    pub list: Vec<Value>,
    pub warning: Option<String>,
}

/// The built-in rule: `gateway` first under the first preferred type (so
/// `GetPreferredNodeAddress` picks it whatever else the node lists), then the node's other
/// addresses, minus any copy of that entry.
pub fn default_addresses(
    gateway: &str,
    preferred: &[NodeAddressType],
    current: &[Value],
) -> Vec<Value> {
    let kind = preferred
        .first()
        .copied()
        .unwrap_or(NodeAddressType::Hostname)
        .as_str();
    let first = json!({"type": kind, "address": gateway});
    std::iter::once(first.clone())
        .chain(current.iter().filter(|a| **a != first).cloned())
        .collect()
}

/// The addresses by the tenant's `address_rewriter` when it has one, else by the built-in
/// rule. `Err` is a plugin failure: the caller keeps the last good list.
pub async fn addresses(
    plugins: Option<&TenantPlugins>,
    node: &str,
    leaf: &str,
    gateway: &str,
    preferred: &[NodeAddressType],
    current: &[Value],
) -> Result<Addresses, String> {
    let list = match plugins.filter(|p| p.has_address_rewriter()) {
        None => default_addresses(gateway, preferred, current),
        Some(p) => {
            let req = AddressRewriteRequest {
                node: node.to_string(),
                leaf: leaf.to_string(),
                gateway_address: gateway.to_string(),
                addresses: current
                    .iter()
                    .filter_map(|a| serde_json::from_value::<NodeAddress>(a.clone()).ok())
                    .collect(),
            };
            p.rewrite_addresses(&req)
                .await
                .map_err(|e| format!("address_rewriter failed: {e}"))?
                .into_iter()
                .filter_map(|a| serde_json::to_value(a).ok())
                .collect()
        }
    };
    let reached = preferred.iter().find_map(|t| {
        list.iter()
            .find(|a| a["type"] == t.as_str())
            .map(|a| a["address"] == gateway)
    });
    let warning = (reached != Some(true)).then(|| {
        format!("the root API server's preferred address for `{node}` is not the gateway address {gateway}: exec and logs will not reach leafgate")
    });
    Ok(Addresses { list, warning })
}

/// The facts about a leaf an `own` Node is built from.
#[derive(Debug, Clone, Default)]
pub struct LeafFacts {
    pub capacity: BTreeMap<String, String>,
    pub allocatable: BTreeMap<String, String>,
    pub kubelet_version: String,
}

impl LeafFacts {
    /// Sums capacity and allocatable over the leaf's Ready nodes.
    pub fn from_nodes(nodes: &[Node], kubelet_version: String) -> LeafFacts {
        let mut capacity = BTreeMap::<String, i128>::new();
        let mut allocatable = BTreeMap::<String, i128>::new();
        for node in nodes.iter().filter(|n| is_ready(n)) {
            let Some(status) = &node.status else { continue };
            for (into, from) in [
                (&mut capacity, &status.capacity),
                (&mut allocatable, &status.allocatable),
            ] {
                for (name, q) in from.iter().flatten() {
                    if let Some(milli) = parse_quantity(&q.0) {
                        *into.entry(name.clone()).or_default() += milli;
                    }
                }
            }
        }
        let format = |m: BTreeMap<String, i128>| {
            m.into_iter()
                .map(|(k, v)| (k, format_quantity(v)))
                .collect()
        };
        LeafFacts {
            capacity: format(capacity),
            allocatable: format(allocatable),
            kubelet_version,
        }
    }
}

fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// A Kubernetes quantity (`"4"`, `"500m"`, `"16Gi"`, `"1.5G"`, `"1e3"`) in thousandths.
pub fn parse_quantity(text: &str) -> Option<i128> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor: f64 = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e if e.starts_with(['e', 'E']) => 10f64.powi(e[1..].parse().ok()?),
        _ => return None,
    };
    let milli = (number * factor * 1000.0).round();
    milli.is_finite().then_some(milli as i128)
}

/// Thousandths back into a quantity: a plain integer when whole, else `NNNm`.
pub fn format_quantity(milli: i128) -> String {
    if milli % 1000 == 0 {
        (milli / 1000).to_string()
    } else {
        format!("{milli}m")
    }
}

/// Whether the leaf counts as up for the Ready condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    NotReady { reason: String, message: String },
}

/// The Node an `own` virtual node is created as (metadata and spec; status is written
/// through the status subresource).
pub fn own_node(name: &str, labels: &BTreeMap<String, String>, taints: &[Taint]) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": own_labels(name, labels)},
        "spec": {"taints": taints_json(taints)},
    })
}

/// `type=virtual-kubelet`, `kubernetes.io/role=agent`, the hostname label, then the
/// configured ones (which win).
pub fn own_labels(name: &str, labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut all = BTreeMap::from([
        ("type".to_string(), "virtual-kubelet".to_string()),
        ("kubernetes.io/role".to_string(), "agent".to_string()),
        ("kubernetes.io/hostname".to_string(), name.to_string()),
    ]);
    all.extend(labels.clone());
    all
}

pub fn taints_json(taints: &[Taint]) -> Vec<Value> {
    taints
        .iter()
        .map(|t| {
            let mut v = json!({"key": t.key, "effect": t.effect});
            if let Some(value) = &t.value {
                v["value"] = json!(value);
            }
            v
        })
        .collect()
}

/// The status of an `own` node, without timestamps (those are added when written, so two
/// statuses compare equal when nothing but time changed).
pub fn own_status(
    facts: &LeafFacts,
    readiness: &Readiness,
    addresses: &[Value],
    port: u16,
) -> Value {
    let (status, reason, message) = match readiness {
        Readiness::Ready => (
            "True",
            "LeafReady".to_string(),
            "the leaf cluster is reachable and its pods are indexed".to_string(),
        ),
        Readiness::NotReady { reason, message } => ("False", reason.clone(), message.clone()),
    };
    json!({
        "capacity": facts.capacity,
        "allocatable": facts.allocatable,
        "conditions": [{"type": "Ready", "status": status, "reason": reason, "message": message}],
        "addresses": addresses,
        "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        "nodeInfo": {
            "kubeletVersion": facts.kubelet_version,
            "operatingSystem": "linux",
            "architecture": "amd64",
            "machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "",
            "osImage": "", "containerRuntimeVersion": "", "kubeProxyVersion": "",
        },
    })
}

/// How long the leaf has been unreachable decides Ready: a short outage never flips it.
pub fn readiness(
    unsynced_for: Option<Duration>,
    not_ready_after: Duration,
    last_error: Option<&str>,
) -> Readiness {
    match unsynced_for {
        Some(d) if d >= not_ready_after => Readiness::NotReady {
            reason: "LeafUnreachable".into(),
            message: format!(
                "the leaf's pod index has not been in sync for {}s: {}",
                d.as_secs(),
                last_error.unwrap_or("no answer yet")
            ),
        },
        _ => Readiness::Ready,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_sum_like_the_api_prints_them() {
        assert_eq!(parse_quantity("500m"), Some(500));
        assert_eq!(parse_quantity("2"), Some(2000));
        assert_eq!(parse_quantity("1Ki"), Some(1_024_000));
        assert_eq!(parse_quantity("1.5G"), Some(1_500_000_000_000));
        assert_eq!(parse_quantity("1e3"), Some(1_000_000));
        assert_eq!(parse_quantity("12Xi"), None);
        assert_eq!(format_quantity(2500), "2500m");
        assert_eq!(format_quantity(8000), "8");
    }

    #[test]
    fn the_gateway_goes_first_under_the_first_preferred_type() {
        let current = vec![
            json!({"type": "Hostname", "address": "vn"}),
            json!({"type": "InternalDNS", "address": "10.0.0.9"}),
        ];
        let list = default_addresses("10.0.0.9", &NodeAddressType::API_SERVER_DEFAULT, &current);
        assert_eq!(list[0], json!({"type": "Hostname", "address": "10.0.0.9"}));
        assert_eq!(&list[1..], &current[..]);
        // Applying the rule again changes nothing: the writer does not flap.
        assert_eq!(
            default_addresses("10.0.0.9", &NodeAddressType::API_SERVER_DEFAULT, &list),
            list
        );
    }

    #[test]
    fn a_short_outage_keeps_the_node_ready() {
        let after = Duration::from_secs(40);
        assert_eq!(readiness(None, after, None), Readiness::Ready);
        assert_eq!(
            readiness(Some(Duration::from_secs(39)), after, None),
            Readiness::Ready
        );
        assert!(matches!(
            readiness(Some(after), after, Some("connection refused")),
            Readiness::NotReady { message, .. } if message.contains("connection refused")
        ));
    }
}
