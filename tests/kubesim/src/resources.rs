//! The resource kinds kubesim serves, with the facts discovery and the store need
//! (group/version, kind, scope, short names, categories, subresources, and for custom
//! resources the stored version). Data only.
//!
//! The built-in kinds are listed as kube-apiserver's discovery lists them: short names, the
//! `all` category (pods, services, deployments, replicasets, statefulsets, daemonsets, jobs,
//! cronjobs, horizontalpodautoscalers; kube-apiserver's replicationcontrollers too, which
//! kubesim does not serve) and the status subresource where the kind has one.
//!
//! The Gateway API kinds are served as kube-apiserver serves them from gateway-api
//! v1.6.1's standard CRDs (`config/crd/standard/gateway.networking.k8s.io_*.yaml`):
//! GatewayClass, Gateway and HTTPRoute at `v1` (stored) and `v1beta1`, with a `status`
//! subresource; ReferenceGrant at `v1` and `v1beta1` (stored), without one. Each kind's
//! versions share one storage, as a CRD's do.

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
    /// `names.categories` of a CRD (`kubectl get gateway-api`); built-ins list none.
    pub categories: &'static [&'static str],
    /// A custom resource, served by the apiextensions handler: its strategy (generation,
    /// status), patch types, verbs, tables and deletes are a CRD's, not a built-in's.
    pub crd: bool,
    /// The version objects of this group and plural are stored at (`storage: true`).
    pub storage: bool,
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
        categories: &[],
        crd: false,
        storage: true,
    }
}

/// A built-in of `group`/`version`, with its `categories` (`all` for the kinds
/// `kubectl get all` lists).
#[allow(clippy::too_many_arguments)]
const fn builtin(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    short_names: &'static [&'static str],
    subresources: &'static [&'static str],
    categories: &'static [&'static str],
) -> Resource {
    Resource {
        group,
        version,
        plural,
        singular,
        kind,
        namespaced: true,
        short_names,
        subresources,
        categories,
        crd: false,
        storage: true,
    }
}

const ALL: &[&str] = &["all"];
const STATUS: &[&str] = &["status"];

const GATEWAY: &str = "gateway.networking.k8s.io";

/// A Gateway API kind at `version`, as its CRD declares it.
#[allow(clippy::too_many_arguments)]
const fn gateway_api(
    version: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
    status: bool,
    storage: bool,
) -> Resource {
    Resource {
        subresources: if status { &["status"] } else { &[] },
        categories: &["gateway-api"],
        storage,
        ..crd(
            GATEWAY,
            version,
            (plural, singular, kind),
            namespaced,
            short_names,
        )
    }
}

/// A custom resource of `group` at `version` (its plural, singular and kind), served by
/// the apiextensions handler: stored at this version, without subresources or categories
/// unless its CRD says so.
const fn crd(
    group: &'static str,
    version: &'static str,
    (plural, singular, kind): (&'static str, &'static str, &'static str),
    namespaced: bool,
    short_names: &'static [&'static str],
) -> Resource {
    Resource {
        group,
        version,
        plural,
        singular,
        kind,
        namespaced,
        short_names,
        subresources: &[],
        categories: &[],
        crd: true,
        storage: true,
    }
}

/// The custom resources' group of the Kubernetes documentation's CRD example
/// (`crontabs.stable.example.com`, "Extend the Kubernetes API with
/// CustomResourceDefinitions").
pub const EXAMPLE: &str = "stable.example.com";

const CRONTAB: (&str, &str, &str) = ("crontabs", "crontab", "CronTab");

