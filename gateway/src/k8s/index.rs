//! The live pod index: which leaves hold pod `ns/name`, kept from one kube-runtime
//! reflector per leaf.
//!
//! Each leaf's reflector (`watcher(..).default_backoff()`, pods in every namespace) keeps
//! that leaf's full store, its change feed, which serves listings and watches. Every event
//! it applies is also folded into one shared map keyed by `"ns/name"`, whose entries are
//! the feed's own `Arc<RawPod>`s (nothing is copied), so a lookup is one read lock and one hash probe
//! whatever the number of leaves, and no lock is held across an await. A relist (after a
//! `410 Gone`, say) replaces the leaf's share of the map in one write, at its end.
//!
//! The map outlives snapshots: a reload hands it on, and a leaf whose config is unchanged
//! keeps its reflector. A leaf's [`LeafSlot`] removes its pods from the map when the last
//! handle to it goes. This module holds the map only: `leaf::pods` runs the reflectors that
//! fill it, `leaf` dials; nothing here routes requests or talks HTTP.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use crate::metrics::{LeafLabels, LeafMetrics};

use super::raw_pod::RawPod;

/// Every leaf's pods, by `ns/name`.
#[derive(Default)]
pub struct PodIndex {
    pods: RwLock<HashMap<Box<str>, Holders>>,
    next_id: AtomicU64,
    /// Live slots per leaf name: a reload that rebuilds a leaf briefly has two.
    live: Mutex<HashMap<Arc<str>, usize>>,
}

/// Which leaf a copy came from: shared by all of that leaf's entries.
struct LeafTag {
    slot: u64,
    name: Arc<str>,
}

/// One leaf's copy of a pod: two pointers.
#[derive(Clone)]
pub struct Held {
    /// The leaf holding this copy; reads as its name (`&*held.leaf`, `held.leaf.to_string()`).
    pub leaf: LeafName,
    pub pod: Arc<RawPod>,
}

/// A leaf's name as the index stores it: one pointer shared by all of the leaf's entries,
/// which also tells two builds of a same-named leaf apart (during a reload).
#[derive(Clone)]
pub struct LeafName(Arc<LeafTag>);

impl std::ops::Deref for LeafName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0.name
    }
}

impl std::fmt::Display for LeafName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.name)
    }
}

impl std::fmt::Debug for LeafName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0.name, f)
    }
}

/// The copies of one `ns/name`. Nearly always one, kept inline so an entry costs no
/// allocation of its own and a lookup no extra pointer chase.
enum Holders {
    One(Held),
    Many(Vec<Held>),
}

impl Holders {
    fn as_slice(&self) -> &[Held] {
        match self {
            Holders::One(h) => std::slice::from_ref(h),
            Holders::Many(v) => v,
        }
    }

    /// Adds `held`, replacing the copy from the same leaf.
    fn put(&mut self, held: Held) {
        match self {
            Holders::One(h) if h.leaf.0.slot == held.leaf.0.slot => *h = held,
            Holders::One(h) => *self = Holders::Many(vec![h.clone(), held]),
            Holders::Many(v) => match v.iter_mut().find(|h| h.leaf.0.slot == held.leaf.0.slot) {
                Some(h) => *h = held,
                None => v.push(held),
            },
        }
    }

    /// Removes the copy from leaf `slot`; false when none is left.
    fn remove(&mut self, slot: u64) -> bool {
        match self {
            Holders::One(h) => h.leaf.0.slot != slot,
            Holders::Many(v) => {
                v.retain(|h| h.leaf.0.slot != slot);
                if let [only] = v.as_slice() {
                    *self = Holders::One(only.clone());
                }
                !self.as_slice().is_empty()
            }
        }
    }

    fn heap_bytes(&self) -> usize {
        match self {
            Holders::One(_) => 0,
            Holders::Many(v) => v.capacity() * size_of::<Held>(),
        }
    }
}

impl Held {
    /// The leaf holding this copy.
    pub fn leaf(&self) -> &str {
        &self.leaf
    }

    pub fn uid(&self) -> Option<&str> {
        self.pod.uid()
    }

