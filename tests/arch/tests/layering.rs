//! The architecture test: gateway/src has no cycle between files and every import points
//! down the layer order below. `cargo test -p leafgate-arch --test layering -- --nocapture`
//! prints the module graph in numbers.

use std::path::Path;

use leafgate_arch::{Layers, Paths, check_with};

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
plugins, routing, limit
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
