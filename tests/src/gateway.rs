//! leafgate in-process: a config (usually built with [`crate::Config`]) written to a
//! temporary folder, the gateway started on it, its real bound addresses read back.

use std::fmt::Display;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use leafgate::Gateway;
use tempfile::TempDir;

pub struct TestGateway {
    pub dir: TempDir,
    pub config: PathBuf,
    pub gateway: Arc<Gateway>,
}

impl TestGateway {
    /// Waits (up to 10 s) until the gateway's pod index holds `ns/name`: the index is not
    /// exposed to tests with a way to wait on, so its snapshot is polled.
    pub async fn indexed(&self, ns: &str, name: &str) {
        let started = std::time::Instant::now();
        while self.gateway.snapshot().pods.holders(ns, name).is_empty() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(10),
                "{ns}/{name} not indexed"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// Writes `toml` (a [`Config`](crate::Config) or literal text) as `leafgate.toml` in
    /// `dir` and starts the gateway on it.
    pub async fn start_in(dir: TempDir, toml: impl Display) -> TestGateway {
        let config = dir.path().join("leafgate.toml");
        std::fs::write(&config, toml.to_string()).unwrap();
        Self::start_at(dir, config).await
    }

    /// Starts the gateway on `config`, already laid out in `dir` by the caller (a symlink
    /// into a ConfigMap-style `..data` folder, for one).
    pub async fn start_at(dir: TempDir, config: PathBuf) -> TestGateway {
        let gateway = Gateway::start(&config).await.unwrap_or_else(|e| {
            let toml = std::fs::read_to_string(&config).unwrap_or_default();
            panic!("the gateway did not start:\n{e}\nconfig:\n{toml}")
        });
        TestGateway {
            dir,
            config,
            gateway,
        }
    }

    pub async fn start(toml: impl Display) -> TestGateway {
        Self::start_in(tempfile::tempdir().unwrap(), toml).await
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The bound address of the listener `name`.
    pub fn addr(&self, name: &str) -> SocketAddr {
        self.gateway
            .listener_addr(name)
            .unwrap_or_else(|| panic!("no listener named {name}"))
    }

    pub fn admin(&self) -> SocketAddr {
        self.gateway
            .admin_addr()
            .expect("the config has an [admin] section")
    }

    /// How many requests on `listener` leafgate read itself, from `/metrics`
    /// (`leafgate_http1_fast_path_requests_total`): the routes' fast path, and the upgrades
    /// the API fronts read in place.
    pub async fn read_in_place(&self, listener: &str) -> u64 {
        let text = crate::client::get(self.admin(), "admin", "/metrics")
            .await
            .text();
        let series = format!("leafgate_http1_fast_path_requests_total{{listener=\"{listener}\"}}");
        text.lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .and_then(|rest| rest.trim().parse().ok())
            .unwrap_or(0)
    }
}
