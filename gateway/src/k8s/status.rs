//! kube-apiserver's error answer, `metav1.Status`, as both Kubernetes fronts give it: the
//! code, the reason kubectl keys its wording on, the message it prints, and the details
//! naming the object. This is the one place a `Status` object is written; the listener
//! turns it into an HTTP answer.
//!
//! It knows nothing of HTTP bodies or of which front answers: only the wire shape and
//! kube-apiserver's wording for the answers leafgate gives.

use serde_json::{Map, Value, json};

/// A `metav1.Status` with `status: Failure`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The HTTP status code, repeated in the object as `code`.
    pub code: u16,
    /// `reason`: a `metav1.StatusReason` (`NotFound`, `Forbidden`, ...).
    pub reason: &'static str,
    /// `message`: what kubectl prints after `Error from server (<reason>):`.
    pub message: String,
    /// `details`: absent, or the object the answer is about (an empty object when
    /// kube-apiserver writes `details: {}`).
    pub details: Option<Details>,
}

/// `metav1.StatusDetails`: which object an answer is about.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    pub name: Option<String>,
    /// The API group of `kind`; absent for the core group.
    pub group: Option<&'static str>,
    pub kind: Option<String>,
    /// `retryAfterSeconds`: when to try again (a 429); the answer's `Retry-After` too.
    pub retry_after_seconds: Option<u32>,
}

impl Status {
    /// A failure with kube-apiserver's reason for `code`.
    pub fn new(code: u16, message: impl Into<String>) -> Status {
        Status::with_reason(code, reason_of(code), message)
    }

    /// A failure whose reason is not the one its code implies (`Expired` for a 410).
    pub fn with_reason(code: u16, reason: &'static str, message: impl Into<String>) -> Status {
        Status {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// No or unknown credentials, word for word: kubectl prints `error: You must be logged
    /// in to the server (Unauthorized)`.
    pub fn unauthorized() -> Status {
        Status::new(401, "Unauthorized")
    }

    /// A path the server does not serve: kubectl prints `the server could not find the
    /// requested resource`.
    pub fn no_such_resource() -> Status {
        Status::new(404, "the server could not find the requested resource")
            .detailed(Details::default())
    }

    /// A method the resource does not take.
    pub fn method_not_allowed() -> Status {
        Status::new(
            405,
            "the server does not allow this method on the requested resource",
        )
        .detailed(Details::default())
    }

    /// An object that does not exist: `pods "web-0" not found`.
    pub fn not_found(kind: &str, name: &str) -> Status {
        Status::not_found_in("", kind, name)
    }

    /// [`Status::not_found`] for a resource of API `group`: `events.events.k8s.io "x" not
    /// found`, the group in the details.
    pub fn not_found_in(group: &'static str, kind: &str, name: &str) -> Status {
        Status::new(
            404,
            format!("{} {name:?} not found", qualified(group, kind)),
        )
        .detailed(Details {
            name: Some(name.to_string()),
            group: (!group.is_empty()).then_some(group),
            kind: Some(kind.to_string()),
            ..Details::default()
        })
    }

    /// The RBAC denial as kube-apiserver words it: `pods "p" is forbidden: User "u" cannot
    /// get resource "pods" in API group "" in the namespace "x"`. `resource` may name a
    /// subresource (`pods/exec`); the kind is its first part.
    pub fn forbidden(
        user: &str,
        verb: &str,
        resource: &str,
        name: Option<&str>,
        namespace: Option<&str>,
    ) -> Status {
        Status::forbidden_in("", user, verb, resource, name, namespace)
    }

    /// [`Status::forbidden`] for a resource of API `group`: `events.events.k8s.io is
    /// forbidden: User "u" cannot list resource "events" in API group "events.k8s.io" ...`.
    pub fn forbidden_in(
        group: &'static str,
        user: &str,
        verb: &str,
        resource: &str,
        name: Option<&str>,
        namespace: Option<&str>,
    ) -> Status {
        let kind = resource.split('/').next().unwrap_or(resource);
        let subject = match name {
            Some(name) => format!("{} {name:?}", qualified(group, kind)),
            None => qualified(group, kind),
        };
        let scope = match namespace {
            Some(ns) => format!("in the namespace {ns:?}"),
            None => "at the cluster scope".to_string(),
        };
        Status::new(
            403,
            format!(
                "{subject} is forbidden: User {user:?} cannot {verb} resource {resource:?} in API group {group:?} {scope}"
            ),
        )
        .detailed(Details {
            name: name.map(str::to_string),
            group: (!group.is_empty()).then_some(group),
            kind: Some(kind.to_string()),
            ..Details::default()
        })
    }

    /// Too many requests: kube-apiserver's `NewTooManyRequests`, whose
    /// `details.retryAfterSeconds` it also sends as `Retry-After`. Clients (client-go's
    /// reflectors and `kubectl`) wait that long and try again.
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: u32) -> Status {
        Status::new(429, message).detailed(Details {
            retry_after_seconds: Some(retry_after_seconds),
            ..Details::default()
        })
    }

    /// The same answer with `details`.
    pub fn detailed(mut self, details: Details) -> Status {
        self.details = Some(details);
        self
    }

    /// The `Status` object.
    pub fn to_json(&self) -> Value {
        let mut object = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            let mut d = Map::new();
            if let Some(name) = &details.name {
                d.insert("name".into(), json!(name));
            }
            if let Some(group) = &details.group {
                d.insert("group".into(), json!(group));
            }
            if let Some(kind) = &details.kind {
                d.insert("kind".into(), json!(kind));
            }
            if let Some(seconds) = details.retry_after_seconds {
                d.insert("retryAfterSeconds".into(), json!(seconds));
            }
            object["details"] = Value::Object(d);
        }
        object
    }
}

