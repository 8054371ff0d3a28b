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
//! space) when both ends are plain TCP, limited or not. Measured over loopback in release,
//! 3 GiB one way, five rounds on the shared 2-core machine (load 4-6, so noisy;
//! `measure_copy_throughput`): user-space copy through `tokio::io::split` 0.47-0.83 GiB/s
//! (median 0.73), through borrowed TCP halves 0.54-0.81 (median 0.77), `splice(2)`
//! 0.69-1.56 (median 1.13): about +45%, so it is kept. TLS needs the bytes in user space
//! and takes the copy path.
//!
//! Pipes are lent per burst from a bounded pool per thread (`pipes`), so an idle
//! connection holds two sockets and nothing else; a burst that finds the pool empty is
//! copied through a buffer allocated for that burst.

mod copy;
#[cfg(target_os = "linux")]
mod pipes;
#[cfg(test)]
mod tests;
#[cfg(target_os = "linux")]
mod zero_copy;

use std::fmt;
use std::io;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::limit::Limiter;

use self::copy::{Activity, copy_one};

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

/// [`splice`] for two plain TCP connections. On Linux it moves bytes kernel to kernel with
/// `splice(2)` through pipes lent per burst (see the module doc), under the limiters too;
/// elsewhere it copies like [`splice`], borrowing the sockets' halves instead of splitting
/// them behind a lock.
pub async fn splice_tcp<F>(
    client: TcpStream,
    upstream: TcpStream,
    opts: SpliceOptions,
    on_bytes: F,
) -> Result<SpliceReport, SpliceError>
where
    F: Fn(Direction, u64) + Send + Sync,
{
    #[cfg(target_os = "linux")]
    {
        zero_copy::run(&client, &upstream, &opts, &on_bytes).await
    }
    #[cfg(not(target_os = "linux"))]
    {
        let (mut client, mut upstream) = (client, upstream);
        copy_tcp(&mut client, &mut upstream, opts, &on_bytes).await
    }
}

/// The user-space copy of [`splice_tcp`], also what it is measured against.
#[cfg(any(test, not(target_os = "linux")))]
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
    both_ways(up, down, &activity, opts.idle_timeout).await
}

/// Runs both directions of a splice to their end: both reach EOF, one fails, or neither
/// moves a byte for `idle_timeout`; logs how it ended.
async fn both_ways(
    up: impl Future<Output = Result<copy::DirectionReport, SpliceError>>,
    down: impl Future<Output = Result<copy::DirectionReport, SpliceError>>,
    activity: &copy::Activity,
    idle_timeout: Duration,
) -> Result<SpliceReport, SpliceError> {
    // `try_join!` drops the other direction at the first error: one broken side ends it all.
    let result = tokio::select! {
        both = async { tokio::try_join!(up, down) } => both.map(|(up, down)| SpliceReport {
            bytes_up: up.bytes,
            bytes_down: down.bytes,
            throttled_up: up.throttled,
            throttled_down: down.throttled,
        }),
        idle = activity.idle_for(idle_timeout) => Err(SpliceError::Idle { idle }),
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
