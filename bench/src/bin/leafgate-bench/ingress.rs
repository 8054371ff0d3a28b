//! `ingress LEAFGATE INGRESSES ROUNDS`: leafgate as the Ingress controller of a root
//! cluster holding INGRESSES Ingresses (each its own host `i{n}.bench`, its own Service and
//! EndpointSlice), measured from outside as users see it.
//!
//! Starts a kubesim root and two upstreams (`main`, `alt`) in this process, then LEAFGATE
//! (`run`, pinned with `taskset` to the CPUs in `LEAFGATE_CPUS`, default `1`). Figures:
//! - first sync: process start -> the first, middle and last hosts answer from `main`
//!   (polled every 2 ms), then a sweep checks that every host answers (its time is
//!   reported apart, it measures the client);
//! - one change, ROUNDS times each: an Ingress's backend moved to Service `alt` (write ->
//!   that host answers from `alt`), and a new Ingress (write -> its host answers); p50, p90
//!   and max. Each write goes straight into the simulator's store, as the API server
//!   commits it; the time includes the watch event, leafgate's debounce, rebuild and swap.
//!
//! `LEAFGATE_LOG=path` keeps leafgate's stderr there.
//!
//! No `publish_address`: status writes for every Ingress would load the simulator, which
//! shares the client's CPU, and are not what is measured. Prints one JSON object.
//!
//! [`measure`] is the method, shared with `gateway` (HTTPRoutes on one Gateway): the
//! objects, the config, the first sync and the changes; each source says how its objects
//! are written ([`Objects`]).

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use kubesim::{Credential, KubeSim};
use leafgate_tests::TestUpstream;
use leafgate_tests::ingress::{
    backend, backend_objects, ingress_class, path, rule, simple_ingress,
};
use serde_json::json;

use crate::exec::{Gateway, free_port, round};

pub const NS: &str = "bench";

pub async fn run(leafgate: &str, ingresses: usize, rounds: usize) {
    let sim = KubeSim::builder().start().await.unwrap();
    let main = TestUpstream::start("main").await;
    let alt = TestUpstream::start("alt").await;
    sim.create(ingress_class("leafgate", false)).unwrap();
    let listen = free_port();
    let figures = measure(
        leafgate,
        &sim,
        (&main, &alt),
        ingresses,
        rounds,
        &format!(
            "[[listener]]\nname = \"bench\"\nbind = \"127.0.0.1:{listen}\"\n\
             [kubernetes.ingress]\nclass = \"leafgate\"\n\
             allow_backends = [\"127.0.0.0/8\"]\n"
        ),
        listen,
        Objects {
            what: "Ingresses",
            create: &|name, host, svc| {
                sim.create(simple_ingress(NS, name, "leafgate", host, svc))
                    .unwrap();
            },
            move_backend: &|i| {
                sim.patch(
                    "networking.k8s.io/v1",
                    "Ingress",
                    NS,
                    &format!("i{i}"),
                    &json!({"spec": {"rules": [rule(&host(i), vec![path("/", "Prefix", backend("alt", 80))])]}}),
                    false,
                )
                .unwrap();
            },
        },
    )
    .await;
    println!("{}", figures.json("ingresses", "new_ingress_ms"));
}

/// How a bench writes its routing objects into the simulator.
pub struct Objects<'a> {
    /// What they are, for the log.
    pub what: &'a str,
    /// `(name, host, service)`: the object `name` routing `host` to Service `service`.
    pub create: &'a dyn Fn(&str, &str, &str),
    /// Moves object `i{i}`'s backend (the host `host(i)`) to Service `alt`.
    pub move_backend: &'a dyn Fn(usize),
}

/// What [`measure`] measured.
pub struct Figures {
    count: usize,
    first_sync: Duration,
    sweep: Duration,
    rounds: usize,
    moved: Vec<Duration>,
    added: Vec<Duration>,
}

