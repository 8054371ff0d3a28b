//! `uring-proxy LISTEN UPSTREAM`: an HTTP/1.1 reverse proxy prototype on one io_uring,
//! enough to serve `bench/proxy.sh`'s load as leafgate's fast path serves it: each
//! request head read and rewritten with the fast path's forwarding headers
//! (`leafgate_uring::head`), sent on a pooled keep-alive upstream connection, and the
//! answer (framed by its `Content-Length`) rewritten and sent back.
//!
//! Every socket has one multishot recv armed into the shared buffer ring; received bytes
//! are copied into the connection's own buffer and the ring buffer handed back at once (a
//! head must be whole to be parsed, and the bench's messages are small). One exchange at a
//! time per client, in order: a pipelined request waits in the client's buffer until the
//! answer before it is sent. An upstream connection goes back to the pool once its answer
//! is whole and its request's send completed; one that ends, fails or sends more than the
//! answer is closed, and its client, if any, gets a 502.

use std::io;
use std::mem;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;

use leafgate_uring::head::{self, Answer, Peer, Request};
use leafgate_uring::ring::{self, Done, Token};
use leafgate_uring::serve::{self, Base, Handler, RECV, SEND};
use leafgate_uring::slab::Slab;

/// A token's side: which slab its slot is in.
const CLIENT: u8 = 0;
const UPSTREAM: u8 = 1;

/// Buffers are copied out and handed back at once: few are ever taken together.
const BUFFERS: u16 = 512;
const BUFFER_SIZE: usize = 16 * 1024;

/// A socket with its armed recv, its outgoing bytes and its state of closing.
struct Conn {
    sock: TcpStream,
    /// Bytes received, not yet taken as a whole message.
    input: Vec<u8>,
    /// The message being sent (its heap bytes are the send's buffer).
    output: Vec<u8>,
    sent: usize,
    sending: bool,
    /// Operations in flight (an armed multishot recv counts once).
    ops: u32,
    closing: bool,
}

impl Conn {
    fn new(sock: TcpStream) -> Conn {
        Conn {
            sock,
            input: Vec::new(),
            output: Vec::new(),
            sent: 0,
            sending: false,
            ops: 0,
            closing: false,
        }
    }
}

struct Client {
    conn: Conn,
    peer: Peer,
    /// The upstream connection carrying this client's exchange.
    upstream: Option<u32>,
    /// Close once the output is sent (the client asked to, or was refused).
    close_after: bool,
}

struct Upstream {
    conn: Conn,
    /// The client whose exchange this connection carries.
    client: Option<u32>,
    /// The answer is whole: back to the pool once the request's send completes too.
    answered: bool,
}

struct Proxy {
    base: Base,
    clients: Slab<Client>,
    upstreams: Slab<Upstream>,
    /// Pooled keep-alive upstream connections, none of them carrying an exchange.
    idle: Vec<u32>,
    /// Recvs that ended for want of a buffer, armed again when one comes back.
    starved: Vec<(u8, u32)>,
    /// Connections shut down whose slots are not freed yet.
    closed: Vec<(u8, u32)>,
}

fn main() -> io::Result<()> {
    serve::run(&mut Proxy {
        base: Base::start("uring-proxy", BUFFERS, BUFFER_SIZE)?,
        clients: Slab::default(),
        upstreams: Slab::default(),
        idle: Vec::new(),
        starved: Vec::new(),
        closed: Vec::new(),
    })
}

impl Handler for Proxy {
    fn base(&mut self) -> &mut Base {
        &mut self.base
    }

    fn accepted(&mut self, sock: TcpStream) -> io::Result<()> {
        let Ok(peer) = sock.peer_addr() else {
            return Ok(());
        };
        let slot = self.clients.insert(Client {
            conn: Conn::new(sock),
            peer: Peer::new(peer.ip()),
            upstream: None,
            close_after: false,
        });
        self.arm(CLIENT, slot)
    }

