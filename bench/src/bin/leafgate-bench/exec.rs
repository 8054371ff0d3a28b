//! `exec LEAFGATE SIZE_MIB ROUNDS`: exec through leafgate's node API against exec straight
//! to the leaf, over SPDY as the root API server sends it.
//!
//! Starts a kubesim leaf in this process and LEAFGATE (`run`, pinned to the CPUs in
//! `LEAFGATE_CPUS`, default `1`, with `taskset`) in front of it. Throughput: `head -c
//! SIZE_MIB MiB /dev/zero` read as stdout, straight, through leafgate and through the two
//! relays below, the four in turn three times, each one's best kept. Latency:
//! ROUNDS execs of `true` each way (straight, through leafgate, through the relays below),
//! the four in turn, whole call timed (connect, TLS, upgrade, streams, exit status):
//! leafgate's share of an exec's first byte is the difference; then the same execs 10 ms
//! apart, each on an otherwise idle gateway. Then ROUNDS execs as a tenant's `kubectl exec`
//! sends them to leafgate's kube-API front (the leaf's path, a bearer token), in turn with
//! the same exec straight (`kube_api` in the output). Also an
//! exec under a tenant limit of 1 MiB/s (8 MiB of stdout), as the client measures it.
//!
//! The ceiling: the same straight execs through a bare TCP relay (`relay`, this binary,
//! pinned to leafgate's CPUs, one tokio worker as leafgate has there) that parses nothing.
//! What the relay adds is the price of one more hop between two cores on this machine (the
//! client and the leaf share a core; every message now wakes the other one): no proxy that
//! sits between them can add less. And the ceiling of a proxy that ends TLS as leafgate
//! must (`tls-relay`): the straight execs through a relay that accepts the client's TLS and
//! copies the bytes, unparsed, to a spare TLS connection to the leaf opened ahead of need and
//! replaced when taken. It pays the two handshakes per stream leafgate pays and none of its
//! HTTP. Beside each latency set, the CPU leafgate and the TLS relay spent on it (the run
//! time of all their threads, from `/proc/PID/task/*/schedstat`), per exec: the cost of an
//! exec that the machine's latency noise does not hide. Prints one JSON object.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubesim::client::spdy_exec;
use kubesim::{Credential, KubeSim};
use leafgate_tests::certs::TestCa;
use serde_json::json;

