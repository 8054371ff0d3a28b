//! Idle upstream connections kept for reuse, per serving thread and backend: the shelf both
//! HTTP/1.1 pools put their connections on (`http1`'s hyper senders, `fast`'s raw
//! sockets).
//!
//! A slot is one serving thread's connections to one backend, the most recently used last,
//! behind a lock nobody else contends for (a connection lives on the thread that uses it).
//! Idle connections older than the timeout are closed when a request finds them, and by a
//! sweep every half timeout, so a quiet backend does not keep sockets open for ever. The
//! sweep holds the shelf weakly and ends with it (a reload that replaces the upstream drops
//! the pool).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use super::clock::{self, Coarse};
use crate::workers;

/// Idle connections kept per serving thread and backend; more are closed when they come
/// back. Enough for the keep-alive connections of a busy thread (nginx's `keepalive` is
/// usually set to tens or hundreds).
pub const MAX_IDLE: usize = 1024;

/// A connection that can tell whether its far end closed it while it sat idle.
pub trait Reusable: Send + 'static {
    fn is_closed(&self) -> bool;
}

struct Idle<C> {
    conn: C,
    since: Coarse,
}

/// Every serving thread's idle connections to an upstream's backends.
pub struct Idles<C> {
    /// `[thread * backends + backend]`.
    slots: Box<[Mutex<Vec<Idle<C>>>]>,
    backends: usize,
    /// How long a connection may stay idle.
    timeout: Duration,
    /// The sweep was started (by the first connection given back).
    sweeping: AtomicBool,
}

impl<C: Reusable> Idles<C> {
    pub fn new(backends: usize, timeout: Duration) -> Arc<Self> {
        let backends = backends.max(1);
        let threads = workers::count().max(1);
        Arc::new(Idles {
            slots: (0..threads * backends)
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
            backends,
            timeout,
            sweeping: AtomicBool::new(false),
        })
    }

    /// The slot of backend number `index` on the serving thread we are on.
    pub fn slot_of(&self, index: usize) -> usize {
        let threads = self.slots.len() / self.backends;
        (workers::current_index() % threads) * self.backends + index
    }

    fn slot(&self, slot: usize) -> MutexGuard<'_, Vec<Idle<C>>> {
        self.slots[slot].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The most recently used idle connection of `slot` that is still open and not past
    /// the idle timeout; the ones it passes over are closed.
    pub fn checkout(&self, slot: usize) -> Option<C> {
        let now = clock::now();
        let mut idle = self.slot(slot);
        while let Some(conn) = idle.pop() {
            if now.since(conn.since) > self.timeout {
                // Everything below it is older still.
                idle.clear();
                return None;
            }
            if !conn.conn.is_closed() {
                return Some(conn.conn);
            }
        }
        None
    }

    /// Puts `conn` back on `slot` (closes it when the slot is full).
    pub fn give_back(self: &Arc<Self>, slot: usize, conn: C) {
        {
            let mut idle = self.slot(slot);
            if idle.len() >= MAX_IDLE {
                return;
            }
            idle.push(Idle {
                conn,
                since: clock::now(),
            });
        }
        self.start_sweep();
    }

    /// Starts the sweep on the current runtime, once.
    fn start_sweep(self: &Arc<Self>) {
        if self.sweeping.swap(true, Ordering::Relaxed) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.sweeping.store(false, Ordering::Relaxed);
            return;
        };
        let every = (self.timeout / 2).clamp(Duration::from_millis(10), Duration::from_secs(30));
        let idles: Weak<Idles<C>> = Arc::downgrade(self);
        runtime.spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(idles) = idles.upgrade() else {
                    return;
                };
                idles.close_expired();
            }
        });
    }

    /// Drops (so closes) every connection idle past the timeout or closed by the backend.
    fn close_expired(&self) {
        let now = clock::now();
        for slot in 0..self.slots.len() {
            self.slot(slot)
                .retain(|c| now.since(c.since) <= self.timeout && !c.conn.is_closed());
        }
    }
}
