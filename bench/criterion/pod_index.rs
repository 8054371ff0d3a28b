//! The pod index: lookups per second and memory with 100,000 pods over 4 leaves, next to a
//! plain `HashMap<String, Arc<RawPod>>` holding the same pods. Measures only; never gates CI.
//!
//! The index is filled directly through its leaf slots (no API server), with pods shaped
//! like small real ones: namespace, name, uid, 3 labels, 2 containers.
//!
//! - `pod-index/lookup/index`: `PodIndex::with_holders(ns, name, ..)` (read lock, key built
//!   in a per-thread buffer, one probe), keys cycling through every pod in a shuffled order.
//! - `pod-index/lookup/holders`: `PodIndex::holders` (the same, cloning the holders out).
//! - `pod-index/lookup/hashmap-peer`: `HashMap<String, Arc<RawPod>>::get(&str)` on prebuilt
//!   `"ns/name"` keys, no lock.
//! - `pod-index/lookup/hashmap-peer-locked-split-key`: that peer map behind an `RwLock`,
//!   looked up by `(ns, name)` through a reused key buffer: the lock and key building alone.
//!
//! Memory is printed before criterion runs, measured two ways: the resident set's growth
//! (`/proc/self/statm`) while each structure is filled, and the bytes the structure itself
//! allocates, counted from its capacities (the pods, shared with the reflector stores, are
//! counted apart). Run: `cargo bench -p leafgate-benches --bench pod_index`.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use kube::api::ObjectMeta;
use leafgate::kubernetes::{PodIndex, RawPod};

const PODS: usize = 100_000;
const LEAVES: usize = 4;

