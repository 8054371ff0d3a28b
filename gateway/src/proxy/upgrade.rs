//! Connection hijack: forwards a request that asks to switch protocols, reads the backend's
//! answer, and on `101 Switching Protocols` takes both raw connections over and splices
//! them, as kube-apiserver's `UpgradeAwareHandler` does for `kubectl exec`.
//!
//! The backend gets the request over a fresh HTTP/1.1 connection (upgrades exist only
//! there), or over a warm spare when the target keeps some (a leaf's; one the server
//! closed before it answered is given up for a fresh dial), with `Connection`, `Upgrade`,
//! `Sec-WebSocket-*` and `X-Stream-Protocol-Version` untouched, repeated lines kept as
//! repeated lines. A request without a body (every exec, attach, port-forward and
//! WebSocket) is written and answered on the raw connection (`fast::switch`), one with a
//! body through a hyper client connection. Any answer other than 101 is relayed as an
//! ordinary response. On 101 the client gets the backend's head as it came, and bytes
//! either side sent right behind its head (already read with it) travel with the upgraded
//! stream, so nothing is lost.
//!
//! Long file: the hijack is one path from the request to the splice, in three shapes of
//! connection (the raw switch, hyper's client, a warm spare), and their shared steps (the
//! answer's relay, the bytes read past a head, the splice's start) are read best together.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use hyper::upgrade::{Parts, Upgraded};
use hyper_rustls::MaybeHttpsStream;
use hyper_util::server::conn::auto;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use tower_service::Service;
use tracing::{Instrument, debug, debug_span, warn};

use super::body::IdleTimeout;
use crate::access_log::{Kind, ListenerLog, Record};
use crate::errors::{self, Causes};
use crate::limit::Limiter;
use crate::metrics::{Metrics, SpliceByteLabels, SpliceLabels};

use super::body::{Body, Inbound, full};
use super::error::ProxyError;
use super::exchange::Exchange;
use super::fast;
use super::fast::switch::Failed;
use super::prepare::{Hops, prepare, prepare_response};
use super::splice::{self, Direction, IoOp, SpliceError, SpliceOptions, SpliceReport};
use super::upstream::{Connector, Upstream};
use crate::config::Timeouts;
use crate::tls::spares::Spares;

/// Forwards an upgrade request to one of the route's backends. On 101 the splice runs on
/// its own task in `job.tasks` (so shutdown and reload can wait for it) and the backend's
/// 101 head is returned.
pub async fn forward(
    mut req: Request<Incoming>,
    upstream: &Upstream,
    exchange: &Exchange<'_>,
    job: SpliceJob,
) -> Result<Response<Body>, ProxyError> {
    let client_upgrade = ClientUpgrade::take(&mut req);
    let (mut parts, body) = req.into_parts();
    prepare(&mut parts, Hops::KeepUpgrade, Some(&exchange.client));
    let backend = upstream.pick();
    parts.uri = Upstream::uri(&backend.backend, parts.uri.path_and_query());
    let target = Target {
        connector: upstream.connector.clone(),
        spares: None,
        label: backend.label.clone(),
        timeouts: upstream.timeouts,
    };
    let result = switch(client_upgrade, parts, body, target, exchange, job).await;
    if let Err(ProxyError::Connect { .. } | ProxyError::ConnectTimeout { .. }) = &result {
        upstream.eject(backend);
    }
    result
}

/// Where an upgrade goes: a connector that dials (and TLS-wraps) the request URI's
/// authority, the warm connections to start on when there are some, a label for logs and
/// errors, and the timeouts that apply.
pub struct Target {
    pub connector: Connector,
    /// Spares to the request URI's server (a leaf's): taken before dialling.
    pub spares: Option<Spares>,
    pub label: String,
    pub timeouts: Timeouts,
}

