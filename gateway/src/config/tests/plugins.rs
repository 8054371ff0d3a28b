//! `[tenant.plugins]` through `Config::parse`: defaults, overrides, and mistakes at their
//! key and place.

use std::path::Path;
use std::time::Duration;

use crate::config::Config;
use crate::config::plugins::{
    DEFAULT_DEADLINE, DEFAULT_MEMORY, DEFAULT_STARTUP, Isolation, OnError,
};
use crate::config::units::ByteSize;

fn parse(dir: &Path, plugins: &str) -> Result<Config, String> {
    let path = dir.join("leafgate.toml");
    let src = format!("[[tenant]]\nname = \"t\"\n[tenant.plugins]\n{plugins}\n");
    Config::parse(&path, &src).map_err(|e| e.to_string())
}

fn with_wasm() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.wasm"), b"\0asm").unwrap();
    dir
}

#[test]
fn a_bare_path_takes_the_defaults() {
    let dir = with_wasm();
    let config = parse(dir.path(), "log_filter = \"p.wasm\"").unwrap();
    let p = config.tenants[0].plugins.log_filter.clone().unwrap();
    assert_eq!(p.path, dir.path().join("p.wasm"));
    assert_eq!(
        (p.memory, p.deadline, p.startup),
        (ByteSize(DEFAULT_MEMORY), DEFAULT_DEADLINE, DEFAULT_STARTUP)
    );
    assert_eq!(
        (p.on_error, p.isolation),
        (OnError::Reject, Isolation::Pooled)
    );
    assert_eq!(p.config_json, "{}");
    assert_eq!(p.origin.key, "tenant[0].plugins.log_filter");
    assert_eq!(p.origin.position, Some((4, 14)));
    assert!(
        config.files.contains(&p.path),
        "reload watches plugin files"
    );
}

#[test]
fn the_table_form_overrides_tenant_defaults() {
    let dir = with_wasm();
    let config = parse(
        dir.path(),
        "memory = \"32MiB\"\ndeadline = \"5ms\"\nstartup = \"3s\"\non_error = \"default\"\n\
         pod_router = { path = \"p.wasm\", config = { default_leaf = \"leaf-1\", n = 2 }, deadline = \"50ms\", startup = \"200ms\", isolation = \"per-call\" }\n\
         table_formatter = \"p.wasm\"",
    )
    .unwrap();
    let plugins = &config.tenants[0].plugins;
    let router = plugins.pod_router.as_ref().unwrap();
    assert_eq!(router.memory, ByteSize(32 << 20));
    assert_eq!(router.deadline, Duration::from_millis(50));
    assert_eq!(router.startup, Duration::from_millis(200));
    assert_eq!(
        (router.on_error, router.isolation),
        (OnError::Default, Isolation::PerCall)
    );
    let json: serde_json::Value = serde_json::from_str(&router.config_json).unwrap();
    assert_eq!(
        json,
        serde_json::json!({ "default_leaf": "leaf-1", "n": 2 })
    );
    let table = plugins.table_formatter.as_ref().unwrap();
    assert_eq!(table.deadline, Duration::from_millis(5));
    assert_eq!(table.startup, Duration::from_secs(3));
    assert!(plugins.address_rewriter.is_none() && plugins.log_filter.is_none());
}

#[test]
fn mistakes_name_the_key_and_place() {
    let dir = with_wasm();
    let e = parse(
        dir.path(),
        "pod_router = { path = \"p.wasm\", memroy = \"1MiB\" }",
    )
    .unwrap_err();
    assert!(e.contains(":4:") && e.contains("memroy"), "{e}");
    let e = parse(dir.path(), "pod_router = \"missing.wasm\"").unwrap_err();
    assert!(
        e.contains("4:14: tenant[0].plugins.pod_router.path: cannot read plugin"),
        "{e}"
    );
    let e = parse(
        dir.path(),
        "pod_router = { path = \"p.wasm\", memory = \"4GiB\" }",
    )
    .unwrap_err();
    assert!(
        e.contains("tenant[0].plugins.pod_router.memory") && e.contains("out of range"),
        "{e}"
    );
    let e = parse(dir.path(), "deadline = \"0s\"\nlog_filter = \"p.wasm\"").unwrap_err();
    assert!(e.contains("4:12: tenant[0].plugins.deadline"), "{e}");
    let e = parse(
        dir.path(),
        "pod_router = { path = \"p.wasm\", startup = \"11s\" }",
    )
    .unwrap_err();
    assert!(
        e.contains("tenant[0].plugins.pod_router.startup") && e.contains("out of range"),
        "{e}"
    );
    let e = parse(dir.path(), "on_error = \"ignore\"").unwrap_err();
    assert!(e.contains("ignore"), "{e}");
    let e = parse(dir.path(), "router = \"p.wasm\"").unwrap_err();
    assert!(e.contains("unknown field `router`"), "{e}");
}

#[test]
fn a_log_filter_that_fails_open_is_a_warning() {
    let dir = with_wasm();
    let config = parse(
        dir.path(),
        "log_filter = { path = \"p.wasm\", on_error = \"default\" }\npod_router = { path = \"p.wasm\", on_error = \"default\" }",
    )
    .unwrap();
    assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);
    let warning = &config.warnings[0];
    assert!(
        warning.contains(":4:") && warning.contains("tenant[0].plugins.log_filter.on_error"),
        "{warning}"
    );
    assert!(warning.contains("unfiltered"), "{warning}");
    // Failing closed, the default, says nothing.
    let config = parse(dir.path(), "log_filter = \"p.wasm\"").unwrap();
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}
