//! `soak LEAFGATE FAULTY_ROUTER_WASM SECONDS OUT_DIR`: leafgate under mixed load and
//! changes for SECONDS, sampled every 10 s, to show that nothing leaks (issue 42).
//!
//! Starts in this process two kubesim leaves (pods `p0`, `p1` and `trap-0` on the first,
//! `q0` on the second),
//! a kubesim root holding an IngressClass, a Service and an Ingress (`ing.soak`), and an
//! upstream (`TestUpstream`); then LEAFGATE (`run`, pinned to `LEAFGATE_CPUS`, default
//! `1`) with a routes listener, a kube-api front, a node API, the Ingress provider and one
//! tenant whose pod router is the `faulty-router` fault plugin (it traps on `trap-` pods:
//! one pod call in 100 names one, so 1% of the router's calls fail, `on_error = "reject"`).
//!
//! The load (`soak_load.rs`): HTTP/1.1 and HTTP/2 requests through the routes listener
//! (a config route and an Ingress route), WebSockets opened, echoed and closed, kube-api
//! watches, execs and log follows, node-API execs. The changes: an Ingress created and an
//! older one deleted every 2 s, a config reload every 10 s, the first leaf (where the
//! router sends every pod call) restarted every 2 minutes.
//!
//! Samples (every 10 s, `OUT_DIR/soak.csv`): leafgate's RSS and open descriptors (from
//! `/proc`), tokio tasks and open sessions (`/status`'s `runtime`), open and upgraded
//! connections and the error counters (`/metrics`), and the load's tallies. After the load
//! a drain of up to 60 s waits for descriptors, tasks and sessions to come back. The
//! verdicts (printed, and `OUT_DIR/verdicts.json`): RSS growth over the load's second half
//! <= 5%; descriptors, tasks and sessions back to the baseline (taken after a warm-up pass
//! of every load kind and a quiet pause); no failure but the injected ones (the plugin's
//! refusals, calls that overlapped a leaf restart), the plugin errors leafgate counted
//! equal to the refusals seen, its leaf errors within the restarts' failures; every
//! request the load made counted in leafgate's metrics. The binary exits 1 when a verdict
//! fails.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubesim::{Credential, KubeSim};
use leafgate_tests::TestUpstream;
use leafgate_tests::certs::TestCa;
use leafgate_tests::ingress::{backend_objects, ingress_class, simple_ingress};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::exec::{Gateway, free_port, round, wait_synced};
use crate::soak_load::{self as load, INGRESS_NS, KINDS, Load, NS, Tally};

/// How often the figures are sampled.
const EVERY: Duration = Duration::from_secs(10);
/// The upstream pool's idle timeout in the soak's config: pooled connections close this
/// long after the load, so the drain can see descriptors come back.
const POOL_IDLE_SECS: u64 = 5;
/// The longest the drain waits for descriptors and sessions to come back.
const DRAIN: Duration = Duration::from_secs(60);
/// The bound on the RSS growth over the load's second half, in percent.
const RSS_GROWTH_PCT: f64 = 5.0;
/// The reload number the warm-up's config carries (the soak's own reloads count from 1).
const WARM_UP_RELOAD: u64 = u64::MAX;
const TOKEN: &str = "soak-tenant-token-0123456789";
/// The pod router's deadline: wall-clock time, so on two loaded cores (and a debug build)
/// the default 10 ms is missed by calls that waited for a core, not by the plugin; the
/// soak's faults are the injected ones.
const PLUGIN_DEADLINE: &str = "1s";

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"nodeName": "node", "containers": [{"name": "main", "image": "busybox"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1"}
    })
}

/// One row of the CSV.
struct Sample {
    t: f64,
    phase: &'static str,
    rss_kib: u64,
    fds: u64,
    tokio_tasks: u64,
    /// Of `tokio_tasks`, those on the control runtime (the rest are the serving threads').
    tokio_tasks_control: u64,
    open_sessions: u64,
    /// Open client connections over every listener, and upgraded (spliced) ones.
    connections: u64,
    upgraded: u64,
    metrics: Counters,
    /// Each load kind's (succeeded, failed), and the faults.
    calls: Vec<(u64, u64)>,
    plugin_faults: u64,
    restart_faults: u64,
    unexpected: u64,
    restarts: u64,
}

