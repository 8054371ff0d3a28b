//! How the fronts word an error, one type per wire dialect:
//! - plain text for routes (`proxy::error_response`: `502 Bad Gateway: <why>`);
//! - the kubelet's own plain text for its routes and queries (`404 page not found`);
//! - kube-apiserver's [`Status`] object for everything Kubernetes clients read.
//!
//! [`error`] maps an internal failure (a code and what went wrong) to the dialect a
//! Kubernetes front speaks (the routes front answers with `proxy::error_response` itself); [`status`] is the one way a `Status` becomes an HTTP answer.

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::Value;

use crate::k8s::status::Status;
use crate::proxy::error::Refused;
use crate::proxy::{Body, full};

/// The error dialects leafgate speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// The kubelet's node API: the text alone, as the kubelet writes it.
    Kubelet,
    /// Kubernetes API clients: a `metav1.Status`.
    Status,
}

/// An internal failure answered in `dialect`; from 400 up, the access log's `refusal` is
/// `message`.
pub fn error(dialect: Dialect, code: StatusCode, message: &str) -> Response<Body> {
    match dialect {
        Dialect::Kubelet => refused(kubelet(code, message.to_string()), message),
        Dialect::Status => status(&Status::new(code.as_u16(), message)),
    }
}

/// `res`, marked as leafgate's own refusal for the access log when it is one (400 up).
fn refused(mut res: Response<Body>, why: &str) -> Response<Body> {
    if res.status().as_u16() >= 400 {
        res.extensions_mut().insert(Refused(why.to_string()));
    }
    res
}

/// A `Status` as an HTTP answer: its code, its object as JSON, and `Retry-After` when its
/// details say when to retry (as kube-apiserver's response writer adds it). From 400 up,
/// the access log's `refusal` is its message.
pub fn status(s: &Status) -> Response<Body> {
    let code = StatusCode::from_u16(s.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut res = json(code, &s.to_json());
    if let Some(seconds) = s.details.as_ref().and_then(|d| d.retry_after_seconds) {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    refused(res, &s.message)
}

/// A JSON answer.
pub fn json(code: StatusCode, body: &Value) -> Response<Body> {
    answer(code, "application/json", body.to_string())
}

/// A plain-text answer, as the kubelet writes its own errors (and `ok`, and `/run`'s
/// output).
pub fn kubelet(code: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    answer(code, "text/plain; charset=utf-8", body)
}

fn answer(code: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut res = Response::new(full(body));
    *res.status_mut() = code;
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    res
}
