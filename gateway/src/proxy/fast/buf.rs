//! The fast path's reading and writing parts: a fixed buffer each side of a connection
//! reads into ([`Buf`]), a timer kept for the connection's life ([`Timer`]), a read that
//! waits only when nothing is there ([`read_within`]), and a vectored write to the end
//! ([`write_all_vectored`]). Nothing here allocates after a connection's start.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::{Instant, Sleep};

/// Bytes each of a connection's two read buffers holds: a request head longer than this
/// goes to hyper (whose limit is far higher).
pub const BUFFER: usize = 16 * 1024;

/// A fixed read buffer: bytes are read in at its end and consumed from its start.
pub struct Buf {
    data: Box<[u8]>,
    start: usize,
    end: usize,
}

impl Buf {
    pub(crate) fn new() -> Buf {
        Buf {
            data: vec![0; BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// No room left, even after moving what it holds to the front.
    pub fn is_full(&self) -> bool {
        self.len() == self.data.len()
    }

    pub fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.clear();
        }
    }

    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }

    /// Room to read into, after what it holds (moved to the front when at the end).
    pub fn spare(&mut self) -> &mut [u8] {
        if self.end == self.data.len() && self.start > 0 {
            self.data.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.data[self.end..]
    }
}

/// How long a read may wait: for a while, or until a deadline (no clock read unless the
/// data has to be waited for).
pub enum Wait {
    For(Duration),
    Until(Instant),
}

/// One side's timer, kept for the connection's life and moved to each wait's deadline. A
/// deadline later than the one it holds is one atomic store in tokio's timer (the wheel
/// meets the new one when the old one comes); a new timer per wait would be put in the
/// wheel and taken out again, under its lock, twice a request.
pub struct Timer(Pin<Box<Sleep>>);

impl Timer {
    pub(crate) fn new() -> Timer {
        Timer(Box::pin(tokio::time::sleep(Duration::from_secs(3600))))
    }
}

/// Reads what is there into `buf`, waiting as `wait` says on `timer`; `Ok(0)` at the end.
/// Data already waiting is read without touching the timer.
pub async fn read_within<R>(
    r: &mut R,
    buf: &mut Buf,
    timer: &mut Timer,
    wait: Wait,
) -> io::Result<usize>
where
    R: AsyncRead + Unpin,
{
    let spare = buf.spare();
    let mut read = std::pin::pin!(r.read(spare));
    let now = std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await;
    let n = match now {
        Poll::Ready(n) => n?,
        Poll::Pending => {
            let deadline = match wait {
                Wait::For(within) => Instant::now() + within,
                Wait::Until(deadline) => deadline,
            };
            timer.0.as_mut().reset(deadline);
            std::future::poll_fn(|cx| {
                if let Poll::Ready(n) = read.as_mut().poll(cx) {
                    return Poll::Ready(n);
                }
                timer
                    .0
                    .as_mut()
                    .poll(cx)
                    .map(|()| Err(io::ErrorKind::TimedOut.into()))
            })
            .await?
        }
    };
    buf.end += n;
    Ok(n)
}

/// Writes every slice in as few writes as the socket takes.
pub async fn write_all_vectored<W>(w: &mut W, mut slices: &mut [IoSlice<'_>]) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        let n = w.write_vectored(slices).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(bytes: &[u8]) -> Buf {
        let mut buf = Buf::new();
        let spare = buf.spare();
        spare[..bytes.len()].copy_from_slice(bytes);
        buf.end += bytes.len();
        buf
    }

    #[test]
    fn consuming_everything_starts_the_buffer_over() {
        let mut buf = filled(b"hello");
        assert_eq!(buf.bytes(), b"hello");
        buf.consume(2);
        assert_eq!((buf.bytes(), buf.start), (&b"llo"[..], 2));
        buf.consume(3);
        assert!(buf.is_empty());
        assert_eq!((buf.start, buf.end), (0, 0));
    }

    #[test]
    fn spare_room_moves_what_is_held_to_the_front_only_at_the_end() {
        let mut buf = filled(&[7; BUFFER]);
        assert!(buf.is_full());
        assert!(buf.spare().is_empty());
        buf.consume(BUFFER - 3);
        assert!(!buf.is_full());
        // At the end with room before: the three bytes move to the front.
        assert_eq!(buf.spare().len(), BUFFER - 3);
        assert_eq!((buf.start, buf.end, buf.bytes()), (0, 3, &[7, 7, 7][..]));
        // Room after what is held: nothing moves.
        buf.consume(1);
        assert_eq!(buf.spare().len(), BUFFER - 3);
        assert_eq!((buf.start, buf.end), (1, 3));
    }

    #[test]
    fn a_full_buffer_with_everything_unread_has_no_room() {
        let buf = filled(&[1; BUFFER]);
        assert!(buf.is_full());
        assert_eq!(buf.len(), BUFFER);
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_with_data_waiting_does_not_wait() {
        let (mut near, mut far) = tokio::io::duplex(64);
        far.write_all(b"abc").await.unwrap();
        let mut buf = Buf::new();
        let mut timer = Timer::new();
        let started = Instant::now();
        let n = read_within(&mut near, &mut buf, &mut timer, Wait::For(Duration::ZERO))
            .await
            .unwrap();
        assert_eq!((n, buf.bytes()), (3, &b"abc"[..]));
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_times_out_after_its_wait_and_keeps_what_it_held() {
        let (mut near, _far) = tokio::io::duplex(64);
        let mut buf = filled(b"kept");
        let mut timer = Timer::new();
        let started = Instant::now();
        let err = read_within(
            &mut near,
            &mut buf,
            &mut timer,
            Wait::For(Duration::from_secs(5)),
        )
        .await
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        assert_eq!(buf.bytes(), b"kept");
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_until_a_deadline_ends_there_and_the_timer_serves_again() {
        let (mut near, mut far) = tokio::io::duplex(64);
        let mut buf = Buf::new();
        let mut timer = Timer::new();
        let deadline = Instant::now() + Duration::from_millis(250);
        let err = read_within(&mut near, &mut buf, &mut timer, Wait::Until(deadline))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(Instant::now(), deadline);
        // The same timer, moved to a later deadline, lets a late write through.
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            far.write_all(b"late").await.unwrap();
            far
        });
        let n = read_within(
            &mut near,
            &mut buf,
            &mut timer,
            Wait::For(Duration::from_secs(2)),
        )
        .await
        .unwrap();
        assert_eq!((n, buf.bytes()), (4, &b"late"[..]));
        drop(writer.await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn the_end_of_the_stream_reads_as_zero() {
        let (mut near, far) = tokio::io::duplex(64);
        drop(far);
        let mut buf = Buf::new();
        let mut timer = Timer::new();
        let n = read_within(
            &mut near,
            &mut buf,
            &mut timer,
            Wait::For(Duration::from_secs(1)),
        )
        .await
        .unwrap();
        assert_eq!(n, 0);
    }

    #[tokio::test]
    async fn a_vectored_write_sends_every_slice_through_short_writes() {
        // A pipe of 7 bytes takes each write in pieces.
        let (mut near, mut far) = tokio::io::duplex(7);
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            far.read_to_end(&mut all).await.unwrap();
            all
        });
        let (a, b, c) = (b"head: one\r\n".to_vec(), Vec::new(), vec![b'x'; 100]);
        let mut slices = [IoSlice::new(&a), IoSlice::new(&b), IoSlice::new(&c)];
        write_all_vectored(&mut near, &mut slices).await.unwrap();
        drop(near);
        let mut want = a.clone();
        want.extend_from_slice(&c);
        assert_eq!(reader.await.unwrap(), want);
    }
}
