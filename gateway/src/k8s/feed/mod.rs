//! One leaf's change feed of one kind of object (pods, events, namespaces): the objects
//! now, by namespace, and the last [`FEED_KEEPS`] changes to them, numbered, so a kube-api
//! watch reads the changes after its cursor instead of re-listing, and a list's position
//! can be resumed from exactly. kube-apiserver's watch cache, per leaf and per resource.
//!
//! A reflector (`leaf::pods`, `leaf::events`, `leaf::namespaces`) folds every watch event
//! in: an applied object is `Added` or `Modified`, a deleted one `Deleted`, and a relist
//! (the reflector restarted, after a `410 Gone` or a broken connection) becomes the
//! differences between what the feed held and what the leaf now lists, as events too: a
//! watcher never sees a silent gap. What a reflector drops of its own accord (an event past
//! its TTL or the cap, [`Feed::evict`]) is a `Deleted` change like any other.
//!
//! The feed is generic over the [`Object`] it holds (`object`): pods keep their own
//! [`RawPod`](super::raw_pod::RawPod), serialized once; other kinds a [`RawObject`]. A
//! cluster-scoped object is filed under its own name (a `Namespace` is its tenant's by its
//! name), so "the namespaces a reader may read" bounds every kind alike.
//!
//! Positions are the feed's own sequence numbers, within an epoch that changes whenever a
//! feed is built (a reload rebuilding the leaf, a restart), so a position from another
//! feed is never taken for one of this feed's. Each namespace remembers its last change
//! and the newest change of its that the ring has dropped: a reader interested in some
//! namespaces can resume from a position exactly unless a change of theirs was dropped
//! after it (then [`Gone`], kube-apiserver's `410 Expired`), whatever other namespaces did.
//!
//! Readers are woken through a `tokio::sync::watch` of the newest sequence number: no
//! polling, one wake per batch. This module knows nothing of tenants or HTTP; callers pass
//! which namespaces they may read.

mod object;

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

pub use self::object::{Object, Printed, RawObject, at, storage_order, text};

/// How many changes a leaf's feed keeps for watches to resume from.
pub const FEED_KEEPS: usize = 2048;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    /// The watch event type kube-apiserver writes.
    pub fn event_type(self) -> &'static str {
        match self {
            ChangeKind::Added => "ADDED",
            ChangeKind::Modified => "MODIFIED",
            ChangeKind::Deleted => "DELETED",
        }
    }
}

/// One change, in the feed's order.
#[derive(Debug)]
pub struct Change<T> {
    pub seq: u64,
    pub kind: ChangeKind,
    /// The object after the change (for `Deleted`, its last state).
    pub object: Arc<T>,
    /// The object before a `Modified`, so a reader with a selector can see it enter or
    /// leave.
    pub prev: Option<Arc<T>>,
}

impl<T> Clone for Change<T> {
    fn clone(&self) -> Self {
        Change {
            seq: self.seq,
            kind: self.kind,
            object: self.object.clone(),
            prev: self.prev.clone(),
        }
    }
}

/// A position too old for the feed: what is left starts after `oldest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gone {
    /// The oldest position the reader could have resumed from.
    pub oldest: u64,
}

/// The objects of some namespaces at one position of the feed.
pub struct View<T> {
    pub epoch: u64,
    /// The feed's position: read changes after it to follow on.
    pub seq: u64,
    /// The last change in the namespaces read (0 if none): the position to hand out, which
    /// moves only when those namespaces change.
    pub last: u64,
    pub objects: Vec<Arc<T>>,
}

/// One leaf's objects of one kind and their recent changes.
pub struct Feed<T> {
    epoch: u64,
    state: Mutex<State<T>>,
    tick: tokio::sync::watch::Sender<u64>,
}

struct Namespace<T> {
    objects: HashMap<Box<str>, Arc<T>>,
    /// The sequence number of the namespace's last change.
    last: u64,
    /// The newest of its changes the ring no longer holds.
    dropped: u64,
}

impl<T> Default for Namespace<T> {
    fn default() -> Self {
        Namespace {
            objects: HashMap::new(),
            last: 0,
            dropped: 0,
        }
    }
}

struct State<T> {
    seq: u64,
    keeps: usize,
    namespaces: HashMap<Box<str>, Namespace<T>>,
    ring: VecDeque<Change<T>>,
    len: usize,
}

impl<T: Object> Default for Feed<T> {
    fn default() -> Feed<T> {
        Feed::new(FEED_KEEPS)
    }
}

