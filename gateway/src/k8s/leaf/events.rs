//! One leaf's event reflector: core/v1 `Event`s in every namespace, kept as the leaf sent
//! them (raw JSON, `managedFields` stripped), bounded, and broadcast as they change.
//!
//! Events are many, so what is kept is bounded twice, by [`MAX_AGE`] (kube-apiserver's
//! `--event-ttl` default: an event whose last occurrence is older is gone from a real
//! cluster too) and by [`MAX_EVENTS`] per leaf (the oldest by last occurrence go first).
//! An event dropped by either bound is broadcast as deleted, as a real cluster's TTL
//! expiry is. A relist broadcasts the differences with what was held, never a silent gap.
//!
//! This module keeps and hands out events; it does not decide who may read them (the
//! kube-api front scopes them to a tenant by their own namespace).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kube::api::ApiResource;
use leafgate_k8s_print::parse_timestamp;
use serde_json::Value;
use tokio::sync::broadcast;

use super::raw::{self, Sink};

/// How long an event is kept after its last occurrence: kube-apiserver's `--event-ttl`
/// default (1 h).
pub const MAX_AGE: Duration = Duration::from_secs(3600);
/// How many events a leaf's store keeps at most; past it the oldest (by last occurrence)
/// go. About 10 MB of JSON at a typical 1-2 KB an event.
pub const MAX_EVENTS: usize = 5000;
/// How many changes a slow watcher may fall behind before it is told to start again.
const CHANGES: usize = 1024;

/// What happened to an event, as a watch says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    /// The watch event `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "ADDED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }
}

/// One change to a leaf's events.
#[derive(Debug, Clone)]
pub struct Change {
    pub kind: ChangeKind,
    pub event: Arc<Value>,
    /// For `Modified`, the event as it was: a watch with a selector tells from it whether
    /// the event entered or left what it selects.
    pub prev: Option<Arc<Value>>,
}

impl Change {
    fn new(kind: ChangeKind, event: Arc<Value>) -> Change {
        Change {
            kind,
            event,
            prev: None,
        }
    }
}

/// A leaf's event reflector: its bounded store and its watch task. Dropping it stops the
/// watch.
pub struct LeafEvents {
    shared: Arc<Shared>,
    task: tokio::task::AbortHandle,
}

struct Shared {
    store: RwLock<Store>,
    changes: broadcast::Sender<Change>,
}

impl LeafEvents {
    /// Starts the reflector of `client`'s events (every namespace) on `runtime`.
    pub fn start(client: kube::Client, leaf: &str, runtime: &tokio::runtime::Handle) -> Self {
        let shared = Arc::new(Shared {
            store: RwLock::new(Store::default()),
            changes: broadcast::channel(CHANGES).0,
        });
        let sink = EventSink {
            shared: shared.clone(),
            pending: None,
        };
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::Event>(&());
        let task = raw::start(client, resource, leaf, sink, runtime);
        LeafEvents { shared, task }
    }

    /// The events of `namespace` (every namespace when `None`) whose last occurrence is
    /// within [`MAX_AGE`], sorted by namespace and name.
    pub fn list(&self, namespace: Option<&str>) -> Vec<Arc<Value>> {
        self.shared.read().list(namespace, now())
    }

    /// The events as [`LeafEvents::list`] gives them, and a receiver of every later change,
    /// taken together: nothing falls between them.
    pub fn list_and_follow(
        &self,
        namespace: Option<&str>,
    ) -> (Vec<Arc<Value>>, broadcast::Receiver<Change>) {
        let store = self.shared.read();
        let rx = self.shared.changes.subscribe();
        (store.list(namespace, now()), rx)
    }

