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
}

/// A hook: `"path.wasm"`, or `{ path, config, on_error, memory, deadline, isolation }`.
#[derive(Debug, Default)]
pub struct RawPlugin {
    pub path: String,
    pub config: Option<toml::Value>,
    pub on_error: Option<OnError>,
    pub memory: Option<ByteSize>,
    pub deadline: Option<HumanDuration>,
    pub isolation: Option<Isolation>,
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

/// Validates one tenant's `[tenant.plugins]`, adding each plugin file to `files`.
pub(crate) fn validate(
    report: &mut Reporter<'_>,
    config_file: &Path,
    base: &Path,
    key: &str,
    raw: &RawTenantPlugins,
    files: &mut std::collections::BTreeSet<PathBuf>,
) -> TenantPlugins {
    let memory = raw.memory.as_ref().map(|m| {
        check_memory(report, m.span(), &format!("{key}.memory"), *m.get_ref());
        *m.get_ref()
    });
    let deadline = raw.deadline.as_ref().map(|d| {
        check_deadline(report, d.span(), &format!("{key}.deadline"), d.get_ref().0);
        d.get_ref().0
    });
    let defaults = Defaults {
        memory: memory.unwrap_or(ByteSize(DEFAULT_MEMORY)),
        deadline: deadline.unwrap_or(DEFAULT_DEADLINE),
        on_error: raw.on_error.unwrap_or_default(),
        isolation: raw.isolation.unwrap_or_default(),
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
    TenantPlugins {
        pod_router: one("pod_router", &raw.pod_router),
        address_rewriter: one("address_rewriter", &raw.address_rewriter),
        log_filter: one("log_filter", &raw.log_filter),
        table_formatter: one("table_formatter", &raw.table_formatter),
    }
}

struct Defaults {
    memory: ByteSize,
    deadline: Duration,
    on_error: OnError,
    isolation: Isolation,
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
