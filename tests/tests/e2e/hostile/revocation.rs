//! Revocation reaches open connections, and caps bound what one tenant holds open: a
//! tenant's watch, exec and log follow on the kube-api front (TLS, a simulated leaf) end
//! within a second of the reload that takes the token or the namespace away, while other
//! sessions go on; past `[tenant.concurrent]` caps, kube-apiserver's 429 with
//! `Retry-After`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::Request;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kubesim::{Credential, KubeSim};
use leafgate_tests::certs::TestCa;
use leafgate_tests::client::next_data;
use leafgate_tests::config::{Leaf, Listener, Tenant};
use leafgate_tests::{Config, TestGateway};
use rustls_pki_types::ServerName;
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// The token a reload takes away, the one acme keeps, and another tenant's.
const REVOKED: &str = "acme-token-revoked-0001";
const KEPT: &str = "acme-token-kept-000002";
const OTHER: &str = "other-token-0000003";

/// A revoked session must be gone within a second of the reload; this much more is
/// scheduling slack on a busy test machine.
const SLACK: Duration = Duration::from_millis(250);

fn pod(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": name},
        "spec": {"nodeName": "leaf-node", "containers": [{"name": "app", "image": "busybox"}]},
        "status": {"phase": "Running", "podIP": "10.1.2.3"}
    })
}

/// The client certificate name acme's `client_names` holds until a reload takes it out.
const CI: &str = "acme-ci";

/// acme owns `apps` and `apps-2` (tokens REVOKED and KEPT, certificate CI), other owns
/// `other`.
fn config(acme_namespaces: &[&str], other_namespaces: &[&str], caps: Option<Value>) -> Config {
    with_client_names(acme_namespaces, other_namespaces, caps, &[CI])
}

fn with_client_names(
    acme_namespaces: &[&str],
    other_namespaces: &[&str],
    caps: Option<Value>,
    client_names: &[&str],
) -> Config {
    let mut acme = Tenant::new("acme")
        .namespaces(acme_namespaces.iter().copied())
        .tokens_file("acme.tokens")
        .client_names(client_names.iter().copied());
    if let Some(caps) = caps {
        acme = acme.set("concurrent", caps);
    }
    with_acme(acme, other_namespaces)
}

/// The bed's config with a second leaf `leaf-b` (the bed's spare simulator) and acme
/// limited to `acme_leaves`.
fn with_leaves(acme_leaves: &[&str]) -> Config {
    let acme = Tenant::new("acme")
        .namespaces(["apps", "apps-2"])
        .tokens_file("acme.tokens")
        .leaves(acme_leaves.iter().copied());
    with_acme(acme, &["other"]).leaf(Leaf::new("leaf-b", "b.kubeconfig"))
}

/// The bed's listener and leaf `leaf-a`, tenant `acme` as given and `other`.
fn with_acme(acme: Tenant, other_namespaces: &[&str]) -> Config {
    Config::new()
        .admin()
        .listener(
            Listener::kube_api("kube")
                .tls("kube-api.pem", "kube-api-key.pem")
                .client_ca("clients-ca.pem"),
        )
        .leaf(Leaf::new("leaf-a", "a.kubeconfig"))
        .tenant(acme)
        .tenant(
            Tenant::new("other")
                .namespaces(other_namespaces.iter().copied())
                .tokens_file("other.tokens"),
        )
}

struct Bed {
    gw: TestGateway,
    leaf: KubeSim,
    /// Leaf `leaf-b`, for configs that name it.
    _spare: Option<KubeSim>,
    ca: TestCa,
}

impl Bed {
    async fn start(caps: Option<Value>) -> Bed {
        Bed::start_with(config(&["apps", "apps-2"], &["other"], caps), false).await
    }

