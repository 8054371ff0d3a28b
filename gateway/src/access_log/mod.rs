//! The access log: one line per HTTP request, per hijacked connection when it ends, per
//! Kubernetes call, in the format the operator chose (`[access_log]`, overridable per
//! listener), to stdout or a file.
//!
//! Writing never blocks a serving thread: a line is formatted straight into that thread's
//! bounded buffer (`sink`), which one writer thread empties every [`FLUSH_EVERY`], and
//! sooner when a buffer fills past a quarter of its room; a line
//! that does not fit is dropped and counted (`leafgate_access_log_dropped_total`). Nothing
//! is allocated per line: a [`Record`] borrows its facts from where they are, and the
//! buffers never grow (`out`). The formats are pure functions of a record (`format`).
//!
//! Files, each importing only those before it: `time`, `out`, `record`, `format`, `sink`.
//! This file holds [`Logs`], the gateway's set of sinks that reloads reconfigure.

mod format;
mod out;
mod record;
mod sink;
mod time;

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::Thread;
use std::time::Duration;

use arc_swap::ArcSwap;
use prometheus_client::metrics::counter::Counter;

use crate::config::{AccessLogConfig, AccessLogs};

pub use out::Decimal;
pub use record::{Kind, Record};
use sink::Sink;

/// How often the writer thread empties the buffers.
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);

/// The gateway's access logs: what each listener writes, and the writer thread. Made once
/// at start; [`Logs::configure`] at each reload keeps the sinks whose path stays.
pub struct Logs {
    inner: Arc<Inner>,
}

struct Inner {
    plan: ArcSwap<Plan>,
    /// Some listener writes a log: the one check a request makes when none does.
    on: AtomicBool,
    /// The sinks the writer flushes: the plan's, and those a reload left (flushed once
    /// more, then let go).
    sinks: Mutex<Vec<(Arc<Sink>, bool)>>,
    dropped: Counter,
    shards: usize,
    /// Shared with each sink, which wakes it when a buffer fills.
    writer: Arc<OnceLock<Thread>>,
    closing: AtomicBool,
}

#[derive(Default)]
struct Plan {
    default: Option<Arc<ListenerLog>>,
    by_listener: HashMap<String, Arc<ListenerLog>>,
}

/// One listener's access log: its settings and where its lines go.
pub struct ListenerLog {
    pub config: Arc<AccessLogConfig>,
    sink: Arc<Sink>,
}

impl Logs {
    /// No log yet; lines dropped for want of room are counted in `dropped`. Each sink
    /// gets one buffer per serving thread (`shards`).
    pub fn new(dropped: Counter, shards: usize) -> Logs {
        Logs {
            inner: Arc::new(Inner {
                plan: ArcSwap::from_pointee(Plan::default()),
                on: AtomicBool::new(false),
                sinks: Mutex::new(Vec::new()),
                dropped,
                shards,
                writer: Arc::default(),
                closing: AtomicBool::new(false),
            }),
        }
    }

    /// Writes what `logs` says from now on; a sink whose path stays is kept (its file
    /// and buffered lines with it).
    pub fn configure(&self, logs: &AccessLogs) {
        let inner = &self.inner;
        let mut sinks = inner.sinks.lock().unwrap_or_else(PoisonError::into_inner);
        let mut used: Vec<Arc<Sink>> = Vec::new();
        let mut log = |config: &Arc<AccessLogConfig>| {
            let sink = match used
                .iter()
                .chain(sinks.iter().map(|(s, _)| s))
                .find(|s| s.path == config.path)
            {
                Some(s) => s.clone(),
                None => Arc::new(Sink::new(
                    config.path.clone(),
                    inner.shards,
                    inner.dropped.clone(),
                    inner.writer.clone(),
                )),
            };
            if !used.iter().any(|s| Arc::ptr_eq(s, &sink)) {
                used.push(sink.clone());
            }
            Arc::new(ListenerLog {
                config: config.clone(),
                sink,
            })
        };
        let plan = Plan {
            default: logs.default.as_ref().map(&mut log),
            by_listener: logs
                .by_listener
                .iter()
                .map(|(name, config)| (name.clone(), log(config)))
                .collect(),
        };
        // The sinks no longer used get one more flush, then go.
        for (s, kept) in sinks.iter_mut() {
            *kept = used.iter().any(|u| Arc::ptr_eq(u, s));
        }
        for s in used {
            if !sinks.iter().any(|(k, _)| Arc::ptr_eq(k, &s)) {
                sinks.push((s, true));
            }
        }
        drop(sinks);
        inner.plan.store(Arc::new(plan));
        inner.on.store(logs.any(), Ordering::Release);
        if logs.any() {
            self.start_writer();
        }
    }

