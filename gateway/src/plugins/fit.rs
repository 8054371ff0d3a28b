//! What a tenant's plugin needs, against the limits its config gives it: the component's
//! size, its start-up time and the memory of a warm instance, measured when the hook is
//! loaded ([`Needs`]), and [`Fit`], what `leafgate check` says of it, naming the key to
//! raise where the plugin is tight or does not fit.
//!
//! The hard limits are enforced where they bite: a start-up past `startup` or over
//! `memory` fails the load (`pool::Pool::warm_up`). This module only reads the figures.

use std::fmt;
use std::time::Duration;

use super::limits::Limits;
use super::world::World;
use crate::config::plugins::Isolation;

/// What one plugin took when its hook was loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Needs {
    /// The component file's size, in bytes.
    pub size: u64,
    /// How long its first instance took to start.
    pub startup: Duration,
    /// The linear memory of an instance once started, in bytes.
    pub memory: usize,
}

/// One hook's needs against its limits, as `leafgate check` prints it.
#[derive(Debug, Clone)]
pub struct Fit {
    /// The plugin's key in the config (`tenant[0].plugins.pod_router`).
    pub key: String,
    pub plugin: String,
    pub world: World,
    pub(crate) needs: Needs,
    pub(crate) limits: Limits,
}

/// A warm instance may hold at most this share of `memory` before its calls are short of
/// room: three quarters.
fn memory_is_tight(held: usize, limit: usize) -> bool {
    held > limit / 4 * 3
}

impl Fit {
    /// What does not fit comfortably, each naming the key to raise (empty: it fits).
    pub fn warnings(&self) -> Vec<String> {
        let (needs, limits) = (&self.needs, &self.limits);
        let mut out = Vec::new();
        if memory_is_tight(needs.memory, limits.memory) {
            out.push(format!(
                "a warm instance holds {} of its {} `memory`, leaving its calls less than a quarter: raise `memory`",
                mib(needs.memory as u64),
                mib(limits.memory as u64)
            ));
        }
        if needs.startup > limits.startup / 2 {
            out.push(format!(
                "its start-up took {}, over half of its {} `startup` limit (a busy host starts it slower): raise `startup`",
                ms(needs.startup),
                ms(limits.startup)
            ));
        }
        if limits.isolation == Isolation::PerCall && needs.startup > limits.deadline {
            out.push(format!(
                "with isolation = \"per-call\" every call starts an instance first: {} of start-up on each request, more than the {} `deadline` of the call itself: use isolation = \"pooled\", or raise `deadline` if the requests can wait",
                ms(needs.startup),
                ms(limits.deadline)
            ));
        }
        out
    }
}

impl fmt::Display for Fit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (needs, limits) = (&self.needs, &self.limits);
        write!(
            f,
            "{} ({}, {}): component {}; start-up {} of its {} `startup`; {} per warm instance of its {} `memory`; \
             up to {} `instances`: {}; each call under its {} `deadline` (start-up outside it)",
            self.key,
            self.plugin,
            self.world,
            mb(needs.size),
            ms(needs.startup),
            ms(limits.startup),
            mib(needs.memory as u64),
            mib(limits.memory as u64),
            limits.instances,
            mib(needs.memory as u64 * limits.instances),
            ms(limits.deadline),
        )?;
        let warnings = self.warnings();
        if warnings.is_empty() {
            f.write_str(": fits")
        } else {
            write!(f, ": tight: {}", warnings.join("; "))
        }
    }
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

fn ms(d: Duration) -> String {
    if d >= Duration::from_secs(1) && d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::plugins::{
        DEFAULT_DEADLINE, DEFAULT_INSTANCES, DEFAULT_MAX_CALLS, DEFAULT_MEMORY, DEFAULT_STARTUP,
    };

    fn fit(startup_ms: u64, memory_mib: usize, isolation: Isolation) -> Fit {
        Fit {
            key: "tenant[0].plugins.pod_router".into(),
            plugin: "label_router".into(),
            world: World::PodRouter,
            needs: Needs {
                size: 18_500_000,
                startup: Duration::from_millis(startup_ms),
                memory: memory_mib << 20,
            },
            limits: Limits {
                memory: DEFAULT_MEMORY as usize,
                deadline: DEFAULT_DEADLINE,
                startup: DEFAULT_STARTUP,
                isolation,
                max_calls: DEFAULT_MAX_CALLS,
                instances: DEFAULT_INSTANCES,
            },
        }
    }

    #[test]
    fn an_interpreter_that_starts_in_tens_of_ms_fits_the_defaults() {
        let f = fit(31, 7, Isolation::Pooled);
        assert!(f.warnings().is_empty(), "{:?}", f.warnings());
        let line = f.to_string();
        assert_eq!(
            line,
            "tenant[0].plugins.pod_router (label_router, pod-router): component 18.5 MB; \
             start-up 31.0 ms of its 1s `startup`; 7.0 MiB per warm instance of its 64.0 MiB \
             `memory`; up to 8 `instances`: 56.0 MiB; each call under its 10.0 ms `deadline` \
             (start-up outside it): fits"
        );
    }

    #[test]
    fn each_tight_limit_is_named_with_the_key_to_raise() {
        let memory = fit(31, 60, Isolation::Pooled).warnings();
        assert_eq!(memory.len(), 1);
        assert!(memory[0].ends_with("raise `memory`"), "{memory:?}");

        let startup = fit(700, 7, Isolation::Pooled).warnings();
        assert_eq!(startup.len(), 1);
        assert!(startup[0].ends_with("raise `startup`"), "{startup:?}");

        let per_call = fit(31, 7, Isolation::PerCall);
        let warnings = per_call.warnings();
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("raise `deadline`"), "{warnings:?}");
        assert!(per_call.to_string().contains(": tight: with isolation"));
    }
}
