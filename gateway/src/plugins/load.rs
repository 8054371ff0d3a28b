//! Loading plugins, off the hot path (startup, reload, `leafgate check`): the
//! `[tenant.plugins]` of a validated [`Config`] become a [`PluginSet`], every component
//! compiled (once per content hash, see `compile`), checked against the world its hook
//! expects, prepared for fast instantiation, and its first instance started (under the
//! hook's `startup` limit, so no call pays for a start-up). A component that is not a fit,
//! or whose start-up fails, is a [`ConfigError`] at its key.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::engine::runtime;
use super::fit::{Fit, Needs};
use super::hostlog::PluginLog;
use super::limits::Limits;
use super::metrics::PluginMetrics;
use super::pool::{Bindings, Pool};
use super::tenant::{Hook, TenantPlugins};
use super::world::World;
use crate::config::plugins::PluginConfig;
use crate::config::{Config, ConfigError};

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

/// True if the component in `path` is compiled and referenced by loaded plugins (a live
/// snapshot's); false once nothing loaded from those bytes is alive any more.
pub fn is_compiled(path: &Path) -> bool {
    match (runtime(), std::fs::read(path)) {
        (Ok(rt), Ok(bytes)) => rt.is_cached(&bytes),
        _ => false,
    }
}

/// How many times the component in `path` was built (compiled, or read from the disk
/// cache) in this process rather than found alive in the compile cache.
pub fn builds_of(path: &Path) -> u64 {
    match (runtime(), std::fs::read(path)) {
        (Ok(rt), Ok(bytes)) => rt.builds_of(&bytes),
        _ => 0,
    }
}

/// Compiles, checks and prepares every plugin the config names. Every problem is reported,
/// each at its plugin key's line:column. Compiled components are shared process-wide by
/// content, so a reload recompiles only files that changed.
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

pub(super) fn build_hook<B: Bindings>(
    tenant: &str,
    world: World,
    config: &PluginConfig,
    metrics: &PluginMetrics,
) -> Result<Hook<B>, String> {
    let rt = runtime()?;
    let component = rt.compile_file(&config.path)?;
    let pre = rt.prepare(&component, world)?;
    let name = plugin_name(&config.path);
    let limits = Limits {
        memory: config.memory.0 as usize,
        deadline: config.deadline,
        startup: config.startup,
        isolation: config.isolation,
        max_calls: config.max_calls,
        instances: config.instances,
    };
    let series = metrics.series(tenant, &name, world);
    let log = PluginLog::new(tenant, &name, series.log_dropped.clone());
    let pool = Pool::new(pre, limits, &config.config_json, log)?;
    let started = pool.warm_up()?;
    let fit = Fit {
        key: config.origin.key.clone(),
        plugin: name.clone(),
        world,
        needs: Needs {
            size: std::fs::metadata(&config.path).map_or(0, |m| m.len()),
            startup: started.time,
            memory: started.memory,
        },
        limits,
    };
    Ok(Hook {
        pool,
        fit,
        series,
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