impl<T: Object> Feed<T> {
    /// An empty feed keeping the last `keeps` changes.
    pub fn new(keeps: usize) -> Feed<T> {
        Feed {
            epoch: new_epoch(),
            state: Mutex::new(State {
                seq: 0,
                keeps: keeps.max(1),
                namespaces: HashMap::new(),
                ring: VecDeque::new(),
                len: 0,
            }),
            tick: tokio::sync::watch::Sender::new(0),
        }
    }

    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Woken (with the newest sequence number) after every batch of changes.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.tick.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, seq: u64) {
        self.tick.send_replace(seq);
    }

    /// Runs `change` on the state under the lock, and wakes the readers when it changed
    /// anything.
    fn change(&self, change: impl FnOnce(&mut State<T>)) {
        let seq = {
            let mut s = self.lock();
            let before = s.seq;
            change(&mut s);
            if s.seq == before {
                return;
            }
            s.seq
        };
        self.publish(seq);
    }

    /// Adds or replaces an object; a copy at the same `resourceVersion` is no change.
    pub fn apply(&self, object: Arc<T>) {
        self.change(|s| {
            s.put(object);
        });
    }

    /// Removes an object (`object` is its last state).
    pub fn delete(&self, object: Arc<T>) {
        self.change(|s| {
            s.remove(object.scope(), object.name(), Some(object.clone()));
        });
    }

    /// Removes the objects `keys` name (namespace, name), each with the state the feed
    /// held as its last: what a reflector drops of its own accord (a TTL, a cap).
    pub fn evict<'k>(&self, keys: impl IntoIterator<Item = (&'k str, &'k str)>) {
        self.change(|s| {
            for (ns, name) in keys {
                s.remove(ns, name, None);
            }
        });
    }

    /// Makes `all` the feed's objects (the end of a relist): the differences become
    /// changes.
    pub fn replace(&self, all: Vec<Arc<T>>) {
        self.change(|s| {
            let mut keep: HashSet<(Box<str>, Box<str>)> = HashSet::with_capacity(all.len());
            for object in all {
                keep.insert((object.scope().into(), object.name().into()));
                s.put(object);
            }
            let gone: Vec<Arc<T>> = s
                .namespaces
                .iter()
                .flat_map(|(ns, n)| {
                    n.objects
                        .iter()
                        .filter(|(name, _)| !keep.contains(&(ns.clone(), (*name).clone())))
                        .map(|(_, p)| p.clone())
                })
                .collect();
            for object in gone {
                s.remove(object.scope(), object.name(), Some(object.clone()));
            }
        });
    }

    /// How many objects the feed holds.
    pub fn len(&self) -> usize {
        self.lock().len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every object.
    pub fn list(&self) -> Vec<Arc<T>> {
        self.lock()
            .namespaces
            .values()
            .flat_map(|n| n.objects.values().cloned())
            .collect()
    }

    /// Object `name` of namespace `ns` (a cluster-scoped object: its name twice).
    pub fn get(&self, ns: &str, name: &str) -> Option<Arc<T>> {
        self.lock().namespaces.get(ns)?.objects.get(name).cloned()
    }

    /// The objects of the namespaces `wanted` admits, and the positions to follow on
    /// from. Costs one call of `wanted` per namespace plus the objects it admits.
    pub fn view(&self, wanted: impl Fn(&str) -> bool) -> View<T> {
        let s = self.lock();
        let mut view = View {
            epoch: self.epoch,
            seq: s.seq,
            last: 0,
            objects: Vec::new(),
        };
        for (ns, n) in &s.namespaces {
            if wanted(ns) {
                view.last = view.last.max(n.last);
                view.objects.extend(n.objects.values().cloned());
            }
        }
        view
    }

    /// The changes after `after` in the namespaces `wanted` admits, in order, and the
    /// feed's position they bring the reader to; [`Gone`] when one of them was dropped.
    pub fn since(
        &self,
        after: u64,
        wanted: impl Fn(&str) -> bool,
    ) -> Result<(Vec<Change<T>>, u64), Gone> {
        let s = self.lock();
        let first = s.ring.front().map_or(s.seq + 1, |c| c.seq);
        if after + 1 < first {
            // Changes after `after` were dropped: fine only if none was the reader's.
            let mut oldest = 0;
            for (ns, n) in &s.namespaces {
                if wanted(ns) {
                    oldest = oldest.max(n.dropped);
                }
            }
            if oldest > after {
                return Err(Gone { oldest });
            }
        }
        let skip = (after + 1).saturating_sub(first) as usize;
        let changes = s
            .ring
            .iter()
            .skip(skip)
            .filter(|c| wanted(c.object.scope()))
            .cloned()
            .collect();
        Ok((changes, s.seq))
    }

    /// The newest sequence number.
    pub fn seq(&self) -> u64 {
        self.lock().seq
    }
}

impl<T: Object> State<T> {
    /// Records `object`'s arrival; false when the same version was already held.
    fn put(&mut self, object: Arc<T>) -> bool {
        let ns = self.namespaces.entry(object.scope().into()).or_default();
        let prev = ns.objects.insert(object.name().into(), object.clone());
        let kind = match &prev {
            Some(p) if p.resource_version() == object.resource_version() => return false,
            Some(_) => ChangeKind::Modified,
            None => {
                self.len += 1;
                ChangeKind::Added
            }
        };
        self.push(kind, object, prev);
        true
    }

