//! The redaction itself, apart from the plugin's plumbing, so the gateway's benchmark can
//! run this very code natively as the peer it measures the plugin against
//! (`bench/criterion/plugins.rs` includes this file). It needs only `regex-automata`,
//! `regex-syntax` and `memchr`.
//!
//! Every match of every pattern starts with one of a few literals the patterns name
//! (`password=`, `Bearer `, `GET /healthz`). Each is looked for across the whole batch with
//! `memchr`'s substring search, which has `simd128` in WebAssembly where the regex engines
//! have no SIMD at all. Lines holding none are kept without being cut out or read again;
//! on a line holding some, the regexes run anchored where the literals were found instead
//! of scanning the line for where a match could start.

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
struct Starts {
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
}

/// One batch's search for the literals. Each literal is looked for across the whole batch,
/// from one occurrence to the next, rather than line by line: a call per occurrence
/// instead of a call per line, and in WebAssembly the calls cost more than the scanning.
struct Scan<'a> {
    literals: &'a [Literal],
    text: &'a [u8],
    /// Where each literal next occurs at or after the lines seen so far (`usize::MAX`:
    /// nowhere).
    next: Vec<usize>,
}

impl<'a> Scan<'a> {
    fn new(literals: &'a Literals, text: &'a str) -> Self {
        let text = text.as_bytes();
        Scan {
            literals: &literals.0,
            text,
            next: literals.0.iter().map(|l| l.find_from(text, 0)).collect(),
        }
    }

    /// Where the next literal occurs, if any does.
    fn first(&self) -> Option<usize> {
        self.next
            .iter()
            .copied()
            .min()
            .filter(|&at| at != usize::MAX)
    }

    /// Fills `starts` with every place a literal occurs in the line `start..end`, as
    /// offsets into the line; `false` when none does. Lines come in order, and the search
    /// moves past `end` (the line's newline).
    fn find(&mut self, start: usize, end: usize, starts: &mut Starts) -> bool {
        starts.drop.clear();
        starts.secret.clear();
        for (literal, next) in self.literals.iter().zip(&mut self.next) {
            while *next <= end {
                let at = *next;
                // An occurrence across a newline belongs to no line.
                if at >= start && at + literal.finder.needle().len() <= end {
                    if literal.drop {
                        starts.drop.push(at - start);
                    }
                    if literal.secret {
                        starts.secret.push(at - start);
                    }
                }
                *next = literal.find_from(self.text, at + 1);
            }
        }
        // Each literal's occurrences come in order; only several literals need merging.
        for list in [&mut starts.drop, &mut starts.secret] {
            if list.len() > 1 {
                list.sort_unstable();
            }
        }
        !(starts.drop.is_empty() && starts.secret.is_empty())
    }
}

impl Literal {
    /// Where this literal first occurs in `text` at or after `from`.
    fn find_from(&self, text: &[u8], from: usize) -> usize {
        text.get(from..)
            .and_then(|rest| self.finder.find(rest))
            .map_or(usize::MAX, |at| from + at)
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

    /// Calls `emit` with the verdict on each line of `batch`, in order: a line per newline,
    /// plus the last.
    pub fn filter(&self, batch: &str, mut emit: impl FnMut(Verdict)) {
        let text = batch.as_bytes();
        let Some(literals) = &self.literals else {
            let mut start = 0;
            for end in memchr::memchr_iter(b'\n', text).chain([text.len()]) {
                emit(self.search_everywhere(&batch[start..end]));
                start = end + 1;
            }
            return;
        };
        // Lines without a literal are kept unread: only the lines around the literals'
        // occurrences are cut out and searched; the ones between are counted.
        fn keep(lines: &[u8], emit: &mut impl FnMut(Verdict)) {
            // Counted in one vectorised pass, not found one by one.
            for _ in 0..memchr::memchr_iter(b'\n', lines).count() {
                emit(Verdict::Keep);
            }
        }
        let mut scan = Scan::new(literals, batch);
        let mut starts = Starts::default();
        // Where the first line not yet judged starts.
        let mut from = 0;
        while let Some(hit) = scan.first() {
            let start = memchr::memrchr(b'\n', &text[from..hit]).map_or(from, |i| from + i + 1);
            let end = memchr::memchr(b'\n', &text[hit..]).map_or(text.len(), |i| hit + i);
            keep(&text[from..start], &mut emit);
            emit(if scan.find(start, end, &mut starts) {
                self.search_at(&batch[start..end], &starts)
            } else {
                Verdict::Keep
            });
            if end == text.len() {
                return;
            }
            from = end + 1;
        }
        keep(&text[from..], &mut emit);
        emit(Verdict::Keep);
    }

    /// The verdict on a line where the literals occur at `starts`.
    fn search_at(&self, line: &str, starts: &Starts) -> Verdict {
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
