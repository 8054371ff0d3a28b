//! Copy buffers lent per chunk from a small pool per thread, so a direction that waits for
//! bytes holds none.
//!
//! The user-space copy used to keep a [`MAX_CHUNK`] buffer per direction for the life of
//! the splice: 128 KiB for an idle WebSocket that never moves a byte. Here a direction
//! takes a buffer only inside the one synchronous poll of a read ([`read`]), and keeps it
//! only when that read gave bytes, until they are written ([`write`]); a read that would
//! block gives it straight back. Those polls run one at a time on a thread, so one buffer
//! per thread serves every idle connection on it.
//!
//! A chunk that has to wait (on the limiter, or on a writer that takes no more for now)
//! holds about what it carries: when what is left of it is small ([`SMALL`]), it moves to
//! a buffer of its own size and the big one goes back to the pool ([`Chunk::settle`]). A
//! throttled or stalled connection then holds its few bytes, not 64 KiB, while bulk
//! transfers (chunks mostly full) never pay for the copy.
//!
//! This module owns the buffers, the read into one and the write out of one. It does not
//! know what is read or where the bytes go.

use std::cell::RefCell;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::Poll;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::limit::MAX_CHUNK;

/// Buffers a thread keeps for the next chunk when they come back. More than one, since a
/// few chunks can be waiting on their writers at once and come back together; few, since
/// each is [`MAX_CHUNK`] of heap whether or not anything is copied.
const KEPT_PER_THREAD: usize = 4;

/// The most bytes a waiting chunk moves out of its pooled buffer into one of their own.
pub(super) const SMALL: usize = MAX_CHUNK / 8;

thread_local! {
    static KEPT: RefCell<Vec<Box<[u8]>>> = const { RefCell::new(Vec::new()) };
}

/// Bytes read and not yet written (`start..end` of `buf`). A pooled buffer ([`MAX_CHUNK`])
/// goes back to the pool of the thread that drops it; one of a settled chunk's own size is
/// freed.
pub(super) struct Chunk {
    buf: Option<Box<[u8]>>,
    pooled: bool,
    start: usize,
    end: usize,
}

impl Chunk {
    /// An empty chunk in one of this thread's kept buffers, or in a new one.
    pub(super) fn take() -> Chunk {
        let kept = KEPT.try_with(|kept| kept.borrow_mut().pop()).ok().flatten();
        Chunk {
            buf: Some(kept.unwrap_or_else(|| vec![0; MAX_CHUNK].into_boxed_slice())),
            pooled: true,
            start: 0,
            end: 0,
        }
    }

    fn buf(&self) -> &[u8] {
        self.buf
            .as_deref()
            .expect("a chunk holds its buffer until dropped")
    }

    /// The most one read into it can take in.
    pub(super) fn capacity(&self) -> usize {
        self.buf().len()
    }

    /// The whole buffer, to read into (then [`filled`](Self::filled)).
    pub(super) fn space(&mut self) -> &mut [u8] {
        self.buf
            .as_deref_mut()
            .expect("a chunk holds its buffer until dropped")
    }

    /// The bytes not yet written.
    pub(super) fn bytes(&self) -> &[u8] {
        &self.buf()[self.start..self.end]
    }

    pub(super) fn len(&self) -> usize {
        self.end - self.start
    }

    /// The chunk now holds the first `n` bytes of its buffer.
    pub(super) fn filled(&mut self, n: usize) {
        (self.start, self.end) = (0, n);
    }

    /// The first `n` of its bytes were written.
    pub(super) fn consume(&mut self, n: usize) {
        self.start += n.min(self.len());
    }

    /// The chunk is about to wait with its bytes: when they are few (at most [`SMALL`]),
    /// they move to a buffer of their own size and the pooled one goes back.
    pub(super) fn settle(&mut self) {
        if !self.pooled || self.len() > SMALL {
            return;
        }
        let own: Box<[u8]> = self.bytes().into();
        let pooled = self.buf.replace(own);
        give_back(pooled);
        self.pooled = false;
        (self.start, self.end) = (0, self.len());
    }
}

fn give_back(buf: Option<Box<[u8]>>) {
    let Some(buf) = buf else { return };
    // A thread being torn down has no pool any more: the buffer is freed.
    let _ = KEPT.try_with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.len() < KEPT_PER_THREAD {
            kept.push(buf);
        }
    });
}

impl Drop for Chunk {
    fn drop(&mut self) {
        if self.pooled {
            give_back(self.buf.take());
        }
    }
}

