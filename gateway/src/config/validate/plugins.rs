//! A tenant's `[tenant.plugins]` validated into [`PluginsConfig`]: paths resolved against
//! the config's folder and checked readable, sizes and durations within their bounds, the
//! instance slots of all tenants within the plugin runtime's, and the place of each plugin
//! key kept so that a plugin that fails to compile later (in `plugins::load`, which
//! `leafgate check` runs) is still reported at its line:column. It does not read or
//! compile the components themselves.

use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use crate::config::error::Reporter;
use crate::config::model::plugins::{
    DEFAULT_DEADLINE, DEFAULT_INSTANCES, DEFAULT_MAX_CALLS, DEFAULT_MEMORY, DEFAULT_STARTUP,
    Isolation, MAX_DEADLINE, MAX_INSTANCES, MAX_MAX_CALLS, MAX_MEMORY, OnError, PLUGIN_SLOTS,
    PluginConfig, PluginOrigin, PluginsConfig,
};
use crate::config::model::units::ByteSize;
use crate::config::raw::plugins::{RawPlugin, RawTenantPlugins};

/// Instance slots claimed so far by the tenants validated before this one.
#[derive(Debug, Default)]
pub(super) struct Slots {
    used: u64,
    /// Set once the budget was exceeded, so it is reported once.
    reported: bool,
}

/// Validates one tenant's `[tenant.plugins]`, adding each plugin file to `files` and its
/// instance slots to `slots`.
pub(super) fn validate(
    report: &mut Reporter<'_>,
    config_file: &Path,
    base: &Path,
    key: &str,
    raw: &RawTenantPlugins,
    files: &mut std::collections::BTreeSet<PathBuf>,
    slots: &mut Slots,
) -> PluginsConfig {
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
    let startup = raw.startup.as_ref().map(|d| {
        check_deadline(report, d.span(), &format!("{key}.startup"), d.get_ref().0);
        d.get_ref().0
    });
    let max_calls = raw.max_calls.as_ref().map(|n| {
        check_max_calls(report, n.span(), &format!("{key}.max_calls"), *n.get_ref());
        *n.get_ref()
    });
    let defaults = Defaults {
        memory: memory.unwrap_or(ByteSize(DEFAULT_MEMORY)),
        deadline: deadline.unwrap_or(DEFAULT_DEADLINE),
        startup: startup.unwrap_or(DEFAULT_STARTUP),
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
    let mut tenant = PluginsConfig {
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
    startup: Duration,
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
    if let Some(d) = raw.startup {
        ok &= check_deadline(report, span.clone(), &format!("{key}.startup"), d.0);
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
    let on_error = raw.on_error.unwrap_or(defaults.on_error);
    // A log filter is usually there to redact: with `default`, a batch it fails on goes
    // to the client unfiltered. The operator may want that, but should know it.
    if on_error == OnError::Default && key.ends_with(".log_filter") {
        report.warning(
            span.clone(),
            format!("{key}.on_error"),
            "with on_error = \"default\" a batch this log filter fails on (trap, timeout, \
             invalid answer) reaches the client unfiltered; use \"reject\" if it redacts \
             anything"
                .to_string(),
        );
    }
    let origin = PluginOrigin {
        file: config_file.to_path_buf(),
        position: (span != (0..0)).then(|| report.line_column(span.start)),
        key: key.to_string(),
    };
    ok.then(|| PluginConfig {
        path,
        config_json,
        on_error,
        memory: raw.memory.unwrap_or(defaults.memory),
        deadline: raw.deadline.map_or(defaults.deadline, |d| d.0),
        startup: raw.startup.map_or(defaults.startup, |d| d.0),
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
            format!("{d:?} is out of range: a plugin's time limit is above zero and at most 10s"),
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
