//! Finding the real kubectl binaries tests run against: the pinned one (env `KUBECTL`, then
//! `<workspace>/target/tools/bin/kubectl`, installed by `scripts/tools.sh`) and
//! `/usr/bin/kubectl` when it is the 1.32 client. Owns discovery of binaries only.

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

/// Every kubectl to run the tests with: the pinned one, plus /usr/bin/kubectl at 1.32.
pub fn all() -> Vec<PathBuf> {
    let mut bins = vec![pinned()];
    let system = Path::new("/usr/bin/kubectl");
    if system.is_file() && client_version(system).is_some_and(|v| v.starts_with("1.32.")) {
        bins.push(system.to_path_buf());
    }
    bins
}
