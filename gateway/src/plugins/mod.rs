//! Policy plugins: per-tenant WebAssembly components that decide pod routing, node
//! addresses, log filtering and table printing.
//!
//! `load` turns the `[tenant.plugins]` of a validated [`Config`] into a [`PluginSet`]: every
//! component compiled (once per content hash, see `runtime`), checked against the world its
//! hook expects, and prepared for fast instantiation. This runs off the hot path (startup,
//! reload, `leafgate check`); a component that is not a fit is a [`ConfigError`] at its key.
//! On the hot path, [`TenantPlugins`] runs one call per decision in the sandbox and applies
//! the tenant's failure policy (`on_error`). This module never decides anything itself, and
//! never lets a plugin's failure escape its one call.

mod api;
mod bindings;
pub mod cli;
mod metrics;
mod runtime;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use http::StatusCode;

use crate::config::plugins::{OnError, PluginConfig};
use crate::config::{Config, ConfigError};

pub use api::{
    AddressRewriteRequest, AddressType, Cell, ColumnDefinition, LogBatch, LogContext,
    NewlineInLine, NodeAddress, PodRoute, PodRouteRequest, Table, TableRequest, Verb, Verdict,
    apply_verdicts,
};
pub use metrics::PluginMetrics;

use runtime::{Bindings, Fault, Limits, Pool};

/// The four kinds of decision, each a WIT world in `wit/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum World {
    PodRouter,
    AddressRewriter,
    LogFilter,
    TableFormatter,
}

impl World {
    pub const ALL: [World; 4] = [
        World::PodRouter,
        World::AddressRewriter,
        World::LogFilter,
        World::TableFormatter,
    ];

    /// The world's name in `wit/`.
    pub fn name(self) -> &'static str {
        match self {
            World::PodRouter => "pod-router",
            World::AddressRewriter => "address-rewriter",
            World::LogFilter => "log-filter",
            World::TableFormatter => "table-formatter",
        }
    }

    /// The function the world exports.
    pub fn export(self) -> &'static str {
        match self {
            World::PodRouter => "route",
            World::AddressRewriter => "rewrite",
            World::LogFilter => "filter",
            World::TableFormatter => "format",
        }
    }

    /// The exported function's WIT signature, for error messages.
    pub fn signature(self) -> &'static str {
        match self {
            World::PodRouter => "route: func(req: route-request) -> route-decision",
            World::AddressRewriter => "rewrite: func(req: address-request) -> list<node-address>",
            World::LogFilter => "filter: func(ctx: log-context, lines: string) -> verdicts",
            World::TableFormatter => "format: func(req: table-request) -> option<table>",
        }
    }

    /// Type-checks the world's exports against a prepared component.
    fn check_exports(
        self,
        pre: &wasmtime::component::InstancePre<runtime::State>,
    ) -> wasmtime::Result<()> {
        match self {
            World::PodRouter => bindings::pod_router::PodRouter::pre(pre.clone()).map(drop),
            World::AddressRewriter => {
                bindings::address_rewriter::AddressRewriter::pre(pre.clone()).map(drop)
            }
            World::LogFilter => bindings::log_filter::LogFilter::pre(pre.clone()).map(drop),
            World::TableFormatter => {
                bindings::table_formatter::TableFormatter::pre(pre.clone()).map(drop)
            }
        }
    }
}

impl std::fmt::Display for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why one plugin call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// The plugin trapped (a panic, `unreachable`, an out-of-bounds access...).
    Trap = 0,
    /// The call ran past its deadline and was interrupted.
    Timeout = 1,
    /// The plugin tried to grow its memory past its cap.
    Memory = 2,
    /// The plugin answered out of contract (unknown leaf, wrong number of verdicts...).
    InvalidAnswer = 3,
}

impl FaultKind {
    pub const ALL: [FaultKind; 4] = [
        FaultKind::Trap,
        FaultKind::Timeout,
        FaultKind::Memory,
        FaultKind::InvalidAnswer,
    ];

    /// The `kind` label in metrics.
    pub fn label(self) -> &'static str {
        match self {
            FaultKind::Trap => "trap",
            FaultKind::Timeout => "timeout",
            FaultKind::Memory => "memory",
            FaultKind::InvalidAnswer => "invalid_answer",
        }
    }
}

