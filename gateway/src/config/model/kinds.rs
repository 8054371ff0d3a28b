//! The built-in kinds the kube-api front can serve a tenant read-only, named as a
//! `[[tenant]] resources` entry names them: [`BUILTIN`], of which [`DEFAULT`] is what a
//! tenant without `resources` (or with `"default"`) is served; secrets are only ever
//! served to a tenant that names them.
//!
//! The one list of them: the config checks `resources` entries against it, each leaf
//! keeps (and watches) the kinds some tenant reaching it is served, and the front
//! declares how it serves each (`listener::kube_api::kinds`).

/// A kind the front serves read-only: its group, version, resource and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Gvr {
    /// `""` for the core group.
    pub group: &'static str,
    /// `v1` or `<group>/v1`.
    pub api_version: &'static str,
    pub resource: &'static str,
    pub kind: &'static str,
}

impl Gvr {
    /// The version within the group (`v1` of `apps/v1`).
    pub fn version(&self) -> &'static str {
        self.api_version
            .split_once('/')
            .map_or(self.api_version, |(_, v)| v)
    }

    /// The path listing the kind across namespaces (`/apis/apps/v1/deployments`).
    pub fn path(&self) -> String {
        let root = if self.group.is_empty() { "api" } else { "apis" };
        format!("/{root}/{}/{}", self.api_version, self.resource)
    }

    /// Whether `entry` names it as a `resources` entry (and kubectl's `<plural>.<group>`):
    /// `services` for a core kind, `deployments.apps` for one of a group.
    pub fn named(&self, entry: &str) -> bool {
        match entry.split_once('.') {
            None => self.group.is_empty() && entry == self.resource,
            Some((resource, group)) => {
                !group.is_empty() && resource == self.resource && group == self.group
            }
        }
    }

    /// Its `resources` entry (`services`, `deployments.apps`).
    pub fn entry(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

const fn gvr(
    group: &'static str,
    api_version: &'static str,
    resource: &'static str,
    kind: &'static str,
) -> Gvr {
    Gvr {
        group,
        api_version,
        resource,
        kind,
    }
}

pub const SECRETS: Gvr = gvr("", "v1", "secrets", "Secret");
pub const DEPLOYMENTS: Gvr = gvr("apps", "apps/v1", "deployments", "Deployment");
pub const REPLICASETS: Gvr = gvr("apps", "apps/v1", "replicasets", "ReplicaSet");
pub const STATEFULSETS: Gvr = gvr("apps", "apps/v1", "statefulsets", "StatefulSet");
pub const DAEMONSETS: Gvr = gvr("apps", "apps/v1", "daemonsets", "DaemonSet");
pub const SERVICES: Gvr = gvr("", "v1", "services", "Service");
pub const CONFIGMAPS: Gvr = gvr("", "v1", "configmaps", "ConfigMap");
pub const JOBS: Gvr = gvr("batch", "batch/v1", "jobs", "Job");
pub const CRONJOBS: Gvr = gvr("batch", "batch/v1", "cronjobs", "CronJob");
pub const CONTROLLERREVISIONS: Gvr = gvr(
    "apps",
    "apps/v1",
    "controllerrevisions",
    "ControllerRevision",
);
pub const ENDPOINTS: Gvr = gvr("", "v1", "endpoints", "Endpoints");
pub const PERSISTENTVOLUMECLAIMS: Gvr =
    gvr("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim");
pub const SERVICEACCOUNTS: Gvr = gvr("", "v1", "serviceaccounts", "ServiceAccount");
pub const LIMITRANGES: Gvr = gvr("", "v1", "limitranges", "LimitRange");
pub const RESOURCEQUOTAS: Gvr = gvr("", "v1", "resourcequotas", "ResourceQuota");
pub const ENDPOINTSLICES: Gvr = gvr(
    "discovery.k8s.io",
    "discovery.k8s.io/v1",
    "endpointslices",
    "EndpointSlice",
);
pub const INGRESSES: Gvr = gvr(
    "networking.k8s.io",
    "networking.k8s.io/v1",
    "ingresses",
    "Ingress",
);
pub const NETWORKPOLICIES: Gvr = gvr(
    "networking.k8s.io",
    "networking.k8s.io/v1",
    "networkpolicies",
    "NetworkPolicy",
);
pub const HORIZONTALPODAUTOSCALERS: Gvr = gvr(
    "autoscaling",
    "autoscaling/v2",
    "horizontalpodautoscalers",
    "HorizontalPodAutoscaler",
);
pub const PODDISRUPTIONBUDGETS: Gvr = gvr(
    "policy",
    "policy/v1",
    "poddisruptionbudgets",
    "PodDisruptionBudget",
);

/// Every built-in kind, secrets first, then [`DEFAULT`] grouped by version.
pub const BUILTIN: &[Gvr] = &[
    SECRETS,
    DEPLOYMENTS,
    REPLICASETS,
    STATEFULSETS,
    DAEMONSETS,
    CONTROLLERREVISIONS,
    SERVICES,
    CONFIGMAPS,
    ENDPOINTS,
    PERSISTENTVOLUMECLAIMS,
    SERVICEACCOUNTS,
    LIMITRANGES,
    RESOURCEQUOTAS,
    JOBS,
    CRONJOBS,
    ENDPOINTSLICES,
    INGRESSES,
    NETWORKPOLICIES,
    HORIZONTALPODAUTOSCALERS,
    PODDISRUPTIONBUDGETS,
];

/// What `"default"` (and a tenant without `resources`) is served: every built-in kind
/// but secrets.
pub const DEFAULT: &[Gvr] = BUILTIN.split_at(1).1;

/// What one `resources` entry names: built-in kinds, or one custom resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// `"default"`, or one built-in kind.
    Builtin(Vec<&'static Gvr>),
    /// `<plural>.<group>` of no built-in kind: a custom resource, served from the leaves'
    /// definitions of it.
    Custom(CustomResource),
}

/// A custom resource a tenant is served, as its `resources` entry names it
/// (`crontabs.stable.example.com`): its plural and group. Its version, kind and scope are
/// each leaf's own (read from the leaf's discovery).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CustomResource {
    pub resource: String,
    pub group: String,
}

