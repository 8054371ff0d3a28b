//! ReferenceGrants (`apis/v1/referencegrant_types.go`): a reference from an object in one
//! namespace to an object in another is valid only when a ReferenceGrant in the target's
//! namespace lists the referrer's group, kind and namespace in `from` and the target's
//! group, kind and (absent: any) name in `to`. Entries of each list are ORed.

use std::sync::Arc;

use super::types::ReferenceGrant;

/// One side of a reference: the API group (`""`: core), the kind, the namespace.
#[derive(Debug, Clone, Copy)]
pub struct From<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
}

/// The target of a reference.
#[derive(Debug, Clone, Copy)]
pub struct To<'a> {
    pub group: &'a str,
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
}

/// Whether `from` may refer to `to`: same namespace, or a grant in `to.namespace` allows it.
pub fn permitted(grants: &[Arc<ReferenceGrant>], from: From<'_>, to: To<'_>) -> bool {
    from.namespace == to.namespace
        || grants.iter().any(|g| {
            g.metadata.namespace.as_deref() == Some(to.namespace)
                && g.spec.from.iter().any(|f| {
                    f.group == from.group && f.kind == from.kind && f.namespace == from.namespace
                })
                && g.spec.to.iter().any(|t| {
                    t.group == to.group
                        && t.kind == to.kind
                        && t.name.as_deref().is_none_or(|n| n == to.name)
                })
        })
}
