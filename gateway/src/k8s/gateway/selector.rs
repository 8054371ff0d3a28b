//! A `metav1.LabelSelector` (`matchLabels` and `matchExpressions`, ANDed) against an
//! object's labels, for `allowedRoutes.namespaces.selector`.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Whether `labels` satisfy `selector`; an unknown operator matches nothing. An empty
/// selector matches everything.
pub fn matches(selector: &LabelSelector, labels: Option<&BTreeMap<String, String>>) -> bool {
    let get = |k: &str| labels.and_then(|l| l.get(k));
    let by_label = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| get(k) == Some(v));
    by_label
        && selector.match_expressions.iter().flatten().all(|e| {
            let values = e.values.as_deref().unwrap_or(&[]);
            match e.operator.as_str() {
                "In" => get(&e.key).is_some_and(|v| values.contains(v)),
                "NotIn" => get(&e.key).is_none_or(|v| !values.contains(v)),
                "Exists" => get(&e.key).is_some(),
                "DoesNotExist" => get(&e.key).is_none(),
                _ => false,
            }
        })
}
