//! One leaf's pod reflector: `watcher(..).default_backoff()` over pods in every namespace,
//! decoded raw ([`RawPod`]: the object as the leaf sent it), and the task that folds each
//! event into the leaf's change [`Feed`] (its store, for listings and watches) and into the
//! shared [`PodIndex`](crate::k8s::index::PodIndex) through the leaf's slot, and keeps the
//! leaf's watch state (`/status`) and metrics. A relist is buffered and handed over whole
//! at its end, so the feed turns it into the differences.
//!
//! A watch the server accepts counts as being back in sync after a failure: a watch
//! resumed from its resourceVersion yields no event on a quiet cluster, so the leaf's
//! transport reports accepted watches. It must not dial or parse requests.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use futures_util::StreamExt;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use tracing::{info, warn};

use crate::errors::{self, Causes};
use crate::metrics::LeafLabels;

use crate::k8s::feed::Feed;
use crate::k8s::index::LeafSlot;
use crate::k8s::raw_pod::RawPod;

/// A leaf's watch, as `/status` shows it.
#[derive(Debug, Clone, Default)]
pub struct WatchState {
    /// A full list has been received and no error came after the last good event.
    pub synced: bool,
    /// Pods in the leaf's store.
    pub pods: usize,
    /// Times the watch failed and was started again (after its backoff).
    pub restarts: u64,
    /// The last failure, with its causes (a TLS reason, a status code), and when.
    pub last_error: Option<(SystemTime, String)>,
    /// Since when it has not been in sync (`None` while it is): the reflector's start
    /// until the first list completes, else the failure that took it out of sync.
    pub unsynced_since: Option<SystemTime>,
}

/// A leaf's reflector: its feed and its watch task. Dropping it stops the watch; the
/// leaf's pods leave the index when the task has ended too.
pub struct LeafPods {
    feed: Arc<Feed<RawPod>>,
    state: Arc<Mutex<WatchState>>,
    task: tokio::task::AbortHandle,
}

impl LeafPods {
    /// Starts the reflector of `client`'s pods (every namespace) on `runtime`.
    /// `watch_started` changes whenever the server accepts one of the client's watches.
    pub fn start(
        client: kube::Client,
        slot: Arc<LeafSlot>,
        watch_started: tokio::sync::watch::Receiver<u64>,
        runtime: &tokio::runtime::Handle,
    ) -> LeafPods {
        let feed = Arc::new(Feed::default());
        let state = Arc::new(Mutex::new(WatchState {
            unsynced_since: Some(SystemTime::now()),
            ..WatchState::default()
        }));
        // `RawPod` drops the bulk (managed fields, last-applied) as it decodes.
        let api: Api<RawPod> = Api::all(client);
        let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
        let task = runtime.spawn(run(
            stream,
            feed.clone(),
            slot,
            state.clone(),
            watch_started,
        ));
        LeafPods {
            feed,
            state,
            task: task.abort_handle(),
        }
    }

    pub fn state(&self) -> WatchState {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every pod the leaf holds now.
    pub fn list(&self) -> Vec<Arc<RawPod>> {
        self.feed.list()
    }

    /// The leaf's change feed (its pods now, by namespace, and their recent changes).
    pub fn feed(&self) -> &Arc<Feed<RawPod>> {
        &self.feed
    }
}

impl Drop for LeafPods {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn run(
    stream: impl futures_util::Stream<Item = Result<Event<RawPod>, watcher::Error>>,
    feed: Arc<Feed<RawPod>>,
    slot: Arc<LeafSlot>,
    state: Arc<Mutex<WatchState>>,
    mut watch_started: tokio::sync::watch::Receiver<u64>,
) {
    let labels = LeafLabels {
        leaf: slot.name().to_string(),
    };
    let metrics = slot.metrics().cloned();
    if let Some(m) = &metrics {
        m.up.get_or_create(&labels).set(0);
        let _ = m.pods.get_or_create(&labels);
        let _ = m.watch_restarts.get_or_create(&labels);
    }
    // Whether a full list has ever completed: only then can a later event show the
    // watch is back in sync after a failure.
    let mut listed = false;
    // The pods of a relist under way: the feed and the index take them whole at its end.
    let mut relist: Vec<Arc<RawPod>> = Vec::new();
    let leaf = slot.name().to_string();
    let stamp = |pod: RawPod| Arc::new(pod.stamp(&leaf));
    futures_util::pin_mut!(stream);
    loop {
        let event = tokio::select! {
            event = stream.next() => match event {
                Some(event) => Some(event),
                None => break,
            },
            // A watch the server accepted: in sync again, if a list completed before (a
            // resumed watch replays what it missed; a 410 would come next as an error).
            Ok(()) = watch_started.changed() => None,
        };
        let ok = match event {
            None => None,
            // One `Arc` per pod version, shared by the feed, its watchers and the index.
            Some(Ok(Event::Apply(pod))) => {
                let pod = stamp(pod);
                feed.apply(pod.clone());
                slot.apply(pod);
                None
            }
            Some(Ok(Event::Delete(pod))) => {
                let pod = stamp(pod);
                slot.delete(pod.namespace(), pod.name());
                feed.delete(pod);
                None
            }
            Some(Ok(Event::Init)) => {
                relist.clear();
                None
            }
            Some(Ok(Event::InitApply(pod))) => {
                relist.push(stamp(pod));
                None
            }
            Some(Ok(Event::InitDone)) => {
                listed = true;
                let all = std::mem::take(&mut relist);
                slot.replace(all.clone());
                feed.replace(all);
                info!(leaf = %slot.name(), pods = feed.len(), "leaf pods listed");
                Some(true)
            }
            Some(Err(e)) => {
                let reason = errors::describe(&e, Causes::All);
                warn!(leaf = %slot.name(), error = %reason, "leaf pod watch failed; retrying after backoff");
                let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
                let now = SystemTime::now();
                s.synced = false;
                s.unsynced_since.get_or_insert(now);
                s.restarts += 1;
                s.last_error = Some((now, reason));
                if let Some(m) = &metrics {
                    m.watch_restarts.get_or_create(&labels).inc();
                }
                Some(false)
            }
        };
        let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
        match ok {
            Some(true) => s.synced = true,
            // Any event after a failure shows the watch is back (a watch resumed from its
            // resourceVersion replays what it missed); before the first list completes
            // there is nothing to be in sync with.
            None if listed => s.synced = true,
            _ => {}
        }
        if s.synced {
            s.unsynced_since = None;
        }
        s.pods = feed.len();
        if let Some(m) = &metrics {
            m.up.get_or_create(&labels).set(i64::from(s.synced));
            m.pods.get_or_create(&labels).set(s.pods as i64);
        }
    }
}