impl std::fmt::Display for FaultKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// A plugin error, as the rest of the gateway and the CLI see it.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// One call failed and the hook's policy is `on_error = "reject"`.
    #[error("plugin `{plugin}` ({hook}) of tenant `{tenant}` failed: {kind}: {message}")]
    Call {
        tenant: String,
        plugin: String,
        hook: World,
        kind: FaultKind,
        message: String,
    },
    /// A component could not be read, compiled or fitted to its world.
    #[error("{}: {message}", path.display())]
    Load { path: PathBuf, message: String },
    /// The plugin runtime itself could not start.
    #[error("{0}")]
    Runtime(String),
    /// A `leafgate plugin run` request could not be read.
    #[error("invalid request: {0}")]
    Request(String),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

impl PluginError {
    /// The HTTP status a request that this error failed should get: 504 when the plugin
    /// ran out of time, 502 when it misbehaved otherwise, 500 when the gateway itself did.
    pub fn status(&self) -> StatusCode {
        match self {
            PluginError::Call {
                kind: FaultKind::Timeout,
                ..
            } => StatusCode::GATEWAY_TIMEOUT,
            PluginError::Call { .. } => StatusCode::BAD_GATEWAY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// One hook of one tenant: a pool of the plugin's instances, its policy and its metrics.
struct Hook<B: Bindings> {
    name: String,
    world: World,
    on_error: OnError,
    pool: Pool<B>,
    series: metrics::Series,
    /// Keeps the compiled component in the compile cache while this hook is alive.
    _compiled: Arc<runtime::Compiled>,
}

impl<B: Bindings> Hook<B> {
    /// Accounts for one call's outcome and applies the failure policy: `Ok(None)` means
    /// "behave as if no plugin were configured".
    fn settle<T>(
        &self,
        tenant: &str,
        started: Instant,
        outcome: Result<T, Fault>,
    ) -> Result<Option<T>, PluginError> {
        self.series.calls.inc();
        self.series
            .duration
            .observe(started.elapsed().as_secs_f64());
        match outcome {
            Ok(v) => Ok(Some(v)),
            Err(fault) => {
                self.series.error(fault.kind);
                tracing::warn!(
                    tenant,
                    plugin = %self.name,
                    hook = %self.world,
                    kind = %fault.kind,
                    on_error = ?self.on_error,
                    error = %fault.message,
                    "plugin call failed"
                );
                match self.on_error {
                    OnError::Default => Ok(None),
                    OnError::Reject => Err(PluginError::Call {
                        tenant: tenant.to_string(),
                        plugin: self.name.clone(),
                        hook: self.world,
                        kind: fault.kind,
                        message: fault.message,
                    }),
                }
            }
        }
    }
}

/// One tenant's plugins: immutable, shared by every request of a snapshot.
pub struct TenantPlugins {
    tenant: String,
    pod_router: Option<Hook<bindings::pod_router::PodRouter>>,
    address_rewriter: Option<Hook<bindings::address_rewriter::AddressRewriter>>,
    log_filter: Option<Hook<bindings::log_filter::LogFilter>>,
    table_formatter: Option<Hook<bindings::table_formatter::TableFormatter>>,
}

impl std::fmt::Debug for TenantPlugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = |h: Option<&str>| h.map(str::to_string);
        f.debug_struct("TenantPlugins")
            .field("tenant", &self.tenant)
            .field(
                "pod_router",
                &name(self.pod_router.as_ref().map(|h| h.name.as_str())),
            )
            .field(
                "address_rewriter",
                &name(self.address_rewriter.as_ref().map(|h| h.name.as_str())),
            )
            .field(
                "log_filter",
                &name(self.log_filter.as_ref().map(|h| h.name.as_str())),
            )
            .field(
                "table_formatter",
                &name(self.table_formatter.as_ref().map(|h| h.name.as_str())),
            )
            .finish()
    }
}

impl TenantPlugins {
    /// A tenant with no plugins: every decision is the default one.
    pub fn none(tenant: &str) -> Self {
        TenantPlugins {
            tenant: tenant.to_string(),
            pod_router: None,
            address_rewriter: None,
            log_filter: None,
            table_formatter: None,
        }
    }

    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Which leaf serves this pod request. `PodRoute::Default` when no plugin is
    /// configured, the plugin said so, or it failed under `on_error = "default"`.
    pub async fn route_pod(&self, req: &PodRouteRequest) -> Result<PodRoute, PluginError> {
        let Some(hook) = &self.pod_router else {
            return Ok(PodRoute::Default);
        };
        let started = Instant::now();
        let outcome = async {
            let mut warm = hook.pool.checkout(started).await?;
            let wit_req = api::fill_route_request(&mut warm.scratch, &self.tenant, req);
            let answer = warm.bindings.call_route(&mut warm.store, wit_req).await;
            hook.pool.finish(warm, answer, |d| api::pod_route(req, d))
        }
        .await;
        Ok(hook
            .settle(&self.tenant, started, outcome)?
            .unwrap_or(PodRoute::Default))
    }

