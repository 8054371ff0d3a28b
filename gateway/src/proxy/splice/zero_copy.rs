//! Zero-copy splicing: `splice(2)` moves pages from one socket's receive queue into a pipe
//! and from the pipe into the other socket's send queue, never through user space. Only for
//! plain TCP with no limiter: a limiter needs chunk sizes we choose, TLS needs the bytes.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::copy::Activity;
use super::{Direction, IoOp, SpliceError, SpliceReport, log_end};

/// Pipe capacity asked for: bigger than the default 64 KiB means fewer system calls per
/// byte. Unprivileged processes may go up to `/proc/sys/fs/pipe-max-size` (1 MiB).
const PIPE_SIZE: libc::c_int = 1 << 20;

/// Both ends of a non-blocking pipe.
pub(super) struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    /// The capacity the kernel granted: the most one `splice` into it can move.
    capacity: usize,
}

impl Pipe {
    pub(super) fn new() -> io::Result<Pipe> {
        let mut fds: [RawFd; 2] = [-1, -1];
        // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both fds are open and owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: fcntl on an fd we own; failure only leaves the default size.
        let granted = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_SIZE) };
        // SAFETY: as above; F_GETPIPE_SZ only reads.
        let size = if granted > 0 {
            granted
        } else {
            unsafe { libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ) }
        };
        let capacity = usize::try_from(size)
            .ok()
            .filter(|&c| c > 0)
            .unwrap_or(64 << 10);
        Ok(Pipe {
            read,
            write,
            capacity,
        })
    }
}

/// One non-blocking `splice(2)`. A peer that closed makes it fail with `EPIPE` rather
/// than kill the process: Rust programs start with `SIGPIPE` ignored.
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
    up_pipe: Pipe,
    down_pipe: Pipe,
    idle_timeout: std::time::Duration,
    on_bytes: &F,
) -> Result<SpliceReport, SpliceError>
where
    F: Fn(Direction, u64) + Sync,
{
    let activity = Activity::new();
    let up = pump(
        Direction::ClientToUpstream,
        client,
        upstream,
        up_pipe,
        &activity,
        on_bytes,
    );
    let down = pump(
        Direction::UpstreamToClient,
        upstream,
        client,
        down_pipe,
        &activity,
        on_bytes,
    );
    let result = tokio::select! {
        both = async { tokio::try_join!(up, down) } => both.map(|(bytes_up, bytes_down)| SpliceReport {
            bytes_up,
            bytes_down,
            ..SpliceReport::default()
        }),
        idle = activity.idle_for(idle_timeout) => Err(SpliceError::Idle { idle }),
    };
    log_end(&result);
    result
}

/// One direction: socket -> pipe -> socket until EOF, then shut down `to`'s write half.
async fn pump<F>(
    direction: Direction,
    from: &TcpStream,
    to: &TcpStream,
    pipe: Pipe,
    activity: &Activity,
    on_bytes: &F,
) -> Result<u64, SpliceError>
where
    F: Fn(Direction, u64),
{
    let mut total = 0u64;
    loop {
        // The pipe is empty here (drained below), so EAGAIN can only mean the socket has
        // nothing to read, which is what `try_io` takes it to mean.
        let n = loop {
            from.readable()
                .await
                .map_err(SpliceError::io(direction, IoOp::Read))?;
            match from.try_io(Interest::READABLE, || {
                splice_fds(from.as_raw_fd(), pipe.write.as_raw_fd(), pipe.capacity)
            }) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(SpliceError::io(direction, IoOp::Read)(e)),
            }
        };
        if n == 0 {
            socket2::SockRef::from(to)
                .shutdown(std::net::Shutdown::Write)
                .map_err(SpliceError::io(direction, IoOp::Shutdown))?;
            activity.touch(Instant::now());
            return Ok(total);
        }
        activity.touch(Instant::now());
        // The pipe holds `n` bytes, so EAGAIN here means the socket's send queue is full.
        let mut left = n;
        while left > 0 {
            to.writable()
                .await
                .map_err(SpliceError::io(direction, IoOp::Write))?;
            match to.try_io(Interest::WRITABLE, || {
                splice_fds(pipe.read.as_raw_fd(), to.as_raw_fd(), left)
            }) {
                Ok(m) => left -= m,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(SpliceError::io(direction, IoOp::Write)(e)),
            }
        }
        activity.touch(Instant::now());
        total += n as u64;
        on_bytes(direction, n as u64);
    }
}
