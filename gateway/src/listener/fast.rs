//! The HTTP/1.1 fast path of a routes listener: one loop per connection that reads each
//! request head in its buffer, writes the backend's head on a raw pooled socket in one
//! write, streams the body each way through two fixed buffers, and starts over. No task,
//! channel, header map or body object is made per request, and nothing is allocated in the
//! steady state (a test counts it).
//!
//! It serves only what it can serve exactly as hyper's path does (`proxy::fast::request`
//! says what that is; here: a route that proxies to plain HTTP/1.1 backends, a path that
//! needs no normalising). At the first request it does not take, it stops with the bytes
//! it holds unread, and the connection is served by hyper from there on ([`Ended::ToHyper`]),
//! malformed requests included: their 400s and 431s are hyper's own.
//!
//! What hyper's path keeps, kept here: the same metrics (requests by route and status,
//! duration to the response head, upstream errors by kind), the same timeouts (a head
//! within `HEADER_READ_TIMEOUT` once begun, `client_idle` between requests, the route's
//! `connect`, `response_header` and body `idle`), retrying a request with no body on the
//! next backend when one refuses, the same error answers, and graceful drain (`stop` ends
//! the connection at the next request boundary; the answer in flight says
//! `Connection: close`).

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tracing::debug;

use super::HEADER_READ_TIMEOUT;
use super::client::Client;
use crate::config::{ListenerKind, Timeouts};
use crate::metrics::ListenerLabels;
use crate::proxy::error::{ProxyError, SendError, classify, error_text};
use crate::proxy::fast::chunked::{self, Decoder};
use crate::proxy::fast::pool::RawPool;
use crate::proxy::fast::request::{self, Head};
use crate::proxy::fast::response::{self, Framing};
use crate::proxy::headers::ClientSide;
use crate::proxy::upstream::{BackendState, Upstream};
use crate::proxy::{Exchange, clock};
use crate::routing::path;
use crate::runtime::signal::Waiter;
use crate::snapshot::{Action, Route};

/// Bytes each of a connection's two read buffers holds: a request head longer than this
/// goes to hyper (whose limit is far higher).
const BUFFER: usize = 16 * 1024;

/// How a fast-path connection ended.
pub enum Ended {
    Closed,
    /// Closed by an answer made with the request's body unread: the client may still be
    /// sending it, so the connection lingers (`listener::linger`).
    Unread,
    /// A request the fast path does not take: hyper serves the connection from `unread` on.
    ToHyper(Vec<u8>),
}

/// Serves requests on `io` until it closes, `stop` asks it to, or a request needs hyper.
pub async fn serve<S>(io: &mut S, client: &Client, stop: &Waiter, client_idle: Duration) -> Ended
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let labels = ListenerLabels {
        listener: client.listener.to_string(),
    };
    let metrics = &client.shared.metrics;
    let mut conn = Conn {
        client,
        served: metrics.fast_path_requests.get_or_create(&labels).clone(),
        input: Buf::new(),
        answer: Buf::new(),
        head: Vec::with_capacity(1024),
        out: Vec::with_capacity(BUFFER),
        body_left: 0,
        client_timer: Timer::new(),
        backend_timer: Timer::new(),
        answered: None,
    };
    loop {
        let step = {
            let mut slots = [httparse::EMPTY_HEADER; request::MAX_HEADERS];
            match request::parse(conn.input.bytes(), &mut slots) {
                request::Read::Partial => None,
                request::Read::Other(why) => Some(Step::Hyper(why)),
                request::Read::Fast(head) => Some(plan(conn.client, &head, &mut conn.head)),
            }
        };
        match step {
            None => {
                if conn.input.is_full() {
                    metrics.fast_path_handoffs.get_or_create(&labels).inc();
                    return conn.to_hyper("a head longer than the fast path's buffer");
                }
                let read = if conn.input.is_empty() {
                    if stop.is_fired() {
                        return Ended::Closed;
                    }
                    // Idle from the last answer's head when its body needed no waiting (no
                    // clock read), else from now.
                    let wait = match conn.answered.take() {
                        Some(at) => Wait::Until(at + client_idle),
                        None => Wait::For(client_idle),
                    };
                    tokio::select! {
                        biased;
                        r = read_within(io, &mut conn.input, &mut conn.client_timer, wait) => r,
                        () = stop.fired() => return Ended::Closed,
                    }
                } else {
                    let wait = Wait::For(HEADER_READ_TIMEOUT);
                    read_within(io, &mut conn.input, &mut conn.client_timer, wait).await
                };
                match read {
                    Ok(0) => return Ended::Closed,
                    Ok(_) => {}
                    Err(e) => {
                        debug!(error = %e, "no request head; closing");
                        return Ended::Closed;
                    }
                }
            }
            Some(Step::Hyper(why)) => {
                metrics.fast_path_handoffs.get_or_create(&labels).inc();
                return conn.to_hyper(why);
            }
            Some(Step::Go(plan)) => {
                if let Next::Close = conn.exchange(io, plan, stop).await {
                    if conn.body_left > 0 {
                        return Ended::Unread;
                    }
                    let _ = io.shutdown().await;
                    return Ended::Closed;
                }
            }
        }
    }
}

