//! Remote commands over WebSocket channels (0 stdin, 1 stdout, 2 stderr, 3 error, 4 resize).
//! As the kubelet does: an empty message on the lowest writable channel first, then the
//! output as it comes, the Status on the error channel (JSON from v4 on, plain text on
//! failure before), and a normal close (1000: client-go reports a close without a status as
//! an error). Under v5 the client's `[255, 0]` ends stdin; the server sends no CLOSE
//! messages (client-go discards them as an unknown stream).

use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use super::{RemoteCall, Streams};
use crate::remote::channel::{self, ChannelProtocol, Incoming};

const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const ERROR: u8 = 3;
const RESIZE: u8 = 4;

/// How long we wait for the client to answer our close before dropping the connection.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Serves one exec/attach call on an upgraded WebSocket.
pub async fn serve<S>(ws: WebSocketStream<S>, proto: ChannelProtocol, call: RemoteCall)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut source) = ws.split();
    let (out_tx, mut out_rx) = mpsc::channel::<Message>(32);

    let first = [(call.stdout, STDOUT), (call.stderr, STDERR)]
        .into_iter()
        .find_map(|(asked, ch)| asked.then_some(ch))
        .unwrap_or(ERROR);
    let writer = tokio::spawn(async move {
        if sink.send(proto.data(first, &[])).await.is_err() {
            return;
        }
        while let Some(msg) = out_rx.recv().await {
            if sink.send(msg).await.is_err() {
                return;
            }
        }
        let _ = sink.send(channel::normal_close()).await;
        let _ = sink.close().await;
    });

    let (stdin_tx, stdin_rx) = mpsc::channel::<Bytes>(16);
    let (resize_tx, resize_rx) = mpsc::channel::<Bytes>(4);
    let mut stdin_tx = call.stdin.then_some(stdin_tx);
    // Dropped when the reader ends, which is when the client has gone.
    let (gone_tx, gone_rx) = tokio::sync::oneshot::channel::<()>();
    let reader = tokio::spawn(async move {
        let _gone = gone_tx;
        // Ends when the client closes or the connection drops.
        while let Some(Ok(msg)) = source.next().await {
            if msg.is_close() {
                break;
            }
            match proto.parse(&msg) {
                Incoming::Data(STDIN, b) => {
                    if let Some(tx) = &stdin_tx
                        && tx.send(b).await.is_err()
                    {
                        stdin_tx = None;
                    }
                }
                Incoming::Data(RESIZE, b) => {
                    let _ = resize_tx.try_send(b);
                }
                Incoming::Close(STDIN) => stdin_tx = None,
                _ => {}
            }
        }
    });

    let forward = |ch: u8| {
        let (tx, mut rx) = mpsc::channel::<Bytes>(16);
        let out = out_tx.clone();
        let task = tokio::spawn(async move {
            while let Some(b) = rx.recv().await {
                if out.send(proto.data(ch, &b)).await.is_err() {
                    return;
                }
            }
        });
        (tx, task)
    };
    let (stdout, out_task) = call.stdout.then(|| forward(STDOUT)).unzip();
    let (stderr, err_task) = call.stderr.then(|| forward(STDERR)).unzip();
    let io = Streams {
        stdin: call.stdin.then_some(stdin_rx),
        stdout,
        stderr,
        resize: call.tty.then_some(resize_rx),
    };
    let hangup = async move {
        let _ = gone_rx.await;
    };
    let status = super::run(&call, io, hangup).await;
    for task in out_task.into_iter().chain(err_task) {
        let _ = task.await;
    }
    let error = if proto.status_json {
        Some(status.to_json())
    } else {
        status.legacy_text().map(String::into_bytes)
    };
    if let Some(body) = error {
        let _ = out_tx.send(proto.data(ERROR, &body)).await;
    }
    drop(out_tx);
    // A client that never answers the close must not keep the connection: the tasks own
    // the socket's halves, so aborting them drops it.
    for task in [writer, reader] {
        let abort = task.abort_handle();
        if tokio::time::timeout(CLOSE_GRACE, task).await.is_err() {
            abort.abort();
        }
    }
}