    /// Records the removal of `ns`/`name`, with `last` as its last state (the one held
    /// when `None`); false when the feed did not hold it.
    fn remove(&mut self, ns: &str, name: &str, last: Option<Arc<T>>) -> bool {
        let Some(held) = self
            .namespaces
            .get_mut(ns)
            .and_then(|n| n.objects.remove(name))
        else {
            return false;
        };
        self.len -= 1;
        self.push(ChangeKind::Deleted, last.unwrap_or(held), None);
        true
    }

    fn push(&mut self, kind: ChangeKind, object: Arc<T>, prev: Option<Arc<T>>) {
        self.seq += 1;
        let seq = self.seq;
        if let Some(ns) = self.namespaces.get_mut(object.scope()) {
            ns.last = seq;
        }
        self.ring.push_back(Change {
            seq,
            kind,
            object,
            prev,
        });
        while self.ring.len() > self.keeps {
            let Some(old) = self.ring.pop_front() else {
                break;
            };
            if let Some(ns) = self.namespaces.get_mut(old.object.scope()) {
                ns.dropped = old.seq;
            }
        }
    }
}

/// A number no earlier feed had: the clock's nanoseconds, made strictly increasing within
/// the process (two feeds built in the same tick still differ).
fn new_epoch() -> u64 {
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    let mut prev = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(prev + 1);
        match LAST.compare_exchange_weak(prev, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(p) => prev = p,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::raw_pod::test_pod;
    use serde_json::json;

    fn pod(ns: &str, name: &str, rv: u64) -> Arc<crate::k8s::RawPod> {
        test_pod(
            "leaf",
            json!({"metadata": {"namespace": ns, "name": name, "resourceVersion": rv.to_string()}}),
        )
    }

    fn kinds<T: Object>(changes: &[Change<T>]) -> Vec<(ChangeKind, &str)> {
        changes.iter().map(|c| (c.kind, c.object.name())).collect()
    }

    #[test]
    fn changes_come_in_order_and_a_repeat_is_no_change() {
        let feed = Feed::new(16);
        feed.apply(pod("a", "x", 1));
        feed.apply(pod("a", "x", 1));
        feed.apply(pod("b", "y", 2));
        feed.apply(pod("a", "x", 3));
        feed.delete(pod("a", "x", 4));
        feed.delete(pod("a", "x", 4));
        let (all, seq) = feed.since(0, |_| true).unwrap();
        assert_eq!(seq, 4);
        use ChangeKind::*;
        assert_eq!(
            kinds(&all),
            [(Added, "x"), (Added, "y"), (Modified, "x"), (Deleted, "x")]
        );
        assert_eq!(all[2].prev.as_ref().unwrap().resource_version(), "1");
        let (only_a, _) = feed.since(1, |ns| ns == "a").unwrap();
        assert_eq!(kinds(&only_a), [(Modified, "x"), (Deleted, "x")]);
        assert_eq!(feed.len(), 1);
    }

    #[test]
    fn a_relist_becomes_the_differences() {
        let feed = Feed::new(16);
        feed.replace(vec![
            pod("a", "stay", 1),
            pod("a", "change", 2),
            pod("a", "go", 3),
        ]);
        let start = feed.seq();
        feed.replace(vec![
            pod("a", "stay", 1),
            pod("a", "change", 5),
            pod("a", "new", 6),
        ]);
        let (changes, _) = feed.since(start, |_| true).unwrap();
        let mut got = kinds(&changes);
        got.sort();
        use ChangeKind::*;
        assert_eq!(got, [(Added, "new"), (Modified, "change"), (Deleted, "go")]);
    }

    #[test]
    fn a_position_is_gone_only_when_a_change_the_reader_wants_was_dropped() {
        let feed = Feed::new(3);
        feed.apply(pod("mine", "p", 1));
        let view = feed.view(|ns| ns == "mine");
        assert_eq!((view.last, view.objects.len()), (1, 1));
        // Others' churn pushes the reader's own change out of the ring: still resumable,
        // nothing of the reader's was lost.
        for i in 0..10 {
            feed.apply(pod("theirs", &format!("q{i}"), 10 + i));
        }
        let (changes, _) = feed.since(view.last, |ns| ns == "mine").unwrap();
        assert!(changes.is_empty());
        assert_eq!(
            feed.view(|ns| ns == "mine").last,
            1,
            "others do not move it"
        );
        // A change of its own that then drops out: gone.
        feed.apply(pod("mine", "p", 30));
        for i in 0..3 {
            feed.apply(pod("theirs", &format!("r{i}"), 40 + i));
        }
        assert_eq!(
            feed.since(view.last, |ns| ns == "mine").unwrap_err(),
            Gone { oldest: 12 }
        );
        assert!(feed.since(view.last, |ns| ns == "theirs").is_err());
        let new = || Feed::<crate::k8s::RawPod>::new(1).epoch();
        assert!(new() != new());
    }
}
