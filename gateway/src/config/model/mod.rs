//! The typed config: what a validated file says, with every file it names loaded. Built
//! by `validate`; read by everything past the config layer, never changed after.
//!
//! The bottom layer of `config`: nothing here imports from the rest of it (the raw shapes
//! and validation import from here, never the reverse). One file per section (listeners,
//! tenants, leaves, routes, the root cluster, plugins, timeouts), and the value types the
//! sections share (`units`, `cidr`, `tls`). Each file imports only its siblings.

mod access_log;
pub mod cidr;
mod host;
pub mod kinds;
mod kubernetes;
mod leaf;
mod listener;
pub mod plugins;
mod request_id;
mod route;
mod tenant;
mod timeouts;
mod tls;
pub mod units;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

pub use access_log::*;
pub use host::*;
pub use kubernetes::*;
pub use leaf::*;
pub use listener::*;
pub use request_id::*;
pub use route::*;
pub use tenant::*;
pub use timeouts::*;
pub use tls::*;

/// A validated config: what the file says, with every named file loaded.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file this came from.
    pub path: PathBuf,
    pub admin: Option<AdminConfig>,
    pub timeouts: Timeouts,
    pub listeners: Vec<ListenerConfig>,
    pub tenants: Vec<TenantConfig>,
    pub leaves: Vec<LeafConfig>,
    /// Shared, so that the reloader's parse cache can hand a route that did not change to
    /// the next config without validating or copying it again.
    pub routes: Vec<Arc<RouteConfig>>,
    /// `[kubernetes]`: the root cluster virtual nodes are published in.
    pub kubernetes: Option<KubernetesConfig>,
    pub virtual_nodes: Vec<VirtualNodeConfig>,
    /// `[access_log]` and the listeners' own.
    pub access_log: AccessLogs,
    /// `[request_id]`: `None` when requests get no ID.
    pub request_id: Option<RequestIdConfig>,
    /// `[tracing] propagate`: W3C `traceparent` passed on, or started (`proxy::trace`).
    pub propagate_trace: bool,
    /// Every file the config names (certificates, keys, kubeconfigs): reload watches them.
    pub files: BTreeSet<PathBuf>,
    /// What validation found risky but not wrong (short tokens), each as
    /// `file:line:column: key: message`: `leafgate check` prints them, `run` logs them,
    /// `/status` lists them.
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminConfig {
    pub bind: SocketAddr,
    /// `tokens_file`: the bearer tokens that open `/status` and `POST /reload` to a peer
    /// that is not loopback. `None`: no file, only loopback peers get them.
    pub tokens: Option<Tokens>,
}