/// Reads up to `max` bytes (at most [`MAX_CHUNK`]) of `reader` into a chunk taken for that
/// read alone: `Some` chunk with the bytes, `None` at EOF. While `reader` has nothing to
/// give, no chunk is held: each poll takes one and, when the read would block, gives it
/// back before returning. (A read that returns `Pending` has taken no byte, so the next
/// poll may read into any buffer.)
pub(super) async fn read<R>(reader: &mut R, max: usize) -> io::Result<Option<Chunk>>
where
    R: AsyncRead + Unpin,
{
    let max = max.clamp(1, MAX_CHUNK);
    poll_fn(|cx| {
        let mut chunk = Chunk::take();
        let mut buf = ReadBuf::new(&mut chunk.space()[..max]);
        match Pin::new(&mut *reader).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len();
                if n == 0 {
                    return Poll::Ready(Ok(None));
                }
                chunk.filled(n);
                Poll::Ready(Ok(Some(chunk)))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Writes all of `chunk`'s bytes to `writer`, [settling](Chunk::settle) it whenever the
/// writer takes no more for now, and frees it once written.
pub(super) async fn write<W>(writer: &mut W, mut chunk: Chunk) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    poll_fn(|cx| {
        while chunk.len() > 0 {
            match Pin::new(&mut *writer).poll_write(cx, chunk.bytes()) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => chunk.consume(n),
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {
                    chunk.settle();
                    return Poll::Pending;
                }
            }
        }
        Poll::Ready(Ok(()))
    })
    .await
}

/// Buffers this thread keeps now.
#[cfg(test)]
fn kept_here() -> usize {
    KEPT.with(|kept| kept.borrow().len())
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    fn empty_pool() {
        KEPT.with(|kept| kept.borrow_mut().clear());
    }

    #[test]
    fn a_chunk_goes_back_to_the_pool_and_is_lent_again() {
        empty_pool();
        let mut first = Chunk::take();
        first.space()[0] = 7;
        let ptr = first.buf().as_ptr();
        drop(first);
        assert_eq!(kept_here(), 1);
        let again = Chunk::take();
        assert_eq!(again.buf().as_ptr(), ptr, "the kept buffer, not a new one");
        assert_eq!(again.buf().len(), MAX_CHUNK);
        assert_eq!(kept_here(), 0);
    }

    #[test]
    fn the_pool_keeps_a_few_and_frees_the_rest() {
        let many: Vec<Chunk> = (0..KEPT_PER_THREAD + 3).map(|_| Chunk::take()).collect();
        drop(many);
        assert_eq!(kept_here(), KEPT_PER_THREAD);
    }

    #[test]
    fn a_settled_chunk_keeps_its_bytes_in_a_buffer_of_their_size() {
        empty_pool();
        let mut chunk = Chunk::take();
        chunk.space()[..5].copy_from_slice(b"hello");
        chunk.filled(5);
        chunk.consume(1);
        chunk.settle();
        assert_eq!(chunk.bytes(), b"ello");
        assert_eq!(chunk.buf().len(), 4, "its own size");
        assert_eq!(kept_here(), 1, "the pooled buffer went back");
        drop(chunk);
        assert_eq!(kept_here(), 1, "its own buffer is not pooled");
        // A chunk mostly full stays where it is.
        let mut big = Chunk::take();
        big.filled(SMALL + 1);
        big.settle();
        assert_eq!(big.buf().len(), MAX_CHUNK);
        assert_eq!(big.len(), SMALL + 1);
    }

    #[tokio::test]
    async fn a_read_that_waits_holds_no_chunk() {
        let (mut ours, mut theirs) = tokio::io::duplex(1024);
        drop(Chunk::take());
        let kept = kept_here();
        let reading = tokio::spawn(async move {
            let first = read(&mut ours, 3).await.unwrap().unwrap().bytes().to_vec();
            let rest = read(&mut ours, MAX_CHUNK).await.unwrap().unwrap();
            let eof = read(&mut ours, MAX_CHUNK).await.unwrap().is_none();
            (first, rest.bytes().to_vec(), eof)
        });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!reading.is_finished());
        assert_eq!(kept_here(), kept, "the waiting read gave its chunk back");
        theirs.write_all(b"hello").await.unwrap();
        drop(theirs);
        let (first, rest, eof) = reading.await.unwrap();
        assert_eq!(first, b"hel", "at most `max` bytes");
        assert_eq!(rest, b"lo");
        assert!(eof);
    }

    #[tokio::test]
    async fn a_write_that_waits_holds_only_its_bytes() {
        empty_pool();
        // Room for 4 bytes: the write takes 4 of 6, then waits for the reader.
        let (mut ours, mut theirs) = tokio::io::duplex(4);
        let mut chunk = Chunk::take();
        chunk.space()[..6].copy_from_slice(b"abcdef");
        chunk.filled(6);
        let writing = tokio::spawn(async move { write(&mut ours, chunk).await });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!writing.is_finished());
        assert_eq!(
            kept_here(),
            1,
            "the waiting write gave the pooled buffer back"
        );
        let mut got = [0u8; 6];
        theirs.read_exact(&mut got).await.unwrap();
        writing.await.unwrap().unwrap();
        assert_eq!(&got, b"abcdef");
    }
}
