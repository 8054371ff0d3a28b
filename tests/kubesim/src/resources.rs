//! The resource kinds kubesim serves, with the facts discovery and the store need
//! (group/version, kind, scope, short names, verbs, subresources). Data only.

/// One served resource.
#[derive(Debug, Clone, Copy)]
pub struct Resource {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short_names: &'static [&'static str],
    /// Subresources beyond the object itself (`status`, `log`, `exec`, ...).
    pub subresources: &'static [&'static str],
}

impl Resource {
    /// `apiVersion` as objects carry it.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

const fn r(
    group: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    subresources: &'static [&'static str],
) -> Resource {
    Resource {
        group,
        version: "v1",
        plural,
        singular,
        kind,
        namespaced,
        short_names,
        subresources,
    }
}

pub const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

pub static RESOURCES: &[Resource] = &[
    r(
        "",
        "pods",
        "pod",
        "Pod",
        true,
        &["po"],
        &["attach", "exec", "log", "portforward", "status"],
    ),
    r("", "nodes", "node", "Node", false, &["no"], &["status"]),
    r(
        "",
        "namespaces",
        "namespace",
        "Namespace",
        false,
        &["ns"],
        &["status"],
    ),
    r(
        "",
        "services",
        "service",
        "Service",
        true,
        &["svc"],
        &["status"],
    ),
    r("", "secrets", "secret", "Secret", true, &[], &[]),
    r("", "events", "event", "Event", true, &["ev"], &[]),
    r(
        "coordination.k8s.io",
        "leases",
        "lease",
        "Lease",
        true,
        &[],
        &[],
    ),
    r(
        "networking.k8s.io",
        "ingresses",
        "ingress",
        "Ingress",
        true,
        &["ing"],
        &["status"],
    ),
    r(
        "networking.k8s.io",
        "ingressclasses",
        "ingressclass",
        "IngressClass",
        false,
        &[],
        &[],
    ),
    r(
        "discovery.k8s.io",
        "endpointslices",
        "endpointslice",
        "EndpointSlice",
        true,
        &[],
        &[],
    ),
];

/// The served groups other than core, in discovery order.
pub const GROUPS: &[&str] = &[
    "coordination.k8s.io",
    "networking.k8s.io",
    "discovery.k8s.io",
];

/// Finds a resource by group and plural.
pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static Resource> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// Finds a resource by group and kind (for objects given as JSON).
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static Resource> {
    RESOURCES
        .iter()
        .find(|r| r.api_version() == api_version && r.kind == kind)
}
