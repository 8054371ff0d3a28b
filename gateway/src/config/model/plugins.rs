//! `[tenant.plugins]`, typed: which WebAssembly component decides which policy for a
//! tenant, under which limits, and the bounds and defaults of those limits.
//!
//! The raw shape is in `raw::plugins` and its validation in `validate::plugins`. Nothing
//! here reads or compiles a component (that is `plugins::load`).

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::units::ByteSize;

/// Memory a plugin instance may use when the config does not say.
pub const DEFAULT_MEMORY: u64 = 64 << 20;
/// Time one plugin call may take when the config does not say.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(10);
/// How long a new instance's start-up (instantiating the component: an interpreter's
/// runtime, say) may run when the config does not say. Start-up is bounded by this, not
/// by a call's `deadline`: each hook starts an instance when it is loaded, off the
/// request path, and a call's deadline counts the call alone.
pub const DEFAULT_STARTUP: Duration = Duration::from_secs(1);
/// The most memory a config may grant one instance: the instance pool reserves address
/// space for this much per slot.
pub const MAX_MEMORY: u64 = 1 << 30;
/// The longest deadline a config may set: a plugin call sits on a request's critical path.
pub const MAX_DEADLINE: Duration = Duration::from_secs(10);
/// Calls a pooled instance serves before it is retired, when the config does not say: a
/// plugin that leaks memory or handles between calls cannot grow forever.
pub const DEFAULT_MAX_CALLS: u64 = 10_000;
/// The largest `max_calls` a config may set.
pub const MAX_MAX_CALLS: u64 = 10_000_000;
/// Instances (warm and busy) each hook of a tenant may hold at once, when the config does
/// not say (`[tenant.plugins] instances`).
pub const DEFAULT_INSTANCES: u64 = 8;
/// The largest `instances` a tenant may set.
pub const MAX_INSTANCES: u64 = 256;
/// Instance slots the whole config may claim: the sum over tenants of hooks x `instances`.
/// The plugin runtime's pool holds twice this many, so the old and the new generation fit
/// side by side during a reload; a config that needs more fails at load time, never as a
/// trap at call time.
pub const PLUGIN_SLOTS: u64 = 1000;

/// What a failed plugin call (trap, timeout, memory cap, invalid answer) does.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnError {
    /// The request fails with a 5xx that names the plugin. Safe for policy that must hold
    /// (a redaction filter that failed must not let secrets through).
    #[default]
    Reject,
    /// Behave as if no plugin were configured for this hook.
    Default,
}

/// How instances are reused between calls.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    /// Warm instances are kept and reused; one that failed is thrown away.
    #[default]
    Pooled,
    /// A fresh instance for every call: no state survives from one call to the next.
    PerCall,
}

/// One configured plugin, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginConfig {
    /// The component file, resolved against the config file's folder.
    pub path: PathBuf,
    /// The plugin's `config` table as JSON text (`{}` when none is given).
    pub config_json: String,
    pub on_error: OnError,
    pub memory: ByteSize,
    pub deadline: Duration,
    /// How long a new instance's start-up may run (`startup`).
    pub startup: Duration,
    pub isolation: Isolation,
    /// Calls a pooled instance serves before it is dropped and a fresh one made.
    pub max_calls: u64,
    /// Instances of this hook alive at once (idle and busy); a call waits for one.
    pub instances: u64,
    /// Where the plugin is named in the config file, for errors found when it is loaded.
    pub origin: PluginOrigin,
}

/// The place of a plugin key in the config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginOrigin {
    pub file: PathBuf,
    /// 1-based line and column of the value.
    pub position: Option<(usize, usize)>,
    /// `tenant[0].plugins.pod_router`.
    pub key: String,
}

/// A tenant's plugins, one optional per world.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PluginsConfig {
    pub pod_router: Option<PluginConfig>,
    pub address_rewriter: Option<PluginConfig>,
    pub log_filter: Option<PluginConfig>,
    pub table_formatter: Option<PluginConfig>,
}

impl PluginsConfig {
    pub fn is_empty(&self) -> bool {
        self.pod_router.is_none()
            && self.address_rewriter.is_none()
            && self.log_filter.is_none()
            && self.table_formatter.is_none()
    }
}
