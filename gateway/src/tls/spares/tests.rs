//! Spares against a real TLS server on 127.0.0.1:0 that counts what it sees: accepted
//! connections, completed and resumed handshakes, requests, and connections that ended.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::*;
use crate::tls::{Verify, client_config, https_connector};

#[derive(Default)]
struct Counts {
    accepts: AtomicUsize,
    handshakes: AtomicUsize,
    resumed: AtomicUsize,
    requests: AtomicUsize,
    ended: AtomicUsize,
    /// For each request, the connection it came on (1: the first accepted).
    served_on: std::sync::Mutex<Vec<usize>>,
}

/// A TLS server answering every request head with `200 ok`, which can drop every open
/// connection at once (a restart as its clients see it).
struct Server {
    addr: SocketAddr,
    counts: Arc<Counts>,
    cert: CertificateDer<'static>,
    drop_all: watch::Sender<u64>,
}

impl Server {
    async fn start() -> Server {
        let (config, cert) = tls_server();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let counts = Arc::new(Counts::default());
        let (drop_all, generation) = watch::channel(0u64);
        let c = counts.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let n = c.accepts.fetch_add(1, Ordering::SeqCst) + 1;
                let (acceptor, c, mut generation) =
                    (acceptor.clone(), c.clone(), generation.clone());
                generation.mark_unchanged();
                tokio::spawn(async move {
                    tokio::select! {
                        () = serve(acceptor, tcp, &c, n) => {}
                        _ = generation.changed() => {}
                    }
                    c.ended.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        Server {
            addr,
            counts,
            cert,
            drop_all,
        }
    }

    fn uri(&self) -> Uri {
        format!("https://{}", self.addr).parse().unwrap()
    }

    fn served_on(&self) -> Vec<usize> {
        self.counts.served_on.lock().unwrap().clone()
    }

    fn count(&self, which: fn(&Counts) -> &AtomicUsize) -> usize {
        which(&self.counts).load(Ordering::SeqCst)
    }

    fn connector(&self) -> HttpsConnector {
        connector_trusting(self.cert.clone())
    }

    fn spares(&self, policy: Policy) -> Spares {
        Spares::new(self.connector(), &self.uri(), policy)
    }

    /// Spares under `policy` with one ready: a first stream found none, and its start was
    /// the demand the keeper answered.
    async fn one_spare_ready(&self, policy: Policy) -> Spares {
        let spares = self.spares(policy);
        assert!(spares.take().is_none(), "a new pool has no spare");
        until("a spare is ready", || spares.ready() == 1).await;
        spares
    }
}

/// A TLS server config for `127.0.0.1` with a new self-signed certificate, and that
/// certificate.
fn tls_server() -> (rustls::ServerConfig, CertificateDer<'static>) {
    let key = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = key.cert.der().clone();
    let private = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.signing_key.serialize_der()));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.clone()], private)
    .unwrap();
    (config, cert)
}

/// A connector that trusts `cert` alone.
fn connector_trusting(cert: CertificateDer<'static>) -> HttpsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let config = client_config(Verify::Roots(Arc::new(roots)), None).unwrap();
    https_connector(config, None, Duration::from_secs(5))
}

async fn serve(acceptor: tokio_rustls::TlsAcceptor, tcp: TcpStream, counts: &Counts, n: usize) {
    let Ok(mut tls) = acceptor.accept(tcp).await else {
        return;
    };
    counts.handshakes.fetch_add(1, Ordering::SeqCst);
    if tls.get_ref().1.handshake_kind() == Some(rustls::HandshakeKind::Resumed) {
        counts.resumed.fetch_add(1, Ordering::SeqCst);
    }
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match tls.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        while let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            head.drain(..end + 4);
            counts.requests.fetch_add(1, Ordering::SeqCst);
            counts.served_on.lock().unwrap().push(n);
            if tls
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
                .await
                .is_err()
            {
                return;
            }
        }
    }
}

/// Waits (up to 5 s) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let started = std::time::Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(5), "never: {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// One `GET /` on `io`, its body.
async fn get(io: Io) -> String {
    let (mut sender, conn) = http1::handshake::<_, Empty<Bytes>>(io).await.unwrap();
    tokio::spawn(conn);
    let req = http::Request::get("/")
        .header(http::header::HOST, "server")
        .body(Empty::new())
        .unwrap();
    let res = sender.send_request(req).await.unwrap();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(body.to_vec()).unwrap()
}

#[tokio::test]
async fn a_stream_starts_on_a_spare_dialled_before_it_and_the_spare_is_refilled() {
    let server = Server::start().await;
    let spares = server.spares(Policy::default());
    assert_eq!(
        server.count(|c| &c.accepts),
        0,
        "nothing is dialled before a demand"
    );
    // The first stream finds none ready; its start is the demand the keeper answers.
    assert!(spares.take().is_none());
    until("a spare is ready", || spares.ready() == 1).await;
    assert_eq!(server.count(|c| &c.accepts), 1);

    let io = spares.take().expect("the spare");
    assert_eq!(get(io).await, "ok");
    // The stream ran on the connection dialled before it, and one was dialled behind it
    // to refill.
    assert_eq!(server.served_on(), [1]);
    until("the spare is refilled", || spares.ready() >= 1).await;
    assert_eq!(server.count(|c| &c.accepts), 2);
    assert_eq!(
        server.count(|c| &c.requests),
        1,
        "a spare carries no request"
    );
}

