//! Port-forward over the kubelet's v4 WebSocket channels: the ports come from the query,
//! port `i` owns channel `2i` (data) and `2i+1` (error), and the first message on each
//! carries the port as a little-endian u16. Every port is dialled at once; the connection
//! closes when every port's forward has ended or the client leaves.

use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use super::{ForwardError, dial, error_json};
use crate::remote::channel::{self, ChannelProtocol, Incoming};

const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Two channels per port in a one-byte channel number.
pub const MAX_PORTS: usize = 128;

/// Serves a WebSocket port-forward of `ports` (never empty nor more than `MAX_PORTS`: the
/// request is refused before the upgrade).
pub async fn serve<S>(ws: WebSocketStream<S>, proto: ChannelProtocol, pod: Value, ports: Vec<u16>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sink, mut source) = ws.split();
    let (out_tx, mut out_rx) = mpsc::channel::<Message>(32);
    let writer = tokio::spawn(async move {
        while let Some(msg) = out_rx.recv().await {
            if sink.send(msg).await.is_err() {
                return;
            }
        }
        let _ = sink.send(channel::normal_close()).await;
        let _ = sink.close().await;
    });

    let mut inputs = Vec::new();
    let mut forwards = Vec::new();
    for (i, port) in ports.iter().copied().enumerate() {
        let (data_ch, error_ch) = ((2 * i) as u8, (2 * i + 1) as u8);
        for ch in [data_ch, error_ch] {
            let _ = out_tx.send(proto.data(ch, &port.to_le_bytes())).await;
        }
        let (tx, rx) = mpsc::channel::<Bytes>(16);
        inputs.push(tx);
        forwards.push(tokio::spawn(forward(
            pod.clone(),
            port,
            rx,
            out_tx.clone(),
            proto,
            data_ch,
            error_ch,
        )));
    }
    drop(out_tx);

    let reader = tokio::spawn(async move {
        // Ends when the client closes or the connection drops.
        while let Some(Ok(msg)) = source.next().await {
            if msg.is_close() {
                break;
            }
            if let Incoming::Data(ch, b) = proto.parse(&msg)
                && ch % 2 == 0
                && let Some(tx) = inputs.get(usize::from(ch / 2))
            {
                let _ = tx.send(b).await;
            }
        }
    });
    let reader_abort = reader.abort_handle();
    tokio::select! {
        _ = futures_util::future::join_all(forwards) => {}
        _ = reader => {}
    }
    let abort = writer.abort_handle();
    if tokio::time::timeout(CLOSE_GRACE, writer).await.is_err() {
        abort.abort();
    }
    reader_abort.abort();
}

async fn forward(
    pod: Value,
    port: u16,
    mut input: mpsc::Receiver<Bytes>,
    out: mpsc::Sender<Message>,
    proto: ChannelProtocol,
    data_ch: u8,
    error_ch: u8,
) {
    let report = |e: ForwardError| {
        let out = out.clone();
        let body = error_json(&pod, port, &e);
        async move {
            tracing::debug!(error = %e, port, "remote: websocket port-forward failed");
            let _ = out.send(proto.data(error_ch, &body)).await;
        }
    };
    let tcp = match dial(&pod, port).await {
        Ok(tcp) => tcp,
        Err(e) => return report(e).await,
    };
    let addr = tcp
        .peer_addr()
        .unwrap_or_else(|_| std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    let (mut from_pod, mut to_pod) = tcp.into_split();
    let upstream = tokio::spawn(async move {
        while let Some(b) = input.recv().await {
            if to_pod.write_all(&b).await.is_err() {
                return;
            }
        }
        let _ = to_pod.shutdown().await;
    });
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        match from_pod.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                if out.send(proto.data(data_ch, &buf[..n])).await.is_err() {
                    break;
                }
            }
            Err(source) => {
                report(ForwardError::Read { addr, source }).await;
                break;
            }
        }
    }
    upstream.abort();
}