    /// Whether the tenant configured an `address_rewriter` (else virtual nodes use the
    /// built-in preferred-address rule).
    pub fn has_address_rewriter(&self) -> bool {
        self.address_rewriter.is_some()
    }

    /// The `status.addresses` a virtual node publishes: the request's own addresses when
    /// no plugin is configured or it failed under `on_error = "default"`.
    pub async fn rewrite_addresses(
        &self,
        req: &AddressRewriteRequest,
    ) -> Result<Vec<NodeAddress>, PluginError> {
        let Some(hook) = &self.address_rewriter else {
            return Ok(req.addresses.clone());
        };
        let started = Instant::now();
        let outcome = async {
            let mut warm = hook.pool.checkout(started).await?;
            let wit_req = api::address_request(&self.tenant, req);
            let answer = warm.bindings.call_rewrite(&mut warm.store, &wit_req).await;
            hook.pool.finish(warm, answer, api::node_addresses)
        }
        .await;
        Ok(hook
            .settle(&self.tenant, started, outcome)?
            .unwrap_or_else(|| req.addresses.clone()))
    }

    /// One verdict per line of `batch`, in order; all `Keep` when no plugin is configured
    /// or it failed under `on_error = "default"`.
    pub async fn log_verdicts(
        &self,
        ctx: &LogContext,
        batch: &LogBatch,
    ) -> Result<Vec<Verdict>, PluginError> {
        let lines = batch.len();
        let Some(hook) = self.log_filter.as_ref().filter(|_| lines > 0) else {
            return Ok(vec![Verdict::Keep; lines]);
        };
        let started = Instant::now();
        let outcome = async {
            let mut warm = hook.pool.checkout(started).await?;
            let wit_ctx = api::log_context(&self.tenant, ctx);
            let answer = warm
                .bindings
                .call_filter(&mut warm.store, &wit_ctx, batch.text())
                .await;
            hook.pool.finish(warm, answer, |v| api::verdicts(lines, v))
        }
        .await;
        Ok(hook
            .settle(&self.tenant, started, outcome)?
            .unwrap_or_else(|| vec![Verdict::Keep; lines]))
    }

    /// The lines that remain after the tenant's log-filter: kept, replaced, or dropped.
    /// A line may not contain a newline (see [`LogBatch`]).
    pub async fn filter_logs(
        &self,
        ctx: &LogContext,
        lines: Vec<String>,
    ) -> Result<Vec<String>, PluginError> {
        if self.log_filter.is_none() {
            return Ok(lines);
        }
        let batch = LogBatch::from_lines(&lines).map_err(|e| {
            let at = lines.iter().position(|l| l.contains('\n')).unwrap_or(0);
            PluginError::Request(format!("line {}: {e}", at + 1))
        })?;
        let verdicts = self.log_verdicts(ctx, &batch).await?;
        Ok(apply_verdicts(lines, verdicts))
    }

    /// True when the tenant has a `table_formatter`: callers skip building its input
    /// (every object as JSON text) when it has none.
    pub fn has_table_formatter(&self) -> bool {
        self.table_formatter.is_some()
    }

    /// The table for these objects; `None` means "print the default table" (no plugin,
    /// the plugin declined, or it failed under `on_error = "default"`).
    pub async fn format_table(&self, req: &TableRequest) -> Result<Option<Table>, PluginError> {
        let Some(hook) = &self.table_formatter else {
            return Ok(None);
        };
        let started = Instant::now();
        let outcome = async {
            let mut warm = hook.pool.checkout(started).await?;
            let wit_req = api::table_request(&self.tenant, req);
            let answer = warm.bindings.call_format(&mut warm.store, &wit_req).await;
            hook.pool.finish(warm, answer, api::table)
        }
        .await;
        Ok(hook.settle(&self.tenant, started, outcome)?.flatten())
    }
}

/// Every tenant's plugins, built from one config. Tenants without plugins are present
/// with none, so a lookup by a configured tenant never misses.
#[derive(Debug, Default)]
pub struct PluginSet {
    tenants: HashMap<String, Arc<TenantPlugins>>,
}

impl PluginSet {
    pub fn tenant(&self, name: &str) -> Option<&Arc<TenantPlugins>> {
        self.tenants.get(name)
    }

    pub fn tenants(&self) -> impl Iterator<Item = &Arc<TenantPlugins>> {
        self.tenants.values()
    }

