//! The part of client-go's `util/jsonpath` that CRD printer columns use, over raw JSON:
//! `FindResults` for a path of `.field`, `[*]`, `[N]` and `[?(@.a.b=="v")]` steps with
//! `AllowMissingKeys(true)`, and `PrintResults` of one value. Owns the evaluation only;
//! which columns a kind has is `crd`'s.

use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    All,
    Index(i64),
    /// `[?(@.<path> == <literal>)]`: the elements whose `path` equals `literal`.
    Filter(Vec<String>, Value),
}

/// A parsed JSONPath expression (`.status.conditions[?(@.type=="Ready")].status`).
#[derive(Debug, Clone, PartialEq)]
pub struct Path(Vec<Step>);

impl Path {
    /// Parses `expr`, with or without the surrounding `{}`.
    pub fn parse(expr: &str) -> Result<Path, String> {
        let e = expr.trim();
        let e = e
            .strip_prefix('{')
            .and_then(|e| e.strip_suffix('}'))
            .unwrap_or(e);
        let mut steps = Vec::new();
        let mut rest = e.strip_prefix('$').unwrap_or(e);
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('.') {
                let end = r.find(['.', '[']).unwrap_or(r.len());
                if end == 0 {
                    return Err(format!("unrecognized identifier in {expr:?}"));
                }
                steps.push(Step::Field(r[..end].to_string()));
                rest = &r[end..];
            } else if let Some(r) = rest.strip_prefix('[') {
                let close = closing(r).ok_or_else(|| format!("unclosed [ in {expr:?}"))?;
                steps.push(bracket(r[..close].trim(), expr)?);
                rest = &r[close + 1..];
            } else {
                return Err(format!("unrecognized character in {expr:?} at {rest:?}"));
            }
        }
        Ok(Path(steps))
    }

    /// Every value the path reaches in `obj`, in document order; missing keys reach
    /// nothing (`AllowMissingKeys(true)`).
    pub fn find<'a>(&self, obj: &'a Value) -> Vec<&'a Value> {
        let mut cur = vec![obj];
        for step in &self.0 {
            let mut next = Vec::new();
            for v in cur {
                match step {
                    Step::Field(f) => {
                        if let Some(x) = v.get(f.as_str()) {
                            next.push(x);
                        }
                    }
                    Step::All => match v {
                        Value::Array(a) => next.extend(a.iter()),
                        Value::Object(m) => next.extend(m.values()),
                        _ => {}
                    },
                    Step::Index(i) => {
                        if let Value::Array(a) = v {
                            let i = if *i < 0 { a.len() as i64 + i } else { *i };
                            if let Some(x) = usize::try_from(i).ok().and_then(|i| a.get(i)) {
                                next.push(x);
                            }
                        }
                    }
                    Step::Filter(path, want) => {
                        if let Value::Array(a) = v {
                            next.extend(a.iter().filter(|e| {
                                path.iter()
                                    .try_fold(*e, |x, f| x.get(f.as_str()))
                                    .is_some_and(|got| loosely_equal(got, want))
                            }));
                        }
                    }
                }
            }
            cur = next;
        }
        cur
    }
}

/// The index of the `]` closing a bracket whose contents start `s`, skipping quoted text.
fn closing(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, ']') => return Some(i),
            _ => {}
        }
    }
    None
}

fn bracket(inner: &str, expr: &str) -> Result<Step, String> {
    if inner == "*" {
        return Ok(Step::All);
    }
    if let Ok(i) = inner.parse::<i64>() {
        return Ok(Step::Index(i));
    }
    if let Some(q) = inner
        .strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .or_else(|| inner.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
    {
        return Ok(Step::Field(q.to_string()));
    }
    let filter = inner
        .strip_prefix("?(")
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("unsupported bracket [{inner}] in {expr:?}"))?;
    let (left, right) = filter
        .split_once("==")
        .ok_or_else(|| format!("unsupported filter {filter:?} in {expr:?}"))?;
    let path = left
        .trim()
        .strip_prefix("@.")
        .ok_or_else(|| format!("unsupported filter {filter:?} in {expr:?}"))?
        .split('.')
        .map(str::to_string)
        .collect();
    let right = right.trim();
    let literal = match right
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| right.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
    {
        Some(s) => Value::String(s.to_string()),
        None => serde_json::from_str(right)
            .map_err(|_| format!("unsupported literal {right:?} in {expr:?}"))?,
    };
    Ok(Step::Filter(path, literal))
}

fn loosely_equal(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        _ => got == want,
    }
}

/// `PrintResults` of one value: maps and lists as Go's `json.Marshal` writes them (compact,
/// `<`, `>`, `&` escaped), scalars as `fmt.Fprint` does. None for `null` (which a CRD's
/// structural schema never stores: non-nullable nulls are pruned).
pub fn print(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Array(_) | Value::Object(_) => Some(go_json(v)),
    }
}

/// `json.Marshal`'s text of `v`: serde's compact form with Go's HTML-safe escapes.
fn go_json(v: &Value) -> String {
    serde_json::to_string(v)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn first(expr: &str, obj: &Value) -> Option<String> {
        let p = Path::parse(expr).unwrap();
        p.find(obj).first().and_then(|v| print(v))
    }

    #[test]
    fn the_gateway_api_columns() {
        let gw = json!({
            "spec": {"gatewayClassName": "leafgate", "hostnames": ["a.example", "b<&>.example"]},
            "status": {
                "addresses": [{"type": "IPAddress", "value": "10.0.0.10"},
                              {"type": "IPAddress", "value": "10.0.0.11"}],
                "conditions": [{"type": "Accepted", "status": "True"},
                               {"type": "Programmed", "status": "False"}]
            }
        });
        assert_eq!(
            first(".spec.gatewayClassName", &gw).as_deref(),
            Some("leafgate")
        );
        // The table convertor prints the first result only.
        assert_eq!(
            first(".status.addresses[*].value", &gw).as_deref(),
            Some("10.0.0.10")
        );
        assert_eq!(
            first(r#".status.conditions[?(@.type=="Programmed")].status"#, &gw).as_deref(),
            Some("False")
        );
        assert_eq!(
            first(r#"{.status.conditions[?(@.type=="Ready")].status}"#, &gw),
            None
        );
        assert_eq!(
            first(".spec.hostnames", &gw).as_deref(),
            Some(r#"["a.example","b\u003c\u0026\u003e.example"]"#)
        );
        assert_eq!(first(".spec.description", &gw), None);
        assert_eq!(
            first(".status.addresses[1].value", &gw).as_deref(),
            Some("10.0.0.11")
        );
        assert_eq!(
            first(".status.addresses[-1].type", &gw).as_deref(),
            Some("IPAddress")
        );
        assert_eq!(first(".nothing[*].value", &gw), None);
        assert!(Path::parse(".a[?(@.x>1)]").is_err());
    }
}
