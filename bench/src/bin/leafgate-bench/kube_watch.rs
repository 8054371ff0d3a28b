//! `kube-api-watch LEAFGATE LEAVES WATCHERS SECONDS CHANGES`: what pod watches through the
//! kube-api front cost leafgate, and how fast a change reaches them.
//!
//! Starts LEAVES simulated leaves (kubesim) in this process and LEAFGATE (`run`, pinned to
//! the CPUs in `LEAFGATE_CPUS`, default `1`; this process runs where `bench/kube_api.sh`
//! pins it) with three tenants: `idle` (namespace `idle`, one pod), `alpha` (namespace
//! `a-one`, one pod) and `beta` (`b-*`: 4,000 pods over `b-0`..`b-3`, spread over the
//! leaves). Watches are HTTP/2 (as client-go sends them), several per connection within the
//! tenant's `[tenant.concurrent]` caps, which this config raises. leafgate's CPU is read
//! from `/proc/PID/stat` (user + system ticks of all its threads), as `bench/lib.sh`'s
//! `cpu_ticks` does.
//!
//! - (a) `idle`: WATCHERS watches of `idle` open (each has read its initial ADDED), then
//!   SECONDS of nothing: leafgate's CPU as % of one core.
//! - (c) then CHANGES label changes of the `idle` pod, one at a time: from just before the
//!   simulator's write to each watcher reading the MODIFIED event carrying that change's
//!   mark. Per delivery p50/p99, and per change the time until the last watcher had it.
//! - (b) the `idle` watches closed, `beta`'s pods churn (one label change per 10 ms,
//!   round-robin over its pods and so over the leaves) for SECONDS, first with no watch
//!   open, then with 100 watches of `alpha`'s one-pod namespace: the difference in
//!   leafgate's CPU is what `alpha`'s watchers cost beside the churn. `alpha`'s watchers must
//!   see nothing of it (counted, asserted zero).
//!
//! Bounded: every wait has a deadline, every connection is to 127.0.0.1. Prints one JSON
//! object.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kubesim::{Credential, KubeSim};
use leafgate_tests::certs::TestCa;
use rustls_pki_types::ServerName;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::exec::{Gateway, free_port, round, wait_synced};

/// Watches per HTTP/2 connection: under leafgate's 256 concurrent streams, and the
/// per-connection cap this config sets.
const PER_CONNECTION: usize = 200;
/// `beta`'s pods, and the pace of their churn.
const BETA_PODS: usize = 4000;
const CHURN_EVERY: Duration = Duration::from_millis(10);
/// `alpha`'s watchers during the churn.
const ALPHA_WATCHERS: usize = 100;
/// The mark a change of the `idle` pod carries, followed by its number (4 digits).
const MARK: &str = "lgbench-round-";

fn pod(ns: &str, name: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "bench"}},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "busybox"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1",
                   "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0,
                                          "image": "busybox", "imageID": "", "state": {"running": {}}}]}
    })
}

/// What a watcher tells the bench: its initial event arrived, or change `n`'s did.
enum Seen {
    Ready,
    Change(usize, Instant),
}