/// Routes `head` as the routes front would, and writes the backend's head.
fn plan(client: &Client, head: &Head<'_, '_>, upstream_head: &mut Vec<u8>) -> Step {
    let snapshot = client.shared.snapshot.load();
    let Some(listener) = snapshot.listeners.get(&*client.listener) else {
        return Step::Hyper("the listener was removed");
    };
    if listener.config.kind != ListenerKind::Http || !listener.config.http1_fast_path {
        return Step::Hyper("the listener no longer takes the fast path");
    }
    let path = head.target.split('?').next().unwrap_or("/");
    if !matches!(path::normalize(path), Ok(std::borrow::Cow::Borrowed(_))) {
        return Step::Hyper("a path to normalise or refuse");
    }
    let Some(route) = listener.router.lookup(head.host, path) else {
        return Step::Hyper("no route");
    };
    let Action::Proxy(upstream) = &route.action else {
        return Step::Hyper("a direct answer");
    };
    if upstream.raw().is_none() {
        return Step::Hyper("TLS or HTTP/2 backends");
    }
    let trusted = listener.config.trusts(client.peer.ip());
    if !head.fits(trusted) {
        return Step::Hyper("forwarding headers from a trusted proxy");
    }
    head.write_upstream(
        upstream_head,
        &ClientSide {
            peer: &client.forwarded_peer,
            tls: client.tls,
            host: Some(head.host),
            trusted,
        },
    );
    Step::Go(Plan {
        route: route.clone(),
        upstream: upstream.clone(),
        head_len: head.len,
        body: head.content_length,
        close: head.close,
        idempotent: matches!(head.method, "GET" | "PUT" | "DELETE" | "OPTIONS"),
    })
}

/// What to do with a complete request head.
enum Step {
    Hyper(&'static str),
    Go(Plan),
}

/// A request the fast path carries; its backend head is written in `Conn::head`.
struct Plan {
    route: Arc<Route>,
    upstream: Arc<Upstream>,
    head_len: usize,
    body: u64,
    close: bool,
    /// The method is idempotent (RFC 9110 §9.2.2): sent again when a pooled connection
    /// turns out closed after the write.
    idempotent: bool,
}

enum Next {
    Again,
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

struct Conn<'a> {
    client: &'a Client,
    /// This listener's count of requests served here.
    served: Counter,
    /// The client's bytes.
    input: Buf,
    /// The backend's bytes.
    answer: Buf,
    /// The head for the backend.
    head: Vec<u8>,
    /// What goes to the client: a head, or chunks.
    out: Vec<u8>,
    /// Request body bytes not yet read from the client.
    body_left: u64,
    /// The waits on the client's side and on the backend's.
    client_timer: Timer,
    backend_timer: Timer,
    /// When the last answer's head went out, while nothing has been waited for since.
    answered: Option<Instant>,
}

impl Conn<'_> {
    fn to_hyper(&self, why: &'static str) -> Ended {
        debug!(why, "served by hyper from here on");
        Ended::ToHyper(self.input.bytes().to_vec())
    }

