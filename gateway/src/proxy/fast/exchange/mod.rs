//! The fast path's exchange: one request sent to a plain HTTP/1.1 backend on a raw pooled
//! socket (its head in one write, with what of the body came with it), the rest of the
//! body streamed up, the answer's head read in place and rewritten for the client, and
//! its body streamed back by its framing (a length, chunks, or until the backend closes).
//! On hyper's path this is `proxy::forward`'s work, and it keeps what that keeps: the
//! same metrics, timeouts, retries of a request with no body on the next backend, error
//! answers and `Connection: close` while draining.
//!
//! The connection loop that reads each request and decides whether the fast path takes it
//! is the listener's (`listener::fast`); this module knows nothing of routes or snapshots.
//! Its `head` file reads the answer's head (during the upload, when the backend answers
//! early, and after it), its `body` file streams the answer's body back by its framing.

use std::io;
use std::io::IoSlice;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tracing::debug;

mod body;
mod head;

use super::buf::{BUFFER, Buf, Timer, Wait, read_within, write_all_vectored};
use super::lines::Edit;
use super::pool::RawPool;
use super::response::{self, Framing};
use crate::config::Timeouts;
use crate::metrics::Metrics;
use crate::proxy::Exchange;
use crate::proxy::error::{ProxyError, SendError, classify, error_text};
use crate::proxy::exchange::Conn;
use crate::proxy::headers::{ClientSide, Peer};
use crate::proxy::upstream::{BackendState, Upstream};

/// The client connection an exchange answers, as the fast path needs it (the listener's
/// `Client` is one).
pub trait Caller {
    /// The peer as the forwarding headers write it.
    fn forwarded_peer(&self) -> &Peer;
    /// Whether the client came over TLS.
    fn tls(&self) -> bool;
    /// The connection, as a warning about it names it.
    fn conn(&self) -> Conn<'_>;
    fn metrics(&self) -> &Metrics;
    /// Counts one answered request under `route` and `status` that took `elapsed`.
    fn count_elapsed(&self, route: &str, status: u16, elapsed: Duration);
}

/// A request the fast path carries; its backend head is written in [`FastConn::head`].
pub struct Request<'p> {
    /// The route it is counted under.
    pub route: &'p str,
    pub upstream: &'p Upstream,
    /// The client's head, consumed from the input once the request is sent.
    pub head_len: usize,
    /// The body's length.
    pub body: u64,
    /// The client asked to close after this answer.
    pub close: bool,
    /// The method is idempotent (RFC 9110 §9.2.2): sent again when a pooled connection
    /// turns out closed after the write.
    pub idempotent: bool,
    /// A response header modifier's edit of the answer's head, leafgate's own error
    /// answers included (as on hyper's path).
    pub answer_edit: Option<&'p Edit>,
}

/// How the last exchange ended, for the access log's line (read by the listener).
#[derive(Debug, Default)]
pub struct Outcome {
    /// The status the client got; 0 when no answer went out (the client went away).
    pub status: u16,
    /// The backend answered with `status`; false: leafgate's own error answer.
    pub upstream_answered: bool,
    /// The backend tried last, by its index in the upstream (`Upstream::backend`).
    pub backend: Option<usize>,
    /// Leafgate's own answer's reason (empty when the backend answered).
    pub refusal: String,
    /// From the exchange's start to the backend's answer head.
    pub first_byte: Option<Duration>,
    /// How long the new connection to the backend took to dial (`None`: a pooled one).
    pub upstream_connect: Option<Duration>,
    /// Body bytes sent to the client.
    pub bytes_out: u64,
    /// When the exchange started (the line's duration is measured from it).
    pub started: Option<Instant>,
}

/// What the connection does after an exchange.
pub enum Next {
    /// Reads the next request.
    Again,
    /// Ends: the answer said `Connection: close`, or the exchange failed.
    Close,
}

/// Why an exchange stopped short of an answer.
enum Failed {
    /// The client went away or stalled: nobody to answer.
    Client,
    /// The backend failed: the client gets the error's answer.
    Upstream(ProxyError),
    /// The backend failed after the answer's head went out: the client connection ends.
    Body(String),
}

/// One client connection's state on the fast path: its two buffers, the heads it writes,
/// its timers. Made once per connection and reused by every request on it.
pub struct FastConn<'a, C> {
    client: &'a C,
    /// This listener's count of requests served here.
    served: Counter,
    /// The client's bytes.
    pub input: Buf,
    /// The backend's bytes.
    answer: Buf,
    /// An answer head too long for `answer`, while it is read and written (empty, and
    /// holding no memory, otherwise): hyper's client reads heads up to its own buffer's
    /// size, so the fast path does too.
    long_head: Vec<u8>,
    /// The head for the backend, written by the listener's plan.
    pub head: Vec<u8>,
    /// Header lines the client's answer gets besides the backend's (the request's ID),
    /// each ending in CRLF; written by the listener's plan.
    pub reply: Vec<u8>,
    /// What goes to the client: a head, or chunks.
    out: Vec<u8>,
    /// Request body bytes not yet read from the client.
    body_left: u64,
    /// The waits on the client's side and on the backend's.
    client_timer: Timer,
    backend_timer: Timer,
    /// When the last answer's head went out, while nothing has been waited for since.
    answered: Option<Instant>,
    /// How the last exchange ended.
    pub outcome: Outcome,
}

