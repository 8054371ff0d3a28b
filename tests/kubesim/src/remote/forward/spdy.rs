//! Port-forward over SPDY (`portforward.k8s.io`), also what runs inside the WebSocket
//! tunnel. Each forwarded connection is a pair of client streams, `streamType: error` and
//! `streamType: data`, with the same `requestID` (or, from clients too old to send one, the
//! error stream's id and the data stream's id minus two) and the pod `port`. Once a pair is
//! complete we dial the port and copy both ways; failures go on the error stream as the
//! kubelet's JSON.

use std::collections::HashMap;

use bytes::Bytes;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{ForwardError, dial, error_json, error_message};
use crate::remote::RemoteCall;
use crate::remote::spdy::frame::RST_PROTOCOL_ERROR;
use crate::remote::spdy::{Session, Stream, StreamWriter};

#[derive(Default)]
struct Pair {
    error: Option<Stream>,
    data: Option<Stream>,
}

fn request_id(s: &Stream, kind: &str) -> String {
    match s.header("requestid").filter(|r| !r.is_empty()) {
        Some(r) => r.to_string(),
        None if kind == "data" => s.id.saturating_sub(2).to_string(),
        None => s.id.to_string(),
    }
}

/// Serves port-forward on one SPDY session until the client goes away.
pub async fn serve(mut session: Session, call: RemoteCall) {
    let mut pending: HashMap<String, Pair> = HashMap::new();
    // Ends when the client sends GOAWAY or hangs up.
    while let Some(stream) = session.streams.recv().await {
        let kind = stream.header("streamtype").unwrap_or("").to_string();
        let id = request_id(&stream, &kind);
        let pair = pending.entry(id.clone()).or_default();
        let slot = match kind.as_str() {
            "error" => &mut pair.error,
            "data" => &mut pair.data,
            _ => {
                tracing::debug!(%kind, "remote: port-forward stream of unknown type reset");
                stream.writer.reset(RST_PROTOCOL_ERROR).await;
                continue;
            }
        };
        if slot.is_some() {
            stream.writer.reset(RST_PROTOCOL_ERROR).await;
            continue;
        }
        *slot = Some(stream);
        if pair.error.is_some()
            && pair.data.is_some()
            && let Some(Pair {
                error: Some(error),
                data: Some(data),
            }) = pending.remove(&id)
        {
            tokio::spawn(forward(call.pod_object.clone(), error, data));
        }
    }
    session.close().await;
}

/// One forwarded connection: dial, copy, end both streams.
async fn forward(pod: Value, error: Stream, data: Stream) {
    let port = data.header("port").unwrap_or("").to_string();
    let Some(port) = port.parse::<u16>().ok().filter(|p| *p > 0) else {
        let msg = error_message(&pod, 0, &format!("invalid port {port:?}"));
        let body = serde_json::json!({"closeConnection": true, "message": msg});
        let _ = error.writer.write(Bytes::from(body.to_string())).await;
        let _ = error.writer.finish().await;
        let _ = data.writer.finish().await;
        return;
    };
    let tcp = match dial(&pod, port).await {
        Ok(tcp) => tcp,
        Err(e) => return fail(&pod, port, &e, &error.writer, &data.writer).await,
    };
    let (mut from_pod, mut to_pod) = tcp.into_split();
    let Stream {
        mut reader,
        writer: data_out,
        ..
    } = data;
    let upstream = tokio::spawn(async move {
        while let Some(b) = reader.recv().await {
            if to_pod.write_all(&b).await.is_err() {
                return;
            }
        }
        // The client is done sending: pass the half-close on.
        let _ = to_pod.shutdown().await;
    });
    let mut buf = vec![0u8; 32 * 1024];
    let mut failure = None;
    loop {
        match from_pod.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                if data_out
                    .write(Bytes::copy_from_slice(&buf[..n]))
                    .await
                    .is_err()
                {
                    break;
                }
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    // The pod side ended: as the runtime does, the forward is over in both directions.
    upstream.abort();
    if let Some(source) = failure {
        let addr = from_pod
            .peer_addr()
            .unwrap_or_else(|_| std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
        let e = ForwardError::Dial { addr, source };
        return fail(&pod, port, &e, &error.writer, &data_out).await;
    }
    let _ = data_out.finish().await;
    let _ = error.writer.finish().await;
}

async fn fail(pod: &Value, port: u16, e: &ForwardError, error: &StreamWriter, data: &StreamWriter) {
    tracing::debug!(error = %e, port, "remote: port-forward failed");
    let _ = error.write(Bytes::from(error_json(pod, port, e))).await;
    let _ = error.finish().await;
    let _ = data.finish().await;
}