    /// Forwards one request and its answer.
    async fn exchange<S>(&mut self, io: &mut S, plan: Plan, stop: &Waiter) -> Next
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let started = Instant::now();
        self.answered = None;
        self.served.inc();
        self.input.consume(plan.head_len);
        self.body_left = plan.body;
        let upstream = &*plan.upstream;
        let Some(raw) = upstream.raw() else {
            return Next::Close;
        };
        let exchange = Exchange {
            route: &plan.route.name,
            client: ClientSide {
                peer: &self.client.forwarded_peer,
                tls: self.client.tls,
                host: None,
                trusted: false,
            },
            conn: self.client.conn(),
            metrics: &self.client.shared.metrics,
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
            return self.fail(io, &plan, &err, started, stop).await;
        };
        self.answer_back(io, &plan, tcp, backend, raw, started, stop)
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
            let reused = pooled.is_some();
            let mut tcp = match pooled.take() {
                Some(tcp) => tcp,
                None => Box::pin(raw.dial(&backend.backend)).await.map_err(|e| {
                    Failed::Upstream(classify(
                        SendError::Dial(e),
                        &backend.label,
                        timeouts.connect,
                    ))
                })?,
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
                Ok(()) => {}
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
    /// within the route's idle timeout.
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
            match read_within(io, &mut self.input, &mut self.client_timer, wait).await {
                Ok(0) | Err(_) => return Err(Upload::Client),
                Ok(_) => {}
            }
            let n = self.early_body();
            if let Err(e) = tcp.write_all(&self.input.bytes()[..n]).await {
                return Err(Upload::Backend(e));
            }
            self.input.consume(n);
            self.body_left -= n as u64;
        }
        Ok(())
    }

    /// Reads until a final answer head is complete at the start of `self.answer`, passing
    /// over informational ones.
    async fn answer_head(
        &mut self,
        tcp: &mut TcpStream,
        deadline: Instant,
    ) -> Result<(), HeadError> {
        self.answer.clear();
        loop {
            let informational = {
                let mut slots = [httparse::EMPTY_HEADER; response::MAX_HEADERS];
                match response::parse(self.answer.bytes(), &mut slots) {
                    response::Read::Answer(_) => return Ok(()),
                    response::Read::Bad(why) => return Err(HeadError::Bad(why)),
                    response::Read::Informational(len) => Some(len),
                    response::Read::Partial => None,
                }
            };
            if let Some(len) = informational {
                self.answer.consume(len);
                continue;
            }
            if self.answer.is_full() {
                return Err(HeadError::Bad("an answer head longer than the buffer"));
            }
            let wait = Wait::Until(deadline);
            match read_within(tcp, &mut self.answer, &mut self.backend_timer, wait).await {
                Ok(0) if self.answer.is_empty() => return Err(HeadError::Closed),
                Ok(0) => return Err(HeadError::Bad("the connection closed within the head")),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::TimedOut => return Err(HeadError::Timeout),
                Err(e) if self.answer.is_empty() && is_reset(&e) => return Err(HeadError::Closed),
                Err(e) => return Err(HeadError::Io(e)),
            }
        }
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
        plan: &Plan,
        mut tcp: TcpStream,
        backend: &BackendState,
        raw: &RawPool,
        started: Instant,
        stop: &Waiter,
    ) -> Next
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let last = plan.close || stop.is_fired();
        let (status, framing, keep_alive, len) = {
            let mut slots = [httparse::EMPTY_HEADER; response::MAX_HEADERS];
            let response::Read::Answer(answer) = response::parse(self.answer.bytes(), &mut slots)
            else {
                return Next::Close;
            };
            answer.write_client(&mut self.out, last);
            (answer.status, answer.framing, answer.keep_alive, answer.len)
        };
        let answered = Instant::now();
        self.client
            .count_elapsed(&plan.route.name, status, answered - started);
        self.answered = Some(answered);
        self.answer.consume(len);
        let idle = plan.upstream.timeouts.idle;
        let streamed = match framing {
            Framing::Empty => io.write_all(&self.out).await.map_err(|_| Failed::Client),
            Framing::Length(n) => self.stream_length(io, &mut tcp, n, idle).await,
            Framing::Chunked => self.stream_chunked(io, &mut tcp, idle).await,
            Framing::UntilClose => self.stream_until_close(io, &mut tcp, idle).await,
        };
        if let Err(failed) = streamed {
            if let Failed::Body(why) = failed {
                debug!(route = %plan.route.name, backend = %backend.label, why, "answer body failed");
            }
            return Next::Close;
        }
        if keep_alive && framing != Framing::UntilClose && self.answer.is_empty() {
            raw.give_back(backend.index(), tcp);
        }
        self.answer.clear();
        if last { Next::Close } else { Next::Again }
    }

    /// A body of `n` bytes: the head and what came with it in one write, then the rest as
    /// it arrives.
    async fn stream_length<S>(
        &mut self,
        io: &mut S,
        tcp: &mut TcpStream,
        n: u64,
        idle: Duration,
    ) -> Result<(), Failed>
    where
        S: AsyncWrite + Unpin,
    {
        let first = usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(self.answer.len());
        write_all_vectored(
            io,
            &mut [
                IoSlice::new(&self.out),
                IoSlice::new(&self.answer.bytes()[..first]),
            ],
        )
        .await
        .map_err(|_| Failed::Client)?;
        self.answer.consume(first);
        let mut left = n - first as u64;
        while left > 0 {
            self.fill_answer(tcp, idle).await?;
            let take = usize::try_from(left)
                .unwrap_or(usize::MAX)
                .min(self.answer.len());
            io.write_all(&self.answer.bytes()[..take])
                .await
                .map_err(|_| Failed::Client)?;
            self.answer.consume(take);
            left -= take as u64;
        }
        Ok(())
    }

    /// A chunked body, decoded and chunked again (extensions and trailers dropped).
    async fn stream_chunked<S>(
        &mut self,
        io: &mut S,
        tcp: &mut TcpStream,
        idle: Duration,
    ) -> Result<(), Failed>
    where
        S: AsyncWrite + Unpin,
    {
        let mut decoder = Decoder::default();
        loop {
            loop {
                let bytes = self.answer.bytes();
                let piece = match decoder.decode(bytes) {
                    Ok(piece) => piece,
                    Err(e) => {
                        // What came before the fault still goes out, as hyper's path
                        // sends it; the unfinished answer tells the client.
                        let _ = io.write_all(&self.out).await;
                        return Err(Failed::Body(e.to_string()));
                    }
                };
                if let Some(data) = piece.data {
                    chunked::encode(&mut self.out, &bytes[data]);
                }
                self.answer.consume(piece.used);
                if decoder.is_done() {
                    self.out.extend_from_slice(chunked::END);
                    return io.write_all(&self.out).await.map_err(|_| Failed::Client);
                }
                if piece.used == 0 || self.answer.is_empty() {
                    break;
                }
            }
            io.write_all(&self.out).await.map_err(|_| Failed::Client)?;
            self.out.clear();
            self.fill_answer(tcp, idle).await?;
        }
    }

    /// A body that ends when the backend closes, sent chunked.
    async fn stream_until_close<S>(
        &mut self,
        io: &mut S,
        tcp: &mut TcpStream,
        idle: Duration,
    ) -> Result<(), Failed>
    where
        S: AsyncWrite + Unpin,
    {
        loop {
            chunked::encode(&mut self.out, self.answer.bytes());
            self.answer.clear();
            io.write_all(&self.out).await.map_err(|_| Failed::Client)?;
            self.out.clear();
            self.answered = None;
            let wait = Wait::For(idle);
            match read_within(tcp, &mut self.answer, &mut self.backend_timer, wait).await {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => return Err(upstream_io(e)),
            }
        }
        io.write_all(chunked::END).await.map_err(|_| Failed::Client)
    }

    /// Reads more of the answer body within `idle`; its end before the framing's is a
    /// failure.
    async fn fill_answer(&mut self, tcp: &mut TcpStream, idle: Duration) -> Result<(), Failed> {
        self.answered = None;
        let wait = Wait::For(idle);
        match read_within(tcp, &mut self.answer, &mut self.backend_timer, wait).await {
            Ok(0) => Err(Failed::Body("the answer body ended early".into())),
            Ok(_) => Ok(()),
            Err(e) => Err(upstream_io(e)),
        }
    }

    /// Answers with leafgate's own error for `err`, as `ProxyError::response` does.
    async fn fail<S>(
        &mut self,
        io: &mut S,
        plan: &Plan,
        err: &ProxyError,
        started: Instant,
        stop: &Waiter,
    ) -> Next
    where
        S: AsyncWrite + Unpin,
    {
        let status = err.status();
        self.client
            .count_elapsed(&plan.route.name, status.as_u16(), started.elapsed());
        // A body left unread cannot be skipped safely: the connection ends with the answer.
        let last = plan.close || stop.is_fired() || self.body_left > 0;
        let text = error_text(status, &err.to_string());
        self.out.clear();
        self.out.extend_from_slice(b"HTTP/1.1 ");
        self.out.extend_from_slice(status.as_str().as_bytes());
        self.out.push(b' ');
        self.out
            .extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
        self.out.extend_from_slice(
            b"\r\ncontent-type: text/plain; charset=utf-8\r\ncache-control: no-store\r\ncontent-length: ",
        );
        self.out
            .extend_from_slice(text.len().to_string().as_bytes());
        if last {
            self.out.extend_from_slice(b"\r\nconnection: close");
        }
        self.out.extend_from_slice(b"\r\ndate: ");
        self.out.extend_from_slice(&clock::date());
        self.out.extend_from_slice(b"\r\n\r\n");
        self.out.extend_from_slice(text.as_bytes());
        if io.write_all(&self.out).await.is_err() || last {
            return Next::Close;
        }
        Next::Again
    }
}

