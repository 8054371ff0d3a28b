//! leafgate: a WebAssembly-pluggable edge gateway.
//!
//! The modules follow a request's path: `config` (TOML to typed config) -> `snapshot`
//! (the compiled, immutable state that reload swaps) -> `listener` (accept, TLS, HTTP) ->
//! `routing` -> `proxy` (forward, upgrade, splice) with `limit` -> `admin`.

pub mod config;
pub mod plugins;
