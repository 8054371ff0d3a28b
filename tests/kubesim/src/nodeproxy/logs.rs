//! `pods/log` from the kubelet, as `LocationStreamer` does it: a plain GET of
//! `/containerLogs/...` (no user headers, redirects not followed), the body streamed back as
//! `text/plain` chunk by chunk (so `follow` works), and a non-2xx answer mapped to a Status
//! by `GenericHttpResponseChecker` from at most 50 KB of its body.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

use super::{Endpoint, KubeletClient};
use crate::api::ApiError;
use crate::server::Body;

/// How much of an error body is read (`maxReadLength`).
const ERROR_BODY_LIMIT: usize = 50 * 1024;
/// How long the kubelet may take to send the response head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// Streams the kubelet's `path_and_query` for pod `pod`.
pub(crate) async fn proxy(
    client: &KubeletClient,
    ep: &Endpoint,
    path_and_query: &str,
    pod: &str,
) -> Result<Response<Body>, ApiError> {
    client.record("GET", path_and_query, &[]);
    let url = format!("https://{}{path_and_query}", ep.host_port());
    let failed = |e: String| ApiError::new(500, "", format!("Get \"{url}\": {e}"));
    let conn = client.dial(ep).await.map_err(failed)?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(conn))
        .await
        .map_err(|e| failed(e.to_string()))?;
    tokio::spawn(connection);
    let req = Request::get(path_and_query)
        .header("host", ep.host_port())
        .body(Empty::<Bytes>::new())
        .map_err(|e| failed(e.to_string()))?;
    let resp = tokio::time::timeout(HEAD_TIMEOUT, sender.send_request(req))
        .await
        .map_err(|_| failed("timeout awaiting response headers".into()))?
        .map_err(|e| failed(e.to_string()))?;
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    if !(200..=206).contains(&status) {
        let mut text = Vec::new();
        while text.len() < ERROR_BODY_LIMIT {
            match tokio::time::timeout(HEAD_TIMEOUT, body.frame()).await {
                Ok(Some(Ok(f))) => {
                    if let Ok(d) = f.into_data() {
                        text.extend_from_slice(&d);
                    }
                }
                _ => break,
            }
        }
        text.truncate(ERROR_BODY_LIMIT);
        return Err(checked(status, &String::from_utf8_lossy(&text), pod));
    }
    let (tx, out) = crate::api::channel_body("text/plain");
    tokio::spawn(async move {
        loop {
            let frame = tokio::select! {
                f = body.frame() => f,
                _ = tx.closed() => return,
            };
            match frame {
                Some(Ok(f)) => {
                    if let Ok(d) = f.into_data()
                        && !d.is_empty()
                        && tx.send(d).await.is_err()
                    {
                        return;
                    }
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "nodeproxy: kubelet log stream broke");
                    return;
                }
                None => return,
            }
        }
    });
    Ok(out)
}

/// `GenericHttpResponseChecker.Check` for resource `pods/log` named `pod`.
fn checked(code: u16, body: &str, pod: &str) -> ApiError {
    match code {
        500 => ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {body}"),
        ),
        400 => ApiError::new(400, "BadRequest", body),
        _ => generic_server_response(code, body, pod),
    }
}

/// `errors.NewGenericServerResponse(code, "", pods/log, pod, body, 0, false)`.
fn generic_server_response(code: u16, body: &str, pod: &str) -> ApiError {
    let (reason, message) = match code {
        409 => ("Conflict", "the server reported a conflict".to_string()),
        404 => (
            "NotFound",
            "the server could not find the requested resource".to_string(),
        ),
        400 => (
            "BadRequest",
            "the server rejected our request for an unknown reason".to_string(),
        ),
        401 => (
            "Unauthorized",
            "the server has asked for the client to provide credentials".to_string(),
        ),
        403 => (
            "Forbidden",
            "the server does not allow access to the requested resource".to_string(),
        ),
        405 => (
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource".to_string(),
        ),
        422 => (
            "Invalid",
            "the server rejected our request due to an error in our request".to_string(),
        ),
        503 => (
            "ServiceUnavailable",
            "the server is currently unable to handle the request".to_string(),
        ),
        c if c >= 500 => (
            "InternalError",
            format!("an error on the server ({body:?}) has prevented the request from succeeding"),
        ),
        c => (
            "",
            format!(
                "the server responded with the status code {c} but did not return more information"
            ),
        ),
    };
    ApiError::new(code, reason, format!("{message} ( pods/log {pod})"))
        .with_details(serde_json::json!({"name": pod, "kind": "pods/log"}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubelet_errors_become_statuses() {
        let e = checked(500, "boom", "web");
        assert_eq!((e.code, e.reason), (500, "InternalError"));
        assert_eq!(e.message, "Internal error occurred: boom");
        let e = checked(400, "bad tail", "web");
        assert_eq!(
            (e.code, e.reason, e.message.as_str()),
            (400, "BadRequest", "bad tail")
        );
        let e = checked(404, "container \"x\" not found", "web");
        assert_eq!(
            e.message,
            "the server could not find the requested resource ( pods/log web)"
        );
        assert_eq!(
            e.details,
            Some(serde_json::json!({"name": "web", "kind": "pods/log"}))
        );
        let e = checked(502, "bad gateway", "web");
        assert_eq!(e.reason, "InternalError");
        assert!(e.message.contains("\"bad gateway\""), "{}", e.message);
    }
}
