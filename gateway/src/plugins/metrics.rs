//! Plugin metrics: calls and failures by tenant, plugin and hook, and call latency.
//!
//! The metric families live as long as the process; each loaded plugin takes handles to
//! its own series when it is loaded (off the hot path), so a call only bumps atomics.
//! The core registers the families in its registry with [`PluginMetrics::register`].

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::error::FaultKind;
use super::world::World;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tenant: String,
    plugin: String,
    hook: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    tenant: String,
    plugin: String,
    hook: String,
    kind: String,
}

fn latency_histogram() -> Histogram {
    // 1µs to ~1s: warm calls sit in the microseconds, deadlines in the milliseconds.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        1e-6, 4.0, 11,
    ))
}

/// The plugin metric families. Clones share the same series.
#[derive(Clone)]
pub struct PluginMetrics {
    calls: Family<CallLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    duration: Family<CallLabels, Histogram, fn() -> Histogram>,
    log_dropped: Family<CallLabels, Counter>,
}

impl Default for PluginMetrics {
    fn default() -> Self {
        Self {
            calls: Family::default(),
            errors: Family::default(),
            duration: Family::new_with_constructor(latency_histogram),
            log_dropped: Family::default(),
        }
    }
}

impl std::fmt::Debug for PluginMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PluginMetrics")
    }
}

impl PluginMetrics {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the families to `registry`: `leafgate_plugin_calls_total`,
    /// `leafgate_plugin_errors_total`, `leafgate_plugin_call_duration_seconds` and
    /// `leafgate_plugin_log_lines_dropped_total` (the gateway's registry adds the
    /// `leafgate_` prefix).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "plugin_calls",
            "Plugin calls, by tenant, plugin and hook",
            self.calls.clone(),
        );
        registry.register(
            "plugin_errors",
            "Failed plugin calls (trap, timeout, memory, invalid_answer, instantiate), by tenant, plugin, hook and kind",
            self.errors.clone(),
        );
        registry.register(
            "plugin_call_duration_seconds",
            "Plugin call latency, instantiation included, by tenant, plugin and hook",
            self.duration.clone(),
        );
        registry.register(
            "plugin_log_lines_dropped",
            "Lines a plugin's host.log calls wrote over its rate, dropped, by tenant, plugin and hook",
            self.log_dropped.clone(),
        );
    }

    /// The series of one plugin, resolved once.
    pub(crate) fn series(&self, tenant: &str, plugin: &str, hook: World) -> Series {
        let labels = CallLabels {
            tenant: tenant.into(),
            plugin: plugin.into(),
            hook: hook.to_string(),
        };
        let errors = FaultKind::ALL.map(|kind| {
            self.errors
                .get_or_create(&ErrorLabels {
                    tenant: tenant.into(),
                    plugin: plugin.into(),
                    hook: hook.to_string(),
                    kind: kind.label().into(),
                })
                .clone()
        });
        Series {
            log_dropped: self.log_dropped.get_or_create(&labels).clone(),
            calls: self.calls.get_or_create(&labels).clone(),
            duration: self.duration.get_or_create(&labels).clone(),
            errors,
        }
    }

    /// Failed calls so far of one plugin with one kind of fault (tests and status pages).
    pub fn errors(&self, tenant: &str, plugin: &str, hook: World, kind: FaultKind) -> u64 {
        self.errors
            .get_or_create(&ErrorLabels {
                tenant: tenant.into(),
                plugin: plugin.into(),
                hook: hook.to_string(),
                kind: kind.label().into(),
            })
            .get()
    }

    /// Calls so far of one plugin.
    pub fn calls(&self, tenant: &str, plugin: &str, hook: World) -> u64 {
        self.calls
            .get_or_create(&CallLabels {
                tenant: tenant.into(),
                plugin: plugin.into(),
                hook: hook.to_string(),
            })
            .get()
    }
}

/// One plugin's metric handles.
#[derive(Clone, Debug)]
pub(crate) struct Series {
    pub calls: Counter,
    pub duration: Histogram,
    /// `host.log` lines dropped over the plugin's rate.
    pub log_dropped: Counter,
    errors: [Counter; FaultKind::ALL.len()],
}

impl Series {
    pub fn error(&self, kind: FaultKind) {
        self.errors[kind as usize].inc();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_show_up_in_the_registry_by_tenant_plugin_hook_and_kind() {
        let metrics = PluginMetrics::new();
        // As the gateway's registry is made (`Metrics::new`): the prefix is its.
        let mut registry = Registry::with_prefix("leafgate");
        metrics.register(&mut registry);
        let series = metrics.series("team-a", "redact", World::LogFilter);
        series.calls.inc();
        series.calls.inc();
        series.error(FaultKind::Timeout);
        series.duration.observe(0.000_002);

        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        // Whole lines: a name with the prefix twice would hold each of these inside it.
        let lines: Vec<&str> = text.lines().collect();
        for line in [
            r#"leafgate_plugin_calls_total{tenant="team-a",plugin="redact",hook="log-filter"} 2"#,
            r#"leafgate_plugin_errors_total{tenant="team-a",plugin="redact",hook="log-filter",kind="timeout"} 1"#,
            r#"leafgate_plugin_errors_total{tenant="team-a",plugin="redact",hook="log-filter",kind="trap"} 0"#,
        ] {
            assert!(lines.contains(&line), "{line} not in:\n{text}");
        }
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("leafgate_plugin_call_duration_seconds_count")),
            "{text}"
        );
        assert_eq!(
            metrics.errors("team-a", "redact", World::LogFilter, FaultKind::Timeout),
            1
        );
    }
}
