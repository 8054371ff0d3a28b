//! File sizes: how many lines of a file are code rather than tests, and which files pass
//! a limit without saying why in their header.
//!
//! Test code is a file declared under `#[cfg(test)]` (left out of the tree altogether) and,
//! inside a file, every item under a top-level `#[cfg(test)]` line: a `mod tests;`
//! declaration, or a block up to its closing `}` at the start of a line. A long file says
//! why in its header, a `//!` line that begins with [`REASON`].

use std::path::Path;

use crate::source::{self, Error};

/// How a file's header begins the line that says why it is long.
pub const REASON: &str = "//! Long file:";

/// A file of more than the limit's lines of code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LongFile {
    /// The path relative to the source root.
    pub rel: String,
    /// Its lines that are not test code.
    pub code_lines: usize,
    /// Its header's reason, when it gives one.
    pub reason: Option<String>,
}

/// Every non-test file under `root` with more than `limit` lines of code.
pub fn long_files(root: &Path, limit: usize) -> Result<Vec<LongFile>, Error> {
    let tree = source::read(root)?;
    let mut long = Vec::new();
    for file in &tree.files {
        let path = root.join(&file.rel);
        let text = std::fs::read_to_string(&path).map_err(|e| Error::Io(path.clone(), e))?;
        let code_lines = code_lines(&text);
        if code_lines > limit {
            long.push(LongFile {
                rel: file.rel.clone(),
                code_lines,
                reason: reason(&text),
            });
        }
    }
    Ok(long)
}

/// The lines of `text` outside its top-level `#[cfg(test)]` items.
pub fn code_lines(text: &str) -> usize {
    let mut count = 0;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim_end() != "#[cfg(test)]" {
            count += 1;
            continue;
        }
        // The item the attribute is on: one line ending in `;`, or a block to its `}`.
        for item in lines.by_ref() {
            let item = item.trim_end();
            if item == "}" || (!item.starts_with(char::is_whitespace) && item.ends_with(';')) {
                break;
            }
        }
    }
    count
}

/// The header's reason for a long file: the text after [`REASON`] on the first `//!`
/// lines, with the `//!` lines that continue it.
pub fn reason(text: &str) -> Option<String> {
    let header: Vec<&str> = text.lines().take_while(|l| l.starts_with("//!")).collect();
    let start = header.iter().position(|l| l.starts_with(REASON))?;
    let mut why = header[start][REASON.len()..].trim().to_string();
    for more in &header[start + 1..] {
        let more = more.trim_start_matches("//!").trim();
        if more.is_empty() {
            break;
        }
        why.push(' ');
        why.push_str(more);
    }
    (!why.is_empty()).then_some(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_modules_and_declarations_are_not_counted() {
        let text = "//! A file.\n\nfn a() {}\n\n#[cfg(test)]\nmod t;\n\nfn b() {\n}\n\n#[cfg(test)]\nmod tests {\n    fn x() {\n    }\n}\n";
        // `//! A file.`, blank, `fn a`, blank, blank, `fn b() {`, `}`, blank.
        assert_eq!(code_lines(text), 8);
    }

    #[test]
    fn a_reason_is_read_from_the_header_with_its_continuation() {
        let text = "//! What it is.\n//!\n//! Long file: one state machine,\n//! read top to bottom.\n//!\n//! More.\nfn a() {}\n";
        assert_eq!(
            reason(text).as_deref(),
            Some("one state machine, read top to bottom.")
        );
        assert_eq!(reason("//! No reason.\nfn a() {}\n"), None);
        // Only the header counts.
        assert_eq!(reason("fn a() {}\n//! Long file: late\n"), None);
    }
}
