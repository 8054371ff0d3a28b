//! Backends that take over the connection: a WebSocket echo server (tokio-tungstenite) and
//! raw TCP servers that read a request head by hand and answer whatever a test needs (a
//! 101 for a made-up protocol, a 403, bytes right behind the head).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A running backend; aborted when dropped.
pub struct Backend {
    pub addr: SocketAddr,
    /// The request heads received, in order, exactly as they arrived on the wire.
    pub heads: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A WebSocket server echoing every message back, tagged `name` in its `x-backend` header.
// The handshake callback's error type is tungstenite's, large by its design.
#[allow(clippy::result_large_err)]
pub async fn websocket_echo(name: &'static str) -> Backend {
    let socket = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = socket.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let callback = |_: &tokio_tungstenite::tungstenite::handshake::server::Request,
                                mut res: tokio_tungstenite::tungstenite::handshake::server::Response| {
                    res.headers_mut().insert("x-backend", name.parse().unwrap());
                    Ok(res)
                };
                let Ok(ws) = tokio_tungstenite::accept_hdr_async(stream, callback).await else {
                    return;
                };
                echo_messages(ws).await;
            });
        }
    });
    Backend {
        addr,
        heads: Arc::default(),
        task,
    }
}

/// Sends every text and binary message of `ws` back, until it closes.
pub async fn echo_messages<S>(mut ws: tokio_tungstenite::WebSocketStream<S>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    while let Some(Ok(msg)) = ws.next().await {
        if msg.is_close() {
            break;
        }
        if (msg.is_binary() || msg.is_text()) && ws.send(msg).await.is_err() {
            break;
        }
    }
}

/// A raw TCP backend: reads each request head (up to the blank line) and hands the head
/// and the stream to `serve`.
pub async fn raw<F, Fut>(serve: F) -> Backend
where
    F: Fn(String, TcpStream) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let socket = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    let heads: Arc<Mutex<Vec<String>>> = Arc::default();
    let serve = Arc::new(serve);
    let recorded = heads.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = socket.accept().await else {
                continue;
            };
            let serve = serve.clone();
            let recorded = recorded.clone();
            tokio::spawn(async move {
                let Some(head) = read_head(&mut stream).await else {
                    return;
                };
                recorded.lock().unwrap().push(head.clone());
                serve(head, stream).await;
            });
        }
    });
    Backend { addr, heads, task }
}

/// Reads up to and including `\r\n\r\n`, one byte at a time so nothing behind the head is
/// consumed.
pub async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// Copies everything the stream sends back to it until EOF, then closes its write side.
pub async fn echo(mut stream: TcpStream) {
    let (mut r, mut w) = stream.split();
    let _ = tokio::io::copy(&mut r, &mut w).await;
    let _ = w.shutdown().await;
}