/// The client's side of an upgrade, to splice once its 101 is written: hyper's, or the
/// connection of a request whose head leafgate read itself (`listener::upgrades`), handed
/// over once that listener has written the 101.
pub enum ClientUpgrade {
    Hyper(hyper::upgrade::OnUpgrade),
    Raw(oneshot::Receiver<ClientIo>),
}

/// The client's connection of a request whose head leafgate read itself, put in the
/// request's extensions by the listener that read it (a request extension must be
/// `Clone`; the first [`ClientUpgrade::take`] has it).
#[derive(Clone)]
pub struct RawUpgrade(Arc<Mutex<Option<oneshot::Receiver<ClientIo>>>>);

impl RawUpgrade {
    /// The extension to put in the request, and where its connection goes once the 101 is
    /// written.
    pub fn pair() -> (RawUpgrade, oneshot::Sender<ClientIo>) {
        let (tx, rx) = oneshot::channel();
        (RawUpgrade(Arc::new(Mutex::new(Some(rx)))), tx)
    }
}

/// A client's connection after its 101, with the bytes it sent right behind its request's
/// head.
pub struct ClientIo(Hijacked);

impl ClientIo {
    pub fn new<I>(io: I, early: Bytes) -> ClientIo
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        // A plain socket is spliced kernel to kernel; anything else (TLS) is copied.
        let mut io = Some(io);
        if let Some(tcp) = (&mut io as &mut dyn std::any::Any).downcast_mut::<Option<TcpStream>>() {
            let tcp = tcp.take().expect("just put there");
            return ClientIo(Hijacked::Tcp(tcp, early));
        }
        let io = io.expect("not taken");
        ClientIo(Hijacked::Stream(Prefixed::new(early, Box::new(io))))
    }
}

/// Why the client's side of an upgrade never came.
#[derive(Debug, thiserror::Error)]
enum ClientGone {
    #[error("{0}")]
    Hyper(#[from] hyper::Error),
    #[error("the connection failed before its 101 was written")]
    Raw,
}

impl ClientUpgrade {
    /// Takes the client's side out of `req`: the one a listener left in its extensions
    /// ([`RawUpgrade`]), else hyper's.
    pub fn take<B>(req: &mut Request<B>) -> ClientUpgrade {
        let raw = req
            .extensions_mut()
            .remove::<RawUpgrade>()
            .and_then(|raw| raw.0.lock().ok()?.take());
        match raw {
            Some(rx) => ClientUpgrade::Raw(rx),
            None => ClientUpgrade::Hyper(hyper::upgrade::on(req)),
        }
    }