/// A kind of [`EXAMPLE`] at `version`, as its CRD declares it: no status subresource.
const fn example(
    version: &'static str,
    names: (&'static str, &'static str, &'static str),
    namespaced: bool,
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    storage: bool,
) -> Resource {
    Resource {
        categories,
        storage,
        ..crd(EXAMPLE, version, names, namespaced, short_names)
    }
}

/// The verbs discovery lists for a built-in resource.
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

/// The verbs discovery lists for a custom resource, in the apiextensions discovery
/// controller's order.
pub const CRD_VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

pub static RESOURCES: &[Resource] = &[
    builtin(
        "",
        "v1",
        "pods",
        "pod",
        "Pod",
        &["po"],
        &["attach", "exec", "log", "portforward", "status"],
        ALL,
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
    builtin(
        "",
        "v1",
        "services",
        "service",
        "Service",
        &["svc"],
        STATUS,
        ALL,
    ),
    r("", "secrets", "secret", "Secret", true, &[], &[]),
    r(
        "",
        "endpoints",
        "endpoints",
        "Endpoints",
        true,
        &["ep"],
        &[],
    ),
    r(
        "",
        "configmaps",
        "configmap",
        "ConfigMap",
        true,
        &["cm"],
        &[],
    ),
    r(
        "",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        "PersistentVolumeClaim",
        true,
        &["pvc"],
        STATUS,
    ),
    r(
        "",
        "serviceaccounts",
        "serviceaccount",
        "ServiceAccount",
        true,
        &["sa"],
        &[],
    ),
    r(
        "",
        "limitranges",
        "limitrange",
        "LimitRange",
        true,
        &["limits"],
        &[],
    ),
    r(
        "",
        "resourcequotas",
        "resourcequota",
        "ResourceQuota",
        true,
        &["quota"],
        STATUS,
    ),
    builtin(
        "apps",
        "v1",
        "deployments",
        "deployment",
        "Deployment",
        &["deploy"],
        STATUS,
        ALL,
    ),
    builtin(
        "apps",
        "v1",
        "replicasets",
        "replicaset",
        "ReplicaSet",
        &["rs"],
        STATUS,
        ALL,
    ),
    builtin(
        "apps",
        "v1",
        "statefulsets",
        "statefulset",
        "StatefulSet",
        &["sts"],
        STATUS,
        ALL,
    ),
    builtin(
        "apps",
        "v1",
        "daemonsets",
        "daemonset",
        "DaemonSet",
        &["ds"],
        STATUS,
        ALL,
    ),
    builtin(
        "apps",
        "v1",
        "controllerrevisions",
        "controllerrevision",
        "ControllerRevision",
        &[],
        &[],
        &[],
    ),
    builtin("batch", "v1", "jobs", "job", "Job", &[], STATUS, ALL),
    builtin(
        "batch",
        "v1",
        "cronjobs",
        "cronjob",
        "CronJob",
        &["cj"],
        STATUS,
        ALL,
    ),
    builtin(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "horizontalpodautoscaler",
        "HorizontalPodAutoscaler",
        &["hpa"],
        STATUS,
        ALL,
    ),
    builtin(
        "policy",
        "v1",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "PodDisruptionBudget",
        &["pdb"],
        STATUS,
        &[],
    ),
    r(
        "networking.k8s.io",
        "networkpolicies",
        "networkpolicy",
        "NetworkPolicy",
        true,
        &["netpol"],
        &[],
    ),
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
    gateway_api(
        "v1",
        "gatewayclasses",
        "gatewayclass",
        "GatewayClass",
        false,
        &["gc"],
        true,
        true,
    ),
    gateway_api(
        "v1",
        "gateways",
        "gateway",
        "Gateway",
        true,
        &["gtw"],
        true,
        true,
    ),
    gateway_api(
        "v1",
        "httproutes",
        "httproute",
        "HTTPRoute",
        true,
        &[],
        true,
        true,
    ),
    gateway_api(
        "v1",
        "referencegrants",
        "referencegrant",
        "ReferenceGrant",
        true,
        &["refgrant"],
        false,
        false,
    ),
    gateway_api(
        "v1beta1",
        "gatewayclasses",
        "gatewayclass",
        "GatewayClass",
        false,
        &["gc"],
        true,
        false,
    ),
    gateway_api(
        "v1beta1",
        "gateways",
        "gateway",
        "Gateway",
        true,
        &["gtw"],
        true,
        false,
    ),
    gateway_api(
        "v1beta1",
        "httproutes",
        "httproute",
        "HTTPRoute",
        true,
        &[],
        true,
        false,
    ),
    gateway_api(
        "v1beta1",
        "referencegrants",
        "referencegrant",
        "ReferenceGrant",
        true,
        &["refgrant"],
        false,
        true,
    ),
    // The documentation's CronTab, served at `v1` (stored) and `v2` (the same schema,
    // conversion `None`), with a category of its own; and a cluster-scoped kind beside it.
    example("v1", CRONTAB, true, &["ct"], &["example"], true),
    example("v2", CRONTAB, true, &["ct"], &["example"], false),
    example(
        "v1",
        ("clusterwidgets", "clusterwidget", "ClusterWidget"),
        false,
        &["cw"],
        &[],
        true,
    ),
];

/// The served groups other than core, in discovery order: kube-apiserver's `/apis` lists
/// the built-in groups in its registration order (`apps` before `autoscaling`, `batch`,
/// `networking.k8s.io`, `policy`, then `coordination.k8s.io`, `discovery.k8s.io`), the
/// custom resources' groups after them. `kubectl get all` prints its kinds in that order.
pub const GROUPS: &[&str] = &[
    "apps",
    "autoscaling",
    "batch",
    "networking.k8s.io",
    "policy",
    "coordination.k8s.io",
    "discovery.k8s.io",
    GATEWAY,
    EXAMPLE,
];

/// The served versions of `group`, preferred first: kube-apiserver sorts a CRD group's
/// versions by `version.CompareKubeAwareVersionStrings` (GA, then beta, then alpha,
/// higher numbers first).
pub fn versions(group: &str) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = Vec::new();
    for r in RESOURCES.iter().filter(|r| r.group == group) {
        if !v.contains(&r.version) {
            v.push(r.version);
        }
    }
    v.sort_by_key(|s| std::cmp::Reverse(kube_aware(s)));
    v
}

/// A version's rank for `CompareKubeAwareVersionStrings`: `v<major>[(alpha|beta)<minor>]`
/// ranks GA over beta over alpha, then by major, then by minor. Others rank lowest.
fn kube_aware(v: &str) -> (u8, u64, u64) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let Ok(major) = rest[..digits].parse::<u64>() else {
        return (0, 0, 0);
    };
    let (stage, minor) = match &rest[digits..] {
        "" => (3, 0),
        tail => match tail
            .strip_prefix("beta")
            .map(|m| (2, m))
            .or_else(|| tail.strip_prefix("alpha").map(|m| (1, m)))
        {
            Some((stage, m)) => match m.parse::<u64>() {
                Ok(minor) => (stage, minor),
                Err(_) => return (0, 0, 0),
            },
            None => return (0, 0, 0),
        },
    };
    (stage, major, minor)
}

