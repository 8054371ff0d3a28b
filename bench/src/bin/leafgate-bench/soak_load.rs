//! The soak's load and changes (see `soak.rs`): each loop runs until the soak's deadline
//! or its own count cap, whichever comes first, against 127.0.0.1 only, and tallies what
//! it saw in [`Tally`]. A failure is an injected fault when it is the faulty plugin's
//! refusal (a `502` naming the pod router, on a `trap-` pod) or when it overlapped a leaf's
//! restart window ([`Restarts`]); anything else is unexpected, and kept (the first few
//! messages) for the report.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kubesim::client::spdy_exec;
use kubesim::{KubeSim, Store};
use leafgate_tests::backends::read_head;
use leafgate_tests::ingress::simple_ingress;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Every call and change one loop may make at most, whatever the deadline.
const MAX_CALLS: u64 = 1_000_000;
/// How long any one call may take before it counts as failed.
const CALL_DEADLINE: Duration = Duration::from_secs(15);
/// One in this many pod calls names a `trap-` pod, which the faulty pod router traps on.
pub const TRAP_EVERY: u64 = 100;
/// The namespace of the soak's pods.
pub const NS: &str = "soak";
/// The namespace of the root's Ingresses (no tenant owns it).
pub const INGRESS_NS: &str = "web";

/// What the load kinds did: per kind, calls that succeeded and that failed.
#[derive(Default)]
pub struct Tally {
    pub kinds: [(AtomicU64, AtomicU64); KINDS.len()],
    /// Failures of a `trap-` call that were the pod router's refusal.
    pub plugin_faults: AtomicU64,
    /// Failures that overlapped a leaf restart.
    pub restart_faults: AtomicU64,
    pub unexpected: AtomicU64,
    /// The first unexpected failures, as text.
    pub examples: Mutex<Vec<String>>,
}

/// The load kinds, in the CSV's and the report's order.
pub const KINDS: [&str; 7] = [
    "http1",
    "h2",
    "websocket",
    "kube_watch",
    "kube_exec",
    "kube_log_follow",
    "node_exec",
];

