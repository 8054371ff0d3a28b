//! The `leafgate` binary, for tests that run it the way users do (`leafgate run`,
//! `leafgate check`) rather than the library in-process.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::plugins::{repo_root, target_dir};

/// The `leafgate` binary of this target dir, built once per test process.
///
/// It is built with the features the workspace's tests resolve (every member selected,
/// dev-dependencies on: naming the gateway's `cli` test asks for that), so its crates
/// are the very artifacts the tests use, not a second copy: `-p leafgate` alone resolved
/// tokio without the dev-only `test-util` and put a second tokio, kube and gateway, and
/// gigabytes, into the target dir of a fresh CI machine. It runs as from a shell
/// ([`crate::cargo::command`]), so it reuses every crate the tests' own build made.
pub fn leafgate() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let status = crate::cargo::command()
            .args([
                "build",
                "--quiet",
                "--workspace",
                "--bin",
                "leafgate",
                "--test",
                "cli",
            ])
            .current_dir(repo_root())
            .env("CARGO_TARGET_DIR", target_dir())
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the leafgate binary failed");
        target_dir().join("debug").join("leafgate")
    })
    .clone()
}
