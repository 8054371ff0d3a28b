//! `leafgate plugin test FILE.wasm --world W --cases CASES`: runs a plugin over a file of
//! cases in the gateway's sandbox and limits (`oneshot`, the code `plugin run` uses) and
//! checks each answer.
//!
//! One line per case with the time its call took, the reason and the plugin's stderr under
//! a failed one, then a summary. A case that traps, runs past its deadline or its memory,
//! or answers out of contract fails alone: the pool replaces the instance, as the
//! gateway's does, and the next case runs.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cases::{Case, Expect, fault_word};
use super::error::PluginError;
use super::oneshot::{self, RunLimits};
use super::tenant::TenantPlugins;
use super::world::World;

/// How the run went: cases passed and failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub passed: usize,
    pub failed: usize,
}

/// Runs `cases` against `path` as `world` under `limits`, writing the report to `out`.
/// Plugins are loaded once per tenant and config (a warm pool serves the cases that share
/// them, as in the gateway).
pub fn run(
    path: &Path,
    world: World,
    cases: &[Case],
    limits: RunLimits,
    mut out: impl Write,
) -> std::io::Result<Tally> {
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut loaded: HashMap<(String, String), Result<TenantPlugins, String>> = HashMap::new();
    let mut tally = Tally {
        passed: 0,
        failed: 0,
    };
    let started = Instant::now();
    for case in cases {
        let mut request = case.request.clone();
        let tenant = oneshot::take_tenant(&mut request);
        let key = (tenant, case.config_json.clone());
        let plugins = loaded.entry(key).or_insert_with_key(|(tenant, config)| {
            oneshot::load(path, world, tenant, config, limits).map_err(|e| e.to_string())
        });
        let (took, verdict) = match plugins {
            Ok(plugins) => {
                let call = Instant::now();
                let result = tokio.block_on(oneshot::decide(plugins, world, request));
                (call.elapsed(), judge(&case.expect, result))
            }
            Err(load) => (
                Duration::ZERO,
                Err(format!("the plugin did not load\n{load}")),
            ),
        };
        let name = printable(&case.name);
        match verdict {
            Ok(()) => {
                tally.passed += 1;
                writeln!(out, "ok    {name} ({took:.1?})")?;
            }
            Err(why) => {
                tally.failed += 1;
                let (first, rest) = why.split_once('\n').unwrap_or((&why, ""));
                writeln!(out, "FAIL  {name} ({took:.1?}): {}", printable(first))?;
                for line in rest.lines() {
                    writeln!(out, "      {}", printable(line))?;
                }
            }
        }
    }
    writeln!(
        out,
        "{} cases: {} passed, {} failed ({:.1?})",
        cases.len(),
        tally.passed,
        tally.failed,
        started.elapsed()
    )?;
    out.flush()?;
    Ok(tally)
}

/// Whether `result` is what `expect` says; `Err` says why not (the answers, or the
/// failure's message with the plugin's stderr, on the lines after the first).
fn judge(expect: &Expect, result: Result<Value, PluginError>) -> Result<(), String> {
    let compact = |v: &Value| v.to_string();
    match (expect, result) {
        (Expect::Answer(want), Ok(got)) if *want == got => Ok(()),
        (Expect::Answer(want), Ok(got)) => Err(format!(
            "the answer differs\nexpected: {}\n     got: {}",
            compact(want),
            compact(&got)
        )),
        (Expect::Fault(kind), Err(PluginError::Call { kind: got, .. })) if *kind == got => Ok(()),
        (Expect::Fault(kind), Ok(got)) => Err(format!(
            "expected the call to fail ({}), it answered\n     got: {}",
            fault_word(*kind),
            compact(&got)
        )),
        (expect, Err(PluginError::Call { kind, message, .. })) => {
            let wanted = match expect {
                Expect::Fault(k) => format!(", not {}", fault_word(*k)),
                Expect::Answer(_) => String::new(),
            };
            Err(format!("{}{wanted}\n{message}", fault_word(kind)))
        }
        (_, Err(other)) => Err(other.to_string()),
    }
}

/// `text` with control characters escaped, so a case's name or a plugin's stderr cannot
/// move the terminal's cursor or forge a line of the report.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::error::FaultKind;
    use serde_json::json;

    fn call_error(kind: FaultKind, message: &str) -> PluginError {
        PluginError::Call {
            tenant: "t".into(),
            plugin: "p".into(),
            hook: World::PodRouter,
            kind,
            message: message.into(),
        }
    }

    #[test]
    fn answers_and_failures_are_judged_against_the_expectation() {
        let leaf = Expect::Answer(json!({"leaf": "leaf-1"}));
        assert_eq!(judge(&leaf, Ok(json!({"leaf": "leaf-1"}))), Ok(()));
        let e = judge(&leaf, Ok(json!({"leaf": "leaf-2"}))).unwrap_err();
        assert!(
            e.starts_with("the answer differs\nexpected: {\"leaf\":\"leaf-1\"}"),
            "{e}"
        );
        assert!(e.ends_with("got: {\"leaf\":\"leaf-2\"}"), "{e}");
        let deadline = Expect::Fault(FaultKind::Timeout);
        assert_eq!(
            judge(&deadline, Err(call_error(FaultKind::Timeout, "x"))),
            Ok(())
        );
        let e = judge(
            &deadline,
            Err(call_error(FaultKind::Trap, "panicked at boom")),
        )
        .unwrap_err();
        assert_eq!(e, "trap, not deadline\npanicked at boom");
        let e = judge(&leaf, Err(call_error(FaultKind::Memory, "grew"))).unwrap_err();
        assert_eq!(e, "memory\ngrew");
        let e = judge(&deadline, Ok(json!("default"))).unwrap_err();
        assert!(e.starts_with("expected the call to fail (deadline)"), "{e}");
        let e = judge(
            &leaf,
            Err(PluginError::Request("not a pod-router request".into())),
        )
        .unwrap_err();
        assert!(e.contains("not a pod-router request"), "{e}");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("a\u{1b}[2Jb\rc\td"), "a\\u{1b}[2Jb\\rc\\td");
        assert_eq!(printable("naïve"), "naïve");
    }
}
