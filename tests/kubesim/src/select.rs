//! Label and field selectors as kube-apiserver parses them (`=`, `==`, `!=`, `in`, `notin`,
//! existence, `!key`). Owns parsing and matching only; it does not know about storage.

use serde_json::Value;

/// A selector that could not be parsed; the message is kube-apiserver's wording.
#[derive(Debug, thiserror::Error)]
#[error("unable to parse requirement: {0}")]
pub struct SelectorError(pub String);

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Eq(String),
    Ne(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    NotExists,
}

/// A parsed selector: every requirement must hold.
#[derive(Debug, Clone, Default)]
pub struct Selector {
    reqs: Vec<(String, Op)>,
}

fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn set(s: &str) -> Result<Vec<String>, SelectorError> {
    let s = s.trim();
    let inner = s
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| SelectorError(format!("expected a parenthesised set, found {s:?}")))?;
    Ok(inner.split(',').map(|v| v.trim().to_string()).collect())
}

impl Selector {
    /// Parses a label selector (`fields` = false) or a field selector (only `=`, `==`, `!=`).
    pub fn parse(text: &str, fields: bool) -> Result<Selector, SelectorError> {
        let mut reqs = Vec::new();
        for term in split_top(text) {
            let t = term.trim();
            if t.is_empty() {
                continue;
            }
            let req = if let Some((k, v)) = t.split_once("!=") {
                (k.trim().to_string(), Op::Ne(v.trim().to_string()))
            } else if let Some((k, v)) = t.split_once("==") {
                (k.trim().to_string(), Op::Eq(v.trim().to_string()))
            } else if let Some((k, v)) = t.split_once('=') {
                (k.trim().to_string(), Op::Eq(v.trim().to_string()))
            } else if fields {
                return Err(SelectorError(format!("invalid field selector: {t:?}")));
            } else if let Some(i) = t.find(" notin ") {
                (t[..i].trim().to_string(), Op::NotIn(set(&t[i + 7..])?))
            } else if let Some(i) = t.find(" in ") {
                (t[..i].trim().to_string(), Op::In(set(&t[i + 4..])?))
            } else if let Some(k) = t.strip_prefix('!') {
                (k.trim().to_string(), Op::NotExists)
            } else if t.contains(char::is_whitespace) || t.contains('(') {
                return Err(SelectorError(format!("invalid requirement {t:?}")));
            } else {
                (t.to_string(), Op::Exists)
            };
            if req.0.is_empty() {
                return Err(SelectorError(format!("empty key in {t:?}")));
            }
            reqs.push(req);
        }
        Ok(Selector { reqs })
    }

    /// Whether `get(key)` satisfies every requirement.
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.reqs.iter().all(|(k, op)| {
            let v = get(k);
            match op {
                Op::Eq(x) => v.as_deref() == Some(x.as_str()),
                Op::Ne(x) => v.as_deref() != Some(x.as_str()),
                Op::In(xs) => v.is_some_and(|v| xs.contains(&v)),
                Op::NotIn(xs) => v.is_none_or(|v| !xs.contains(&v)),
                Op::Exists => v.is_some(),
                Op::NotExists => v.is_none(),
            }
        })
    }

    /// Label match against `metadata.labels`.
    pub fn matches_labels(&self, obj: &Value) -> bool {
        self.matches(|k| {
            obj.pointer("/metadata/labels")
                .and_then(|l| l.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
    }

    /// Field match for an object of resource `plural`; fields it does not index never
    /// match (callers reject them first with `field_pointer`).
    pub fn matches_fields(&self, plural: &str, obj: &Value) -> bool {
        self.matches(|k| {
            let ptr = field_pointer(plural, k)?;
            Some(match obj.pointer(ptr) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                _ => unset_value(plural, k).to_string(),
            })
        })
    }

    /// The field names this selector uses, for rejecting unsupported ones.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.reqs.iter().map(|(k, _)| k.as_str())
    }
}

/// Where in the object a field selector key of resource `plural` looks, for the fields
/// kube-apiserver indexes (its `GetAttrs`/`AddFieldLabelConversionFunc` lists); None for
/// the rest, which it answers `field label not supported`.
pub fn field_pointer(plural: &str, key: &str) -> Option<&'static str> {
    let common = match key {
        "metadata.name" => Some("/metadata/name"),
        "metadata.namespace" => Some("/metadata/namespace"),
        _ => None,
    };
    common.or(match (plural, key) {
        ("pods", "spec.nodeName") => Some("/spec/nodeName"),
        ("pods", "spec.restartPolicy") => Some("/spec/restartPolicy"),
        ("pods", "spec.schedulerName") => Some("/spec/schedulerName"),
        ("pods", "spec.serviceAccountName") => Some("/spec/serviceAccountName"),
        ("pods", "status.phase") => Some("/status/phase"),
        ("pods", "status.podIP") => Some("/status/podIP"),
        ("pods", "status.nominatedNodeName") => Some("/status/nominatedNodeName"),
        ("nodes", "spec.unschedulable") => Some("/spec/unschedulable"),
        ("namespaces", "status.phase") => Some("/status/phase"),
        ("secrets", "type") => Some("/type"),
        // `JobToSelectableFields`: the count as a decimal. (A ReplicaSet's strategy indexes
        // `status.replicas` too, but apps/v1 registers no field label conversion, so the
        // default one refuses it before the strategy is asked.)
        ("jobs", "status.successful") => Some("/status/succeeded"),
        // `AddFieldLabelConversionsForService` (1.31+).
        ("services", "spec.clusterIP") => Some("/spec/clusterIP"),
        ("services", "spec.type") => Some("/spec/type"),
        ("events", "involvedObject.kind") => Some("/involvedObject/kind"),
        ("events", "involvedObject.namespace") => Some("/involvedObject/namespace"),
        ("events", "involvedObject.name") => Some("/involvedObject/name"),
        ("events", "involvedObject.uid") => Some("/involvedObject/uid"),
        ("events", "involvedObject.apiVersion") => Some("/involvedObject/apiVersion"),
        ("events", "involvedObject.resourceVersion") => Some("/involvedObject/resourceVersion"),
        ("events", "involvedObject.fieldPath") => Some("/involvedObject/fieldPath"),
        ("events", "reason") => Some("/reason"),
        ("events", "reportingComponent") => Some("/reportingComponent"),
        ("events", "source") => Some("/source/component"),
        ("events", "type") => Some("/type"),
        _ => None,
    })
}

