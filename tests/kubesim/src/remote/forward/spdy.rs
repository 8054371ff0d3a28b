//! Port-forward over SPDY (`portforward.k8s.io`), also what runs inside the WebSocket
//! tunnel. Each forwarded connection is a pair of client streams, `streamType: error` and
//! `streamType: data`, with the same `requestID` (or, from clients too old to send one, the
//! error stream's id and the data stream's id minus two) and the pod `port`. Once a pair is
//! complete we dial the port and copy both ways; failures go on the error stream as the
//! kubelet's JSON.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use super::{ForwardError, dial, error_json};
use crate::remote::RemoteCall;
use crate::remote::spdy::frame::{RST_CANCEL, RST_PROTOCOL_ERROR};
use crate::remote::spdy::{Session, Stream, StreamWriter};

/// How long a forwarded connection's second stream may take to arrive (the kubelet's
/// stream creation timeout).
const STREAM_CREATION_TIMEOUT: Duration = Duration::from_secs(30);

struct Pair {
    since: Instant,
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
pub async fn serve(session: Session, call: RemoteCall) {
    serve_with(session, call, STREAM_CREATION_TIMEOUT).await;
}

async fn serve_with(mut session: Session, call: RemoteCall, creation_timeout: Duration) {
    let mut pending: HashMap<String, Pair> = HashMap::new();
    loop {
        let expiry = pending.values().map(|p| p.since + creation_timeout).min();
        let stream = tokio::select! {
            s = session.streams.recv() => match s {
                Some(s) => s,
                // The client sent GOAWAY or hung up.
                None => break,
            },
            () = until(expiry) => {
                expire(&mut pending, creation_timeout).await;
                continue;
            }
        };
        let kind = stream.header("streamtype").unwrap_or("").to_string();
        if kind != "error" && kind != "data" {
            tracing::debug!(%kind, "remote: port-forward stream of unknown type reset");
            stream.writer.reset(RST_PROTOCOL_ERROR).await;
            continue;
        }
        let id = request_id(&stream, &kind);
        let pair = pending.entry(id.clone()).or_insert_with(|| Pair {
            since: Instant::now(),
            error: None,
            data: None,
        });
        let slot = if kind == "error" {
            &mut pair.error
        } else {
            &mut pair.data
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
                ..
            }) = pending.remove(&id)
        {
            tokio::spawn(forward(call.pod_object.clone(), error, data));
        }
    }
    session.close().await;
}

async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Gives up the pairs whose second stream never came, telling the client on the error
/// stream (plain text, as the kubelet's `printError` does).
async fn expire(pending: &mut HashMap<String, Pair>, creation_timeout: Duration) {
    let now = Instant::now();
    let late: Vec<String> = pending
        .iter()
        .filter(|(_, p)| p.since + creation_timeout <= now)
        .map(|(id, _)| id.clone())
        .collect();
    for id in late {
        let Some(pair) = pending.remove(&id) else {
            continue;
        };
        tracing::debug!(request = %id, "remote: port-forward streams timed out");
        if let Some(error) = pair.error {
            let msg = format!("timed out waiting for streams of request {id}");
            let _ = error.writer.write(Bytes::from(msg)).await;
            let _ = error.writer.finish().await;
        }
        if let Some(data) = pair.data {
            data.writer.reset(RST_CANCEL).await;
        }
    }
}

/// One forwarded connection: dial, copy, end both streams.
async fn forward(pod: Value, error: Stream, data: Stream) {
    let asked = data.header("port").unwrap_or("").to_string();
    let Some(port) = asked.parse::<u16>().ok().filter(|p| *p > 0) else {
        let e = ForwardError::BadPort(asked);
        return fail(&pod, 0, &e, &error.writer, &data.writer).await;
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
        let e = ForwardError::Read { addr, source };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::RemoteKind;
    use crate::remote::spdy::frame::{FLAG_FIN, Frame};
    use crate::remote::spdy::testpeer::{pair, syn};
    use serde_json::json;

    fn call(pod: Value) -> RemoteCall {
        RemoteCall {
            kind: RemoteKind::PortForward { ports: vec![] },
            namespace: "default".into(),
            pod: "web".into(),
            container: String::new(),
            stdin: false,
            stdout: false,
            stderr: false,
            tty: false,
            pod_object: pod,
        }
    }

    /// Data per stream until every stream in `ids` has ended (FIN), ignoring the rest.
    async fn until_fin(
        peer: &mut crate::remote::spdy::testpeer::Peer,
        ids: &[u32],
    ) -> HashMap<u32, Vec<u8>> {
        let mut data: HashMap<u32, Vec<u8>> = HashMap::new();
        let mut open: Vec<u32> = ids.to_vec();
        while !open.is_empty() {
            match peer.recv().await.expect("the connection stays up") {
                Frame::Data { id, flags, data: d } => {
                    data.entry(id).or_default().extend_from_slice(&d);
                    if flags & FLAG_FIN != 0 {
                        open.retain(|o| *o != id);
                    }
                }
                Frame::SynReply { .. } | Frame::WindowUpdate { .. } => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        data
    }

    #[tokio::test]
    async fn streams_pair_by_request_id_and_reach_the_pod_port() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut conn, _) = listener.accept().await.unwrap();
            let (mut r, mut w) = conn.split();
            let _ = tokio::io::copy(&mut r, &mut w).await;
        });
        let (session, mut peer) = pair();
        let pod =
            json!({"metadata": {"annotations": {"kubesim.leafgate.io/port-80": addr.to_string()}}});
        let served = tokio::spawn(serve(session, call(pod)));
        // Request 7's data stream comes first; the pair is complete only with its error stream.
        peer.send(syn(
            1,
            &[("streamtype", "data"), ("port", "80"), ("requestid", "7")],
        ))
        .await;
        peer.send(syn(
            3,
            &[("streamtype", "error"), ("port", "80"), ("requestid", "7")],
        ))
        .await;
        peer.send(Frame::Data {
            id: 1,
            flags: FLAG_FIN,
            data: Bytes::from("echo me"),
        })
        .await;
        let got = until_fin(&mut peer, &[1, 3]).await;
        assert_eq!(got.get(&1).map(Vec::as_slice), Some(&b"echo me"[..]));
        assert_eq!(got.get(&3).map(Vec::len).unwrap_or(0), 0, "no error");
        drop(peer);
        tokio::time::timeout(Duration::from_secs(5), served)
            .await
            .expect("the forward ends with its client")
            .unwrap();
    }

    #[tokio::test]
    async fn an_unpaired_stream_times_out_with_a_message() {
        let (session, mut peer) = pair();
        let served = tokio::spawn(serve_with(
            session,
            call(json!({})),
            Duration::from_millis(50),
        ));
        peer.send(syn(
            1,
            &[("streamtype", "error"), ("port", "80"), ("requestid", "0")],
        ))
        .await;
        let got = until_fin(&mut peer, &[1]).await;
        assert_eq!(
            String::from_utf8_lossy(&got[&1]),
            "timed out waiting for streams of request 0"
        );
        drop(peer);
        tokio::time::timeout(Duration::from_secs(5), served)
            .await
            .expect("the forward ends with its client")
            .unwrap();
    }
}
