//! `authorization.k8s.io/v1` `SubjectAccessReview`: the endpoint a kubelet's webhook
//! authorizer (and leafgate's node-api) asks whether a user may do something, answered from
//! a policy the test sets.
//!
//! The answer has kube-apiserver's shape: the review as sent, `metadata.creationTimestamp:
//! null` (it is never stored), and `status.allowed`, plus `denied` and `reason` when a rule
//! denies. The policy: the first rule matching the review's user and verb decides; with no
//! rule, members of `system:masters` are allowed (kube-apiserver lets that group past every
//! authorizer) and everyone else gets "no opinion" (`allowed: false`, no `denied`), as RBAC
//! answers a user it has no binding for. Every review received is kept for assertions.

use std::sync::Mutex;

use serde_json::{Value, json};

use crate::api::ApiError;

/// The group kube-apiserver authorizes unconditionally.
pub const MASTERS: &str = "system:masters";

/// One rule of the policy: `user` (or `*`) doing `verb` (or `*`) is allowed or denied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRule {
    pub user: String,
    pub verb: String,
    pub allowed: bool,
}

/// The policy and the reviews it answered.
#[derive(Debug, Default)]
pub(crate) struct AccessPolicy {
    rules: Mutex<Vec<AccessRule>>,
    reviews: Mutex<Vec<Value>>,
}

impl AccessPolicy {
    /// Adds a rule; it decides before every rule added later.
    pub fn push(&self, rule: AccessRule) {
        self.rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(rule);
    }

    /// Every review's `spec`, in the order they came.
    pub fn reviews(&self) -> Vec<Value> {
        self.reviews
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Answers one posted review (the JSON body), as kube-apiserver's `create` does.
    pub fn review(&self, body: Value) -> Result<Value, ApiError> {
        if body.get("kind").and_then(Value::as_str) != Some("SubjectAccessReview") {
            return Err(ApiError::new(
                400,
                "BadRequest",
                "the body is not a SubjectAccessReview",
            ));
        }
        let spec = body.get("spec").cloned().unwrap_or(Value::Null);
        let user = spec.get("user").and_then(Value::as_str).unwrap_or("");
        let groups: Vec<&str> = spec
            .get("groups")
            .and_then(Value::as_array)
            .map(|g| g.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let resource = spec.get("resourceAttributes").filter(|v| v.is_object());
        let non_resource = spec.get("nonResourceAttributes").filter(|v| v.is_object());
        // kube-apiserver's validation (pkg/apis/authorization/validation).
        let invalid = |field: &str, detail: &str| {
            ApiError::new(
                422,
                "Invalid",
                format!(
                    "SubjectAccessReview.authorization.k8s.io \"\" is invalid: {field}: {detail}"
                ),
            )
        };
        match (resource, non_resource) {
            (None, None) => {
                return Err(invalid(
                    "spec.resourceAttributes",
                    "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
                ));
            }
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "spec.resourceAttributes",
                    "Invalid value: \"non-null\": cannot be specified in combination with nonResourceAttributes",
                ));
            }
            _ => {}
        }
        if user.is_empty() && groups.is_empty() {
            return Err(invalid(
                "spec.user",
                "Invalid value: \"\": at least one of user or group must be specified",
            ));
        }
        self.reviews
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(spec.clone());
        let verb = resource
            .or(non_resource)
            .and_then(|a| a.get("verb"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let rule = self
            .rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|r| (r.user == "*" || r.user == user) && (r.verb == "*" || r.verb == verb))
            .cloned();
        let status = match rule {
            Some(r) if r.allowed => {
                json!({"allowed": true, "reason": "allowed by the test policy"})
            }
            Some(_) => {
                json!({"allowed": false, "denied": true, "reason": "denied by the test policy"})
            }
            None if groups.contains(&MASTERS) => json!({"allowed": true}),
            None => json!({"allowed": false}),
        };
        Ok(json!({
            "kind": "SubjectAccessReview",
            "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": null},
            "spec": spec,
            "status": status,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sar(user: &str, groups: &[&str], verb: &str) -> Value {
        json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": groups,
                     "resourceAttributes": {"verb": verb, "resource": "nodes", "subresource": "proxy"}}
        })
    }

    #[test]
    fn the_first_matching_rule_decides_then_masters_then_no_opinion() {
        let p = AccessPolicy::default();
        p.push(AccessRule {
            user: "ops".into(),
            verb: "get".into(),
            allowed: true,
        });
        p.push(AccessRule {
            user: "ops".into(),
            verb: "*".into(),
            allowed: false,
        });
        let status = |v: Value| p.review(v).unwrap()["status"].clone();
        assert_eq!(status(sar("ops", &[], "get"))["allowed"], true);
        let denied = status(sar("ops", &[], "create"));
        assert_eq!(
            (denied["allowed"].clone(), denied["denied"].clone()),
            (json!(false), json!(true))
        );
        assert_eq!(status(sar("root", &[MASTERS], "create"))["allowed"], true);
        let none = status(sar("intruder", &["system:authenticated"], "get"));
        assert_eq!(none, json!({"allowed": false}));
        assert_eq!(p.reviews().len(), 4);
        assert_eq!(p.reviews()[0]["user"], "ops");
    }

    #[test]
    fn a_review_without_attributes_or_subject_is_invalid() {
        let p = AccessPolicy::default();
        let e = p
            .review(json!({"kind": "SubjectAccessReview", "spec": {"user": "a"}}))
            .unwrap_err();
        assert_eq!(e.code, 422);
        let e = p.review(sar("", &[], "get")).unwrap_err();
        assert!(e.message.contains("at least one of user or group"), "{e}");
        assert!(p.reviews().is_empty());
    }
}