impl Figures {
    /// As JSON: the count under `count`, the new objects' times under `new`.
    pub fn json(self, count: &str, new: &str) -> serde_json::Value {
        let ms = |d: Duration| round(d.as_secs_f64() * 1000.0);
        let mut v = json!({
            "first_sync_ms": ms(self.first_sync),
            "sweep_all_hosts_ms": ms(self.sweep),
            "rounds": self.rounds,
            "backend_change_ms": percentiles(self.moved),
        });
        v[count] = json!(self.count);
        v[new] = percentiles(self.added);
        v
    }
}

/// The provider bench of both sources: `count` objects (each its own host `i{n}.bench`,
/// Service `s{n}` and EndpointSlice, to `main`) and Service `alt` written into `sim`;
/// leafgate started on a config of an admin listener, the root and `tail`, serving at
/// 127.0.0.1:`listen`; the first sync, then `rounds` changes of each kind: a moved backend
/// (`objects.move_backend`, until the host answers from `alt`) and a new object (until its
/// host answers from `alt`).
#[allow(clippy::too_many_arguments, reason = "one bench, said once")]
pub async fn measure(
    leafgate: &str,
    sim: &KubeSim,
    (main, alt): (&TestUpstream, &TestUpstream),
    count: usize,
    rounds: usize,
    tail: &str,
    listen: u16,
    objects: Objects<'_>,
) -> Figures {
    for o in backend_objects(NS, "alt", alt.addr) {
        sim.create(o).unwrap();
    }
    let loading = Instant::now();
    for i in 0..count {
        let svc = format!("s{i}");
        for o in backend_objects(NS, &svc, main.addr) {
            sim.create(o).unwrap();
        }
        (objects.create)(&format!("i{i}"), &host(i), &svc);
    }
    eprintln!(
        "{count} {}, Services and EndpointSlices in the simulator ({:.1} s)",
        objects.what,
        loading.elapsed().as_secs_f64()
    );
    let dir = tempfile::tempdir().unwrap();
    sim.kubeconfig(
        &Credential::ClientCert("leafgate".into()),
        &dir.path().join("root.kubeconfig"),
    )
    .unwrap();
    // The upstreams listen on loopback, which route backends reach only when
    // `allow_backends` (in `tail`) opens it.
    let admin = free_port();
    let config = dir.path().join("leafgate.toml");
    std::fs::write(
        &config,
        format!(
            "[admin]\nbind = \"127.0.0.1:{admin}\"\n\
             [kubernetes]\nkubeconfig = \"root.kubeconfig\"\nidentity = \"bench\"\n{tail}"
        ),
    )
    .unwrap();
    let addr: SocketAddr = ([127, 0, 0, 1], listen).into();
    let (first_sync, sweep, mut client, _gateway) =
        first_sync(leafgate, &config, addr, count).await;

    // One change at a time: a backend moved, then a new object.
    let mut moved = Vec::with_capacity(rounds);
    let mut added = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let i = (r * 7919) % count;
        let written = Instant::now();
        (objects.move_backend)(i);
        moved.push(until(&mut client, &host(i), "alt", written).await);

        let name = format!("new{r}");
        let new_host = format!("{name}.bench");
        let written = Instant::now();
        (objects.create)(&name, &new_host, "alt");
        added.push(until(&mut client, &new_host, "alt", written).await);
    }
    Figures {
        count,
        first_sync,
        sweep,
        rounds,
        moved,
        added,
    }
}

