//! One tenant's plugins on the hot path: [`TenantPlugins`] runs one call per decision in
//! the sandbox (a warm instance from the hook's pool, the request converted in, the answer
//! checked out) and applies the hook's failure policy (`on_error`).
//!
//! Never decides anything itself, and never lets a plugin's failure escape its one call:
//! a failure is either the default decision or a [`PluginError`], as the hook's policy says.

use std::sync::Arc;
use std::time::Instant;

use super::api::{
    AddressRewriteRequest, LogBatch, LogContext, NodeAddress, PodRoute, PodRouteRequest, Table,
    TableRequest, Verdict, apply_verdicts,
};
use super::bindings;
use super::compile::Compiled;
use super::convert;
use super::error::{Fault, PluginError};
use super::fit::Fit;
use super::metrics;
use super::pool::{Bindings, Pool};
use super::world::World;
use crate::config::plugins::OnError;

/// One hook of one tenant: a pool of the plugin's instances, its policy and its metrics.
pub(crate) struct Hook<B: Bindings> {
    pub(super) name: String,
    pub(super) world: World,
    pub(super) on_error: OnError,
    pub(super) pool: Pool<B>,
    /// What the plugin took to load against its limits (`leafgate check` prints it).
    pub(super) fit: Fit,
    pub(super) series: metrics::Series,
    /// Keeps the compiled component in the compile cache while this hook is alive.
    pub(super) _compiled: Arc<Compiled>,
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
    pub(super) pod_router: Option<Hook<bindings::pod_router::PodRouter>>,
    pub(super) address_rewriter: Option<Hook<bindings::address_rewriter::AddressRewriter>>,
    pub(super) log_filter: Option<Hook<bindings::log_filter::LogFilter>>,
    pub(super) table_formatter: Option<Hook<bindings::table_formatter::TableFormatter>>,
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

    /// Each configured hook's needs against its limits, in world order.
    pub fn fits(&self) -> Vec<Fit> {
        [
            self.pod_router.as_ref().map(|h| &h.fit),
            self.address_rewriter.as_ref().map(|h| &h.fit),
            self.log_filter.as_ref().map(|h| &h.fit),
            self.table_formatter.as_ref().map(|h| &h.fit),
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect()
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
            let wit_req = convert::fill_route_request(&mut warm.scratch, &self.tenant, req);
            let answer = warm.bindings.call_route(&mut warm.store, wit_req).await;
            hook.pool
                .finish(warm, answer, |d| convert::pod_route(req, d))
        }
        .await;
        Ok(hook
            .settle(&self.tenant, started, outcome)?
            .unwrap_or(PodRoute::Default))
    }

    /// Whether the tenant configured a `pod_router` (else [`route_pod`](Self::route_pod)
    /// answers `PodRoute::Default` without looking at its request).
    pub fn has_pod_router(&self) -> bool {
        self.pod_router.is_some()
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
            let wit_req = convert::address_request(&self.tenant, req);
            let answer = warm.bindings.call_rewrite(&mut warm.store, &wit_req).await;
            hook.pool.finish(warm, answer, convert::node_addresses)
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
            let wit_ctx = convert::log_context(&self.tenant, ctx);
            let answer = warm
                .bindings
                .call_filter(&mut warm.store, &wit_ctx, batch.text())
                .await;
            hook.pool
                .finish(warm, answer, |v| convert::verdicts(lines, v))
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
    pub async fn format_table(&self, req: TableRequest) -> Result<Option<Table>, PluginError> {
        let Some(hook) = &self.table_formatter else {
            return Ok(None);
        };
        let started = Instant::now();
        let outcome = async {
            let mut warm = hook.pool.checkout(started).await?;
            let wit_req = convert::table_request(&self.tenant, req);
            let answer = warm.bindings.call_format(&mut warm.store, &wit_req).await;
            hook.pool.finish(warm, answer, convert::table)
        }
        .await;
        Ok(hook.settle(&self.tenant, started, outcome)?.flatten())
    }
}