/// What a selectable field holds when the object leaves it unset: the strategies read the
/// defaulted internal object, so a Job's `status.successful` is `strconv.Itoa(0)` and a
/// Service's `spec.type` its default ClusterIP.
fn unset_value(plural: &str, key: &str) -> &'static str {
    match (plural, key) {
        ("jobs", "status.successful") => "0",
        ("services", "spec.type") => "ClusterIP",
        _ => "",
    }
}

/// kube-apiserver's 400 message for a field selector on `key`, which `plural` does not
/// index: the words of the kind's field label conversion (core v1 `Pod`, `Node`,
/// `ReplicationController`, `Event`, `Namespace`, `Secret`, `Service`: `field label not
/// supported: <key>`; batch/v1 `Job`), else of `runtime.DefaultMetaV1FieldSelectorConversion`
/// for the kinds registering none. The kinds kubesim served before these (ingresses,
/// ingressclasses, leases, endpointslices) keep the message they had.
pub fn unsupported_field(plural: &str, key: &str) -> String {
    match plural {
        "jobs" => format!("field label {key:?} not supported for Job"),
        "deployments"
        | "replicasets"
        | "statefulsets"
        | "daemonsets"
        | "controllerrevisions"
        | "cronjobs"
        | "endpoints"
        | "configmaps"
        | "persistentvolumeclaims"
        | "serviceaccounts"
        | "limitranges"
        | "resourcequotas"
        | "networkpolicies"
        | "horizontalpodautoscalers"
        | "poddisruptionbudgets" => format!(
            "{key:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        ),
        _ => format!("field label not supported: {key}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(labels: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "labels": labels}, "spec": {"nodeName": "n1"}})
    }

    #[test]
    fn label_operators() {
        let p = pod(json!({"app": "web", "tier": "front"}));
        let m = |s: &str| Selector::parse(s, false).unwrap().matches_labels(&p);
        assert!(m("app=web"));
        assert!(m("app==web,tier"));
        assert!(!m("app!=web"));
        assert!(m("app in (web, api)"));
        assert!(!m("app notin (web,api)"));
        assert!(m("tier notin (back)"));
        assert!(m("!missing"));
        assert!(!m("!app"));
        assert!(!m("missing"));
        assert!(!m("app in (api),tier"));
        assert!(m(""));
    }

    #[test]
    fn field_selectors() {
        let p = pod(json!({}));
        let m = |s: &str| Selector::parse(s, true).unwrap().matches_fields("pods", &p);
        assert!(m("spec.nodeName=n1,metadata.namespace=ns"));
        assert!(!m("metadata.name!=p"));
        assert!(Selector::parse("spec.nodeName", true).is_err());
    }

    #[test]
    fn fields_per_resource() {
        let secret = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls"});
        let m = |s: &str| {
            Selector::parse(s, true)
                .unwrap()
                .matches_fields("secrets", &secret)
        };
        assert!(m("type=kubernetes.io/tls"));
        assert!(!m("type=Opaque"));
        let event = json!({"involvedObject": {"kind": "Ingress", "name": "web"}, "source": {"component": "leafgate"}});
        let e = |s: &str| {
            Selector::parse(s, true)
                .unwrap()
                .matches_fields("events", &event)
        };
        assert!(e(
            "involvedObject.kind=Ingress,involvedObject.name=web,source=leafgate"
        ));
        assert!(e("involvedObject.namespace="));
        assert!(field_pointer("secrets", "spec.nodeName").is_none());
        let job = json!({"metadata": {"name": "j"}, "status": {"succeeded": 1}});
        let j = |s: &str, o: &Value| Selector::parse(s, true).unwrap().matches_fields("jobs", o);
        assert!(j("status.successful=1", &job));
        assert!(!j("status.successful=0", &job));
        assert!(j(
            "status.successful=0",
            &json!({"metadata": {"name": "k"}})
        ));
        assert!(field_pointer("replicasets", "status.replicas").is_none());
        let svc = json!({"metadata": {"name": "s"}, "spec": {"clusterIP": "None"}});
        let v = |s: &str| {
            Selector::parse(s, true)
                .unwrap()
                .matches_fields("services", &svc)
        };
        assert!(v("spec.clusterIP=None,spec.type=ClusterIP"));
        assert!(!v("spec.clusterIP!=None"));
        assert_eq!(
            unsupported_field("deployments", "spec.replicas"),
            r#""spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
        assert_eq!(
            unsupported_field("jobs", "spec.x"),
            r#"field label "spec.x" not supported for Job"#
        );
        assert_eq!(
            unsupported_field("pods", "spec.x"),
            "field label not supported: spec.x"
        );
        assert!(field_pointer("ingresses", "type").is_none());
    }

    #[test]
    fn bad_label_selector() {
        assert!(Selector::parse("a in b", false).is_err());
        assert!(Selector::parse("=x", false).is_err());
    }
}
