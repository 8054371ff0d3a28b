//! kube-api watches from the leaves' change feeds, end to end: two simulated leaves behind
//! leafgate, tenants `acme` (namespaces `apps`, `apps-*`) and `other` (`other`), the real
//! kubectl (every binary `kubesim::kubectl::all()` lists) and a raw streaming client.
//!
//! What it proves: `kubectl wait` (1.37's streamed list and 1.32's list+watch) returns
//! within 2 s of the change in a leaf; `get -w` sees ADDED, MODIFIED and DELETED; a watch
//! from a list's `resourceVersion` gets the DELETED of a pod removed in between; a token
//! older than the feed keeps gets kube-apiserver's `410 Expired` as an `ERROR` event, while
//! another tenant's token, whose namespaces did not move, still resumes; a tenant's watch
//! never carries another tenant's events; fields the typed client does not know survive.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use kubesim::KubeSim;
use leafgate_tests::TestGateway;
use leafgate_tests::certs::TestCa;
use leafgate_tests::kube::{self, KubeUser};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const TOKEN_A: &str = "acme-watch-token";
const TOKEN_OTHER: &str = "other-watch-token";

fn pod(ns: &str, name: &str, ready: bool) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "labels": {"app": "x"}},
        "spec": {"nodeName": "leaf-node", "containers": [{"name": "app", "image": "busybox"}]},
        "status": {
            "phase": "Running", "podIP": "10.1.2.3",
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
            "containerStatuses": [{"name": "app", "ready": ready, "restartCount": 0, "image": "busybox", "imageID": "", "state": {"running": {}}}],
        }
    })
}

struct Bed {
    gw: TestGateway,
    leaf_a: KubeSim,
    leaf_b: KubeSim,
    ca: TestCa,
    dir: tempfile::TempDir,
}

impl Bed {
    async fn start() -> Bed {
        let kube::TwoLeaves {
            gw,
            leaf_a,
            leaf_b,
            ca,
        } = kube::TwoLeaves::start(TOKEN_A, TOKEN_OTHER).await;
        Bed {
            gw,
            leaf_a,
            leaf_b,
            ca,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn addr(&self) -> SocketAddr {
        self.gw.addr("kube")
    }

    /// Waits (up to 10 s) until no leaf's copy of `ns/name` is in the gateway's index.
    async fn unindexed(&self, ns: &str, name: &str) {
        let started = Instant::now();
        while !self.gw.gateway.snapshot().pods.holders(ns, name).is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{ns}/{name} still indexed"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A kubeconfig for `token` in namespace `apps`.
    fn kubeconfig(&self, token: &str) -> PathBuf {
        kube::kubeconfig(
            self.dir.path(),
            &self.ca,
            self.addr(),
            KubeUser::Token(token),
            Some("apps"),
        )
    }

    /// kubectl as acme, logging its requests (`-v=6`) so the test sees its watch open.
    fn kubectl(&self, bin: &Path, args: &[&str]) -> tokio::process::Child {
        Command::new(bin)
            .arg("--kubeconfig")
            .arg(self.kubeconfig(TOKEN_A))
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .arg("-v=6")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    }

    /// A GET as a plain API client sends it, the answer's status and body as a stream.
    async fn get(&self, token: &str, path: &str) -> (u16, Stream) {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(self.ca.roots())
            .with_no_client_auth();
        let tcp = tokio::net::TcpStream::connect(self.addr()).await.unwrap();
        let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
            .connect(
                rustls_pki_types::ServerName::try_from("127.0.0.1").unwrap(),
                tcp,
            )
            .await
            .unwrap();
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .unwrap();
        tokio::spawn(conn);
        let req = http::Request::get(path)
            .header("host", "127.0.0.1")
            .header("authorization", format!("Bearer {token}"))
            .body(http_body_util::Empty::<Bytes>::new())
            .unwrap();
        let res = sender.send_request(req).await.unwrap();
        (
            res.status().as_u16(),
            Stream {
                body: res.into_body(),
                buf: Vec::new(),
            },
        )
    }

    /// A list's JSON.
    async fn list(&self, token: &str, path: &str) -> Value {
        let (code, s) = self.get(token, path).await;
        assert_eq!(code, 200, "{path}");
        let body = s.body.collect().await.unwrap().to_bytes();
        serde_json::from_slice(&body).unwrap()
    }
}

/// A response body read line by line.
struct Stream {
    body: hyper::body::Incoming,
    buf: Vec<u8>,
}

impl Stream {
    /// The next JSON line within `wait`, `None` if the body ended, panics on silence.
    async fn next(&mut self, wait: Duration) -> Option<Value> {
        tokio::time::timeout(wait, async {
            loop {
                if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = self.buf.drain(..=i).collect();
                    return Some(serde_json::from_slice(&line).unwrap());
                }
                match self.body.frame().await {
                    Some(frame) => {
                        if let Ok(data) = frame.unwrap().into_data() {
                            self.buf.extend_from_slice(&data);
                        }
                    }
                    None => return None,
                }
            }
        })
        .await
        .expect("a watch event in time")
    }

    /// Whether nothing arrives within `wait`.
    async fn quiet(&mut self, wait: Duration) -> bool {
        tokio::time::timeout(wait, self.next(Duration::from_secs(3600)))
            .await
            .is_err()
    }
}

/// (type, namespace/name) of a watch event.
fn seen(event: &Value) -> (String, String) {
    let o = &event["object"];
    (
        event["type"].as_str().unwrap_or("").to_string(),
        format!(
            "{}/{}",
            o["metadata"]["namespace"].as_str().unwrap_or(""),
            o["metadata"]["name"].as_str().unwrap_or("")
        ),
    )
}

/// Reads kubectl's `-v=6` log until it shows a watch request answered 200.
async fn watch_open(stderr: &mut tokio::io::Lines<BufReader<tokio::process::ChildStderr>>) {
    tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            let line = stderr
                .next_line()
                .await
                .unwrap()
                .expect("kubectl still runs");
            if line.contains("watch=true") && line.contains("200 OK") {
                return;
            }
        }
    })
    .await
    .expect("kubectl opened a watch within 15 s");
}

