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
//! | policy and parts | `plugins`, `routing`, `limit` | the WebAssembly runtime, the router, the rate limiters |
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

pub mod admin;
pub mod config;
pub mod control;
pub mod controllers;
pub mod errors;
pub mod gateway;
pub mod k8s;
pub mod limit;
pub mod listener;
pub mod metrics;
pub mod plugins;
pub mod proxy;
pub mod routing;
pub mod runtime;
pub mod snapshot;
pub mod tls;
pub mod watch;
pub mod workers;

pub use gateway::{Gateway, GatewayError};
