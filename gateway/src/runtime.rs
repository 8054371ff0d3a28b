//! The shared runtime state: what every connection and request task holds.
//!
//! It sits below the listeners and the gateway: a listener serves from it, the gateway
//! (which owns the sockets, reload and shutdown) fills it. It holds no policy and starts
//! nothing. `sessions` is the registry of open long-lived calls, which reload revokes and
//! caps count.

pub mod sessions;
pub mod signal;

use std::sync::Arc;

use arc_swap::ArcSwap;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::access_log::Logs;
use crate::metrics::Metrics;
use crate::snapshot::Snapshot;

pub use self::sessions::Sessions;
pub use self::signal::Signal;

/// What every connection and request task shares.
pub struct Shared {
    pub snapshot: ArcSwap<Snapshot>,
    pub metrics: Arc<Metrics>,
    /// Connections and hijacked streams; shutdown waits on it.
    pub tasks: TaskTracker,
    /// Cancelled when shutdown's grace period is over: whatever is still open closes.
    /// Cancel it with [`Shared::kill_all`], which also fires `killed`.
    pub kill: CancellationToken,
    /// The same moment as `kill`, for the waits that check it at every request.
    pub killed: Signal,
    /// Open watches, streams and log follows: capped per tenant and connection, and
    /// revoked after a reload that no longer allows them.
    pub sessions: Sessions,
    /// The access logs every listener writes, reconfigured at each reload.
    pub access_log: Logs,
}

impl Shared {
    /// Ends whatever is still open: cancels `kill` and fires `killed`.
    pub fn kill_all(&self) {
        self.kill.cancel();
        self.killed.fire();
    }
}
