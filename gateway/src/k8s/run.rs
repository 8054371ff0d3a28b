//! The kubelet's `/run`: run a command in a pod's container and answer its output, here by
//! exec over WebSocket (`v5.channel.k8s.io`) to the pod's leaf, collecting stdout and
//! stderr (interleaved as they arrive, as the kubelet's `RunInContainer` returns them).
//!
//! Everything read from the leaf is bounded: the output at [`MAX_OUTPUT`] (the rest is
//! counted, dropped, and a visible marker ends the answer, so a cut output never passes
//! for a whole one), each WebSocket message at [`MAX_MESSAGE`], a refusal's body at
//! [`MAX_REFUSAL`], and the whole call at [`RUN_TIMEOUT`].

use std::time::Duration;

use bytes::{Buf, Bytes};
use futures_util::StreamExt;
use http::{Request, StatusCode, header};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::client::generate_key;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

use super::Leaf;
use super::kubelet::{PodTarget, leaf_path};

/// At most this much output is kept; the rest is dropped and the answer says so.
pub const MAX_OUTPUT: usize = 1 << 20;
/// The largest WebSocket message (and frame) taken from the leaf: a whole output's worth
/// and its channel byte. The kubelet sends output in pieces of a few KiB.
pub const MAX_MESSAGE: usize = MAX_OUTPUT + 1;
/// How much of a refusal's body (a leaf's `Status`, an HTML error page) is kept.
pub const MAX_REFUSAL: usize = 64 << 10;
/// A command running longer than this is abandoned (the exec ends with the connection).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(120);

const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;

/// What a command printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutput {
    pub output: Vec<u8>,
    pub exit_code: i32,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Leaf(#[from] super::LeafError),
    #[error("the leaf refused the exec ({status}): {body}")]
    Refused { status: StatusCode, body: String },
    #[error("the exec stream broke: {0}")]
    Stream(String),
    #[error("the command did not finish within {0:?}")]
    Timeout(Duration),
    #[error("the command failed: {0}")]
    Failed(String),
}

/// Runs `command` in `container` of `target`'s pod in `leaf`; the whole call, refusal or
/// output, within [`RUN_TIMEOUT`]. The exec request carries `extra` too (the request's ID
/// and trace context).
pub async fn exec_output(
    leaf: &Leaf,
    target: &PodTarget,
    container: &str,
    command: &[String],
    extra: &http::HeaderMap,
) -> Result<RunOutput, RunError> {
    tokio::time::timeout(RUN_TIMEOUT, exec(leaf, target, container, command, extra))
        .await
        .map_err(|_| RunError::Timeout(RUN_TIMEOUT))?
}

async fn exec(
    leaf: &Leaf,
    target: &PodTarget,
    container: &str,
    command: &[String],
    extra: &http::HeaderMap,
) -> Result<RunOutput, RunError> {
    let uri = exec_uri(target, container, command);
    let mut req = Request::get(uri)
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, "websocket")
        .header(header::SEC_WEBSOCKET_VERSION, "13")
        .header(header::SEC_WEBSOCKET_KEY, generate_key())
        .header(
            header::SEC_WEBSOCKET_PROTOCOL,
            "v5.channel.k8s.io, v4.channel.k8s.io",
        )
        .body(Empty::<Bytes>::new())
        .map_err(|e| RunError::Stream(e.to_string()))?;
    for (name, value) in extra {
        req.headers_mut().append(name, value.clone());
    }
    let res = leaf.send(req).await?;
    if res.status() != StatusCode::SWITCHING_PROTOCOLS {
        let status = res.status();
        let (body, cut) = read_bounded(res.into_body(), MAX_REFUSAL).await;
        let mut body = String::from_utf8_lossy(&body).into_owned();
        if cut {
            body.push_str(&format!(" [cut at {MAX_REFUSAL} bytes]"));
        }
        return Err(RunError::Refused { status, body });
    }
    let upgraded = hyper::upgrade::on(res)
        .await
        .map_err(|e| RunError::Stream(e.to_string()))?;
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE))
        .max_frame_size(Some(MAX_MESSAGE));
    let ws =
        WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Client, Some(config)).await;
    collect(ws).await
}

