//! Field selectors over objects kept as raw JSON (events, namespaces), read as
//! kube-apiserver's `fields.ParseSelector` reads them: terms split on unescaped commas,
//! each `key=value`, `key==value` or `key!=value` (the first operator wins), values
//! unescaped (`\,`, `\=`, `\\`). A key the resource does not index is kube-apiserver's
//! 400 `field label not supported: <key>`.
//!
//! It parses and matches; which keys a resource indexes and where their values live is
//! the resource's module's.

/// One term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    key: String,
    value: String,
    equal: bool,
}

/// A parsed field selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields(Vec<Term>);

/// Splits on commas no backslash escapes.
fn split_terms(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            ',' => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

/// `fields.UnescapeValue`: `\\`, `\,` and `\=` stand for themselves; a bare `,` or `=`
/// or any other escape is an error.
fn unescape(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{e}"
                    ));
                }
                None => return Err("invalid field selector: trailing escape".into()),
            },
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {c}"
                ));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

impl Fields {
    /// Parses `text`, accepting only the keys in `supported` (any other:
    /// `field label not supported: <key>`, the core kinds' words).
    pub fn parse(text: &str, supported: &[&str]) -> Result<Fields, String> {
        Fields::parse_refusing(text, supported, |key| {
            format!("field label not supported: {key}")
        })
    }

    /// [`Fields::parse`], `refusal` wording the error for a key not in `supported` (each
    /// kind's field label conversion words it its own way).
    pub fn parse_refusing(
        text: &str,
        supported: &[&str],
        refusal: impl Fn(&str) -> String,
    ) -> Result<Fields, String> {
        let mut terms = Vec::new();
        for part in split_terms(text) {
            if part.is_empty() {
                continue;
            }
            let split = part.char_indices().find_map(|(i, _)| {
                let rest = &part[i..];
                ["!=", "==", "="]
                    .into_iter()
                    .find(|op| rest.starts_with(op))
                    .map(|op| (&part[..i], op, &rest[op.len()..]))
            });
            let Some((key, op, value)) = split else {
                return Err(format!(
                    "invalid selector: '{text}'; can't understand '{part}'"
                ));
            };
            if !supported.contains(&key) {
                return Err(refusal(key));
            }
            terms.push(Term {
                key: key.to_string(),
                value: unescape(value)?,
                equal: op != "!=",
            });
        }
        Ok(Fields(terms))
    }

    /// Whether every term holds, `get` giving a key's value ("" when absent).
    pub fn matches(&self, get: impl Fn(&str) -> String) -> bool {
        self.0.iter().all(|t| (get(&t.key) == t.value) == t.equal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: &[&str] = &["metadata.name", "reason", "involvedObject.name"];

    #[test]
    fn operators_and_escapes_as_kube_apiserver() {
        let f = Fields::parse(
            "reason=Pulled,involvedObject.name==web,metadata.name!=x",
            KEYS,
        )
        .unwrap();
        let get = |k: &str| match k {
            "reason" => "Pulled".to_string(),
            "involvedObject.name" => "web".to_string(),
            _ => "y".to_string(),
        };
        assert!(f.matches(get));
        assert!(!f.matches(|_| String::new()));
        let f = Fields::parse(r"reason=a\,b\=c", KEYS).unwrap();
        assert!(f.matches(|_| "a,b=c".to_string()));
        assert!(Fields::parse("", KEYS).unwrap().matches(|_| String::new()));
        // An absent field compares as "".
        assert!(
            Fields::parse("reason=", KEYS)
                .unwrap()
                .matches(|_| String::new())
        );
    }

    #[test]
    fn refusals_word_as_kube_apiserver() {
        assert_eq!(
            Fields::parse("spec.nodeName=n", KEYS).unwrap_err(),
            "field label not supported: spec.nodeName"
        );
        assert_eq!(
            Fields::parse("reason", KEYS).unwrap_err(),
            "invalid selector: 'reason'; can't understand 'reason'"
        );
        assert!(Fields::parse(r"reason=a\x", KEYS).is_err());
        assert!(Fields::parse("reason=a=b", KEYS).is_err());
    }
}
