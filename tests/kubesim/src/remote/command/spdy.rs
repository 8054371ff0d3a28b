//! Remote commands over SPDY (`v4.channel.k8s.io`; `v5` behaves the same over SPDY): wait
//! for the client's streams, identified by their `streamType` header, run the call, then
//! end stdout/stderr, write the Status on the error stream and close the connection, in the
//! kubelet's order.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{RemoteCall, Streams};
use crate::remote::spdy::frame::RST_PROTOCOL_ERROR;
use crate::remote::spdy::{Session, Stream, StreamReader, StreamWriter};

/// How long the client has to open its streams (the kubelet's default creation timeout).
const STREAM_CREATION_TIMEOUT: Duration = Duration::from_secs(30);

/// The stream types a call expects: error always, then what the query asked for.
fn expected(call: &RemoteCall) -> Vec<&'static str> {
    let mut want = vec!["error"];
    for (asked, kind) in [
        (call.stdin, "stdin"),
        (call.stdout, "stdout"),
        (call.stderr, "stderr"),
        (call.tty, "resize"),
    ] {
        if asked {
            want.push(kind);
        }
    }
    want
}

/// Collects the expected streams, or `None` when the client does not open them in time.
async fn gather(session: &mut Session, want: &[&str]) -> Option<HashMap<String, Stream>> {
    let mut got: HashMap<String, Stream> = HashMap::new();
    let deadline = tokio::time::Instant::now() + STREAM_CREATION_TIMEOUT;
    while got.len() < want.len() {
        let stream = tokio::time::timeout_at(deadline, session.streams.recv())
            .await
            .ok()??;
        let kind = stream.header("streamtype").unwrap_or("").to_string();
        if want.contains(&kind.as_str()) && !got.contains_key(&kind) {
            got.insert(kind, stream);
        } else {
            tracing::debug!(%kind, "remote: unexpected stream reset");
            stream.writer.reset(RST_PROTOCOL_ERROR).await;
        }
    }
    Some(got)
}

fn feed_from(mut reader: StreamReader) -> mpsc::Receiver<Bytes> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        while let Some(b) = reader.recv().await {
            if tx.send(b).await.is_err() {
                return;
            }
        }
    });
    rx
}

fn drain_to(writer: StreamWriter) -> (mpsc::Sender<Bytes>, JoinHandle<()>) {
    let (tx, mut rx) = mpsc::channel::<Bytes>(16);
    let task = tokio::spawn(async move {
        while let Some(b) = rx.recv().await {
            if writer.write(b).await.is_err() {
                return;
            }
        }
        let _ = writer.finish().await;
    });
    (tx, task)
}

/// Serves one exec/attach call on an upgraded SPDY connection.
pub async fn serve(mut session: Session, call: RemoteCall) {
    let Some(mut streams) = gather(&mut session, &expected(&call)).await else {
        tracing::debug!("remote: client did not create its streams in time");
        session.close().await;
        return;
    };
    let mut outputs = Vec::new();
    let mut output = |s: Option<Stream>| {
        s.map(|s| {
            let (tx, task) = drain_to(s.writer);
            outputs.push(task);
            tx
        })
    };
    let stdout = output(streams.remove("stdout"));
    let stderr = output(streams.remove("stderr"));
    let io = Streams {
        stdin: streams.remove("stdin").map(|s| feed_from(s.reader)),
        stdout,
        stderr,
        resize: streams.remove("resize").map(|s| feed_from(s.reader)),
    };
    // The stream queue ends when the client says GOAWAY or the connection drops.
    let streams_rx = &mut session.streams;
    let hangup = async move { while streams_rx.recv().await.is_some() {} };
    let status = super::run(&call, io, hangup).await;
    for task in outputs {
        let _ = task.await;
    }
    if let Some(error) = streams.remove("error") {
        let _ = error.writer.write(Bytes::from(status.to_json())).await;
        let _ = error.writer.finish().await;
    }
    session.close().await;
}