    async fn ready(self) -> Result<Hijacked, ClientGone> {
        match self {
            ClientUpgrade::Hyper(upgrade) => Ok(Hijacked::client(upgrade.await?)),
            ClientUpgrade::Raw(rx) => rx.await.map(|io| io.0).map_err(|_| ClientGone::Raw),
        }
    }
}

/// Sends an upgrade request whose `parts` are final (absolute URI, headers as the far side
/// should get them) over a fresh HTTP/1.1 connection to `target`, relays a non-101 answer,
/// and on 101 splices `client_upgrade` with the far side under `job`.
pub async fn switch<B: Inbound>(
    client_upgrade: ClientUpgrade,
    mut parts: http::request::Parts,
    body: B,
    target: Target,
    exchange: &Exchange<'_>,
    job: SpliceJob,
) -> Result<Response<Body>, ProxyError> {
    parts.version = http::Version::HTTP_11;
    let Target {
        mut connector,
        spares,
        label,
        timeouts,
    } = target;
    // Outgoing URIs on HTTP/1.1 are origin-form; the authority went into Host above.
    // (The path and query are moved over as they are, not parsed again.)
    let uri = parts.uri.clone();
    parts.uri = match uri.path_and_query() {
        Some(pq) => {
            let mut origin = http::uri::Parts::default();
            origin.path_and_query = Some(pq.clone());
            http::Uri::from_parts(origin).expect("a path and query alone is a valid URI")
        }
        None => http::Uri::from_static("/"),
    };
    let mut request = if body.is_end_stream() {
        let mut head = Vec::with_capacity(512);
        fast::switch::write_head(&parts, &mut head);
        Outgoing::Raw(head)
    } else {
        let body = IdleTimeout::new(body, timeouts.idle).boxed_unsync();
        Outgoing::Hyper(Box::new(Request::from_parts(parts, body)))
    };

    // The spare's pool refills once this stream's splice ends (or shortly after it starts).
    let (warm, hold) = match spares.as_ref().and_then(Spares::take_for_stream) {
        Some((io, hold)) => (Some(io), Some(hold)),
        None => (None, None),
    };
    let started_warm = warm.is_some();
    let io = match warm {
        Some(io) => io,
        None => connect(&mut connector, &uri, &label, &timeouts, exchange).await?,
    };
    let mut sent = request.send_on(io, &label, &timeouts).await;
    if started_warm {
        // A spare the server closed after it was checked: the request never reached it,
        // so it goes again on a fresh connection.
        if let Err(Unsent::Back(req, reason)) = sent {
            debug!(backend = %label, %reason, "a spare connection was closed; dialling afresh");
            request = req;
            let io = connect(&mut connector, &uri, &label, &timeouts, exchange).await?;
            sent = request.send_on(io, &label, &timeouts).await;
        }
    }
    let answer = match sent {
        Ok(answer) => answer,
        Err(unsent) => {
            let err = unsent.into_error(label);
            if !matches!(err, ProxyError::Upgrade { .. }) {
                exchange.count_error(&err);
            }
            return Err(err);
        }
    };

    let (head, far_side) = match answer {
        Answered::Hyper(mut res) if res.status() == StatusCode::SWITCHING_PROTOCOLS => {
            let upgrade = hyper::upgrade::on(&mut res);
            (res.into_parts().0, FarSide::Later(upgrade))
        }
        Answered::Raw(io, fast::switch::Answer::Switched(head, early)) => {
            (head, FarSide::Now(Hijacked::raw(io, early)))
        }
        Answered::Hyper(res) => {
            let (parts, body) = res.into_parts();
            return Ok(declined(parts, body, &timeouts));
        }
        Answered::Raw(io, fast::switch::Answer::Declined(parts, framing, early, _)) => {
            let body = fast::switch::Declined::new(TokioIo::new(io), early, framing);
            return Ok(declined(parts, body, &timeouts));
        }
    };

    // A debug span, as the request's: its warnings name the connection, route and backend.
    let span = debug_span!("splice", route = %job.route, backend = %label);
    let ends = Ends {
        listener: exchange.conn.listener.clone(),
        peer: exchange.conn.peer,
        backend: label,
    };
    let idle = timeouts.upgraded_idle;
    let tasks = job.tasks.clone();
    tasks.spawn(
        async move {
            let far_side = async {
                match far_side {
                    FarSide::Now(io) => Ok(io),
                    FarSide::Later(upgrade) => upgrade.await.map(Hijacked::upstream),
                }
            };
            let (client, backend) = match tokio::join!(client_upgrade.ready(), far_side) {
                (Ok(c), Ok(b)) => (c, b),
                (Err(e), _) => {
                    job.unspliced(&ends, "client error");
                    return upgrade_failed(&job.route, &ends, "client", &e);
                }
                (_, Err(e)) => {
                    job.unspliced(&ends, "upstream error");
                    return upgrade_failed(&job.route, &ends, "upstream", &e);
                }
            };
            job.run(client, backend, idle, &ends).await;
            drop(hold);
        }
        .instrument(span),
    );

    // The client gets the backend's 101 head as it came: hyper writes what it is handed.
    Ok(Response::from_parts(head, full(Bytes::new())))
}

/// A backend's answer other than 101, relayed as an ordinary response.
fn declined<B>(mut parts: http::response::Parts, body: B, timeouts: &Timeouts) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<super::body::BoxError>,
{
    debug!(status = %parts.status, "backend declined the upgrade; relaying its answer");
    prepare_response(&mut parts);
    Response::from_parts(parts, IdleTimeout::new(body, timeouts.idle).boxed_unsync())
}

/// An upgrade request on its way: its head alone, or a request with a body for hyper.
enum Outgoing {
    Raw(Vec<u8>),
    Hyper(Box<Request<Body>>),
}

/// The far side's answer to an [`Outgoing`] request.
// Made once per upgrade and moved straight out of `send_on`: boxing the raw connection
// would cost an allocation on the stream's path for nothing.
#[allow(clippy::large_enum_variant)]
enum Answered {
    Raw(UpstreamIo, fast::switch::Answer),
    Hyper(Response<Incoming>),
}

/// The far side of a 101, ready to splice or once hyper hands it over.
enum FarSide {
    Now(Hijacked),
    Later(hyper::upgrade::OnUpgrade),
}

impl Outgoing {
    /// Sends the request over `io`, the first on it, within `timeouts.response_header` for
    /// the answer's head.
    async fn send_on(
        self,
        io: UpstreamIo,
        label: &str,
        timeouts: &Timeouts,
    ) -> Result<Answered, Unsent> {
        match self {
            Outgoing::Raw(head) => send_raw(io, head, timeouts).await,
            Outgoing::Hyper(req) => send_hyper(io, *req, label, timeouts)
                .await
                .map(Answered::Hyper),
        }
    }
}

/// Writes `head` on `io` and reads the answer's head. A connection that closed before the
/// answer's first byte gives the request back: the server never acted on it (it closed a
/// spare it had kept idle, as API servers do), so it may go again.
async fn send_raw(io: UpstreamIo, head: Vec<u8>, timeouts: &Timeouts) -> Result<Answered, Unsent> {
    let mut io = TokioIo::new(io);
    let exchange = fast::switch::exchange(&mut io, &head);
    match tokio::time::timeout(timeouts.response_header, exchange).await {
        Ok(Ok(answer)) => Ok(Answered::Raw(io.into_inner(), answer)),
        Ok(Err(e @ (Failed::Unsent(_) | Failed::Unanswered(_)))) => {
            Err(Unsent::Back(Outgoing::Raw(head), e.to_string()))
        }
        Ok(Err(e @ Failed::Bad(_))) => Err(Unsent::Reset(e.to_string())),
        Err(_) => Err(Unsent::Timeout(timeouts.response_header)),
    }
}

/// The two connections a splice joins, as its warnings name them: the client's (listener
/// and peer) and the backend.
struct Ends {
    listener: Arc<str>,
    peer: SocketAddr,
    backend: String,
}

/// The warning for a side of an upgrade that never became a connection to splice.
fn upgrade_failed(route: &str, ends: &Ends, side: &str, e: &dyn std::fmt::Display) {
    warn!(
        listener = %ends.listener,
        peer = %ends.peer,
        route,
        backend = %ends.backend,
        side,
        error = %e,
        "the {side} side of an upgrade failed"
    );
}

/// Dials `uri`'s server within `timeouts.connect`, counting a failure on `exchange`.
async fn connect(
    connector: &mut Connector,
    uri: &http::Uri,
    label: &str,
    timeouts: &Timeouts,
    exchange: &Exchange<'_>,
) -> Result<UpstreamIo, ProxyError> {
    let err = match tokio::time::timeout(timeouts.connect, connector.call(uri.clone())).await {
        Ok(Ok(io)) => return Ok(io),
        Ok(Err(e)) => ProxyError::Connect {
            backend: label.to_string(),
            reason: errors::describe(e.as_ref(), Causes::Innermost),
        },
        Err(_) => ProxyError::ConnectTimeout {
            backend: label.to_string(),
            after: timeouts.connect,
        },
    };
    exchange.count_error(&err);
    Err(err)
}

/// Why an upgrade request got no answer on a connection.
enum Unsent {
    /// The HTTP/1.1 handshake on it failed.
    Handshake(String),
    /// It closed before the server could act on the request: the request, to send
    /// elsewhere.
    Back(Outgoing, String),
    /// It failed after the request was written.
    Reset(String),
    /// No response head within `timeouts.response_header`.
    Timeout(Duration),
}

impl Unsent {
    fn into_error(self, backend: String) -> ProxyError {
        match self {
            Unsent::Handshake(reason) => ProxyError::Upgrade { backend, reason },
            Unsent::Back(_, reason) | Unsent::Reset(reason) => {
                ProxyError::Reset { backend, reason }
            }
            Unsent::Timeout(after) => ProxyError::ResponseTimeout { backend, after },
        }
    }
}

/// Sends `out` over `io` as the one request of a new hyper HTTP/1.1 connection, which is
/// driven until it is upgraded (then hands its I/O over) or closed.
async fn send_hyper(
    io: UpstreamIo,
    out: Request<Body>,
    label: &str,
    timeouts: &Timeouts,
) -> Result<Response<Incoming>, Unsent> {
    let (mut sender, conn) = http1::Builder::new()
        .handshake::<_, Body>(io)
        .await
        .map_err(|e| Unsent::Handshake(errors::describe(&e, Causes::Innermost)))?;
    let label = label.to_string();
    tokio::spawn(
        async move {
            if let Err(e) = conn.with_upgrades().await {
                debug!(backend = %label, error = %e, "upgrade connection to the backend ended with an error");
            }
        }
        .in_current_span(),
    );
    match tokio::time::timeout(timeouts.response_header, sender.try_send_request(out)).await {
        Ok(Ok(res)) => Ok(res),
        Ok(Err(mut e)) => {
            let reason = errors::describe(e.error(), Causes::Innermost);
            Err(match e.take_message() {
                Some(req) => Unsent::Back(Outgoing::Hyper(Box::new(req)), reason),
                None => Unsent::Reset(reason),
            })
        }
        Err(_) => Err(Unsent::Timeout(timeouts.response_header)),
    }
}

/// What a hijacked connection needs once both sides said 101: the task tracker that
/// shutdown and reload wait on, the signal that ends it when the grace period is over, its
/// bandwidth limiters and its meters.
pub struct SpliceJob {
    pub tasks: TaskTracker,
    pub kill: CancellationToken,
    pub metrics: Arc<Metrics>,
    pub route: String,
    pub tenant: String,
    /// Client -> upstream.
    pub up: Limiter,
    /// Upstream -> client.
    pub down: Limiter,
    /// Whatever the caller needs kept for as long as the connection is spliced (a
    /// registration that counts and can revoke it), dropped when the splice ends or the
    /// upgrade fails.
    held: Option<Box<dyn Send + Sync>>,
    /// Where the connection's access log line goes when it ends, when the listener
    /// writes a log.
    log: Option<Box<dyn EndLine>>,
}

/// How a hijacked connection's end is written to the access log: a route's `upgrade`
/// line ([`UpgradeLog`]), or a Kubernetes front's line of the call the stream serves.
pub trait EndLine: Send + Sync {
    fn write(&self, end: &SpliceEnd<'_>);
}

/// A hijacked connection as it ended, for its line.
pub struct SpliceEnd<'a> {
    pub listener: &'a str,
    pub peer: SocketAddr,
    pub route: &'a str,
    pub tenant: Option<&'a str>,
    /// The far side: the backend, or `leaf <name>`.
    pub upstream: &'a str,
    /// Every byte spliced each way (client to upstream, upstream to client).
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub duration: Duration,
    /// Both directions' waits on the bandwidth limiters.
    pub throttled: Duration,
    /// `closed`, `client closed`, `upstream closed`, `idle timeout`, `drain`,
    /// `client error`, `upstream error`.
    pub end_reason: &'static str,
}

/// A route's `upgrade` line.
pub struct UpgradeLog {
    pub log: Arc<ListenerLog>,
    /// The request's ID (`[request_id]`).
    pub request_id: Option<String>,
}

impl EndLine for UpgradeLog {
    fn write(&self, end: &SpliceEnd<'_>) {
        let mut r = Record::new(Kind::Upgrade, end.listener);
        r.request_id = self.request_id.as_deref();
        r.route = Some(end.route);
        r.tenant = end.tenant;
        r.client = Some(end.peer);
        r.upstream = Some(end.upstream);
        r.bytes_in = Some(end.bytes_in);
        r.bytes_out = Some(end.bytes_out);
        r.duration = Some(end.duration);
        r.throttled = Some(end.throttled);
        r.end_reason = Some(end.end_reason);
        self.log.write(&r);
    }
}

impl SpliceJob {
    /// The job of one hijacked connection of `route` (the route's name, or a front's label
    /// such as `node-api`) for `tenant` (`None`: counted under an empty tenant label), under
    /// `limiters` (client -> upstream, upstream -> client). `tasks`, `kill` and `metrics`
    /// are the gateway's: what shutdown waits on, what ends it, what counts it.
    pub fn new(
        tasks: &TaskTracker,
        kill: &CancellationToken,
        metrics: &Arc<Metrics>,
        route: &str,
        tenant: Option<&str>,
        (up, down): (Limiter, Limiter),
    ) -> SpliceJob {
        SpliceJob {
            tasks: tasks.clone(),
            kill: kill.clone(),
            metrics: metrics.clone(),
            route: route.to_string(),
            tenant: tenant.unwrap_or_default().to_string(),
            up,
            down,
            held: None,
            log: None,
        }
    }

