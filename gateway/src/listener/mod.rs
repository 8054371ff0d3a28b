//! Accepts connections on one listener and serves HTTP on them.
//!
//! One task accepts; each connection gets its own task: TLS handshake (when the listener
//! has certificates) with the snapshot current at accept, then hyper-util's auto server,
//! which speaks HTTP/1.1 and HTTP/2 on the same port (h2 by ALPN on TLS, prior-knowledge
//! h2c on plain TCP) and lets a request switch protocols. Each request is dispatched by
//! [`front::handle`], by the front (routes, node API, kube API) chosen
//! for the connection when it was accepted.
//!
//! On a routes listener, a connection is first served by the HTTP/1.1 fast path (`fast`),
//! which hands it to hyper (`rewind`: with the bytes it read put back) at the first request
//! it does not take: HTTP/2, upgrades and anything unusual are hyper's. On a node-API
//! listener, a first request that asks to switch protocols is read in place (`upgrades`):
//! on 101 its connection goes to the splice without hyper; any other answer is hyper's to
//! write, and the connection hyper's from there on.
//!
//! The files: `access` (the access log's lines, from both paths), `api_lines` (the lines
//! of Kubernetes streams and followed logs, written when they end), `client` (a
//! connection's client end and its front), `conn` (what the accept
//! loop, the fast path and the admin listener share: the head timeout, the first-byte wait,
//! requests in flight and the idle wait), `fast` (the HTTP/1.1 fast path), `upgrades` (a node-API upgrade read in place), `rewind` (a stream with read
//! bytes put back), `front` (a request's
//! first steps and the choice of front), the fronts `routes`, `node_api` and `kube_api/`,
//! what both Kubernetes fronts share (`podcall`: the leaf choice and the call's tail;
//! `pod_headers`: what of a caller's request reaches the leaf, and impersonation refused;
//! `reply`: the error dialects), and `identity` (a client certificate's names).
//!
//! Limits: at most `max_connections` connections per listener (one budget shared by the
//! listener's sockets on every serving thread); at the limit the accept loops wait for a
//! slot, so new clients queue in the kernel backlog (a thread that raced another for the
//! last slot holds its accepted client unserved until one frees), and the wait is counted in
//! `leafgate_listener_saturated_total`. A connection that sends no first byte (TLS
//! ClientHello or request) within `timeouts.first_byte` is closed; one with no request in
//! flight for `timeouts.client_idle` is shut down gracefully (HTTP/1.1 keep-alive ends,
//! HTTP/2 gets GOAWAY).
//!
//! Stopping has two steps. `stop` (shutdown, or the listener was removed by a reload)
//! closes the socket and asks every connection to finish gracefully: in-flight requests
//! complete, keep-alive ends. `kill` (the grace period ran out) drops whatever is left.

pub mod access;
pub mod api_lines;
pub mod client;
pub mod conn;
pub mod fast;
pub mod front;
pub mod identity;
pub mod ids;
pub mod kube_api;
pub mod linger;
pub mod node_api;
pub mod pod_headers;
pub mod podcall;
pub mod reply;
pub mod rewind;
pub mod routes;
pub mod sessions;
pub mod upgrades;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::Response;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, debug_span, info, warn};

use self::client::{Client, Front};
use self::conn::{HEADER_READ_TIMEOUT, InFlight, first_byte, idle_for};
use self::identity::ClientIdentity;
use self::rewind::Rewind;
use crate::metrics::ListenerLabels;
use crate::proxy::Body;
use crate::runtime::{Shared, Signal};
use crate::workers;

/// How long a client has to finish its TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// HTTP/2 streams a client may open at once on one connection.
const H2_MAX_CONCURRENT_STREAMS: u32 = 256;
/// HTTP/2 keep-alive: ping after this much silence, close if the ping is not answered.
const H2_KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(30);
const H2_KEEP_ALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// The connection limit of a listener that does not set `max_connections`: half the soft
/// descriptor limit (the rest is for upstream connections, files and the runtime) split
/// over `listeners`, at least 64.
#[allow(
    unsafe_code,
    reason = "getrlimit(2) has no wrapper in std; it only writes the struct we own"
)]
pub fn default_max_connections(listeners: usize) -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
    } else {
        1024
    };
    (soft / 2 / listeners.max(1)).max(64)
}

/// Raises the soft descriptor limit to the hard one, as nginx and Envoy deployments do, so
/// the connection limits are not the distribution's default of 1024. Returns (old, new).
#[allow(
    unsafe_code,
    reason = "getrlimit/setrlimit(2) have no wrapper in std; they only touch the struct we own"
)]
pub fn raise_nofile_limit() -> std::io::Result<(libc::rlim_t, libc::rlim_t)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let old = limit.rlim_cur;
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok((old, limit.rlim_cur))
    }
}

