//! leafgate: a WebAssembly-pluggable edge gateway.
//!
//! The modules follow a request's path: `config` (TOML to typed config) -> `snapshot`
//! (the compiled, immutable state that reload swaps) -> `listener` (accept, TLS, HTTP) ->
//! `routing` -> `proxy` (forward, upgrade, splice) with `limit`. `metrics` is the one
//! registry they all record into.
//!
//! Arrows point one way. At the bottom, `runtime` holds the state every connection task
//! shares and `workers` the serving threads. `gateway` owns the running whole (sockets,
//! reload, shutdown) and starts `listener`, `admin` and `watch`; admin and the watcher see
//! it only through the narrow `control::Control` handle, never the gateway itself.

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