    /// The same job, writing its line to `log` when the connection ends.
    pub fn logging<L: EndLine + 'static>(mut self, log: Option<L>) -> SpliceJob {
        self.log = log.map(|l| Box::new(l) as Box<dyn EndLine>);
        self
    }

    /// The same job, keeping `held` until the splice ends. With a `kill` token of its own
    /// (a child of the gateway's), that is how a caller ends one spliced connection early.
    pub fn holding(mut self, held: impl Send + Sync + 'static) -> SpliceJob {
        self.held = Some(Box::new(held));
        self
    }

    /// The line of a connection that was never spliced: its 101 was answered, and one
    /// side never came.
    fn unspliced(&self, ends: &Ends, end_reason: &'static str) {
        self.write_end(ends, [0, 0], Duration::ZERO, Duration::ZERO, end_reason);
    }

    /// Writes the connection's line, when the listener writes a log: `bytes` spliced
    /// (client to upstream, upstream to client) in `duration`, `throttled` of it waiting.
    fn write_end(
        &self,
        ends: &Ends,
        bytes: [u64; 2],
        duration: Duration,
        throttled: Duration,
        end_reason: &'static str,
    ) {
        if let Some(log) = &self.log {
            log.write(&SpliceEnd {
                listener: &ends.listener,
                peer: ends.peer,
                route: &self.route,
                tenant: (!self.tenant.is_empty()).then_some(self.tenant.as_str()),
                upstream: &ends.backend,
                bytes_in: bytes[0],
                bytes_out: bytes[1],
                duration,
                throttled,
                end_reason,
            });
        }
    }

