//! One leaf's read-only kinds that leafgate serves without interpreting them (workloads,
//! services, config, storage claims, policies, autoscalers: [`KINDS`]), each kept in a change [`Feed`] of [`Printed`]
//! objects: the object as the leaf sent it and the row the leaf's own printer gave it.
//!
//! The reflector (`printed`) lists and watches each kind asking for kube-apiserver's
//! `Table` with `includeObject=Object`, so the front prints a row exactly as the leaf's
//! kube-apiserver prints it, whatever its version, without a printer of its own. Only the
//! kinds the leaf's discovery lists (with `list` and `watch`) are watched: a leaf without
//! one is no error, its feed stays empty. Discovery is asked once the leaf answers
//! (retried with backoff until it does).
//!
//! It keeps and hands out objects only; which of them a tenant sees is the front's.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tracing::{debug, warn};

pub use super::gvr::Gvr;
use super::gvr::gvr;
use super::printed::{self, Kept};
use crate::errors::{self, Causes};

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

/// The kinds every leaf keeps (when its discovery has them), grouped by version.
pub const KINDS: &[Gvr] = &[
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

/// A leaf's kinds, and the tasks keeping them. Dropping it stops them.
pub struct LeafKinds {
    kept: Vec<Arc<Kept>>,
    tasks: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl LeafKinds {
    /// Asks `client`'s discovery on `runtime`, then starts a reflector per kind it has.
    pub fn start(client: kube::Client, leaf: &str, runtime: &tokio::runtime::Handle) -> Self {
        let kept: Vec<Arc<Kept>> = KINDS.iter().map(|g| Arc::new(Kept::new(g))).collect();
        let tasks = Arc::new(Mutex::new(Vec::new()));
        let start = discover(client, kept.clone(), leaf.to_string(), tasks.clone());
        let discovering = runtime.spawn(start).abort_handle();
        lock(&tasks).push(discovering);
        LeafKinds { kept, tasks }
    }

    /// Kind `gvr` of the leaf (every kind of [`KINDS`] has one, empty when not served).
    pub fn get(&self, gvr: &Gvr) -> Option<&Arc<Kept>> {
        self.kept.iter().find(|k| k.gvr == gvr)
    }

    /// How many objects the leaf holds of each kind.
    pub fn counts(&self) -> impl Iterator<Item = (&'static Gvr, usize)> + '_ {
        self.kept.iter().map(|k| (k.gvr, k.feed.len()))
    }
}

impl Drop for LeafKinds {
    fn drop(&mut self) {
        for task in lock(&self.tasks).drain(..) {
            task.abort();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The longest wait between two attempts at the leaf's discovery.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Asks the leaf which of [`KINDS`] it serves (until it answers), then starts their
/// reflectors, their handles in `tasks`.
async fn discover(
    client: kube::Client,
    kept: Vec<Arc<Kept>>,
    leaf: String,
    tasks: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
) {
    let mut delay = Duration::from_secs(1);
    let served = loop {
        match served(&client).await {
            Ok(served) => break served,
            Err(e) => {
                let reason = errors::describe(&e, Causes::All);
                warn!(leaf = %leaf, error = %reason, "leaf discovery failed; retrying after backoff");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(MAX_BACKOFF);
            }
        }
    };
    for kind in kept {
        if !served.contains(&(kind.gvr.api_version, kind.gvr.resource)) {
            debug!(leaf = %leaf, resource = kind.gvr.resource, "not served by the leaf");
            continue;
        }
        let task = tokio::spawn(printed::reflect(client.clone(), kind, leaf.clone()));
        lock(&tasks).push(task.abort_handle());
    }
}

/// The (version, resource) pairs of [`KINDS`] the leaf lists and watches. A group version
/// it does not have (404) is none of them, not a failure.
async fn served(
    client: &kube::Client,
) -> Result<HashSet<(&'static str, &'static str)>, kube::Error> {
    let mut versions: Vec<&'static str> = KINDS.iter().map(|g| g.api_version).collect();
    versions.dedup();
    let mut out = HashSet::new();
    for version in versions {
        let listed = if version.contains('/') {
            client.list_api_group_resources(version).await
        } else {
            client.list_core_api_resources(version).await
        };
        let list = match listed {
            Ok(list) => list,
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(e) => return Err(e),
        };
        for r in list.resources {
            let watchable = ["list", "watch"]
                .iter()
                .all(|v| r.verbs.iter().any(|have| have == v));
            let kind = KINDS
                .iter()
                .find(|g| g.api_version == version && g.resource == r.name);
            if let (true, Some(kind)) = (watchable, kind) {
                out.insert((kind.api_version, kind.resource));
            }
        }
    }
    Ok(out)
}
