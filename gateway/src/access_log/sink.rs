//! Where one file's (or stdout's) lines wait and are written: a bounded buffer per serving
//! thread, written to by that thread under its own lock (held while one line is copied
//! in), and emptied by the writer thread, which swaps it for an empty one and writes it
//! out. A line that does not fit its buffer is dropped and counted, never waited for.
//!
//! The writer empties the buffers every flush interval, and sooner when one fills past
//! [`WAKE_AT`]: the line that crosses it wakes the writer (one unpark per crossing), so
//! what a sink keeps up with is the writer's speed, not a buffer's size over the interval.
//!
//! The writer reopens the file when asked (SIGUSR1) and when the file at the path is no
//! longer the one it holds open (logrotate moved it away and `create`d another), checked
//! at every flush by device and inode.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::Thread;

use prometheus_client::metrics::counter::Counter;
use tracing::warn;

use super::out::Out;
use crate::config::AccessLogPath;

/// Each serving thread's buffer, in bytes: at 300 bytes a line, about 3,500 lines.
pub const SHARD_BYTES: usize = 1024 * 1024;

/// A buffer this full wakes the writer: at 300 bytes a line, every 870 lines, leaving
/// three quarters of the buffer (40 ms at 65,000 lines a second) for the writer to come.
pub const WAKE_AT: usize = SHARD_BYTES / 4;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One destination's buffers and open file.
pub struct Sink {
    pub path: AccessLogPath,
    shards: Box<[Mutex<Vec<u8>>]>,
    dropped: Counter,
    reopen: AtomicBool,
    /// The writer thread, woken when a buffer passes [`WAKE_AT`].
    writer: Arc<OnceLock<Thread>>,
    /// The writer's side, only ever locked by the writer thread (or a final flush).
    output: Mutex<Output>,
}

struct Output {
    file: Option<Opened>,
    /// The empty buffer swapped in for a full one.
    spare: Vec<u8>,
    /// The last open or write failed (warned once until one works again).
    failing: bool,
}

enum Opened {
    Stdout,
    File {
        file: File,
        /// Device and inode of what was opened.
        id: (u64, u64),
    },
}

impl Sink {
    /// A sink with one buffer per serving thread (`shards`), emptied by `writer`.
    pub fn new(
        path: AccessLogPath,
        shards: usize,
        dropped: Counter,
        writer: Arc<OnceLock<Thread>>,
    ) -> Sink {
        Sink {
            path,
            shards: (0..shards.max(1))
                .map(|_| Mutex::new(Vec::with_capacity(SHARD_BYTES)))
                .collect(),
            dropped,
            reopen: AtomicBool::new(false),
            writer,
            output: Mutex::new(Output {
                file: None,
                spare: Vec::with_capacity(SHARD_BYTES),
                failing: false,
            }),
        }
    }

    /// Writes one line into the calling thread's buffer with `write`; a line that does
    /// not fit is taken back and counted as dropped (false).
    pub fn push(&self, write: impl FnOnce(&mut Out<'_>)) -> bool {
        let shard = &self.shards[crate::workers::current_index() % self.shards.len()];
        let mut buf = lock(shard);
        let start = buf.len();
        let mut out = Out::new(&mut buf);
        write(&mut out);
        if out.full {
            out.truncate(start);
            drop(buf);
            self.dropped.inc();
            return false;
        }
        let crossed = start < WAKE_AT && buf.len() >= WAKE_AT;
        drop(buf);
        if crossed && let Some(writer) = self.writer.get() {
            writer.unpark();
        }
        true
    }

    /// Asks the writer to reopen the file at its next flush.
    pub fn reopen(&self) {
        self.reopen.store(true, Ordering::Relaxed);
    }

    /// Writes out every buffer (the writer thread's work, each interval).
    pub fn flush(&self) {
        let mut output = lock(&self.output);
        let output = &mut *output;
        if self.reopen.swap(false, Ordering::Relaxed) || output.moved(&self.path) {
            output.file = None;
        }
        if output.file.is_none() {
            match open(&self.path) {
                Ok(opened) => {
                    output.file = Some(opened);
                    output.failing = false;
                }
                Err(e) => {
                    if !output.failing {
                        warn!(path = ?self.path, error = %e, "cannot open the access log; its lines wait, then drop");
                    }
                    output.failing = true;
                    return;
                }
            }
        }
        for shard in &self.shards {
            {
                let mut buf = lock(shard);
                if buf.is_empty() {
                    continue;
                }
                std::mem::swap(&mut *buf, &mut output.spare);
            }
            if let Err(e) = output.write_spare() {
                let lost = output.spare.iter().filter(|&&b| b == b'\n').count();
                self.dropped.inc_by(lost as u64);
                if !output.failing {
                    warn!(path = ?self.path, error = %e, "cannot write the access log; reopening it");
                }
                output.failing = true;
                output.file = None;
            }
            output.spare.clear();
        }
    }
}

impl Output {
    /// Whether the file at `path` is no longer the one held open (moved away, or
    /// replaced).
    fn moved(&self, path: &AccessLogPath) -> bool {
        let (Some(Opened::File { id, .. }), AccessLogPath::File(path)) = (&self.file, path) else {
            return false;
        };
        std::fs::metadata(path).map_or(true, |m| (m.dev(), m.ino()) != *id)
    }

