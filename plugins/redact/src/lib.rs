//! redact: hides secrets in container logs and drops noisy lines.
//!
//! Config: `{ patterns = ["password=\\S+", "Bearer [A-Za-z0-9._-]+"], drop = ["GET /healthz"],
//! replacement = "***" }`. A line matching any `drop` pattern is dropped; otherwise every
//! match of every `patterns` entry is replaced by `replacement` (`***` by default; `$1` and
//! `${name}` in it stand for a match's groups, counted across all patterns). Patterns use
//! the `regex` crate's syntax.
//!
//! Most lines are clean, and a clean line should cost one cheap scan: see [`engine`].

mod engine;

use std::sync::OnceLock;

use leafgate_plugin::log_filter::{Guest, LogContext, Verdict, Verdicts};
use serde::Deserialize;

use engine::Redactor;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    patterns: Vec<String>,
    #[serde(default)]
    drop: Vec<String>,
    #[serde(default = "stars")]
    replacement: String,
}

fn stars() -> String {
    "***".into()
}

fn redactor() -> Redactor {
    let config: Config = leafgate_plugin::config_or_trap();
    Redactor::new(&config.patterns, &config.drop, config.replacement).unwrap_or_else(|bad| {
        let message = format!("redact: {bad}");
        leafgate_plugin::log::error(&message);
        panic!("{message}")
    })
}

static REDACTOR: OnceLock<Redactor> = OnceLock::new();

struct Redact;

impl Guest for Redact {
    fn filter(_ctx: LogContext, batch: String) -> Verdicts {
        let redactor = REDACTOR.get_or_init(redactor);
        // Not sized ahead: that would be one more pass over the batch for its newlines,
        // which the filter counts anyway, and a byte per line grows cheaply.
        let mut out = Verdicts::with_capacity(0);
        redactor.filter(&batch, |verdict| {
            out.push(match verdict {
                engine::Verdict::Keep => Verdict::Keep,
                engine::Verdict::Drop => Verdict::Drop,
                engine::Verdict::Replace(text) => Verdict::Replace(text),
            })
        });
        out
    }
}

leafgate_plugin::export_log_filter!(Redact);