impl<'a, C: Caller> FastConn<'a, C> {
    pub fn new(client: &'a C, served: Counter) -> Self {
        FastConn {
            client,
            served,
            input: Buf::new(),
            answer: Buf::new(),
            long_head: Vec::new(),
            head: Vec::with_capacity(1024),
            reply: Vec::with_capacity(256),
            out: Vec::with_capacity(BUFFER),
            body_left: 0,
            client_timer: Timer::new(),
            backend_timer: Timer::new(),
            answered: None,
            outcome: Outcome::default(),
        }
    }

    /// Reads more of the client's next request, waiting as `wait` says.
    pub async fn read_request<S>(&mut self, io: &mut S, wait: Wait) -> io::Result<usize>
    where
        S: AsyncRead + Unpin,
    {
        read_within(io, &mut self.input, &mut self.client_timer, wait).await
    }

    /// How long the connection may now stay idle before its next request: from the last
    /// answer's head when its body needed no waiting (no clock read), else from now.
    pub fn idle_wait(&mut self, client_idle: Duration) -> Wait {
        match self.answered.take() {
            Some(at) => Wait::Until(at + client_idle),
            None => Wait::For(client_idle),
        }
    }

    /// True while the last request's body is not read to its end.
    pub fn body_unread(&self) -> bool {
        self.body_left > 0
    }

