//! The ring both binaries run on, its provided buffer ring, the way they stop, and the
//! sockets they open.
//!
//! One thread submits and reaps (`SINGLE_ISSUER`, `DEFER_TASKRUN`: completions are run in
//! the loop's own `io_uring_enter`, not by task work that interrupts it). Each loop turn
//! submits every entry the last turn's completions produced and waits for one more in a
//! single `io_uring_enter` ([`Ring::wait`]).

// The kernel reads and writes memory named by raw addresses in submission entries: the
// buffer ring below and the send buffers the binaries pass. Each `unsafe` says what keeps
// that memory alive and unaliased until the kernel is done with it.
#![allow(
    unsafe_code,
    reason = "io_uring hands raw buffer addresses to the kernel"
)]

use std::alloc::{Layout, alloc_zeroed};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::{BufRingEntry, Fd};
use io_uring::{IoUring, cqueue, opcode, squeue};

/// One completion: the token its submission carried, its result (`-errno` on failure) and
/// its flags.
#[derive(Clone, Copy, Debug)]
pub struct Done {
    pub token: Token,
    pub res: i32,
    pub flags: u32,
}

impl Done {
    /// The provided buffer a recv filled, if it took one.
    pub fn buffer(&self) -> Option<u16> {
        cqueue::buffer_select(self.flags)
    }

    /// A multishot operation stays armed after this completion.
    pub fn more(&self) -> bool {
        cqueue::more(self.flags)
    }
}

/// What a submission was for, packed into its 64-bit user data: an operation kind, which
/// side of a connection (the binary's own numbering) and the connection's slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub kind: u8,
    pub side: u8,
    pub slot: u32,
}

impl Token {
    pub const fn new(kind: u8, side: u8, slot: u32) -> Token {
        Token { kind, side, slot }
    }

    fn pack(self) -> u64 {
        (u64::from(self.kind) << 40) | (u64::from(self.side) << 32) | u64::from(self.slot)
    }

    fn unpack(data: u64) -> Token {
        Token {
            kind: (data >> 40) as u8,
            side: (data >> 32) as u8,
            slot: data as u32,
        }
    }
}

pub struct Ring {
    ring: IoUring,
}

impl Ring {
    /// A ring of `entries` submissions and four times as many completions (multishot
    /// operations post several completions per submission).
    pub fn new(entries: u32) -> io::Result<Ring> {
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_cqsize(entries * 4)
            .build(entries)?;
        Ok(Ring { ring })
    }

    /// Queues an entry, submitting what is queued first when the queue is full.
    ///
    /// # Safety
    /// Every buffer the entry names must stay valid, and unread and unwritten by anything
    /// else, until its completion is reaped.
    pub unsafe fn push(&mut self, entry: squeue::Entry, token: Token) -> io::Result<()> {
        let entry = entry.user_data(token.pack());
        loop {
            // SAFETY: the caller keeps the entry's buffers alive (this function's contract).
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return Ok(());
            }
            self.ring.submit()?;
        }
    }

    /// Arms a multishot accept on `listener`.
    pub fn accept_multi(&mut self, listener: &TcpListener, token: Token) -> io::Result<()> {
        let entry = opcode::AcceptMulti::new(Fd(listener.as_raw_fd())).build();
        // SAFETY: an accept names no buffer.
        unsafe { self.push(entry, token) }
    }

    /// Arms a multishot recv on `fd` into buffers of `group`.
    pub fn recv_multi(&mut self, fd: RawFd, group: &BufRing, token: Token) -> io::Result<()> {
        let entry = opcode::RecvMulti::new(Fd(fd), group.group).build();
        // SAFETY: the kernel writes only into the buffer ring's buffers, which are never
        // freed and which the binary reads only once a completion handed one over.
        unsafe { self.push(entry, token) }
    }

    /// Queues a send of `len` bytes at `buf` to `fd`.
    ///
    /// # Safety
    /// As [`Ring::push`]: the bytes stay where they are, unchanged, until the completion.
    pub unsafe fn send(
        &mut self,
        fd: RawFd,
        buf: *const u8,
        len: usize,
        token: Token,
    ) -> io::Result<()> {
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        let entry = opcode::Send::new(Fd(fd), buf, len).build();
        // SAFETY: the caller's contract.
        unsafe { self.push(entry, token) }
    }

    /// Arms a one-shot poll for input on `fd`.
    pub fn poll_in(&mut self, fd: RawFd, token: Token) -> io::Result<()> {
        let entry = opcode::PollAdd::new(Fd(fd), libc::POLLIN as u32).build();
        // SAFETY: a poll names no buffer.
        unsafe { self.push(entry, token) }
    }

    /// Submits what is queued, waits for at least one completion, and puts them all in
    /// `done` (cleared first).
    pub fn wait(&mut self, done: &mut Vec<Done>) -> io::Result<()> {
        match self.ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => return Err(e),
        }
        done.clear();
        done.extend(self.ring.completion().map(|cqe| Done {
            token: Token::unpack(cqe.user_data()),
            res: cqe.result(),
            flags: cqe.flags(),
        }));
        Ok(())
    }
}

