//! The byte pump of a hijacked connection: after `101 Switching Protocols`, copy bytes both
//! ways between the client and the upstream until both directions are done, each direction
//! under its own [`Limiter`].
//!
//! This module owns the copy loops, half-close propagation (EOF read from one side shuts
//! down the write half of the other), the idle timeout (no bytes in either direction) and
//! naming the side and operation that failed. It does not parse HTTP, dial upstreams, choose
//! limits or count metrics: the caller hands over two raw streams, the limiters and an
//! `on_bytes` callback, and logs the returned error at the level it wants.
//!
//! # When to charge the limiter
//! Each chunk is read, charged, and written only once the limiter's answer has elapsed
//! (charge *before* write). While the buckets have credit the answer is zero and the chunk
//! is written right after the read, so the limiter adds no latency. When they are in debt
//! the chunk waits in our buffer, which is where it has to wait anyway: the other order
//! (write, then sleep before the next read) sends each chunk ahead of its time and lets a
//! connection run a chunk past the limit at every instant, which shows at the receiver.
//! Charging before writing keeps the bytes delivered by time `t` within `burst + rate * t`.
//! Reads are capped at [`Limiter::chunk_hint`] so one read cannot overshoot by much.
//!
//! # Zero copy
//! [`splice_tcp`] moves bytes with `splice(2)` (socket -> pipe -> socket, never through user
//! space) when both ends are plain TCP and neither direction is limited. Measured over
//! loopback in release, 3 GiB one way, five rounds on the shared 2-core machine (load 4-6,
//! so noisy; `measure_copy_throughput`): user-space copy through `tokio::io::split`
//! 0.47-0.83 GiB/s (median 0.73), through borrowed TCP halves 0.54-0.81 (median 0.77),
//! `splice(2)` 0.69-1.56 (median 1.13): about +45%, so it is kept. A limiter needs chunk
//! sizes we choose and TLS needs the bytes in user space; both take the copy path.

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::limit::{Limiter, MAX_CHUNK};

/// Which way bytes move.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    ClientToUpstream,
    UpstreamToClient,
}

impl Direction {
    /// The value of a `direction` metrics label.
    pub fn label(self) -> &'static str {
        match self {
            Direction::ClientToUpstream => "client_to_upstream",
            Direction::UpstreamToClient => "upstream_to_client",
        }
    }

    /// The side this direction reads from.
    pub fn source(self) -> Side {
        match self {
            Direction::ClientToUpstream => Side::Client,
            Direction::UpstreamToClient => Side::Upstream,
        }
    }

    /// The side this direction writes to.
    pub fn sink(self) -> Side {
        match self {
            Direction::ClientToUpstream => Side::Upstream,
            Direction::UpstreamToClient => Side::Client,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::ClientToUpstream => "client->upstream",
            Direction::UpstreamToClient => "upstream->client",
        })
    }
}

/// One of the two connections of a splice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    Client,
    Upstream,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Client => "client",
            Side::Upstream => "upstream",
        })
    }
}

/// The I/O operation that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoOp {
    Read,
    /// Writing or flushing.
    Write,
    /// Shutting down the write half after the other side's EOF.
    Shutdown,
}

impl fmt::Display for IoOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IoOp::Read => "read",
            IoOp::Write => "write",
            IoOp::Shutdown => "shutdown",
        })
    }
}

/// How a splice is run.
#[derive(Clone, Debug)]
pub struct SpliceOptions {
    /// End the splice when no byte has moved either way for this long.
    pub idle_timeout: Duration,
    /// Charged for bytes going client -> upstream.
    pub up: Limiter,
    /// Charged for bytes going upstream -> client.
    pub down: Limiter,
}

/// What a finished splice moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpliceReport {
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// Time client -> upstream chunks waited on the limiter.
    pub throttled_up: Duration,
    /// Time upstream -> client chunks waited on the limiter.
    pub throttled_down: Duration,
}

