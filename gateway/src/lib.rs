//! leafgate: a WebAssembly-pluggable edge gateway.
//!
//! The modules follow a request's path: `config` (TOML to typed config) -> `snapshot`
//! (the compiled, immutable state that reload swaps) -> `listener` (accept, TLS, HTTP) ->
//! `routing` -> `proxy` (forward, upgrade, splice) with `limit` -> `admin`. `gateway` holds
//! the running whole together; `metrics` is the one registry they all record into.

pub mod admin;
pub mod config;
pub mod gateway;
pub mod limit;
pub mod listener;
pub mod metrics;
pub mod plugins;
pub mod proxy;
pub mod routing;
pub mod snapshot;
pub mod watch;

pub use gateway::{Gateway, GatewayError};