impl CustomResource {
    /// Whether `gvr` is this resource (at any version).
    pub fn is(&self, gvr: &Gvr) -> bool {
        gvr.group == self.group && gvr.resource == self.resource
    }

    /// Its `resources` entry.
    pub fn entry(&self) -> String {
        format!("{}.{}", self.resource, self.group)
    }
}

/// The groups of kube-apiserver's own APIs: none of them holds a custom resource a tenant
/// could be served (their kinds are built in, served by leafgate or not at all).
const BUILTIN_GROUPS: &[&str] = &[
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "apiregistration.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "certificates.k8s.io",
    "coordination.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "internal.apiserver.k8s.io",
    "networking.k8s.io",
    "node.k8s.io",
    "rbac.authorization.k8s.io",
    "resource.k8s.io",
    "scheduling.k8s.io",
    "storage.k8s.io",
    "storagemigration.k8s.io",
];

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` of at most 63 bytes: a DNS-1123 label.
fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            b.len() <= 63 && alnum(first) && alnum(last) && b.iter().all(|c| alnum(c) || *c == b'-')
        }
        _ => false,
    }
}

/// What one `resources` entry names: `"default"`, one built-in kind, or a custom resource
/// as `<plural>.<group>` (a CRD's name: the plural a DNS-1123 label, the group a DNS-1123
/// subdomain with at least one dot, as apiextensions requires of a CRD's group, and none
/// of kube-apiserver's own groups); else why not, in words for the config's error.
pub fn entry(entry: &str) -> Result<Entry, String> {
    if entry == "default" {
        return Ok(Entry::Builtin(DEFAULT.iter().collect()));
    }
    if let Some(gvr) = BUILTIN.iter().find(|g| g.named(entry)) {
        return Ok(Entry::Builtin(vec![gvr]));
    }
    let hint = match BUILTIN.iter().find(|g| g.resource == entry) {
        Some(g) => format!(" (did you mean `{}`?)", g.entry()),
        None => String::new(),
    };
    let unknown = || {
        format!(
            "`{entry}` is no resource leafgate serves{hint}: an entry is \"default\", \"secrets\", a built-in kind as <plural> (core) or <plural>.<group> (`services`, `deployments.apps`, `ingresses.networking.k8s.io`), or a custom resource as <plural>.<group> (`crontabs.stable.example.com`)"
        )
    };
    let Some((resource, group)) = entry.split_once('.') else {
        return Err(unknown());
    };
    if !is_label(resource) {
        return Err(format!(
            "{}; `{resource}` is no custom resource's plural (a DNS-1123 label: lowercase letters, digits and `-`)",
            unknown()
        ));
    }
    let subdomain = group.len() <= 253 && group.split('.').all(is_label);
    if !subdomain || !group.contains('.') {
        return Err(format!(
            "{}; `{group}` is no custom resource's group (a DNS-1123 subdomain with at least one dot)",
            unknown()
        ));
    }
    if BUILTIN_GROUPS.contains(&group) {
        return Err(format!(
            "{}; `{group}` is one of Kubernetes' own groups, which hold no custom resource",
            unknown()
        ));
    }
    Ok(Entry::Custom(CustomResource {
        resource: resource.to_string(),
        group: group.to_string(),
    }))
}

/// The one `Gvr` of a custom resource at `version` as `kind` (what a leaf's discovery
/// said of it): made once per distinct four names and kept for the process's life, so a
/// custom resource is declared like a built-in kind (`&'static`) at runtime. Only
/// resources some tenant's config names are ever made, at the versions and kinds their
/// leaves define.
pub fn custom_gvr(group: &str, version: &str, resource: &str, kind: &str) -> &'static Gvr {
    static MADE: std::sync::Mutex<Vec<&'static Gvr>> = std::sync::Mutex::new(Vec::new());
    let api_version = format!("{group}/{version}");
    let mut made = MADE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let same = |g: &&&Gvr| {
        g.group == group && g.api_version == api_version && g.resource == resource && g.kind == kind
    };
    if let Some(gvr) = made.iter().find(same) {
        return gvr;
    }
    let keep = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let gvr: &'static Gvr = Box::leak(Box::new(Gvr {
        group: keep(group.to_string()),
        api_version: keep(api_version),
        resource: keep(resource.to_string()),
        kind: keep(kind.to_string()),
    }));
    made.push(gvr);
    gvr
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin(e: &str) -> Vec<&'static Gvr> {
        match entry(e) {
            Ok(Entry::Builtin(kinds)) => kinds,
            other => panic!("{e}: {other:?}"),
        }
    }

    #[test]
    fn entries_name_default_builtins_and_custom_resources() {
        assert_eq!(builtin("default").len(), 19);
        assert!(!builtin("default").contains(&&SECRETS));
        assert_eq!(builtin("secrets"), [&SECRETS]);
        assert_eq!(builtin("deployments.apps"), [&DEPLOYMENTS]);
        assert_eq!(builtin("services"), [&SERVICES]);
        assert_eq!(builtin("ingresses.networking.k8s.io"), [&INGRESSES]);
        assert_eq!(
            entry("crontabs.stable.example.com"),
            Ok(Entry::Custom(CustomResource {
                resource: "crontabs".into(),
                group: "stable.example.com".into()
            }))
        );
        assert!(matches!(
            entry("httproutes.gateway.networking.k8s.io"),
            Ok(Entry::Custom(_))
        ));
        let bare = entry("deployments").unwrap_err();
        assert!(bare.contains("did you mean `deployments.apps`?"), "{bare}");
        for bad in [
            "",
            "Deployments.apps",
            "deployments.apps.",
            "secrets.",
            ".apps",
            "services.core",
            "default ",
            "crontabs.example",
            "CronTabs.stable.example.com",
            "crontabs.Stable.example.com",
            "crontabs.stable..example.com",
            "cron_tabs.stable.example.com",
            "-crontabs.stable.example.com",
            "crontabs.stable.example.com.",
            "ingressclasses.networking.k8s.io",
            "widgets.apiextensions.k8s.io",
            "crontabs.stable.example.com/v1",
        ] {
            assert!(entry(bad).is_err(), "{bad:?}");
        }
        let long = format!("{}.example.com", "a".repeat(64));
        assert!(entry(&long).unwrap_err().contains("DNS-1123 label"));
        let group = entry("crontabs.example").unwrap_err();
        assert!(
            group.contains("`example` is no custom resource's group"),
            "{group}"
        );
        let own = entry("widgets.storage.k8s.io").unwrap_err();
        assert!(own.contains("Kubernetes' own groups"), "{own}");
    }

    #[test]
    fn custom_gvrs_are_made_once() {
        let a = custom_gvr("stable.example.com", "v1", "crontabs", "CronTab");
        let b = custom_gvr("stable.example.com", "v1", "crontabs", "CronTab");
        assert!(std::ptr::eq(a, b));
        assert_eq!(a.api_version, "stable.example.com/v1");
        assert_eq!(a.path(), "/apis/stable.example.com/v1/crontabs");
        let c = custom_gvr("stable.example.com", "v2", "crontabs", "CronTab");
        assert!(!std::ptr::eq(a, c));
        assert_eq!(c.version(), "v2");
    }
}
