//! `kube-api LEAFGATE PODS_TABLE_WASM PODS LEAVES ROUNDS`: the kube-api front listing PODS
//! pods spread over LEAVES simulated leaves, with and without the `pods-table` plugin.
//!
//! Starts the leaves (kubesim) in this process and LEAFGATE (`run`, pinned to the CPUs in
//! `LEAFGATE_CPUS`, default `1`) with one tenant owning the namespace, first with the
//! built-in table, then (after a reload: two tenants may not own one namespace) with
//! `table_formatter = PODS_TABLE_WASM`: first within the plugin's default limits (64 MiB,
//! 10 ms), and if those fail, with the deadline raised to 5 s, then with 1 GiB too; each
//! attempt's answer is reported (`pods_table_limits`), the last is measured. Measures, ROUNDS
//! times each, one after another: the raw Table request kubectl sends for `get pods -A`
//! (`GET /api/v1/pods`, `Accept: ...as=Table...`) over one kept-alive HTTP/1.1 connection,
//! whole response read; and the real `kubectl get pods -A` (the pinned binary, process start
//! to exit, discovery cached). Peer: the same two against one kubesim holding all PODS pods
//! itself (its own Table printer), which is a simulator, not kube-apiserver: read it as "what
//! the same client costs against a single in-memory API server". Prints one JSON object.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use kubesim::{Credential, KubeSim};
use leafgate_tests::certs::TestCa;
use rustls_pki_types::ServerName;
use serde_json::{Value, json};

use super::exec::{Gateway, free_port, round, wait_synced};

const PODS_PATH: &str = "/api/v1/pods";
const ACCEPT_TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

fn pod(i: usize, leaf: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("p-{leaf}-{i:05}"), "namespace": "bench",
                     "labels": {"app": format!("a{}", i % 10)}},
        "spec": {"nodeName": format!("node-{leaf}"), "containers": [{"name": "main", "image": "busybox"}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1",
                   "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0,
                                          "image": "busybox", "imageID": "", "state": {"running": {}}}]}
    })
}

/// `leaves` simulated leaves holding `total` objects between them (object `i`, made by
/// `object(i, leaf)`, in leaf `i % leaves`), their kubeconfigs written in `dir`, and their
/// `[[leaf]]` tables; and the peer: one simulator holding every object.
pub(super) async fn simulated_leaves(
    dir: &std::path::Path,
    leaves: usize,
    total: usize,
    object: impl Fn(usize, usize) -> Value,
) -> (Vec<KubeSim>, String, KubeSim) {
    let mut sims = Vec::new();
    let mut leaf_toml = String::new();
    for l in 0..leaves {
        let sim = KubeSim::builder().start().await.unwrap();
        for i in (l..total).step_by(leaves) {
            sim.create(object(i, l)).unwrap();
        }
        let file = format!("leaf-{l}.kubeconfig");
        sim.kubeconfig(&Credential::ClientCert("leafgate".into()), &dir.join(&file))
            .unwrap();
        leaf_toml.push_str(&format!(
            "[[leaf]]\nname = \"leaf-{l}\"\nkubeconfig = \"{file}\"\n"
        ));
        sims.push(sim);
    }
    let single = KubeSim::builder().start().await.unwrap();
    for i in 0..total {
        single.create(object(i, 0)).unwrap();
    }
    (sims, leaf_toml, single)
}

/// The benches' config: the admin listener, a kube-api listener on `kube` over the
/// leaves of `leaf_toml`, and tenant `bench` (namespace `bench`, `bench.tokens`) with
/// `tenant_extra` (its own keys, then tables of it).
pub(super) fn kube_api_config(
    admin: u16,
    kube: u16,
    leaf_toml: &str,
    tenant_extra: &str,
) -> String {
    format!(
        r#"
[admin]
bind = "127.0.0.1:{admin}"
[[listener]]
name = "kube"
bind = "127.0.0.1:{kube}"
kind = "kube-api"
tls = {{ cert = "kube-api.pem", key = "kube-api-key.pem" }}
{leaf_toml}
[[tenant]]
name = "bench"
namespaces = ["bench"]
tokens_file = "bench.tokens"
{tenant_extra}"#
    )
}