/// A provided buffer ring: `count` buffers of `size` bytes the kernel picks from for each
/// multishot recv, handed back with [`BufRing::give_back`] once their bytes are used.
///
/// Its memory is never freed: the kernel may write into it for as long as the ring lives,
/// and each binary's ring lives until the process ends.
pub struct BufRing {
    entries: *mut BufRingEntry,
    bufs: *mut u8,
    count: u16,
    size: usize,
    tail: u16,
    group: u16,
}

impl BufRing {
    /// Registers a ring of `count` (a power of two) buffers of `size` bytes as `group`.
    pub fn new(ring: &Ring, group: u16, count: u16, size: usize) -> io::Result<BufRing> {
        assert!(
            count.is_power_of_two(),
            "a buffer ring's size is a power of two"
        );
        let entries =
            Layout::from_size_align(usize::from(count) * 16, 4096).map_err(io::Error::other)?;
        let bufs =
            Layout::from_size_align(usize::from(count) * size, 4096).map_err(io::Error::other)?;
        // SAFETY: both layouts have a non-zero size; the memory is leaked on purpose (see
        // the type's doc).
        let (entries, bufs) = unsafe { (alloc_zeroed(entries), alloc_zeroed(bufs)) };
        if entries.is_null() || bufs.is_null() {
            return Err(io::Error::from(io::ErrorKind::OutOfMemory));
        }
        let mut this = BufRing {
            entries: entries.cast(),
            bufs,
            count,
            size,
            tail: 0,
            group,
        };
        for bid in 0..count {
            this.add(bid);
        }
        this.publish();
        // SAFETY: `entries` is page-aligned memory for `count` entries that lives as long
        // as the process.
        unsafe {
            ring.ring.submitter().register_buf_ring_with_flags(
                this.entries as u64,
                count,
                group,
                0,
            )?;
        }
        Ok(this)
    }

    /// The `len` bytes a completion says the kernel wrote into buffer `bid`.
    pub fn data(&self, bid: u16, len: usize) -> &[u8] {
        assert!(bid < self.count && len <= self.size);
        // SAFETY: the kernel finished writing this buffer (its completion was reaped) and
        // does not pick it again until it is given back, which takes `&mut self`.
        unsafe { std::slice::from_raw_parts(self.bufs.add(usize::from(bid) * self.size), len) }
    }

    /// A raw pointer to buffer `bid`, for a send straight out of it.
    pub fn ptr(&self, bid: u16) -> *const u8 {
        assert!(bid < self.count);
        // SAFETY: in bounds of the allocation (checked above).
        unsafe { self.bufs.add(usize::from(bid) * self.size) }
    }

    /// Hands buffer `bid` back to the kernel.
    pub fn give_back(&mut self, bid: u16) {
        self.add(bid);
        self.publish();
    }

    fn add(&mut self, bid: u16) {
        let at = usize::from(self.tail & (self.count - 1));
        // SAFETY: `at` is within the `count` entries; the kernel reads entries only up to
        // the published tail, and this one is past it until `publish`.
        let entry = unsafe { &mut *self.entries.add(at) };
        entry.set_addr(self.ptr(bid) as u64);
        entry.set_len(u32::try_from(self.size).unwrap_or(u32::MAX));
        entry.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&self) {
        // SAFETY: the tail is the first entry's last two bytes, aligned for a u16, shared
        // with the kernel, which only reads it.
        let tail = unsafe { AtomicU16::from_ptr(BufRingEntry::tail(self.entries).cast_mut()) };
        tail.store(self.tail, Ordering::Release);
    }
}

