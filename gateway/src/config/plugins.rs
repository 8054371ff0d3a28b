//! `[tenant.plugins]`: which WebAssembly component decides which policy for a tenant, and
//! under which limits.
//!
//! This module owns the raw TOML shape and its validation into [`TenantPlugins`]: paths
//! resolved against the config's folder and checked readable, sizes and durations typed,
//! and the place of each plugin key kept so that a plugin that fails to compile later
//! (in `plugins::load`, which `leafgate check` runs) is still reported at its line:column.
//! It does not read or compile the components themselves.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use toml::Spanned;

use super::error::Reporter;
use super::units::{ByteSize, HumanDuration};

/// Memory a plugin instance may use when the config does not say.
pub const DEFAULT_MEMORY: u64 = 64 << 20;
/// Time one plugin call may take when the config does not say.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(10);
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

/// The raw `[tenant.plugins]` table: a hook per world, and defaults for their limits.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTenantPlugins {
    pub pod_router: Option<Spanned<RawPlugin>>,
    pub address_rewriter: Option<Spanned<RawPlugin>>,
    pub log_filter: Option<Spanned<RawPlugin>>,
    pub table_formatter: Option<Spanned<RawPlugin>>,
    pub memory: Option<Spanned<ByteSize>>,
    pub deadline: Option<Spanned<HumanDuration>>,
    pub on_error: Option<OnError>,
    pub isolation: Option<Isolation>,
    pub max_calls: Option<Spanned<u64>>,
    pub instances: Option<Spanned<u64>>,
}

/// A hook: `"path.wasm"`, or `{ path, config, on_error, memory, deadline, isolation,
/// max_calls }`.
#[derive(Debug, Default)]
pub struct RawPlugin {
    pub path: String,
    pub config: Option<toml::Value>,
    pub on_error: Option<OnError>,
    pub memory: Option<ByteSize>,
    pub deadline: Option<HumanDuration>,
    pub isolation: Option<Isolation>,
    pub max_calls: Option<u64>,
}

