//! One leaf's read-only kinds that leafgate serves without interpreting them (workloads,
//! services, config, secrets, storage claims, policies, autoscalers: the config's
//! [`BUILTIN`] catalogue), each kept in a change [`Feed`](crate::k8s::feed::Feed) of
//! `Printed` objects: the object as the leaf sent it and the row the leaf's own printer
//! gave it.
//!
//! The reflector (`printed`) lists and watches each kind asking for kube-apiserver's
//! `Table` with `includeObject=Object`, so the front prints a row exactly as the leaf's
//! kube-apiserver prints it, whatever its version, without a printer of its own.
//!
//! A kind is watched only when both hold: some tenant that may reach the leaf is served it
//! ([`LeafKinds::want`], from each config's tenants' `resources`), and the leaf's
//! discovery lists it with `list` and `watch` (a leaf without it is no error, its feed
//! stays empty). Discovery is asked once the leaf answers (retried with backoff until it
//! does). A reload that stops serving a kind stops its reflector and empties its feed
//! (watchers get the `DELETED`s); one that starts serving it starts the reflector.
//!
//! Custom resources some tenant reaching the leaf is served are followed the same way,
//! each by its own task that first reads what the leaf's discovery says of it
//! (`custom`): its version, kind and scope are the leaf's.
//!
//! It keeps and hands out objects only; which of them a tenant sees is the front's.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::task::AbortHandle;
use tracing::{debug, warn};

use super::custom::{self, Seen, Served};
use super::printed::{self, Kept};
pub use crate::config::kinds::*;
use crate::errors::{self, Causes};

/// A leaf's kinds, and the tasks keeping them. Dropping it stops them.
pub struct LeafKinds {
    inner: Arc<Inner>,
}

/// One kind as a leaf keeps it ([`LeafKinds::footprint`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    pub gvr: &'static Gvr,
    /// Whether its reflector runs.
    pub watched: bool,
    pub objects: usize,
    /// The objects' size as JSON text, with their printed cells.
    pub bytes: usize,
    /// Why the leaf's kind is not served (a custom resource it has cluster-scoped).
    pub refused: Option<&'static str>,
}

/// What the discovery task and [`LeafKinds::want`] share.
struct Inner {
    client: kube::Client,
    leaf: String,
    runtime: tokio::runtime::Handle,
    /// One per kind of [`BUILTIN`], in its order.
    kept: Vec<Arc<Kept>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The (version, resource) pairs the leaf lists and watches; `None` until its
    /// discovery answered.
    served: Option<HashSet<(&'static str, &'static str)>>,
    /// Per kind of `kept`: whether a tenant reaching the leaf is served it.
    wanted: Vec<bool>,
    /// Per kind of `kept`: its running reflector.
    running: Vec<Option<AbortHandle>>,
    discovering: Option<AbortHandle>,
    /// The custom resources wanted, each with its task and what the leaf said of it.
    custom: Vec<Followed>,
}

/// One custom resource followed in the leaf.
struct Followed {
    name: CustomResource,
    seen: Seen,
    task: AbortHandle,
}

impl Followed {
    fn served(&self) -> Option<&Arc<Served>> {
        match &self.seen {
            Seen::Served(served) => Some(served),
            _ => None,
        }
    }
}

impl LeafKinds {
    /// Asks `client`'s discovery on `runtime`; no kind is watched until [`LeafKinds::want`]
    /// says which.
    pub fn start(client: kube::Client, leaf: &str, runtime: &tokio::runtime::Handle) -> Self {
        let kept: Vec<Arc<Kept>> = BUILTIN.iter().map(|g| Arc::new(Kept::new(g))).collect();
        let state = State {
            wanted: vec![false; kept.len()],
            running: vec![None; kept.len()],
            ..State::default()
        };
        let inner = Arc::new(Inner {
            client,
            leaf: leaf.to_string(),
            runtime: runtime.clone(),
            kept,
            state: Mutex::new(state),
        });
        let discovering = runtime.spawn(discover(inner.clone())).abort_handle();
        lock(&inner.state).discovering = Some(discovering);
        LeafKinds { inner }
    }