    /// A bed serving `config`, with the spare leaf simulator (`b.kubeconfig`) if asked.
    async fn start_with(config: Config, spare: bool) -> Bed {
        let leaf = KubeSim::builder().start().await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        leaf.kubeconfig(
            &Credential::ClientCert("leafgate".into()),
            &dir.path().join("a.kubeconfig"),
        )
        .unwrap();
        let spare = match spare {
            true => {
                let sim = KubeSim::builder().start().await.unwrap();
                sim.kubeconfig(
                    &Credential::ClientCert("leafgate".into()),
                    &dir.path().join("b.kubeconfig"),
                )
                .unwrap();
                Some(sim)
            }
            false => None,
        };
        let ca = TestCa::new("kube-api CA");
        ca.issue(dir.path(), "kube-api", &["127.0.0.1"]);
        ca.write(dir.path(), "clients-ca.pem");
        std::fs::write(
            dir.path().join("acme.tokens"),
            format!("{REVOKED}\n{KEPT}\n"),
        )
        .unwrap();
        std::fs::write(dir.path().join("other.tokens"), OTHER).unwrap();
        let gw = TestGateway::start_in(dir, config).await;
        for (ns, name) in [("apps", "web"), ("apps-2", "job"), ("other", "db")] {
            leaf.create(pod(ns, name)).unwrap();
        }
        let bed = Bed {
            gw,
            leaf,
            _spare: spare,
            ca,
        };
        for (ns, name) in [("apps", "web"), ("apps-2", "job"), ("other", "db")] {
            bed.indexed(ns, name).await;
        }
        bed
    }

    async fn indexed(&self, ns: &str, name: &str) {
        self.gw.indexed(ns, name).await;
    }

    fn addr(&self) -> SocketAddr {
        self.gw.addr("kube")
    }

    async fn tls(&self, alpn: &[&[u8]]) -> TlsStream<TcpStream> {
        self.tls_as(None, alpn).await
    }

    /// A TLS connection, with a client certificate named `cn` if given.
    async fn tls_as(&self, cn: Option<&str>, alpn: &[&[u8]]) -> TlsStream<TcpStream> {
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(self.ca.roots());
        let mut config = match cn {
            Some(cn) => {
                let files = self.ca.issue(self.gw.path(), cn, &[cn]);
                builder
                    .with_client_auth_cert(
                        vec![CertificateDer::from_pem_file(&files.cert).unwrap()],
                        PrivateKeyDer::from_pem_file(&files.key).unwrap(),
                    )
                    .unwrap()
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let tcp = TcpStream::connect(self.addr()).await.unwrap();
        TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
            .await
            .unwrap()
    }

    /// A GET on a connection of its own (HTTP/1.1): the response head, body unread.
    async fn get(&self, token: &str, path: &str) -> http::Response<Incoming> {
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(TokioIo::new(self.tls(&[]).await))
                .await
                .unwrap();
        tokio::spawn(conn);
        sender.send_request(request(token, path)).await.unwrap()
    }

    /// An HTTP/2 connection, for several calls on one connection.
    async fn h2(&self) -> hyper::client::conn::http2::SendRequest<Empty<Bytes>> {
        let (sender, conn) = hyper::client::conn::http2::handshake(
            TokioExecutor::new(),
            TokioIo::new(self.tls(&[b"h2"]).await),
        )
        .await
        .unwrap();
        tokio::spawn(conn);
        sender
    }

    /// An interactive `cat` in `ns/name` over a WebSocket (v5, as kubectl ≥1.30 sends it).
    async fn exec(
        &self,
        token: &str,
        ns: &str,
        name: &str,
    ) -> Result<tokio_tungstenite::WebSocketStream<TlsStream<TcpStream>>, WsError> {
        let path = format!(
            "/api/v1/namespaces/{ns}/pods/{name}/exec?command=cat&container=app&stdin=true&stdout=true"
        );
        let mut req = format!("wss://127.0.0.1{path}")
            .into_client_request()
            .unwrap();
        let headers = req.headers_mut();
        headers.insert(
            "sec-websocket-protocol",
            "v5.channel.k8s.io".parse().unwrap(),
        );
        headers.insert("authorization", format!("Bearer {token}").parse().unwrap());
        let tls = self.tls(&[b"http/1.1"]).await;
        tokio_tungstenite::client_async(req, tls)
            .await
            .map(|(ws, _)| ws)
    }

    /// Rewrites the config (and acme's tokens file) and reloads; when the reload returned.
    async fn reload(&self, acme_tokens: &str, config: Config) -> Instant {
        std::fs::write(self.gw.path().join("acme.tokens"), acme_tokens).unwrap();
        std::fs::write(&self.gw.config, config.to_string()).unwrap();
        self.gw.gateway.reload().await.unwrap();
        Instant::now()
    }

    async fn metrics(&self) -> String {
        leafgate_tests::client::get(self.gw.admin(), "admin", "/metrics")
            .await
            .text()
    }
}

fn request(token: &str, path: &str) -> Request<Empty<Bytes>> {
    Request::get(path)
        .header("host", "127.0.0.1")
        .header("authorization", format!("Bearer {token}"))
        .body(Empty::new())
        .unwrap()
}

/// Sends `line` on an exec's stdin and waits for it back on stdout.
async fn echoes(ws: &mut tokio_tungstenite::WebSocketStream<TlsStream<TcpStream>>, line: &str) {
    ws.send(Message::binary([&[0u8][..], line.as_bytes()].concat()))
        .await
        .unwrap();
    let mut out = Vec::new();
    while out != line.as_bytes() {
        let message = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("the echo within 10 s")
            .expect("the exec still open")
            .unwrap();
        if let Message::Binary(data) = message
            && data.first() == Some(&1)
        {
            out.extend_from_slice(&data[1..]);
        }
    }
}

/// Watch events as they come, one JSON object a line.
struct Events {
    body: Incoming,
    buf: Vec<u8>,
}

impl Events {
    fn new(res: http::Response<Incoming>) -> Events {
        assert_eq!(res.status(), 200);
        Events {
            body: res.into_body(),
            buf: Vec::new(),
        }
    }

    /// The next event, or `None` at the end of the watch.
    async fn next(&mut self, within: Duration) -> Option<Value> {
        loop {
            if let Some(i) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=i).collect();
                return Some(serde_json::from_slice(&line).unwrap());
            }
            let data = next_data(&mut self.body, within).await?;
            self.buf.extend_from_slice(&data);
        }
    }

