//! `reload-phases ROUTES ROUNDS`: where a reload of a ROUTES-route config spends its time,
//! in process and without the file watcher: the TOML parse alone (into an untyped table),
//! the whole typed parse and validation (`Config::parse`, which includes the TOML parse),
//! the same through the reloader's parse cache (`Config::parse_cached`, holding the previous
//! round's file: each round changes one route, as `bench/reload.sh` does), and the snapshot
//! build on top of the previous snapshot. Prints medians as JSON, and what the parse cache
//! holds in memory: the heap it takes (glibc's count: this binary runs on glibc's malloc,
//! leafgate on mimalloc) and the process's RSS with it and after dropping it.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use leafgate::Metrics;
use leafgate::Snapshot;
use leafgate::{Config, ParseCache};

fn median_ms(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

pub fn run(routes: usize, rounds: usize) {
    let text = super::config("127.0.0.1:0".parse().unwrap(), true, routes, "extra.bench");
    let path = Path::new("/nonexistent/leafgate.toml");
    let metrics = Metrics::new();
    let mut cache = ParseCache::new();
    let mut previous = Snapshot::build(
        Arc::new(Config::parse_cached(path, &text, &mut cache).unwrap()),
        1,
        None,
        &metrics,
    )
    .unwrap();
    let (mut toml_ms, mut parse_ms, mut cached_ms, mut build_ms) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let text = super::config(
            "127.0.0.1:0".parse().unwrap(),
            true,
            routes,
            &format!("new{round}.bench"),
        );
        let start = Instant::now();
        let table: toml::Table = toml::from_str(&text).unwrap();
        toml_ms.push(start.elapsed().as_secs_f64() * 1e3);
        drop(table);

        let start = Instant::now();
        let whole = Config::parse(path, &text).unwrap();
        parse_ms.push(start.elapsed().as_secs_f64() * 1e3);
        drop(whole);

        let start = Instant::now();
        let config = Config::parse_cached(path, &text, &mut cache).unwrap();
        cached_ms.push(start.elapsed().as_secs_f64() * 1e3);

        let start = Instant::now();
        let next = Snapshot::build(
            Arc::new(config),
            round as u64 + 2,
            Some(&previous),
            &metrics,
        )
        .unwrap();
        build_ms.push(start.elapsed().as_secs_f64() * 1e3);
        previous = next;
    }
    // The previous snapshot (and its config, which shares its routes with the cache) stays:
    // only what the cache holds on its own goes with it.
    let (heap_with, rss_with) = memory();
    drop(cache);
    let (heap_without, rss_without) = memory();
    println!(
        "{{\"routes\":{routes},\"bytes\":{},\"rounds\":{rounds},\"toml_table_ms\":{:.1},\"config_parse_ms\":{:.1},\"cached_parse_ms\":{:.1},\"snapshot_build_ms\":{:.1},\"cache_heap_kib\":{},\"rss_with_cache_kib\":{rss_with},\"rss_without_cache_kib\":{rss_without}}}",
        text.len(),
        median_ms(toml_ms),
        median_ms(parse_ms),
        median_ms(cached_ms),
        median_ms(build_ms),
        heap_with.saturating_sub(heap_without) / 1024,
    );
    drop(previous);
}

/// glibc's `struct mallinfo2`.
#[repr(C)]
struct MallInfo2 {
    arena: usize,
    ordblks: usize,
    smblks: usize,
    hblks: usize,
    hblkhd: usize,
    usmblks: usize,
    fsmblks: usize,
    uordblks: usize,
    fordblks: usize,
    keepcost: usize,
}

#[allow(
    unsafe_code,
    reason = "glibc's heap statistics have no Rust API; the signatures match glibc's"
)]
unsafe extern "C" {
    fn mallinfo2() -> MallInfo2;
    fn malloc_trim(pad: usize) -> i32;
}

/// (bytes of heap in use, RSS in KiB), after handing freed memory back to the kernel so
/// that the RSS follows what is in use.
#[allow(
    unsafe_code,
    reason = "calls the glibc functions declared above; no pointers cross"
)]
fn memory() -> (usize, u64) {
    // SAFETY: both are plain glibc calls with no pointer arguments; this binary runs on
    // glibc's malloc (no global allocator is set).
    let info = unsafe {
        malloc_trim(0);
        mallinfo2()
    };
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0);
    (info.uordblks + info.hblkhd, rss)
}
