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

/// The kinds one `resources` entry names: `"default"`, or one built-in kind; else why
/// not, in words for the config's error.
pub fn entry(entry: &str) -> Result<Vec<&'static Gvr>, String> {
    if entry == "default" {
        return Ok(DEFAULT.iter().collect());
    }
    if let Some(gvr) = BUILTIN.iter().find(|g| g.named(entry)) {
        return Ok(vec![gvr]);
    }
    let hint = match BUILTIN.iter().find(|g| g.resource == entry) {
        Some(g) => format!(" (did you mean `{}`?)", g.entry()),
        None => String::new(),
    };
    Err(format!(
        "`{entry}` is no resource leafgate serves{hint}: an entry is \"default\", \"secrets\" or a built-in kind as <plural> (core) or <plural>.<group> (`services`, `deployments.apps`, `ingresses.networking.k8s.io`); custom resources are not served yet"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_default_builtins_and_nothing_else() {
        assert_eq!(entry("default").unwrap().len(), 19);
        assert!(!entry("default").unwrap().contains(&&SECRETS));
        assert_eq!(entry("secrets").unwrap(), [&SECRETS]);
        assert_eq!(entry("deployments.apps").unwrap(), [&DEPLOYMENTS]);
        assert_eq!(entry("services").unwrap(), [&SERVICES]);
        assert_eq!(entry("ingresses.networking.k8s.io").unwrap(), [&INGRESSES]);
        let bare = entry("deployments").unwrap_err();
        assert!(bare.contains("did you mean `deployments.apps`?"), "{bare}");
        for bad in [
            "",
            "Deployments.apps",
            "deployments.apps.",
            "secrets.",
            ".apps",
            "services.core",
            "crontabs.stable.example.com",
            "default ",
        ] {
            assert!(entry(bad).is_err(), "{bad:?}");
        }
    }
}
