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
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;

use leafgate_uring::ring::{self, Done, Token};
use leafgate_uring::serve::{self, Base, Handler, RECV, SEND};
use leafgate_uring::slab::Slab;

/// 1024 buffers of 16 KiB: at 256 connections each direction can hold two at once.
const BUFFERS: u16 = 1024;
const BUFFER_SIZE: usize = 16 * 1024;

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
    base: Base,
    pairs: Slab<Pair>,
    /// Recvs that ended for want of a buffer, armed again when one comes back.
    starved: Vec<(u32, u8)>,
}

fn main() -> io::Result<()> {
    serve::run(&mut Relay {
        base: Base::start("uring-relay", BUFFERS, BUFFER_SIZE)?,
        pairs: Slab::default(),
        starved: Vec::new(),
    })
}

impl Handler for Relay {
    fn base(&mut self) -> &mut Base {
        &mut self.base
    }

    fn accepted(&mut self, client: TcpStream) -> io::Result<()> {
        let upstream = match ring::connect(self.base.upstream) {
            Ok(upstream) => upstream,
            Err(e) => {
                eprintln!("uring-relay: upstream {}: {e}", self.base.upstream);
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

    fn received(&mut self, d: &Done) -> io::Result<()> {
        let (slot, side) = (d.token.slot, d.token.side);
        let pair = self.pairs.get(slot);
        if !d.more() {
            pair.ops -= 1;
        }
        match (d.res, d.buffer()) {
            (n, Some(bid)) if n > 0 => {
                if pair.closing {
                    self.base.bufs.give_back(bid);
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
                self.base.bufs.give_back(bid);
                self.feed_starved()?;
            }
            self.send_next(slot, side)?;
        }
        self.free_if_done(slot);
        Ok(())
    }
}

impl Relay {
    fn arm(&mut self, slot: u32, side: u8) -> io::Result<()> {
        let pair = self.pairs.get(slot);
        if pair.closing {
            return Ok(());
        }
        pair.ops += 1;
        let fd = pair.socks[usize::from(side)].as_raw_fd();
        self.base
            .ring
            .recv_multi(fd, &self.base.bufs, Token::new(RECV, side, slot))
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
        let buf = self.base.bufs.ptr(chunk.bid).wrapping_add(chunk.sent);
        #[allow(unsafe_code, reason = "a send names a buffer of the ring")]
        // SAFETY: the chunk's buffer stays at its queue's front, not handed back, until
        // this send's completion (`sent`).
        unsafe {
            self.base.ring.send(
                fd,
                buf,
                chunk.len - chunk.sent,
                Token::new(SEND, side, slot),
            )
        }
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
                self.base.bufs.give_back(chunk.bid);
            }
            self.starved.retain(|&(s, _)| s != slot);
        }
    }
}