/// leafgate's own counts of what the load made and of what failed: the requests of each
/// listener (`leafgate_requests_total`), the pod calls by leaf, the faults.
#[derive(Clone, Copy, Default)]
struct Counters {
    web_requests: u64,
    kube_requests: u64,
    node_requests: u64,
    pod_calls: u64,
    /// Errors reaching the routes' backends, and reaching the leaves.
    upstream_errors: u64,
    leaf_errors: u64,
    plugin_errors: u64,
    reload_failures: u64,
    reloads: u64,
}

impl Counters {
    fn read(text: &str) -> Counters {
        Counters {
            web_requests: sum(text, "leafgate_requests_total", "listener=\"web\""),
            kube_requests: sum(text, "leafgate_requests_total", "listener=\"kube\""),
            node_requests: sum(text, "leafgate_requests_total", "listener=\"kubelet\""),
            pod_calls: sum(text, "leafgate_kube_api_requests_total", "")
                + sum(text, "leafgate_node_api_requests_total", ""),
            upstream_errors: sum(text, "leafgate_upstream_errors_total", "")
                - sum(text, "leafgate_upstream_errors_total", "backend=\"leaf "),
            leaf_errors: sum(text, "leafgate_upstream_errors_total", "backend=\"leaf "),
            plugin_errors: sum(text, "leafgate_plugin_errors_total", ""),
            reload_failures: sum(text, "leafgate_reload_failures_total", ""),
            reloads: sum(text, "leafgate_reloads_total", ""),
        }
    }
}

/// The sum of the samples of metric `name` whose labels hold `filter`.
fn sum(text: &str, name: &str, filter: &str) -> u64 {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(['{', ' ']))
        })
        .filter(|l| l.contains(filter))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// `GET path` on the admin listener: the body, empty when it fails.
async fn admin_get(admin: u16, path: &str) -> String {
    let mut answer = String::new();
    if let Ok(mut conn) = tokio::net::TcpStream::connect(("127.0.0.1", admin)).await {
        let req = format!("GET {path} HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n");
        let _ = conn.write_all(req.as_bytes()).await;
        let _ = conn.read_to_string(&mut answer).await;
    }
    answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

/// Whether `/status` says every leaf is synced.
async fn leaves_synced(admin: u16) -> bool {
    let status: Value =
        serde_json::from_str(&admin_get(admin, "/status").await).unwrap_or_default();
    status["leaves"]
        .as_array()
        .is_some_and(|l| !l.is_empty() && l.iter().all(|l| l["synced"] == true))
}

/// The soak's whole setup and the figures it reads.
struct Bed {
    pid: u32,
    admin: u16,
    started: Instant,
    tally: Arc<Load>,
}

impl Bed {
    async fn sample(&self, phase: &'static str) -> Sample {
        let (rss_kib, fds) = crate::conns::usage(&[self.pid]);
        let status: Value =
            serde_json::from_str(&admin_get(self.admin, "/status").await).unwrap_or_default();
        let runtime = &status["runtime"];
        let metrics = admin_get(self.admin, "/metrics").await;
        let tally: &Tally = &self.tally.tally;
        Sample {
            t: round(self.started.elapsed().as_secs_f64()),
            phase,
            rss_kib,
            fds,
            tokio_tasks: runtime["tokio_tasks"].as_u64().unwrap_or(0),
            tokio_tasks_control: runtime["tokio_tasks_control"].as_u64().unwrap_or(0),
            open_sessions: runtime["open_sessions"].as_u64().unwrap_or(0),
            connections: sum(&metrics, "leafgate_active_connections", ""),
            upgraded: sum(&metrics, "leafgate_upgraded_connections_active", ""),
            metrics: Counters::read(&metrics),
            calls: (0..KINDS.len()).map(|k| tally.calls(k)).collect(),
            plugin_faults: tally
                .plugin_faults
                .load(std::sync::atomic::Ordering::Relaxed),
            restart_faults: tally
                .restart_faults
                .load(std::sync::atomic::Ordering::Relaxed),
            unexpected: tally.unexpected.load(std::sync::atomic::Ordering::Relaxed),
            restarts: self
                .tally
                .restarts
                .count
                .load(std::sync::atomic::Ordering::Relaxed),
        }
    }
}

/// Has the kernel kill the child when this process ends, whatever ends it (a signal that
/// skips `Gateway`'s drop): the death signal is the spawning thread's, and this runs on
/// the main thread (the runtime's `block_on`), which lives as long as the process.
#[allow(
    unsafe_code,
    reason = "prctl in the child before exec: async-signal-safe, no allocation"
)]
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and only calls prctl(2),
    // which is async-signal-safe; it touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