#[tokio::test]
async fn the_keeper_lets_the_stream_that_took_a_spare_go_first() {
    let server = Server::start().await;
    let spares = server.one_spare_ready(Policy::default()).await;

    // A stream takes the spare and hands its request to a task of its own, as hyper's
    // client connection does: that task runs before the keeper's upkeep (here: the
    // refill's dial, which counts in `held` as soon as it starts).
    let _io = spares.take().expect("the spare");
    let request_task = tokio::spawn({
        let spares = spares.clone();
        async move { spares.held() }
    });
    assert_eq!(
        request_task.await.unwrap(),
        0,
        "the keeper ran before the stream's request went out"
    );
    until("the spare is refilled", || spares.ready() == 1).await;
}

#[tokio::test]
async fn a_streams_hold_keeps_the_refill_until_it_drops_and_no_longer_than_the_limit() {
    let server = Server::start().await;
    let spares = server.one_spare_ready(Policy::default()).await;

    // Held: no dial while the stream sets up, however long that takes within the limit.
    let (io, hold) = spares.take_for_stream().expect("the spare");
    tokio::time::sleep(HOLD / 2).await;
    assert_eq!(
        server.count(|c| &c.accepts),
        1,
        "a refill dialled during the hold"
    );
    assert_eq!(get(io).await, "ok");
    // The stream ends: the refill starts at once.
    drop(hold);
    until("the spare is refilled", || spares.ready() == 1).await;
    assert_eq!(server.count(|c| &c.accepts), 2);

    // A stream that outlives the limit leaves the pool short no longer than that.
    let (_io, _hold) = spares.take_for_stream().expect("the refilled spare");
    let taken = std::time::Instant::now();
    until("refilled while the stream still runs", || {
        spares.ready() == 1
    })
    .await;
    assert!(taken.elapsed() >= HOLD, "refilled within the hold");
    assert_eq!(server.count(|c| &c.accepts), 3);
}

#[tokio::test]
async fn spares_close_once_the_demand_is_gone() {
    let server = Server::start().await;
    let spares = server
        .one_spare_ready(Policy {
            idle: Duration::from_millis(300),
            ..Policy::default()
        })
        .await;
    until("the idle spare is closed", || spares.ready() == 0).await;
    until("the server sees it end", || server.count(|c| &c.ended) == 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.count(|c| &c.accepts), 1, "no demand, no new spare");
}

#[tokio::test]
async fn a_spare_past_its_life_is_replaced_while_the_demand_lasts() {
    let server = Server::start().await;
    let spares = server
        .one_spare_ready(Policy {
            life: Duration::from_millis(200),
            ..Policy::default()
        })
        .await;
    until("the old spare is closed", || {
        server.count(|c| &c.ended) >= 1
    })
    .await;
    until("and replaced", || {
        server.count(|c| &c.accepts) >= 2 && spares.ready() == 1
    })
    .await;
    let io = spares.take().expect("the new spare");
    assert_eq!(get(io).await, "ok");
}

/// The session tickets a spare's TLS client has taken in.
fn tickets_of(io: &Io) -> u32 {
    match io {
        MaybeHttpsStream::Https(tls) => tls.inner().get_ref().1.tls13_tickets_received(),
        MaybeHttpsStream::Http(_) => 0,
    }
}

#[tokio::test]
async fn a_spare_has_taken_in_its_servers_tickets_before_a_stream_takes_it() {
    let server = Server::start().await;
    let spares = server.one_spare_ready(Policy::default()).await;
    let pooled = {
        let state = lock(&spares.group.pools[spares.index].state);
        tickets_of(&state.ready[0].io)
    };
    assert!(
        pooled >= 1,
        "the spare was pooled before its server's tickets"
    );
    let io = spares.take().expect("the spare");
    assert_eq!(get(io).await, "ok");
}

#[tokio::test]
async fn a_new_connection_the_server_writes_on_or_closes_is_no_spare() {
    let (mut config, cert) = tls_server();
    // The server sends no tickets, so nothing but what it does next settles the spare.
    config.send_tls13_tickets = 0;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        // The first connection is greeted before any request; the second closed at once;
        // the third left alone.
        let mut kept = Vec::new();
        for n in 0.. {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                continue;
            };
            match n {
                0 => tls
                    .write_all(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
                    .await
                    .unwrap(),
                1 => tls.shutdown().await.unwrap(),
                _ => {}
            }
            kept.push(tls);
        }
    });
    let spares = Spares::new(
        connector_trusting(cert),
        &format!("https://{addr}").parse().unwrap(),
        Policy::default(),
    );
    let within = Duration::from_secs(2);
    let mut greeted = spares.dial().await.unwrap();
    assert!(!settle(&mut greeted, within).await, "a greeted connection");
    let mut closed = spares.dial().await.unwrap();
    assert!(!settle(&mut closed, within).await, "a closed connection");
    // A silent server without tickets: ready once the wait is over, not before.
    let mut silent = spares.dial().await.unwrap();
    let started = Instant::now();
    assert!(settle(&mut silent, Duration::from_millis(50)).await);
    assert!(started.elapsed() >= Duration::from_millis(50));
}