/// kubectl's exit within 10 s: (success, stdout, stderr).
async fn finished(mut child: tokio::process::Child) -> (bool, String) {
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("kubectl ended")
        .unwrap();
    let mut out = String::new();
    if let Some(mut o) = child.stdout.take() {
        use tokio::io::AsyncReadExt;
        o.read_to_string(&mut out).await.unwrap();
    }
    (status.success(), out)
}

#[tokio::test]
async fn kubectl_wait_returns_within_two_seconds_of_ready_and_of_delete() {
    let bed = Bed::start().await;
    for (i, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        let b = bin.display();
        let name = format!("slow-{i}");
        bed.leaf_b.create(pod("apps", &name, false)).unwrap();
        bed.gw.indexed("apps", &name).await;
        let target = format!("pod/{name}");

        let mut wait = bed.kubectl(
            &bin,
            &["wait", "--for=condition=Ready", &target, "--timeout=30s"],
        );
        let mut log = BufReader::new(wait.stderr.take().unwrap()).lines();
        watch_open(&mut log).await;
        let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        bed.leaf_b
            .patch_status("v1", "Pod", "apps", &name, &ready)
            .unwrap();
        let changed = Instant::now();
        let (ok, out) = finished(wait).await;
        assert!(ok && out.contains("condition met"), "{b}: {out}");
        assert!(
            changed.elapsed() < Duration::from_secs(2),
            "{b}: {:?}",
            changed.elapsed()
        );

        let mut wait = bed.kubectl(&bin, &["wait", "--for=delete", &target, "--timeout=30s"]);
        let mut log = BufReader::new(wait.stderr.take().unwrap()).lines();
        watch_open(&mut log).await;
        bed.leaf_b.delete("v1", "Pod", "apps", &name).unwrap();
        let deleted = Instant::now();
        let (ok, out) = finished(wait).await;
        assert!(ok, "{b}: {out}");
        assert!(
            deleted.elapsed() < Duration::from_secs(2),
            "{b}: {:?}",
            deleted.elapsed()
        );
    }
}

