//! leafgate: a WebAssembly-pluggable edge gateway.
//!
//! The modules stand in layers, and an import only points down (never up, never in a
//! circle: `tests/arch` checks it, with the order written once in its `LAYERS`). From the
//! top:
//!
//! | layer | modules | what they own |
//! |---|---|---|
//! | the whole | `gateway` (and the binary, `main.rs`) | sockets, the reload lock, shutdown |
//! | drivers | `admin`, `watch`, `controllers` | read the snapshot, act through `control`: the admin API, the file watcher, the root-cluster controllers (virtual nodes and election, the Ingress provider) |
//! | handle | `control` | the narrow handle drivers use (snapshot, reload, apply) |
//! | serving | `listener` | accept, TLS, one front per connection: routes, node API, kube API |
//! | shared state | `runtime` | what every connection task shares |
//! | config, compiled | `snapshot` | what reload swaps: routes, tenants, leaves, plugin instances |
//! | data paths | `proxy`, `k8s` | forward, upgrade, splice; leaf clients, the pod index, the kubelet URL grammar, log filtering, the Ingress model, Kubernetes `Status` |
//! | counting | `metrics` | the one registry everything records into |
//! | policy and parts | `plugins`, `routing`, `limit`, `access_log` | the WebAssembly runtime, the router, the rate limiters, the access log's lines and writer |
//! | config, typed | `config` | TOML -> raw -> validate -> model |
//! | bottom | `tls`, `errors`, `workers` | dialling servers, printing error chains, the serving threads |
//!
//! A request's path through them: `listener` (accept, TLS, HTTP) -> its front -> `routing`
//! -> `proxy` (with `limit`), or, on the Kubernetes fronts, `k8s` and `plugins`, with the
//! `snapshot` loaded once at the request's start.
//!
//! `unsafe` is denied crate-wide; the few items that need it (splice(2) and pipes, the
//! descriptor limit, loading a compiled plugin) allow it, each with its reason.

#![deny(unsafe_code)]

mod access_log;
mod admin;
mod config;
mod control;
mod controllers;
mod errors;
mod gateway;
mod k8s;
mod limit;
mod listener;
mod metrics;
pub mod plugins;
mod proxy;
mod routing;
mod runtime;
mod snapshot;
mod tls;
mod watch;
mod workers;

// The public surface: what the binary (`main.rs`), the test suites and the benches use,
// and nothing else, so that rustc finds whatever the crate itself no longer uses. The
// plugin runtime (`plugins`) is public as a whole: its `mod.rs` is its surface.
pub use config::{Config, ConfigErrors, ParseCache, token_lines};
pub use control::{Control, ListenerAddr, ReloadError};
pub use gateway::{Gateway, GatewayError};
pub use listener::raise_nofile_limit;
pub use metrics::{LogCounts, Metrics};
pub use snapshot::{BuildError, Snapshot};
pub use tls::provider as tls_provider;
pub use workers::count as serving_threads;

/// The Kubernetes parts the suites and benches drive without a gateway: the pod index,
/// the log filter stream and the Ingress model.
pub mod kubernetes {
    pub use crate::k8s::ingress::model::{Objects, Settings, TenantBounds};
    pub use crate::k8s::ingress::{Builder, Changes, Indexed, build};
    pub use crate::k8s::logs::{LogBatching, OnLogCounts, filter};
    pub use crate::k8s::{Held, LeafSlot, PodIndex, RawPod};
}

/// The forwarding headers, as the proxy writes them (for the headers bench).
pub mod forwarding {
    pub use crate::proxy::headers::{ClientSide, Peer, add_forwarded, strip_hop_by_hop};
}
