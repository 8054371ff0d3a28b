//! What both binaries share around their own connection handling: the ring, buffer ring
//! and listener they start with, and the loop that hands each completion to them.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};

use crate::ring::{self, BufRing, Done, Exit, Ring, Token};

/// Token kinds: the listener's multishot accept, a socket's multishot recv, a send.
pub const ACCEPT: u8 = 0;
pub const RECV: u8 = 1;
pub const SEND: u8 = 2;

/// A binary's ring, its provided buffers (group 0) and where it listens and forwards to.
pub struct Base {
    pub ring: Ring,
    pub bufs: BufRing,
    pub upstream: SocketAddr,
    pub name: &'static str,
    listener: TcpListener,
    /// Kept for its signalfd, which the ring polls.
    _exit: Exit,
}

impl Base {
    /// Reads `LISTEN UPSTREAM` from the command line, sets up a ring with `buffers` provided
    /// buffers of `size` bytes, listens, arms the accept and the exit watch, and says where
    /// it listens ([`ring::announce`]).
    pub fn start(name: &'static str, buffers: u16, size: usize) -> io::Result<Base> {
        let (listen, upstream) = ring::addresses(name)?;
        let exit = Exit::new()?;
        let mut ring = Ring::new(4096)?;
        let bufs = BufRing::new(&ring, 0, buffers, size)?;
        let listener = ring::listen(&listen)?;
        exit.arm(&mut ring)?;
        ring.accept_multi(&listener, Token::new(ACCEPT, 0, 0))?;
        ring::announce(&listener)?;
        Ok(Base {
            ring,
            bufs,
            upstream,
            name,
            listener,
            _exit: exit,
        })
    }
}

/// A binary's own part: what it does with a new client, a recv's and a send's completion.
pub trait Handler {
    fn base(&mut self) -> &mut Base;
    fn accepted(&mut self, client: TcpStream) -> io::Result<()>;
    fn received(&mut self, done: &Done) -> io::Result<()>;
    fn sent(&mut self, done: &Done) -> io::Result<()>;
}

/// Runs `handler` until [`Exit`] says to stop.
pub fn run(handler: &mut impl Handler) -> io::Result<()> {
    let mut done = Vec::new();
    loop {
        handler.base().ring.wait(&mut done)?;
        for d in &done {
            match d.token.kind {
                ACCEPT => {
                    let base = handler.base();
                    if !d.more() {
                        base.ring
                            .accept_multi(&base.listener, Token::new(ACCEPT, 0, 0))?;
                    }
                    match ring::accepted(d.res) {
                        Ok(client) => handler.accepted(client)?,
                        Err(e) => eprintln!("{}: accept: {e}", base.name),
                    }
                }
                RECV => handler.received(d)?,
                SEND => handler.sent(d)?,
                _ if Exit::stops(&mut handler.base().ring, d)? => return Ok(()),
                _ => {}
            }
        }
    }
}
