//! `uring-relay LISTEN UPSTREAM`: a bytes-only L4 relay on one io_uring, the twin of
//! `bench/proxy.sh`'s nginx-stream relay: one upstream connection per client, opened when
//! the client is accepted, each byte either way sent on as it came.
//!
//! Per connection pair, each side has one multishot recv armed into the shared buffer
//! ring; a filled buffer is queued for the other side and sent straight out of the ring
//! (no copy), one send in flight per direction so bytes keep their order, and handed back
//! to the kernel once sent. Either side ending (or failing) ends both: the bench's clients
//! never half-close. A pair's slot is freed only when none of its operations is in flight.

use std::collections::VecDeque;
use std::io;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;

use leafgate_uring::ring::{self, BufRing, Done, Exit, Ring, Token};
use leafgate_uring::slab::Slab;

const ACCEPT: u8 = 0;
const RECV: u8 = 1;
const SEND: u8 = 2;

/// 1024 buffers of 16 KiB: at 256 connections each direction can hold two at once.
const BUFFERS: u16 = 1024;
const BUFFER_SIZE: usize = 16 * 1024;
const GROUP: u16 = 0;

/// Bytes received into one provided buffer, waiting to go to the other side.
struct Chunk {
    bid: u16,
    sent: usize,
    len: usize,
}

/// A client and its upstream connection: side 0 and side 1.
struct Pair {
    socks: [TcpStream; 2],
    /// What side `s` sent, in order, for the other side.
    queue: [VecDeque<Chunk>; 2],
    /// The front of `queue[s]` is being sent.
    sending: [bool; 2],
    /// Operations in flight (an armed multishot recv counts once).
    ops: u32,
    closing: bool,
}

struct Relay {
    ring: Ring,
    bufs: BufRing,
    listener: TcpListener,
    upstream: SocketAddr,
    pairs: Slab<Pair>,
    /// Recvs that ended for want of a buffer, armed again when one comes back.
    starved: Vec<(u32, u8)>,
}

fn main() -> io::Result<()> {
    let (listen, upstream) = ring::addresses("uring-relay")?;
    let exit = Exit::new()?;
    let mut ring = Ring::new(4096)?;
    let bufs = BufRing::new(&ring, GROUP, BUFFERS, BUFFER_SIZE)?;
    let listener = ring::listen(&listen)?;
    exit.arm(&mut ring)?;
    ring.accept_multi(&listener, Token::new(ACCEPT, 0, 0))?;
    ring::announce(&listener)?;
    let mut relay = Relay {
        ring,
        bufs,
        listener,
        upstream,
        pairs: Slab::default(),
        starved: Vec::new(),
    };
    let mut done = Vec::new();
    loop {
        relay.ring.wait(&mut done)?;
        for d in &done {
            match d.token.kind {
                ACCEPT => relay.accepted(d)?,
                RECV => relay.received(d)?,
                SEND => relay.sent(d)?,
                _ if Exit::stops(&mut relay.ring, d)? => return Ok(()),
                _ => {}
            }
        }
    }
}

impl Relay {
    fn accepted(&mut self, d: &Done) -> io::Result<()> {
        if !d.more() {
            self.ring
                .accept_multi(&self.listener, Token::new(ACCEPT, 0, 0))?;
        }
        let client = match ring::accepted(d.res) {
            Ok(client) => client,
            Err(e) => {
                eprintln!("uring-relay: accept: {e}");
                return Ok(());
            }
        };
        let upstream = match ring::connect(self.upstream) {
            Ok(upstream) => upstream,
            Err(e) => {
                eprintln!("uring-relay: upstream {}: {e}", self.upstream);
                return Ok(());
            }
        };
        let pair = Pair {
            socks: [client, upstream],
            queue: [VecDeque::new(), VecDeque::new()],
            sending: [false; 2],
            ops: 0,
            closing: false,
        };
        let slot = self.pairs.insert(pair);
        self.arm(slot, 0)?;
        self.arm(slot, 1)
    }