    /// Forwards one request and its answer. `stopping` says whether the gateway is
    /// draining, asked when the answer goes out (its head then says `Connection: close`).
    pub async fn exchange<S>(
        &mut self,
        io: &mut S,
        plan: Request<'_>,
        stopping: &impl Fn() -> bool,
    ) -> Next
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let started = Instant::now();
        self.outcome.started = Some(started);
        self.answered = None;
        self.outcome.status = 0;
        self.outcome.refusal.clear();
        self.outcome.upstream_connect = None;
        self.served.inc();
        self.input.consume(plan.head_len);
        self.body_left = plan.body;
        let upstream = plan.upstream;
        let Some(raw) = upstream.raw() else {
            return Next::Close;
        };
        let exchange = Exchange {
            route: plan.route,
            client: ClientSide {
                peer: self.client.forwarded_peer(),
                tls: self.client.tls(),
                host: None,
                trusted: false,
            },
            conn: self.client.conn(),
            metrics: self.client.metrics(),
        };
        let attempts = if plan.body == 0 { upstream.len() } else { 1 };
        let mut attempt = 0;
        let (tcp, backend) = loop {
            attempt += 1;
            let backend = upstream.pick();
            // The first attempt starts when the exchange does (one clock read fewer).
            let began = if attempt == 1 {
                started
            } else {
                Instant::now()
            };
            let err = match self
                .send(io, raw, backend, upstream.timeouts, plan.idempotent, began)
                .await
            {
                Ok(tcp) => break (tcp, backend),
                Err(Failed::Client | Failed::Body(_)) => return Next::Close,
                Err(Failed::Upstream(err)) => err,
            };
            if upstream.failed(backend, &err, &exchange, attempt < attempts) {
                continue;
            }
            self.outcome.backend = Some(backend.index());
            return self.fail(io, &plan, &err, started, stopping).await;
        };
        self.answer_back(io, &plan, tcp, backend, raw, started, stopping)
            .await
    }

    /// Sends the request on a pooled connection (or a new one) and waits for the answer's
    /// head, which is left complete at the start of `self.answer`. A pooled connection
    /// the backend had closed (the write failed, or the read found the end before any
    /// answer) is replaced by a new one, for an idempotent request with no body.
    async fn send<S>(
        &mut self,
        io: &mut S,
        raw: &RawPool,
        backend: &BackendState,
        timeouts: Timeouts,
        idempotent: bool,
        began: Instant,
    ) -> Result<TcpStream, Failed>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let has_body = self.body_left > 0;
        let reset = |e: &dyn std::fmt::Display| {
            Failed::Upstream(ProxyError::Reset {
                backend: backend.label.clone(),
                reason: e.to_string(),
            })
        };
        let mut pooled = raw.checkout(backend.index());
        loop {
            // The answer is read from here on: during the upload if it comes early.
            self.answer.clear();
            self.long_head.clear();
            let reused = pooled.is_some();
            let mut tcp = match pooled.take() {
                Some(tcp) => tcp,
                None => {
                    let dialling = Instant::now();
                    let tcp = Box::pin(raw.dial(&backend.backend)).await.map_err(|e| {
                        Failed::Upstream(classify(
                            SendError::Dial(e),
                            &backend.label,
                            timeouts.connect,
                        ))
                    })?;
                    self.outcome.upstream_connect = Some(dialling.elapsed());
                    tcp
                }
            };
            let retry = reused && idempotent && self.body_left == 0;
            // The head, with what of the body has already come, in one write.
            let early = self.early_body();
            let sent = write_all_vectored(
                &mut tcp,
                &mut [
                    IoSlice::new(&self.head),
                    IoSlice::new(&self.input.bytes()[..early]),
                ],
            )
            .await;
            if let Err(e) = sent {
                if retry {
                    continue;
                }
                return Err(reset(&e));
            }
            self.input.consume(early);
            self.body_left -= early as u64;
            match self.upload(io, &mut tcp, timeouts.idle).await {
                Ok(()) | Err(Upload::Answered) => {}
                Err(Upload::Client) => return Err(Failed::Client),
                Err(Upload::Backend(e)) => return Err(reset(&e)),
            }
            // No body: connecting was part of waiting for the head (as in `proxy::forward`);
            // else the wait starts once the body is sent.
            let deadline = if has_body {
                Instant::now() + timeouts.response_header
            } else {
                began + timeouts.connect + timeouts.response_header
            };
            match self.answer_head(&mut tcp, deadline).await {
                Ok(()) => return Ok(tcp),
                Err(HeadError::Closed) if retry => {
                    debug!(backend = %backend.label, "pooled connection closed; trying a new one");
                    continue;
                }
                Err(HeadError::Closed) => {
                    return Err(reset(&"the connection closed before an answer"));
                }
                Err(HeadError::Io(e)) => return Err(reset(&e)),
                Err(HeadError::Bad(why)) => return Err(reset(&why)),
                Err(HeadError::Timeout) => {
                    return Err(Failed::Upstream(ProxyError::ResponseTimeout {
                        backend: backend.label.clone(),
                        after: deadline - began,
                    }));
                }
            }
        }
    }

    /// Body bytes already read with the head.
    fn early_body(&self) -> usize {
        usize::try_from(self.body_left)
            .unwrap_or(usize::MAX)
            .min(self.input.len())
    }

    /// Copies the rest of the request body from the client to the backend, each read
    /// within the route's idle timeout, while watching the backend: a final answer that
    /// begins before the body ends (a 413 to an upload it will not take) stops the upload,
    /// its first bytes read into `self.answer` ([`Upload::Answered`]), to be relayed at once
    /// (an informational one, a 103, is passed over and the upload goes on: `head`);
    /// the connection then ends with the body's rest unread (`body_unread`), and lingers.
    /// On hyper's path such an answer says `Connection: close` too (`proxy::forward`).
    async fn upload<S>(
        &mut self,
        io: &mut S,
        tcp: &mut TcpStream,
        idle: Duration,
    ) -> Result<(), Upload>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        while self.body_left > 0 {
            let wait = Wait::For(idle);
            let turn = tokio::select! {
                biased;
                _ = tcp.readable() => Turn::Backend,
                read = read_within(io, &mut self.input, &mut self.client_timer, wait) => {
                    Turn::Client(read)
                }
            };
            match turn {
                Turn::Backend => match self.backend_spoke(tcp).await {
                    Some(end) => return Err(end),
                    None => continue,
                },
                Turn::Client(Ok(0) | Err(_)) => return Err(Upload::Client),
                Turn::Client(Ok(_)) => {}
            }
            let n = self.early_body();
            let mut at = 0;
            while at < n {
                let turn = tokio::select! {
                    biased;
                    _ = tcp.readable() => Turn::Backend,
                    w = tcp.writable() => Turn::Client(w.map(|()| 0)),
                };
                match turn {
                    Turn::Backend => {
                        if let Some(end) = self.backend_spoke(tcp).await {
                            self.input.consume(at);
                            self.body_left -= at as u64;
                            return Err(end);
                        }
                    }
                    Turn::Client(Err(e)) => return Err(Upload::Backend(e)),
                    Turn::Client(Ok(_)) => match tcp.try_write(&self.input.bytes()[at..n]) {
                        Ok(0) => return Err(Upload::Backend(io::ErrorKind::WriteZero.into())),
                        Ok(written) => at += written,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                        Err(e) => return Err(Upload::Backend(e)),
                    },
                }
            }
            self.input.consume(n);
            self.body_left -= n as u64;
        }
        Ok(())
    }

    /// Writes the answer's head and streams its body to the client; the backend's
    /// connection goes back to the pool when it was read to its exact end.
    #[allow(
        clippy::too_many_arguments,
        reason = "one exchange's parts, named where used"
    )]
    async fn answer_back<S>(
        &mut self,
        io: &mut S,
        plan: &Request<'_>,
        mut tcp: TcpStream,
        backend: &BackendState,
        raw: &RawPool,
        started: Instant,
        stopping: &impl Fn() -> bool,
    ) -> Next
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        // An answer that came before the body's end (see `upload`) is the connection's last.
        let last = plan.close || self.body_left > 0 || stopping();
        let (status, framing, keep_alive, len) = {
            let mut slots = [httparse::EMPTY_HEADER; response::MAX_HEADERS];
            let bytes = head_bytes(&self.answer, &self.long_head);
            let response::Read::Answer(answer) = response::parse(bytes, &mut slots) else {
                return Next::Close;
            };
            answer.write_client(&mut self.out, last, &self.reply, plan.answer_edit);
            (answer.status, answer.framing, answer.keep_alive, answer.len)
        };
        let answered = Instant::now();
        self.client
            .count_elapsed(plan.route, status, answered - started);
        self.answered = Some(answered);
        self.outcome = Outcome {
            status,
            upstream_answered: true,
            backend: Some(backend.index()),
            refusal: std::mem::take(&mut self.outcome.refusal),
            first_byte: Some(answered - started),
            upstream_connect: self.outcome.upstream_connect,
            started: Some(started),
            bytes_out: match framing {
                Framing::Length(n) => n,
                _ => 0,
            },
        };
        if self.long_head.is_empty() {
            self.answer.consume(len);
        } else if !self.behind_long_head(len).await {
            return Next::Close;
        }
        let idle = plan.upstream.timeouts.idle;
        let streamed = match framing {
            Framing::Empty => io.write_all(&self.out).await.map_err(|_| Failed::Client),
            Framing::Length(n) => self.stream_length(io, &mut tcp, n, idle).await,
            Framing::Chunked => self.stream_chunked(io, &mut tcp, idle).await,
            Framing::UntilClose => self.stream_until_close(io, &mut tcp, idle).await,
        };
        if let Err(failed) = streamed {
            if let Failed::Body(why) = failed {
                debug!(route = %plan.route, backend = %backend.label, why, "answer body failed");
            }
            return Next::Close;
        }
        if keep_alive
            && framing != Framing::UntilClose
            && self.answer.is_empty()
            && self.body_left == 0
        {
            raw.give_back(backend.index(), tcp);
        }
        self.answer.clear();
        if last { Next::Close } else { Next::Again }
    }

    /// Answers with leafgate's own error for `err`, as `ProxyError::response` does.
    async fn fail<S>(
        &mut self,
        io: &mut S,
        plan: &Request<'_>,
        err: &ProxyError,
        started: Instant,
        stopping: &impl Fn() -> bool,
    ) -> Next
    where
        S: AsyncWrite + Unpin,
    {
        let status = err.status();
        self.client
            .count_elapsed(plan.route, status.as_u16(), started.elapsed());
        // A body left unread cannot be skipped safely: the connection ends with the answer.
        let last = plan.close || stopping() || self.body_left > 0;
        self.outcome.status = status.as_u16();
        self.outcome.upstream_answered = false;
        self.outcome.first_byte = None;
        self.outcome.refusal = err.to_string();
        let text = error_text(status, &self.outcome.refusal);
        self.outcome.bytes_out = text.len() as u64;
        response::write_error(
            &mut self.out,
            status,
            &text,
            last,
            &self.reply,
            plan.answer_edit,
        );
        if io.write_all(&self.out).await.is_err() || last {
            return Next::Close;
        }
        Next::Again
    }
}

/// The answer's bytes read so far from its head on: in `long_head` when that is in use.
fn head_bytes<'b>(answer: &'b Buf, long_head: &'b [u8]) -> &'b [u8] {
    if long_head.is_empty() {
        answer.bytes()
    } else {
        long_head
    }
}

fn upstream_io(e: io::Error) -> Failed {
    Failed::Body(e.to_string())
}

/// Why no answer head was read (`head`).
enum HeadError {
    /// Closed before sending anything: a pooled connection may be replaced.
    Closed,
    Timeout,
    Bad(&'static str),
    Io(io::Error),
}

/// Why a request body stopped short.
enum Upload {
    Client,
    Backend(io::Error),
    /// The backend's final answer began first: it is read and relayed, the body's rest
    /// unread.
    Answered,
}

/// Which side of an upload is ready first.
enum Turn {
    /// The backend's socket is readable.
    Backend,
    /// The client's read, or the backend's socket writable.
    Client(io::Result<usize>),
}
