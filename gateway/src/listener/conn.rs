//! What every accept loop shares with the connections it starts: the time a request head
//! may take, the wait for a client's first byte, and the count of requests in flight that
//! the idle timer watches. The routes, node-API and kube-API listeners (`listener`), the
//! HTTP/1.1 fast path (`fast`) and the admin listener (`admin`) all use them, so they sit
//! here, below the accept loop, and nothing in `listener/` imports from its `mod.rs`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::sync::Notify;
use tracing::debug;

/// How long a client has to send a complete request head on a fresh HTTP/1.1 connection.
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Waits for the client's first byte (without consuming it); false, logged, when the
/// client closed, failed or stayed silent for `timeout`.
pub(crate) async fn first_byte(stream: &TcpStream, timeout: Duration) -> bool {
    let mut probe = [0u8; 1];
    match tokio::time::timeout(timeout, stream.peek(&mut probe)).await {
        Ok(Ok(n)) if n > 0 => true,
        Ok(Ok(_)) => {
            debug!("closed before sending anything");
            false
        }
        Ok(Err(e)) => {
            debug!(error = %e, "connection failed before its first byte");
            false
        }
        Err(_) => {
            debug!(?timeout, "no first byte in time; closing");
            false
        }
    }
}

/// Requests in flight on one connection, for the idle timer.
#[derive(Default)]
pub(crate) struct InFlight {
    count: AtomicUsize,
    /// Notified whenever a request ends, restarting the idle timer.
    ended: Notify,
}

/// Decrements [`InFlight`] when the request's handler returns or is dropped.
struct InFlightGuard(Arc<InFlight>);

pin_project_lite::pin_project! {
    /// A request's handler, counted in flight while it lives. A struct rather than an
    /// `async` block: awaiting the handler inside one would copy the whole (large)
    /// handler future into the block's state on its first poll, once per request.
    pub(crate) struct Tracked<F> {
        #[pin]
        request: F,
        _guard: InFlightGuard,
    }
}

impl<F: std::future::Future> std::future::Future for Tracked<F> {
    type Output = F::Output;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        self.project().request.poll(cx)
    }
}

impl InFlight {
    /// Counts `request` as in flight from now until it finishes or is dropped.
    pub(crate) fn track<F: std::future::Future>(self: &Arc<Self>, request: F) -> Tracked<F> {
        Tracked {
            request,
            _guard: InFlightGuard::new(self.clone()),
        }
    }
}

impl InFlightGuard {
    fn new(in_flight: Arc<InFlight>) -> Self {
        in_flight.count.fetch_add(1, Ordering::AcqRel);
        InFlightGuard(in_flight)
    }
}

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::AcqRel);
        self.0.ended.notify_waiters();
    }
}

/// Resolves once the connection has had no request in flight for `idle` in a row.
pub(crate) async fn idle_for(in_flight: &InFlight, idle: Duration) {
    loop {
        let ended = in_flight.ended.notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        if in_flight.count.load(Ordering::Acquire) == 0 {
            tokio::select! {
                _ = tokio::time::sleep(idle) => {
                    if in_flight.count.load(Ordering::Acquire) == 0 {
                        return;
                    }
                }
                _ = ended.as_mut() => {}
            }
        } else {
            ended.await;
        }
    }
}
