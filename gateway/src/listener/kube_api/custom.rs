//! Which custom resource a path names: the declaration ([`kinds::custom`]) of the one a
//! leaf serves at the path's group, version and resource.

use std::sync::Arc;

use super::caller::Caller;
use super::kinds::{self, Declared};
use crate::k8s::Leaf;
use crate::snapshot::Snapshot;

/// The custom resource `resource` of `group` at `version`, as the first leaf (by name)
/// that serves it there defines it: among the leaves `caller` may reach when its tenant is
/// served the resource, else among all (so a tenant not served it gets the RBAC 403, not a
/// 404, as kube-apiserver authorizes before it looks).
pub fn find(
    snapshot: &Snapshot,
    caller: &Caller<'_>,
    (group, version, resource): (&str, &str, &str),
) -> Option<&'static Declared> {
    let tenant_served = caller
        .config
        .custom
        .iter()
        .any(|c| c.group == group && c.resource == resource);
    let mut leaves: Vec<(&String, &Arc<Leaf>)> = snapshot
        .leaves
        .iter()
        .filter(|(name, _)| !tenant_served || caller.config.may_reach(name))
        .collect();
    leaves.sort_by(|a, b| a.0.cmp(b.0));
    leaves.iter().find_map(|(_, leaf)| {
        let served = leaf.kinds().custom();
        let gvr = served
            .iter()
            .map(|s| s.gvr())
            .find(|g| g.group == group && g.resource == resource && g.version() == version)?;
        Some(kinds::custom(gvr))
    })
}
