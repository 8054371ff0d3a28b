//! redact: hides secrets in container logs and drops noisy lines.
//!
//! Config: `{ patterns = ["password=\\S+", "Bearer [A-Za-z0-9._-]+"], drop = ["GET /healthz"],
//! replacement = "***" }`. A line matching any `drop` pattern is dropped; otherwise every
//! match of every `patterns` entry is replaced by `replacement` (`***` by default).
//! Patterns use the `regex` crate's syntax.

use std::sync::OnceLock;

use leafgate_plugin::log_filter::{Guest, LogContext, Verdict};
use regex::{Regex, RegexSet};
use serde::Deserialize;

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

struct Redactor {
    /// All `patterns` as one alternation: one pass over each line instead of one per pattern.
    secrets: Option<Regex>,
    drop: RegexSet,
    replacement: String,
}

impl Redactor {
    fn from_config() -> Self {
        let config: Config = leafgate_plugin::config_or_trap();
        let fail = |what: &str, e: regex::Error| -> ! {
            let message = format!("redact: a `{what}` pattern is invalid: {e}");
            leafgate_plugin::log::error(&message);
            panic!("{message}")
        };
        let secrets = (!config.patterns.is_empty()).then(|| {
            let joined = config
                .patterns
                .iter()
                .map(|p| format!("(?:{p})"))
                .collect::<Vec<_>>()
                .join("|");
            Regex::new(&joined).unwrap_or_else(|e| fail("patterns", e))
        });
        let drop = RegexSet::new(&config.drop).unwrap_or_else(|e| fail("drop", e));
        Redactor {
            secrets,
            drop,
            replacement: config.replacement,
        }
    }

    fn verdict(&self, line: &str) -> Verdict {
        if self.drop.is_match(line) {
            return Verdict::Drop;
        }
        match &self.secrets {
            Some(re) => match re.replace_all(line, self.replacement.as_str()) {
                std::borrow::Cow::Borrowed(_) => Verdict::Keep,
                std::borrow::Cow::Owned(text) => Verdict::Replace(text),
            },
            None => Verdict::Keep,
        }
    }
}

static REDACTOR: OnceLock<Redactor> = OnceLock::new();

struct Redact;

impl Guest for Redact {
    fn filter(_ctx: LogContext, lines: Vec<String>) -> Vec<Verdict> {
        let redactor = REDACTOR.get_or_init(Redactor::from_config);
        lines.iter().map(|l| redactor.verdict(l)).collect()
    }
}

leafgate_plugin::export_log_filter!(Redact);