pub async fn run(leafgate: &str, leaves: usize, watchers: usize, seconds: u64, changes: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut sims = Vec::new();
    let mut leaf_toml = String::new();
    for l in 0..leaves {
        let sim = KubeSim::builder().start().await.unwrap();
        let file = format!("leaf-{l}.kubeconfig");
        sim.kubeconfig(
            &Credential::ClientCert("leafgate".into()),
            &dir.path().join(&file),
        )
        .unwrap();
        leaf_toml.push_str(&format!(
            "[[leaf]]\nname = \"leaf-{l}\"\nkubeconfig = \"{file}\"\n"
        ));
        sims.push(sim);
    }
    sims[0].create(pod("idle", "idle-0", "node-0")).unwrap();
    sims[leaves - 1]
        .create(pod("a-one", "alpha-0", "node-a"))
        .unwrap();
    let mut beta = Vec::with_capacity(BETA_PODS);
    for i in 0..BETA_PODS {
        let (l, ns, name) = (i % leaves, format!("b-{}", i % 4), format!("beta-{i:05}"));
        sims[l]
            .create(pod(&ns, &name, &format!("node-{l}")))
            .unwrap();
        beta.push((l, ns, name));
    }

    let ca = TestCa::new("bench CA");
    let ca_path = ca.write(dir.path(), "ca.pem");
    ca.issue(dir.path(), "kube-api", &["127.0.0.1"]);
    for t in ["idle", "alpha", "beta"] {
        std::fs::write(
            dir.path().join(format!("{t}.tokens")),
            format!("{t}-token\n"),
        )
        .unwrap();
    }
    let (kube, admin) = (free_port(), free_port());
    let config = dir.path().join("leafgate.toml");
    let total = watchers.max(ALPHA_WATCHERS) + 16;
    let tenant = |name: &str, namespaces: &str| {
        format!(
            "[[tenant]]\nname = \"{name}\"\nnamespaces = {namespaces}\ntokens_file = \"{name}.tokens\"\n[tenant.concurrent]\nwatches = {{ total = {total}, per_connection = {PER_CONNECTION} }}\n"
        )
    };
    std::fs::write(
        &config,
        format!(
            "[admin]\nbind = \"127.0.0.1:{admin}\"\n[[listener]]\nname = \"kube\"\nbind = \"127.0.0.1:{kube}\"\nkind = \"kube-api\"\ntls = {{ cert = \"kube-api.pem\", key = \"kube-api-key.pem\" }}\n{leaf_toml}{}{}{}",
            tenant("idle", "[\"idle\"]"),
            tenant("alpha", "[\"a-one\"]"),
            tenant("beta", "[\"b-*\"]"),
        ),
    )
    .unwrap();
    let mut gateway = Gateway::pinned(leafgate, &config);
    // taskset execs leafgate: the child's pid is leafgate's.
    let pid = gateway.0.id();
    wait_synced(admin, &mut gateway).await;
    let addr: SocketAddr = format!("127.0.0.1:{kube}").parse().unwrap();
    let tls = {
        let client = ca.issue(dir.path(), "client", &["bench-client"]);
        let mut config = kubesim::tls::client_config(
            Some(&std::fs::read_to_string(&ca_path).unwrap()),
            &std::fs::read_to_string(&client.cert).unwrap(),
            &std::fs::read_to_string(&client.key).unwrap(),
        )
        .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec()];
        Arc::new(config)
    };
    let mut out = json!({ "leaves": leaves, "seconds": seconds, "beta_pods": BETA_PODS });

    // (a) idle watches.
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel();
    let opened = Instant::now();
    let idle = open_watches(addr, &tls, "idle", "idle", watchers, &seen_tx).await;
    wait_ready(&mut seen_rx, watchers).await;
    out["idle_watches_open_ms"] = json!(round(opened.elapsed().as_secs_f64() * 1000.0));
    // Let the opening settle before the window starts.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (ticks, took) = cpu_during(pid, async {
        tokio::time::sleep(Duration::from_secs(seconds)).await;
    })
    .await;
    out["idle_watches"] = json!({
        "watches": watchers,
        "cpu_pct_of_core": pct_of_core(ticks, took),
        "target_pct": 2,
    });

    // (c) one change reaching every idle watcher.
    let mut deliveries = Vec::with_capacity(changes * watchers);
    let mut to_last = Vec::with_capacity(changes);
    for n in 0..changes {
        let written = Instant::now();
        sims[0]
            .patch(
                "v1",
                "Pod",
                "idle",
                "idle-0",
                &json!({"metadata": {"labels": {"round": format!("{MARK}{n:04}")}}}),
                false,
            )
            .unwrap();
        let mut got = 0;
        let mut last = Duration::ZERO;
        while got < watchers {
            let seen = tokio::time::timeout(Duration::from_secs(10), seen_rx.recv())
                .await
                .unwrap_or_else(|_| panic!("change {n}: {got} of {watchers} watchers saw it"))
                .unwrap();
            match seen {
                Seen::Change(m, at) if m == n => {
                    let took = at.duration_since(written);
                    deliveries.push(took);
                    last = last.max(took);
                    got += 1;
                }
                Seen::Change(m, _) => panic!("change {m} arrived while waiting for {n}"),
                Seen::Ready => panic!("a watcher started again"),
            }
        }
        to_last.push(last);
        // Spaced out, as independent changes are.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let spread = percentiles(deliveries);
    out["change_to_watchers"] = json!({
        "watchers": watchers,
        "changes": changes,
        "delivery_ms": spread,
        "to_last_watcher_ms": percentiles(to_last),
        "target_p99_ms": 100,
    });
    for task in idle {
        task.abort();
    }
    // Let leafgate see the streams go and drop them.
    tokio::time::sleep(Duration::from_secs(1)).await;

    // (b) alpha's watchers beside beta's churn.
    let churn = Churn {
        sims: &sims,
        beta: &beta,
    };
    let mut next = 0;
    let (base_ticks, base_took, base_changes) = {
        let (changed, (ticks, took)) = churn.run(&mut next, pid, seconds).await;
        (ticks, took, changed)
    };
    let (alpha_tx, mut alpha_rx) = mpsc::unbounded_channel();
    let alpha = open_watches(addr, &tls, "alpha", "a-one", ALPHA_WATCHERS, &alpha_tx).await;
    wait_ready(&mut alpha_rx, ALPHA_WATCHERS).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (with_changes, (with_ticks, with_took)) = churn.run(&mut next, pid, seconds).await;
    let mut leaked = 0;
    while let Ok(seen) = alpha_rx.try_recv() {
        if let Seen::Change(..) = seen {
            leaked += 1;
        }
    }
    assert_eq!(leaked, 0, "alpha's watchers saw beta's changes");
    let base = pct_of_core(base_ticks, base_took);
    let with = pct_of_core(with_ticks, with_took);
    out["watches_beside_churn"] = json!({
        "alpha_watches": ALPHA_WATCHERS,
        "beta_changes": [base_changes, with_changes],
        "cpu_pct_without": base,
        "cpu_pct_with": with,
        "alpha_cost_pct_of_core": round(with - base),
        "target_pct": 2,
    });
    for task in alpha {
        task.abort();
    }
    println!("{out}");
    drop(gateway);
    drop(sims);
}

