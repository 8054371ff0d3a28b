//! The user-space copy loop of one direction and the activity clock both directions share
//! for the idle timeout. Charges the limiter before each write (see the parent module), and
//! holds a buffer only from a read that gave bytes until they are written (`chunks`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use super::chunks;
use super::terms::{Direction, IoOp, SpliceError, SpliceReport};
use crate::limit::Limiter;

#[derive(Debug, Default)]
pub(super) struct DirectionReport {
    pub(super) bytes: u64,
    pub(super) throttled: Duration,
}

impl DirectionReport {
    /// `n` bytes were read and are about to be written: charges them to `limiter` and
    /// waits as long as it says, counting the wait as throttled. Bytes waiting on the
    /// limiter are not idle, so the activity clock is moved to when the wait ends. Both
    /// copy loops (user space and `splice(2)`) pace through here; `before_wait` runs when
    /// there is a wait, before it.
    pub(super) async fn pace(
        &mut self,
        n: usize,
        limiter: &Limiter,
        activity: &Activity,
        before_wait: impl FnOnce(),
    ) {
        let now = Instant::now();
        activity.touch(now);
        let wait = limiter.charge(n);
        if !wait.is_zero() {
            before_wait();
            activity.touch(now + wait);
            tokio::time::sleep(wait).await;
            let waited = now.elapsed();
            self.throttled += waited;
            let nanos = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
            activity.throttled.fetch_add(nanos, Ordering::Relaxed);
        }
    }
}

pub(super) async fn copy_one<R, W, F>(
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
    // No bigger than one charge should be.
    let max = limiter.chunk_hint();
    let mut report = DirectionReport::default();
    loop {
        // A buffer for this chunk only, from the thread's pool: none is held while the
        // reader has nothing to give, and a chunk that waits holds about its own size
        // (see `chunks`).
        let chunk = chunks::read(reader, max)
            .await
            .map_err(SpliceError::io(direction, IoOp::Read))?;
        let Some(mut chunk) = chunk else {
            // Half-close: pass the EOF on (shutdown flushes first) and let the other
            // direction run to its own end.
            SpliceError::shutdown(direction, writer.shutdown().await)?;
            activity.touch(Instant::now());
            return Ok(report);
        };
        let n = chunk.len();
        report.pace(n, limiter, activity, || chunk.settle()).await;
        chunks::write(writer, chunk)
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
pub(super) struct Activity {
    start: Instant,
    /// Nanoseconds after `start`.
    last: AtomicU64,
    /// Both directions' waits on their limiters so far (`SpliceOptions::throttled`).
    throttled: Arc<AtomicU64>,
}

impl Activity {
    pub(super) fn new(throttled: Arc<AtomicU64>) -> Self {
        Activity {
            start: Instant::now(),
            last: AtomicU64::new(0),
            throttled,
        }
    }

    pub(super) fn touch(&self, at: Instant) {
        let nanos =
            u64::try_from(at.saturating_duration_since(self.start).as_nanos()).unwrap_or(u64::MAX);
        self.last.fetch_max(nanos, Ordering::Relaxed);
    }

    pub(super) fn last(&self) -> Instant {
        self.start + Duration::from_nanos(self.last.load(Ordering::Relaxed))
    }

    /// Resolves once nothing has moved for `timeout`, with how long that was. Wakes once per
    /// `timeout` at most, not per chunk.
    pub(super) async fn idle_for(&self, timeout: Duration) -> Duration {
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

/// Runs both directions of a splice to their end: both reach EOF, one fails, or neither
/// moves a byte for `idle_timeout`; logs how it ended.
pub(super) async fn both_ways(
    up: impl Future<Output = Result<DirectionReport, SpliceError>>,
    down: impl Future<Output = Result<DirectionReport, SpliceError>>,
    activity: &Activity,
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
