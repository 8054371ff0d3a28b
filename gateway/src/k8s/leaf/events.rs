//! One leaf's event reflector: core/v1 `Event`s in every namespace, kept as the leaf sent
//! them (raw JSON, `managedFields` stripped) in a change [`Feed`], bounded.
//!
//! Events are many, so what is kept is bounded twice, by [`MAX_AGE`] (kube-apiserver's
//! `--event-ttl` default: an event whose last occurrence is older is gone from a real
//! cluster too) and by [`MAX_EVENTS`] per leaf (the oldest by last occurrence go first).
//! An event dropped by either bound leaves the feed as a `Deleted` change, as a real
//! cluster's TTL expiry is, so a watch resumed from a list sees it go; the TTL is checked
//! on every change and every [`raw::TICK`]. A relist becomes the differences with what was
//! held, never a silent gap.
//!
//! This module keeps and hands out events; it does not decide who may read them (the
//! kube-api front scopes them to a tenant by their own namespace).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kube::api::ApiResource;
use leafgate_k8s_print::parse_timestamp;
use serde_json::Value;

use super::raw::{self, Sink};
use crate::k8s::feed::text;
use crate::k8s::feed::{Feed, Object, RawObject};

/// How long an event is kept after its last occurrence: kube-apiserver's `--event-ttl`
/// default (1 h).
pub const MAX_AGE: Duration = Duration::from_secs(3600);
/// How many events a leaf's store keeps at most; past it the oldest (by last occurrence)
/// go. About 10 MB of JSON at a typical 1-2 KB an event.
pub const MAX_EVENTS: usize = 5000;

/// A leaf's event reflector: its bounded feed and its watch task. Dropping it stops the
/// watch.
pub struct LeafEvents {
    feed: Arc<Feed<RawObject>>,
    task: tokio::task::AbortHandle,
}

impl LeafEvents {
    /// Starts the reflector of `client`'s events (every namespace) on `runtime`.
    pub fn start(client: kube::Client, leaf: &str, runtime: &tokio::runtime::Handle) -> Self {
        let feed = Arc::new(Feed::default());
        let sink = EventSink {
            feed: feed.clone(),
            bounds: Bounds::default(),
            pending: Vec::new(),
        };
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::Event>(&());
        let task = raw::start(client, resource, leaf, sink, runtime);
        LeafEvents { feed, task }
    }

    /// The leaf's events and their recent changes.
    pub fn feed(&self) -> &Arc<Feed<RawObject>> {
        &self.feed
    }

