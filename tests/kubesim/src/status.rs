//! `metav1.Status` bodies, as kube-apiserver writes them for errors and for deletes that
//! do not return the object.

use serde_json::{Value, json};

/// A failure `Status`: `code` is the HTTP status, `reason` the `StatusReason`
/// (`NotFound`, `Forbidden`, `Unauthorized`, ...).
/// An empty `reason` is omitted (`StatusReasonUnknown`, as for errors that are not API
/// errors).
pub fn failure(code: u16, reason: &str, message: &str) -> Value {
    let mut v = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if reason.is_empty()
        && let Some(m) = v.as_object_mut()
    {
        m.remove("reason");
    }
    v
}

/// A success `Status` with `details` (`name`, `group`, `kind` = the resource, `uid`), as
/// the generic registry answers a delete of a kind that does not return deleted objects.
pub fn success(details: Value) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}