pub async fn run(leafgate: &str, wasm: &str, pods: usize, leaves: usize, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (sims, leaf_toml, single) = simulated_leaves(dir.path(), leaves, pods, pod).await;

    let ca = TestCa::new("bench CA");
    let ca_path = ca.write(dir.path(), "ca.pem");
    ca.issue(dir.path(), "kube-api", &["127.0.0.1"]);
    std::fs::write(dir.path().join("bench.tokens"), "bench-token\n").unwrap();
    let (kube, admin) = (free_port(), free_port());
    let config = dir.path().join("leafgate.toml");
    // The plugin's limits: `None` without the plugin, else (memory, deadline), each `None`
    // for the default (64 MiB, 10 ms).
    let config_text = |plugin: Option<(Option<&str>, Option<&str>)>| {
        let plugins = match plugin {
            Some((memory, deadline)) => {
                let mut t = format!("[tenant.plugins]\ntable_formatter = \"{wasm}\"\n");
                if let Some(m) = memory {
                    t.push_str(&format!("memory = \"{m}\"\n"));
                }
                if let Some(d) = deadline {
                    t.push_str(&format!("deadline = \"{d}\"\n"));
                }
                t
            }
            None => String::new(),
        };
        kube_api_config(admin, kube, &leaf_toml, &plugins)
    };
    std::fs::write(&config, config_text(None)).unwrap();
    let mut gateway = Gateway::pinned(leafgate, &config);
    wait_synced(admin, &mut gateway).await;
    let addr: SocketAddr = format!("127.0.0.1:{kube}").parse().unwrap();
    let via_tls = {
        let client = ca.issue(dir.path(), "client", &["bench-client"]);
        Arc::new(
            kubesim::tls::client_config(
                Some(&std::fs::read_to_string(&ca_path).unwrap()),
                &std::fs::read_to_string(&client.cert).unwrap(),
                &std::fs::read_to_string(&client.key).unwrap(),
            )
            .unwrap(),
        )
    };
    // Every pod indexed: the list holds them all.
    let started = Instant::now();
    loop {
        let (_, body) = table_once(addr, &via_tls, Some("bench-token"), PODS_PATH, 1).await;
        if body.1 == pods {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{} of {pods} pods listed",
            body.1
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let single_tls = {
        let (cert, key) = single.client_cert("bench").unwrap();
        Arc::new(kubesim::tls::client_config(Some(single.ca_pem()), &cert, &key).unwrap())
    };

    let mut out = json!({ "pods": pods, "leaves": leaves, "rounds": rounds });
    let kubectl = kubesim::kubectl::pinned();
    let cache = dir.path().join("cache");
    let token = "bench-token";
    for label in ["builtin", "pods_table"] {
        if label == "pods_table" {
            // First with the plugin's default limits; then, if those do not do, with only
            // the deadline raised (is 64 MiB enough?), then with both raised: what it needs.
            let mut tried = Vec::new();
            for (memory, deadline) in [(None, None), (None, Some("5s")), (Some("1GiB"), Some("5s"))]
            {
                std::fs::write(&config, config_text(Some((memory, deadline)))).unwrap();
                reload(admin).await;
                let (status, ms, message) = table_try(addr, &via_tls, token).await;
                tried.push(json!({
                    "memory": memory.unwrap_or("64MiB (default)"),
                    "deadline": deadline.unwrap_or("10ms (default)"),
                    "status": status, "ms": ms, "message": message,
                }));
                if status == 200 {
                    break;
                }
            }
            out["pods_table_limits"] = json!(tried);
        }
        let (lat, (bytes, rows)) = table_once(addr, &via_tls, Some(token), PODS_PATH, rounds).await;
        assert_eq!(rows, pods);
        out[format!("raw_table_{label}")] = json!({"ms": lat, "bytes": bytes});
        let kubeconfig = dir.path().join(format!("{label}.kubeconfig"));
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://{addr}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
                ca_path.display()
            ),
        )
        .unwrap();
        out[format!("kubectl_get_pods_all_{label}_ms")] =
            json!(kubectl_rounds(&kubectl, &kubeconfig, &cache, rounds, pods));
    }
    let (lat, (bytes, rows)) =
        table_once(single.addr(), &single_tls, None, PODS_PATH, rounds).await;
    assert_eq!(rows, pods);
    out["raw_table_single_kubesim"] = json!({"ms": lat, "bytes": bytes});
    let single_config = dir.path().join("single.kubeconfig");
    single
        .kubeconfig(&Credential::ClientCert("bench".into()), &single_config)
        .unwrap();
    out["kubectl_get_pods_all_single_kubesim_ms"] = json!(kubectl_rounds(
        &kubectl,
        &single_config,
        &cache,
        rounds,
        pods
    ));
    println!("{out}");
    drop(sims);
}