/// Why a splice ended before both directions reached EOF.
#[derive(Debug, thiserror::Error)]
pub enum SpliceError {
    #[error("no bytes moved either way for {idle:?}: closing the upgraded connection")]
    Idle { idle: Duration },
    #[error("{op} on the {side} connection failed while copying {direction}: {source}")]
    Io {
        side: Side,
        op: IoOp,
        direction: Direction,
        #[source]
        source: io::Error,
    },
}

impl SpliceError {
    /// The side whose I/O failed, or `None` for an idle timeout.
    pub fn side(&self) -> Option<Side> {
        match self {
            SpliceError::Idle { .. } => None,
            SpliceError::Io { side, .. } => Some(*side),
        }
    }

    fn io(direction: Direction, op: IoOp) -> impl FnOnce(io::Error) -> SpliceError {
        move |source| SpliceError::Io {
            side: match op {
                IoOp::Read => direction.source(),
                IoOp::Write | IoOp::Shutdown => direction.sink(),
            },
            op,
            direction,
            source,
        }
    }
}

/// Copies bytes both ways between `client` and `upstream` until both directions have seen
/// EOF, an I/O error ends either, or nothing moves for `opts.idle_timeout`.
///
/// EOF read from one side shuts down the write half of the other, and the other direction
/// keeps going. `on_bytes` is called after every chunk written, for live metrics.
pub async fn splice<C, U, F>(
    client: C,
    upstream: U,
    opts: SpliceOptions,
    on_bytes: F,
) -> Result<SpliceReport, SpliceError>
where
    C: AsyncRead + AsyncWrite + Unpin + Send,
    U: AsyncRead + AsyncWrite + Unpin + Send,
    F: Fn(Direction, u64) + Send + Sync,
{
    let (client_read, client_write) = tokio::io::split(client);
    let (upstream_read, upstream_write) = tokio::io::split(upstream);
    splice_halves(
        client_read,
        client_write,
        upstream_read,
        upstream_write,
        opts,
        &on_bytes,
    )
    .await
}

/// [`splice`] for two plain TCP connections. With no limit either way it moves bytes
/// kernel to kernel with `splice(2)` through a pipe per direction (Linux); otherwise, or if
/// no pipe can be had, it copies like [`splice`], borrowing the sockets' halves instead of
/// splitting them behind a lock.
pub async fn splice_tcp<F>(
    mut client: TcpStream,
    mut upstream: TcpStream,
    opts: SpliceOptions,
    on_bytes: F,
) -> Result<SpliceReport, SpliceError>
where
    F: Fn(Direction, u64) + Send + Sync,
{
    #[cfg(target_os = "linux")]
    if opts.up.is_unlimited() && opts.down.is_unlimited() {
        match (zero_copy::Pipe::new(), zero_copy::Pipe::new()) {
            (Ok(up), Ok(down)) => {
                return zero_copy::run(&client, &upstream, up, down, opts.idle_timeout, &on_bytes)
                    .await;
            }
            (Err(error), _) | (_, Err(error)) => {
                tracing::debug!(%error, "no pipe for splice(2), copying through user space");
            }
        }
    }
    copy_tcp(&mut client, &mut upstream, opts, &on_bytes).await
}

/// The user-space copy of [`splice_tcp`], also what it is measured against.
async fn copy_tcp<F>(
    client: &mut TcpStream,
    upstream: &mut TcpStream,
    opts: SpliceOptions,
    on_bytes: &F,
) -> Result<SpliceReport, SpliceError>
where
    F: Fn(Direction, u64) + Sync,
{
    let (client_read, client_write) = client.split();
    let (upstream_read, upstream_write) = upstream.split();
    splice_halves(
        client_read,
        client_write,
        upstream_read,
        upstream_write,
        opts,
        on_bytes,
    )
    .await
}