#[tokio::test]
async fn a_spare_the_server_closed_is_not_handed_out() {
    let server = Server::start().await;
    let spares = server.one_spare_ready(Policy::default()).await;
    server.drop_all.send_modify(|g| *g += 1);
    until("the server dropped it", || server.count(|c| &c.ended) == 1).await;
    // Give the FIN time to arrive (loopback: at once).
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(spares.take().is_none(), "a dead spare was handed out");
    // The stream goes on a fresh connection, which resumes the TLS session.
    let io = spares.dial().await.unwrap();
    assert_eq!(get(io).await, "ok");
}

#[tokio::test]
async fn fresh_dials_resume_the_tls_session() {
    let server = Server::start().await;
    let spares = server.spares(Policy::default());
    let first = spares.dial().await.unwrap();
    // The server's tickets arrive after its handshake; a read takes them in.
    assert_eq!(get(first).await, "ok");
    let second = spares.dial().await.unwrap();
    assert_eq!(get(second).await, "ok");
    assert_eq!(server.count(|c| &c.handshakes), 2);
    assert_eq!(server.count(|c| &c.resumed), 1);
}

#[tokio::test]
async fn a_spare_never_carries_a_request_to_another_server() {
    let (a, b) = (Server::start().await, Server::start().await);
    // One connector trusting both (the same client config dials either).
    let mut roots = rustls::RootCertStore::empty();
    roots.add(a.cert.clone()).unwrap();
    roots.add(b.cert.clone()).unwrap();
    let connector = https_connector(
        client_config(Verify::Roots(Arc::new(roots)), None).unwrap(),
        None,
        Duration::from_secs(5),
    );
    let mut spares = Spares::new(connector, &a.uri(), Policy::default());
    spares.take();
    until("a spare to a is ready", || spares.ready() == 1).await;
    let io = spares.call(b.uri()).await.unwrap();
    assert_eq!(get(io).await, "ok");
    assert_eq!(b.count(|c| &c.requests), 1);
    assert_eq!(a.count(|c| &c.requests), 0);
    assert_eq!(spares.ready(), 1, "a's spare stays a's");
    // A's own URI, with any path, starts on a's spare.
    let io = spares
        .call(format!("https://{}/api/v1/x", a.addr).parse().unwrap())
        .await
        .unwrap();
    assert_eq!(get(io).await, "ok");
    assert_eq!(a.count(|c| &c.requests), 1);
}

#[tokio::test]
async fn a_thread_without_a_spare_takes_a_sibling_s_and_demand_counts_for_all() {
    let server = Server::start().await;
    let pools = Spares::group(server.connector(), &server.uri(), Policy::default(), 2);
    // The first stream is on thread 0: its keeper dials.
    assert!(pools[0].take().is_none());
    until("thread 0 has a spare", || pools[0].ready() == 1).await;
    // A stream on thread 1, whose pool has none yet, starts on thread 0's spare.
    assert_eq!(server.count(|c| &c.accepts), 1);
    let io = pools[1].take().expect("the sibling's spare");
    assert_eq!(get(io).await, "ok");
    assert_eq!(server.served_on(), [1], "the stream ran on the spare");
    // Both threads' keepers now keep spares for the server's demand.
    until("both pools refilled", || {
        pools[0].ready() == 1 && pools[1].ready() == 1
    })
    .await;
}

#[test]
fn the_number_kept_follows_the_start_rate() {
    let spares = Spares::new(
        https_connector(
            client_config(Verify::Nothing, None).unwrap(),
            None,
            Duration::from_secs(1),
        ),
        &"https://127.0.0.1:1".parse().unwrap(),
        Policy::default(),
    );
    let _ = spares;
    let policy = Policy::default();
    let now = Instant::now();
    let mut demand = Demand::default();
    let mut dial_time = Duration::ZERO;
    assert_eq!(
        target(&policy, &demand, dial_time, now),
        0,
        "no demand, no spare"
    );
    demand.last = Some(now);
    demand.recent.push_back(now);
    assert_eq!(
        target(&policy, &demand, dial_time, now),
        1,
        "one start: one spare"
    );
    // 100 starts a second, 20 ms a dial: 2 dialling at any time, and one ready.
    demand.recent = (0..100).map(|_| now).collect();
    dial_time = Duration::from_millis(20);
    assert_eq!(target(&policy, &demand, dial_time, now), 3);
    assert_eq!(
        target(&policy, &demand, Duration::from_secs(1), now),
        policy.max
    );
    // Starts older than the window no longer count; past `idle` nothing is kept.
    let later = now + Duration::from_secs(2);
    assert_eq!(target(&policy, &demand, dial_time, later), 1);
    assert_eq!(target(&policy, &demand, dial_time, now + policy.idle), 0);
}
