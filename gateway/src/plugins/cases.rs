//! The cases file of `leafgate plugin test`: JSON or YAML, a list of cases, each
//! `{name, config?, request, expect}`. `request` is what `plugin run` reads on stdin for
//! the world (for a log-filter: the lines, as a list or one text); `expect` is what
//! `plugin run` prints (for a log-filter: the lines that remain), or
//! `{"error": "deadline"|"memory"|"trap"|"invalid_answer"}` for a call that must fail.
//!
//! Owns reading the file and saying where it is wrong (`file:line:column`); running the
//! cases is `trial`'s.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::error::FaultKind;

/// A cases file larger than this is refused before it is read: a test's cases are
/// written by hand, and a runaway file should not take the machine's memory.
pub const MAX_FILE: u64 = 16 << 20;

/// One case as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    name: String,
    #[serde(default)]
    config: Option<Value>,
    request: Value,
    expect: Value,
}

/// One case, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub name: String,
    /// The plugin's config as JSON text (`{}` when the case gives none).
    pub config_json: String,
    pub request: Value,
    pub expect: Expect,
}

/// What a case expects of its call.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// This answer, as `plugin run` prints it.
    Answer(Value),
    /// The call fails this way.
    Fault(FaultKind),
}

/// The word a cases file names a failure by.
pub fn fault_word(kind: FaultKind) -> &'static str {
    match kind {
        FaultKind::Timeout => "deadline",
        FaultKind::Memory => "memory",
        FaultKind::Trap => "trap",
        FaultKind::InvalidAnswer => "invalid_answer",
    }
}

impl Expect {
    /// `{"error": WORD}` is a failure, anything else an answer; `Err` for an `error` that
    /// names no failure.
    fn read(value: Value) -> Result<Expect, String> {
        let Some(word) = value
            .as_object()
            .filter(|o| o.len() == 1)
            .and_then(|o| o.get("error"))
        else {
            return Ok(Expect::Answer(value));
        };
        FaultKind::ALL
            .into_iter()
            .find(|k| word.as_str() == Some(fault_word(*k)))
            .map(Expect::Fault)
            .ok_or_else(|| {
                format!("`expect.error` is {word}: one of \"deadline\", \"memory\", \"trap\", \"invalid_answer\"")
            })
    }
}

/// Reads the cases in `path` (JSON when it ends in `.json`, YAML otherwise); an error names
/// the file, line and column.
pub fn read(path: &Path) -> Result<Vec<Case>, String> {
    let at = path.display();
    let size = std::fs::metadata(path)
        .map_err(|e| format!("{at}: {e}"))?
        .len();
    if size > MAX_FILE {
        return Err(format!(
            "{at}: {size} bytes, over the {MAX_FILE} a cases file may hold"
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{at}: {e}"))?;
    let json = path.extension().is_some_and(|e| e == "json");
    parse(&text, json).map_err(|e| format!("{at}:{e}"))
}

/// Parses cases from `text`; the error is `line:column: message`.
pub fn parse(text: &str, json: bool) -> Result<Vec<Case>, String> {
    let written: Vec<Written> = if json {
        serde_json::from_str(text).map_err(|e| located(e.line(), e.column(), &e))?
    } else {
        serde_norway::from_str(text).map_err(|e| {
            let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
            located(line, column, &e)
        })?
    };
    if written.is_empty() {
        return Err("1:1: no cases".into());
    }
    written
        .into_iter()
        .enumerate()
        .map(|(i, w)| {
            let expect = Expect::read(w.expect)
                .map_err(|e| format!("case {} ({:?}): {e}", i + 1, w.name))?;
            let config_json = match w.config {
                None => "{}".to_string(),
                Some(c @ Value::Object(_)) => c.to_string(),
                Some(other) => {
                    return Err(format!(
                        "case {} ({:?}): `config` is {other}, not a table",
                        i + 1,
                        w.name
                    ));
                }
            };
            Ok(Case {
                name: w.name,
                config_json,
                request: w.request,
                expect,
            })
        })
        .collect()
}

/// `line:column: message` of a parser's error, whose own text ends in " at line L column
/// C" (serde_json's and serde_norway's both do): the place said once, up front.
fn located(line: usize, column: usize, error: &dyn std::fmt::Display) -> String {
    let message = error.to_string();
    let message = message
        .rsplit_once(" at line ")
        .map_or(message.as_str(), |(m, _)| m);
    format!("{line}:{column}: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_and_yaml_read_alike() {
        let json_text = r#"[{"name": "a", "config": {"leaf": "x"}, "request": {"pod": "p"}, "expect": {"leaf": "x"}},
            {"name": "b", "request": [], "expect": {"error": "deadline"}}]"#;
        let yaml_text = "- name: a\n  config: {leaf: x}\n  request: {pod: p}\n  expect: {leaf: x}\n\
                         - name: b\n  request: []\n  expect: {error: deadline}\n";
        let from_json = parse(json_text, true).unwrap();
        assert_eq!(from_json, parse(yaml_text, false).unwrap());
        assert_eq!(from_json[0].config_json, r#"{"leaf":"x"}"#);
        assert_eq!(from_json[0].expect, Expect::Answer(json!({"leaf": "x"})));
        assert_eq!(from_json[1].config_json, "{}");
        assert_eq!(from_json[1].expect, Expect::Fault(FaultKind::Timeout));
    }

    #[test]
    fn a_malformed_file_is_refused_at_its_line_and_column() {
        let e = parse(
            "[\n  {\"name\": \"a\",\n   \"request\": {} \"expect\": 1}\n]",
            true,
        )
        .unwrap_err();
        assert!(e.starts_with("3:18: expected `,` or `}`"), "{e}");
        let e = parse("- name: a\n  request: {}\n  expect: [1\n", false).unwrap_err();
        assert!(e.starts_with("4:1: "), "{e}");
        let e = parse("[{\"name\": \"a\", \"request\": {}}]", true).unwrap_err();
        assert!(e.contains("missing field `expect`"), "{e}");
        assert!(e.starts_with("1:"), "{e}");
        let e = parse(
            "[{\"name\": \"a\", \"request\": {}, \"expect\": 1, \"expected\": 2}]",
            true,
        )
        .unwrap_err();
        assert!(e.contains("unknown field `expected`"), "{e}");
        let e = parse("[]", true).unwrap_err();
        assert_eq!(e, "1:1: no cases");
    }

    #[test]
    fn unknown_failures_and_configs_that_are_not_tables_are_refused() {
        let e = parse(
            r#"[{"name": "a", "request": {}, "expect": {"error": "slow"}}]"#,
            true,
        )
        .unwrap_err();
        assert!(
            e.contains("case 1 (\"a\"): `expect.error` is \"slow\""),
            "{e}"
        );
        let e = parse(
            r#"[{"name": "a", "config": [1], "request": {}, "expect": 1}]"#,
            true,
        )
        .unwrap_err();
        assert!(e.contains("`config` is [1], not a table"), "{e}");
    }

    #[test]
    fn a_file_too_large_is_refused_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.json");
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(MAX_FILE + 1).unwrap();
        let e = read(&path).unwrap_err();
        assert!(e.contains("over the"), "{e}");
        let e = read(&dir.path().join("none.yaml")).unwrap_err();
        assert!(e.contains("none.yaml"), "{e}");
    }
}