#[tokio::test]
async fn kubectl_get_watch_sees_added_modified_and_deleted() {
    let bed = Bed::start().await;
    bed.leaf_a.create(pod("apps", "web", true)).unwrap();
    bed.gw.indexed("apps", "web").await;
    for (i, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        let b = bin.display();
        let mut child = bed.kubectl(&bin, &["get", "pods", "-w", "--output-watch-events"]);
        let mut log = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // Each line's words, one space apart (kubectl pads its columns).
        let mut next = async || {
            let line = tokio::time::timeout(Duration::from_secs(15), lines.next_line())
                .await
                .expect("a line within 15 s")
                .unwrap()
                .expect("kubectl still watching");
            line.split_whitespace().collect::<Vec<_>>().join(" ")
        };
        assert!(next().await.starts_with("EVENT "), "{b}");
        assert!(next().await.starts_with("ADDED "), "{b}: the list");
        watch_open(&mut log).await;
        let name = format!("late-{i}");
        bed.leaf_b.create(pod("apps", &name, false)).unwrap();
        let line = next().await;
        assert!(line.starts_with(&format!("ADDED {name} ")), "{b}: {line}");
        assert!(line.contains("leaf-b"), "{b}: {line}");
        let ready = json!({"status": {"containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "image": "busybox", "imageID": "", "state": {"running": {}}}]}});
        bed.leaf_b
            .patch_status("v1", "Pod", "apps", &name, &ready)
            .unwrap();
        let line = next().await;
        assert!(
            line.starts_with(&format!("MODIFIED {name} 1/1 ")),
            "{b}: {line}"
        );
        // Another tenant's pod on the same leaf: nothing for acme.
        bed.leaf_b
            .create(pod("other", &format!("secret-{i}"), true))
            .unwrap();
        bed.leaf_b.delete("v1", "Pod", "apps", &name).unwrap();
        let line = next().await;
        assert!(line.starts_with(&format!("DELETED {name} ")), "{b}: {line}");
        child.kill().await.unwrap();
    }
}

#[tokio::test]
async fn a_watch_from_a_lists_version_gets_the_pod_deleted_in_between() {
    let bed = Bed::start().await;
    for name in ["keep", "doomed"] {
        bed.leaf_a.create(pod("apps", name, true)).unwrap();
        bed.gw.indexed("apps", name).await;
    }
    let list = bed.list(TOKEN_A, "/api/v1/namespaces/apps/pods").await;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(list["items"].as_array().unwrap().len(), 2, "{list}");
    // Another tenant's change does not move acme's token.
    bed.leaf_a.create(pod("other", "theirs", true)).unwrap();
    bed.gw.indexed("other", "theirs").await;
    let again = bed.list(TOKEN_A, "/api/v1/namespaces/apps/pods").await;
    assert_eq!(again["metadata"]["resourceVersion"], rv.as_str());
    bed.leaf_a.delete("v1", "Pod", "apps", "doomed").unwrap();
    bed.unindexed("apps", "doomed").await;

    let (code, mut w) = bed
        .get(
            TOKEN_A,
            &format!("/api/v1/namespaces/apps/pods?watch=true&resourceVersion={rv}"),
        )
        .await;
    assert_eq!(code, 200);
    let event = w.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        seen(&event),
        ("DELETED".into(), "apps/doomed".into()),
        "{event}"
    );
    let token = event["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(token, rv, "each event carries the token to resume after it");
    assert!(
        w.quiet(Duration::from_millis(300)).await,
        "nothing else happened to acme"
    );
    // Resuming from the event's token: only what came after it.
    bed.leaf_b.create(pod("apps", "fresh", true)).unwrap();
    let event = w.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(seen(&event), ("ADDED".into(), "apps/fresh".into()));
    assert_eq!(
        event["object"]["metadata"]["annotations"]["leafgate.io/leaf"],
        "leaf-b"
    );
    let (_, mut resumed) = bed
        .get(
            TOKEN_A,
            &format!("/api/v1/pods?watch=true&resourceVersion={token}"),
        )
        .await;
    let event = resumed.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(seen(&event), ("ADDED".into(), "apps/fresh".into()));
    assert!(resumed.quiet(Duration::from_millis(300)).await);
}

#[tokio::test]
async fn a_streamed_list_ends_its_initial_events_with_the_bookmark() {
    let bed = Bed::start().await;
    for (ns, name) in [("apps", "a1"), ("apps", "a2"), ("other", "o1")] {
        bed.leaf_a.create(pod(ns, name, true)).unwrap();
        bed.gw.indexed(ns, name).await;
    }
    let (code, mut w) = bed
        .get(
            TOKEN_A,
            "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=3",
        )
        .await;
    assert_eq!(code, 200);
    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(w.next(Duration::from_secs(5)).await.unwrap());
    }
    assert_eq!(seen(&got[0]), ("ADDED".into(), "apps/a1".into()));
    assert_eq!(seen(&got[1]), ("ADDED".into(), "apps/a2".into()));
    let bookmark = &got[2];
    assert_eq!(bookmark["type"], "BOOKMARK", "{bookmark}");
    assert_eq!(bookmark["object"]["kind"], "Pod");
    assert_eq!(
        bookmark["object"]["metadata"]["annotations"],
        json!({"k8s.io/initial-events-end": "true"})
    );
    let rv = bookmark["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap();
    assert!(!rv.is_empty());
    bed.leaf_b.create(pod("apps", "a3", true)).unwrap();
    let event = w.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(seen(&event), ("ADDED".into(), "apps/a3".into()));
    // timeoutSeconds: a last bookmark (bookmarks allowed), then a clean end.
    let last = w.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(last["type"], "BOOKMARK", "{last}");
    assert!(last["object"]["metadata"].get("annotations").is_none());
    assert!(
        w.next(Duration::from_secs(2)).await.is_none(),
        "the watch ended"
    );
}

#[tokio::test]
async fn a_token_older_than_the_feed_keeps_is_410_expired_for_its_tenant_only() {
    let bed = Bed::start().await;
    bed.leaf_a.create(pod("apps", "first", true)).unwrap();
    bed.leaf_a.create(pod("other", "theirs", true)).unwrap();
    bed.gw.indexed("apps", "first").await;
    bed.gw.indexed("other", "theirs").await;
    let acme_rv = bed.list(TOKEN_A, "/api/v1/pods").await["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let other_rv =
        bed.list(TOKEN_OTHER, "/api/v1/namespaces/other/pods").await["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
    // More of acme's changes than a leaf's feed keeps (2,048).
    for i in 0..2100 {
        bed.leaf_a
            .create(pod("apps", &format!("p{i:04}"), true))
            .unwrap();
    }
    bed.gw.indexed("apps", "p2099").await;

    let (code, mut w) = bed
        .get(
            TOKEN_A,
            &format!("/api/v1/pods?watch=true&resourceVersion={acme_rv}"),
        )
        .await;
    assert_eq!(code, 200, "kube-apiserver answers 200 and an ERROR event");
    let event = w.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(event["type"], "ERROR", "{event}");
    let status = &event["object"];
    assert_eq!(
        (
            &status["kind"],
            &status["status"],
            &status["reason"],
            &status["code"]
        ),
        (
            &json!("Status"),
            &json!("Failure"),
            &json!("Expired"),
            &json!(410)
        ),
        "{status}"
    );
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("too old resource version: {acme_rv} (")),
        "{message}"
    );
    assert!(
        w.next(Duration::from_secs(2)).await.is_none(),
        "then the end"
    );

    // The other tenant's namespaces did not move: its token still resumes, and sees
    // nothing of acme's 2,100 pods.
    let (code, mut theirs) = bed
        .get(
            TOKEN_OTHER,
            &format!("/api/v1/namespaces/other/pods?watch=true&resourceVersion={other_rv}"),
        )
        .await;
    assert_eq!(code, 200);
    assert!(theirs.quiet(Duration::from_millis(500)).await);
    bed.leaf_a.delete("v1", "Pod", "other", "theirs").unwrap();
    let event = theirs.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(seen(&event), ("DELETED".into(), "other/theirs".into()));

    // A token this gateway never gave: Expired too, so a reflector lists again.
    let (code, mut w) = bed
        .get(TOKEN_A, "/api/v1/pods?watch=true&resourceVersion=12345")
        .await;
    assert_eq!(code, 200);
    let event = w.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        (&event["type"], &event["object"]["code"]),
        (&json!("ERROR"), &json!(410))
    );
}

#[tokio::test]
async fn a_tenants_watch_never_carries_another_tenants_events() {
    let bed = Bed::start().await;
    let (_, mut acme) = bed.get(TOKEN_A, "/api/v1/pods?watch=true").await;
    let (_, mut other) = bed
        .get(TOKEN_OTHER, "/api/v1/namespaces/other/pods?watch=true")
        .await;
    // The other tenant may not watch acme's namespace, nor every namespace.
    let (code, _) = bed
        .get(TOKEN_OTHER, "/api/v1/namespaces/apps/pods?watch=true")
        .await;
    assert_eq!(code, 403);
    for (sim, ns, name) in [
        (&bed.leaf_a, "other", "o1"),
        (&bed.leaf_a, "apps", "a1"),
        (&bed.leaf_b, "other", "o2"),
        (&bed.leaf_b, "apps-x", "a2"),
    ] {
        sim.create(pod(ns, name, true)).unwrap();
    }
    let mut acme_saw = Vec::new();
    let mut other_saw = Vec::new();
    for _ in 0..2 {
        acme_saw.push(seen(&acme.next(Duration::from_secs(5)).await.unwrap()).1);
        other_saw.push(seen(&other.next(Duration::from_secs(5)).await.unwrap()).1);
    }
    acme_saw.sort();
    other_saw.sort();
    assert_eq!(acme_saw, ["apps-x/a2", "apps/a1"]);
    assert_eq!(other_saw, ["other/o1", "other/o2"]);
    bed.leaf_a.delete("v1", "Pod", "other", "o1").unwrap();
    assert_eq!(
        seen(&other.next(Duration::from_secs(5)).await.unwrap()),
        ("DELETED".into(), "other/o1".into())
    );
    assert!(
        acme.quiet(Duration::from_millis(500)).await,
        "acme sees none of it"
    );
}

#[tokio::test]
async fn fields_the_typed_client_does_not_know_survive_kubectl_get_json() {
    let bed = Bed::start().await;
    let mut p = pod("apps", "future", true);
    p["spec"]["hostnameOverride"] = json!("custom-host");
    p["status"]["x"] = json!({"from": "v1.99"});
    bed.leaf_a.create(p).unwrap();
    bed.gw.indexed("apps", "future").await;
    for bin in kubesim::kubectl::all() {
        let child = bed.kubectl(&bin, &["get", "pod", "future", "-o", "json"]);
        let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(got["spec"]["hostnameOverride"], "custom-host", "{got}");
        assert_eq!(got["status"]["x"]["from"], "v1.99");
        assert_eq!(got["metadata"]["annotations"]["leafgate.io/leaf"], "leaf-a");
    }
    let list = bed.list(TOKEN_A, "/api/v1/namespaces/apps/pods").await;
    assert_eq!(list["items"][0]["spec"]["hostnameOverride"], "custom-host");
}

/// Events resume as pods do: a watch from an event list's `resourceVersion` gets the
/// `DELETED` of an event removed in between, and nothing of another tenant's.
#[tokio::test]
async fn events_resumed_from_a_lists_version_replay_a_deletion() {
    let bed = Bed::start().await;
    let event = |ns: &str, name: &str| {
        let now = kubesim::store::now_rfc3339();
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"namespace": ns, "name": name},
            "involvedObject": {"kind": "Pod", "namespace": ns, "name": "web"},
            "reason": "Pulled", "message": name, "type": "Normal",
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        })
    };
    let held = async |n: usize| {
        let started = Instant::now();
        while bed.gw.gateway.snapshot().leaves["leaf-a"].events().len() != n {
            assert!(started.elapsed() < Duration::from_secs(10), "{n} events");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    for name in ["web.keep", "web.doomed"] {
        bed.leaf_a.create(event("apps", name)).unwrap();
    }
    held(2).await;
    let list = bed.list(TOKEN_A, "/api/v1/namespaces/apps/events").await;
    assert_eq!(list["items"].as_array().unwrap().len(), 2, "{list}");
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    // Another tenant's event, then the deletion.
    bed.leaf_a.create(event("other", "theirs")).unwrap();
    held(3).await;
    bed.leaf_a
        .delete("v1", "Event", "apps", "web.doomed")
        .unwrap();
    held(2).await;

    let (code, mut w) = bed
        .get(
            TOKEN_A,
            &format!("/api/v1/namespaces/apps/events?watch=true&resourceVersion={rv}"),
        )
        .await;
    assert_eq!(code, 200);
    let deleted = w.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        seen(&deleted),
        ("DELETED".into(), "apps/web.doomed".into()),
        "{deleted}"
    );
    assert_ne!(
        deleted["object"]["metadata"]["resourceVersion"],
        rv.as_str()
    );
    assert!(
        w.quiet(Duration::from_millis(300)).await,
        "nothing else of acme's"
    );
}
