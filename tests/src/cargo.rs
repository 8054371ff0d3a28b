//! Cargo run from inside a test (to build the `leafgate` binary or the plugins), as if from
//! a shell.

use std::ffi::OsStr;
use std::process::Command;

/// `cargo` (the one running the tests), without the variables cargo sets for a test process
/// (`CARGO_MANIFEST_DIR`, `CARGO_PKG_*`, `CARGO_BIN_EXE_*`, ...). A build script that
/// watches one of them (`ring`'s reruns on `CARGO_MANIFEST_DIR` and `CARGO_PKG_NAME`) would
/// otherwise see it changed, and the nested build would rebuild that crate and every crate
/// above it in place, and the next top-level build rebuild them back.
pub fn command() -> Command {
    let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        if set_for_a_test(&name) {
            cargo.env_remove(name);
        }
    }
    cargo
}

/// Whether cargo sets `name` for the process it runs a test or binary in (cargo's reference,
/// "Environment variables Cargo sets for crates"), rather than a user setting it for cargo.
fn set_for_a_test(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    ["CARGO_PKG_", "CARGO_BIN_", "CARGO_CRATE_"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "CARGO_RUSTC_CURRENT_DIR"
                | "OUT_DIR"
        )
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_what_cargo_sets_for_a_test_is_left_out() {
        for name in [
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_BIN_EXE_leafgate",
            "CARGO_CRATE_NAME",
            "OUT_DIR",
        ] {
            assert!(super::set_for_a_test(name.as_ref()), "{name}");
        }
        for name in [
            "CARGO",
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "CARGO_BUILD_JOBS",
            "RUSTFLAGS",
            "PATH",
        ] {
            assert!(!super::set_for_a_test(name.as_ref()), "{name}");
        }
    }
}
