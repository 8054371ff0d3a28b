//! `metav1.Status` bodies, as kube-apiserver writes them for errors.

use serde_json::{Value, json};

/// A failure `Status`: `code` is the HTTP status, `reason` the `StatusReason`
/// (`NotFound`, `Forbidden`, `Unauthorized`, ...).
pub fn failure(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
}
