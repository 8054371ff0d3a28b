//! `labelSelector` and `fieldSelector` as kube-apiserver reads them, for pods: labels with
//! `=`, `==`, `!=`, `in (..)`, `notin (..)`, `key` and `!key`; fields `metadata.name` and
//! `metadata.namespace` with `=`, `==` and `!=` (any other field is a 400, as the API
//! server answers for a field pods do not index).

use std::collections::BTreeMap;

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

/// A parsed field selector on a pod's name and namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<Requirement>);

/// Splits on commas outside parentheses.
fn terms(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(text[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(text[start..].trim());
    out.into_iter().filter(|t| !t.is_empty()).collect()
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

/// A label value: empty, or alphanumerics with `-`, `_`, `.` inside.
fn valid_value(value: &str) -> bool {
    value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn set_values(rest: &str) -> Option<Vec<String>> {
    let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect(),
    )
}

fn requirement(term: &str) -> Result<Requirement, String> {
    let bad = || format!("unable to parse requirement: {term:?}");
    if let Some(key) = term.strip_prefix('!') {
        let key = key.trim();
        return valid_key(key)
            .then(|| Requirement::NotExists(key.into()))
            .ok_or_else(bad);
    }
    for (op, make) in [
        (
            "!=",
            Requirement::NotEquals as fn(String, String) -> Requirement,
        ),
        ("==", Requirement::Equals),
        ("=", Requirement::Equals),
    ] {
        if let Some((k, v)) = term.split_once(op) {
            let (k, v) = (k.trim(), v.trim());
            return (valid_key(k) && valid_value(v))
                .then(|| make(k.into(), v.into()))
                .ok_or_else(bad);
        }
    }
    let mut words = term.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or("").trim();
    let rest = words.next().unwrap_or("").trim();
    if rest.is_empty() {
        return valid_key(key)
            .then(|| Requirement::Exists(key.into()))
            .ok_or_else(bad);
    }
    if !valid_key(key) {
        return Err(bad());
    }
    if let Some(set) = rest.strip_prefix("notin") {
        return set_values(set)
            .map(|vs| Requirement::NotIn(key.into(), vs))
            .ok_or_else(bad);
    }
    if let Some(set) = rest.strip_prefix("in") {
        return set_values(set)
            .map(|vs| Requirement::In(key.into(), vs))
            .ok_or_else(bad);
    }
    Err(bad())
}

impl Requirement {
    fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        match self {
            Requirement::Equals(k, v) => get(k).as_deref() == Some(v),
            Requirement::NotEquals(k, v) => get(k).as_deref() != Some(v),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.contains(&x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.contains(&x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::NotExists(k) => get(k).is_none(),
        }
    }
}

impl LabelSelector {
    pub fn parse(text: &str) -> Result<Self, String> {
        terms(text)
            .into_iter()
            .map(requirement)
            .collect::<Result<_, _>>()
            .map(LabelSelector)
    }

    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        self.0
            .iter()
            .all(|r| r.matches(|k| labels.and_then(|l| l.get(k)).cloned()))
    }
}

impl FieldSelector {
    pub fn parse(text: &str) -> Result<Self, String> {
        let reqs = terms(text)
            .into_iter()
            .map(requirement)
            .collect::<Result<Vec<_>, _>>()?;
        for r in &reqs {
            let key = match r {
                Requirement::Equals(k, _) | Requirement::NotEquals(k, _) => k,
                _ => {
                    return Err(format!(
                        "invalid selector: {text:?}; only = and != are supported on fields"
                    ));
                }
            };
            if key != "metadata.name" && key != "metadata.namespace" {
                return Err(format!(
                    "field label not supported: {key} (leafgate selects pods by metadata.name and metadata.namespace)"
                ));
            }
        }
        Ok(FieldSelector(reqs))
    }

    pub fn matches(&self, namespace: &str, name: &str) -> bool {
        self.0.iter().all(|r| {
            r.matches(|k| match k {
                "metadata.name" => Some(name.to_string()),
                "metadata.namespace" => Some(namespace.to_string()),
                _ => None,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn label_selectors_match_as_the_api_server_does() {
        let l = labels(&[("app", "x"), ("tier", "web")]);
        let yes = [
            "app=x",
            "app==x",
            "app",
            "!db",
            "tier in (web, db)",
            "app notin (y)",
            "app=x,tier!=db",
            "",
        ];
        for s in yes {
            assert!(LabelSelector::parse(s).unwrap().matches(Some(&l)), "{s}");
        }
        let no = [
            "app=y",
            "app!=x",
            "db",
            "!app",
            "tier in (db)",
            "tier notin (web)",
        ];
        for s in no {
            assert!(!LabelSelector::parse(s).unwrap().matches(Some(&l)), "{s}");
        }
        assert!(LabelSelector::parse("app=(").is_err());
        assert!(!LabelSelector::parse("app=x").unwrap().matches(None));
    }

    #[test]
    fn field_selectors_take_name_and_namespace_only() {
        let f = FieldSelector::parse("metadata.name=web,metadata.namespace!=kube-system").unwrap();
        assert!(f.matches("apps", "web"));
        assert!(!f.matches("kube-system", "web"));
        assert!(!f.matches("apps", "db"));
        let e = FieldSelector::parse("spec.nodeName=n1").unwrap_err();
        assert!(
            e.starts_with("field label not supported: spec.nodeName"),
            "{e}"
        );
    }
}