    fn write_spare(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(Opened::Stdout) => {
                let mut stdout = io::stdout().lock();
                stdout.write_all(&self.spare)?;
                stdout.flush()
            }
            Some(Opened::File { file, .. }) => file.write_all(&self.spare),
            None => Ok(()),
        }
    }
}

fn open(path: &AccessLogPath) -> io::Result<Opened> {
    match path {
        AccessLogPath::Stdout => Ok(Opened::Stdout),
        AccessLogPath::File(path) => {
            let file = OpenOptions::new().create(true).append(true).open(path)?;
            let m = file.metadata()?;
            Ok(Opened::File {
                file,
                id: (m.dev(), m.ino()),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::counter::Counter;

    use std::sync::{Arc, OnceLock};
    use std::time::Duration;

    use super::{SHARD_BYTES, Sink, WAKE_AT};
    use crate::config::AccessLogPath;

    #[test]
    fn a_full_buffer_drops_and_counts_and_a_flush_makes_room() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        let dropped = Counter::default();
        let sink = Sink::new(
            AccessLogPath::File(path.clone()),
            1,
            dropped.clone(),
            Default::default(),
        );
        let line = [b'x'; 1023];
        let fits = SHARD_BYTES / 1024;
        for _ in 0..fits {
            assert!(sink.push(|out| {
                out.bytes(&line);
                out.byte(b'\n');
            }));
        }
        assert!(!sink.push(|out| out.bytes(b"one more\n")));
        assert_eq!(dropped.get(), 1);
        sink.flush();
        assert_eq!(std::fs::read(&path).unwrap().len(), fits * 1024);
        assert!(sink.push(|out| out.bytes(b"after\n")));
        // Moved away (logrotate's `create`): the next flush writes a new file.
        std::fs::rename(&path, dir.path().join("access.log.1")).unwrap();
        sink.flush();
        assert_eq!(std::fs::read(&path).unwrap(), b"after\n");
    }

    #[test]
    fn a_buffer_past_a_quarter_wakes_the_writer_before_its_interval() {
        let dir = tempfile::tempdir().unwrap();
        let writer: Arc<OnceLock<std::thread::Thread>> = Arc::default();
        let sink = Sink::new(
            AccessLogPath::File(dir.path().join("access.log")),
            1,
            Counter::default(),
            writer.clone(),
        );
        let (woke_tx, woke_rx) = std::sync::mpsc::channel();
        // Parked for 30 s: only an unpark wakes it within the 10 s waited below.
        let parked = std::thread::spawn(move || {
            std::thread::park_timeout(Duration::from_secs(30));
            woke_tx.send(()).unwrap();
        });
        writer.set(parked.thread().clone()).unwrap();
        let line = [b'x'; 1023];
        // Short of the mark: nobody is woken.
        for _ in 0..WAKE_AT / 1024 - 1 {
            assert!(sink.push(|out| {
                out.bytes(&line);
                out.byte(b'\n');
            }));
        }
        assert!(woke_rx.recv_timeout(Duration::from_millis(300)).is_err());
        // The line that crosses it wakes the writer.
        assert!(sink.push(|out| {
            out.bytes(&line);
            out.byte(b'\n');
        }));
        woke_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the crossing line wakes the writer");
        parked.join().unwrap();
    }
}
