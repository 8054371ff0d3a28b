//! The terms a splice is run and reported in: [`SpliceOptions`] in; [`SpliceReport`] or
//! [`SpliceError`] out, naming the [`Direction`], [`Side`] and [`IoOp`] concerned. The
//! copy loops (`copy`, `zero_copy`) and the caller share them; this file uses neither.

use std::fmt;
use std::io;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use crate::limit::Limiter;

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
    /// Nanoseconds both directions have waited on their limiters so far, added as each
    /// wait ends: a splice that fails has no report, and its line still says this.
    pub throttled: Arc<AtomicU64>,
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

    /// Whether the splice ended because the client went away without the courtesies: it
    /// reset, or closed its TLS without `close_notify` (as many clients do once they have
    /// what they came for). That is the client's business, not a fault to warn about.
    pub fn client_hung_up(&self) -> bool {
        self.hung_up(Side::Client)
    }

    /// The same of the upstream: it reset, or closed its TLS without `close_notify` (a
    /// server that drops an exec's connection once the exit status is out), which the
    /// access log tells apart from a clean close and from a failure.
    pub fn upstream_hung_up(&self) -> bool {
        self.hung_up(Side::Upstream)
    }

    fn hung_up(&self, which: Side) -> bool {
        match self {
            SpliceError::Io { side, source, .. } if *side == which => {
                peer_gone(source) || source.kind() == io::ErrorKind::UnexpectedEof
            }
            _ => false,
        }
    }

    /// Passing an EOF on to a side that has already closed its connection (a client
    /// that read its exec's exit status and hung up, say): the EOF has nowhere to go and
    /// nothing is lost, so that direction has simply ended. Anything else is a failure.
    pub(super) fn shutdown(
        direction: Direction,
        result: io::Result<()>,
    ) -> Result<(), SpliceError> {
        match result {
            Err(e) if !peer_gone(&e) => Err(SpliceError::io(direction, IoOp::Shutdown)(e)),
            _ => Ok(()),
        }
    }

    pub(super) fn io(direction: Direction, op: IoOp) -> impl FnOnce(io::Error) -> SpliceError {
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

/// Whether `e` says the far side of a connection has gone: closed (`ENOTCONN` after it
/// reset), reset, or no longer reading (`EPIPE`).
fn peer_gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotConnected | io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
    )
}