    fn received(&mut self, d: &Done) -> io::Result<()> {
        let (side, slot) = (d.token.side, d.token.slot);
        let conn = self.conn(side, slot);
        if !d.more() {
            conn.ops -= 1;
        }
        match (d.res, d.buffer()) {
            (n, Some(bid)) if n > 0 => {
                let conn = if side == CLIENT {
                    &mut self.clients.get(slot).conn
                } else {
                    &mut self.upstreams.get(slot).conn
                };
                conn.input
                    .extend_from_slice(self.base.bufs.data(bid, n as usize));
                self.base.bufs.give_back(bid);
                self.feed_starved()?;
                if !d.more() {
                    self.arm(side, slot)?;
                }
                if side == CLIENT {
                    self.serve(slot)?;
                } else {
                    self.relay_answer(slot)?;
                }
            }
            (e, _) if e == -libc::ENOBUFS => self.starved.push((side, slot)),
            _ if side == CLIENT => self.close_client(slot),
            _ => self.upstream_failed(slot)?,
        }
        self.reap();
        Ok(())
    }

    fn sent(&mut self, d: &Done) -> io::Result<()> {
        let (side, slot) = (d.token.side, d.token.slot);
        let conn = self.conn(side, slot);
        conn.ops -= 1;
        conn.sending = false;
        if d.res < 0 {
            if side == CLIENT {
                self.close_client(slot);
            } else {
                self.upstream_failed(slot)?;
            }
        } else if !conn.closing {
            conn.sent += d.res as usize;
            if conn.sent < conn.output.len() {
                self.send(side, slot)?;
            } else if side == UPSTREAM {
                self.pool_if_done(slot);
            } else if self.clients.get(slot).close_after {
                self.close_client(slot);
            } else {
                self.serve(slot)?;
            }
        }
        self.reap();
        Ok(())
    }
}

impl Proxy {
    fn conn(&mut self, side: u8, slot: u32) -> &mut Conn {
        if side == CLIENT {
            &mut self.clients.get(slot).conn
        } else {
            &mut self.upstreams.get(slot).conn
        }
    }

    fn arm(&mut self, side: u8, slot: u32) -> io::Result<()> {
        let conn = self.conn(side, slot);
        if conn.closing {
            return Ok(());
        }
        conn.ops += 1;
        let fd = conn.sock.as_raw_fd();
        self.base
            .ring
            .recv_multi(fd, &self.base.bufs, Token::new(RECV, side, slot))
    }

    /// Takes the next request in the client's buffer, when the client is between
    /// exchanges, and sends it upstream (or refuses it).
    fn serve(&mut self, c: u32) -> io::Result<()> {
        let client = self.clients.get(c);
        if client.conn.closing || client.conn.sending || client.upstream.is_some() {
            return Ok(());
        }
        let mut req = Vec::new();
        match head::request(&client.conn.input, &client.peer, &mut req) {
            Request::Partial => Ok(()),
            Request::Refused(status) => self.answer_client(c, head::refusal(status), true),
            Request::Ready { len, close } => {
                client.conn.input.drain(..len);
                client.close_after = close;
                let Some(u) = self.take_upstream()? else {
                    return self.answer_client(c, head::refusal(502), true);
                };
                self.clients.get(c).upstream = Some(u);
                let up = self.upstreams.get(u);
                up.client = Some(c);
                up.answered = false;
                up.conn.output = req;
                up.conn.sent = 0;
                self.send(UPSTREAM, u)
            }
        }
    }

    /// A pooled upstream connection, or a new one (`None` when it cannot be made).
    fn take_upstream(&mut self) -> io::Result<Option<u32>> {
        if let Some(u) = self.idle.pop() {
            return Ok(Some(u));
        }
        let sock = match ring::connect(self.base.upstream) {
            Ok(sock) => sock,
            Err(e) => {
                eprintln!("uring-proxy: upstream {}: {e}", self.base.upstream);
                return Ok(None);
            }
        };
        let u = self.upstreams.insert(Upstream {
            conn: Conn::new(sock),
            client: None,
            answered: false,
        });
        self.arm(UPSTREAM, u)?;
        Ok(Some(u))
    }