    /// Moves one tenant's plugins out (the snapshot keeps them with the tenant).
    pub fn take(&mut self, name: &str) -> Option<Arc<TenantPlugins>> {
        self.tenants.remove(name)
    }
}

/// Compiles, checks and prepares every plugin the config names. Every problem is reported,
/// each at its plugin key's line:column. Compiled components are shared process-wide by
/// content, so a reload recompiles only files that changed.
/// True if the component in `path` is compiled and referenced by loaded plugins (a live
/// snapshot's); false once nothing loaded from those bytes is alive any more.
pub fn is_compiled(path: &std::path::Path) -> bool {
    match (runtime::runtime(), std::fs::read(path)) {
        (Ok(rt), Ok(bytes)) => rt.is_cached(&bytes),
        _ => false,
    }
}

/// How many times the component in `path` was built (compiled, or read from the disk
/// cache) in this process rather than found alive in the compile cache.
pub fn builds_of(path: &std::path::Path) -> u64 {
    match (runtime::runtime(), std::fs::read(path)) {
        (Ok(rt), Ok(bytes)) => rt.builds_of(&bytes),
        _ => 0,
    }
}

pub fn load(config: &Config, metrics: &PluginMetrics) -> Result<PluginSet, Vec<ConfigError>> {
    let (set, errors) = load_partial(config, metrics);
    if errors.is_empty() {
        Ok(set)
    } else {
        Err(errors)
    }
}

/// Like [`load`], but keeps going: the set holds every tenant whose plugins all loaded,
/// and the errors say why the others did not. A reload uses this to keep a failing
/// tenant's previous plugins while the other tenants get their new ones.
pub fn load_partial(config: &Config, metrics: &PluginMetrics) -> (PluginSet, Vec<ConfigError>) {
    let mut errors = Vec::new();
    let mut set = PluginSet::default();
    for t in &config.tenants {
        let p = &t.plugins;
        let before = errors.len();
        let mut out = TenantPlugins::none(&t.name);
        out.pod_router = hook(
            &t.name,
            World::PodRouter,
            p.pod_router.as_ref(),
            metrics,
            &mut errors,
        );
        out.address_rewriter = hook(
            &t.name,
            World::AddressRewriter,
            p.address_rewriter.as_ref(),
            metrics,
            &mut errors,
        );
        out.log_filter = hook(
            &t.name,
            World::LogFilter,
            p.log_filter.as_ref(),
            metrics,
            &mut errors,
        );
        out.table_formatter = hook(
            &t.name,
            World::TableFormatter,
            p.table_formatter.as_ref(),
            metrics,
            &mut errors,
        );
        if errors.len() == before {
            set.tenants.insert(t.name.clone(), Arc::new(out));
        }
    }
    (set, errors)
}

/// `load` for `leafgate check`: the same work, with metrics nobody reads.
pub fn check(config: &Config) -> Result<PluginSet, Vec<ConfigError>> {
    load(config, &PluginMetrics::default())
}

fn hook<B: Bindings>(
    tenant: &str,
    world: World,
    config: Option<&PluginConfig>,
    metrics: &PluginMetrics,
    errors: &mut Vec<ConfigError>,
) -> Option<Hook<B>> {
    let config = config?;
    match build_hook(tenant, world, config, metrics) {
        Ok(h) => Some(h),
        Err(message) => {
            errors.push(ConfigError {
                file: config.origin.file.clone(),
                position: config.origin.position,
                key: config.origin.key.clone(),
                message: format!(
                    "plugin {} does not fit the {world} world: {message}",
                    config.path.display()
                ),
            });
            None
        }
    }
}

fn build_hook<B: Bindings>(
    tenant: &str,
    world: World,
    config: &PluginConfig,
    metrics: &PluginMetrics,
) -> Result<Hook<B>, String> {
    let rt = runtime::runtime()?;
    let component = rt.compile_file(&config.path)?;
    let pre = rt.prepare(&component, world)?;
    let name = plugin_name(&config.path);
    let limits = Limits {
        memory: config.memory.0 as usize,
        deadline: config.deadline,
        isolation: config.isolation,
        max_calls: config.max_calls,
        instances: config.instances,
    };
    Ok(Hook {
        pool: Pool::new(pre, limits, &config.config_json, tenant, &name)?,
        series: metrics.series(tenant, &name, world),
        name,
        world,
        on_error: config.on_error,
        _compiled: component,
    })
}

/// A plugin's name in logs, metrics and errors: its file name without `.wasm`.
fn plugin_name(path: &Path) -> String {
    path.file_stem().map_or_else(
        || path.display().to_string(),
        |s| s.to_string_lossy().into_owned(),
    )
}
