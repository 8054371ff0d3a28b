//! Zero-copy splicing of two plain TCP sockets: `splice(2)` moves pages from one socket's
//! receive queue into a pipe and from the pipe into the other socket's send queue, never
//! through user space. TLS needs the bytes in user space and takes the generic copy.
//!
//! Each direction borrows a pipe from the thread's pool (`pipes`) when its socket turns
//! readable and gives it back once the pipe is drained and the socket has nothing more to
//! read, so an idle connection holds no pipe. When the pool has none to lend, that burst
//! goes through a buffer in user space instead, lent for the burst by the thread's pool of
//! copy buffers (`chunks`) and given back after.
//!
//! A limiter works here as in the copy loop (charge before write, see the parent module):
//! a chunk is spliced into the pipe, charged, waits there while the buckets are in debt,
//! and only then is spliced out. Chunks are capped at the smallest burst of the chain (up
//! to the pipe's capacity), so one chunk overshoots the limit by at most one burst.

use std::io;
use std::os::fd::{AsRawFd, RawFd};

use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::chunks::Chunk;
use super::copy::{Activity, DirectionReport, both_ways};
use super::pipes::{self, Lease};
use super::terms::{Direction, IoOp, SpliceError, SpliceOptions, SpliceReport};
use crate::limit::Limiter;

/// One non-blocking `splice(2)`. A peer that closed makes it fail with `EPIPE` rather
/// than kill the process: Rust programs start with `SIGPIPE` ignored.
#[allow(
    unsafe_code,
    reason = "splice(2) has no wrapper in std; it gets plain fds and null offsets, no memory"
)]
fn splice_fds(from: RawFd, to: RawFd, len: usize) -> io::Result<usize> {
    // SAFETY: plain fds and null offsets (sockets and pipes have no file position).
    let n = unsafe {
        libc::splice(
            from,
            std::ptr::null_mut(),
            to,
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
        )
    };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

pub(super) async fn run<F>(
    client: &TcpStream,
    upstream: &TcpStream,
    opts: &SpliceOptions,
    on_bytes: &F,
) -> Result<SpliceReport, SpliceError>
where
    F: Fn(Direction, u64) + Sync,
{
    let activity = Activity::new(opts.throttled.clone());
    let up = pump(
        Direction::ClientToUpstream,
        client,
        upstream,
        &opts.up,
        &activity,
        on_bytes,
    );
    let down = pump(
        Direction::UpstreamToClient,
        upstream,
        client,
        &opts.down,
        &activity,
        on_bytes,
    );
    both_ways(up, down, &activity, opts.idle_timeout).await
}

/// Where the bytes of one burst wait between the two sockets.
enum Carrier {
    Pipe(Lease),
    /// The pool had no pipe to lend: a buffer for this burst only.
    Buffer(Chunk),
}

impl Carrier {
    fn take() -> Carrier {
        match pipes::take() {
            Some(lease) => Carrier::Pipe(lease),
            None => Carrier::Buffer(Chunk::take()),
        }
    }

    /// The most one [`fill`](Self::fill) can take in.
    fn capacity(&self) -> usize {
        match self {
            Carrier::Pipe(lease) => lease.pipe().capacity,
            Carrier::Buffer(chunk) => chunk.capacity(),
        }
    }

    /// Reads up to `max` bytes of `from` into the carrier, which is empty before. `Ok(0)` is
    /// EOF; `WouldBlock` means the socket has nothing to read (the carrier being empty, it
    /// cannot mean a full pipe), and clears the socket's readiness.
    fn fill(&mut self, from: &TcpStream, max: usize) -> io::Result<usize> {
        let len = max.min(self.capacity());
        match self {
            Carrier::Pipe(lease) => {
                let write = lease.pipe().write.as_raw_fd();
                let n = from.try_io(Interest::READABLE, || {
                    splice_fds(from.as_raw_fd(), write, len)
                })?;
                lease.pending = n;
                Ok(n)
            }
            Carrier::Buffer(chunk) => {
                let n = from.try_read(&mut chunk.space()[..len])?;
                chunk.filled(n);
                Ok(n)
            }
        }
    }

    /// Writes the `n` bytes [`fill`](Self::fill) took in to `to`, waiting for room in its
    /// send queue.
    async fn drain(&mut self, to: &TcpStream, n: usize) -> io::Result<()> {
        let mut done = 0;
        while done < n {
            to.writable().await?;
            let written = match self {
                Carrier::Pipe(lease) => {
                    let read = lease.pipe().read.as_raw_fd();
                    to.try_io(Interest::WRITABLE, || {
                        splice_fds(read, to.as_raw_fd(), n - done)
                    })
                }
                Carrier::Buffer(chunk) => to.try_write(chunk.bytes()),
            };
            match written {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(m) => {
                    done += m;
                    match self {
                        Carrier::Pipe(lease) => lease.pending -= m,
                        Carrier::Buffer(chunk) => chunk.consume(m),
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// One direction: socket -> carrier -> socket until EOF, then shut down `to`'s write half.
async fn pump<F>(
    direction: Direction,
    from: &TcpStream,
    to: &TcpStream,
    limiter: &Limiter,
    activity: &Activity,
    on_bytes: &F,
) -> Result<DirectionReport, SpliceError>
where
    F: Fn(Direction, u64),
{
    let max_chunk = if limiter.is_unlimited() {
        usize::MAX
    } else {
        limiter.chunk_hint_within(usize::MAX)
    };
    let mut report = DirectionReport::default();
    loop {
        from.readable()
            .await
            .map_err(SpliceError::io(direction, IoOp::Read))?;
        // Held for this burst only: dropped (the pipe back in the pool) once the socket has
        // nothing more to read.
        let mut carrier = Carrier::take();
        loop {
            let n = match carrier.fill(from, max_chunk) {
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(SpliceError::io(direction, IoOp::Read)(e)),
            };
            if n == 0 {
                SpliceError::shutdown(
                    direction,
                    socket2::SockRef::from(to).shutdown(std::net::Shutdown::Write),
                )?;
                activity.touch(Instant::now());
                return Ok(report);
            }
            report.pace(n, limiter, activity, || {}).await;
            carrier
                .drain(to, n)
                .await
                .map_err(SpliceError::io(direction, IoOp::Write))?;
            activity.touch(Instant::now());
            report.bytes += n as u64;
            on_bytes(direction, n as u64);
        }
    }
}