async fn splice_halves<CR, CW, UR, UW, F>(
    mut client_read: CR,
    mut client_write: CW,
    mut upstream_read: UR,
    mut upstream_write: UW,
    opts: SpliceOptions,
    on_bytes: &F,
) -> Result<SpliceReport, SpliceError>
where
    CR: AsyncRead + Unpin,
    CW: AsyncWrite + Unpin,
    UR: AsyncRead + Unpin,
    UW: AsyncWrite + Unpin,
    F: Fn(Direction, u64) + Sync,
{
    let activity = Activity::new();
    let up = copy_one(
        Direction::ClientToUpstream,
        &mut client_read,
        &mut upstream_write,
        &opts.up,
        &activity,
        on_bytes,
    );
    let down = copy_one(
        Direction::UpstreamToClient,
        &mut upstream_read,
        &mut client_write,
        &opts.down,
        &activity,
        on_bytes,
    );
    // `try_join!` drops the other direction at the first error: one broken side ends it all.
    let result = tokio::select! {
        both = async { tokio::try_join!(up, down) } => both.map(|(up, down)| SpliceReport {
            bytes_up: up.bytes,
            bytes_down: down.bytes,
            throttled_up: up.throttled,
            throttled_down: down.throttled,
        }),
        idle = activity.idle_for(opts.idle_timeout) => Err(SpliceError::Idle { idle }),
    };
    log_end(&result);
    result
}

fn log_end(result: &Result<SpliceReport, SpliceError>) {
    match result {
        Ok(report) => tracing::debug!(
            bytes_up = report.bytes_up,
            bytes_down = report.bytes_down,
            "splice finished: both directions reached EOF"
        ),
        Err(SpliceError::Io {
            side,
            op,
            direction,
            source,
        }) => {
            tracing::debug!(%side, %op, %direction, error = %source, "splice ended by an I/O error")
        }
        Err(SpliceError::Idle { idle }) => tracing::debug!(?idle, "splice ended: idle"),
    }
}

#[derive(Debug)]
struct DirectionReport {
    bytes: u64,
    throttled: Duration,
}

async fn copy_one<R, W, F>(
    direction: Direction,
    reader: &mut R,
    writer: &mut W,
    limiter: &Limiter,
    activity: &Activity,
    on_bytes: &F,
) -> Result<DirectionReport, SpliceError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    F: Fn(Direction, u64),
{
    // One buffer per direction for the whole splice, no bigger than one charge should be.
    let mut buf = vec![0u8; limiter.chunk_hint().min(MAX_CHUNK)];
    let mut report = DirectionReport {
        bytes: 0,
        throttled: Duration::ZERO,
    };
    loop {
        let n = reader
            .read(&mut buf)
            .await
            .map_err(SpliceError::io(direction, IoOp::Read))?;
        if n == 0 {
            // Half-close: pass the EOF on (shutdown flushes first) and let the other
            // direction run to its own end.
            writer
                .shutdown()
                .await
                .map_err(SpliceError::io(direction, IoOp::Shutdown))?;
            activity.touch(Instant::now());
            return Ok(report);
        }
        let now = Instant::now();
        activity.touch(now);
        let wait = limiter.charge(n);
        if !wait.is_zero() {
            // Bytes waiting on the limiter are not idle: they move when the wait ends.
            activity.touch(now + wait);
            tokio::time::sleep(wait).await;
            report.throttled += now.elapsed();
        }
        writer
            .write_all(&buf[..n])
            .await
            .map_err(SpliceError::io(direction, IoOp::Write))?;
        // A no-op on TCP; a TLS stream may hold the record back until flushed.
        writer
            .flush()
            .await
            .map_err(SpliceError::io(direction, IoOp::Write))?;
        activity.touch(Instant::now());
        report.bytes += n as u64;
        on_bytes(direction, n as u64);
    }
}

