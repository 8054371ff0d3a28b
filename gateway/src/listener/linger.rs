//! Lingering close: a connection leafgate ends while its client may still be sending (an
//! answer made before the request's body was read to its end, `proxy::own_answer`, or
//! hyper's own 400 or 431 to a head it could not take) is shut for writing, then read and
//! the bytes thrown away until the client closes its side, as nginx's `lingering_close`
//! does. Closing a socket that still has unread bytes makes the kernel send a reset
//! instead of a FIN, and a reset throws away whatever of the answer the client has not
//! received yet: a large answer would arrive cut short.
//!
//! hyper owns a connection's stream until it is done with it, so the stream it serves is
//! wrapped in a [`Handback`] that gives it back when hyper drops it on a connection that
//! must linger.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::time::Instant;

use super::client::Client;

/// How long the client may go without sending while the connection lingers (nginx's
/// `lingering_timeout`), and how long it lingers at most (its `lingering_time`).
const IDLE: Duration = Duration::from_secs(5);
const MOST: Duration = Duration::from_secs(30);

/// Shuts `io` for writing (if it is not already) and reads it to its end, throwing the
/// bytes away, for at most [`MOST`], [`IDLE`] between reads, or until `until` is done.
pub async fn linger<I>(mut io: I, until: impl Future<Output = ()>)
where
    I: AsyncRead + AsyncWrite + Unpin,
{
    let drain = async {
        if io.shutdown().await.is_err() {
            return;
        }
        let deadline = Instant::now() + MOST;
        let mut scratch = vec![0; 16 * 1024];
        loop {
            let wait = IDLE.min(deadline.saturating_duration_since(Instant::now()));
            if wait.is_zero() {
                return;
            }
            match tokio::time::timeout(wait, io.read(&mut scratch)).await {
                Ok(Ok(n)) if n > 0 => {}
                _ => return,
            }
        }
    };
    tokio::select! {
        () = drain => {}
        () = until => {}
    }
}

/// Where a [`Handback`] leaves its stream for the connection to linger on.
pub struct Slot<I>(Arc<Mutex<Option<I>>>);

impl<I> Default for Slot<I> {
    fn default() -> Self {
        Slot(Arc::new(Mutex::new(None)))
    }
}

impl<I> Slot<I> {
    /// The stream, when it was handed back to linger on.
    pub fn take(&self) -> Option<I> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// The stream hyper serves: when hyper drops it on a connection that ends with the
/// client's bytes unread ([`Client::lingers`]), it goes to the [`Slot`] instead of being
/// closed.
pub struct Handback<I> {
    io: Option<I>,
    client: Arc<Client>,
    slot: Arc<Mutex<Option<I>>>,
}

impl<I> Handback<I> {
    pub fn new(io: I, client: Arc<Client>, slot: &Slot<I>) -> Self {
        Handback {
            io: Some(io),
            client,
            slot: slot.0.clone(),
        }
    }

    fn io(self: Pin<&mut Self>) -> Pin<&mut I>
    where
        I: Unpin,
    {
        Pin::new(
            self.get_mut()
                .io
                .as_mut()
                .expect("a handback holds its stream until it is dropped"),
        )
    }
}

impl<I> Drop for Handback<I> {
    fn drop(&mut self) {
        if self.client.lingers() {
            *self.slot.lock().unwrap_or_else(|e| e.into_inner()) = self.io.take();
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Handback<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.io().poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Handback<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.io().poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.io().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.as_ref().is_some_and(I::is_write_vectored)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io().poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client's bytes after the close are read and thrown away until it closes; its
    /// own side sees the stream shut for writing (an end of stream, not a reset).
    #[tokio::test]
    async fn a_lingering_stream_is_shut_then_read_to_the_clients_end() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let lingering = tokio::spawn(linger(ours, std::future::pending()));
        let mut end = [0; 1];
        assert_eq!(theirs.read(&mut end).await.unwrap(), 0, "shut for writing");
        // More than the pipe holds: only a reader on the other end lets it through.
        theirs.write_all(&[7; 4096]).await.unwrap();
        drop(theirs);
        tokio::time::timeout(Duration::from_secs(5), lingering)
            .await
            .expect("lingering ends with the client's end")
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_client_is_given_up_on_after_the_idle_time() {
        let (ours, _theirs) = tokio::io::duplex(64);
        let started = Instant::now();
        linger(ours, std::future::pending()).await;
        assert_eq!(started.elapsed(), IDLE);
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_that_keeps_sending_is_given_up_on_at_the_most() {
        let (ours, mut theirs) = tokio::io::duplex(64);
        let sending = tokio::spawn(async move {
            while theirs.write_all(&[1; 16]).await.is_ok() {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        let started = Instant::now();
        linger(ours, std::future::pending()).await;
        let took = started.elapsed();
        assert!(took >= MOST && took < MOST + IDLE, "{took:?}");
        sending.await.unwrap();
    }

    #[tokio::test]
    async fn lingering_stops_when_told() {
        let (ours, _theirs) = tokio::io::duplex(64);
        tokio::time::timeout(Duration::from_secs(1), linger(ours, async {}))
            .await
            .expect("stopped at once");
    }
}
