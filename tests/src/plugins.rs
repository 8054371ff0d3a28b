//! Builds the plugins tests load, from source, once per test process.
//!
//! The reference plugins (`plugins/`) and the fault plugins (`tests/fault-plugins/`) are
//! compiled with `cargo build --release --target wasm32-wasip2`, each workspace into its
//! own directory under the workspace's target dir, so the nested cargo never waits on the
//! lock of the cargo running the tests. No checked-in binaries: a test always runs the
//! plugin source next to it.
//!
//! This file uses only std, so `gateway/tests/` includes it by path as well.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate sits one level below the repository root")
        .to_path_buf()
}

/// The cargo target dir this test runs from: `CARGO_TARGET_DIR`, else the directory above
/// `debug/deps/<test binary>`.
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("the test binary has a path");
    exe.ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| repo_root().join("target"))
}

fn build(workspace: &Path, out: &Path) -> PathBuf {
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--release", "--target", "wasm32-wasip2", "--quiet"])
        .current_dir(workspace)
        .env("CARGO_TARGET_DIR", out)
        // The outer cargo's flags are for the host, not for wasm32-wasip2.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build {}: {e}", workspace.display()));
    assert!(
        status.success(),
        "building the plugins in {} failed (is the target installed? `rustup target add wasm32-wasip2`)",
        workspace.display()
    );
    out.join("wasm32-wasip2").join("release")
}

/// The directory of the reference plugins' `.wasm` files, built on first call.
pub fn build_plugins() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        build(
            &repo_root().join("plugins"),
            &target_dir().join("plugins-wasm"),
        )
    })
}

/// The directory of the fault plugins' `.wasm` files, built on first call.
pub fn build_fault_plugins() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        build(
            &repo_root().join("tests").join("fault-plugins"),
            &target_dir().join("fault-plugins-wasm"),
        )
    })
}

/// A reference plugin by crate name (`label-router`).
pub fn plugin(name: &str) -> PathBuf {
    wasm(build_plugins(), name)
}

/// A fault plugin by crate name (`faulty-router`).
pub fn fault_plugin(name: &str) -> PathBuf {
    wasm(build_fault_plugins(), name)
}

fn wasm(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(format!("{}.wasm", name.replace('-', "_")));
    assert!(path.is_file(), "{} was not built", path.display());
    path
}