/// When bytes last moved either way, for the idle timeout. Atomic rather than a `Cell` so
/// the splice future stays `Send`; both directions only ever move it forward.
struct Activity {
    start: Instant,
    /// Nanoseconds after `start`.
    last: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            last: AtomicU64::new(0),
        }
    }

    fn touch(&self, at: Instant) {
        let nanos =
            u64::try_from(at.saturating_duration_since(self.start).as_nanos()).unwrap_or(u64::MAX);
        self.last.fetch_max(nanos, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.start + Duration::from_nanos(self.last.load(Ordering::Relaxed))
    }

    /// Resolves once nothing has moved for `timeout`, with how long that was. Wakes once per
    /// `timeout` at most, not per chunk.
    async fn idle_for(&self, timeout: Duration) -> Duration {
        loop {
            let last = self.last();
            let deadline = last + timeout;
            if Instant::now() >= deadline {
                return Instant::now().saturating_duration_since(last);
            }
            tokio::time::sleep_until(deadline).await;
        }
    }
}

/// Zero-copy splicing: `splice(2)` moves pages from one socket's receive queue into a pipe
/// and from the pipe into the other socket's send queue, never through user space. Only for
/// plain TCP with no limiter: a limiter needs chunk sizes we choose, TLS needs the bytes.
#[cfg(target_os = "linux")]
mod zero_copy {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

    use tokio::io::Interest;
    use tokio::net::TcpStream;
    use tokio::time::Instant;