    /// Events held now, expired ones included until the next change trims them.
    pub fn len(&self) -> usize {
        self.shared.read().by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for LeafEvents {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Shared {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Store> {
        self.store.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Store> {
        self.store.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Seconds since the Unix epoch.
fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

type Key = (String, String);

/// One kept event and when it last occurred.
struct Kept {
    last_seen: i64,
    event: Arc<Value>,
}

/// The events of one leaf by namespace and name, with an index by last occurrence for
/// the bounds.
#[derive(Default)]
struct Store {
    by_key: BTreeMap<Key, Kept>,
    by_time: BTreeSet<(i64, Key)>,
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn key_of(event: &Value) -> Key {
    (
        text(event, "/metadata/namespace").to_string(),
        text(event, "/metadata/name").to_string(),
    )
}

/// When an event last occurred, as `printEvent` reads it: `series.lastObservedTime`,
/// `lastTimestamp`, `eventTime`, `firstTimestamp`, else its creation; `arrived` when it
/// carries none of them.
pub fn last_seen(event: &Value, arrived: i64) -> i64 {
    [
        "/series/lastObservedTime",
        "/lastTimestamp",
        "/eventTime",
        "/firstTimestamp",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .find_map(|p| parse_timestamp(text(event, p)))
    .unwrap_or(arrived)
}

impl Store {
    fn list(&self, namespace: Option<&str>, now: i64) -> Vec<Arc<Value>> {
        let fresh = |k: &Kept| k.last_seen >= now - MAX_AGE.as_secs() as i64;
        match namespace {
            Some(ns) => self
                .by_key
                .range((ns.to_string(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
                .filter(|(_, k)| fresh(k))
                .map(|(_, k)| k.event.clone())
                .collect(),
            None => self
                .by_key
                .values()
                .filter(|k| fresh(k))
                .map(|k| k.event.clone())
                .collect(),
        }
    }

    /// Puts `event` in (replacing its older copy) unless it is already too old; returns
    /// what the watchers should hear, bounds included.
    fn put(&mut self, event: Arc<Value>, now: i64) -> Vec<Change> {
        let key = key_of(&event);
        let last_seen = last_seen(&event, now);
        let old = self.remove(&key);
        let mut changes = Vec::new();
        if last_seen >= now - MAX_AGE.as_secs() as i64 {
            let kind = match old {
                Some(_) => ChangeKind::Modified,
                None => ChangeKind::Added,
            };
            let prev = old;
            self.by_time.insert((last_seen, key.clone()));
            self.by_key.insert(
                key,
                Kept {
                    last_seen,
                    event: event.clone(),
                },
            );
            changes.push(Change { kind, event, prev });
        } else if let Some(old) = old {
            changes.push(Change::new(ChangeKind::Deleted, old));
        }
        changes.extend(self.trim(now));
        changes
    }

    fn remove(&mut self, key: &Key) -> Option<Arc<Value>> {
        let kept = self.by_key.remove(key)?;
        self.by_time.remove(&(kept.last_seen, key.clone()));
        Some(kept.event)
    }

    /// Drops the events past [`MAX_AGE`], then the oldest past [`MAX_EVENTS`].
    fn trim(&mut self, now: i64) -> Vec<Change> {
        let oldest_kept = now - MAX_AGE.as_secs() as i64;
        let mut gone = Vec::new();
        while let Some((seen, key)) = self.by_time.first().cloned() {
            if seen >= oldest_kept && self.by_key.len() <= MAX_EVENTS {
                break;
            }
            if let Some(event) = self.remove(&key) {
                gone.push(Change::new(ChangeKind::Deleted, event));
            }
        }
        gone
    }
}

/// Folds the reflector's events into the store; a relist is built aside and swapped in.
struct EventSink {
    shared: Arc<Shared>,
    pending: Option<Store>,
}

impl EventSink {
    fn publish(&self, changes: Vec<Change>) {
        for c in changes {
            // No receiver is fine: nobody watches.
            let _ = self.shared.changes.send(c);
        }
    }
}

impl Sink for EventSink {
    fn relist_begin(&mut self) {
        self.pending = Some(Store::default());
    }

    fn listed(&mut self, object: Value) {
        let pending = self.pending.get_or_insert_with(Store::default);
        // The bounds' own deletions mean nothing here: the swap works out the changes.
        let _ = pending.put(Arc::new(object), now());
    }

    fn relisted(&mut self) {
        let fresh = self.pending.take().unwrap_or_default();
        let mut store = self.shared.write();
        let mut changes = Vec::new();
        for (key, kept) in &fresh.by_key {
            let version = |e: &Value| text(e, "/metadata/resourceVersion").to_string();
            match store.by_key.get(key) {
                None => changes.push(Change::new(ChangeKind::Added, kept.event.clone())),
                Some(old) if version(&old.event) != version(&kept.event) => changes.push(Change {
                    kind: ChangeKind::Modified,
                    event: kept.event.clone(),
                    prev: Some(old.event.clone()),
                }),
                Some(_) => {}
            }
        }
        for (key, kept) in &store.by_key {
            if !fresh.by_key.contains_key(key) {
                changes.push(Change::new(ChangeKind::Deleted, kept.event.clone()));
            }
        }
        *store = fresh;
        // Sent under the lock, so a watch that lists and subscribes under it sees each
        // change exactly once.
        self.publish(changes);
    }

    fn applied(&mut self, object: Value) {
        let mut store = self.shared.write();
        let changes = store.put(Arc::new(object), now());
        self.publish(changes);
        drop(store);
    }

    fn deleted(&mut self, object: Value) {
        let mut store = self.shared.write();
        if let Some(event) = store.remove(&key_of(&object)) {
            self.publish(vec![Change::new(ChangeKind::Deleted, event)]);
        }
        drop(store);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(ns: &str, name: &str, last: &str) -> Arc<Value> {
        Arc::new(json!({
            "metadata": { "namespace": ns, "name": name, "resourceVersion": "1" },
            "lastTimestamp": last,
        }))
    }

    const NOW: i64 = 1_700_000_000;

    fn at(seconds_ago: i64) -> String {
        let t = NOW - seconds_ago;
        k8s_openapi::jiff::Timestamp::from_second(t)
            .unwrap()
            .to_string()
    }

    #[test]
    fn keeps_an_hour_and_lists_by_namespace() {
        let mut s = Store::default();
        assert_eq!(
            s.put(event("a", "x", &at(10)), NOW)[0].kind,
            ChangeKind::Added
        );
        assert_eq!(s.put(event("b", "y", &at(20)), NOW).len(), 1);
        assert_eq!(
            s.put(event("a", "x", &at(5)), NOW)[0].kind,
            ChangeKind::Modified
        );
        // Older than the TTL: not kept, and the copy held goes.
        assert!(s.put(event("a", "old", &at(3601)), NOW).is_empty());
        let gone = s.put(event("b", "y", &at(4000)), NOW);
        assert_eq!(gone[0].kind, ChangeKind::Deleted);
        assert_eq!(s.list(Some("a"), NOW).len(), 1);
        assert_eq!(s.list(Some("b"), NOW).len(), 0);
        // What ages out while held is not listed.
        assert_eq!(s.list(None, NOW + 3600).len(), 0);
        // Lists of a namespace do not spill into one sharing its prefix.
        s.put(event("a-2", "z", &at(1)), NOW);
        assert_eq!(s.list(Some("a"), NOW).len(), 1);
    }

    #[test]
    fn past_the_cap_the_oldest_go_first() {
        let mut s = Store::default();
        for i in 0..MAX_EVENTS {
            s.put(
                event("a", &format!("e{i}"), &at(1000 - (i % 900) as i64)),
                NOW,
            );
        }
        let gone = s.put(event("a", "new", &at(0)), NOW);
        assert_eq!(gone.len(), 2, "the new one, and the oldest out");
        assert_eq!(gone[1].kind, ChangeKind::Deleted);
        assert_eq!(text(&gone[1].event, "/metadata/name"), "e0");
        assert_eq!(s.by_key.len(), MAX_EVENTS);
        assert_eq!(s.by_time.len(), MAX_EVENTS);
    }

    #[test]
    fn last_seen_reads_series_then_timestamps() {
        let e = json!({ "eventTime": "2024-01-01T00:00:00.000000Z",
            "series": { "lastObservedTime": "2024-01-01T00:01:00.000000Z" } });
        assert_eq!(
            last_seen(&e, 0),
            last_seen(&json!({ "firstTimestamp": "2024-01-01T00:01:00Z" }), 0)
        );
        assert_eq!(last_seen(&json!({}), 42), 42);
    }
}