    /// `ends` names both sides in the warning a failed splice logs.
    async fn run(self, client: Hijacked, backend: Hijacked, idle: Duration, ends: &Ends) {
        let labels = SpliceLabels {
            route: self.route.clone(),
            tenant: self.tenant.clone(),
        };
        let byte_labels = |direction: Direction| SpliceByteLabels {
            route: self.route.clone(),
            tenant: self.tenant.clone(),
            direction: direction.label(),
        };
        let metrics = &self.metrics;
        metrics.upgraded_total.get_or_create(&labels).inc();
        let active = metrics.upgraded_active.get_or_create(&labels).clone();
        let up_bytes = metrics
            .spliced_bytes
            .get_or_create(&byte_labels(Direction::ClientToUpstream))
            .clone();
        let down_bytes = metrics
            .spliced_bytes
            .get_or_create(&byte_labels(Direction::UpstreamToClient))
            .clone();
        // What moved, for the line: a splice that fails reports no totals of its own.
        let moved = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let counted = moved.clone();
        let on_bytes = move |direction: Direction, n: u64| match direction {
            Direction::ClientToUpstream => {
                up_bytes.inc_by(n);
                counted[0].fetch_add(n, Ordering::Relaxed);
            }
            Direction::UpstreamToClient => {
                down_bytes.inc_by(n);
                counted[1].fetch_add(n, Ordering::Relaxed);
            }
        };
        let began = tokio::time::Instant::now();
        let throttled = Arc::new(AtomicU64::new(0));
        let opts = SpliceOptions {
            idle_timeout: idle,
            up: self.up.clone(),
            down: self.down.clone(),
            throttled: throttled.clone(),
        };

        active.inc();
        let result = tokio::select! {
            r = pump(client, backend, opts, on_bytes) => Some(r),
            _ = self.kill.cancelled() => None,
        };
        active.dec();
        if self.log.is_some() {
            let end_reason = match &result {
                Some(Ok(_)) => "closed",
                Some(Err(SpliceError::Idle { .. })) => "idle timeout",
                Some(Err(e)) if e.client_hung_up() => "client closed",
                Some(Err(e)) if e.upstream_hung_up() => "upstream closed",
                Some(Err(e)) => match e.side() {
                    Some(splice::Side::Client) => "client error",
                    _ => "upstream error",
                },
                None => "drain",
            };
            let bytes = [
                moved[0].load(Ordering::Relaxed),
                moved[1].load(Ordering::Relaxed),
            ];
            let throttled = Duration::from_nanos(throttled.load(Ordering::Relaxed));
            self.write_end(ends, bytes, began.elapsed(), throttled, end_reason);
        }
        match result {
            Some(Ok(report)) => {
                for (direction, throttled) in [
                    (Direction::ClientToUpstream, report.throttled_up),
                    (Direction::UpstreamToClient, report.throttled_down),
                ] {
                    if !throttled.is_zero() {
                        metrics
                            .throttled_seconds
                            .get_or_create(&byte_labels(direction))
                            .inc_by(throttled.as_secs_f64());
                    }
                }
                debug!(
                    up = report.bytes_up,
                    down = report.bytes_down,
                    "upgraded connection closed"
                );
            }
            Some(Err(e)) if e.client_hung_up() => {
                debug!(error = %e, "upgraded connection closed: the client hung up");
            }
            Some(Err(e)) => {
                let side = e.side().map(|s| s.to_string());
                warn!(
                    listener = %ends.listener,
                    peer = %ends.peer,
                    route = %self.route,
                    backend = %ends.backend,
                    side = side.as_deref().unwrap_or("both"),
                    error = %e,
                    "upgraded connection ended"
                );
            }
            None => debug!("upgraded connection closed by shutdown"),
        }
    }
}