fn csv_header() -> String {
    let mut h = "t_s,phase,rss_kib,fds,tokio_tasks,open_sessions,connections,upgraded,\
                 web_requests,kube_requests,node_requests,pod_calls,upstream_errors,leaf_errors,plugin_errors,\
                 reload_failures,reloads"
        .to_string();
    for k in KINDS {
        let _ = write!(h, ",{k}_ok,{k}_failed");
    }
    h.push_str(",plugin_faults,restart_faults,unexpected,leaf_restarts,tokio_tasks_control\n");
    h
}

fn csv_row(s: &Sample) -> String {
    let m = &s.metrics;
    let mut row = format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        s.t,
        s.phase,
        s.rss_kib,
        s.fds,
        s.tokio_tasks,
        s.open_sessions,
        s.connections,
        s.upgraded,
        m.web_requests,
        m.kube_requests,
        m.node_requests,
        m.pod_calls,
        m.upstream_errors,
        m.leaf_errors,
        m.plugin_errors,
        m.reload_failures,
        m.reloads
    );
    for (ok, failed) in &s.calls {
        let _ = write!(row, ",{ok},{failed}");
    }
    let _ = writeln!(
        row,
        ",{},{},{},{},{}",
        s.plugin_faults, s.restart_faults, s.unexpected, s.restarts, s.tokio_tasks_control
    );
    row
}

/// The config, with `n` in the `reload.soak` route's body (each reload changes it).
struct ConfigText {
    admin: u16,
    web: u16,
    kube: u16,
    node: u16,
    upstream: SocketAddr,
    faulty: String,
    leaves: String,
}

impl ConfigText {
    fn text(&self, n: u64) -> String {
        let ConfigText {
            admin,
            web,
            kube,
            node,
            upstream,
            faulty,
            leaves,
        } = self;
        format!(
            r#"[admin]
bind = "127.0.0.1:{admin}"
[timeouts]
idle = "{POOL_IDLE_SECS}s"
[[listener]]
name = "web"
bind = "127.0.0.1:{web}"
[[listener]]
name = "kube"
bind = "127.0.0.1:{kube}"
kind = "kube-api"
tls = {{ cert = "serving.pem", key = "serving-key.pem" }}
[[listener]]
name = "kubelet"
bind = "127.0.0.1:{node}"
kind = "node-api"
tls = {{ cert = "serving.pem", key = "serving-key.pem", client_ca = "ca.pem" }}
allowed_clients = ["kube-apiserver-kubelet-client"]
[kubernetes]
kubeconfig = "root.kubeconfig"
identity = "soak"
[kubernetes.ingress]
class = "leafgate"
allow_backends = ["127.0.0.0/8"]
{leaves}
[[tenant]]
name = "soak"
namespaces = ["{NS}"]
tokens_file = "soak.tokens"
[tenant.plugins]
pod_router = {{ path = "{faulty}", on_error = "reject", deadline = "{PLUGIN_DEADLINE}" }}
[[route]]
host = "app.soak"
backends = ["{upstream}"]
[[route]]
host = "ws.soak"
backends = ["{upstream}"]
[[route]]
host = "reload.soak"
direct = {{ status = 200, body = "reload {n}" }}
"#
        )
    }
}

