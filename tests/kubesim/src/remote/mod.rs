//! The streaming pod subresources: `exec`, `attach` and `portforward`, over SPDY/3.1 and
//! over WebSocket, as the kubelet serves them behind kube-apiserver.
//!
//! The API router has already authenticated the caller, found the pod and parsed the
//! client-facing query (`stdin`, `stdout`, `stderr`, `tty`, `container`, `command`, `ports`);
//! this module negotiates the stream protocol and runs the call.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};

/// What the caller asked for.
#[derive(Debug, Clone)]
pub enum RemoteKind {
    /// Run `command` (argv, as the repeated `command` query parameter gives it).
    Exec { command: Vec<String> },
    /// Attach to the container's main process.
    Attach,
    /// Forward `ports` (from `ports`; empty when the protocol carries them per stream).
    PortForward { ports: Vec<u16> },
}

/// One streaming call, resolved by the API router.
#[derive(Debug, Clone)]
pub struct RemoteCall {
    pub kind: RemoteKind,
    pub namespace: String,
    pub pod: String,
    /// The container, already defaulted when the pod has exactly one.
    pub container: String,
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
    /// The pod object as stored (annotations, containers' commands).
    pub pod_object: serde_json::Value,
}

/// Answers a streaming call: negotiates SPDY/3.1 or WebSocket from the request's headers,
/// answers `101` and serves the streams on the upgraded connection, or answers the error
/// kube-apiserver would (as a `Status` body).
pub async fn serve(req: Request<Incoming>, call: RemoteCall) -> Response<Full<Bytes>> {
    let _ = (req, call);
    let body = serde_json::to_vec(&crate::status::failure(
        501,
        "NotImplemented",
        "streaming subresources are not served yet",
    ))
    .unwrap_or_default();
    Response::builder()
        .status(501)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("static parts make a valid response")
}

pub mod spdy;