type UpstreamIo = MaybeHttpsStream<TokioIo<TcpStream>>;

/// One side of a hijacked connection, out of hyper: a plain socket (with the bytes hyper had
/// read behind the head), or any other stream (TLS) with those bytes replayed first.
enum Hijacked {
    Tcp(TcpStream, Bytes),
    Stream(Prefixed<Box<dyn Io>>),
}

trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

impl Hijacked {
    fn client(upgraded: Upgraded) -> Hijacked {
        match auto::upgrade::downcast::<TokioIo<TcpStream>>(upgraded) {
            Ok(parts) => Hijacked::Tcp(parts.io.into_inner(), parts.read_buf),
            Err(other) => {
                Hijacked::Stream(Prefixed::new(Bytes::new(), Box::new(TokioIo::new(other))))
            }
        }
    }

    fn upstream(upgraded: Upgraded) -> Hijacked {
        match upgraded.downcast::<UpstreamIo>() {
            Ok(Parts {
                io: MaybeHttpsStream::Http(tcp),
                read_buf,
                ..
            }) => Hijacked::Tcp(tcp.into_inner(), read_buf),
            Ok(Parts { io, read_buf, .. }) => {
                Hijacked::Stream(Prefixed::new(read_buf, Box::new(TokioIo::new(io))))
            }
            Err(other) => {
                Hijacked::Stream(Prefixed::new(Bytes::new(), Box::new(TokioIo::new(other))))
            }
        }
    }