/// Runs the soak; whether every verdict held.
pub async fn run(leafgate: &str, faulty: &str, seconds: u64, out: &Path) -> bool {
    std::fs::create_dir_all(out).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut leaves = Vec::new();
    let mut leaf_toml = String::new();
    for l in 0..2 {
        let sim = KubeSim::builder().start().await.unwrap();
        let pods: &[&str] = if l == 0 {
            &["p0", "p1", "trap-0"]
        } else {
            &["q0"]
        };
        for name in pods {
            sim.create(pod(name)).unwrap();
        }
        let file = format!("leaf-{l}.kubeconfig");
        sim.kubeconfig(
            &Credential::ClientCert("leafgate".into()),
            &dir.path().join(&file),
        )
        .unwrap();
        let _ = writeln!(
            leaf_toml,
            "[[leaf]]\nname = \"leaf-{l}\"\nkubeconfig = \"{file}\""
        );
        leaves.push(sim);
    }
    let upstream = TestUpstream::start("main").await;
    let root = Arc::new(KubeSim::builder().start().await.unwrap());
    root.create(ingress_class("leafgate", false)).unwrap();
    // Where the leader election keeps its Lease.
    root.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "leafgate"}}))
        .unwrap();
    for o in backend_objects(INGRESS_NS, "main", upstream.addr) {
        root.create(o).unwrap();
    }
    root.create(simple_ingress(
        INGRESS_NS, "ing", "leafgate", "ing.soak", "main",
    ))
    .unwrap();
    root.kubeconfig(
        &Credential::ClientCert("leafgate".into()),
        &dir.path().join("root.kubeconfig"),
    )
    .unwrap();

    let ca = TestCa::new("soak CA");
    let ca_path = ca.write(dir.path(), "ca.pem");
    ca.issue(dir.path(), "serving", &["127.0.0.1"]);
    let client = ca.issue(dir.path(), "client", &["kube-apiserver-kubelet-client"]);
    std::fs::write(dir.path().join("soak.tokens"), format!("{TOKEN}\n")).unwrap();
    let config = ConfigText {
        admin: free_port(),
        web: free_port(),
        kube: free_port(),
        node: free_port(),
        upstream: upstream.addr,
        faulty: faulty.to_string(),
        leaves: leaf_toml,
    };
    let config_path = dir.path().join("leafgate.toml");
    std::fs::write(&config_path, config.text(0)).unwrap();
    let cpus = std::env::var("LEAFGATE_CPUS").unwrap_or_else(|_| "1".into());
    let log = std::fs::File::create(out.join("leafgate.log")).unwrap();
    let mut command = Command::new("taskset");
    command
        .args(["-c", &cpus, leafgate, "run", "--config"])
        .arg(&config_path)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(log);
    die_with_parent(&mut command);
    let mut gateway = Gateway(command.spawn().expect("taskset and leafgate run"));
    // taskset execs leafgate: the child's pid is leafgate's.
    let pid = gateway.0.id();
    wait_synced(config.admin, &mut gateway).await;

    let tls_of = |alpn: &[&[u8]]| {
        let mut c = kubesim::tls::client_config(
            Some(&std::fs::read_to_string(&ca_path).unwrap()),
            &std::fs::read_to_string(&client.cert).unwrap(),
            &std::fs::read_to_string(&client.key).unwrap(),
        )
        .unwrap();
        c.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(c)
    };
    let addr = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
    let make_load = |until: Instant| {
        Arc::new(Load {
            web: addr(config.web),
            kube: addr(config.kube),
            node: addr(config.node),
            tls: tls_of(&[]),
            tls_h2: tls_of(&[b"h2"]),
            token: TOKEN.to_string(),
            until,
            tally: Tally::default(),
            restarts: Default::default(),
            pods: vec!["p0".into(), "p1".into()],
        })
    };
    let pods = leaves[0].store().clone();

    // The Ingress route served, then a warm-up: one of each change, and each load kind for
    // a few seconds, so what is made once and kept (plugin instances, TLS session caches,
    // the leaves' clients) is in the baseline; then a quiet pause past the pool's idle
    // timeout.
    wait_served(addr(config.web)).await;
    let admin = config.admin;
    load::one_of_each_change(
        addr(config.web),
        &root,
        &mut leaves[0],
        (config_path.clone(), config.text(WARM_UP_RELOAD)),
        move || leaves_synced(admin),
    )
    .await;
    let warm = make_load(Instant::now() + Duration::from_secs(5));
    Box::pin(run_load(&warm, &pods, Duration::ZERO)).await;
    let warm_unexpected = warm
        .tally
        .unexpected
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        warm_unexpected,
        0,
        "the warm-up failed: {:?}",
        warm.tally.examples.lock().unwrap()
    );
    tokio::time::sleep(Duration::from_secs(POOL_IDLE_SECS * 2 + 2)).await;

    let load = make_load(Instant::now() + Duration::from_secs(seconds));
    let bed = Bed {
        pid,
        admin: config.admin,
        started: Instant::now(),
        tally: load.clone(),
    };
    let mut samples = vec![bed.sample("baseline").await];
    let mut csv = csv_header();
    csv.push_str(&csv_row(&samples[0]));

    // The leaf the router sends every pod call to: its restarts reach every kind of call.
    let restarted = leaves.remove(0);
    let restarts = tokio::spawn(load::leaf_restarts(
        load.clone(),
        restarted,
        Duration::from_secs(120),
        Duration::from_secs(3),
        move || leaves_synced(admin),
    ));
    let churn = tokio::spawn(load::ingress_churn(
        load.clone(),
        root.clone(),
        Duration::from_secs(2),
        5,
    ));
    let reloads = tokio::spawn(load::reloads(
        load.clone(),
        config_path.clone(),
        move |n| config.text(n),
        Duration::from_secs(10),
    ));
    let running = {
        let load = load.clone();
        let pods = pods.clone();
        tokio::spawn(
            async move { Box::pin(run_load(&load, &pods, Duration::from_millis(5))).await },
        )
    };
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + EVERY, EVERY);
    while Instant::now() < load.until {
        tick.tick().await;
        let s = bed.sample("load").await;
        csv.push_str(&csv_row(&s));
        eprintln!(
            "soak {:>6.0} s: rss {} KiB, fds {}, tasks {}, sessions {}, unexpected {}",
            s.t, s.rss_kib, s.fds, s.tokio_tasks, s.open_sessions, s.unexpected
        );
        samples.push(s);
        std::fs::write(out.join("soak.csv"), &csv).unwrap();
    }
    let bounded = Duration::from_secs(60);
    tokio::time::timeout(bounded, running)
        .await
        .expect("the load stops")
        .unwrap();
    let written_reloads = tokio::time::timeout(bounded, reloads)
        .await
        .expect("the reloads stop")
        .unwrap();
    tokio::time::timeout(bounded, churn)
        .await
        .expect("the churn stops")
        .unwrap();
    let _leaf = tokio::time::timeout(bounded, restarts)
        .await
        .expect("the restarts stop")
        .unwrap();
    let loaded = samples.len();
    samples.push(bed.sample("load").await);

    // The drain: descriptors and sessions back to the baseline, within DRAIN.
    let base = &samples[0];
    let (base_fds, base_tasks) = (base.fds, base.tokio_tasks);
    let (base_sessions, base_upgraded) = (base.open_sessions, base.upgraded);
    let drain_started = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let s = bed.sample("drain").await;
        let back = s.fds <= base_fds
            && s.tokio_tasks <= base_tasks
            && s.open_sessions <= base_sessions
            && s.upgraded <= base_upgraded;
        let done = back || drain_started.elapsed() >= DRAIN;
        if done || drain_started.elapsed().as_secs() % EVERY.as_secs() == 0 {
            csv.push_str(&csv_row(&s));
            samples.push(s);
        }
        if done {
            break;
        }
    }
    std::fs::write(out.join("soak.csv"), &csv).unwrap();
    std::fs::write(
        out.join("metrics.txt"),
        admin_get(bed.admin, "/metrics").await,
    )
    .unwrap();
    let verdicts = verdicts(&samples, loaded, seconds, written_reloads, &load.tally);
    std::fs::write(
        out.join("verdicts.json"),
        serde_json::to_string_pretty(&verdicts).unwrap(),
    )
    .unwrap();
    println!("{verdicts}");
    drop(gateway);
    verdicts["passed"] == true
}

