//! Raw keep-alive connections to a route's plain HTTP/1.1 backends, for the fast path: the
//! socket itself is pooled (no connection task, no channel), on the same per-thread shelf
//! as hyper's connections (`idle`).
//!
//! A connection goes back only once its answer was read to its exact end with nothing
//! after it, so the next exchange starts on a clean stream. One the backend closed while it
//! sat idle is noticed at checkout by a peek that does not wait.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::TcpStream;

use crate::config::Backend;
use crate::proxy::error::DialError;
use crate::proxy::idle::{Idles, Reusable};

impl Reusable for TcpStream {
    /// Closed, failed, or holding bytes nobody asked for: not to be reused.
    fn is_closed(&self) -> bool {
        let mut byte = [0u8; 1];
        let mut buf = ReadBuf::new(&mut byte);
        let mut cx = Context::from_waker(Waker::noop());
        !matches!(self.poll_peek(&mut cx, &mut buf), Poll::Pending)
    }
}

/// A raw connection with buffers of its own, for the exchanges an HTTP/2 stream's task
/// makes on it (`proxy::raw`): the request's head is written from, and the answer read
/// into, memory the connection keeps, so a steady stream of requests allocates none.
pub struct Buffered {
    pub tcp: TcpStream,
    /// The request head, written anew for each request.
    pub head: Vec<u8>,
    /// The answers' bytes: empty between exchanges, its memory reclaimed by the next read
    /// once nothing holds a view of the last answer.
    pub read: BytesMut,
}

/// The head buffer's usual size, and the most it is kept at after a long head.
const HEAD: usize = 512;
const HEAD_KEEP: usize = 8 * 1024;

impl Buffered {
    pub fn new(tcp: TcpStream) -> Self {
        Buffered {
            tcp,
            head: Vec::with_capacity(HEAD),
            read: BytesMut::new(),
        }
    }

    /// Lets go of a head buffer a long request head grew: an idle connection keeps no more
    /// than its usual buffers (the read buffer sees to itself, `switch::exchange_in`).
    pub fn shed(&mut self) {
        if self.head.capacity() > HEAD_KEEP {
            self.head = Vec::with_capacity(HEAD);
        }
    }
}

impl Reusable for Buffered {
    fn is_closed(&self) -> bool {
        self.tcp.is_closed()
    }
}

impl AsyncRead for Buffered {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

/// Idle raw connections to one upstream's plain backends: the fast path's sockets, and the
/// HTTP/2 streams' buffered ones (a shelf of their own, as each keeps its buffers).
pub struct RawPool {
    idles: Arc<Idles<TcpStream>>,
    buffered: Arc<Idles<Buffered>>,
    connect: Duration,
}

impl RawPool {
    pub fn new(backends: usize, connect: Duration, idle: Duration) -> Self {
        RawPool {
            idles: Idles::new(backends, idle),
            buffered: Idles::new(backends, idle),
            connect,
        }
    }

    /// An idle connection of this thread to backend number `index`.
    pub fn checkout(&self, index: usize) -> Option<TcpStream> {
        self.idles.checkout(self.idles.slot_of(index))
    }

    /// Puts a connection whose last answer was read to its end back for reuse.
    pub fn give_back(&self, index: usize, tcp: TcpStream) {
        self.idles.give_back(self.idles.slot_of(index), tcp);
    }

    /// A new connection to `backend`, within the connect timeout.
    pub async fn dial(&self, backend: &Backend) -> Result<TcpStream, DialError> {
        connect(backend, self.connect).await
    }

    /// Where this thread's buffered connections to backend number `index` are kept, for
    /// an answer whose body gives its connection back when it ends (`proxy::raw`).
    pub fn home(&self, index: usize) -> Home {
        Home {
            idles: self.buffered.clone(),
            slot: self.buffered.slot_of(index),
        }
    }
}

/// One serving thread's idle buffered connections to one backend, held by an answer's body
/// until it has been read to its end.
pub struct Home {
    idles: Arc<Idles<Buffered>>,
    slot: usize,
}

impl Home {
    /// An idle connection of the slot, if one is open.
    pub fn checkout(&self) -> Option<Buffered> {
        self.idles.checkout(self.slot)
    }

    /// Puts a connection whose last answer was read to its exact end back for reuse.
    pub fn give_back(&self, conn: Buffered) {
        self.idles.give_back(self.slot, conn);
    }
}

/// A new TCP connection to a plain `backend` within `timeout`, with Nagle off (heads and
/// bodies are written whole).
pub async fn connect(backend: &Backend, timeout: Duration) -> Result<TcpStream, DialError> {
    let address = (
        backend.dial_host(),
        backend.authority.port_u16().unwrap_or(80),
    );
    let tcp = tokio::time::timeout(timeout, TcpStream::connect(address))
        .await
        .map_err(|_| DialError::Timeout(timeout))??;
    tcp.set_nodelay(true)?;
    Ok(tcp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_head_buffer_a_long_head_grew_is_let_go() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tcp = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let mut conn = Buffered::new(tcp);
        conn.head.extend_from_slice(&[b'a'; 64 * 1024]);
        conn.head.clear();
        conn.shed();
        assert!(
            conn.head.capacity() <= HEAD_KEEP,
            "kept {}",
            conn.head.capacity()
        );
        conn.head.extend_from_slice(&[b'a'; 1024]);
        let usual = conn.head.capacity();
        conn.shed();
        assert_eq!(conn.head.capacity(), usual, "a usual buffer is kept");
    }
}