    /// The backend's connection of a raw exchange, with the bytes read behind the 101.
    fn raw(io: UpstreamIo, early: Bytes) -> Hijacked {
        match io {
            MaybeHttpsStream::Http(tcp) => Hijacked::Tcp(tcp.into_inner(), early),
            io @ MaybeHttpsStream::Https(_) => {
                Hijacked::Stream(Prefixed::new(early, Box::new(TokioIo::new(io))))
            }
        }
    }

    fn into_stream(self) -> Prefixed<Box<dyn Io>> {
        match self {
            Hijacked::Tcp(tcp, early) => Prefixed::new(early, Box::new(tcp)),
            Hijacked::Stream(s) => s,
        }
    }
}

/// Splices the two upgraded connections. When both are plain TCP underneath, the sockets
/// are taken out of hyper (bytes hyper had already read behind either head are written on
/// first) so `splice_tcp` can move bytes kernel to kernel; otherwise the generic copy runs.
async fn pump(
    client: Hijacked,
    backend: Hijacked,
    opts: SpliceOptions,
    on_bytes: impl Fn(Direction, u64) + Send + Sync,
) -> Result<SpliceReport, SpliceError> {
    match (client, backend) {
        (Hijacked::Tcp(mut client, client_early), Hijacked::Tcp(mut backend, backend_early)) => {
            // Moved in and dropped once written: a view of the buffer a head was read into
            // holds all of it, for as long as the splice would run.
            write_early(
                &mut backend,
                client_early,
                Direction::ClientToUpstream,
                &on_bytes,
            )
            .await?;
            write_early(
                &mut client,
                backend_early,
                Direction::UpstreamToClient,
                &on_bytes,
            )
            .await?;
            splice::splice_tcp(client, backend, opts, on_bytes).await
        }
        (client, backend) => {
            splice::splice(client.into_stream(), backend.into_stream(), opts, on_bytes).await
        }
    }
}

