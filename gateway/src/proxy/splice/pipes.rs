//! The pipes `splice(2)` moves bytes through, lent out from a bounded pool per thread.
//!
//! A pipe is only needed while bytes are in flight: a connection takes one when its socket
//! turns readable and gives it back as soon as the pipe is drained and the socket has
//! nothing more to read. So a gateway holding 10,000 mostly idle WebSocket connections
//! needs pipes for the few that are moving bytes at this instant, not two per connection
//! (which cost 4 descriptors and up to 2 MiB of pipe buffers each). When a thread's pool
//! has lent out all it may, [`take`] answers `None` and the caller copies through user
//! space for that burst.
//!
//! This module owns creating, sizing, lending and reclaiming pipes. It does not move bytes
//! or know about sockets: `zero_copy` does.
//!
//! A [`Lease`] goes back to the pool it came from (not the pool of the thread that drops
//! it), so the per-thread bound holds even when a task migrates between threads. A lease
//! dropped with bytes still in its pipe (the splice was cancelled or failed mid-chunk)
//! closes the pipe instead: those bytes belong to a connection that is gone.

use std::cell::OnceCell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, PoisonError};

/// Pipe capacity asked for: bigger than the default 64 KiB means fewer system calls per
/// byte. Unprivileged processes may go up to `/proc/sys/fs/pipe-max-size` (1 MiB).
const PIPE_SIZE: libc::c_int = 1 << 20;

/// Most pipes one thread has open at once (lent out plus idle): 256 descriptors. Each
/// worker thread serves its connections one at a time, so more pipes than this would only
/// matter if more than 128 directions were mid-chunk together on one thread; those copy
/// through user space instead, which is slower per byte but never refused.
pub(super) const PIPES_PER_THREAD: usize = 128;

/// Both ends of a non-blocking pipe.
pub(super) struct Pipe {
    pub(super) read: OwnedFd,
    pub(super) write: OwnedFd,
    /// The capacity the kernel granted: the most one `splice` into it can move.
    pub(super) capacity: usize,
}

impl Pipe {
    #[allow(
        unsafe_code,
        reason = "pipe2 and F_SETPIPE_SZ have no wrapper in std; fds are owned from birth"
    )]
    fn new() -> io::Result<Pipe> {
        let mut fds: [RawFd; 2] = [-1, -1];
        // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both fds are open and owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: fcntl on an fd we own; failure only leaves the default size.
        let granted = unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_SIZE) };
        let size = if granted > 0 {
            granted
        } else {
            // SAFETY: as above; F_GETPIPE_SZ only reads.
            unsafe { libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ) }
        };
        let capacity = usize::try_from(size)
            .ok()
            .filter(|&c| c > 0)
            .unwrap_or(64 << 10);
        Ok(Pipe {
            read,
            write,
            capacity,
        })
    }
}

/// One thread's pipes.
struct Pool {
    idle: Vec<Pipe>,
    /// Pipes lent out and not yet returned or closed.
    lent: usize,
    limit: usize,
}

type Shared = Arc<Mutex<Pool>>;

thread_local! {
    static POOL: OnceCell<Shared> = const { OnceCell::new() };
}

fn new_pool(limit: usize) -> Shared {
    Arc::new(Mutex::new(Pool {
        idle: Vec::new(),
        lent: 0,
        limit,
    }))
}

/// A pipe from this thread's pool, or `None` when the pool has lent out all it may (or the
/// system refused a new pipe, e.g. out of descriptors).
pub(super) fn take() -> Option<Lease> {
    POOL.with(|cell| take_from(cell.get_or_init(|| new_pool(PIPES_PER_THREAD))))
}

/// Pipes this thread's pool has lent out right now.
#[cfg(test)]
pub(super) fn lent_here() -> usize {
    POOL.with(|cell| {
        let pool = cell.get_or_init(|| new_pool(PIPES_PER_THREAD));
        pool.lock().unwrap_or_else(PoisonError::into_inner).lent
    })
}

fn take_from(pool: &Shared) -> Option<Lease> {
    // A poisoned lock can only come from a panic inside these few lines; the counts are
    // still consistent then.
    let mut guard = pool.lock().unwrap_or_else(PoisonError::into_inner);
    let pipe = match guard.idle.pop() {
        Some(pipe) => pipe,
        None if guard.lent < guard.limit => match Pipe::new() {
            Ok(pipe) => pipe,
            Err(error) => {
                tracing::debug!(%error, "no new pipe for splice(2), copying through user space");
                return None;
            }
        },
        None => return None,
    };
    guard.lent += 1;
    Some(Lease {
        pipe: Some(pipe),
        pending: 0,
        home: Arc::clone(pool),
    })
}