pub async fn run(leafgate: &str, size_mib: u64, rounds: usize) {
    let sim = KubeSim::builder().start().await.unwrap();
    for ns in ["bench", "bench-limited"] {
        sim.create(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": ns},
            "spec": {"nodeName": "n", "containers": [{"name": "main", "image": "busybox"}]}
        }))
        .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    sim.kubeconfig(
        &Credential::ClientCert("leafgate".into()),
        &dir.path().join("leaf.kubeconfig"),
    )
    .unwrap();
    let ca = TestCa::new("bench CA");
    ca.write(dir.path(), "ca.pem");
    ca.issue(dir.path(), "node-api", &["127.0.0.1"]);
    let apiserver = ca.issue(dir.path(), "apiserver", &["kube-apiserver-kubelet-client"]);
    let (node_api, kube_api, admin) = (free_port(), free_port(), free_port());
    std::fs::write(
        dir.path().join("bench.tokens"),
        AUTHORIZATION.trim_start_matches("Bearer "),
    )
    .unwrap();
    let config = dir.path().join("leafgate.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[admin]
bind = "127.0.0.1:{admin}"
[[listener]]
name = "kubelet"
bind = "127.0.0.1:{node_api}"
kind = "node-api"
tls = {{ cert = "node-api.pem", key = "node-api-key.pem", client_ca = "ca.pem" }}
allowed_clients = ["kube-apiserver-kubelet-client"]
[[listener]]
name = "kube"
bind = "127.0.0.1:{kube_api}"
kind = "kube-api"
tls = {{ cert = "node-api.pem", key = "node-api-key.pem" }}
[[leaf]]
name = "leaf"
kubeconfig = "leaf.kubeconfig"
[[tenant]]
name = "bench"
namespaces = ["bench"]
tokens_file = "bench.tokens"
[[tenant]]
name = "limited"
namespaces = ["bench-limited"]
bandwidth = {{ per_connection = "1MiB/s" }}
"#
        ),
    )
    .unwrap();
    let cpus = std::env::var("LEAFGATE_CPUS").unwrap_or_else(|_| "1".into());
    let mut gateway = Gateway::pinned(leafgate, &config);
    wait_synced(admin, &mut gateway).await;

    let direct_tls = {
        let (cert, key) = sim.client_cert("bench").unwrap();
        Arc::new(kubesim::tls::client_config(Some(sim.ca_pem()), &cert, &key).unwrap())
    };
    // The root API server's identity (any server certificate accepted), each call a new
    // client config with its own session store.
    let apiserver_tls = || {
        Arc::new(
            kubesim::tls::client_config(
                None,
                &std::fs::read_to_string(&apiserver.cert).unwrap(),
                &std::fs::read_to_string(&apiserver.key).unwrap(),
            )
            .unwrap(),
        )
    };
    let via_tls = apiserver_tls();
    let pod_exec = "/api/v1/namespaces/bench/pods/p/exec?container=main&stdout=true";
    let direct = |command: &str| -> Call {
        (
            sim.addr(),
            direct_tls.clone(),
            format!("{pod_exec}&{command}"),
            None,
        )
    };
    let via = |command: &str| -> Call {
        (
            format!("127.0.0.1:{node_api}").parse().unwrap(),
            via_tls.clone(),
            format!("/exec/bench/p/main?output=1&{command}"),
            None,
        )
    };
    // A tenant's `kubectl exec` through the kube-API front: the leaf's own path, a bearer
    // token, a client config of its own (sessions are kept by server name).
    let via_kube: Call = (
        format!("127.0.0.1:{kube_api}").parse().unwrap(),
        apiserver_tls(),
        format!("{pod_exec}&command=true"),
        Some(AUTHORIZATION),
    );

    let bytes = size_mib << 20;
    let head = format!("command=head&command=-c&command={bytes}&command=/dev/zero");
    // The tenant limit, measured as the client sees it: 8 MiB of stdout at 1 MiB/s.
    let limited_mib_s = {
        let path = format!(
            "/exec/bench-limited/p/main?output=1&command=head&command=-c&command={}&command=/dev/zero",
            8 << 20
        );
        let started = Instant::now();
        let out = spdy_exec(via("").0, Arc::clone(&via_tls), &path, &[], b"")
            .await
            .unwrap();
        assert_eq!(out.stdout.len(), 8 << 20, "{:?}", out.refused);
        8.0 / started.elapsed().as_secs_f64()
    };
    let relay_port = free_port();
    let relay_process = Gateway(
        Command::new("taskset")
            .args(["-c", &cpus])
            .arg(std::env::current_exe().unwrap())
            .args(["relay", &relay_port.to_string(), &sim.addr().to_string()])
            .spawn()
            .expect("taskset and leafgate-bench relay"),
    );
    let relayed: SocketAddr = ([127, 0, 0, 1], relay_port).into();
    wait_port(relayed).await;
    let relay = {
        let (_, tls, path, auth) = direct("command=true");
        (relayed, tls, path, auth)
    };
    // The TLS-terminating relay: the client's identity and trust as it has with leafgate,
    // the leaf's path as the straight exec sends it (the relay translates nothing), and
    // the relay's own client certificate to the leaf.
    let tls_relay_port = free_port();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let (relay_cert, relay_key) = sim.client_cert("bench").unwrap();
    let tls_relay_process = Gateway(
        Command::new("taskset")
            .args(["-c", &cpus])
            .arg(std::env::current_exe().unwrap())
            .args([
                "tls-relay",
                &tls_relay_port.to_string(),
                &sim.addr().to_string(),
            ])
            .arg(dir.path().join("node-api.pem"))
            .arg(dir.path().join("node-api-key.pem"))
            .arg(dir.path().join("ca.pem"))
            .arg(write("leaf-ca.pem", sim.ca_pem()))
            .arg(write("relay-client.pem", &relay_cert))
            .arg(write("relay-client-key.pem", &relay_key))
            .spawn()
            .expect("taskset and leafgate-bench tls-relay"),
    );
    let cpu_of = [gateway.0.id(), tls_relay_process.0.id()];
    let tls_relayed: SocketAddr = ([127, 0, 0, 1], tls_relay_port).into();
    wait_port(tls_relayed).await;
    // Its own client config: a client keeps its TLS sessions by server name, and leafgate
    // and this relay are both `127.0.0.1`, so with one config each would be offered the
    // other's tickets and every handshake would be a full one.
    let tls_relay_tls = apiserver_tls();
    let tls_relay = {
        let (_, _, path, auth) = direct("command=true");
        (tls_relayed, tls_relay_tls.clone(), path, auth)
    };
    // Throughput, each way's best of three, the ways in turn. The relays sit on leafgate's
    // core as it does: between a client and a leaf that share a core, any proxy on the other
    // one also moves every byte across cores, which the straight exec never does.
    let streams: Vec<Call> = vec![
        direct(&head),
        via(&head),
        (relayed, direct_tls.clone(), direct(&head).2, None),
        (tls_relayed, tls_relay_tls, direct(&head).2, None),
    ];
    let mut best = [0f64; 4];
    for _ in 0..3 {
        for ((addr, tls, path, _), best) in streams.iter().zip(&mut best) {
            let started = Instant::now();
            let out = spdy_exec(*addr, Arc::clone(tls), path, &[], b"")
                .await
                .unwrap();
            assert_eq!(out.stdout.len() as u64, bytes, "{:?}", out.refused);
            let mib_s = bytes as f64 / started.elapsed().as_secs_f64() / f64::from(1 << 20);
            *best = best.max(mib_s);
        }
    }
    let [direct_mib_s, via_mib_s, tcp_relay_mib_s, tls_relay_mib_s] = best;
    let calls = vec![
        direct("command=true"),
        via("command=true"),
        relay,
        tls_relay,
    ];
    // The ways in turn, the order rotated each round, so the machine's drift from one
    // minute to the next (as large here as the gap measured) falls on all of them alike.
    let latency = |pause: Duration, calls: Vec<Call>| {
        async move {
            let cpu_before = cpu_of.map(cpu_time);
            let mut took = vec![Vec::<Duration>::new(); calls.len()];
            for round in 0..rounds {
                for k in 0..took.len() {
                    let i = (round + k) % took.len();
                    let (addr, tls, path, auth) = &calls[i];
                    let headers: Vec<(&str, &str)> =
                        auth.iter().map(|a| ("Authorization", *a)).collect();
                    tokio::time::sleep(pause).await;
                    let started = Instant::now();
                    let out = spdy_exec(*addr, Arc::clone(tls), path, &headers, b"")
                        .await
                        .unwrap();
                    assert_eq!(out.exit_code(), Some(0), "{:?}", out.refused);
                    took[i].push(started.elapsed());
                }
            }
            // Each of the two served `rounds` execs of this set, and nothing else but its
            // own upkeep (leafgate's leaf watch and spare refills; the relay's refills).
            let [gateway_cpu, tls_relay_cpu] = [0, 1]
                .map(|i| (cpu_time(cpu_of[i]) - cpu_before[i]).as_secs_f64() * 1e6 / rounds as f64);
            let percentiles: Vec<(f64, f64)> = took
                .into_iter()
                .map(|mut t| {
                    t.sort();
                    let pct = |p: f64| {
                        t[((t.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0
                    };
                    (pct(0.5), pct(0.99))
                })
                .collect();
            (percentiles, (gateway_cpu, tls_relay_cpu))
        }
    };
    let (set, (via_cpu_us, tls_relay_cpu_us)) = latency(Duration::ZERO, calls.clone()).await;
    let [
        (direct_p50, direct_p99),
        (via_p50, via_p99),
        (relay_p50, relay_p99),
        (tls_relay_p50, tls_relay_p99),
    ] = set[..]
    else {
        unreachable!("one figure per way")
    };
    // The same execs 10 ms apart: one exec on a gateway with nothing else to do, as a user's
    // `kubectl exec` meets it (back to back, the spare's refill handshake for the next exec
    // shares leafgate's core with this one).
    let (set, (spaced_via_cpu_us, spaced_tls_relay_cpu_us)) =
        latency(Duration::from_millis(10), calls).await;
    let [
        (spaced_direct, spaced_direct_p99),
        (spaced_via, spaced_via_p99),
        (spaced_relay, spaced_relay_p99),
        (spaced_tls_relay, spaced_tls_relay_p99),
    ] = set[..]
    else {
        unreachable!("one figure per way")
    };
    // A tenant's exec through the kube-API front, in turn with the same exec straight,
    // back to back: leafgate serves nothing else in this set, so its CPU is these execs'.
    let (set, (kube_cpu_us, _)) =
        latency(Duration::ZERO, vec![direct("command=true"), via_kube]).await;
    let [(kube_direct_p50, kube_direct_p99), (kube_p50, kube_p99)] = set[..] else {
        unreachable!("one figure per way")
    };
    println!(
        "{}",
        json!({
            "size_mib": size_mib,
            // For `TRACE=1 bash bench/exec.sh`: whose syscalls are whose in the trace.
            "pids": {
                "leafgate": gateway.0.id(),
                "tls_relay": tls_relay_process.0.id(),
                "tcp_relay": relay_process.0.id(),
            },
            "direct_mib_s": round(direct_mib_s),
            "via_leafgate_mib_s": round(via_mib_s),
            "ratio": round(via_mib_s / direct_mib_s),
            "tcp_relay_mib_s": round(tcp_relay_mib_s),
            "tcp_relay_ratio": round(tcp_relay_mib_s / direct_mib_s),
            "tls_relay_mib_s": round(tls_relay_mib_s),
            "tls_relay_ratio": round(tls_relay_mib_s / direct_mib_s),
            "limited_1mib_s_tenant_mib_s": (limited_mib_s * 1000.0).round() / 1000.0,
            "rounds": rounds,
            "direct_ms": {"p50": round(direct_p50), "p99": round(direct_p99)},
            "via_leafgate_ms": {"p50": round(via_p50), "p99": round(via_p99)},
            "added_ms": {"p50": round(via_p50 - direct_p50), "p99": round(via_p99 - direct_p99)},
            "tcp_relay_ms": {"p50": round(relay_p50), "p99": round(relay_p99)},
            "tcp_relay_added_ms": {"p50": round(relay_p50 - direct_p50), "p99": round(relay_p99 - direct_p99)},
            "tls_relay_ms": {"p50": round(tls_relay_p50), "p99": round(tls_relay_p99)},
            "tls_relay_added_ms": {"p50": round(tls_relay_p50 - direct_p50), "p99": round(tls_relay_p99 - direct_p99)},
            "cpu_us_per_exec": {
                "leafgate": via_cpu_us.round(),
                "tls_relay": tls_relay_cpu_us.round(),
                "ratio": round(via_cpu_us / tls_relay_cpu_us),
            },
            "kube_api": {
                "direct_ms": {"p50": round(kube_direct_p50), "p99": round(kube_direct_p99)},
                "via_kube_api_ms": {"p50": round(kube_p50), "p99": round(kube_p99)},
                "added_ms": {"p50": round(kube_p50 - kube_direct_p50), "p99": round(kube_p99 - kube_direct_p99)},
                "cpu_us_per_exec": kube_cpu_us.round(),
            },
            "spaced_10ms": {
                "direct_ms": {"p50": round(spaced_direct), "p99": round(spaced_direct_p99)},
                "via_leafgate_ms": {"p50": round(spaced_via), "p99": round(spaced_via_p99)},
                "added_ms": {"p50": round(spaced_via - spaced_direct), "p99": round(spaced_via_p99 - spaced_direct_p99)},
                "tcp_relay_added_ms": {"p50": round(spaced_relay - spaced_direct), "p99": round(spaced_relay_p99 - spaced_direct_p99)},
                "tls_relay_added_ms": {"p50": round(spaced_tls_relay - spaced_direct), "p99": round(spaced_tls_relay_p99 - spaced_direct_p99)},
                "cpu_us_per_exec": {
                    "leafgate": spaced_via_cpu_us.round(),
                    "tls_relay": spaced_tls_relay_cpu_us.round(),
                    "ratio": round(spaced_via_cpu_us / spaced_tls_relay_cpu_us),
                },
            },
        })
    );
}

/// The ceiling's relay: each connection to `127.0.0.1:port` copied both ways to `target`
/// with `TCP_NODELAY` on both sides, as leafgate's sockets have it; nothing is parsed.
pub async fn relay(port: u16, target: SocketAddr) {
    let socket = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    loop {
        let Ok((mut client, _)) = socket.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            let Ok(mut upstream) = tokio::net::TcpStream::connect(target).await else {
                return;
            };
            let _ = (client.set_nodelay(true), upstream.set_nodelay(true));
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        });
    }
}