enum HeadError {
    /// Closed before sending anything: a pooled connection may be replaced.
    Closed,
    Timeout,
    Bad(&'static str),
    Io(io::Error),
}

fn is_reset(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
    )
}

fn upstream_io(e: io::Error) -> Failed {
    Failed::Body(e.to_string())
}

/// Why a request body stopped short.
enum Upload {
    Client,
    Backend(io::Error),
}

/// A fixed read buffer: bytes are read in at its end and consumed from its start.
struct Buf {
    data: Box<[u8]>,
    start: usize,
    end: usize,
}

impl Buf {
    fn new() -> Buf {
        Buf {
            data: vec![0; BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    fn len(&self) -> usize {
        self.end - self.start
    }

    fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// No room left, even after moving what it holds to the front.
    fn is_full(&self) -> bool {
        self.len() == self.data.len()
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        if self.start == self.end {
            self.clear();
        }
    }

    fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
    }

    /// Room to read into, after what it holds (moved to the front when at the end).
    fn spare(&mut self) -> &mut [u8] {
        if self.end == self.data.len() && self.start > 0 {
            self.data.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.data[self.end..]
    }
}

/// How long a read may wait: for a while, or until a deadline (no clock read unless the
/// data has to be waited for).
enum Wait {
    For(Duration),
    Until(Instant),
}

/// One side's timer, kept for the connection's life and moved to each wait's deadline. A
/// deadline later than the one it holds is one atomic store in tokio's timer (the wheel
/// meets the new one when the old one comes); a new timer per wait would be put in the
/// wheel and taken out again, under its lock, twice a request.
struct Timer(Pin<Box<Sleep>>);

impl Timer {
    fn new() -> Timer {
        Timer(Box::pin(tokio::time::sleep(Duration::from_secs(3600))))
    }
}

/// Reads what is there into `buf`, waiting as `wait` says on `timer`; `Ok(0)` at the end.
/// Data already waiting is read without touching the timer.
async fn read_within<R>(
    r: &mut R,
    buf: &mut Buf,
    timer: &mut Timer,
    wait: Wait,
) -> io::Result<usize>
where
    R: AsyncRead + Unpin,
{
    let spare = buf.spare();
    let mut read = std::pin::pin!(r.read(spare));
    let now = std::future::poll_fn(|cx| Poll::Ready(read.as_mut().poll(cx))).await;
    let n = match now {
        Poll::Ready(n) => n?,
        Poll::Pending => {
            let deadline = match wait {
                Wait::For(within) => Instant::now() + within,
                Wait::Until(deadline) => deadline,
            };
            timer.0.as_mut().reset(deadline);
            std::future::poll_fn(|cx| {
                if let Poll::Ready(n) = read.as_mut().poll(cx) {
                    return Poll::Ready(n);
                }
                timer
                    .0
                    .as_mut()
                    .poll(cx)
                    .map(|()| Err(io::ErrorKind::TimedOut.into()))
            })
            .await?
        }
    };
    buf.end += n;
    Ok(n)
}

/// Writes every slice in as few writes as the socket takes.
async fn write_all_vectored<W>(w: &mut W, mut slices: &mut [IoSlice<'_>]) -> io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        let n = w.write_vectored(slices).await?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}