/// A pipe lent to one direction of one connection for one burst.
pub(super) struct Lease {
    /// `Some` until dropped.
    pipe: Option<Pipe>,
    /// Bytes spliced into the pipe and not yet out of it.
    pub(super) pending: usize,
    home: Shared,
}

impl Lease {
    pub(super) fn pipe(&self) -> &Pipe {
        // Only `drop` takes the pipe out.
        self.pipe
            .as_ref()
            .expect("a lease holds its pipe until dropped")
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut pool = self.home.lock().unwrap_or_else(PoisonError::into_inner);
        pool.lent = pool.lent.saturating_sub(1);
        if let Some(pipe) = self.pipe.take() {
            if self.pending == 0 {
                pool.idle.push(pipe);
            }
            // Otherwise the pipe still holds bytes of a connection that is gone: dropping
            // it here closes both ends.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(pool: &Shared) -> (usize, usize) {
        let pool = pool.lock().unwrap();
        (pool.idle.len(), pool.lent)
    }

    #[test]
    fn lends_up_to_the_limit_then_answers_none() {
        let pool = new_pool(3);
        let leases: Vec<Lease> = (0..3).map(|_| take_from(&pool).unwrap()).collect();
        assert!(
            take_from(&pool).is_none(),
            "a fourth pipe past a limit of 3"
        );
        assert_eq!(counts(&pool), (0, 3));
        drop(leases);
        assert_eq!(counts(&pool), (3, 0));
        assert!(take_from(&pool).is_some());
    }

    #[test]
    fn a_returned_pipe_is_lent_again_not_reopened() {
        let pool = new_pool(2);
        let first = take_from(&pool).unwrap();
        let fds = (
            first.pipe().read.as_raw_fd(),
            first.pipe().write.as_raw_fd(),
        );
        drop(first);
        let again = take_from(&pool).unwrap();
        assert_eq!(
            (
                again.pipe().read.as_raw_fd(),
                again.pipe().write.as_raw_fd()
            ),
            fds
        );
        assert_eq!(counts(&pool), (0, 1));
    }

    #[test]
    #[allow(
        unsafe_code,
        reason = "raw write(2)/read(2) on the pipe's own fds, bypassing the pool"
    )]
    fn a_pipe_dropped_with_bytes_in_it_is_closed_and_frees_its_slot() {
        let pool = new_pool(1);
        let mut lease = take_from(&pool).unwrap();
        // A second handle on the read end, to see what happens to the pipe after the drop.
        let reader = lease.pipe().read.try_clone().unwrap();
        // SAFETY: writing 3 bytes from a valid buffer to the pipe we hold.
        let n = unsafe { libc::write(lease.pipe().write.as_raw_fd(), b"abc".as_ptr().cast(), 3) };
        assert_eq!(n, 3);
        lease.pending = 3;
        drop(lease);
        assert_eq!(counts(&pool), (0, 0), "the dirty pipe is not kept");
        let mut buf = [0u8; 8];
        // SAFETY: reading at most 8 bytes into a valid buffer from an fd we own.
        let read = |buf: &mut [u8; 8]| unsafe {
            libc::read(reader.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len())
        };
        assert_eq!(read(&mut buf), 3, "the bytes are still there");
        assert_eq!(read(&mut buf), 0, "EOF: the pool closed the write end");
        let fresh = take_from(&pool).expect("the slot is free again");
        assert_eq!(fresh.pending, 0);
    }

    #[test]
    fn a_lease_goes_home_when_dropped_on_another_thread() {
        let pool = new_pool(1);
        let lease = take_from(&pool).unwrap();
        std::thread::spawn(move || drop(lease)).join().unwrap();
        assert_eq!(counts(&pool), (1, 0));
        // The thread-local pool of this thread is a different one with its own bound.
        let mine = take().expect("this thread's own pool lends");
        assert!(!Arc::ptr_eq(&mine.home, &pool));
    }

    #[test]
    #[allow(
        unsafe_code,
        reason = "F_GETFL has no wrapper in std; it only reads an fd we hold"
    )]
    fn pipes_are_non_blocking_and_sized_up() {
        let pool = new_pool(1);
        let lease = take_from(&pool).unwrap();
        assert!(lease.pipe().capacity >= 64 << 10);
        // SAFETY: F_GETFL only reads the flags of an fd we hold.
        let flags = unsafe { libc::fcntl(lease.pipe().read.as_raw_fd(), libc::F_GETFL) };
        assert_ne!(flags & libc::O_NONBLOCK, 0);
    }
}
