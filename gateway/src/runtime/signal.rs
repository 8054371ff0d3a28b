//! A one-way signal (drain, kill) that many connections check and wait on at every request,
//! at the price of an atomic load.
//!
//! A `CancellationToken` takes a mutex to answer `is_cancelled`, and its `cancelled()`
//! future takes its waiter list's mutex each time it is polled, which is at every wake of
//! the task waiting on it: twice a request on a keep-alive connection. Here each waiter
//! registers once for its whole life (one lock, when the connection starts), keeps its
//! task's waker in its own slot, and a check is one load of the flag.

use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};

use futures_util::task::AtomicWaker;

/// The firing side; cheap to clone (all clones are the same signal).
#[derive(Clone, Default)]
pub struct Signal {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    fired: AtomicBool,
    /// Each live waiter's waker slot; slots of dropped waiters are pruned as the list grows.
    waiters: Mutex<Vec<Weak<AtomicWaker>>>,
}

impl Signal {
    /// Sets the signal and wakes every waiter; later waiters see it at once.
    pub fn fire(&self) {
        self.inner.fired.store(true, Ordering::SeqCst);
        let waiters = std::mem::take(
            &mut *self
                .inner
                .waiters
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for waker in waiters.iter().filter_map(Weak::upgrade) {
            waker.wake();
        }
    }

    pub fn is_fired(&self) -> bool {
        self.inner.fired.load(Ordering::SeqCst)
    }

    /// A waiter for one task, usually one connection.
    pub fn waiter(&self) -> Waiter {
        let waker = Arc::new(AtomicWaker::new());
        let mut waiters = self
            .inner
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if waiters.len() == waiters.capacity() {
            waiters.retain(|w| w.strong_count() > 0);
        }
        waiters.push(Arc::downgrade(&waker));
        drop(waiters);
        Waiter {
            inner: self.inner.clone(),
            waker,
        }
    }
}

/// One task's view of a [`Signal`]. Dropping it costs no lock: its slot is pruned later.
pub struct Waiter {
    inner: Arc<Inner>,
    waker: Arc<AtomicWaker>,
}

impl Waiter {
    pub fn is_fired(&self) -> bool {
        self.inner.fired.load(Ordering::SeqCst)
    }

    /// Ready once the signal fires; the task that polls it last is the one woken.
    pub fn poll_fired(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.is_fired() {
            return Poll::Ready(());
        }
        self.waker.register(cx.waker());
        // Fired between the check and the registration: `fire` may have woken the slot
        // before it held this waker.
        if self.is_fired() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// Waits until the signal fires.
    pub async fn fired(&self) {
        poll_fn(|cx| self.poll_fired(cx)).await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn every_waiter_wakes_when_it_fires_and_a_late_one_sees_it_at_once() {
        let signal = Signal::default();
        let waiters: Vec<Waiter> = (0..3).map(|_| signal.waiter()).collect();
        assert!(!waiters[0].is_fired());
        let tasks: Vec<_> = waiters
            .into_iter()
            .map(|w| tokio::spawn(async move { w.fired().await }))
            .collect();
        tokio::task::yield_now().await;
        signal.fire();
        for task in tasks {
            tokio::time::timeout(Duration::from_secs(5), task)
                .await
                .expect("a waiter was not woken")
                .unwrap();
        }
        let late = signal.waiter();
        assert!(late.is_fired());
        tokio::time::timeout(Duration::from_secs(5), late.fired())
            .await
            .expect("a late waiter waits");
    }

    #[test]
    fn dropped_waiters_do_not_pile_up() {
        let signal = Signal::default();
        let kept = signal.waiter();
        for _ in 0..10_000 {
            drop(signal.waiter());
        }
        let slots = signal.inner.waiters.lock().unwrap();
        assert!(slots.len() <= 64, "{} slots for 1 live waiter", slots.len());
        drop(slots);
        assert!(!kept.is_fired());
    }
}