    fn arm(&mut self, slot: u32, side: u8) -> io::Result<()> {
        let pair = self.pairs.get(slot);
        if pair.closing {
            return Ok(());
        }
        pair.ops += 1;
        let fd = pair.socks[usize::from(side)].as_raw_fd();
        self.ring
            .recv_multi(fd, &self.bufs, Token::new(RECV, side, slot))
    }

    fn received(&mut self, d: &Done) -> io::Result<()> {
        let (slot, side) = (d.token.slot, d.token.side);
        let pair = self.pairs.get(slot);
        if !d.more() {
            pair.ops -= 1;
        }
        match (d.res, d.buffer()) {
            (n, Some(bid)) if n > 0 => {
                if pair.closing {
                    self.bufs.give_back(bid);
                } else {
                    let len = n as usize;
                    pair.queue[usize::from(side)].push_back(Chunk { bid, sent: 0, len });
                    self.send_next(slot, side)?;
                }
                if !d.more() {
                    self.arm(slot, side)?;
                }
            }
            (e, _) if e == -libc::ENOBUFS => self.starved.push((slot, side)),
            _ => self.close(slot),
        }
        self.free_if_done(slot);
        Ok(())
    }

    /// Sends the front of side `side`'s queue to the other side, unless a send is already
    /// in flight.
    fn send_next(&mut self, slot: u32, side: u8) -> io::Result<()> {
        let pair = self.pairs.get(slot);
        let s = usize::from(side);
        let Some(chunk) = pair.queue[s].front() else {
            return Ok(());
        };
        if pair.sending[s] || pair.closing {
            return Ok(());
        }
        pair.sending[s] = true;
        pair.ops += 1;
        let fd = pair.socks[1 - s].as_raw_fd();
        let buf = self.bufs.ptr(chunk.bid).wrapping_add(chunk.sent);
        #[allow(unsafe_code, reason = "a send names a buffer of the ring")]
        // SAFETY: the chunk's buffer stays at its queue's front, not handed back, until
        // this send's completion (`sent`).
        unsafe {
            self.ring.send(
                fd,
                buf,
                chunk.len - chunk.sent,
                Token::new(SEND, side, slot),
            )
        }
    }

    fn sent(&mut self, d: &Done) -> io::Result<()> {
        let (slot, side) = (d.token.slot, d.token.side);
        let s = usize::from(side);
        let pair = self.pairs.get(slot);
        pair.ops -= 1;
        pair.sending[s] = false;
        if d.res < 0 {
            self.close(slot);
        } else if let Some(chunk) = pair.queue[s].front_mut() {
            chunk.sent += d.res as usize;
            if chunk.sent >= chunk.len {
                let bid = chunk.bid;
                pair.queue[s].pop_front();
                self.bufs.give_back(bid);
                self.feed_starved()?;
            }
            self.send_next(slot, side)?;
        }
        self.free_if_done(slot);
        Ok(())
    }

    fn feed_starved(&mut self) -> io::Result<()> {
        while let Some((slot, side)) = self.starved.pop() {
            self.arm(slot, side)?;
        }
        Ok(())
    }

    /// Ends both connections of a pair: shutting them down ends their armed recvs.
    fn close(&mut self, slot: u32) {
        let pair = self.pairs.get(slot);
        if pair.closing {
            return;
        }
        pair.closing = true;
        for sock in &pair.socks {
            let _ = sock.shutdown(Shutdown::Both);
        }
    }

    /// Frees a closing pair's slot (and closes its sockets) once nothing of it is in flight.
    fn free_if_done(&mut self, slot: u32) {
        let pair = self.pairs.get(slot);
        if pair.closing && pair.ops == 0 {
            let pair = self.pairs.remove(slot);
            for chunk in pair.queue.iter().flatten() {
                self.bufs.give_back(chunk.bid);
            }
            self.starved.retain(|&(s, _)| s != slot);
        }
    }
}