    /// Events held now.
    pub fn len(&self) -> usize {
        self.feed.len()
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

/// Seconds since the Unix epoch.
fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
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

type Key = (String, String);

fn key_of(event: &RawObject) -> Key {
    (event.namespace().to_string(), event.name().to_string())
}

/// When each held event last occurred, ordered, for the two bounds.
#[derive(Default)]
struct Bounds {
    by_time: BTreeSet<(i64, Key)>,
    seen: HashMap<Key, i64>,
}

impl Bounds {
    /// Whether an event last seen at `last_seen` is within [`MAX_AGE`] at `now`.
    fn fresh(last_seen: i64, now: i64) -> bool {
        last_seen >= now - MAX_AGE.as_secs() as i64
    }

    fn put(&mut self, key: Key, last_seen: i64) {
        self.remove(&key);
        self.by_time.insert((last_seen, key.clone()));
        self.seen.insert(key, last_seen);
    }

    fn remove(&mut self, key: &Key) {
        if let Some(t) = self.seen.remove(key) {
            self.by_time.remove(&(t, key.clone()));
        }
    }

    /// Takes out the events past [`MAX_AGE`] at `now`, then the oldest past
    /// [`MAX_EVENTS`], and returns them.
    fn over(&mut self, now: i64) -> Vec<Key> {
        let mut gone = Vec::new();
        while let Some((seen, _)) = self.by_time.first() {
            if Bounds::fresh(*seen, now) && self.seen.len() <= MAX_EVENTS {
                break;
            }
            if let Some((_, key)) = self.by_time.pop_first() {
                self.seen.remove(&key);
                gone.push(key);
            }
        }
        gone
    }
}

/// Folds the reflector's events into the feed, within the bounds; a relist is gathered
/// and handed over whole, so the feed turns it into the differences.
struct EventSink {
    feed: Arc<Feed<RawObject>>,
    bounds: Bounds,
    pending: Vec<Arc<RawObject>>,
}

impl EventSink {
    /// Drops from the feed what the bounds no longer admit.
    fn trim(&mut self, now: i64) {
        let gone = self.bounds.over(now);
        if !gone.is_empty() {
            self.feed
                .evict(gone.iter().map(|(ns, name)| (ns.as_str(), name.as_str())));
        }
    }
}

impl Sink for EventSink {
    fn relist_begin(&mut self) {
        self.pending.clear();
    }

    fn listed(&mut self, object: RawObject) {
        self.pending.push(Arc::new(object));
    }

    fn relisted(&mut self) {
        let now = now();
        let mut bounds = Bounds::default();
        for e in &self.pending {
            bounds.put(key_of(e), last_seen(e.json(), now));
        }
        let over: BTreeSet<Key> = bounds.over(now).into_iter().collect();
        let kept = std::mem::take(&mut self.pending)
            .into_iter()
            .filter(|e| !over.contains(&key_of(e)))
            .collect();
        self.bounds = bounds;
        self.feed.replace(kept);
    }

    fn applied(&mut self, object: RawObject) {
        let now = now();
        let key = key_of(&object);
        let seen = last_seen(object.json(), now);
        if Bounds::fresh(seen, now) {
            self.bounds.put(key, seen);
            self.feed.apply(Arc::new(object));
        } else {
            // Already past its TTL: not kept, and the copy held goes.
            self.bounds.remove(&key);
            self.feed.evict([(key.0.as_str(), key.1.as_str())]);
        }
        self.trim(now);
    }

    fn deleted(&mut self, object: RawObject) {
        self.bounds.remove(&key_of(&object));
        self.feed.delete(Arc::new(object));
    }

    fn tick(&mut self) {
        self.trim(now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::ChangeKind;
    use serde_json::json;

    fn event(ns: &str, name: &str, rv: u64, last: &str) -> RawObject {
        RawObject::new(
            json!({
                "metadata": { "namespace": ns, "name": name, "resourceVersion": rv.to_string() },
                "lastTimestamp": last,
            }),
            "v1",
            "Event",
            "leaf",
        )
    }

    fn sink() -> EventSink {
        EventSink {
            feed: Arc::new(Feed::default()),
            bounds: Bounds::default(),
            pending: Vec::new(),
        }
    }

    fn at(seconds_ago: i64) -> String {
        k8s_openapi::jiff::Timestamp::from_second(now() - seconds_ago)
            .unwrap()
            .to_string()
    }

    fn changes(s: &EventSink, after: u64) -> Vec<(ChangeKind, String)> {
        let (changes, _) = s.feed.since(after, |_| true).unwrap();
        changes
            .iter()
            .map(|c| (c.kind, c.object.name().to_string()))
            .collect()
    }

    #[test]
    fn what_the_ttl_drops_leaves_the_feed_as_deleted() {
        use ChangeKind::*;
        let mut s = sink();
        s.applied(event("a", "x", 1, &at(10)));
        s.applied(event("b", "y", 2, &at(20)));
        s.applied(event("a", "x", 3, &at(5)));
        // Older than the TTL: not kept, and the copy held goes.
        s.applied(event("a", "old", 4, &at(3601)));
        s.applied(event("b", "y", 5, &at(4000)));
        assert_eq!(
            changes(&s, 0),
            [
                (Added, "x".into()),
                (Added, "y".into()),
                (Modified, "x".into()),
                (Deleted, "y".into())
            ]
        );
        assert_eq!(s.feed.len(), 1);
        // What ages out while held goes at the next tick.
        let seq = s.feed.seq();
        s.bounds.put(key_of(&event("a", "x", 3, "")), now() - 3601);
        s.tick();
        assert_eq!(changes(&s, seq), [(Deleted, "x".into())]);
        assert!(s.feed.is_empty());
    }

    #[test]
    fn past_the_cap_the_oldest_go_first_as_deleted() {
        let mut s = sink();
        for i in 0..MAX_EVENTS {
            let e = event(
                "a",
                &format!("e{i}"),
                i as u64,
                &at(1000 - (i % 900) as i64),
            );
            s.applied(e);
        }
        let seq = s.feed.seq();
        s.applied(event("a", "new", 99_999, &at(0)));
        let got = changes(&s, seq);
        assert_eq!(got.len(), 2, "the new one, and the oldest out: {got:?}");
        assert_eq!(got[1], (ChangeKind::Deleted, "e0".into()));
        assert_eq!(s.feed.len(), MAX_EVENTS);
        assert_eq!(s.bounds.by_time.len(), MAX_EVENTS);
    }

    #[test]
    fn a_relist_keeps_what_the_bounds_admit() {
        let mut s = sink();
        s.applied(event("a", "gone", 1, &at(1)));
        s.relist_begin();
        s.listed(event("a", "fresh", 2, &at(1)));
        s.listed(event("a", "stale", 3, &at(4000)));
        s.relisted();
        let names: Vec<String> = s.feed.list().iter().map(|e| e.name().into()).collect();
        assert_eq!(names, ["fresh"]);
        assert_eq!(s.bounds.seen.len(), 1);
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
