//! prefer-gateway: makes the root API server dial the gateway when it reaches a virtual
//! node's kubelet (the Kosmos PREFERRED-ADDRESS-TYPE trick).
//!
//! The API server dials the first address of the type it prefers (its
//! `--kubelet-preferred-address-types`, InternalIP first by default), so the gateway's own
//! address goes first under that type; the node's other addresses follow, minus any copy
//! of the gateway's. Config: `{ preferred_type = "InternalIP" }` (the default).

use std::sync::OnceLock;

use leafgate_plugin::address_rewriter::{AddressRequest, AddressType, Guest, NodeAddress};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default = "internal_ip")]
    preferred_type: String,
}

fn internal_ip() -> String {
    "InternalIP".into()
}

fn address_type(name: &str) -> Option<AddressType> {
    Some(match name {
        "Hostname" => AddressType::Hostname,
        "ExternalIP" => AddressType::ExternalIp,
        "InternalIP" => AddressType::InternalIp,
        "ExternalDNS" => AddressType::ExternalDns,
        "InternalDNS" => AddressType::InternalDns,
        _ => return None,
    })
}

static PREFERRED: OnceLock<AddressType> = OnceLock::new();

struct PreferGateway;

impl Guest for PreferGateway {
    fn rewrite(req: AddressRequest) -> Vec<NodeAddress> {
        let preferred = *PREFERRED.get_or_init(|| {
            let config: Config = leafgate_plugin::config_or_trap();
            address_type(&config.preferred_type).unwrap_or_else(|| {
                let message = format!(
                    "preferred_type `{}` is not a node address type: use Hostname, ExternalIP, InternalIP, ExternalDNS or InternalDNS",
                    config.preferred_type
                );
                leafgate_plugin::log::error(&message);
                panic!("{message}")
            })
        });
        let mut out = Vec::with_capacity(req.addresses.len() + 1);
        out.push(NodeAddress {
            type_: preferred,
            address: req.gateway_address.clone(),
        });
        out.extend(
            req.addresses
                .into_iter()
                .filter(|a| !(a.type_ == preferred && a.address == req.gateway_address)),
        );
        out
    }
}

leafgate_plugin::export_address_rewriter!(PreferGateway);
