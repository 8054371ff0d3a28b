//! Finding the real kubectl binaries tests run against: the pinned one (env `KUBECTL`, then
//! `<workspace>/target/tools/bin/kubectl`, installed by `scripts/tools.sh`) and a 1.32
//! client where the machine has one ([`all`]). Owns discovery of binaries only.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned kubectl version the test script installs.
pub const PINNED: &str = "1.37.1";

fn client_version(bin: &Path) -> Option<String> {
    let out = Command::new(bin)
        .args(["version", "--client"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("Client Version: v"))
        .map(|v| v.trim().to_string())
}

/// The pinned kubectl; panics with what to do when it is missing.
pub fn pinned() -> PathBuf {
    if let Some(p) = std::env::var_os("KUBECTL").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "KUBECTL={} does not exist", p.display());
        return p;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let p = root.join("target/tools/bin/kubectl");
    assert!(
        p.is_file(),
        "kubectl {PINNED} not found: set KUBECTL or run scripts/tools.sh (looked for {})",
        p.display()
    );
    p
}

/// Where a kubectl 1.32 may be on the machine: the Google Cloud SDK's own 1.32 binary,
/// then `/usr/bin/kubectl`.
const KUBECTL_1_32: [&str; 2] = [
    "/usr/lib/google-cloud-sdk/bin/kubectl.1.32",
    "/usr/bin/kubectl",
];

/// Every kubectl to run the tests with: the pinned one, plus a 1.32 client when the
/// machine has one. The Cloud SDK's `/usr/bin/kubectl` is a dispatcher (its version
/// `v1.32.4-dispatcher`) that runs whichever of its binaries suits the server's version,
/// so it is taken only when no real 1.32 binary is there, and never as the dispatcher.
pub fn all() -> Vec<PathBuf> {
    let mut bins = vec![pinned()];
    let real_1_32 = KUBECTL_1_32.iter().map(Path::new).find(|bin| {
        bin.is_file()
            && client_version(bin)
                .is_some_and(|v| v.starts_with("1.32.") && !v.contains("dispatcher"))
    });
    bins.extend(real_1_32.map(Path::to_path_buf));
    bins
}
