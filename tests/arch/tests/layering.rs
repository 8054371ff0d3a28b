//! The architecture test: gateway/src has no cycle between files and every import points
//! down the layer order below. `cargo test -p leafgate-arch --test layering -- --nocapture`
//! prints the module graph in numbers.

use std::path::Path;

use leafgate_arch::{Layers, Paths, REASON, check_with, long_files};

/// leafgate's layers, top to bottom: a module may import from a strictly lower line or
/// from inside its own top-level module. lib.rs (`crate`) only declares and re-exports.
/// This is the one place the order is written (the `leafgate-arch` binary reads it here).
const LAYERS: &str = "
main
gateway
admin, watch, controllers
control
listener
runtime
snapshot
proxy, k8s
metrics
plugins, routing, limit, access_log
config
tls, errors, workers
";

#[test]
fn gateway_modules_import_down_the_layers_without_cycles() {
    let layers = Layers::parse(LAYERS).expect("LAYERS parses");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../gateway/src");
    // The strict graph: `b::B` and `pub use b::B` written in the parent are edges too, so a
    // cycle cannot hide behind a path without `self::`.
    let report = check_with(&root, &layers, Paths::Relative).expect("gateway/src reads");
    println!("{report}");
    assert!(
        report.is_clean(),
        "{} architecture violations:\n{}",
        report.violations.len(),
        report
            .violations
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Inside `listener/`, no file imports from a `mod.rs` above it: the accept loop
/// (`listener/mod.rs`) and the fronts and paths it starts share their helpers through
/// files below both (`listener/conn.rs`), so the arrows only point down.
#[test]
fn nothing_in_the_listener_imports_from_a_module_above_it() {
    let layers = Layers::parse(LAYERS).expect("LAYERS parses");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../gateway/src");
    let report = check_with(&root, &layers, Paths::Relative).expect("gateway/src reads");
    let back_up = report.back_up_inside("listener");
    assert!(
        back_up.is_empty(),
        "imports back up inside listener/:\n{}",
        back_up
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The HTTP/1.1 fast path's connection loop stays a loop: the exchange is
/// `proxy::fast::exchange`'s, the reading parts `proxy::fast::buf`'s.
#[test]
fn the_fast_paths_connection_loop_stays_short() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../gateway/src/listener/fast.rs");
    let lines = std::fs::read_to_string(&path)
        .expect("listener/fast.rs reads")
        .lines()
        .count();
    assert!(
        lines < 400,
        "listener/fast.rs has {lines} lines (at most 399)"
    );
}

/// A file of more than 600 lines of code (tests not counted) says why in its header.
#[test]
fn a_long_file_says_why_in_its_header() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../gateway/src");
    let long = long_files(&root, 600).expect("gateway/src reads");
    for file in &long {
        println!(
            "{} ({} lines): {}",
            file.rel,
            file.code_lines,
            file.reason.as_deref().unwrap_or("no reason")
        );
    }
    let silent: Vec<String> = long
        .iter()
        .filter(|f| f.reason.is_none())
        .map(|f| format!("{} ({} lines of code)", f.rel, f.code_lines))
        .collect();
    assert!(
        silent.is_empty(),
        "files over 600 lines of code with no `{REASON}` line in their header:\n{}",
        silent.join("\n")
    );
}