/// Accepts on `socket` until `stop` is cancelled. Returns when the socket is closed; the
/// connections it started are tracked by `shared.tasks`.
pub async fn serve(
    name: Arc<str>,
    socket: TcpListener,
    shared: Arc<Shared>,
    slots: Arc<Semaphore>,
    stop: CancellationToken,
) {
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    http.http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(H2_MAX_CONCURRENT_STREAMS)
        .keep_alive_interval(Some(H2_KEEP_ALIVE_INTERVAL))
        .keep_alive_timeout(H2_KEEP_ALIVE_TIMEOUT);
    let http = Arc::new(http);
    let worker = workers::current_index();
    if let Ok(addr) = socket.local_addr() {
        info!(listener = %name, %addr, worker, "listening");
    }
    let labels = ListenerLabels {
        listener: name.to_string(),
    };
    // `stop` as the fast path checks it at every request; fired once the loop below ends,
    // which it does only when `stop` is cancelled.
    let draining = Signal::default();
    loop {
        // Every serving thread has its own socket (SO_REUSEPORT) and the kernel picks which
        // one a client lands on, so no thread may hold a slot while it waits in accept:
        // each waits until a slot is free, accepts, then takes one (if another thread took
        // it first, the accepted client waits unserved, at most one per thread).
        if slots.available_permits() == 0 {
            shared
                .metrics
                .listener_saturated
                .get_or_create(&labels)
                .inc();
            debug!(listener = %name, "at max_connections; not accepting until one closes");
            tokio::select! {
                _ = stop.cancelled() => break,
                free = slots.acquire() => drop(free),
            }
        }
        let (stream, peer) = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = socket.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning on the error.
                    warn!(listener = %name, error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let permit = match slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                shared
                    .metrics
                    .listener_saturated
                    .get_or_create(&labels)
                    .inc();
                tokio::select! {
                    _ = stop.cancelled() => break,
                    permit = slots.clone().acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break,
                    },
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let conn = Connection {
            listener: name.clone(),
            peer,
            shared: shared.clone(),
            http: http.clone(),
            stop: stop.clone(),
            draining: draining.clone(),
            _slot: permit,
        };
        // A debug span: made at every accept, an info one was the largest single cost of
        // an exec's setup (its fields formatted, its slot taken, all cold). The warnings
        // a connection can log name the listener and peer themselves (`proxy::Exchange`).
        let span = debug_span!("conn", listener = %name, peer = %peer);
        shared.tasks.spawn(conn.run(stream).instrument(span));
    }
    draining.fire();
    info!(listener = %name, worker, "stopped accepting");
}

/// What reads a connection's first request.
#[derive(Clone, Copy)]
enum First {
    Hyper,
    /// A routes listener's HTTP/1.1 fast path (`fast`).
    FastPath,
    /// A node-API or kube-API listener's upgrades read in place (`upgrades`).
    Upgrade,
}

struct Connection {
    listener: Arc<str>,
    peer: SocketAddr,
    shared: Arc<Shared>,
    http: Arc<auto::Builder<TokioExecutor>>,
    stop: CancellationToken,
    /// Fired when `stop` is cancelled.
    draining: Signal,
    /// This connection's place in the listener's `max_connections`; freed on drop.
    _slot: OwnedSemaphorePermit,
}

impl Connection {
    async fn run(self, stream: TcpStream) {
        let labels = ListenerLabels {
            listener: self.listener.to_string(),
        };
        self.shared.metrics.connections.get_or_create(&labels).inc();
        let active = self
            .shared
            .metrics
            .active_connections
            .get_or_create(&labels)
            .clone();
        active.inc();

        let (tls, timeouts, front, first) = {
            let snapshot = self.shared.snapshot.load();
            let listener = snapshot.listeners.get(&*self.listener);
            let tls = listener.and_then(|l| l.tls.clone());
            let front = listener.map_or(Front::Routes, |l| Front::of(l.config.kind));
            let first = match front {
                _ if !listener.is_some_and(|l| l.config.http1_fast_path) => First::Hyper,
                Front::Routes => First::FastPath,
                Front::NodeApi | Front::KubeApi => First::Upgrade,
            };
            (tls, snapshot.config.timeouts, front, first)
        };
        // The first byte (ClientHello or request) must come within `first_byte`.
        if !first_byte(&stream, timeouts.first_byte).await {
            active.dec();
            return;
        }
        let idle = timeouts.client_idle;
        match tls {
            None => {
                let client = self.client(None, None, front);
                self.serve(stream, client, first, idle).await
            }
            Some(config) => {
                let acceptor = tokio_rustls::TlsAcceptor::from(config);
                match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => {
                        // Verified against `client_ca` by the handshake; read once here.
                        let session = tls.get_ref().1;
                        let identity = session
                            .peer_certificates()
                            .and_then(|chain| chain.first())
                            .and_then(|leaf| ClientIdentity::of_certificate(leaf));
                        // A client that chose HTTP/2 by ALPN is hyper's from the start.
                        let first = match session.alpn_protocol() {
                            Some(b"h2") => First::Hyper,
                            _ => first,
                        };
                        let handshake = client::Handshake::of(session);
                        let client = self.client(Some(handshake), identity, front);
                        self.serve(tls, client, first, idle).await
                    }
                    Ok(Err(e)) => debug!(error = %e, "TLS handshake failed"),
                    Err(_) => debug!("TLS handshake timed out"),
                }
            }
        }
        active.dec();
    }

    /// The client end of this connection, shared by its requests.
    fn client(
        &self,
        handshake: Option<client::Handshake>,
        identity: Option<Arc<ClientIdentity>>,
        front: Front,
    ) -> Arc<Client> {
        Arc::new(Client::new(
            self.listener.clone(),
            self.peer,
            handshake,
            identity,
            self.shared.clone(),
            front,
        ))
    }

    /// Serves `io` on the path `first` names while it takes the requests, then on hyper
    /// from the first request it does not take.
    async fn serve<I>(self, mut io: I, client: Arc<Client>, first: First, idle: Duration)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let killed = self.shared.killed.waiter();
        let draining = self.draining.waiter();
        let (io, unread, answer) = match first {
            First::Hyper => (io, Vec::new(), None),
            First::FastPath => tokio::select! {
                biased;
                ended = fast::serve(&mut io, &client, &draining, idle) => match ended {
                    fast::Ended::Closed => return,
                    fast::Ended::Unread => return linger::linger(io, killed.fired()).await,
                    fast::Ended::ToHyper(unread) => (io, unread, None),
                },
                () = killed.fired() => return,
            },
            First::Upgrade => {
                tokio::select! {
                    biased;
                    ended = upgrades::serve(io, &client, &draining, HEADER_READ_TIMEOUT) => match ended {
                        upgrades::Ended::Done => return,
                        upgrades::Ended::ToHyper { io, unread, answer } => (io, unread, answer),
                    },
                    () = killed.fired() => return,
                }
            }
        };
        let slot = linger::Slot::default();
        let io = linger::Handback::new(Rewind::new(unread, io), client.clone(), &slot);
        let kill = self.shared.kill.clone();
        let preface = self
            .serve_http(TokioIo::new(io), client, idle, answer)
            .await;
        if let Some(mut io) = slot.take() {
            if preface {
                use tokio::io::AsyncWriteExt;
                let _ = io.write_all(&fast::preface_refusal()).await;
            }
            linger::linger(io, kill.cancelled()).await;
        }
    }

    /// Serves HTTP on `io` with hyper. With `answer`, the first request hyper reads was
    /// answered already (`upgrades`): the service hands hyper that answer to write.
    /// True when hyper stopped at an HTTP/2 preface after HTTP/1.1 requests, which it
    /// closes on without an answer: the caller writes the fast path's 400
    /// (`fast::preface_refusal`) before the connection lingers.
    async fn serve_http<I>(
        self,
        io: TokioIo<I>,
        client: Arc<Client>,
        idle: Duration,
        answer: Option<Response<Body>>,
    ) -> bool
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let in_flight = Arc::new(InFlight::default());
        let counter = in_flight.clone();
        let answer = answer.map(|res| std::sync::Mutex::new(Some(res)));
        let this_client = client.clone();
        let svc = hyper::service::service_fn(move |req| {
            let ready = answer.as_ref().and_then(|a| a.lock().ok()?.take());
            counter.track(front::Answer::new(ready, || {
                front::handle(req, client.clone())
            }))
        });
        let conn = self.http.serve_connection_with_upgrades(io, svc);
        tokio::pin!(conn);
        let kill = self.shared.kill.clone();
        let result = tokio::select! {
            r = conn.as_mut() => r,
            _ = idle_for(&in_flight, idle) => {
                debug!(timeout = ?idle, "idle; closing");
                conn.as_mut().graceful_shutdown();
                tokio::select! {
                    r = conn.as_mut() => r,
                    _ = kill.cancelled() => Ok(()),
                }
            }
            _ = self.stop.cancelled() => {
                conn.as_mut().graceful_shutdown();
                tokio::select! {
                    r = conn.as_mut() => r,
                    _ = kill.cancelled() => Ok(()),
                }
            }
            _ = kill.cancelled() => Ok(()),
        };
        let Err(e) = result else {
            return false;
        };
        // hyper answered a head it could not take (its 400, its 431) and stopped
        // reading: what the client sent after it is unread. The stream is dropped with
        // `conn`, after this.
        let parse = e.downcast_ref::<hyper::Error>();
        if parse.is_some_and(hyper::Error::is_parse) {
            this_client.ends_unread();
        }
        debug!(error = %e, "connection ended with an error");
        parse.is_some_and(hyper::Error::is_parse_version_h2)
    }
}