fn pods() -> Vec<Arc<RawPod>> {
    (0..PODS)
        .map(|i| {
            let pod = Pod {
                metadata: ObjectMeta {
                    namespace: Some(format!("team-{}", i % 50)),
                    name: Some(format!("app-{}-{:05x}", i % 1000, i)),
                    uid: Some(format!("{:08x}-0000-4000-8000-{:012x}", i, i)),
                    labels: Some(
                        [
                            ("app".to_string(), format!("app-{}", i % 1000)),
                            ("tier".to_string(), "web".to_string()),
                            ("pod-template-hash".to_string(), format!("{:08x}", i / 4)),
                        ]
                        .into(),
                    ),
                    ..Default::default()
                },
                spec: Some(PodSpec {
                    containers: vec![
                        Container {
                            name: "main".into(),
                            image: Some("registry.example/app:1".into()),
                            ..Default::default()
                        },
                        Container {
                            name: "sidecar".into(),
                            image: Some("registry.example/envoy:1".into()),
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                }),
                status: None,
            };
            // As the reflector holds it: the leaf's JSON, raw.
            let json = serde_json::to_value(&pod).expect("a pod serializes");
            Arc::new(
                RawPod::from_value(json)
                    .expect("a pod object")
                    .stamp("leaf"),
            )
        })
        .collect()
}

fn key(p: &RawPod) -> (String, String) {
    (p.namespace().to_string(), p.name().to_string())
}

/// Resident set size in bytes.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// A shuffled order (xorshift), so lookups do not walk the table in insertion order.
fn shuffled(n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    order
}

struct Fixture {
    index: Arc<PodIndex>,
    /// Kept alive: dropping a slot removes its pods.
    _slots: Vec<Arc<leafgate::kubernetes::LeafSlot>>,
    peer: HashMap<String, Arc<RawPod>>,
    keys: Vec<(String, String)>,
    joined: Vec<String>,
}

fn fixture() -> Fixture {
    let before_pods = rss();
    let pods = pods();
    let pods_rss = rss().saturating_sub(before_pods);

    let before = rss();
    let index = PodIndex::new();
    let slots: Vec<_> = (0..LEAVES)
        .map(|i| index.slot(&format!("leaf-{i}"), None))
        .collect();
    for (i, p) in pods.iter().enumerate() {
        slots[i % LEAVES].apply(p.clone());
    }
    let index_rss = rss().saturating_sub(before);

    let before = rss();
    let peer: HashMap<String, Arc<RawPod>> = pods
        .iter()
        .map(|p| {
            let (ns, name) = key(p);
            (format!("{ns}/{name}"), p.clone())
        })
        .collect();
    let peer_rss = rss().saturating_sub(before);

    // Counted: the table's buckets at capacity (slot + one control byte each) and each
    // key's heap bytes; the index counts its own (`PodIndex::heap_bytes`) the same way.
    let keys_heap: usize = peer.keys().map(String::capacity).sum();
    let peer_bytes =
        peer.capacity() * (size_of::<String>() + size_of::<Arc<Pod>>() + 1) + keys_heap;
    let index_bytes = index.heap_bytes();

    assert_eq!(index.len(), PODS);
    println!("pod-index memory, {PODS} pods over {LEAVES} leaves:");
    println!(
        "  the pods themselves (shared by both):     RSS +{:.1} MiB",
        mib(pods_rss)
    );
    println!(
        "  index   (RwLock<HashMap<Box<str>, Holders>>):  RSS +{:.1} MiB, counted {:.1} MiB ({:.0} B/pod)",
        mib(index_rss),
        mib(index_bytes),
        index_bytes as f64 / PODS as f64
    );
    println!(
        "  peer    (HashMap<String, Arc<RawPod>>):           RSS +{:.1} MiB, counted {:.1} MiB ({:.0} B/pod)",
        mib(peer_rss),
        mib(peer_bytes),
        peer_bytes as f64 / PODS as f64
    );
    println!(
        "  ratio index/peer: RSS {:.2}x, counted {:.2}x",
        index_rss as f64 / peer_rss.max(1) as f64,
        index_bytes as f64 / peer_bytes as f64
    );

    let order = shuffled(PODS);
    let keys: Vec<(String, String)> = order.iter().map(|&i| key(&pods[i])).collect();
    let joined = keys.iter().map(|(ns, n)| format!("{ns}/{n}")).collect();
    Fixture {
        index,
        _slots: slots,
        peer,
        keys,
        joined,
    }
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// A plain timed loop over every key, for a lookups/s figure printed beside the peer's.
fn rates(f: &Fixture) {
    let rounds = 20;
    let t = Instant::now();
    let mut found = 0usize;
    for _ in 0..rounds {
        for (ns, name) in &f.keys {
            found += f.index.with_holders(ns, name, |h| h.len());
        }
    }
    let index = (rounds * PODS) as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    for _ in 0..rounds {
        for k in &f.joined {
            if let Some(pod) = f.peer.get(k.as_str()) {
                found += 1;
                black_box(pod);
            }
        }
    }
    let peer = (rounds * PODS) as f64 / t.elapsed().as_secs_f64();
    assert_eq!(found, 2 * rounds * PODS);
    println!(
        "pod-index lookups: index {:.1} M/s, hashmap peer {:.1} M/s, ratio {:.2}x",
        index / 1e6,
        peer / 1e6,
        index / peer
    );
}

fn lookups(c: &mut Criterion) {
    let f = fixture();
    rates(&f);
    let mut g = c.benchmark_group("pod-index/lookup");
    g.throughput(Throughput::Elements(1));
    let mut i = 0usize;
    g.bench_function("index", |b| {
        b.iter(|| {
            let (ns, name) = &f.keys[i % PODS];
            i += 1;
            black_box(f.index.with_holders(ns, name, |h| h.len()))
        })
    });
    let mut i = 0usize;
    g.bench_function("holders", |b| {
        b.iter(|| {
            let (ns, name) = &f.keys[i % PODS];
            i += 1;
            black_box(f.index.holders(ns, name))
        })
    });
    let mut i = 0usize;
    g.bench_function("hashmap-peer", |b| {
        b.iter(|| {
            let k = &f.joined[i % PODS];
            i += 1;
            black_box(f.peer.get(k.as_str()))
        })
    });
    // The peer map again, behind the same kind of lock and looked up by (ns, name) through
    // a reused key buffer, as the index is: what the lock and key building cost alone.
    let locked = std::sync::RwLock::new(f.peer.clone());
    let mut buf = String::new();
    let mut i = 0usize;
    g.bench_function("hashmap-peer-locked-split-key", |b| {
        b.iter(|| {
            let (ns, name) = &f.keys[i % PODS];
            i += 1;
            buf.clear();
            buf.push_str(ns);
            buf.push('/');
            buf.push_str(name);
            let map = locked.read().unwrap_or_else(|e| e.into_inner());
            black_box(map.get(buf.as_str()).is_some())
        })
    });
    g.finish();
}

criterion_group!(benches, lookups);
criterion_main!(benches);