/// Each load kind for as long as `load` says, at once.
async fn run_load(load: &Arc<Load>, pods: &kubesim::Store, pause: Duration) {
    let pause10 = pause * 10;
    tokio::join!(
        load::http1(load.clone(), pause),
        load::http1(load.clone(), pause),
        load::h2(load.clone(), 4, pause),
        load::websocket(load.clone(), pause10),
        load::kube_watch(load.clone(), Duration::from_millis(500)),
        load::kube_watch(load.clone(), Duration::from_secs(2)),
        load::kube_exec(load.clone(), pause10),
        load::kube_log_follow(load.clone(), pods.clone(), pause10),
        load::node_exec(load.clone(), pause10),
    );
}

/// Waits (up to 60 s) until the config route and the Ingress route both answer 200.
async fn wait_served(web: SocketAddr) {
    let started = Instant::now();
    for host in ["app.soak", "ing.soak"] {
        while let Err(e) = load::get_once(web, host).await {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "{host} was not served: {e}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// The verdicts over the samples (`loaded` of them taken during the load).
fn verdicts(
    samples: &[Sample],
    loaded: usize,
    seconds: u64,
    written_reloads: u64,
    tally: &Tally,
) -> Value {
    let base = &samples[0];
    let end_of_load = &samples[loaded];
    let last = samples.last().unwrap();
    // RSS over the load's second half: the median of its first third against the median
    // of its last third, so that one sample (a reload's build in flight) does not decide.
    let half = seconds as f64 / 2.0;
    let second: Vec<u64> = samples[1..=loaded]
        .iter()
        .filter(|s| s.t >= half)
        .map(|s| s.rss_kib)
        .collect();
    let third = second.len().div_ceil(3).max(1);
    let median = |v: &[u64]| -> f64 {
        let mut v = v.to_vec();
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0) as f64
    };
    let (from, to) = (
        median(&second[..third.min(second.len())]),
        median(&second[second.len().saturating_sub(third)..]),
    );
    let growth = if from > 0.0 {
        (to - from) / from * 100.0
    } else {
        0.0
    };
    let delta = |f: fn(&Counters) -> u64| f(&end_of_load.metrics) - f(&base.metrics);
    let made = |kinds: &[usize]| -> u64 {
        kinds
            .iter()
            .map(|&k| {
                let (ok, failed) = end_of_load.calls[k];
                ok + failed
            })
            .sum()
    };
    let plugin_faults = end_of_load.plugin_faults;
    let examples = tally.examples.lock().unwrap().clone();
    let checks = [
        (
            "rss_growth_second_half",
            growth <= RSS_GROWTH_PCT,
            json!({"from_kib": from.round(), "to_kib": to.round(), "growth_pct": round(growth), "bound_pct": RSS_GROWTH_PCT}),
        ),
        (
            "descriptors_and_tasks_back",
            last.fds <= base.fds && last.tokio_tasks <= base.tokio_tasks,
            json!({
                "descriptors": {"baseline": base.fds, "peak": samples.iter().map(|s| s.fds).max(), "after": last.fds},
                "tokio_tasks": {"baseline": base.tokio_tasks, "peak": samples.iter().map(|s| s.tokio_tasks).max(), "after": last.tokio_tasks},
                "of_them_control": {"baseline": base.tokio_tasks_control, "after": last.tokio_tasks_control},
            }),
        ),
        (
            "sessions_back",
            last.open_sessions <= base.open_sessions && last.upgraded <= base.upgraded,
            json!({"baseline": [base.open_sessions, base.upgraded], "peak": samples.iter().map(|s| s.open_sessions + s.upgraded).max(), "after": [last.open_sessions, last.upgraded]}),
        ),
        (
            "no_error_beyond_the_injected",
            end_of_load.unexpected == 0
                && delta(|c| c.reload_failures) == 0
                && delta(|c| c.upstream_errors) == 0
                && delta(|c| c.leaf_errors) <= end_of_load.restart_faults
                && delta(|c| c.plugin_errors) == plugin_faults,
            json!({
                "unexpected": end_of_load.unexpected,
                "examples": examples,
                "plugin_refusals_seen": plugin_faults,
                "plugin_errors_counted": delta(|c| c.plugin_errors),
                "failures_overlapping_a_leaf_restart": end_of_load.restart_faults,
                "leaf_restarts": end_of_load.restarts,
                "reload_failures": delta(|c| c.reload_failures),
                "upstream_errors": delta(|c| c.upstream_errors),
                "leaf_errors_counted": delta(|c| c.leaf_errors),
            }),
        ),
        (
            "every_request_counted",
            delta(|c| c.web_requests) == made(&[0, 1, 2])
                && delta(|c| c.kube_requests) == made(&[3, 4, 5])
                && delta(|c| c.node_requests) == made(&[6])
                && delta(|c| c.pod_calls) + delta(|c| c.plugin_errors) == made(&[4, 5, 6])
                && delta(|c| c.reloads) >= written_reloads,
            // [made by the load, counted by leafgate]; a pod call is counted by its leaf,
            // or as the pod router's failure when it never reached one.
            json!({
                "web": [made(&[0, 1, 2]), delta(|c| c.web_requests)],
                "kube_api": [made(&[3, 4, 5]), delta(|c| c.kube_requests)],
                "node_api": [made(&[6]), delta(|c| c.node_requests)],
                "pod_calls": [made(&[4, 5, 6]), delta(|c| c.pod_calls) + delta(|c| c.plugin_errors)],
                "reloads": [written_reloads, delta(|c| c.reloads)],
            }),
        ),
    ];
    let mut out = json!({
        "seconds": seconds,
        "samples": samples.len(),
        "calls": KINDS.iter().enumerate().map(|(k, name)| (name.to_string(), json!(end_of_load.calls[k]))).collect::<serde_json::Map<_, _>>(),
        "passed": checks.iter().all(|(_, ok, _)| *ok),
    });
    for (name, ok, figures) in checks {
        out[name] = json!({"ok": ok, "figures": figures});
    }
    out
}