    use super::{Activity, Direction, IoOp, SpliceError, SpliceReport, log_end};

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
            let (read, write) =
                unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
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
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll};

    use tokio::net::TcpListener;

    use super::*;
    use crate::config::units::{ByteRate, RateLimit};
    use crate::limit::{SharedLimits, connection_limiters};

    const MIB: usize = 1 << 20;

    fn unlimited(idle: Duration) -> SpliceOptions {
        SpliceOptions {
            idle_timeout: idle,
            up: Limiter::default(),
            down: Limiter::default(),
        }
    }

    fn rate(bytes_per_sec: usize) -> RateLimit {
        RateLimit {
            rate: ByteRate(NonZeroU64::new(bytes_per_sec as u64).unwrap()),
            burst: None,
        }
    }

    /// Bytes that differ from offset to offset, so a dropped or repeated chunk shows.
    fn pattern(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// A connected pair of sockets: (the end a test drives, the end the gateway gets).
    async fn tcp_pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (outer, accepted) = tokio::join!(TcpStream::connect(addr), listener.accept());
        (outer.unwrap(), accepted.unwrap().0)
    }

    #[derive(Clone, Copy, Debug)]
    enum Path {
        Generic,
        Tcp,
    }

    /// Runs a splice between two fresh TCP pairs; returns the peers' ends and the splice task.
    async fn spawn_splice(
        path: Path,
        opts: SpliceOptions,
    ) -> (
        TcpStream,
        TcpStream,
        tokio::task::JoinHandle<Result<SpliceReport, SpliceError>>,
    ) {
        let (client, gateway_client) = tcp_pair().await;
        let (upstream, gateway_upstream) = tcp_pair().await;
        let task = tokio::spawn(async move {
            match path {
                Path::Generic => splice(gateway_client, gateway_upstream, opts, |_, _| {}).await,
                Path::Tcp => splice_tcp(gateway_client, gateway_upstream, opts, |_, _| {}).await,
            }
        });
        (client, upstream, task)
    }

    /// Writes `data` then shuts the write half, while reading everything the other way.
    async fn exchange(stream: TcpStream, data: Vec<u8>) -> Vec<u8> {
        let (mut read, mut write) = stream.into_split();
        let writer = tokio::spawn(async move {
            write.write_all(&data).await.unwrap();
            write.shutdown().await.unwrap();
            write
        });
        let mut received = Vec::new();
        read.read_to_end(&mut received).await.unwrap();
        drop(writer.await.unwrap());
        received
    }

    async fn copies_both_ways_byte_exact(path: Path) {
        let (client, upstream, task) = spawn_splice(path, unlimited(Duration::from_secs(30))).await;
        let to_upstream = pattern(6 * MIB + 123, 1);
        let to_client = pattern(5 * MIB + 7, 2);
        let (at_client, at_upstream) = tokio::join!(
            exchange(client, to_upstream.clone()),
            exchange(upstream, to_client.clone())
        );
        assert!(at_upstream == to_upstream, "client->upstream bytes differ");
        assert!(at_client == to_client, "upstream->client bytes differ");
        let report = task.await.unwrap().unwrap();
        assert_eq!(report.bytes_up, to_upstream.len() as u64);
        assert_eq!(report.bytes_down, to_client.len() as u64);
        assert_eq!(report.throttled_up, Duration::ZERO);
    }

    #[tokio::test]
    async fn copies_several_mib_both_ways_byte_exact() {
        copies_both_ways_byte_exact(Path::Generic).await;
    }

    #[tokio::test]
    async fn tcp_copies_several_mib_both_ways_byte_exact() {
        copies_both_ways_byte_exact(Path::Tcp).await;
    }

    /// One side closes its write half first; it must see the EOF arrive at the other end and
    /// still receive everything the other end sends afterwards.
    async fn half_close(path: Path, client_first: bool) {
        let (client, upstream, task) = spawn_splice(path, unlimited(Duration::from_secs(30))).await;
        let (first, second) = if client_first {
            (client, upstream)
        } else {
            (upstream, client)
        };
        let (mut first_read, mut first_write) = first.into_split();
        let (mut second_read, mut second_write) = second.into_split();

        first_write.write_all(b"last words").await.unwrap();
        first_write.shutdown().await.unwrap();
        // The other end gets the bytes, then EOF: the gateway propagated the half-close.
        let mut got = Vec::new();
        second_read.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"last words");

        // The other direction is still open: a large reply passes in full.
        let reply = pattern(3 * MIB, 3);
        let sender = {
            let reply = reply.clone();
            tokio::spawn(async move {
                second_write.write_all(&reply).await.unwrap();
                second_write.shutdown().await.unwrap();
            })
        };
        let mut got = Vec::new();
        first_read.read_to_end(&mut got).await.unwrap();
        sender.await.unwrap();
        assert!(got == reply, "reply after half-close differs");

        let report = task.await.unwrap().unwrap();
        let (first_bytes, second_bytes) = if client_first {
            (report.bytes_up, report.bytes_down)
        } else {
            (report.bytes_down, report.bytes_up)
        };
        assert_eq!(first_bytes, 10);
        assert_eq!(second_bytes, reply.len() as u64);
    }

    #[tokio::test]
    async fn client_half_close_propagates_and_replies_still_flow() {
        half_close(Path::Generic, true).await;
        half_close(Path::Tcp, true).await;
    }

    #[tokio::test]
    async fn upstream_half_close_propagates_and_requests_still_flow() {
        half_close(Path::Generic, false).await;
        half_close(Path::Tcp, false).await;
    }

    #[tokio::test(start_paused = true)]
    async fn idle_timeout_fires_when_nothing_moves_either_way() {
        let (mut client, gateway_client) = tokio::io::duplex(1024);
        let (mut upstream, gateway_upstream) = tokio::io::duplex(1024);
        let start = Instant::now();
        let task = tokio::spawn(splice(
            gateway_client,
            gateway_upstream,
            unlimited(Duration::from_secs(10)),
            |_, _| {},
        ));
        // Traffic at 6 s pushes the deadline to 16 s.
        tokio::time::sleep(Duration::from_secs(6)).await;
        client.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        upstream.read_exact(&mut buf).await.unwrap();
        let err = task.await.unwrap().unwrap_err();
        assert!(matches!(err, SpliceError::Idle { idle } if idle == Duration::from_secs(10)));
        assert_eq!(start.elapsed(), Duration::from_secs(16));
        assert!(err.to_string().contains("no bytes moved"), "{err}");
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_on_the_limiter_is_not_idle() {
        // 1 KiB/s with a 1 KiB burst: 4 KiB take 3 s, longer than the 2 s idle timeout.
        let slow = RateLimit {
            rate: ByteRate(NonZeroU64::new(1024).unwrap()),
            burst: NonZeroU64::new(1024),
        };
        let (up, _) = connection_limiters(Some(slow), &[]);
        let opts = SpliceOptions {
            idle_timeout: Duration::from_secs(2),
            up,
            down: Limiter::default(),
        };
        let (mut client, gateway_client) = tokio::io::duplex(64 << 10);
        let (mut upstream, gateway_upstream) = tokio::io::duplex(64 << 10);
        let task = tokio::spawn(splice(gateway_client, gateway_upstream, opts, |_, _| {}));
        client.write_all(&[7u8; 4096]).await.unwrap();
        let mut got = vec![0u8; 4096];
        upstream.read_exact(&mut got).await.unwrap();
        // Then nothing: idle 2 s after the last chunk went out, at 3 s.
        let err = task.await.unwrap().unwrap_err();
        assert!(matches!(err, SpliceError::Idle { .. }), "{err}");
    }

    /// A stream whose every operation of one kind fails.
    struct Broken {
        fail: IoOp,
    }

    impl AsyncRead for Broken {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let _ = buf;
            match self.fail {
                IoOp::Read => Poll::Ready(Err(io::ErrorKind::ConnectionReset.into())),
                // Nothing to read, ever: never woken.
                _ => Poll::Pending,
            }
        }
    }

    impl AsyncWrite for Broken {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            match self.fail {
                IoOp::Write => Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
                _ => Poll::Ready(Ok(buf.len())),
            }
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn the_error_names_the_side_and_the_operation() {
        let idle = Duration::from_secs(30);
        let (_client, gateway_client) = tokio::io::duplex(1024);
        let err = splice(
            gateway_client,
            Broken { fail: IoOp::Read },
            unlimited(idle),
            |_, _| {},
        )
        .await
        .unwrap_err();
        assert!(
            matches!(
                &err,
                SpliceError::Io {
                    side: Side::Upstream,
                    op: IoOp::Read,
                    direction: Direction::UpstreamToClient,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "read on the upstream connection failed while copying upstream->client: connection reset"
        );

        let (mut upstream, gateway_upstream) = tokio::io::duplex(1024);
        // Something for the gateway to write to the broken client.
        upstream.write_all(b"hello").await.unwrap();
        let err = splice(
            Broken { fail: IoOp::Write },
            gateway_upstream,
            unlimited(idle),
            |_, _| {},
        )
        .await
        .unwrap_err();
        assert!(
            matches!(
                &err,
                SpliceError::Io {
                    side: Side::Client,
                    op: IoOp::Write,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(err.side(), Some(Side::Client));
    }

    #[tokio::test]
    async fn a_reset_upstream_is_reported_as_the_upstream_failing() {
        for path in [Path::Generic, Path::Tcp] {
            let (client, upstream, task) =
                spawn_splice(path, unlimited(Duration::from_secs(30))).await;
            // Linger zero: close sends RST instead of FIN.
            upstream.set_zero_linger().unwrap();
            drop(upstream);
            let err = task.await.unwrap().unwrap_err();
            assert_eq!(err.side(), Some(Side::Upstream), "{path:?}: {err}");
            drop(client);
        }
    }

    #[tokio::test]
    async fn on_bytes_sees_every_byte_with_its_direction() {
        let (mut client, gateway_client) = tokio::io::duplex(4096);
        let (mut upstream, gateway_upstream) = tokio::io::duplex(4096);
        let counted = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let task = {
            let counted = counted.clone();
            tokio::spawn(splice(
                gateway_client,
                gateway_upstream,
                unlimited(Duration::from_secs(30)),
                move |direction, n| {
                    let i = usize::from(direction == Direction::UpstreamToClient);
                    counted[i].fetch_add(n, Ordering::Relaxed);
                },
            ))
        };
        client.write_all(&[1u8; 10_000]).await.unwrap();
        client.shutdown().await.unwrap();
        let mut sink = Vec::new();
        upstream.read_to_end(&mut sink).await.unwrap();
        upstream.write_all(&[2u8; 777]).await.unwrap();
        upstream.shutdown().await.unwrap();
        client.read_to_end(&mut sink).await.unwrap();
        task.await.unwrap().unwrap();
        assert_eq!(counted[0].load(Ordering::Relaxed), 10_000);
        assert_eq!(counted[1].load(Ordering::Relaxed), 777);
        assert_eq!(Direction::UpstreamToClient.to_string(), "upstream->client");
        assert_eq!(Direction::ClientToUpstream.label(), "client_to_upstream");
    }

    /// Real time and real sockets: 2 MiB/s per connection moves 6 MiB in 3 s (±15%) in each
    /// direction at once, the two directions limited independently.
    #[tokio::test]
    async fn per_connection_limit_moves_6_mib_in_3_s_each_way() {
        let (up, down) = connection_limiters(Some(rate(2 * MIB)), &[]);
        let opts = SpliceOptions {
            idle_timeout: Duration::from_secs(30),
            up,
            down,
        };
        // `splice_tcp` with limiters falls back to the user-space copy.
        let (client, upstream, task) = spawn_splice(Path::Tcp, opts).await;
        let start = std::time::Instant::now();
        let data = pattern(6 * MIB, 4);
        let (at_client, at_upstream) = tokio::join!(
            exchange(client, data.clone()),
            exchange(upstream, data.clone())
        );
        let secs = start.elapsed().as_secs_f64();
        assert!(at_client == data && at_upstream == data);
        assert!(
            (2.55..=3.45).contains(&secs),
            "6 MiB each way took {secs:.3}s"
        );
        let report = task.await.unwrap().unwrap();
        assert!(report.throttled_up > Duration::from_secs(2), "{report:?}");
        assert!(report.throttled_down > Duration::from_secs(2), "{report:?}");
    }

    /// Two connections of one tenant under a 2 MiB/s tenant total share it: 8 MiB in all
    /// take 4 s, not the 2 s that two independent 2 MiB/s limits would.
    #[tokio::test(start_paused = true)]
    async fn a_tenant_total_is_shared_by_its_connections() {
        let tenant = SharedLimits::new(Some(rate(2 * MIB)));
        let start = Instant::now();
        let mut downloads = Vec::new();
        for seed in 0..2 {
            let (up, down) = connection_limiters(Some(rate(100 * MIB)), &[&tenant]);
            let opts = SpliceOptions {
                idle_timeout: Duration::from_secs(30),
                up,
                down,
            };
            let (client, gateway_client) = tokio::io::duplex(256 << 10);
            let (upstream, gateway_upstream) = tokio::io::duplex(256 << 10);
            let task = tokio::spawn(splice(gateway_client, gateway_upstream, opts, |_, _| {}));
            downloads.push(tokio::spawn(async move {
                let (mut client_read, client_write) = tokio::io::split(client);
                let (_upstream_read, mut upstream_write) = tokio::io::split(upstream);
                let data = pattern(4 * MIB, seed);
                let (_, got) = tokio::join!(
                    async {
                        upstream_write.write_all(&data).await.unwrap();
                        upstream_write.shutdown().await.unwrap();
                    },
                    async {
                        let mut got = Vec::new();
                        client_read.read_to_end(&mut got).await.unwrap();
                        got
                    }
                );
                assert!(got == data);
                let mut client_write = client_write;
                client_write.shutdown().await.unwrap();
                task.await.unwrap().unwrap();
                Instant::now()
            }));
        }
        for download in downloads {
            let secs = (download.await.unwrap() - start).as_secs_f64();
            // (8 MiB - one tenant burst) / 2 MiB/s = 3.9 s; allow for the last chunks.
            assert!(
                (3.7..=4.1).contains(&secs),
                "download finished after {secs:.3}s"
            );
        }
    }

    /// Pushes `total` bytes client -> upstream through a splice run by `run`, as fast as the
    /// peers go, and returns the seconds taken.
    async fn push_through<R, Fut>(total: u64, run: R) -> f64
    where
        R: FnOnce(TcpStream, TcpStream) -> Fut,
        Fut: std::future::Future<Output = Result<SpliceReport, SpliceError>> + Send + 'static,
    {
        let (client, gateway_client) = tcp_pair().await;
        let (upstream, gateway_upstream) = tcp_pair().await;
        let task = tokio::spawn(run(gateway_client, gateway_upstream));
        let start = std::time::Instant::now();
        let writer = tokio::spawn(async move {
            let (_read, mut write) = client.into_split();
            let chunk = vec![0x5au8; 256 << 10];
            let mut sent = 0;
            while sent < total {
                let n = chunk.len().min((total - sent) as usize);
                write.write_all(&chunk[..n]).await.unwrap();
                sent += n as u64;
            }
            write.shutdown().await.unwrap();
            _read
        });
        let (mut read, mut write) = upstream.into_split();
        let mut buf = vec![0u8; 256 << 10];
        let mut received = 0u64;
        loop {
            let n = read.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            received += n as u64;
        }
        let secs = start.elapsed().as_secs_f64();
        write.shutdown().await.unwrap();
        drop(writer.await.unwrap());
        let report = task.await.unwrap().unwrap();
        assert_eq!((received, report.bytes_up), (total, total));
        secs
    }

    /// Measures the user-space copy (through `tokio::io::split`, and through borrowed TCP
    /// halves) against `splice(2)` over loopback. Run in release:
    /// `cargo test --release -p leafgate --lib measure_copy_throughput -- --ignored --nocapture`
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "measurement, not a test: pushes gigabytes"]
    async fn measure_copy_throughput() {
        const TOTAL: u64 = 3 << 30;
        let gib = |secs: f64| TOTAL as f64 / (1u64 << 30) as f64 / secs;
        let opts = || unlimited(Duration::from_secs(30));
        for round in 1..=5 {
            let generic = push_through(TOTAL, |c, u| async move {
                splice(c, u, opts(), |_, _| {}).await
            })
            .await;
            let borrowed = push_through(TOTAL, |mut c, mut u| async move {
                copy_tcp(&mut c, &mut u, opts(), &|_, _| {}).await
            })
            .await;
            let zero_copy = push_through(TOTAL, |c, u| async move {
                splice_tcp(c, u, opts(), |_, _| {}).await
            })
            .await;
            println!(
                "round {round}: generic {:.2} GiB/s, tcp halves {:.2} GiB/s, splice(2) {:.2} GiB/s",
                gib(generic),
                gib(borrowed),
                gib(zero_copy)
            );
        }
    }

    /// Measures how close a per-connection limit holds its rate over 10 s of traffic.
    /// `cargo test --release -p leafgate --lib measure_limiter_accuracy -- --ignored --nocapture`
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "measurement, not a test: takes 30 s"]
    async fn measure_limiter_accuracy() {
        for limit in [MIB, 100 * MIB, 1 << 30] {
            let total = 10 * limit as u64;
            let burst = crate::limit::effective_burst(&rate(limit));
            let secs = push_through(total, |c, u| async move {
                let (up, down) = connection_limiters(Some(rate(limit)), &[]);
                let opts = SpliceOptions {
                    idle_timeout: Duration::from_secs(30),
                    up,
                    down,
                };
                splice_tcp(c, u, opts, |_, _| {}).await
            })
            .await;
            // The first `burst` bytes go at once; the rest is what the rate governs.
            let achieved = (total - burst) as f64 / secs;
            println!(
                "limit {:>10} B/s: {total} bytes in {secs:.3} s, {achieved:.0} B/s after the burst ({:+.2}%)",
                limit,
                (achieved / limit as f64 - 1.0) * 100.0
            );
        }
    }
}