/// `beta`'s churn: one label change every 10 ms, round-robin over its pods.
struct Churn<'a> {
    sims: &'a [KubeSim],
    beta: &'a [(usize, String, String)],
}

impl Churn<'_> {
    /// Churns for `seconds`, measuring leafgate's CPU over the same window: (changes made,
    /// (ticks, wall time)).
    async fn run(&self, next: &mut usize, pid: u32, seconds: u64) -> (usize, (u64, Duration)) {
        let until = Instant::now() + Duration::from_secs(seconds);
        let mut tick = tokio::time::interval(CHURN_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut made = 0;
        let cpu = cpu_during(pid, async {
            while Instant::now() < until {
                tick.tick().await;
                let (l, ns, name) = &self.beta[*next % self.beta.len()];
                self.sims[*l]
                    .patch(
                        "v1",
                        "Pod",
                        ns,
                        name,
                        &json!({"metadata": {"labels": {"churn": format!("c{next}")}}}),
                        false,
                    )
                    .unwrap();
                *next += 1;
                made += 1;
            }
        })
        .await;
        (made, cpu)
    }
}

/// Opens `count` watches of `ns` as `tenant`, `PER_CONNECTION` to an HTTP/2 connection; each
/// is read by a task of its own that reports on `seen`.
async fn open_watches(
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
    tenant: &str,
    ns: &str,
    count: usize,
    seen: &mpsc::UnboundedSender<Seen>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::with_capacity(count);
    let path = format!("/api/v1/namespaces/{ns}/pods?watch=true");
    let mut sender = None;
    for i in 0..count {
        if i % PER_CONNECTION == 0 {
            let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
            let stream = tokio_rustls::TlsConnector::from(tls.clone())
                .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
                .await
                .unwrap();
            let (s, conn) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                    .await
                    .unwrap();
            tasks.push(tokio::spawn(async move {
                let _ = conn.await;
            }));
            sender = Some(s);
        }
        let sender = sender.as_mut().unwrap();
        sender.ready().await.unwrap();
        let req = http::Request::get(&path)
            .header("host", addr.to_string())
            .header("authorization", format!("Bearer {tenant}-token"))
            .body(Empty::<Bytes>::new())
            .unwrap();
        let res = sender.send_request(req).await.unwrap();
        assert_eq!(res.status(), 200, "watch {i} of {tenant}");
        tasks.push(tokio::spawn(read_watch(res.into_body(), seen.clone())));
    }
    tasks
}