impl Tally {
    pub fn ok(&self, kind: usize) {
        self.kinds[kind].0.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a failure, classified (see the module).
    fn failed(&self, kind: usize, why: Fault, what: String) {
        self.kinds[kind].1.fetch_add(1, Ordering::Relaxed);
        let counter = match why {
            Fault::Plugin => &self.plugin_faults,
            Fault::Restart => &self.restart_faults,
            Fault::Unexpected => &self.unexpected,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if why == Fault::Unexpected {
            let mut examples = self.examples.lock().unwrap();
            if examples.len() < 20 {
                examples.push(format!("{}: {what}", KINDS[kind]));
            }
        }
    }

    pub fn calls(&self, kind: usize) -> (u64, u64) {
        let (ok, err) = &self.kinds[kind];
        (ok.load(Ordering::Relaxed), err.load(Ordering::Relaxed))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    Plugin,
    Restart,
    Unexpected,
}

/// The leaf restarts' windows: an even epoch outside one, odd inside. A call that saw the
/// epoch change, or ran inside a window, overlapped a restart.
#[derive(Default)]
pub struct Restarts {
    epoch: AtomicU64,
    pub count: AtomicU64,
}

impl Restarts {
    fn now(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }

    fn overlapped(&self, started: u64) -> bool {
        let now = self.now();
        now != started || now % 2 == 1
    }
}

/// What every loop shares: where to call, with what, until when, and the tallies.
pub struct Load {
    pub web: SocketAddr,
    pub kube: SocketAddr,
    pub node: SocketAddr,
    /// The kube-api and node-api client identity (trusting the soak's CA), without ALPN
    /// and with `h2`.
    pub tls: Arc<rustls::ClientConfig>,
    pub tls_h2: Arc<rustls::ClientConfig>,
    pub token: String,
    pub until: Instant,
    pub tally: Tally,
    pub restarts: Restarts,
    /// The pods calls name (on the first leaf, beside `trap-0`: the faulty router sends
    /// every pod to the first leaf).
    pub pods: Vec<String>,
}

impl Load {
    fn going(&self, n: u64) -> bool {
        n < MAX_CALLS && Instant::now() < self.until
    }

    /// The pod the `n`th pod call names: a `trap-` pod once in [`TRAP_EVERY`].
    fn pod(&self, n: u64) -> &str {
        if n % TRAP_EVERY == TRAP_EVERY - 1 {
            "trap-0"
        } else {
            &self.pods[n as usize % self.pods.len()]
        }
    }

    /// Runs `call` under the deadline and tallies it as `kind`; `trap` says whether it named
    /// a `trap-` pod, whose refusal by the pod router is the injected fault.
    async fn tally<F>(&self, kind: usize, trap: bool, call: F)
    where
        F: std::future::Future<Output = Result<(), String>>,
    {
        let epoch = self.restarts.now();
        let result = tokio::time::timeout(CALL_DEADLINE, call)
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {CALL_DEADLINE:?}")));
        match result {
            Ok(()) => self.tally.ok(kind),
            Err(e) => {
                let why = if trap && e.contains("502") && e.contains("pod router") {
                    Fault::Plugin
                } else if self.restarts.overlapped(epoch) {
                    Fault::Restart
                } else {
                    Fault::Unexpected
                };
                self.tally.failed(kind, why, e);
            }
        }
    }
}

/// `GET`s over one kept-alive HTTP/1.1 connection (opened again after a failure),
/// alternating a config route and an Ingress route, `pause` apart.
pub async fn http1(load: Arc<Load>, pause: Duration) {
    let mut sender = None;
    let mut n = 0;
    while load.going(n) {
        let host = if n % 2 == 0 { "app.soak" } else { "ing.soak" };
        load.tally(0, false, async {
            if sender.as_ref().is_none_or(
                |s: &hyper::client::conn::http1::SendRequest<Empty<Bytes>>| s.is_closed(),
            ) {
                let tcp = TcpStream::connect(load.web)
                    .await
                    .map_err(|e| e.to_string())?;
                let (s, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                    .await
                    .map_err(|e| e.to_string())?;
                tokio::spawn(conn);
                sender = Some(s);
            }
            let s = sender.as_mut().unwrap();
            let got = get(s, host).await;
            if got.is_err() {
                sender = None;
            }
            got
        })
        .await;
        n += 1;
        tokio::time::sleep(pause).await;
    }
}

/// One `GET` for `host` on a connection of its own.
pub async fn get_once(web: SocketAddr, host: &str) -> Result<(), String> {
    let tcp = TcpStream::connect(web).await.map_err(|e| e.to_string())?;
    let (mut s, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    get(&mut s, host).await
}

async fn get(
    sender: &mut hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    host: &str,
) -> Result<(), String> {
    sender.ready().await.map_err(|e| e.to_string())?;
    let req = http::Request::get("/soak")
        .header("host", host)
        .body(Empty::new())
        .unwrap();
    let res = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = res.status();
    res.into_body().collect().await.map_err(|e| e.to_string())?;
    if status != 200 {
        return Err(format!("{host}: {status}"));
    }
    Ok(())
}

/// `GET`s as HTTP/2 with prior knowledge over one connection, `streams` at once, a new
/// connection every 200 rounds.
pub async fn h2(load: Arc<Load>, streams: usize, pause: Duration) {
    let mut n = 0u64;
    let mut sender: Option<hyper::client::conn::http2::SendRequest<Empty<Bytes>>> = None;
    while load.going(n) {
        if n % 200 == 0 || sender.as_ref().is_none_or(|s| s.is_closed()) {
            sender = None;
            if let Ok(tcp) = TcpStream::connect(load.web).await
                && let Ok((s, conn)) =
                    hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
                        .await
            {
                tokio::spawn(conn);
                sender = Some(s);
            }
        }
        let calls = (0..streams).map(|_| {
            let sender = sender.clone();
            let load = &load;
            async move {
                load.tally(1, false, async {
                    let mut s = sender.ok_or("no HTTP/2 connection")?;
                    s.ready().await.map_err(|e| e.to_string())?;
                    let req = http::Request::get("http://app.soak/soak")
                        .body(Empty::new())
                        .unwrap();
                    let res = s.send_request(req).await.map_err(|e| e.to_string())?;
                    let status = res.status();
                    res.into_body().collect().await.map_err(|e| e.to_string())?;
                    if status != 200 {
                        return Err(format!("h2: {status}"));
                    }
                    Ok(())
                })
                .await
            }
        });
        futures_join(calls).await;
        n += 1;
        tokio::time::sleep(pause).await;
    }
}

/// Awaits every future of `calls` at once.
async fn futures_join<F: std::future::Future<Output = ()>>(calls: impl Iterator<Item = F>) {
    let mut set = Vec::new();
    for call in calls {
        set.push(Box::pin(call));
    }
    for call in set {
        call.await;
    }
}

/// WebSocket upgrades through the route to the upstream's echo: open, one masked frame
/// echoed byte for byte, a close frame, both sides shut.
pub async fn websocket(load: Arc<Load>, pause: Duration) {
    let mut n = 0;
    while load.going(n) {
        load.tally(2, false, ws_once(load.web, n)).await;
        n += 1;
        tokio::time::sleep(pause).await;
    }
}

async fn ws_once(addr: SocketAddr, n: u64) -> Result<(), String> {
    let mut stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let req = "GET /upgrade-echo HTTP/1.1\r\nHost: ws.soak\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
               Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
    stream
        .write_all(req.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let head = read_head(&mut stream).await.ok_or("no answer")?;
    if !head.starts_with("HTTP/1.1 101") {
        return Err(head.lines().next().unwrap_or("").to_string());
    }
    let mask = [0x12, 0x34, 0x56, 0x78];
    let payload = format!("soak {n}");
    let mut frame = vec![0x81, 0x80 | payload.len() as u8];
    frame.extend_from_slice(&mask);
    frame.extend(payload.bytes().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    stream.write_all(&frame).await.map_err(|e| e.to_string())?;
    let mut back = vec![0u8; frame.len()];
    stream
        .read_exact(&mut back)
        .await
        .map_err(|e| e.to_string())?;
    if back != frame {
        return Err("the echo differs".into());
    }
    // A close frame (masked, no payload), then our side shut; the echo ends its own.
    stream
        .write_all(&[0x88, 0x80, 1, 2, 3, 4])
        .await
        .map_err(|e| e.to_string())?;
    stream.shutdown().await.map_err(|e| e.to_string())?;
    let mut rest = Vec::new();
    stream
        .read_to_end(&mut rest)
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// A TLS connection to `addr` with `tls`.
async fn connect_tls(
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    tokio_rustls::TlsConnector::from(tls.clone())
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .map_err(|e| e.to_string())
}

/// Pod watches through the kube-api front over HTTP/2: opened, the first event read, held
/// for a moment, dropped.
pub async fn kube_watch(load: Arc<Load>, hold: Duration) {
    let mut n = 0;
    while load.going(n) {
        load.tally(3, false, async {
            let tls = connect_tls(load.kube, &load.tls_h2).await?;
            let (mut s, conn) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                    .await
                    .map_err(|e| e.to_string())?;
            let conn = tokio::spawn(conn);
            let req = http::Request::get(format!("/api/v1/namespaces/{NS}/pods?watch=true"))
                .header("host", load.kube.to_string())
                .header("authorization", format!("Bearer {}", load.token))
                .body(Empty::<Bytes>::new())
                .unwrap();
            let res = s.send_request(req).await.map_err(|e| e.to_string())?;
            if res.status() != 200 {
                return Err(format!("watch: {}", res.status()));
            }
            let mut body = res.into_body();
            let first = body
                .frame()
                .await
                .ok_or("the watch ended before an event")?;
            first.map_err(|e| e.to_string())?;
            tokio::time::sleep(hold).await;
            drop(body);
            drop(s);
            conn.abort();
            Ok(())
        })
        .await;
        n += 1;
    }
}

/// A pod's exec through `addr` at `path` (SPDY, as the API server sends it), its stdout
/// checked; `auth` for the kube-api front.
async fn exec_once(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    path: &str,
    auth: Option<&str>,
) -> Result<(), String> {
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", *a)).collect();
    let out = spdy_exec(addr, tls, path, &headers, b"")
        .await
        .map_err(|e| e.to_string())?;
    if let Some(refused) = out.refused {
        return Err(format!("{} {}", refused.status, refused.body_text()));
    }
    if out.stdout != b"soak\n" {
        return Err(format!("stdout {:?}", String::from_utf8_lossy(&out.stdout)));
    }
    Ok(())
}

/// Execs of `echo soak` through the kube-api front, a tenant's bearer token, `pause` apart.
pub async fn kube_exec(load: Arc<Load>, pause: Duration) {
    let auth = format!("Bearer {}", load.token);
    let mut n = 0;
    while load.going(n) {
        let pod = load.pod(n);
        let path = format!(
            "/api/v1/namespaces/{NS}/pods/{pod}/exec?container=main&stdout=true&command=echo&command=soak"
        );
        let call = exec_once(load.kube, load.tls.clone(), &path, Some(&auth));
        load.tally(4, pod.starts_with("trap-"), call).await;
        n += 1;
        tokio::time::sleep(pause).await;
    }
}

/// Execs of `echo soak` through the node API (the root API server's client certificate).
pub async fn node_exec(load: Arc<Load>, pause: Duration) {
    let mut n = 0;
    while load.going(n) {
        let pod = load.pod(n);
        let path = format!("/exec/{NS}/{pod}/main?output=1&command=echo&command=soak");
        let call = exec_once(load.node, load.tls.clone(), &path, None);
        load.tally(6, pod.starts_with("trap-"), call).await;
        n += 1;
        tokio::time::sleep(pause).await;
    }
}

/// Log follows through the kube-api front: a line appended to the pod's log, the follow
/// opened (its last line), read until a line arrives, then dropped.
pub async fn kube_log_follow(load: Arc<Load>, pods: Store, pause: Duration) {
    let auth = format!("Bearer {}", load.token);
    let mut n = 0;
    while load.going(n) {
        let pod = load.pod(n).to_string();
        pods.append_log(NS, &pod, "main", &format!("line {n}"));
        let call = async {
            let tls = connect_tls(load.kube, &load.tls).await?;
            let (mut s, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                .await
                .map_err(|e| e.to_string())?;
            let conn = tokio::spawn(conn);
            let req = http::Request::get(format!(
                "/api/v1/namespaces/{NS}/pods/{pod}/log?container=main&follow=true&tailLines=1"
            ))
            .header("host", load.kube.to_string())
            .header("authorization", &auth)
            .body(Empty::<Bytes>::new())
            .unwrap();
            let res = s.send_request(req).await.map_err(|e| e.to_string())?;
            let status = res.status();
            let mut body = res.into_body();
            if status != 200 {
                let text = body
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                return Err(format!("{status} {}", String::from_utf8_lossy(&text)));
            }
            let mut got = Vec::new();
            while !got.contains(&b'\n') {
                let frame = body
                    .frame()
                    .await
                    .ok_or("the follow ended before a line")?
                    .map_err(|e| e.to_string())?;
                if let Ok(data) = frame.into_data() {
                    got.extend_from_slice(&data);
                }
            }
            conn.abort();
            Ok(())
        };
        load.tally(5, pod.starts_with("trap-"), call).await;
        n += 1;
        tokio::time::sleep(pause).await;
    }
}

/// Ingress churn in the root: every `every`, one Ingress created (its own host, to the
/// upstream's Service) and the one made `keep` rounds before deleted.
pub async fn ingress_churn(load: Arc<Load>, root: Arc<KubeSim>, every: Duration, keep: u64) {
    let mut n = 0;
    while load.going(n) {
        let name = format!("churn-{n}");
        root.create(simple_ingress(
            INGRESS_NS,
            &name,
            "leafgate",
            &format!("{name}.soak"),
            "main",
        ))
        .expect("an Ingress the root takes");
        if n >= keep {
            root.delete(
                "networking.k8s.io/v1",
                "Ingress",
                INGRESS_NS,
                &format!("churn-{}", n - keep),
            )
            .expect("the Ingress made before");
        }
        n += 1;
        tokio::time::sleep(every).await;
    }
}

/// A reload every `every`: the config rewritten (temp file, rename) with the `reload.soak`
/// route's body changed, as config management writes it. Returns the reloads written.
pub async fn reloads(
    load: Arc<Load>,
    path: PathBuf,
    config: impl Fn(u64) -> String,
    every: Duration,
) -> u64 {
    let mut n = 0;
    while load.going(n) {
        tokio::time::sleep(every).await;
        n += 1;
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, config(n)).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }
    n
}

/// Stops `leaf`, leaves it down a second, and starts it again on its port; returns once
/// `synced` says leafgate has it again (or after 60 s).
async fn restart<S, F>(leaf: &mut KubeSim, synced: &S)
where
    S: Fn() -> F,
    F: std::future::Future<Output = bool>,
{
    leaf.stop().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    leaf.restart().await.expect("the leaf serves again");
    let started = Instant::now();
    while !synced().await && started.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One of each change, before the baseline: an Ingress made, served and deleted; a reload;
/// `leaf` restarted until leafgate has it again. What a change makes once and then keeps
/// (a restarted leaf's new connections and their pools' upkeep, what a reload rebuilds) is
/// in the baseline then, and what the soak's changes leave behind each time still counts.
pub async fn one_of_each_change<S, F>(
    web: SocketAddr,
    root: &KubeSim,
    leaf: &mut KubeSim,
    config: (PathBuf, String),
    synced: S,
) where
    S: Fn() -> F,
    F: std::future::Future<Output = bool>,
{
    let (name, host) = ("warm-up", "warm-up.soak");
    root.create(simple_ingress(INGRESS_NS, name, "leafgate", host, "main"))
        .expect("an Ingress the root takes");
    let started = Instant::now();
    while let Err(e) = get_once(web, host).await {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{host} was not served: {e}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    root.delete("networking.k8s.io/v1", "Ingress", INGRESS_NS, name)
        .expect("the warm-up Ingress");
    let (path, text) = config;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    restart(leaf, &synced).await;
}

/// Restarts `leaf` every `every`, the first time after half of that (so that a 2-minute
/// soak has one too): stopped, a second down, serving again on its port. The window stays
/// open until `synced` says leafgate has the leaf again, plus `grace`. Gives the leaf back
/// at the end.
pub async fn leaf_restarts<S, F>(
    load: Arc<Load>,
    mut leaf: KubeSim,
    every: Duration,
    grace: Duration,
    synced: S,
) -> KubeSim
where
    S: Fn() -> F,
    F: std::future::Future<Output = bool>,
{
    let mut n = 0;
    // No restart in the load's last 20 s: the window must close before it ends.
    let last = load
        .until
        .checked_sub(Duration::from_secs(20))
        .unwrap_or(load.until);
    let mut next = Instant::now() + every / 2;
    loop {
        tokio::time::sleep_until(next.min(last).into()).await;
        if next > last || !load.going(n) {
            return leaf;
        }
        n += 1;
        next += every;
        load.restarts.epoch.fetch_add(1, Ordering::SeqCst);
        restart(&mut leaf, &synced).await;
        tokio::time::sleep(grace).await;
        load.restarts.epoch.fetch_add(1, Ordering::SeqCst);
        load.restarts.count.fetch_add(1, Ordering::Relaxed);
    }
}