/// The `apiVersion` objects of `res`'s group and plural are stored with (its own for
/// kinds served at one version).
pub fn stored_api_version(res: &Resource) -> String {
    RESOURCES
        .iter()
        .find(|r| r.group == res.group && r.plural == res.plural && r.storage)
        .unwrap_or(res)
        .api_version()
}

/// Finds a resource by group and plural.
pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static Resource> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

/// Finds a resource by `apiVersion` and kind (for objects given as JSON).
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static Resource> {
    RESOURCES
        .iter()
        .find(|r| r.api_version() == api_version && r.kind == kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_sorted_as_kube_apiserver_sorts_them() {
        assert_eq!(versions(GATEWAY), ["v1", "v1beta1"]);
        assert_eq!(versions(EXAMPLE), ["v2", "v1"]);
        assert_eq!(versions(""), ["v1"]);
        let mut v = vec![
            "v1alpha1", "v2beta1", "v1", "v1beta2", "v2", "v1beta1", "foo",
        ];
        v.sort_by_key(|s| std::cmp::Reverse(kube_aware(s)));
        assert_eq!(
            v,
            [
                "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "foo"
            ]
        );
    }

    #[test]
    fn each_kind_has_one_stored_version() {
        let rg = find(GATEWAY, "v1", "referencegrants").unwrap();
        assert_eq!(stored_api_version(rg), "gateway.networking.k8s.io/v1beta1");
        let gw = find(GATEWAY, "v1beta1", "gateways").unwrap();
        assert_eq!(stored_api_version(gw), "gateway.networking.k8s.io/v1");
        assert_eq!(stored_api_version(find("", "v1", "pods").unwrap()), "v1");
        for r in RESOURCES {
            let n = RESOURCES
                .iter()
                .filter(|o| o.group == r.group && o.plural == r.plural && o.storage)
                .count();
            assert_eq!(n, 1, "{}.{}", r.plural, r.group);
        }
    }
}
