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
//! and takes the copy path, as does a client side hyper hands over as a wrapped stream
//! rather than a bare socket (a routes listener's, wrapped for the fast path's put-back
//! bytes and for lingering close).
//!
//! Pipes are lent per burst from a bounded pool per thread (`pipes`); a burst that finds
//! the pool empty is copied through a buffer lent for that burst.
//!
//! # What an idle connection holds
//! Its two sockets, its task, and no buffer: the user-space copy takes a buffer from a
//! small pool per thread (`chunks`) inside each poll of a read, keeps it only when the read
//! gave bytes, and gives it back once they are written, so a direction waiting for bytes
//! holds none. The zero-copy path holds a pipe (or that pool's buffer) only while a burst
//! is in flight. `tests/tests/allocations.rs` measures the heap an idle upgraded
//! connection holds.

mod chunks;
mod copy;
#[cfg(target_os = "linux")]
mod pipes;
mod terms;
#[cfg(test)]
mod tests;
#[cfg(target_os = "linux")]
mod zero_copy;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

pub use self::terms::{Direction, IoOp, Side, SpliceError, SpliceOptions, SpliceReport};

use self::copy::{Activity, both_ways, copy_one};

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
    let activity = Activity::new(opts.throttled.clone());
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