/// `POST /reload` on the admin listener (from 127.0.0.1: no token needed); panics unless
/// the new config took.
pub(super) async fn reload(admin: u16) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(("127.0.0.1", admin))
        .await
        .unwrap();
    conn.write_all(
        b"POST /reload HTTP/1.1\r\nHost: admin\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).await.unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 200"),
        "reload failed: {answer}"
    );
}

/// `rounds` raw Table lists of `path` (`/api/v1/pods`) on one connection: p50/p99 ms, and
/// the last answer's (bytes, rows).
pub(super) async fn table_once(
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
    token: Option<&str>,
    path: &str,
    rounds: usize,
) -> (Value, (usize, usize)) {
    let mut tls = rustls::ClientConfig::clone(tls);
    tls.alpn_protocols.clear();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            eprintln!("connection to {addr}: {e}");
        }
    });
    let mut took = Vec::with_capacity(rounds);
    let mut last = (0, 0);
    for _ in 0..rounds {
        let mut req = http::Request::get(path)
            .header("host", addr.to_string())
            .header("accept", ACCEPT_TABLE);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let started = Instant::now();
        sender.ready().await.unwrap();
        let res = sender
            .send_request(req.body(Empty::<Bytes>::new()).unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let body = res.into_body().collect().await.unwrap().to_bytes();
        took.push(started.elapsed());
        let table: Value = serde_json::from_slice(&body).unwrap();
        last = (body.len(), table["rows"].as_array().map_or(0, Vec::len));
    }
    (percentiles(took), last)
}

/// One raw Table list on a connection of its own, whatever the answer: (status, ms, the
/// `Status` message when it failed).
async fn table_try(
    addr: SocketAddr,
    tls: &Arc<rustls::ClientConfig>,
    token: &str,
) -> (u16, f64, String) {
    let mut tls = rustls::ClientConfig::clone(tls);
    tls.alpn_protocols.clear();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = http::Request::get("/api/v1/pods")
        .header("host", addr.to_string())
        .header("accept", ACCEPT_TABLE)
        .header("authorization", format!("Bearer {token}"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    let started = Instant::now();
    let res = sender.send_request(req).await.unwrap();
    let status = res.status().as_u16();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    let ms = round(started.elapsed().as_secs_f64() * 1000.0);
    let message = if status == 200 {
        String::new()
    } else {
        serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|s| s["message"].as_str().map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned())
    };
    (status, ms, message)
}

/// `rounds` runs of `kubectl get pods -A`, process start to exit: p50/p99 ms.
fn kubectl_rounds(
    kubectl: &Path,
    kubeconfig: &Path,
    cache: &Path,
    rounds: usize,
    pods: usize,
) -> Value {
    let mut took = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        let out = Command::new(kubectl)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(cache)
            .args(["get", "pods", "-A"])
            .output()
            .unwrap();
        took.push(started.elapsed());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.stdout.iter().filter(|b| **b == b'\n').count(), pods + 1);
    }
    percentiles(took)
}

fn percentiles(mut took: Vec<Duration>) -> Value {
    took.sort();
    let pct = |p: f64| {
        round(took[((took.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0)
    };
    json!({"p50": pct(0.5), "p99": pct(0.99)})
}
