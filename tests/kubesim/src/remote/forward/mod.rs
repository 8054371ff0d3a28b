//! Port-forward: where a pod port goes and how failures are told, independent of the
//! transport (`spdy` for SPDY and the WebSocket tunnel, `websocket` for the v4 channels).
//!
//! A pod port `P` is served by the real local TCP address in the pod annotation
//! `kubesim.leafgate.io/port-P` (`127.0.0.1:NNNN`); a port without one fails as a
//! connection refused inside the pod would.

use std::net::SocketAddr;

use serde_json::Value;

pub mod spdy;
pub mod websocket;

/// The annotation prefix naming the local address behind a pod port.
pub const PORT_ANNOTATION: &str = "kubesim.leafgate.io/port-";

/// Why a port could not be forwarded.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    #[error("no annotation {PORT_ANNOTATION}{0} on the pod: nothing listens on port {0}")]
    NoTarget(u16),
    #[error("annotation {PORT_ANNOTATION}{port} is {value:?}, not an address")]
    BadTarget { port: u16, value: String },
    #[error("invalid port {0:?}")]
    BadPort(String),
    #[error("dial tcp {addr}: {source}")]
    Dial {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("read tcp {addr}: {source}")]
    Read {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// The local address behind pod port `port`.
pub fn target(pod: &Value, port: u16) -> Result<SocketAddr, ForwardError> {
    let key = format!("{PORT_ANNOTATION}{port}");
    let value = pod
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(&key))
        .and_then(Value::as_str)
        .ok_or(ForwardError::NoTarget(port))?;
    value.parse().map_err(|_| ForwardError::BadTarget {
        port,
        value: value.to_string(),
    })
}

/// Connects to pod port `port`.
pub async fn dial(pod: &Value, port: u16) -> Result<tokio::net::TcpStream, ForwardError> {
    let addr = target(pod, port)?;
    tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|source| ForwardError::Dial { addr, source })
}

/// The kubelet's error message for a failed forward (`handleStreamPortForwardErr`), with the
/// pod named as the kubelet names it (`name_namespace`).
fn error_message(pod: &Value, port: u16, err: &ForwardError) -> String {
    let meta = |k: &str| pod["metadata"][k].as_str().unwrap_or("").to_string();
    format!(
        "error forwarding port {port} to pod {}_{}, uid {}: {err}",
        meta("name"),
        meta("namespace"),
        meta("uid")
    )
}

/// The JSON the kubelet writes on a port's error stream. `closeConnection` asks the client
/// to give up the whole forward; only a reset or broken pipe from the target leaves it open.
pub fn error_json(pod: &Value, port: u16, err: &ForwardError) -> Vec<u8> {
    let transient = match err {
        ForwardError::Dial { source, .. } | ForwardError::Read { source, .. } => matches!(
            source.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
        ),
        _ => false,
    };
    let mut body = serde_json::json!({ "message": error_message(pod, port, err) });
    if !transient {
        body["closeConnection"] = Value::Bool(true);
    }
    let mut out = serde_json::to_vec(&body).unwrap_or_default();
    // json.Encoder ends each value with a newline.
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn targets_come_from_annotations() {
        let pod = json!({"metadata": {"name": "web", "namespace": "default", "annotations": {
            "kubesim.leafgate.io/port-80": "127.0.0.1:8080",
            "kubesim.leafgate.io/port-81": "nope",
        }}});
        assert_eq!(target(&pod, 80).unwrap().port(), 8080);
        assert!(matches!(
            target(&pod, 81),
            Err(ForwardError::BadTarget { .. })
        ));
        let err = target(&pod, 82).unwrap_err();
        let body: Value = serde_json::from_slice(&error_json(&pod, 82, &err)).unwrap();
        assert_eq!(body["closeConnection"], true);
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .starts_with("error forwarding port 82 to pod web_default, uid : no annotation")
        );
    }
}