    /// Skips to the event about pod `name`.
    async fn about(&mut self, name: &str) -> Value {
        loop {
            let e = self
                .next(Duration::from_secs(10))
                .await
                .expect("the watch is open");
            if e["object"]["metadata"]["name"] == name {
                return e;
            }
        }
    }
}

#[tokio::test]
async fn a_revoked_tokens_watch_and_exec_end_within_a_second_of_the_reload() {
    let bed = Bed::start(None).await;
    let mut revoked_watch = Events::new(
        bed.get(REVOKED, "/api/v1/namespaces/apps/pods?watch=true")
            .await,
    );
    assert_eq!(revoked_watch.about("web").await["type"], "ADDED");
    let mut exec = bed.exec(REVOKED, "apps", "web").await.unwrap();
    echoes(&mut exec, "before the reload\n").await;
    // The same tenant's other token, and another tenant: untouched by the reload.
    let mut kept_watch = Events::new(
        bed.get(KEPT, "/api/v1/namespaces/apps/pods?watch=true")
            .await,
    );
    assert_eq!(kept_watch.about("web").await["type"], "ADDED");
    let mut kept_exec = bed.exec(KEPT, "apps", "web").await.unwrap();
    let mut other_watch = Events::new(
        bed.get(OTHER, "/api/v1/namespaces/other/pods?watch=true")
            .await,
    );
    assert_eq!(other_watch.about("db").await["type"], "ADDED");

    let same = config(&["apps", "apps-2"], &["other"], None);
    let reloaded = bed.reload(&format!("{KEPT}\n"), same).await;

    // The watch: kube-apiserver's ERROR event (401), then the end.
    let event = revoked_watch
        .next(Duration::from_secs(2))
        .await
        .expect("an ERROR event before the end");
    assert_eq!(event["type"], "ERROR", "{event}");
    assert_eq!(event["object"]["kind"], "Status");
    assert_eq!(event["object"]["code"], 401);
    assert_eq!(event["object"]["reason"], "Unauthorized");
    assert!(revoked_watch.next(Duration::from_secs(2)).await.is_none());
    let watch_ended = reloaded.elapsed();
    // The exec: closed.
    loop {
        match tokio::time::timeout(Duration::from_secs(2), exec.next()).await {
            Ok(None | Some(Err(_)) | Some(Ok(Message::Close(_)))) => break,
            Ok(Some(Ok(_))) => continue,
            Err(_) => panic!("the revoked exec is still open 2 s after the reload"),
        }
    }
    let exec_ended = reloaded.elapsed();
    eprintln!("after the reload: watch ended in {watch_ended:?}, exec in {exec_ended:?}");
    assert!(
        watch_ended < Duration::from_secs(1) + SLACK,
        "{watch_ended:?}"
    );
    assert!(
        exec_ended < Duration::from_secs(1) + SLACK,
        "{exec_ended:?}"
    );

    // The rest goes on.
    echoes(&mut kept_exec, "after the reload\n").await;
    bed.leaf.create(pod("apps", "late")).unwrap();
    bed.leaf.create(pod("other", "late-other")).unwrap();
    assert_eq!(kept_watch.about("late").await["type"], "ADDED");
    assert_eq!(other_watch.about("late-other").await["type"], "ADDED");
    // And the token is refused from now on.
    let refused = bed.get(REVOKED, "/api/v1/namespaces/apps/pods").await;
    assert_eq!(refused.status(), 401);

    let metrics = bed.metrics().await;
    for kind in ["watch", "stream"] {
        let series = format!(r#"leafgate_revoked_total{{tenant="acme",kind="{kind}"}} 1"#);
        assert!(metrics.contains(&series), "{series} in\n{metrics}");
    }
    assert!(
        !metrics.contains(r#"leafgate_revoked_total{tenant="other""#),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_namespace_moved_out_of_the_tenant_ends_its_log_follow_and_no_other() {
    let bed = Bed::start(None).await;
    bed.leaf.append_log("apps-2", "job", "app", "job line 1");
    bed.leaf.append_log("apps", "web", "app", "web line 1");
    let follow = |ns: &str, name: &str| {
        format!("/api/v1/namespaces/{ns}/pods/{name}/log?container=app&follow=true")
    };
    let moved = bed.get(KEPT, &follow("apps-2", "job")).await;
    assert_eq!(moved.status(), 200);
    let mut moved = moved.into_body();
    let stays = bed.get(KEPT, &follow("apps", "web")).await;
    assert_eq!(stays.status(), 200);
    let mut stays = stays.into_body();
    let within = Duration::from_secs(10);
    assert!(
        next_data(&mut moved, within)
            .await
            .is_some_and(|d| d.starts_with(b"job line 1"))
    );
    assert!(
        next_data(&mut stays, within)
            .await
            .is_some_and(|d| d.starts_with(b"web line 1"))
    );

    // apps-2 goes to tenant other.
    let moved_out = config(&["apps"], &["other", "apps-2"], None);
    let reloaded = bed.reload(&format!("{REVOKED}\n{KEPT}\n"), moved_out).await;
    if let Some(data) = next_data(&mut moved, Duration::from_secs(2)).await {
        panic!("the moved namespace's follow still delivers: {data:?}");
    }
    let ended = reloaded.elapsed();
    eprintln!("after the reload: the moved namespace's follow ended in {ended:?}");
    assert!(ended < Duration::from_secs(1) + SLACK, "{ended:?}");

    bed.leaf.append_log("apps", "web", "app", "web line 2");
    assert!(
        next_data(&mut stays, within)
            .await
            .is_some_and(|d| d.starts_with(b"web line 2"))
    );
    let metrics = bed.metrics().await;
    assert!(
        metrics.contains(r#"leafgate_revoked_total{tenant="acme",kind="log_follow"} 1"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_client_name_taken_out_of_client_names_ends_its_watch() {
    let bed = Bed::start(None).await;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(bed.tls_as(Some(CI), &[]).await))
            .await
            .unwrap();
    tokio::spawn(conn);
    let req = Request::get("/api/v1/pods?watch=true")
        .header("host", "127.0.0.1")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let mut watch = Events::new(sender.send_request(req).await.unwrap());
    // `apps/web` is the last initial event (storage-key order: `apps-2/job` comes first).
    assert_eq!(watch.about("web").await["type"], "ADDED");
    let mut kept = Events::new(bed.get(KEPT, "/api/v1/pods?watch=true").await);
    assert_eq!(kept.about("job").await["type"], "ADDED");

    let without = with_client_names(&["apps", "apps-2"], &["other"], None, &[]);
    let reloaded = bed.reload(&format!("{REVOKED}\n{KEPT}\n"), without).await;
    let event = watch
        .next(Duration::from_secs(2))
        .await
        .expect("an ERROR event before the end");
    assert_eq!(event["type"], "ERROR", "{event}");
    assert_eq!(event["object"]["code"], 401, "{event}");
    assert!(watch.next(Duration::from_secs(2)).await.is_none());
    let ended = reloaded.elapsed();
    eprintln!("after the reload: the certificate's watch ended in {ended:?}");
    assert!(ended < Duration::from_secs(1) + SLACK, "{ended:?}");
    // The token's cluster-wide watch covers the same namespaces as before: it goes on.
    bed.leaf.create(pod("apps-2", "late")).unwrap();
    assert_eq!(kept.about("late").await["type"], "ADDED");
}

#[tokio::test]
async fn a_leaf_taken_out_of_the_tenants_leaves_ends_its_exec_and_watch() {
    let bed = Bed::start_with(with_leaves(&["leaf-a", "leaf-b"]), true).await;
    let mut exec = bed.exec(KEPT, "apps", "web").await.unwrap();
    echoes(&mut exec, "before the reload\n").await;
    let mut watch = Events::new(bed.get(KEPT, "/api/v1/pods?watch=true").await);
    assert_eq!(watch.about("web").await["type"], "ADDED");
    let mut other_watch = Events::new(bed.get(OTHER, "/api/v1/pods?watch=true").await);
    assert_eq!(other_watch.about("db").await["type"], "ADDED");

    // acme keeps only leaf-b, where none of its pods live.
    let reloaded = bed
        .reload(&format!("{REVOKED}\n{KEPT}\n"), with_leaves(&["leaf-b"]))
        .await;
    // The initial ADDED events still in flight, then kube-apiserver's ERROR (403).
    let event = loop {
        let event = watch
            .next(Duration::from_secs(2))
            .await
            .expect("an ERROR event before the end");
        if event["type"] != "ADDED" {
            break event;
        }
    };
    assert_eq!(event["type"], "ERROR", "{event}");
    assert_eq!(event["object"]["code"], 403, "{event}");
    assert!(watch.next(Duration::from_secs(2)).await.is_none());
    loop {
        match tokio::time::timeout(Duration::from_secs(2), exec.next()).await {
            Ok(None | Some(Err(_)) | Some(Ok(Message::Close(_)))) => break,
            Ok(Some(Ok(_))) => continue,
            Err(_) => panic!("the exec into leaf-a is still open 2 s after the reload"),
        }
    }
    let ended = reloaded.elapsed();
    eprintln!("after the reload: the watch and the exec into leaf-a ended in {ended:?}");
    assert!(ended < Duration::from_secs(1) + SLACK, "{ended:?}");

    // Another tenant's watch goes on; acme no longer sees leaf-a's pods at all.
    bed.leaf.create(pod("other", "late-other")).unwrap();
    assert_eq!(other_watch.about("late-other").await["type"], "ADDED");
    let list = bed.get(KEPT, "/api/v1/namespaces/apps/pods").await;
    assert_eq!(list.status(), 200);
    let body = list.into_body().collect().await.unwrap().to_bytes();
    let list: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(list["items"], json!([]), "{list}");
}

/// A 429 as kube-apiserver answers it.
async fn assert_too_many(res: http::Response<Incoming>, what: &str) -> Value {
    assert_eq!(res.status(), 429, "{what}");
    assert_eq!(res.headers()["retry-after"], "1", "{what}");
    let body = res.into_body().collect().await.unwrap().to_bytes();
    let status: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status["kind"], "Status", "{what}: {status}");
    assert_eq!(status["reason"], "TooManyRequests", "{what}: {status}");
    assert_eq!(
        status["details"]["retryAfterSeconds"], 1,
        "{what}: {status}"
    );
    status
}

#[tokio::test]
async fn watch_stream_and_follow_caps_answer_429_with_retry_after() {
    let caps = json!({
        "watches": { "total": 2, "per_connection": 1 },
        "streams": { "total": 1 },
        "log_follows": { "total": 1 },
    });
    let bed = Bed::start(Some(caps)).await;
    let watch = "/api/v1/namespaces/apps/pods?watch=true";

    // Watches: one per connection, two in all.
    let mut one = bed.h2().await;
    let first = one.send_request(request(KEPT, watch)).await.unwrap();
    assert_eq!(first.status(), 200);
    let status = assert_too_many(
        one.send_request(request(KEPT, watch)).await.unwrap(),
        "a second watch on the connection",
    )
    .await;
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("on this connection"),
        "{status}"
    );
    let second = bed.get(KEPT, watch).await;
    assert_eq!(second.status(), 200);
    assert_too_many(bed.get(REVOKED, watch).await, "a third watch of the tenant").await;
    // Another tenant's caps are its own; a list is no watch.
    assert_eq!(
        bed.get(OTHER, "/api/v1/namespaces/other/pods?watch=true")
            .await
            .status(),
        200
    );
    assert_eq!(
        bed.get(KEPT, "/api/v1/namespaces/apps/pods").await.status(),
        200
    );
    // A watch that ends frees its place.
    drop(first);
    drop(one);
    let started = Instant::now();
    loop {
        let res = bed.get(KEPT, watch).await;
        if res.status() == 200 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the place was not freed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Streams: one.
    let mut exec = bed.exec(KEPT, "apps", "web").await.unwrap();
    echoes(&mut exec, "the one stream\n").await;
    match bed.exec(KEPT, "apps-2", "job").await {
        Err(WsError::Http(res)) => {
            assert_eq!(res.status(), 429);
            assert_eq!(res.headers()["retry-after"], "1");
        }
        Err(e) => panic!("the second stream failed otherwise: {e}"),
        Ok(_) => panic!("a second stream was let past the cap of 1"),
    }

    // Log follows: one; a log without follow is not counted.
    bed.leaf.append_log("apps", "web", "app", "a line");
    let log = "/api/v1/namespaces/apps/pods/web/log?container=app";
    let follow = bed.get(KEPT, &format!("{log}&follow=true")).await;
    assert_eq!(follow.status(), 200);
    assert_too_many(
        bed.get(KEPT, &format!("{log}&follow=1")).await,
        "a second follow",
    )
    .await;
    assert_eq!(bed.get(KEPT, log).await.status(), 200);

    let metrics = bed.metrics().await;
    for series in [
        r#"leafgate_sessions_capped_total{tenant="acme",kind="watch",cap="connection"} 1"#,
        r#"leafgate_sessions_capped_total{tenant="acme",kind="stream",cap="tenant"} 1"#,
        r#"leafgate_sessions_capped_total{tenant="acme",kind="log_follow",cap="tenant"} 1"#,
    ] {
        assert!(metrics.contains(series), "{series} in\n{metrics}");
    }
    assert!(
        metrics
            .contains(r#"leafgate_sessions_capped_total{tenant="acme",kind="watch",cap="tenant"}"#)
    );
}
