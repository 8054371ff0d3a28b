//! One plugin, loaded as the one hook of a tenant, asked one decision at a time: what
//! `leafgate plugin run` and `plugin test` do, through the gateway's own code (`load`'s
//! hook, `TenantPlugins` with its sandbox and limits), never a second runner.
//!
//! Owns the shapes a decision is asked and printed in on the command line (JSON, and for
//! a log-filter a list of lines).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::config::plugins::{
    DEFAULT_DEADLINE, DEFAULT_INSTANCES, DEFAULT_MAX_CALLS, DEFAULT_MEMORY, DEFAULT_STARTUP,
    Isolation, OnError, PluginConfig, PluginOrigin,
};
use crate::config::units::ByteSize;

use super::api::{LogContext, TableRequest};
use super::error::PluginError;
use super::load::build_hook;
use super::metrics::PluginMetrics;
use super::tenant::TenantPlugins;
use super::world::World;

/// Lines sent to a log-filter per call, as the gateway batches a log stream.
pub const LOG_BATCH: usize = 256;

/// Limits for a call, as a tenant's config would set them.
#[derive(Debug, Clone, Copy)]
pub struct RunLimits {
    pub memory: ByteSize,
    pub deadline: Duration,
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            memory: ByteSize(DEFAULT_MEMORY),
            deadline: DEFAULT_DEADLINE,
        }
    }
}

/// `path` loaded as tenant `tenant`'s `world` hook with `config_json`, under `limits`,
/// failing a call instead of defaulting (the point is to see failures), in the pooled
/// isolation the gateway runs by default.
pub fn load(
    path: &Path,
    world: World,
    tenant: &str,
    config_json: &str,
    limits: RunLimits,
) -> Result<TenantPlugins, PluginError> {
    let plugin = PluginConfig {
        path: path.to_path_buf(),
        config_json: config_json.to_string(),
        on_error: OnError::Reject,
        memory: limits.memory,
        deadline: limits.deadline,
        startup: DEFAULT_STARTUP,
        isolation: Isolation::Pooled,
        max_calls: DEFAULT_MAX_CALLS,
        instances: DEFAULT_INSTANCES,
        origin: PluginOrigin {
            file: path.to_path_buf(),
            position: None,
            key: "--world".into(),
        },
    };
    let metrics = PluginMetrics::default();
    let load = |message| PluginError::Load {
        path: path.to_path_buf(),
        message,
    };
    let mut t = TenantPlugins::none(tenant);
    match world {
        World::PodRouter => {
            t.pod_router = Some(build_hook(tenant, world, &plugin, &metrics).map_err(load)?)
        }
        World::AddressRewriter => {
            t.address_rewriter = Some(build_hook(tenant, world, &plugin, &metrics).map_err(load)?);
        }
        World::LogFilter => {
            t.log_filter = Some(build_hook(tenant, world, &plugin, &metrics).map_err(load)?)
        }
        World::TableFormatter => {
            t.table_formatter = Some(build_hook(tenant, world, &plugin, &metrics).map_err(load)?);
        }
    }
    Ok(t)
}

/// Takes the optional `"tenant"` out of a request (default `cli`): the tenant the call is
/// made for.
pub fn take_tenant(request: &mut Value) -> String {
    request
        .as_object_mut()
        .and_then(|o| o.remove("tenant"))
        .and_then(|t| t.as_str().map(str::to_string))
        .unwrap_or_else(|| "cli".into())
}

/// One decision of `tenant`'s `world` hook on `request`, as `plugin run` prints it: JSON
/// for pod-router, address-rewriter and table-formatter; for a log-filter, `request` is
/// the lines (a list, or one text of `\n`-joined lines), sent in batches as the gateway
/// sends them, and the answer the lines that remain.
pub async fn decide(
    tenant: &TenantPlugins,
    world: World,
    request: Value,
) -> Result<Value, PluginError> {
    let request_error =
        |e: serde_json::Error| PluginError::Request(format!("not a {world} request: {e}"));
    let answer = match world {
        World::PodRouter => {
            let req = serde_json::from_value(request).map_err(request_error)?;
            serde_json::to_value(tenant.route_pod(&req).await?)
        }
        World::AddressRewriter => {
            let req = serde_json::from_value(request).map_err(request_error)?;
            serde_json::to_value(tenant.rewrite_addresses(&req).await?)
        }
        World::TableFormatter => {
            let req = table_request(request).map_err(request_error)?;
            serde_json::to_value(tenant.format_table(req).await?)
        }
        World::LogFilter => {
            let lines: Vec<String> = match request {
                Value::String(text) => text.split('\n').map(str::to_string).collect(),
                other => serde_json::from_value(other).map_err(request_error)?,
            };
            let mut kept = Vec::with_capacity(lines.len());
            for batch in lines.chunks(LOG_BATCH) {
                let ctx = LogContext::default();
                kept.extend(tenant.filter_logs(&ctx, batch.to_vec()).await?);
            }
            serde_json::to_value(kept)
        }
    };
    answer.map_err(|e| PluginError::Request(format!("cannot print the decision: {e}")))
}

/// A table request: either the request itself (with `objects` as a JSON array or as JSON
/// text), or a Kubernetes list (`kubectl get pods -o json`), whose kind names the
/// resource.
fn table_request(mut value: Value) -> Result<TableRequest, serde_json::Error> {
    use serde::de::Error;
    let list_kind = value
        .get("kind")
        .and_then(|k| k.as_str())
        .and_then(|k| k.strip_suffix("List"))
        .map(str::to_string);
    if let Some(kind) = list_kind.filter(|_| value.get("items").is_some()) {
        let api_version = value
            .get("apiVersion")
            .and_then(|v| v.as_str())
            .unwrap_or("v1");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return Ok(TableRequest {
            group: group.to_string(),
            version: version.to_string(),
            resource: format!("{}s", kind.to_ascii_lowercase()),
            wide: false,
            objects: value["items"].to_string(),
        });
    }
    if let Some(objects) = value.get_mut("objects")
        && !objects.is_string()
    {
        *objects = Value::String(objects.to_string());
    }
    if value.get("objects").is_none() {
        return Err(serde_json::Error::custom(
            "missing `objects` (a JSON array of the objects to print)",
        ));
    }
    serde_json::from_value(value)
}