    /// Reads the answer in upstream `u`'s buffer and, when it is whole, sends it to the
    /// client it is for.
    fn relay_answer(&mut self, u: u32) -> io::Result<()> {
        let up = self.upstreams.get(u);
        let Some(c) = up.client else {
            // Bytes on an idle connection: not an answer to anything.
            self.close_upstream(u);
            return Ok(());
        };
        let client = self.clients.get(c);
        let mut out = mem::take(&mut client.conn.output);
        let last = client.close_after;
        match head::answer(&up.conn.input, last, &mut out) {
            Answer::Partial => {
                self.clients.get(c).conn.output = out;
                Ok(())
            }
            Answer::Bad(why) => {
                eprintln!("uring-proxy: upstream answer: {why}");
                self.upstream_failed(u)
            }
            Answer::Ready { len, keep_alive } => {
                up.conn.input.drain(..len);
                // Bytes past the answer: the connection is out of step.
                let reusable = keep_alive && up.conn.input.is_empty();
                up.client = None;
                up.answered = true;
                if reusable {
                    self.pool_if_done(u);
                } else {
                    self.close_upstream(u);
                }
                self.clients.get(c).upstream = None;
                self.answer_client(c, out, last)
            }
        }
    }

    /// Sends `out` to client `c` as its answer, closing after it when `close`.
    fn answer_client(&mut self, c: u32, out: Vec<u8>, close: bool) -> io::Result<()> {
        let client = self.clients.get(c);
        client.close_after |= close;
        client.conn.output = out;
        client.conn.sent = 0;
        self.send(CLIENT, c)
    }

    /// Sends what is left of a connection's output.
    fn send(&mut self, side: u8, slot: u32) -> io::Result<()> {
        let conn = self.conn(side, slot);
        if conn.closing {
            return Ok(());
        }
        conn.sending = true;
        conn.ops += 1;
        let fd = conn.sock.as_raw_fd();
        let rest = &conn.output[conn.sent..];
        let (buf, len) = (rest.as_ptr(), rest.len());
        #[allow(unsafe_code, reason = "a send names the connection's output")]
        // SAFETY: a connection's output is replaced only while it is not sending (`serve`
        // and `relay_answer` run only then), and its slot is freed only once `ops` is 0.
        unsafe {
            self.base
                .ring
                .send(fd, buf, len, Token::new(SEND, side, slot))
        }
    }

    /// Pools an upstream connection whose exchange is over: answered, request sent.
    fn pool_if_done(&mut self, u: u32) {
        let up = self.upstreams.get(u);
        if up.answered && !up.conn.sending && !up.conn.closing {
            up.answered = false;
            self.idle.push(u);
        }
    }

    /// An upstream connection ended or failed: its client, if any, gets a 502.
    fn upstream_failed(&mut self, u: u32) -> io::Result<()> {
        let client = self.upstreams.get(u).client;
        self.close_upstream(u);
        if let Some(c) = client {
            self.clients.get(c).upstream = None;
            self.answer_client(c, head::refusal(502), true)?;
        }
        Ok(())
    }

    fn close_upstream(&mut self, u: u32) {
        let up = self.upstreams.get(u);
        up.client = None;
        up.answered = false;
        shut(&mut up.conn, &mut self.closed, UPSTREAM, u);
        self.idle.retain(|&i| i != u);
    }

    /// A client ended or failed: an exchange it had in flight cannot finish, so its
    /// upstream connection goes too.
    fn close_client(&mut self, c: u32) {
        let client = self.clients.get(c);
        shut(&mut client.conn, &mut self.closed, CLIENT, c);
        if let Some(u) = client.upstream.take() {
            self.close_upstream(u);
        }
    }

    fn feed_starved(&mut self) -> io::Result<()> {
        while let Some((side, slot)) = self.starved.pop() {
            self.arm(side, slot)?;
        }
        Ok(())
    }

    /// Frees the slots of closing connections (closing their sockets) that have nothing
    /// in flight any more: run after every completion, since closing one connection can
    /// close another (a client's upstream, an upstream's client).
    fn reap(&mut self) {
        let mut i = 0;
        while i < self.closed.len() {
            let (side, slot) = self.closed[i];
            if self.conn(side, slot).ops > 0 {
                i += 1;
                continue;
            }
            self.closed.swap_remove(i);
            if side == CLIENT {
                self.clients.remove(slot);
            } else {
                self.upstreams.remove(slot);
            }
            self.starved.retain(|&s| s != (side, slot));
        }
    }
}

/// Starts closing a connection: shutting it down ends its armed recv. Its slot goes on
/// `closed` for [`Proxy::reap`].
fn shut(conn: &mut Conn, closed: &mut Vec<(u8, u32)>, side: u8, slot: u32) {
    if !conn.closing {
        conn.closing = true;
        let _ = conn.sock.shutdown(Shutdown::Both);
        closed.push((side, slot));
    }
}
