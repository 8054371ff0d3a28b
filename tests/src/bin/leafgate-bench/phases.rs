//! `reload-phases ROUTES ROUNDS`: where a reload of a ROUTES-route config spends its time,
//! in process and without the file watcher: the TOML parse alone (into an untyped table),
//! the whole typed parse and validation (`Config::parse`, which includes the TOML parse),
//! the same through the reloader's parse cache (`Config::parse_cached`, holding the previous
//! round's file: each round changes one route, as `bench/reload.sh` does), and the snapshot
//! build on top of the previous snapshot. Prints medians as JSON.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use leafgate::config::{Config, ParseCache};
use leafgate::metrics::Metrics;
use leafgate::snapshot::Snapshot;

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
    println!(
        "{{\"routes\":{routes},\"bytes\":{},\"rounds\":{rounds},\"toml_table_ms\":{:.1},\"config_parse_ms\":{:.1},\"cached_parse_ms\":{:.1},\"snapshot_build_ms\":{:.1}}}",
        text.len(),
        median_ms(toml_ms),
        median_ms(parse_ms),
        median_ms(cached_ms),
        median_ms(build_ms)
    );
}