/// Up to `limit` bytes of `body`, and whether there was more (not read: the connection
/// goes with the response). A body that breaks ends what is kept.
async fn read_bounded<B>(mut body: B, limit: usize) -> (Vec<u8>, bool)
where
    B: hyper::body::Body + Unpin,
{
    let mut kept = Vec::new();
    while let Some(Ok(frame)) = body.frame().await {
        let Ok(mut data) = frame.into_data() else {
            continue;
        };
        while data.has_remaining() {
            let chunk = data.chunk();
            let room = limit - kept.len();
            if chunk.len() > room {
                kept.extend_from_slice(&chunk[..room]);
                return (kept, true);
            }
            kept.extend_from_slice(chunk);
            let n = chunk.len();
            data.advance(n);
        }
    }
    (kept, false)
}

/// What ends an output cut at [`MAX_OUTPUT`], with how much was dropped.
fn truncation_marker(dropped: u64) -> String {
    format!("\n[leafgate: output truncated at {MAX_OUTPUT} bytes; {dropped} more dropped]\n")
}

/// The leaf's exec path with stdout and stderr on and the command's words in order.
fn exec_uri(target: &PodTarget, container: &str, command: &[String]) -> String {
    let mut query = form_urlencoded::Serializer::new(String::new());
    query.append_pair("container", container);
    query.append_pair("stdout", "true");
    query.append_pair("stderr", "true");
    for arg in command {
        query.append_pair("command", arg);
    }
    format!("{}?{}", leaf_path(target, "exec"), query.finish())
}

async fn collect<S>(mut ws: WebSocketStream<S>) -> Result<RunOutput, RunError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut output = Vec::new();
    let mut dropped = 0u64;
    let mut exit_code = None;
    while let Some(message) = ws.next().await {
        let data = match message.map_err(|e| RunError::Stream(e.to_string()))? {
            Message::Binary(data) => data,
            Message::Close(_) => break,
            _ => continue,
        };
        let Some((&channel, payload)) = data.split_first() else {
            continue;
        };
        match channel {
            STDOUT | STDERR => {
                let room = MAX_OUTPUT.saturating_sub(output.len());
                let kept = payload.len().min(room);
                output.extend_from_slice(&payload[..kept]);
                dropped += (payload.len() - kept) as u64;
            }
            ERROR if !payload.is_empty() => exit_code = Some(exit_code_of(payload)?),
            _ => {}
        }
    }
    if dropped > 0 {
        output.extend_from_slice(truncation_marker(dropped).as_bytes());
    }
    // A stream that ends without a status ended cleanly (v1-v3 servers send none).
    Ok(RunOutput {
        output,
        exit_code: exit_code.unwrap_or(0),
    })
}

/// The exit code in the error channel's `Status`, as the kubelet writes it.
fn exit_code_of(payload: &[u8]) -> Result<i32, RunError> {
    let status: serde_json::Value = serde_json::from_slice(payload)
        .map_err(|_| RunError::Failed(String::from_utf8_lossy(payload).into_owned()))?;
    if status["status"] == "Success" {
        return Ok(0);
    }
    let code = status["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["reason"] == "ExitCode")
        .and_then(|c| c["message"].as_str()?.parse().ok());
    code.ok_or_else(|| {
        RunError::Failed(
            status["message"]
                .as_str()
                .unwrap_or("unknown failure")
                .to_string(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_refusal_body_is_read_only_up_to_its_bound() {
        use futures_util::stream;
        use http_body_util::StreamBody;
        use hyper::body::Frame;
        // Endless, as a hostile leaf's body could be: the bound must end the read.
        let endless = stream::repeat_with(|| {
            Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from_static(&[b'x'; 1000])))
        });
        let (kept, cut) = read_bounded(StreamBody::new(endless), 2500).await;
        assert_eq!((kept.len(), cut), (2500, true));
        let short = http_body_util::Full::new(Bytes::from_static(b"forbidden"));
        let (kept, cut) = read_bounded(short, MAX_REFUSAL).await;
        assert_eq!((kept.as_slice(), cut), (&b"forbidden"[..], false));
    }

    #[test]
    fn the_truncation_marker_says_where_and_how_much() {
        assert_eq!(
            truncation_marker(7),
            "\n[leafgate: output truncated at 1048576 bytes; 7 more dropped]\n"
        );
    }

    #[test]
    fn reads_the_exit_code_as_the_kubelet_writes_it() {
        assert_eq!(
            exit_code_of(br#"{"metadata":{},"status":"Success"}"#).unwrap(),
            0
        );
        let failed = br#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#;
        assert_eq!(exit_code_of(failed).unwrap(), 3);
        let other = br#"{"metadata":{},"status":"Failure","message":"container not found"}"#;
        assert!(
            exit_code_of(other)
                .unwrap_err()
                .to_string()
                .contains("container not found")
        );
    }
}