/// Starts LEAFGATE on `config` (pinned with `taskset` to `LEAFGATE_CPUS`, default `1`) and
/// waits until the first, middle and last of `hosts` hosts answer from `main` at `addr`
/// (polled every 2 ms): the first sync; then a sweep checks every host answers from `main`
/// (its time apart: it measures the client). The client and the running gateway go back
/// for the changes.
async fn first_sync(
    leafgate: &str,
    config: &std::path::Path,
    addr: SocketAddr,
    hosts: usize,
) -> (Duration, Duration, Client, Gateway) {
    let cpus = std::env::var("LEAFGATE_CPUS").unwrap_or_else(|_| "1".into());
    let started = Instant::now();
    let mut gateway = Gateway(
        Command::new("taskset")
            .args(["-c", &cpus, leafgate, "run", "--config"])
            .arg(config)
            .stdout(Stdio::null())
            .stderr(leafgate_log())
            .spawn()
            .expect("taskset and leafgate run"),
    );
    let probes = [0, hosts / 2, hosts - 1];
    let mut client = Client::new(addr);
    loop {
        if let Some(status) = gateway.0.try_wait().unwrap() {
            panic!("leafgate exited: {status}");
        }
        let mut all = true;
        for &i in &probes {
            if client.server(&host(i)).await.as_deref() != Some("main") {
                all = false;
                break;
            }
        }
        if all {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the routes were not served within 300 s"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let first_sync = started.elapsed();
    let sweep_started = Instant::now();
    for i in 0..hosts {
        let got = client.server(&host(i)).await;
        assert_eq!(
            got.as_deref(),
            Some("main"),
            "{} after the first sync",
            host(i)
        );
    }
    (first_sync, sweep_started.elapsed(), client, gateway)
}

/// leafgate's stderr: the file `LEAFGATE_LOG` names (to read the provider's per-apply
/// timings), else nowhere.
fn leafgate_log() -> Stdio {
    match std::env::var_os("LEAFGATE_LOG") {
        Some(path) => std::fs::File::create(&path)
            .map(Stdio::from)
            .unwrap_or_else(|e| panic!("LEAFGATE_LOG {}: {e}", path.to_string_lossy())),
        None => Stdio::null(),
    }
}

fn host(i: usize) -> String {
    format!("i{i}.bench")
}

/// From `written` until `host` answers from `server`, polled every 200 µs (10 s at most).
async fn until(client: &mut Client, host: &str, server: &str, written: Instant) -> Duration {
    loop {
        if client.server(host).await.as_deref() == Some(server) {
            return written.elapsed();
        }
        assert!(
            written.elapsed() < Duration::from_secs(10),
            "{host} not served by {server} within 10 s"
        );
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

fn percentiles(mut took: Vec<Duration>) -> serde_json::Value {
    took.sort();
    let pct = |p: f64| {
        round(took[((took.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0)
    };
    json!({"p50": pct(0.5), "p90": pct(0.9), "max": pct(1.0)})
}

/// One kept-alive HTTP/1.1 connection to the gateway, opened again when it fails, so
/// polling measures the gateway rather than connection setup.
struct Client {
    addr: SocketAddr,
    sender: Option<hyper::client::conn::http1::SendRequest<Empty<Bytes>>>,
}

impl Client {
    fn new(addr: SocketAddr) -> Client {
        Client { addr, sender: None }
    }

    /// The upstream that answered `GET /` for `host` (its `server`), None on any other
    /// answer or failure.
    async fn server(&mut self, host: &str) -> Option<String> {
        if self.sender.as_ref().is_none_or(|s| s.is_closed()) {
            let tcp = tokio::net::TcpStream::connect(self.addr).await.ok()?;
            let _ = tcp.set_nodelay(true);
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                .await
                .ok()?;
            tokio::spawn(conn);
            self.sender = Some(sender);
        }
        let sender = self.sender.as_mut()?;
        if sender.ready().await.is_err() {
            self.sender = None;
            return None;
        }
        let req = http::Request::get("/")
            .header("host", host)
            .body(Empty::new())
            .ok()?;
        let res = match sender.send_request(req).await {
            Ok(r) => r,
            Err(_) => {
                self.sender = None;
                return None;
            }
        };
        let ok = res.status() == http::StatusCode::OK;
        let body = res.into_body().collect().await.ok()?.to_bytes();
        if !ok {
            return None;
        }
        let v: serde_json::Value = serde_json::from_slice(&body).ok()?;
        v["server"].as_str().map(str::to_string)
    }
}