/// Reads a watch's lines: the first is the initial ADDED (`Ready`), later ones carrying
/// `MARK` report their change with the time the line was complete.
async fn read_watch(mut body: Incoming, seen: mpsc::UnboundedSender<Seen>) {
    let mut buf: Vec<u8> = Vec::new();
    let mut first = true;
    while let Some(Ok(frame)) = body.frame().await {
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let at = Instant::now();
        buf.extend_from_slice(&data);
        while let Some(end) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=end).collect();
            let report = if first {
                first = false;
                Seen::Ready
            } else {
                match find_mark(&line) {
                    Some(n) => Seen::Change(n, at),
                    // Any other event counts too: a watcher of a quiet namespace should get
                    // none.
                    None => Seen::Change(usize::MAX, at),
                }
            };
            if seen.send(report).is_err() {
                return;
            }
        }
    }
}

fn find_mark(line: &[u8]) -> Option<usize> {
    let at = line
        .windows(MARK.len())
        .position(|w| w == MARK.as_bytes())?;
    std::str::from_utf8(line.get(at + MARK.len()..at + MARK.len() + 4)?)
        .ok()?
        .parse()
        .ok()
}

async fn wait_ready(seen: &mut mpsc::UnboundedReceiver<Seen>, count: usize) {
    let mut ready = 0;
    while ready < count {
        match tokio::time::timeout(Duration::from_secs(30), seen.recv()).await {
            Ok(Some(Seen::Ready)) => ready += 1,
            Ok(Some(Seen::Change(..))) => panic!("an event before the initial one"),
            Ok(None) | Err(_) => panic!("{ready} of {count} watches started"),
        }
    }
}

/// leafgate's CPU ticks (user + system, all threads) spent while `work` runs, and the wall
/// time it took.
async fn cpu_during(pid: u32, work: impl std::future::Future<Output = ()>) -> (u64, Duration) {
    let before = cpu_ticks(pid);
    let started = Instant::now();
    work.await;
    (cpu_ticks(pid) - before, started.elapsed())
}

/// Fields 14 and 15 of `/proc/PID/stat`, counted after the comm field's closing parenthesis
/// (the comm may hold spaces).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Ticks over a window as % of one core (USER_HZ is 100 on Linux).
fn pct_of_core(ticks: u64, took: Duration) -> f64 {
    round(ticks as f64 / 100.0 / took.as_secs_f64() * 100.0)
}

fn percentiles(mut took: Vec<Duration>) -> Value {
    took.sort();
    let pct = |p: f64| {
        round(took[((took.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0)
    };
    json!({"p50": pct(0.5), "p99": pct(0.99), "max": pct(1.0)})
}