impl<'de> Deserialize<'de> for RawPlugin {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            path: String,
            config: Option<toml::Value>,
            on_error: Option<OnError>,
            memory: Option<ByteSize>,
            deadline: Option<HumanDuration>,
            isolation: Option<Isolation>,
            max_calls: Option<u64>,
        }

        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawPlugin;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a path to a .wasm component, or a table { path = \"...\", config = { ... } }",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawPlugin, E> {
                Ok(RawPlugin {
                    path: v.to_string(),
                    ..RawPlugin::default()
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawPlugin, A::Error> {
                let t = Table::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(RawPlugin {
                    path: t.path,
                    config: t.config,
                    on_error: t.on_error,
                    memory: t.memory,
                    deadline: t.deadline,
                    isolation: t.isolation,
                    max_calls: t.max_calls,
                })
            }
        }
        deserializer.deserialize_any(V)
    }
}

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
pub struct TenantPlugins {
    pub pod_router: Option<PluginConfig>,
    pub address_rewriter: Option<PluginConfig>,
    pub log_filter: Option<PluginConfig>,
    pub table_formatter: Option<PluginConfig>,
}

impl TenantPlugins {
    pub fn is_empty(&self) -> bool {
        self.pod_router.is_none()
            && self.address_rewriter.is_none()
            && self.log_filter.is_none()
            && self.table_formatter.is_none()
    }
}

/// Instance slots claimed so far by the tenants validated before this one.
#[derive(Debug, Default)]
pub(crate) struct Slots {
    used: u64,
    /// Set once the budget was exceeded, so it is reported once.
    reported: bool,
}

/// Validates one tenant's `[tenant.plugins]`, adding each plugin file to `files` and its
/// instance slots to `slots`.
pub(crate) fn validate(
    report: &mut Reporter<'_>,
    config_file: &Path,
    base: &Path,
    key: &str,
    raw: &RawTenantPlugins,
    files: &mut std::collections::BTreeSet<PathBuf>,
    slots: &mut Slots,
) -> TenantPlugins {
    let instances = match &raw.instances {
        Some(n) if *n.get_ref() == 0 || *n.get_ref() > MAX_INSTANCES => {
            report.error(
                n.span(),
                format!("{key}.instances"),
                format!(
                    "{} is out of range: each hook keeps between 1 and {MAX_INSTANCES} instances",
                    n.get_ref()
                ),
            );
            DEFAULT_INSTANCES
        }
        Some(n) => *n.get_ref(),
        None => DEFAULT_INSTANCES,
    };
    let memory = raw.memory.as_ref().map(|m| {
        check_memory(report, m.span(), &format!("{key}.memory"), *m.get_ref());
        *m.get_ref()
    });
    let deadline = raw.deadline.as_ref().map(|d| {
        check_deadline(report, d.span(), &format!("{key}.deadline"), d.get_ref().0);
        d.get_ref().0
    });
    let max_calls = raw.max_calls.as_ref().map(|n| {
        check_max_calls(report, n.span(), &format!("{key}.max_calls"), *n.get_ref());
        *n.get_ref()
    });
    let defaults = Defaults {
        memory: memory.unwrap_or(ByteSize(DEFAULT_MEMORY)),
        deadline: deadline.unwrap_or(DEFAULT_DEADLINE),
        on_error: raw.on_error.unwrap_or_default(),
        isolation: raw.isolation.unwrap_or_default(),
        max_calls: max_calls.unwrap_or(DEFAULT_MAX_CALLS),
    };
    let mut one = |hook: &str, p: &Option<Spanned<RawPlugin>>| {
        let p = p.as_ref()?;
        plugin(
            report,
            config_file,
            base,
            &format!("{key}.{hook}"),
            p,
            &defaults,
            files,
        )
    };
    let mut tenant = TenantPlugins {
        pod_router: one("pod_router", &raw.pod_router),
        address_rewriter: one("address_rewriter", &raw.address_rewriter),
        log_filter: one("log_filter", &raw.log_filter),
        table_formatter: one("table_formatter", &raw.table_formatter),
    };
    let hooks = [
        &mut tenant.pod_router,
        &mut tenant.address_rewriter,
        &mut tenant.log_filter,
        &mut tenant.table_formatter,
    ];
    let mut count = 0;
    for p in hooks.into_iter().flatten() {
        p.instances = instances;
        count += 1;
    }
    let need = count * instances;
    slots.used += need;
    if slots.used > PLUGIN_SLOTS && !slots.reported {
        slots.reported = true;
        let span = raw.instances.as_ref().map_or(0..0, |n| n.span());
        report.error(
            span,
            format!("{key}.instances"),
            format!(
                "the plugins need {} instance slots with this tenant ({count} hooks x {instances} \
                 instances), more than the {PLUGIN_SLOTS} the plugin runtime has: lower \
                 `instances` here or in the tenants before it (default {DEFAULT_INSTANCES})",
                slots.used
            ),
        );
    }
    tenant
}

struct Defaults {
    memory: ByteSize,
    deadline: Duration,
    on_error: OnError,
    isolation: Isolation,
    max_calls: u64,
}

fn plugin(
    report: &mut Reporter<'_>,
    config_file: &Path,
    base: &Path,
    key: &str,
    spanned: &Spanned<RawPlugin>,
    defaults: &Defaults,
    files: &mut std::collections::BTreeSet<PathBuf>,
) -> Option<PluginConfig> {
    let raw = spanned.get_ref();
    let span = spanned.span();
    let mut ok = true;
    if raw.path.trim().is_empty() {
        report.error(
            span.clone(),
            format!("{key}.path"),
            "the plugin path is empty: name a .wasm component",
        );
        return None;
    }
    let path = base.join(&raw.path);
    if let Err(e) = std::fs::metadata(&path).and_then(|m| {
        if m.is_file() {
            Ok(())
        } else {
            Err(std::io::Error::other("not a file"))
        }
    }) {
        report.error(
            span.clone(),
            format!("{key}.path"),
            format!("cannot read plugin {}: {e}", path.display()),
        );
        ok = false;
    }
    files.insert(path.clone());
    if let Some(m) = raw.memory {
        ok &= check_memory(report, span.clone(), &format!("{key}.memory"), m);
    }
    if let Some(d) = raw.deadline {
        ok &= check_deadline(report, span.clone(), &format!("{key}.deadline"), d.0);
    }
    if let Some(n) = raw.max_calls {
        ok &= check_max_calls(report, span.clone(), &format!("{key}.max_calls"), n);
    }
    let config_json = match &raw.config {
        None => "{}".to_string(),
        Some(value) => match serde_json::to_string(value) {
            Ok(json) => json,
            Err(e) => {
                report.error(
                    span.clone(),
                    format!("{key}.config"),
                    format!("cannot pass this config to the plugin as JSON: {e}"),
                );
                ok = false;
                String::new()
            }
        },
    };
    let origin = PluginOrigin {
        file: config_file.to_path_buf(),
        position: (span != (0..0)).then(|| report.line_column(span.start)),
        key: key.to_string(),
    };
    ok.then(|| PluginConfig {
        path,
        config_json,
        on_error: raw.on_error.unwrap_or(defaults.on_error),
        memory: raw.memory.unwrap_or(defaults.memory),
        deadline: raw.deadline.map_or(defaults.deadline, |d| d.0),
        isolation: raw.isolation.unwrap_or(defaults.isolation),
        max_calls: raw.max_calls.unwrap_or(defaults.max_calls),
        // Set by `validate`: a tenant-wide setting counted against the slot budget.
        instances: DEFAULT_INSTANCES,
        origin,
    })
}

fn check_memory(
    report: &mut Reporter<'_>,
    span: std::ops::Range<usize>,
    key: &str,
    m: ByteSize,
) -> bool {
    // Below a few pages no Rust component even starts; above MAX_MEMORY the pool has no room.
    if m.0 < (1 << 20) || m.0 > MAX_MEMORY {
        report.error(
            span,
            key,
            format!(
                "{} bytes is out of range: give a plugin between 1MiB and 1GiB",
                m.0
            ),
        );
        return false;
    }
    true
}

fn check_deadline(
    report: &mut Reporter<'_>,
    span: std::ops::Range<usize>,
    key: &str,
    d: Duration,
) -> bool {
    if d.is_zero() || d > MAX_DEADLINE {
        report.error(
            span,
            key,
            format!("{d:?} is out of range: a plugin deadline is above zero and at most 10s"),
        );
        return false;
    }
    true
}

fn check_max_calls(
    report: &mut Reporter<'_>,
    span: std::ops::Range<usize>,
    key: &str,
    n: u64,
) -> bool {
    if n == 0 || n > MAX_MAX_CALLS {
        report.error(
            span,
            key,
            format!("{n} is out of range: an instance serves between 1 and {MAX_MAX_CALLS} calls"),
        );
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn parse(dir: &Path, plugins: &str) -> Result<Config, String> {
        let path = dir.join("leafgate.toml");
        let src = format!("[[tenant]]\nname = \"t\"\n[tenant.plugins]\n{plugins}\n");
        Config::parse(&path, &src).map_err(|e| e.to_string())
    }

    fn with_wasm() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.wasm"), b"\0asm").unwrap();
        dir
    }

    #[test]
    fn a_bare_path_takes_the_defaults() {
        let dir = with_wasm();
        let config = parse(dir.path(), "log_filter = \"p.wasm\"").unwrap();
        let p = config.tenants[0].plugins.log_filter.clone().unwrap();
        assert_eq!(p.path, dir.path().join("p.wasm"));
        assert_eq!(
            (p.memory, p.deadline),
            (ByteSize(DEFAULT_MEMORY), DEFAULT_DEADLINE)
        );
        assert_eq!(
            (p.on_error, p.isolation),
            (OnError::Reject, Isolation::Pooled)
        );
        assert_eq!(p.config_json, "{}");
        assert_eq!(p.origin.key, "tenant[0].plugins.log_filter");
        assert_eq!(p.origin.position, Some((4, 14)));
        assert!(
            config.files.contains(&p.path),
            "reload watches plugin files"
        );
    }

    #[test]
    fn the_table_form_overrides_tenant_defaults() {
        let dir = with_wasm();
        let config = parse(
            dir.path(),
            "memory = \"32MiB\"\ndeadline = \"5ms\"\non_error = \"default\"\n\
             pod_router = { path = \"p.wasm\", config = { default_leaf = \"leaf-1\", n = 2 }, deadline = \"50ms\", isolation = \"per-call\" }\n\
             table_formatter = \"p.wasm\"",
        )
        .unwrap();
        let plugins = &config.tenants[0].plugins;
        let router = plugins.pod_router.as_ref().unwrap();
        assert_eq!(router.memory, ByteSize(32 << 20));
        assert_eq!(router.deadline, Duration::from_millis(50));
        assert_eq!(
            (router.on_error, router.isolation),
            (OnError::Default, Isolation::PerCall)
        );
        let json: serde_json::Value = serde_json::from_str(&router.config_json).unwrap();
        assert_eq!(
            json,
            serde_json::json!({ "default_leaf": "leaf-1", "n": 2 })
        );
        let table = plugins.table_formatter.as_ref().unwrap();
        assert_eq!(table.deadline, Duration::from_millis(5));
        assert!(plugins.address_rewriter.is_none() && plugins.log_filter.is_none());
    }

    #[test]
    fn mistakes_name_the_key_and_place() {
        let dir = with_wasm();
        let e = parse(
            dir.path(),
            "pod_router = { path = \"p.wasm\", memroy = \"1MiB\" }",
        )
        .unwrap_err();
        assert!(e.contains(":4:") && e.contains("memroy"), "{e}");
        let e = parse(dir.path(), "pod_router = \"missing.wasm\"").unwrap_err();
        assert!(
            e.contains("4:14: tenant[0].plugins.pod_router.path: cannot read plugin"),
            "{e}"
        );
        let e = parse(
            dir.path(),
            "pod_router = { path = \"p.wasm\", memory = \"4GiB\" }",
        )
        .unwrap_err();
        assert!(
            e.contains("tenant[0].plugins.pod_router.memory") && e.contains("out of range"),
            "{e}"
        );
        let e = parse(dir.path(), "deadline = \"0s\"\nlog_filter = \"p.wasm\"").unwrap_err();
        assert!(e.contains("4:12: tenant[0].plugins.deadline"), "{e}");
        let e = parse(dir.path(), "on_error = \"ignore\"").unwrap_err();
        assert!(e.contains("ignore"), "{e}");
        let e = parse(dir.path(), "router = \"p.wasm\"").unwrap_err();
        assert!(e.contains("unknown field `router`"), "{e}");
    }
}
