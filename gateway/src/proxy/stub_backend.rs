//! A raw HTTP/1.1 backend for the unit tests of the proxy's pools (`http1`, `raw`): it
//! answers every request head with the same bytes, keeps the connection open unless told to
//! close after the first answer (without saying so, as a backend whose keep-alive timer ran
//! out does), and counts the connections it accepted and those its client closed. Each
//! request head it read is sent on `heads`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

pub struct Stub {
    pub addr: SocketAddr,
    pub accepted: Arc<AtomicUsize>,
    pub closed: Arc<AtomicUsize>,
    pub heads: mpsc::UnboundedReceiver<String>,
}

impl Stub {
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    pub fn closed(&self) -> usize {
        self.closed.load(Ordering::SeqCst)
    }
}

/// A backend on `127.0.0.1:0` answering each request head with `wire`.
pub async fn start(wire: Vec<u8>, close_after: bool) -> Stub {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (accepted, closed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (send_head, heads) = mpsc::unbounded_channel();
    let (count, closes) = (accepted.clone(), closed.clone());
    let wire: Arc<[u8]> = wire.into();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let (closes, send_head, wire) = (closes.clone(), send_head.clone(), wire.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let mut seen = Vec::new();
                loop {
                    let Ok(n) = tcp.read(&mut buf).await else {
                        return;
                    };
                    if n == 0 {
                        closes.fetch_add(1, Ordering::SeqCst);
                        return;
                    }
                    seen.extend_from_slice(&buf[..n]);
                    while let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head: Vec<u8> = seen.drain(..end + 4).collect();
                        let _ = send_head.send(String::from_utf8_lossy(&head).into_owned());
                        if tcp.write_all(&wire).await.is_err() || close_after {
                            return;
                        }
                    }
                }
            });
        }
    });
    Stub {
        addr,
        accepted,
        closed,
        heads,
    }
}