/// The CPU time all of process `pid`'s threads have run so far: the first field of each
/// `/proc/PID/task/TID/schedstat`, in nanoseconds (a thread that has exited is not counted;
/// leafgate's and the relay's runtime threads live as long as the process).
fn cpu_time(pid: u32) -> Duration {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("a running process");
    let nanos = tasks
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(nanos)
}

/// Waits (up to 10 s) until something accepts at `addr`.
async fn wait_port(addr: SocketAddr) {
    let started = Instant::now();
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "nothing listens at {addr}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Where an exec goes: the address, the client's TLS identity, the path and query.
type Call = (
    SocketAddr,
    Arc<rustls::ClientConfig>,
    String,
    Option<&'static str>,
);

/// The bench tenant's bearer token, as its `kubectl` sends it to the kube-API front.
const AUTHORIZATION: &str = "Bearer bench-tenant-token-0123456789";

pub fn round(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The gateway process, stopped when the benchmark ends however it ends.
pub struct Gateway(pub Child);

impl Gateway {
    /// `leafgate run --config config`, pinned by `taskset` to the CPUs in
    /// `LEAFGATE_CPUS` (default `1`), its output dropped. taskset execs leafgate: the
    /// child's pid is leafgate's.
    pub fn pinned(leafgate: &str, config: &std::path::Path) -> Gateway {
        let cpus = std::env::var("LEAFGATE_CPUS").unwrap_or_else(|_| "1".into());
        Gateway(
            Command::new("taskset")
                .args(["-c", &cpus, leafgate, "run", "--config"])
                .arg(config)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("taskset and leafgate run"),
        )
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits (up to 30 s) until the gateway's leaf reports synced in `/status`.
pub async fn wait_synced(admin: u16, gateway: &mut Gateway) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let started = Instant::now();
    loop {
        if let Some(status) = gateway.0.try_wait().unwrap() {
            panic!("leafgate exited: {status}");
        }
        let mut answer = String::new();
        if let Ok(mut conn) = tokio::net::TcpStream::connect(("127.0.0.1", admin)).await {
            let _ = conn
                .write_all(b"GET /status HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n")
                .await;
            let _ = conn.read_to_string(&mut answer).await;
        }
        let status: serde_json::Value = answer
            .split_once("\r\n\r\n")
            .and_then(|(_, body)| serde_json::from_str(body).ok())
            .unwrap_or_default();
        if status["leaves"]
            .as_array()
            .is_some_and(|l| !l.is_empty() && l.iter().all(|l| l["synced"] == true))
        {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the leaf never synced: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The ceiling of a TLS-terminating proxy with warm connections (`tls-relay`): each client
/// connection to `127.0.0.1:port` is accepted with TLS (`cert`/`key`, client certificates
/// checked against `client_ca`, sessions resumed), and copied both ways, parsing nothing,
/// to a spare TLS connection to `target` opened ahead of need (`target_ca`, with the client
/// identity `target_cert`/`target_key`, sessions resumed), which is replaced as soon as it
/// is taken: the two handshakes a terminating proxy pays per stream, one on the stream's
/// path and one beside it, as leafgate's node API does, without any of its HTTP.
pub async fn tls_relay(port: u16, target: SocketAddr, pem: TlsRelayPem) {
    use rustls_pki_types::pem::PemObject;
    use tokio_rustls::{TlsAcceptor, TlsConnector};

    let read = |path: &str| std::fs::read_to_string(path).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(kubesim::tls::roots(&read(&pem.client_ca), "the client CA").unwrap()),
        provider.clone(),
    )
    .build()
    .unwrap();
    let server = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            kubesim::tls::certs(&read(&pem.cert), "the relay certificate").unwrap(),
            rustls_pki_types::PrivateKeyDer::from_pem_slice(read(&pem.key).as_bytes()).unwrap(),
        )
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(server));
    let connector = TlsConnector::from(Arc::new(
        kubesim::tls::client_config(
            Some(&read(&pem.target_ca)),
            &read(&pem.target_cert),
            &read(&pem.target_key),
        )
        .unwrap(),
    ));
    let name = rustls_pki_types::ServerName::from(target.ip());
    let dial = move || {
        let (connector, name) = (connector.clone(), name.clone());
        async move {
            let tls = async {
                let tcp = tokio::net::TcpStream::connect(target).await?;
                tcp.set_nodelay(true)?;
                connector.connect(name, tcp).await
            };
            tls.await
                .inspect_err(|e| eprintln!("tls-relay: no connection to {target}: {e}"))
                .ok()
        }
    };
    // Spares kept ready: one taken per client, replaced at once.
    let (ready_tx, mut ready) = tokio::sync::mpsc::channel(2);
    for _ in 0..2 {
        let (dial, ready_tx) = (dial.clone(), ready_tx.clone());
        tokio::spawn(async move {
            if let Some(spare) = dial().await {
                let _ = ready_tx.send(spare).await;
            }
        });
    }
    let socket = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .unwrap();
    loop {
        let Ok((client, _)) = socket.accept().await else {
            continue;
        };
        let _ = client.set_nodelay(true);
        let acceptor = acceptor.clone();
        // A relay whose dials fail ends here, loudly, rather than leave the bench waiting.
        let Some(mut upstream) = tokio::time::timeout(Duration::from_secs(10), ready.recv())
            .await
            .expect("a spare connection to the leaf within 10 s")
        else {
            return;
        };
        let (dial, ready_tx) = (dial.clone(), ready_tx.clone());
        tokio::spawn(async move {
            if let Some(spare) = dial().await {
                let _ = ready_tx.send(spare).await;
            }
        });
        tokio::spawn(async move {
            let Ok(mut client) = acceptor.accept(client).await else {
                return;
            };
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        });
    }
}

/// The files `tls_relay` reads its identities from.
pub struct TlsRelayPem {
    pub cert: String,
    pub key: String,
    pub client_ca: String,
    pub target_ca: String,
    pub target_cert: String,
    pub target_key: String,
}
