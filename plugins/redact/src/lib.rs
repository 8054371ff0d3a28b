//! redact: hides secrets in container logs and drops noisy lines.
//!
//! Config: `{ patterns = ["password=\\S+", "Bearer [A-Za-z0-9._-]+"], drop = ["GET /healthz"],
//! replacement = "***" }`. A line matching any `drop` pattern is dropped; otherwise every
//! match of every `patterns` entry is replaced by `replacement` (`***` by default).
//! Patterns use the `regex` crate's syntax.
//!
//! Most lines are clean, and a clean line should cost one cheap scan. Natively the
//! `regex` crate finds a pattern's leading literals with x86 SIMD; in WebAssembly it has
//! no such search, while `memchr`'s substring search does (`simd128`). So the literals
//! every match must start with (`password=`, `Bearer `, `GET /healthz`) are taken from
//! the patterns once, and a line holding none of them is kept without running a regex.

use std::sync::OnceLock;

use leafgate_plugin::log_filter::{Guest, LogContext, Verdict, Verdicts, lines};
use memchr::memmem::Finder;
use regex::{Regex, RegexSet};
use regex_syntax::hir::literal::{ExtractKind, Extractor};
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

/// More literals than this and scanning for each costs more than the regexes would.
const MAX_LITERALS: usize = 8;

/// The literals every match of every pattern starts with: a line that holds none of them
/// matches no pattern.
struct Prefilter {
    finders: Vec<Finder<'static>>,
}

impl Prefilter {
    /// `None` when some pattern can match without a literal to look for (`\w+=`, `^x`),
    /// or needs too many: then every line goes to the regexes.
    fn new<'a>(patterns: impl Iterator<Item = &'a String>) -> Option<Prefilter> {
        let mut extractor = Extractor::new();
        extractor.kind(ExtractKind::Prefix);
        let mut literals: Vec<Vec<u8>> = Vec::new();
        for pattern in patterns {
            // The regex crate's default syntax (Unicode on), so both read it alike.
            let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
            for literal in extractor.extract(&hir).literals()? {
                if literal.as_bytes().is_empty() {
                    return None;
                }
                literals.push(literal.as_bytes().to_vec());
            }
        }
        literals.sort();
        literals.dedup();
        if literals.len() > MAX_LITERALS {
            return None;
        }
        Some(Prefilter {
            finders: literals
                .iter()
                .map(|l| Finder::new(l).into_owned())
                .collect(),
        })
    }

    fn may_match(&self, line: &str) -> bool {
        self.finders
            .iter()
            .any(|f| f.find(line.as_bytes()).is_some())
    }
}

struct Redactor {
    prefilter: Option<Prefilter>,
    drop: RegexSet,
    /// All `patterns` as one alternation: one pass over a line instead of one per pattern.
    secrets: Option<Regex>,
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
            prefilter: Prefilter::new(config.drop.iter().chain(&config.patterns)),
            drop,
            secrets,
            replacement: config.replacement,
        }
    }

    fn verdict(&self, line: &str) -> Verdict {
        if self.prefilter.as_ref().is_some_and(|p| !p.may_match(line)) {
            return Verdict::Keep;
        }
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
    fn filter(_ctx: LogContext, batch: String) -> Verdicts {
        let redactor = REDACTOR.get_or_init(Redactor::from_config);
        // Sized once: a line per newline, plus the last.
        let mut out =
            Verdicts::with_capacity(memchr::memchr_iter(b'\n', batch.as_bytes()).count() + 1);
        for line in lines(&batch) {
            out.push(redactor.verdict(line));
        }
        out
    }
}

leafgate_plugin::export_log_filter!(Redact);