/// A resource as kube-apiserver's messages name it: `pods`, `events.events.k8s.io`.
fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// The `reason` kube-apiserver gives a status code.
pub fn reason_of(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "InternalError",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_failure_has_no_details() {
        let s = Status::new(409, "in two leaves").to_json();
        assert_eq!(
            s,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "in two leaves", "reason": "Conflict", "code": 409})
        );
    }

    #[test]
    fn unknown_paths_and_methods_carry_empty_details() {
        let s = Status::no_such_resource().to_json();
        assert_eq!(s["details"], json!({}));
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(Status::method_not_allowed().to_json()["code"], 405);
    }

    #[test]
    fn forbidden_is_worded_as_rbac_words_it() {
        let s = Status::forbidden("tenant:a", "create", "pods/exec", Some("db-0"), Some("b"));
        assert_eq!(
            s.message,
            "pods \"db-0\" is forbidden: User \"tenant:a\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"b\""
        );
        assert_eq!(
            s.to_json()["details"],
            json!({"kind": "pods", "name": "db-0"})
        );
        let cluster = Status::forbidden("u", "list", "pods", None, None);
        assert!(cluster.message.ends_with("at the cluster scope"));
        assert_eq!(cluster.to_json()["details"], json!({"kind": "pods"}));
    }

    #[test]
    fn too_many_requests_says_when_to_retry() {
        let s = Status::too_many_requests("too many watches", 1).to_json();
        assert_eq!(s["reason"], "TooManyRequests");
        assert_eq!(s["code"], 429);
        assert_eq!(s["details"], json!({"retryAfterSeconds": 1}));
    }

    #[test]
    fn not_found_names_the_object() {
        let s = Status::not_found("pods", "web-0").to_json();
        assert_eq!(s["message"], "pods \"web-0\" not found");
        assert_eq!(s["details"], json!({"name": "web-0", "kind": "pods"}));
    }

    #[test]
    fn reasons_follow_the_code_unless_named() {
        assert_eq!(Status::new(502, "x").reason, "InternalError");
        assert_eq!(Status::with_reason(410, "Expired", "x").reason, "Expired");
        assert_eq!(reason_of(504), "Timeout");
    }
}