    pub fn labels(&self) -> &std::collections::BTreeMap<String, String> {
        static NONE: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
        self.pod.labels().unwrap_or(&NONE)
    }

    /// The pod's containers (init and ephemeral ones excluded).
    pub fn containers(&self) -> impl Iterator<Item = &str> {
        self.pod.containers()
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("leaf", &self.leaf())
            .field("pod", &key_of(&self.pod))
            .field("uid", &self.uid())
            .finish()
    }
}

impl PodIndex {
    pub fn new() -> Arc<PodIndex> {
        Arc::default()
    }

    /// Every leaf's copy of pod `ns/name` (empty when none holds it).
    pub fn holders(&self, ns: &str, name: &str) -> Vec<Held> {
        self.with_holders(ns, name, <[Held]>::to_vec)
    }

    /// Calls `f` with every leaf's copy of pod `ns/name`, under the read lock and without
    /// allocating; `f` must not block.
    pub fn with_holders<R>(&self, ns: &str, name: &str, f: impl FnOnce(&[Held]) -> R) -> R {
        with_key(ns, name, |key| {
            let pods = self.pods.read().unwrap_or_else(PoisonError::into_inner);
            f(pods.get(key).map_or(&[][..], Holders::as_slice))
        })
    }

    /// How many distinct `ns/name` the index holds.
    pub fn len(&self) -> usize {
        self.pods
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes the index itself allocates (its table at capacity, keys, overflow lists),
    /// not counting the pods, which the reflectors' stores own and the index shares.
    pub fn heap_bytes(&self) -> usize {
        let pods = self.pods.read().unwrap_or_else(PoisonError::into_inner);
        // Hashbrown: one slot and one control byte per bucket.
        let table = pods.capacity() * (size_of::<Box<str>>() + size_of::<Holders>() + 1);
        let entries: usize = pods.iter().map(|(k, h)| k.len() + h.heap_bytes()).sum();
        table + entries
    }

    /// A new slot for leaf `name`: its pods enter and leave the index through it.
    pub fn slot(self: &Arc<Self>, name: &str, metrics: Option<LeafMetrics>) -> Arc<LeafSlot> {
        let name: Arc<str> = name.into();
        *self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(name.clone())
            .or_default() += 1;
        Arc::new(LeafSlot {
            tag: Arc::new(LeafTag {
                slot: self.next_id.fetch_add(1, Ordering::Relaxed),
                name: name.clone(),
            }),
            name,
            index: self.clone(),
            metrics,
        })
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<Box<str>, Holders>> {
        self.pods.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn purge(pods: &mut HashMap<Box<str>, Holders>, slot: u64) {
        pods.retain(|_, held| held.remove(slot));
    }
}

/// One leaf's place in the index. Dropping the last handle removes its pods.
pub struct LeafSlot {
    tag: Arc<LeafTag>,
    name: Arc<str>,
    index: Arc<PodIndex>,
    metrics: Option<LeafMetrics>,
}

impl LeafSlot {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub(super) fn metrics(&self) -> Option<&LeafMetrics> {
        self.metrics.as_ref()
    }

    fn held(&self, pod: Arc<RawPod>) -> Held {
        Held {
            leaf: LeafName(self.tag.clone()),
            pod,
        }
    }

    /// Adds or replaces this leaf's copy of `pod`.
    pub fn apply(&self, pod: Arc<RawPod>) {
        let key = key_of(&pod);
        let held = self.held(pod);
        let mut pods = self.index.write();
        match pods.entry(key.into_boxed_str()) {
            Entry::Occupied(mut e) => e.get_mut().put(held),
            Entry::Vacant(e) => {
                e.insert(Holders::One(held));
            }
        }
    }

    /// Removes this leaf's copy of pod `ns/name`.
    pub fn delete(&self, ns: &str, name: &str) {
        let mut pods = self.index.write();
        with_key(ns, name, |key| {
            if let Some(held) = pods.get_mut(key)
                && !held.remove(self.tag.slot)
            {
                pods.remove(key);
            }
        });
    }

    /// Replaces all of this leaf's pods with `all` in one write (the end of a relist).
    pub fn replace(&self, all: Vec<Arc<RawPod>>) {
        let mut pods = self.index.write();
        PodIndex::purge(&mut pods, self.tag.slot);
        for pod in all {
            let key = key_of(&pod);
            let held = self.held(pod);
            match pods.entry(key.into_boxed_str()) {
                Entry::Occupied(mut e) => e.get_mut().put(held),
                Entry::Vacant(e) => {
                    e.insert(Holders::One(held));
                }
            }
        }
    }
}

impl Drop for LeafSlot {
    fn drop(&mut self) {
        PodIndex::purge(&mut self.index.write(), self.tag.slot);
        let mut live = self
            .index
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let last = match live.get_mut(&self.name) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            _ => {
                live.remove(&self.name);
                true
            }
        };
        if let (true, Some(m)) = (last, &self.metrics) {
            let labels = LeafLabels {
                leaf: self.name.to_string(),
            };
            m.up.remove(&labels);
            m.pods.remove(&labels);
            m.watch_restarts.remove(&labels);
        }
    }
}

pub(super) fn key_of(pod: &RawPod) -> String {
    format!("{}/{}", pod.namespace(), pod.name())
}

thread_local! {
    /// The lookup key buffer: reused, so a lookup neither allocates nor clears a big one.
    static KEY: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Calls `f` with `"{ns}/{name}"`, built in a per-thread buffer so a lookup does not
/// allocate (once the buffer has grown to the longest key).
fn with_key<R>(ns: &str, name: &str, f: impl FnOnce(&str) -> R) -> R {
    KEY.with(|buf| match buf.try_borrow_mut() {
        Ok(mut key) => {
            key.clear();
            key.push_str(ns);
            key.push('/');
            key.push_str(name);
            f(&key)
        }
        // Only when `f` itself looks a key up: then a fresh string.
        Err(_) => f(&format!("{ns}/{name}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::raw_pod::test_pod;
    use serde_json::json;

    fn pod(ns: &str, name: &str, uid: &str) -> Arc<RawPod> {
        test_pod(
            "leaf",
            json!({
                "metadata": {"namespace": ns, "name": name, "uid": uid, "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main"}]},
            }),
        )
    }

    #[test]
    fn two_leaves_holding_one_pod_are_both_reported_and_leave_independently() {
        let index = PodIndex::new();
        let a = index.slot("a", None);
        let b = index.slot("b", None);
        a.apply(pod("ns", "p", "u1"));
        b.apply(pod("ns", "p", "u2"));
        a.apply(pod("ns", "p", "u1b"));
        let held = index.holders("ns", "p");
        let seen: Vec<_> = held.iter().map(|h| (h.leaf(), h.uid().unwrap())).collect();
        assert_eq!(seen, [("a", "u1b"), ("b", "u2")]);
        assert_eq!(held[0].containers().collect::<Vec<_>>(), ["main"]);
        assert_eq!(held[0].labels()["app"], "web");
        a.delete("ns", "p");
        assert_eq!(index.holders("ns", "p").len(), 1);
        drop(b);
        assert!(index.holders("ns", "p").is_empty() && index.is_empty());
    }

    #[test]
    fn a_relist_replaces_the_leaf_share_only() {
        let index = PodIndex::new();
        let a = index.slot("a", None);
        let b = index.slot("b", None);
        a.apply(pod("ns", "old", "1"));
        b.apply(pod("ns", "old", "2"));
        a.replace(vec![pod("ns", "new", "3")]);
        assert_eq!(index.holders("ns", "old").len(), 1);
        assert_eq!(index.holders("ns", "new")[0].leaf(), "a");
    }

    #[test]
    fn long_keys_and_nested_lookups_still_match() {
        let index = PodIndex::new();
        let a = index.slot("a", None);
        let long = "x".repeat(300);
        a.apply(pod("ns", &long, "1"));
        assert_eq!(index.holders("ns", &long).len(), 1);
        let nested = with_key("a", "b", |k| with_key("c", "d", |j| format!("{k} {j}")));
        assert_eq!(nested, "a/b c/d");
    }
}