    /// Watches exactly the kinds of `wanted` and the custom resources of `custom` the
    /// leaf serves: starts the reflectors of those not running yet (a custom resource's
    /// task asks the leaf's discovery first), stops the others' and empties their feeds.
    pub fn want<'g>(
        &self,
        wanted: impl IntoIterator<Item = &'g Gvr>,
        custom: impl IntoIterator<Item = &'g CustomResource>,
    ) {
        let wanted: HashSet<&Gvr> = wanted.into_iter().collect();
        let custom: HashSet<&CustomResource> = custom.into_iter().collect();
        let mut state = lock(&self.inner.state);
        for (i, kept) in self.inner.kept.iter().enumerate() {
            state.wanted[i] = wanted.contains(kept.gvr);
        }
        self.inner.sync(&mut state);
        state.custom.retain(|f| {
            let keep = custom.contains(&f.name);
            if !keep {
                f.task.abort();
                if let Some(served) = f.served() {
                    served.kept.feed.replace(Vec::new());
                }
                debug!(leaf = %self.inner.leaf, resource = %f.name.entry(), "no tenant reaching the leaf is served it; stopped");
            }
            keep
        });
        let new: Vec<&CustomResource> = custom
            .into_iter()
            .filter(|c| !state.custom.iter().any(|f| f.name == **c))
            .collect();
        for name in new {
            let task = self.inner.follow(name.clone());
            state.custom.push(Followed {
                name: name.clone(),
                seen: Seen::Asking,
                task,
            });
        }
        state.custom.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// Kind `gvr` of the leaf (every kind of [`BUILTIN`] has one, empty when not watched;
    /// a custom resource one once the leaf's discovery listed it at `gvr`'s version).
    pub fn get(&self, gvr: &Gvr) -> Option<Arc<Kept>> {
        if let Some(kept) = self.inner.kept.iter().find(|k| k.gvr == gvr) {
            return Some(kept.clone());
        }
        let state = lock(&self.inner.state);
        let mut served = state.custom.iter().filter_map(Followed::served);
        served.find(|s| s.kept.gvr == gvr).map(|s| s.kept.clone())
    }

    /// The custom resources the leaf serves (found in its discovery, namespaced, and
    /// kept), in the order of their names.
    pub fn custom(&self) -> Vec<Arc<Served>> {
        let state = lock(&self.inner.state);
        state
            .custom
            .iter()
            .filter_map(Followed::served)
            .cloned()
            .collect()
    }

    /// How many objects the leaf holds of each kind.
    pub fn counts(&self) -> impl Iterator<Item = (&'static Gvr, usize)> + '_ {
        self.inner.kept.iter().map(|k| (k.gvr, k.feed.len()))
    }

    /// What the leaf keeps of each kind it watches or still holds objects of: the kind,
    /// whether its reflector runs, its objects and their size as JSON text.
    pub fn footprint(&self) -> Vec<Footprint> {
        let running: Vec<bool> = lock(&self.inner.state)
            .running
            .iter()
            .map(Option::is_some)
            .collect();
        let kinds = self.inner.kept.iter().zip(running);
        let mut out: Vec<Footprint> = kinds
            .filter_map(|(kept, watched)| {
                let (objects, bytes) = kept.footprint();
                (watched || objects > 0).then_some(Footprint {
                    gvr: kept.gvr,
                    watched,
                    objects,
                    bytes,
                    refused: None,
                })
            })
            .collect();
        let state = lock(&self.inner.state);
        for followed in &state.custom {
            out.extend(match &followed.seen {
                Seen::Served(served) => {
                    let (objects, bytes) = served.kept.footprint();
                    Some(Footprint {
                        gvr: served.gvr(),
                        watched: true,
                        objects,
                        bytes,
                        refused: None,
                    })
                }
                Seen::Refused(gvr, why) => Some(Footprint {
                    gvr,
                    watched: false,
                    objects: 0,
                    bytes: 0,
                    refused: Some(*why),
                }),
                Seen::Asking | Seen::Absent => None,
            });
        }
        out
    }

    /// The kinds whose reflector runs (wanted, and served by the leaf).
    pub fn watched(&self) -> Vec<&'static Gvr> {
        let state = lock(&self.inner.state);
        let running = state.running.iter().zip(&self.inner.kept);
        let builtin = running
            .filter(|(task, _)| task.is_some())
            .map(|(_, k)| k.gvr);
        let custom = state.custom.iter().filter_map(Followed::served);
        builtin.chain(custom.map(|s| s.gvr())).collect()
    }
}

