//! Policy plugins: per-tenant WebAssembly components that decide pod routing, node
//! addresses, log filtering and table printing.
//!
//! `load` turns the `[tenant.plugins]` of a validated `Config` into a [`PluginSet`]: every
//! component compiled (once per content hash), checked against the world its hook
//! expects, and prepared for fast instantiation. This runs off the hot path (startup,
//! reload, `leafgate check`); a component that is not a fit is a `ConfigError` at its key.
//! On the hot path, [`TenantPlugins`] runs one call per decision in the sandbox and applies
//! the tenant's failure policy (`on_error`). This module never decides anything itself, and
//! never lets a plugin's failure escape its one call.
//!
//! Layout, top to bottom (a file imports only files below it; this one only re-exports):
//! - `cli`: `leafgate plugin check|run|test|new|sdk`, through the same code as the
//!   gateway; `trial`: `plugin test`'s run over a cases file (`cases` reads it);
//!   `scaffold`: the projects `plugin new` writes (`samples`: their sample and cases);
//!   `kit`: the WIT and SDKs this binary carries, and writing an SDK package out.
//! - `oneshot`: one plugin as a tenant's one hook, one decision at a time (`plugin run`
//!   and `plugin test`).
//! - `load`: config -> [`PluginSet`] (compile, fit, build each hook).
//! - `tenant`: [`TenantPlugins`], one call per decision and the `on_error` policy.
//! - `convert`: `api` types <-> the generated WIT types, answers checked.
//! - `pool`: warm instances per hook, start-up, checkout and retirement; `fit`: what a
//!   hook took to load against its limits (`leafgate check` prints it).
//! - `engine`: the one `Engine`, its linker, fitting a component to a world.
//! - `sandbox`: a store's state (closed WASI, `host`), arming it, classifying a failure;
//!   `nohttp`: its `wasi:http`, every outgoing request refused.
//! - `compile` (content-hash and disk cache), `epoch` (ticker, per-call clock), `limits`
//!   (memory cap, resources), `stderr` (a plugin's stderr tail), `hostlog` (what its
//!   `host.log` writes: escaped, bounded, rate-limited), `metrics`.
//! - `api` (the decisions as plain Rust types), `bindings` (generated from `wit/`),
//!   `error`, `world`: vocabulary, importing nothing above.
//!
//! From outside, `plugins` imports only `crate::config`.

mod api;
mod bindings;
mod cases;
pub mod cli;
mod compile;
mod convert;
mod engine;
mod epoch;
mod error;
mod fit;
mod hostlog;
mod kit;
mod limits;
mod load;
mod metrics;
mod nohttp;
mod oneshot;
mod pool;
mod samples;
mod sandbox;
mod scaffold;
mod stderr;
mod tenant;
mod trial;
mod world;

pub use api::{
    AddressRewriteRequest, AddressType, Cell, ColumnDefinition, LogBatch, LogContext,
    NewlineInLine, NodeAddress, PodRoute, PodRouteRequest, Table, TableRequest, Verb, Verdict,
    apply_verdicts,
};
pub use error::{FaultKind, PluginError};
pub use fit::Fit;
pub use kit::Lang;
pub use load::{PluginSet, builds_of, check, is_compiled, load, load_partial};
pub use metrics::PluginMetrics;
pub use scaffold::Skeleton;
pub use tenant::TenantPlugins;
pub use world::World;
