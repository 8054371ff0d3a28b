//! `labelSelector` as kube-apiserver reads it, for every resource: `=`, `==`, `!=`,
//! `in (..)`, `notin (..)`, `key` and `!key`; and what a pod list or watch selects: the
//! request's namespace, its labels, and its `fieldSelector` (the one grammar, `fields`) on
//! the labels kube-apiserver's pod strategy makes selectable ([`POD_FIELDS`]; any other is
//! its 400 `field label not supported`).

use std::collections::BTreeMap;

use super::fields::Fields;
use super::listed;
use super::query::query_value;
use crate::k8s::raw_pod::RawPod;

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

/// The pod fields kube-apiserver selects on (`ToSelectableFields` in its pod strategy),
/// and `spec.host`, which its conversion reads as `spec.nodeName`. `status.podIPs` is
/// accepted and, as there, always compares as "".
pub const POD_FIELDS: [&str; 12] = [
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
    "spec.host",
];

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
    fn matches<'v>(&self, get: impl Fn(&str) -> Option<&'v str>) -> bool {
        let one_of = |vs: &[String], x: &str| vs.iter().any(|v| v == x);
        match self {
            Requirement::Equals(k, v) => get(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| one_of(vs, x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| !one_of(vs, x)),
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
        self.matches_with(|k| labels.and_then(|l| l.get(k)).map(String::as_str))
    }

    /// Whether the object whose label values `label` gives (`None` when unset) matches.
    pub fn matches_with<'v>(&self, label: impl Fn(&str) -> Option<&'v str>) -> bool {
        self.0.iter().all(|r| r.matches(&label))
    }
}

/// What a list or watch selects (within what the tenant may see).
pub struct Filter {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: Fields,
}

impl Filter {
    /// Whether `pod` is in the request's namespace and matches its selectors.
    pub fn selects(&self, pod: &RawPod) -> bool {
        let ns = pod.namespace();
        self.namespace.as_deref().is_none_or(|want| want == ns)
            && self.fields.matches(|f| match f {
                // The pod conversion's old name for it.
                "spec.host" => listed::field(pod, "spec.nodeName"),
                f => listed::field(pod, f),
            })
            && self.labels.matches(pod.labels())
    }

    pub fn from_query(query: Option<&str>, namespace: Option<&str>) -> Result<Filter, String> {
        Ok(Filter {
            namespace: namespace.map(str::to_string),
            labels: LabelSelector::parse(&query_value(query, "labelSelector").unwrap_or_default())?,
            fields: Fields::parse(
                &query_value(query, "fieldSelector").unwrap_or_default(),
                &POD_FIELDS,
            )?,
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
    fn field_selectors_take_the_fields_kube_apiserver_selects_pods_by() {
        let pod = crate::k8s::raw_pod::test_pod(
            "leaf",
            serde_json::json!({
                "metadata": {"name": "web", "namespace": "apps"},
                "spec": {"nodeName": "node-1"},
                "status": {"phase": "Running"},
            }),
        );
        let filter = |s: &str| Filter::from_query(Some(&format!("fieldSelector={s}")), None);
        let yes = [
            "metadata.name%3Dweb,metadata.namespace!%3Dkube-system",
            "status.phase!%3DPending",
            "status.phase%3D%3DRunning",
            "spec.nodeName%3Dnode-1",
            "spec.host%3Dnode-1",
            "spec.hostNetwork%3Dfalse",
            "status.podIP%3D",
            "status.podIPs%3D",
            "status.nominatedNodeName!%3Dx",
            "",
        ];
        for s in yes {
            assert!(filter(s).unwrap().selects(&pod), "{s}");
        }
        let no = [
            "metadata.name%3Ddb",
            "status.phase!%3DRunning",
            "spec.nodeName%3Dnode-2",
            "spec.restartPolicy%3DAlways",
            // One term, escapes and all, as for every resource: not `a` or `b`.
            r"metadata.name%3Da\%2Cb",
        ];
        for s in no {
            assert!(!filter(s).unwrap().selects(&pod), "{s}");
        }
        for (s, want) in [
            (
                "spec.containers%3Dx",
                "field label not supported: spec.containers",
            ),
            (
                "metadata.labels%3Dx",
                "field label not supported: metadata.labels",
            ),
            (
                "status.phase",
                "invalid selector: 'status.phase'; can't understand 'status.phase'",
            ),
        ] {
            assert_eq!(filter(s).err().unwrap(), want, "{s}");
        }
    }
}
