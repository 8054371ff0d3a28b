//! `kube-api-kinds LEAFGATE DEPLOYMENTS LEAVES ROUNDS`: the kube-api front's read-only
//! kinds at scale: DEPLOYMENTS deployments spread over LEAVES simulated leaves, listed as
//! the Table `kubectl get deploy -A` asks for (`GET /apis/apps/v1/deployments`), and what
//! keeping them costs leafgate's memory.
//!
//! LEAFGATE starts (`run`, pinned to the CPUs in `LEAFGATE_CPUS`, default `1`) with its
//! tenant served no read-only kind (`resources = []`), so no leaf watches deployments: its
//! RSS then is the baseline. A reload makes it `["deployments.apps"]`: each leaf's
//! reflector lists its deployments as Tables; once the front lists all DEPLOYMENTS, RSS
//! again (the delta is what the kept objects cost, with their printed rows), and the
//! bytes `/status` counts for them. Then ROUNDS raw Table lists over one kept-alive
//! HTTP/1.1 connection, whole answer read (p50/p99 ms, measured at the client on
//! loopback), and RSS after them. Peer: the same Table from one kubesim holding every
//! deployment (a simulator, not kube-apiserver). Prints one JSON object.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use leafgate_tests::certs::TestCa;
use serde_json::{Value, json};

use super::exec::{Gateway, free_port, wait_synced};
use super::kube_api::{kube_api_config, reload, simulated_leaves, table_once};

const PATH: &str = "/apis/apps/v1/deployments";

fn deployment(i: usize, leaf: usize) -> Value {
    let app = format!("a{}", i % 50);
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": format!("d-{leaf}-{i:05}"), "namespace": "bench",
                     "labels": {"app": app}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": app}},
                 "template": {"metadata": {"labels": {"app": app}},
                              "spec": {"containers": [{"name": "main", "image": "registry.example/app:1.0"}]}}},
    })
}

/// The process's resident memory, in KiB (`VmRSS`).
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/<pid>/status")
}

/// `GET /status` on the admin listener (from 127.0.0.1: no token needed).
async fn status(admin: u16) -> Value {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(("127.0.0.1", admin))
        .await
        .unwrap();
    conn.write_all(b"GET /status HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).await.unwrap();
    let (_, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    serde_json::from_str(body).expect("/status is JSON")
}

pub async fn run(leafgate: &str, deployments: usize, leaves: usize, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (sims, leaf_toml, single) =
        simulated_leaves(dir.path(), leaves, deployments, deployment).await;

    let ca = TestCa::new("bench CA");
    let ca_path = ca.write(dir.path(), "ca.pem");
    ca.issue(dir.path(), "kube-api", &["127.0.0.1"]);
    std::fs::write(dir.path().join("bench.tokens"), "bench-token\n").unwrap();
    let (kube, admin) = (free_port(), free_port());
    let config = dir.path().join("leafgate.toml");
    let config_text = |resources: &str| {
        kube_api_config(
            admin,
            kube,
            &leaf_toml,
            &format!("resources = [{resources}]\n"),
        )
    };
    std::fs::write(&config, config_text("")).unwrap();
    let mut gateway = Gateway::pinned(leafgate, &config);
    wait_synced(admin, &mut gateway).await;
    // taskset execs leafgate: the same process.
    let pid = gateway.0.id();
    let addr: SocketAddr = format!("127.0.0.1:{kube}").parse().unwrap();
    let client = ca.issue(dir.path(), "client", &["bench-client"]);
    let via_tls = Arc::new(
        kubesim::tls::client_config(
            Some(&std::fs::read_to_string(&ca_path).unwrap()),
            &std::fs::read_to_string(&client.cert).unwrap(),
            &std::fs::read_to_string(&client.key).unwrap(),
        )
        .unwrap(),
    );
    let token = Some("bench-token");
    let rss_before = rss_kib(pid);

    std::fs::write(&config, config_text("\"deployments.apps\"")).unwrap();
    let started = Instant::now();
    reload(admin).await;
    loop {
        let (_, (_, rows)) = table_once(addr, &via_tls, token, PATH, 1).await;
        if rows == deployments {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "{rows} of {deployments} deployments listed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let synced_ms = started.elapsed().as_millis() as u64;
    let rss_synced = rss_kib(pid);
    let counted: Vec<Value> = status(admin).await["leaves"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|l| l["kinds"].as_array().cloned().unwrap_or_default())
        .filter(|k| k["resource"] == "deployments.apps")
        .collect();
    let counted_bytes: u64 = counted
        .iter()
        .filter_map(|k| k["json_bytes"].as_u64())
        .sum();
    let counted_objects: u64 = counted.iter().filter_map(|k| k["objects"].as_u64()).sum();
    assert_eq!(counted_objects, deployments as u64, "{counted:?}");

    let (lat, (bytes, rows)) = table_once(addr, &via_tls, token, PATH, rounds).await;
    assert_eq!(rows, deployments);
    let rss_after = rss_kib(pid);
    let single_tls = {
        let (cert, key) = single.client_cert("bench").unwrap();
        Arc::new(kubesim::tls::client_config(Some(single.ca_pem()), &cert, &key).unwrap())
    };
    let (single_lat, (single_bytes, single_rows)) =
        table_once(single.addr(), &single_tls, None, PATH, rounds).await;
    assert_eq!(single_rows, deployments);
    let per_10k = |kib: i64| kib * 10_000 / deployments.max(1) as i64;
    let delta = rss_synced as i64 - rss_before as i64;
    println!(
        "{}",
        json!({
            "deployments": deployments, "leaves": leaves, "rounds": rounds,
            "raw_table_deployments": {"ms": lat, "bytes": bytes},
            "raw_table_deployments_single_kubesim": {"ms": single_lat, "bytes": single_bytes},
            "first_sync_ms": synced_ms,
            "rss_kib": {"before": rss_before, "synced": rss_synced, "after_rounds": rss_after},
            "rss_delta_kib_per_10k": per_10k(delta),
            "counted_kib_per_10k": per_10k((counted_bytes / 1024) as i64),
        })
    );
    drop(sims);
}