impl Inner {
    /// Starts the task following custom resource `name` in the leaf; it records what the
    /// leaf says of it in the state.
    fn follow(self: &Arc<Self>, name: CustomResource) -> AbortHandle {
        let inner = Arc::downgrade(self);
        let key = name.clone();
        let seen = move |seen: Seen| {
            let Some(inner) = inner.upgrade() else {
                return;
            };
            let mut state = lock(&inner.state);
            if let Some(followed) = state.custom.iter_mut().find(|f| f.name == key) {
                followed.seen = seen;
            }
        };
        let task = custom::follow(self.client.clone(), self.leaf.clone(), name, seen);
        self.runtime.spawn(task).abort_handle()
    }

    /// Starts the reflector of each kind wanted and served, stops each other's.
    fn sync(&self, state: &mut State) {
        let Some(served) = &state.served else {
            return;
        };
        for (i, kept) in self.kept.iter().enumerate() {
            let watch =
                state.wanted[i] && served.contains(&(kept.gvr.api_version, kept.gvr.resource));
            match (&state.running[i], watch) {
                (None, true) => {
                    let reflect =
                        printed::reflect(self.client.clone(), kept.clone(), self.leaf.clone());
                    state.running[i] = Some(self.runtime.spawn(reflect).abort_handle());
                }
                (Some(task), false) => {
                    task.abort();
                    state.running[i] = None;
                    kept.feed.replace(Vec::new());
                    debug!(leaf = %self.leaf, resource = kept.gvr.resource, "no tenant reaching the leaf is served it; stopped");
                }
                _ => {}
            }
        }
    }
}

impl Drop for LeafKinds {
    fn drop(&mut self) {
        let mut guard = lock(&self.inner.state);
        let state = &mut *guard;
        let running = state.running.iter_mut().filter_map(Option::take);
        let custom = state.custom.drain(..).map(|f| f.task);
        let tasks: Vec<AbortHandle> = running
            .chain(custom)
            .chain(state.discovering.take())
            .collect();
        for task in tasks {
            task.abort();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The longest wait between two attempts at the leaf's discovery.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Asks the leaf which of [`BUILTIN`] it serves (until it answers), then starts the
/// reflectors of those wanted.
async fn discover(inner: Arc<Inner>) {
    let mut delay = Duration::from_secs(1);
    let served = loop {
        match served(&inner.client).await {
            Ok(served) => break served,
            Err(e) => {
                let reason = errors::describe(&e, Causes::All);
                warn!(leaf = %inner.leaf, error = %reason, "leaf discovery failed; retrying after backoff");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(MAX_BACKOFF);
            }
        }
    };
    let mut state = lock(&inner.state);
    state.served = Some(served);
    inner.sync(&mut state);
}

/// The (version, resource) pairs of [`BUILTIN`] the leaf lists and watches. A group
/// version it does not have (404) is none of them, not a failure.
async fn served(
    client: &kube::Client,
) -> Result<HashSet<(&'static str, &'static str)>, kube::Error> {
    let mut versions: Vec<&'static str> = BUILTIN.iter().map(|g| g.api_version).collect();
    versions.sort_unstable();
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
            let kind = BUILTIN
                .iter()
                .find(|g| g.api_version == version && g.resource == r.name);
            if let (true, Some(kind)) = (watchable, kind) {
                out.insert((kind.api_version, kind.resource));
            }
        }
    }
    Ok(out)
}
