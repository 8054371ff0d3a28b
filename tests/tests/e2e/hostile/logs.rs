//! The log filter's window: a container writes lines longer than the filter's 64 KiB
//! window with a secret across the cut, and a tenant reads them through the kube-api front
//! with the real `redact` plugin. No byte of the secret may come out.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use kubesim::{Credential, KubeSim};
use leafgate_tests::certs::TestCa;
use leafgate_tests::config::{Leaf, Listener, Plugin, Tenant};
use leafgate_tests::plugins::plugin;
use leafgate_tests::{Config, TestGateway};
use rustls::pki_types::ServerName;
use serde_json::json;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

const TOKEN: &str = "acme-token-for-the-log-window";
const WINDOW: usize = 64 * 1024;
const SECRET: &str = "hunter2-S3CR3T-VALUE";

/// Tenant acme's log, read through the gateway's kube-api listener.
async fn read_log(gw: &TestGateway, ca: &TestCa) -> (StatusCode, String) {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(ca.roots())
        .with_no_client_auth();
    let tcp = TcpStream::connect(gw.addr("kube")).await.unwrap();
    let tls = TlsConnector::from(std::sync::Arc::new(tls))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let req = Request::get("/api/v1/namespaces/apps/pods/web/log?container=app")
        .header("host", "127.0.0.1")
        .header("authorization", format!("Bearer {TOKEN}"))
        .body(Empty::<Bytes>::new())
        .unwrap();
    let res = tokio::time::timeout(Duration::from_secs(20), sender.send_request(req))
        .await
        .unwrap()
        .unwrap();
    let status = res.status();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn a_secret_across_the_64_kib_cut_never_comes_out_in_clear() {
    let leaf = KubeSim::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    leaf.kubeconfig(
        &Credential::ClientCert("leafgate".into()),
        &dir.path().join("leaf.kubeconfig"),
    )
    .unwrap();
    let ca = TestCa::new("kube-api CA");
    ca.issue(dir.path(), "kube-api", &["127.0.0.1"]);
    std::fs::write(dir.path().join("acme.tokens"), TOKEN).unwrap();
    let config = Config::new()
        .admin()
        .listener(Listener::kube_api("kube").tls("kube-api.pem", "kube-api-key.pem"))
        .leaf(Leaf::new("leaf", "leaf.kubeconfig"))
        .tenant(
            Tenant::new("acme")
                .namespaces(["apps"])
                .tokens_file("acme.tokens")
                .plugin(
                    "log_filter",
                    // A slow call on a busy test machine must not pass as the cut's leak:
                    // room enough, and a failure would end the stream, not keep the batch.
                    Plugin::new(plugin("redact"))
                        .config(json!({"patterns": [r"password=\S+"]}))
                        .on_error("reject")
                        .set("deadline", "2s"),
                ),
        );
    let gw = TestGateway::start_in(dir, config).await;
    leaf.create(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": "apps", "name": "web"},
        "spec": {"nodeName": "leaf-node", "containers": [{"name": "app", "image": "busybox"}]},
        "status": {"phase": "Running", "podIP": "10.1.2.3"}
    }))
    .unwrap();

    // The secret starts a few bytes before the cut, right at it, and far enough before it
    // that only its value straddles; one line also crosses a second window.
    let starts = [
        WINDOW - 3,
        WINDOW - 12,
        WINDOW - 25,
        WINDOW,
        WINDOW - 1,
        2 * WINDOW - 4096 - 14,
    ];
    let mut lines = Vec::new();
    for (i, at) in starts.into_iter().enumerate() {
        // `at` counts the leading `x`s and the blank before `password=`.
        let line = format!(
            "{} password={SECRET} tail-{i}-{}",
            "x".repeat(at - 1),
            "y".repeat(3000)
        );
        leaf.append_log("apps", "web", "app", &line);
        lines.push(line);
    }

    let started = std::time::Instant::now();
    let (status, body) = loop {
        let (status, body) = read_log(&gw, &ca).await;
        // The pod index fills in shortly after the pod exists.
        if status == StatusCode::OK || started.elapsed() > Duration::from_secs(10) {
            break (status, body);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(status, StatusCode::OK, "{body:.300}");
    for part in ["hunter", "S3CR", "3T-V", "VALUE", "2-S"] {
        if let Some(at) = body.find(part) {
            let line = body[..at].matches('\n').count();
            let from = body[..at].rfind('\n').map_or(0, |n| n + 1);
            panic!(
                "{part:?} came out in line {line} at {}: {:?}",
                at - from,
                &body[at.saturating_sub(40)..(at + 40).min(body.len())]
            );
        }
    }
    let got: Vec<&str> = body.lines().collect();
    assert_eq!(got.len(), starts.len(), "one line out per line in");
    for (i, (line, at)) in got.iter().zip(starts).enumerate() {
        // `redact` replaces the whole match, `password=` included.
        let head = format!("{} ", "x".repeat(at - 1));
        let tail = format!(" tail-{i}-{}", "y".repeat(3000));
        let same = line
            .bytes()
            .zip(head.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        assert!(
            line.starts_with(&head),
            "line {i}: the text before the secret, once; differs at {same} of {}: {:?}",
            line.len(),
            &line[same.saturating_sub(20)..(same + 40).min(line.len())]
        );
        assert!(line.ends_with(&tail), "line {i}: the text after it, once");
        let redacted = &line[head.len()..line.len() - tail.len()];
        assert!(
            !redacted.is_empty() && redacted.chars().all(|c| c == '*'),
            "line {i}: {redacted:?} where the secret was"
        );
    }
}
