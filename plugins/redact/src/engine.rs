//! The redaction itself, apart from the plugin's plumbing, so the gateway's benchmark can
//! run this very code natively as the peer it measures the plugin against
//! (`gateway/benches/plugins.rs` includes this file). It needs only `regex-automata`,
//! `regex-syntax` and `memchr`.
//!
//! Every match of every pattern starts with one of a few literals the patterns name
//! (`password=`, `Bearer `, `GET /healthz`). They are found with `memchr`'s substring
//! search, which has `simd128` in WebAssembly where the regex engines have no SIMD at all.
//! A line holding none of them is kept without running a regex; on a line holding some,
//! the regexes run anchored where the literals were found instead of scanning the line
//! again for where a match could start.

use memchr::memmem::Finder;
use regex_automata::meta::Regex;
use regex_automata::util::captures::Captures;
use regex_automata::{Anchored, Input, Span};
use regex_syntax::hir::literal::{ExtractKind, Extractor};

/// What to do with one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    Drop,
    Replace(String),
}

/// More literals than this and searching for each costs more than the regexes would.
const MAX_LITERALS: usize = 8;

/// Where in a line matches may start: where each kind of pattern's literals were found,
/// ascending. Kept between lines so a batch allocates it once.
#[derive(Default)]
pub struct Starts {
    drop: Vec<usize>,
    secret: Vec<usize>,
}

/// One literal to search for, and whose patterns start with it.
struct Literal {
    finder: Finder<'static>,
    drop: bool,
    secret: bool,
}

/// The literals every match of every pattern starts with.
struct Literals(Vec<Literal>);

impl Literals {
    /// `None` when some pattern can match without a literal to look for (`\w+=`, `^x`),
    /// or needs too many: then the regexes search whole lines.
    fn new(drop: &[String], secrets: &[String]) -> Option<Literals> {
        let mut extractor = Extractor::new();
        extractor.kind(ExtractKind::Prefix);
        // (literal, drop, secret), merged below when both kinds start with it.
        let mut found: Vec<(Vec<u8>, bool, bool)> = Vec::new();
        for (patterns, is_drop) in [(drop, true), (secrets, false)] {
            for pattern in patterns {
                // The regex engines' default syntax (Unicode on), so both read it alike.
                let hir = regex_syntax::Parser::new().parse(pattern).ok()?;
                for literal in extractor.extract(&hir).literals()? {
                    if literal.as_bytes().is_empty() {
                        return None;
                    }
                    found.push((literal.as_bytes().to_vec(), is_drop, !is_drop));
                }
            }
        }
        found.sort();
        found.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 |= later.1;
                kept.2 |= later.2;
            }
            same
        });
        if found.len() > MAX_LITERALS {
            return None;
        }
        let literals = found
            .into_iter()
            .map(|(bytes, drop, secret)| Literal {
                finder: Finder::new(&bytes).into_owned(),
                drop,
                secret,
            })
            .collect();
        Some(Literals(literals))
    }

    /// Fills `starts` with every place a literal occurs in `line`; `false` when none does.
    fn find(&self, line: &str, starts: &mut Starts) -> bool {
        starts.drop.clear();
        starts.secret.clear();
        for literal in &self.0 {
            for at in literal.finder.find_iter(line.as_bytes()) {
                if literal.drop {
                    starts.drop.push(at);
                }
                if literal.secret {
                    starts.secret.push(at);
                }
            }
        }
        starts.drop.sort_unstable();
        starts.secret.sort_unstable();
        !(starts.drop.is_empty() && starts.secret.is_empty())
    }
}

/// The compiled `drop` and `patterns` lists and the replacement.
pub struct Redactor {
    literals: Option<Literals>,
    /// Every `drop` pattern, one regex: a line matching any of them is dropped.
    drop: Option<Regex>,
    /// Every secret pattern, one regex: its leftmost-first matches are replaced.
    secrets: Option<Regex>,
    replacement: String,
    /// The replacement names groups (`$1`, `${name}`), so each match's groups are needed.
    expands: bool,
}

/// A pattern that does not compile: which list it is in, and why.
#[derive(Debug)]
pub struct InvalidPattern(String);

