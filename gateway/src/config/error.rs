//! Config errors that point at the file, line, column and key, and say what to do.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// One problem in a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    /// 1-based line and column of the offending value, when the error has a place.
    pub position: Option<(usize, usize)>,
    /// Dotted key, with array indices: `route[2].backends[0]`.
    pub key: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some((line, column)) = self.position {
            write!(f, ":{line}:{column}")?;
        }
        if self.key.is_empty() {
            write!(f, ": {}", self.message)
        } else {
            write!(f, ": {}: {}", self.key, self.message)
        }
    }
}

/// Every problem found in one config file; validation does not stop at the first.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

/// Collects errors against one source text, turning byte spans into line:column.
pub(crate) struct Reporter<'a> {
    file: &'a Path,
    source: &'a str,
    pub errors: Vec<ConfigError>,
    /// What is risky but valid: reported, never refused.
    pub warnings: Vec<ConfigError>,
}

impl<'a> Reporter<'a> {
    pub fn new(file: &'a Path, source: &'a str) -> Self {
        Self {
            file,
            source,
            errors: Vec::new(),
            warnings: Vec::new(),
        }
    }

    pub fn error(
        &mut self,
        span: Range<usize>,
        key: impl Into<String>,
        message: impl Into<String>,
    ) {
        // Defaulted values carry the empty span 0..0: they have no place in the file.
        let position = (span != (0..0)).then(|| line_column(self.source, span.start));
        self.errors.push(ConfigError {
            file: self.file.to_path_buf(),
            position,
            key: key.into(),
            message: message.into(),
        });
    }

    /// Like [`Reporter::error`], for something that is allowed but should be fixed.
    pub fn warning(
        &mut self,
        span: Range<usize>,
        key: impl Into<String>,
        message: impl Into<String>,
    ) {
        let position = (span != (0..0)).then(|| line_column(self.source, span.start));
        self.warnings.push(ConfigError {
            file: self.file.to_path_buf(),
            position,
            key: key.into(),
            message: message.into(),
        });
    }

    /// Reports a TOML syntax or shape error, recovering the key from the text around it.
    pub fn toml(&mut self, err: &toml::de::Error) {
        let span = err.span().unwrap_or(0..0);
        let key = key_at(self.source, span.start);
        self.error(span, key, err.message().trim().to_string());
    }

    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        line_column(self.source, offset)
    }
}

pub(crate) fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The dotted key of the value at `offset`, read from the text: the table headers above it
/// (with array-of-tables indices) and the keys of the line up to it (inline tables too).
/// TOML's own errors carry a span but not the key, and a user wants both.
pub(crate) fn key_at(source: &str, offset: usize) -> String {
    let offset = offset.min(source.len());
    let line_start = source[..offset].rfind('\n').map_or(0, |i| i + 1);

    // Table context from the headers above.
    let mut path: Vec<String> = Vec::new();
    let mut counts: std::collections::HashMap<String, usize> = Default::default();
    for line in source[..line_start].lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix("[[").and_then(|l| l.split("]]").next()) {
            let name = name.trim().to_string();
            let index = counts.entry(name.clone()).or_insert(0);
            *index += 1;
            let index = *index - 1;
            // A parent array element starts afresh: reset the counts of its children.
            let prefix = format!("{name}.");
            counts.retain(|k, _| !k.starts_with(&prefix));
            path = indexed(&name, &counts);
            if let Some(last) = path.last_mut() {
                *last = format!("{}[{index}]", last.split('[').next().unwrap_or(last));
            }
        } else if let Some(name) = line.strip_prefix('[').and_then(|l| l.split(']').next()) {
            path = indexed(name.trim(), &counts);
        }
    }

    // Keys on the line itself, up to the offset: `tls = { cert = "x"`.
    let mut stack: Vec<String> = Vec::new();
    let mut pending: Option<String> = None;
    let mut word = String::new();
    let mut in_string = false;
    for c in source[line_start..offset].chars() {
        match c {
            '"' | '\'' => in_string = !in_string,
            _ if in_string => {}
            '=' => {
                pending = Some(std::mem::take(&mut word).trim().to_string());
            }
            '{' => {
                if let Some(k) = pending.take() {
                    stack.push(k);
                }
            }
            '}' => {
                stack.pop();
            }
            ',' => {
                pending = None;
                word.clear();
            }
            c if c.is_alphanumeric() || c == '_' || c == '-' || c == '.' => word.push(c),
            c if c.is_whitespace() => {}
            _ => word.clear(),
        }
    }
    // An unknown key is reported at the key itself: `brust = 1` with the offset on `brust`.
    let rest = &source[offset..];
    let key_here: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
        .collect();
    let after = rest[key_here.len()..].trim_start();
    let tail = if !key_here.is_empty() && after.starts_with('=') {
        Some(key_here)
    } else {
        pending
    };
    path.extend(stack);
    path.extend(tail);
    path.retain(|p| !p.is_empty());
    path.join(".")
}

/// `listener.certificate` with the current indices: `listener[1].certificate`.
fn indexed(name: &str, counts: &std::collections::HashMap<String, usize>) -> Vec<String> {
    let mut prefix = String::new();
    name.split('.')
        .map(|part| {
            if !prefix.is_empty() {
                prefix.push('.');
            }
            prefix.push_str(part.trim());
            match counts.get(&prefix) {
                Some(n) if *n > 0 => format!("{}[{}]", part.trim(), n - 1),
                _ => part.trim().to_string(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based() {
        let src = "a = 1\nbb = 2\n";
        assert_eq!(line_column(src, 0), (1, 1));
        assert_eq!(line_column(src, 6), (2, 1));
        assert_eq!(line_column(src, 11), (2, 6));
    }

    #[test]
    fn keys_are_recovered_from_headers_and_inline_tables() {
        let src = "[admin]\nbind = \"x\"\n[[route]]\nhost = \"a\"\n[[route]]\nbandwidth = \"1\"\ntls = { ca = \"c\" }\n[[listener]]\n[[listener.certificate]]\n[[listener.certificate]]\nhosts = 1\n";
        assert_eq!(key_at(src, src.find("\"x\"").unwrap()), "admin.bind");
        assert_eq!(
            key_at(src, src.find("\"1\"").unwrap()),
            "route[1].bandwidth"
        );
        assert_eq!(key_at(src, src.find("\"c\"").unwrap()), "route[1].tls.ca");
        assert_eq!(
            key_at(src, src.rfind("hosts").unwrap()),
            "listener[0].certificate[1].hosts"
        );
    }
}
