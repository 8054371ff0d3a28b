//! What the kubectl tests share: a kubectl command on a fixture's kubeconfig, a simulator
//! with one token and its kubeconfig, and the waits on kubectl's output and watches.

use std::path::Path;
use std::time::Duration;

use kubesim::{Credential, KubeSim};
use tokio::io::BufReader;
use tokio::process::Command;

/// `bin` on the kubeconfig in `dir`, with a cache of its own there.
pub fn kubectl(bin: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--kubeconfig")
        .arg(dir.join("kubeconfig"))
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .args(args)
        .kill_on_drop(true);
    cmd
}

/// A simulator that knows `token` as alice, and a folder with its kubeconfig.
pub struct Fixture {
    pub sim: KubeSim,
    pub dir: tempfile::TempDir,
}

pub async fn fixture(token: &str) -> Fixture {
    let sim = KubeSim::builder()
        .token(token, "alice")
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    sim.kubeconfig(
        &Credential::Token(token.into()),
        &dir.path().join("kubeconfig"),
    )
    .unwrap();
    Fixture { sim, dir }
}

/// Reads lines from `lines` until one satisfies `want`, within 15 s.
pub async fn read_until(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    want: impl Fn(&str) -> bool,
) -> String {
    tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("kubectl output ended early");
            if want(&line) {
                return line;
            }
        }
    })
    .await
    .expect("the expected line within 15 s")
}

/// Waits until `n` watches of `path` stream, on the simulator's signal.
pub async fn watching(sim: &KubeSim, path: &str, n: usize) {
    tokio::time::timeout(Duration::from_secs(10), sim.watching(path, n))
        .await
        .unwrap_or_else(|_| panic!("{n} watches of {path} within 10 s"));
}