/// A stream whose first reads return `early`: bytes already read off it by hyper.
struct Prefixed<T> {
    /// A view of the buffer they were read into, which it keeps whole: let go (an empty
    /// `Bytes` holds nothing) once they are read, or at once when there are none.
    early: Bytes,
    io: T,
}

impl<T> Prefixed<T> {
    fn new(early: Bytes, io: T) -> Self {
        let early = if early.is_empty() {
            Bytes::new()
        } else {
            early
        };
        Prefixed { early, io }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Prefixed<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.early.is_empty() {
            let n = self.early.len().min(buf.remaining());
            let chunk = self.early.split_to(n);
            buf.put_slice(&chunk);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Prefixed<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Writes bytes a side sent right behind its head (read by hyper along with it) to the
/// other side, before the splice takes over.
async fn write_early(
    to: &mut TcpStream,
    early: Bytes,
    direction: Direction,
    on_bytes: &(impl Fn(Direction, u64) + Send + Sync),
) -> Result<(), SpliceError> {
    if early.is_empty() {
        return Ok(());
    }
    to.write_all(&early)
        .await
        .map_err(|source| SpliceError::Io {
            side: direction.sink(),
            op: IoOp::Write,
            direction,
            source,
        })?;
    on_bytes(direction, early.len() as u64);
    Ok(())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod server_tests;
