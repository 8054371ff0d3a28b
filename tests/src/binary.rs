//! The `leafgate` binary, for tests that run it the way users do (`leafgate run`,
//! `leafgate check`) rather than the library in-process.

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::plugins::{repo_root, target_dir};

/// The `leafgate` binary of this target dir, built once per test process (it shares the
/// library the tests already built, so this is a link).
pub fn leafgate() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = std::process::Command::new(cargo)
            .args(["build", "--quiet", "-p", "leafgate", "--bin", "leafgate"])
            .current_dir(repo_root())
            .env("CARGO_TARGET_DIR", target_dir())
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the leafgate binary failed");
        target_dir().join("debug").join("leafgate")
    })
    .clone()
}