impl std::fmt::Display for InvalidPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One regex matching any of `patterns`, or `None` for an empty list.
fn compile(patterns: &[impl AsRef<str>], list: &str) -> Result<Option<Regex>, InvalidPattern> {
    if patterns.is_empty() {
        return Ok(None);
    }
    match Regex::new_many(patterns) {
        Ok(regex) => Ok(Some(regex)),
        Err(e) => {
            // The syntax error shows the pattern and where it breaks; the build error only
            // its index.
            let why = e
                .syntax_error()
                .map_or_else(|| e.to_string(), |s| s.to_string());
            Err(InvalidPattern(format!(
                "a `{list}` pattern is invalid: {why}"
            )))
        }
    }
}

impl Redactor {
    pub fn new(
        secrets: &[String],
        drop: &[String],
        replacement: String,
    ) -> Result<Self, InvalidPattern> {
        // Secrets as one alternation, so a replacement's `$2` counts groups across all
        // patterns, as one regex's would.
        let joined = (!secrets.is_empty()).then(|| {
            secrets
                .iter()
                .map(|p| format!("(?:{p})"))
                .collect::<Vec<_>>()
                .join("|")
        });
        Ok(Redactor {
            literals: Literals::new(drop, secrets),
            drop: compile(drop, "drop")?,
            secrets: compile(joined.as_slice(), "patterns")?,
            expands: replacement.contains('$'),
            replacement,
        })
    }

    pub fn verdict(&self, line: &str, starts: &mut Starts) -> Verdict {
        let Some(literals) = &self.literals else {
            return self.search_everywhere(line);
        };
        if !literals.find(line, starts) {
            return Verdict::Keep;
        }
        let anchored_at = |at: usize| Input::new(line).range(at..).anchored(Anchored::Yes);
        if let Some(drop) = &self.drop
            && starts.drop.iter().any(|&at| drop.is_match(anchored_at(at)))
        {
            return Verdict::Drop;
        }
        let Some(secrets) = &self.secrets else {
            return Verdict::Keep;
        };
        // Leftmost-first, non-overlapping, as an unanchored search would find them: every
        // match starts at a literal, so the first literal at or past the last match's end
        // where the regex matches is where the next match starts. No match is empty.
        let mut candidates = starts.secret.iter();
        let mut end = 0;
        let matches = std::iter::from_fn(|| {
            let span = candidates
                .by_ref()
                .filter(|&&at| at >= end)
                .find_map(|&at| secrets.search(&anchored_at(at)))?
                .span();
            end = span.end;
            Some(span)
        });
        self.replaced(secrets, line, matches)
    }

    /// The same verdict with no literals to go by: both regexes search the whole line.
    fn search_everywhere(&self, line: &str) -> Verdict {
        if self.drop.as_ref().is_some_and(|drop| drop.is_match(line)) {
            return Verdict::Drop;
        }
        match &self.secrets {
            Some(secrets) => {
                self.replaced(secrets, line, secrets.find_iter(line).map(|m| m.span()))
            }
            None => Verdict::Keep,
        }
    }

    /// `line` with each of `matches` (ascending, apart) replaced.
    fn replaced(
        &self,
        secrets: &Regex,
        line: &str,
        matches: impl Iterator<Item = Span>,
    ) -> Verdict {
        let mut out = String::new();
        let mut copied = 0;
        let mut matched = false;
        let mut groups: Option<Captures> = None;
        for span in matches {
            if !matched {
                // Room for the usual case, one match, so the text is allocated once.
                out.reserve(line.len() + self.replacement.len());
                matched = true;
            }
            out.push_str(&line[copied..span.start]);
            if self.expands {
                // The groups of the match just found: the same match again, held to its span.
                let groups = groups.get_or_insert_with(|| secrets.create_captures());
                let input = Input::new(line).span(span).anchored(Anchored::Yes);
                secrets.search_captures(&input, groups);
                groups.interpolate_string_into(line, &self.replacement, &mut out);
            } else {
                out.push_str(&self.replacement);
            }
            copied = span.end;
        }
        if !matched {
            return Verdict::Keep;
        }
        out.push_str(&line[copied..]);
        Verdict::Replace(out)
    }
}
