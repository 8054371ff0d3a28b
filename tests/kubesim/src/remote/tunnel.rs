//! The WebSocket tunnel kubectl >= 1.31 uses for port-forward
//! (`SPDY/3.1+portforward.k8s.io`): SPDY frames travel inside binary WebSocket messages,
//! cut anywhere. This turns the WebSocket back into a byte stream the SPDY server can read.

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

/// Bytes buffered in each direction between the WebSocket and the SPDY session.
const BUFFER: usize = 64 * 1024;

/// A byte stream whose reads are the payloads of the WebSocket's binary messages and whose
/// writes go out as binary messages. Ends (both ways) when either side closes.
pub fn byte_stream<S>(ws: WebSocketStream<S>) -> DuplexStream
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(BUFFER);
    let (mut from_session, mut to_session) = tokio::io::split(theirs);
    let (mut sink, mut source) = ws.split();
    tokio::spawn(async move {
        while let Some(Ok(msg)) = source.next().await {
            if msg.is_close() {
                break;
            }
            // Pings are answered by tungstenite; only binary messages carry the stream.
            if let Message::Binary(b) = msg
                && to_session.write_all(&b).await.is_err()
            {
                break;
            }
        }
        let _ = to_session.shutdown().await;
    });
    tokio::spawn(async move {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match from_session.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if sink.send(Message::binary(buf[..n].to_vec())).await.is_err() {
                        return;
                    }
                }
            }
        }
        let _ = sink.send(crate::remote::channel::normal_close()).await;
        let _ = sink.close().await;
    });
    ours
}