/// How a binary is told to stop: SIGTERM or SIGINT (read from a signalfd, so the ring
/// sees them as a completion), or its standard input closing.
pub struct Exit {
    signals: OwnedFd,
}

impl Exit {
    /// Blocks SIGTERM and SIGINT for the thread, to read them from a signalfd instead.
    pub fn new() -> io::Result<Exit> {
        // SAFETY: plain libc calls on a local, zero-initialised signal set; the descriptor
        // signalfd returns is owned by nobody else.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::sigaddset(&mut set, libc::SIGINT);
            if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
            let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(Exit {
                signals: OwnedFd::from_raw_fd(fd),
            })
        }
    }

    /// Watches the signals and standard input, with tokens of kinds [`Exit::SIGNAL`] and
    /// [`Exit::STDIN`] (which the binaries leave to it).
    pub fn arm(&self, ring: &mut Ring) -> io::Result<()> {
        ring.poll_in(self.signals.as_raw_fd(), Token::new(Exit::SIGNAL, 0, 0))?;
        ring.poll_in(libc::STDIN_FILENO, Token::new(Exit::STDIN, 0, 0))
    }

    pub const SIGNAL: u8 = 254;
    pub const STDIN: u8 = 255;

    /// Whether `done`, a completion of one of [`Exit::arm`]'s polls, says to stop: a
    /// signal came, or standard input polled readable and a read got no bytes (it closed,
    /// or failed). Whatever standard input sent is thrown away, and its poll armed again.
    pub fn stops(ring: &mut Ring, done: &Done) -> io::Result<bool> {
        if done.token.kind == Exit::SIGNAL {
            return Ok(true);
        }
        let mut buf = [0u8; 512];
        if !matches!(io::stdin().lock().read(&mut buf), Ok(n) if n > 0) {
            return Ok(true);
        }
        ring.poll_in(libc::STDIN_FILENO, done.token)?;
        Ok(false)
    }
}

/// The two addresses both binaries take, `LISTEN UPSTREAM` (`127.0.0.1:0` listens on a
/// free port; [`announce`] says which).
pub fn addresses(binary: &str) -> io::Result<(String, SocketAddr)> {
    let mut args = std::env::args().skip(1);
    let (Some(listen), Some(upstream), None) = (args.next(), args.next(), args.next()) else {
        return Err(io::Error::other(format!("usage: {binary} LISTEN UPSTREAM")));
    };
    let upstream = upstream
        .parse()
        .map_err(|e| io::Error::other(format!("upstream {upstream:?}: {e}")))?;
    Ok((listen, upstream))
}

/// A listening socket on `addr` with a backlog as deep as nginx's default (511), so a
/// load's connections all get in at once.
pub fn listen(addr: &str) -> io::Result<TcpListener> {
    let listener = TcpListener::bind(addr)?;
    // SAFETY: listen(2) on a socket this function owns.
    if unsafe { libc::listen(listener.as_raw_fd(), 511) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(listener)
}

/// Says where `listener` listens on standard output (`listening on ADDR`), for whoever
/// started the binary on port 0.
pub fn announce(listener: &TcpListener) -> io::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(out, "listening on {}", listener.local_addr()?)?;
    out.flush()
}

/// A connection to `addr` with Nagle off. Blocking: on loopback the handshake is done
/// within the call, and it happens once per pooled (or relayed) connection, never per
/// request.
pub fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
    let stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// The connection a multishot accept's completion returned (`res`), with Nagle off.
pub fn accepted(res: i32) -> io::Result<TcpStream> {
    if res < 0 {
        return Err(io::Error::from_raw_os_error(-res));
    }
    // SAFETY: a successful accept's result is a new descriptor nobody else owns.
    let stream = unsafe { TcpStream::from_raw_fd(res) };
    stream.set_nodelay(true)?;
    Ok(stream)
}
