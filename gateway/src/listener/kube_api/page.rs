//! `limit` and `continue` on the kube-api front's lists, as kubectl's `--chunk-size`
//! (500 by default) pages through them.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::listed::Listed;
use super::query::query_value;
use crate::k8s::feed::Object;
use crate::k8s::status::Status;

/// `limit` and `continue` of a list: a page of at most `limit` items after the last one
/// the continue token names. The token carries the position (namespace, name, leaf of
/// the last item sent) and the first page's `resourceVersion`; the next page is read from
/// the stores as they are then, so a pod added or removed behind the position is not
/// repeated or skipped, one changed ahead of it is sent as it is now (kube-apiserver
/// serves pages from one snapshot instead, and answers 410 once that is compacted). Any
/// resource's lists page alike, in their order ([`super::listed::sort`]).
pub struct Page {
    limit: Option<usize>,
    after: Option<(String, String, String)>,
    /// The first page's `resourceVersion`, carried by its continue token.
    pub version: Option<String>,
}

impl Page {
    pub fn from_query(query: Option<&str>) -> Result<Page, Status> {
        let limit = match query_value(query, "limit").filter(|l| !l.is_empty()) {
            None => None,
            Some(l) => match l.parse::<i64>() {
                Ok(n) if n > 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
                Ok(_) => None,
                Err(_) => {
                    return Err(Status::new(
                        400,
                        format!("limit: Invalid value: {l:?}: must be an integer"),
                    ));
                }
            },
        };
        let Some(token) = query_value(query, "continue").filter(|c| !c.is_empty()) else {
            return Ok(Page {
                limit,
                after: None,
                version: None,
            });
        };
        // Tokens never expire here (the next page is read from the stores as they are),
        // so one that does not decode is only ever a client's mistake.
        let invalid = || Status::new(400, format!("continue key is not valid: {token:?}"));
        let decoded = URL_SAFE_NO_PAD
            .decode(&token)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .ok_or_else(invalid)?;
        let text = |k: &str| decoded[k].as_str().map(str::to_string);
        match (text("ns"), text("name"), text("leaf"), text("rv")) {
            (Some(ns), Some(name), Some(leaf), Some(rv)) => Ok(Page {
                limit,
                after: Some((ns, name, leaf)),
                version: Some(rv),
            }),
            _ => Err(invalid()),
        }
    }

    /// The page of `items` (in list order, [`super::listed::sort`]) and, when more
    /// follow, the continue token and how many remain.
    pub fn cut<T: Object>(
        &self,
        items: Vec<Listed<T>>,
        version: &str,
    ) -> (Vec<Listed<T>>, Option<(String, usize)>) {
        let mut pods: Vec<Listed<T>> = match &self.after {
            None => items,
            Some((ns, name, leaf)) => items
                .into_iter()
                .filter(|p| p.order((ns, name, leaf)).is_gt())
                .collect(),
        };
        let Some(limit) = self.limit.filter(|l| *l < pods.len()) else {
            return (pods, None);
        };
        let remaining = pods.len() - limit;
        pods.truncate(limit);
        let last = &pods[limit - 1];
        let token = json!({
            "ns": last.namespace(), "name": last.name(), "leaf": &*last.leaf, "rv": version,
        });
        (
            pods,
            Some((URL_SAFE_NO_PAD.encode(token.to_string()), remaining)),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn pod(ns: &str, name: &str, leaf: &str) -> Listed {
        let json = serde_json::json!({"metadata": {"namespace": ns, "name": name}});
        Listed {
            leaf: leaf.into(),
            object: Arc::new(crate::k8s::RawPod::from_value(json).unwrap().stamp(leaf)),
        }
    }

    fn names(pods: &[Listed]) -> Vec<String> {
        pods.iter()
            .map(|p| format!("{}/{}@{}", p.namespace(), p.name(), p.leaf))
            .collect()
    }

    #[test]
    fn pages_follow_the_position_through_changes_in_the_stores() {
        let all = |extra: &[(&str, &str, &str)]| {
            let mut pods: Vec<Listed> = [
                ("a", "p1", "l1"),
                ("a", "p2", "l1"),
                ("a", "p2", "l2"),
                ("b", "p1", "l1"),
                ("b", "p3", "l2"),
            ]
            .iter()
            .chain(extra)
            .map(|(ns, n, l)| pod(ns, n, l))
            .collect();
            crate::listener::kube_api::listed::sort(&mut pods);
            pods
        };
        let first = Page::from_query(Some("limit=2")).unwrap();
        let (page, next) = first.cut(all(&[]), "rv-1");
        assert_eq!(names(&page), ["a/p1@l1", "a/p2@l1"]);
        let (token, remaining) = next.expect("more follow");
        assert_eq!(remaining, 3);

        // A pod appears behind the position and one ahead of it: only the one ahead is sent.
        let second = Page::from_query(Some(&format!("limit=2&continue={token}"))).unwrap();
        assert_eq!(second.version.as_deref(), Some("rv-1"));
        let (page, next) = second.cut(all(&[("a", "p0", "l1"), ("b", "p2", "l1")]), "rv-1");
        assert_eq!(names(&page), ["a/p2@l2", "b/p1@l1"]);
        let (token, remaining) = next.unwrap();
        assert_eq!(remaining, 2);
        let last = Page::from_query(Some(&format!("limit=2&continue={token}"))).unwrap();
        let (page, next) = last.cut(all(&[]), "rv-1");
        assert_eq!(names(&page), ["b/p3@l2"]);
        assert!(next.is_none());

        // No limit, or 0: everything.
        for q in ["", "limit=0"] {
            let (page, next) = Page::from_query(Some(q)).unwrap().cut(all(&[]), "rv");
            assert_eq!(page.len(), 5);
            assert!(next.is_none());
        }
    }

    #[test]
    fn a_token_that_does_not_decode_and_a_bad_limit_are_400() {
        for q in ["continue=not-a-token", "continue=e30", "limit=ten"] {
            let status = Page::from_query(Some(q)).err().expect(q);
            assert_eq!(status.code, 400, "{q}");
        }
    }
}