    /// Whether any listener writes a log (one atomic load).
    pub fn is_on(&self) -> bool {
        self.inner.on.load(Ordering::Acquire)
    }

    /// The access log of listener `name`, when it writes one.
    pub fn of(&self, name: &str) -> Option<Arc<ListenerLog>> {
        if !self.is_on() {
            return None;
        }
        let plan = self.inner.plan.load();
        plan.by_listener
            .get(name)
            .or(plan.default.as_ref())
            .cloned()
    }

    /// Reopens every file at the next flush (SIGUSR1, after a rotation that moved no file).
    pub fn reopen(&self) {
        for (s, _) in self
            .inner
            .sinks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            s.reopen();
        }
        if let Some(t) = self.inner.writer.get() {
            t.unpark();
        }
    }

    fn start_writer(&self) {
        self.inner.writer.get_or_init(|| {
            let inner = self.inner.clone();
            let thread = std::thread::Builder::new()
                .name("leafgate-access-log".into())
                .spawn(move || inner.write_until_closed());
            match thread {
                Ok(handle) => handle.thread().clone(),
                // Without a writer lines fill the buffers and are counted as dropped.
                Err(e) => {
                    tracing::warn!(error = %e, "cannot start the access log's writer thread");
                    std::thread::current()
                }
            }
        });
    }
}

impl Drop for Logs {
    fn drop(&mut self) {
        self.inner.closing.store(true, Ordering::Release);
        if let Some(t) = self.inner.writer.get() {
            t.unpark();
        }
    }
}

impl Inner {
    /// The writer thread: every [`FLUSH_EVERY`] (or when woken) each sink's buffers are
    /// written out; once the gateway is gone, a last flush.
    fn write_until_closed(&self) {
        // Copied out of the lock (reused, so the writer allocates nothing as it loops):
        // a write that blocks (a FIFO nobody reads) must not hold up a reload.
        let mut sinks: Vec<Arc<Sink>> = Vec::new();
        loop {
            std::thread::park_timeout(FLUSH_EVERY);
            let closing = self.closing.load(Ordering::Acquire);
            {
                let mut held = self.sinks.lock().unwrap_or_else(PoisonError::into_inner);
                sinks.extend(held.iter().map(|(s, _)| s.clone()));
                held.retain(|(_, kept)| *kept);
            }
            for s in sinks.drain(..) {
                s.flush();
            }
            if closing {
                return;
            }
        }
    }
}

impl ListenerLog {
    /// Writes `record` unless its path is excluded or sampling leaves it out (an error's
    /// line is always written).
    pub fn write(&self, record: &Record<'_>) {
        let config = &*self.config;
        if !record.is_error() {
            let path = record.path(false).unwrap_or_default();
            if config.exclude_paths.iter().any(|p| p.as_bytes() == path) {
                return;
            }
            if config.sample < 1.0 && !sampled(config.sample) {
                return;
            }
        }
        self.sink
            .push(|out| format::line(&config.format, config.query, record, out));
    }
}

/// True for a share `p` of calls: a per-thread xorshift, no lock and no shared state.
fn sampled(p: f64) -> bool {
    thread_local! {
        static STATE: Cell<u64> = Cell::new(seed());
    }
    let x = STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    });
    ((x >> 11) as f64 / (1u64 << 53) as f64) < p
}

/// A nonzero seed that differs between threads and runs.
fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let thread = crate::workers::current_index() as u64;
    (nanos ^ thread.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1
}

#[cfg(test)]
mod tests {
    use super::sampled;

    #[test]
    fn sampling_writes_about_the_share_asked() {
        let n = 100_000;
        let hits = (0..n).filter(|_| sampled(0.25)).count();
        assert!((20_000..30_000).contains(&hits), "{hits}");
        assert!((0..1000).all(|_| sampled(1.0)));
        assert!((0..1000).all(|_| !sampled(0.0)));
    }
}
