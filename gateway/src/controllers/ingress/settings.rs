//! What both sources take from the config alike: the tenants as they bound routes, and the
//! gateway's own addresses, which no route endpoint may be.

use crate::config::Config;
use crate::k8s::ingress::model::TenantBounds;

/// Every tenant as both sources bound their routes, in config order.
pub(super) fn tenant_bounds(config: &Config) -> Vec<TenantBounds> {
    config
        .tenants
        .iter()
        .map(|t| TenantBounds {
            name: t.name.clone(),
            namespaces: t.namespaces.clone(),
            bandwidth: t.bandwidth,
            hosts: t.hosts.clone(),
        })
        .collect()
}

/// The gateway's own listener and admin addresses, which no route endpoint may be.
pub(super) fn own_addresses(config: &Config) -> Vec<std::net::SocketAddr> {
    let mut own: Vec<_> = config.listeners.iter().map(|l| l.bind).collect();
    own.extend(config.admin.as_ref().map(|a| a.bind));
    own
}
