//! The narrow handle through which the admin listener and the file watcher drive the
//! running gateway: read its state, ask for a reload. They see this trait, never the
//! gateway itself, so the gateway depends on them and not the other way round.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

use crate::config::ConfigErrors;
use crate::metrics::Metrics;
use crate::snapshot::{BuildError, Snapshot};

/// Why a reload, or a swap of the Ingress routes, left the running snapshot serving.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReloadError {
    /// The config file was refused as read, parsed or validated: every error, each naming
    /// its key and line:column.
    #[error("{0}")]
    Config(ConfigErrors),
    /// The config validated but could not be compiled (a TLS setting, a plugin).
    #[error("{0}")]
    Build(Arc<BuildError>),
    /// A new listener's address could not be bound.
    #[error("listener `{name}`: cannot bind {addr}: {source}")]
    Bind {
        name: String,
        addr: SocketAddr,
        source: Arc<std::io::Error>,
    },
    /// The work was cut short: the thread it ran on ended.
    #[error("the reload was interrupted: {0}")]
    Interrupted(String),
}

impl From<BuildError> for ReloadError {
    fn from(e: BuildError) -> Self {
        ReloadError::Build(Arc::new(e))
    }
}

impl ReloadError {
    /// A short word for the kind, as `/reload` and `/status` report it.
    pub fn kind(&self) -> &'static str {
        match self {
            ReloadError::Config(_) => "config",
            ReloadError::Build(_) => "build",
            ReloadError::Bind { .. } => "bind",
            ReloadError::Interrupted(_) => "interrupted",
        }
    }
}

/// The outcome of the last reload, for `/status`.
#[derive(Debug, Clone)]
pub struct ReloadRecord {
    pub at: SystemTime,
    /// The generation now serving, or the errors that kept the old one.
    pub result: Result<u64, ReloadError>,
}

/// A running listener as `/status` shows it.
#[derive(Debug, Clone)]
pub struct ListenerAddr {
    pub name: String,
    /// The address as configured (port 0 stays 0).
    pub bind: SocketAddr,
    /// The address bound (the real port).
    pub local: SocketAddr,
}

pub type ReloadFuture<'a> = Pin<Box<dyn Future<Output = Result<u64, ReloadError>> + Send + 'a>>;
pub type ApplyFuture<'a> = Pin<Box<dyn Future<Output = Result<(), ReloadError>> + Send + 'a>>;
/// The Gateway addresses that could not be bound, with why.
pub type GatewayApplyFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Vec<(SocketAddr, String)>, ReloadError>> + Send + 'a>>;

/// What admin and the watcher may ask of the gateway.
pub trait Control: Send + Sync + 'static {
    /// The snapshot serving now.
    fn snapshot(&self) -> Arc<Snapshot>;
    fn metrics(&self) -> &Metrics;
    /// The config file the gateway loads on reload.
    fn config_path(&self) -> &Path;
    fn listener_addrs(&self) -> Vec<ListenerAddr>;
    /// The address the admin API is bound to (the real port when the config said 0).
    fn admin_addr(&self) -> Option<std::net::SocketAddr> {
        None
    }
    fn last_reload(&self) -> Option<ReloadRecord>;
    /// True once shutdown began: `/readyz` answers 503 from then on.
    fn is_draining(&self) -> bool;
    /// Reloads the config; the new generation, or the errors that kept the old one.
    fn reload(&self) -> ReloadFuture<'_>;
    /// Serves `model`'s Ingress routes from now on: one snapshot swap, never at the same
    /// time as a reload, so neither loses the other's change.
    fn apply_ingress(&self, model: Arc<crate::k8s::ingress::model::Model>) -> ApplyFuture<'_>;
    /// Serves `served`'s Gateway routes from now on, binding and stopping the Gateway
    /// listeners it names and drops; one snapshot swap, as [`Control::apply_ingress`].
    fn apply_gateway(
        &self,
        served: Arc<crate::k8s::gateway::serve::Served>,
    ) -> GatewayApplyFuture<'_>;
    /// The `ingress` part of `/status`; `None` without `[kubernetes.ingress]`.
    fn ingress_status(&self) -> Option<serde_json::Value> {
        None
    }
    /// The Gateway API source's part of `/status`; `None` without `[kubernetes.gateway]`.
    fn gateway_status(&self) -> Option<serde_json::Value> {
        None
    }
    /// The root cluster's part of `/status` (leader, virtual nodes); `None` without
    /// `[kubernetes]`.
    fn root_status(&self) -> Option<serde_json::Value> {
        None
    }
    /// The `runtime` part of `/status`: figures a soak watches for leaks (tasks alive on
    /// every runtime, open sessions); `None` where there is no runtime to count.
    fn runtime_status(&self) -> Option<serde_json::Value> {
        None
    }
}
