//! To the leaf goes only what the leaf needs, and names are validated first: a hostile
//! tenant's headers (`Cookie`, `X-Remote-*`, `Impersonate-*`, `Accept-Encoding`) and
//! encoded names (`x%2F..%2F..`) tried on both Kubernetes fronts, checked at the leaf's
//! own request record in the simulator.
//!
//! One gateway with a kube-api and a node-api listener over two simulated leaves. Tenant
//! `team-a` (namespaces `team-a`, `team-a-*`) has a `label-router` that answers for every
//! pod (`default_leaf = leaf-1`, pods named `stray-*` to `leaf-2`), so a name no index
//! holds still reaches a leaf unless the gateway refuses it first; tenant `team-b` owns
//! `team-b`, whose `db-0` log is what the encoded paths aim at.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use kubesim::{Credential, KubeSim, Recorded};
use leafgate_tests::certs::TestCa;
use leafgate_tests::config::{Leaf, Listener, Plugin, Tenant};
use leafgate_tests::plugins::plugin;
use leafgate_tests::{Config, TestGateway};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

/// The kubelet-client name the root API server presents on node-api.
const APISERVER: &str = "kube-apiserver-kubelet-client";
const TOKEN_A: &str = "team-a-token-0123456789";
const TOKEN_B: &str = "team-b-token-0123456789";

/// What a hostile caller adds to an otherwise ordinary pod call.
const HOSTILE: &[(&str, &str)] = &[
    ("cookie", "session=team-b-admin"),
    ("x-remote-user", "system:admin"),
    ("x-remote-group", "system:masters"),
    ("accept-encoding", "gzip"),
    ("x-forwarded-for", "6.6.6.6"),
    ("x-custom-debug", "1"),
    ("user-agent", "hostile/1.0"),
    ("accept", "*/*"),
];

/// The headers a leaf may see on a pod call: the negotiation an upgrade needs, content
/// type and length, accept, user agent, and what leafgate sets itself (the leaf's `Host`
/// and `Authorization`; on an upgrade the forwarding headers naming the real peer).
fn allowed(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "host",
        "authorization",
        "accept",
        "user-agent",
        "content-type",
        "content-length",
        "connection",
        "upgrade",
        "x-stream-protocol-version",
        "x-forwarded-for",
        "x-forwarded-proto",
        "x-real-ip",
        "forwarded",
        "via",
    ];
    let name = name.to_ascii_lowercase();
    NAMES.contains(&name.as_str()) || name.starts_with("sec-websocket-")
}

fn pod(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "labels": {}},
        "spec": {"nodeName": "leaf-node", "containers": [{"name": "app", "image": "busybox"}]},
        "status": {"phase": "Running", "podIP": "10.1.2.3"}
    })
}

struct Bed {
    gw: TestGateway,
    leaf_1: KubeSim,
    leaf_2: KubeSim,
    server_ca: TestCa,
    client_ca: TestCa,
    dir: tempfile::TempDir,
}

impl Bed {
    async fn start() -> Bed {
        let leaf_1 = KubeSim::builder().start().await.unwrap();
        let leaf_2 = KubeSim::builder().start().await.unwrap();
        let gw_dir = tempfile::tempdir().unwrap();
        for (sim, file) in [(&leaf_1, "1.kubeconfig"), (&leaf_2, "2.kubeconfig")] {
            sim.kubeconfig(
                &Credential::ClientCert("leafgate".into()),
                &gw_dir.path().join(file),
            )
            .unwrap();
        }
        let server_ca = TestCa::new("leafgate serving CA");
        server_ca.issue(gw_dir.path(), "serving", &["leafgate.node", "127.0.0.1"]);
        let client_ca = TestCa::new("root kubelet-client CA");
        client_ca.write(gw_dir.path(), "client-ca.pem");
        std::fs::write(gw_dir.path().join("a.tokens"), TOKEN_A).unwrap();
        std::fs::write(gw_dir.path().join("b.tokens"), TOKEN_B).unwrap();
        let router = Plugin::new(plugin("label-router")).config(json!({
            "rules": [{"pod": "stray-*", "leaf": "leaf-2"}],
            "default_leaf": "leaf-1",
        }));
        let config = Config::new()
            .admin()
            .listener(Listener::kube_api("kube").tls("serving.pem", "serving-key.pem"))
            .listener(
                Listener::node_api("kubelet")
                    .tls("serving.pem", "serving-key.pem")
                    .client_ca("client-ca.pem")
                    .allowed_clients([APISERVER]),
            )
            .leaf(Leaf::new("leaf-1", "1.kubeconfig"))
            .leaf(Leaf::new("leaf-2", "2.kubeconfig"))
            .tenant(
                Tenant::new("team-a")
                    .namespaces(["team-a", "team-a-*"])
                    .tokens_file("a.tokens")
                    .plugin("pod_router", router),
            )
            .tenant(
                Tenant::new("team-b")
                    .namespaces(["team-b"])
                    .tokens_file("b.tokens"),
            );
        let gw = TestGateway::start_in(gw_dir, config).await;
        let bed = Bed {
            gw,
            leaf_1,
            leaf_2,
            server_ca,
            client_ca,
            dir: tempfile::tempdir().unwrap(),
        };
        bed.leaf_1.create(pod("team-a", "web-0")).unwrap();
        bed.leaf_1.create(pod("team-a", "stray-0")).unwrap();
        bed.leaf_1.create(pod("team-b", "db-0")).unwrap();
        bed.leaf_1
            .append_log("team-a", "web-0", "app", "team-a line");
        bed.leaf_1
            .append_log("team-b", "db-0", "app", "team-b password=hunter2");
        for (ns, name) in [
            ("team-a", "web-0"),
            ("team-a", "stray-0"),
            ("team-b", "db-0"),
        ] {
            bed.indexed(ns, name).await;
        }
        bed
    }

    async fn indexed(&self, ns: &str, name: &str) {
        self.gw.indexed(ns, name).await;
    }

    /// A TLS connection to `listener`: node-api with the root's kubelet-client
    /// certificate, kube-api with none (its callers carry a bearer token).
    async fn connect(&self, listener: &str) -> TlsStream<TcpStream> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(self.server_ca.roots());
        let config = if listener == "kubelet" {
            let files = self
                .client_ca
                .issue(self.dir.path(), APISERVER, &[APISERVER]);
            builder
                .with_client_auth_cert(
                    vec![CertificateDer::from_pem_file(&files.cert).unwrap()],
                    PrivateKeyDer::from_pem_file(&files.key).unwrap(),
                )
                .unwrap()
        } else {
            builder.with_no_client_auth()
        };
        let addr: SocketAddr = self.gw.addr(listener);
        let tcp = TcpStream::connect(addr).await.unwrap();
        TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from("leafgate.node").unwrap(), tcp)
            .await
            .unwrap()
    }

    /// One plain request to `listener` with `headers` (and team-a's token on kube-api).
    async fn call(
        &self,
        listener: &str,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
    ) -> (StatusCode, String) {
        let tls = self.connect(listener).await;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .unwrap();
        tokio::spawn(conn);
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "leafgate.node");
        if listener == "kube" {
            req = req.header("authorization", format!("Bearer {TOKEN_A}"));
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let res = sender
            .send_request(req.body(Empty::<Bytes>::new()).unwrap())
            .await
            .unwrap();
        let status = res.status();
        let body = res.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    /// A WebSocket exec on `listener` with the hostile headers; the answer's status.
    async fn ws_exec(&self, listener: &str, path: &str) -> StatusCode {
        let tls = self.connect(listener).await;
        let mut request = format!("wss://leafgate.node{path}")
            .into_client_request()
            .unwrap();
        let h = request.headers_mut();
        h.insert(
            "sec-websocket-protocol",
            "v5.channel.k8s.io".parse().unwrap(),
        );
        if listener == "kube" {
            h.insert(
                "authorization",
                format!("Bearer {TOKEN_A}").parse().unwrap(),
            );
        }
        for (k, v) in HOSTILE {
            h.insert(*k, v.parse().unwrap());
        }
        match tokio_tungstenite::client_async(request, tls).await {
            Ok((_ws, res)) => res.status(),
            Err(tokio_tungstenite::tungstenite::Error::Http(res)) => res.status(),
            Err(e) => panic!("websocket exec on {listener}: {e}"),
        }
    }
}

/// The requests a leaf got for single pods (its reflector's `/api/v1/pods` list and watch
/// left out): what a pod call sent it.
fn pod_calls(sim: &KubeSim) -> Vec<Recorded> {
    sim.requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/api/v1/namespaces/"))
        .collect()
}

fn last_at(sim: &KubeSim, path: &str) -> Recorded {
    pod_calls(sim)
        .into_iter()
        .rev()
        .find(|r| r.path == path)
        .unwrap_or_else(|| panic!("no request for {path} at the leaf"))
}

/// Every header the leaf saw is one it may see; the caller's own never came through.
fn assert_only_allowed(r: &Recorded) {
    let refused: Vec<&(String, String)> = r.headers.iter().filter(|(k, _)| !allowed(k)).collect();
    assert!(refused.is_empty(), "{} got {refused:?}", r.path);
    for (k, v) in &r.headers {
        assert!(
            !v.contains("6.6.6.6") && !v.contains("team-b-admin") && !v.contains(TOKEN_A),
            "{} got the caller's {k}: {v}",
            r.path
        );
    }
    let ua: Vec<&str> = r
        .headers
        .iter()
        .filter(|(k, _)| k == "user-agent")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(ua, ["hostile/1.0"], "{}", r.path);
}

#[tokio::test]
async fn log_calls_reach_the_leaf_with_only_allowed_headers_and_never_accept_encoding() {
    let bed = Bed::start().await;
    let (code, body) = bed
        .call(
            "kube",
            Method::GET,
            "/api/v1/namespaces/team-a/pods/web-0/log?container=app",
            HOSTILE,
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body, "team-a line\n");
    let (code, body) = bed
        .call(
            "kubelet",
            Method::GET,
            "/containerLogs/team-a/web-0/app",
            HOSTILE,
        )
        .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body, "team-a line\n");
    let logs = pod_calls(&bed.leaf_1);
    assert_eq!(logs.len(), 2, "{logs:?}");
    for r in &logs {
        assert_eq!(r.path, "/api/v1/namespaces/team-a/pods/web-0/log");
        assert_only_allowed(r);
        assert!(
            r.headers.iter().all(|(k, _)| k != "accept-encoding"),
            "{r:?}"
        );
    }
}

#[tokio::test]
async fn exec_upgrades_reach_the_leaf_with_only_negotiation_headers() {
    let bed = Bed::start().await;
    let path = "/api/v1/namespaces/team-a/pods/web-0/exec?container=app&command=echo&command=hi&stdout=true";
    assert_eq!(
        bed.ws_exec("kube", path).await,
        StatusCode::SWITCHING_PROTOCOLS
    );
    let exec = last_at(&bed.leaf_1, "/api/v1/namespaces/team-a/pods/web-0/exec");
    assert_only_allowed(&exec);
    let protocol: Vec<&str> = exec
        .headers
        .iter()
        .filter(|(k, _)| k == "sec-websocket-protocol")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(protocol, ["v5.channel.k8s.io"]);

    assert_eq!(
        bed.ws_exec("kubelet", "/exec/team-a/web-0/app?command=echo&output=1")
            .await,
        StatusCode::SWITCHING_PROTOCOLS
    );
    let calls = pod_calls(&bed.leaf_1);
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_only_allowed(&calls[1]);
}

#[tokio::test]
async fn impersonate_headers_are_refused_with_the_apiservers_403_and_never_forwarded() {
    let bed = Bed::start().await;
    let (code, body) = bed
        .call(
            "kube",
            Method::GET,
            "/api/v1/namespaces/team-a/pods/web-0/log",
            &[("impersonate-user", "x")],
        )
        .await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        r#"users "x" is forbidden: User "tenant:team-a" cannot impersonate resource "users" in API group "" at the cluster scope"#
    );
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(status["details"], json!({"name": "x", "kind": "users"}));

    // A read served from the gateway's own store is refused the same way.
    let (code, _) = bed
        .call(
            "kube",
            Method::GET,
            "/api/v1/namespaces/team-a/pods",
            &[
                ("impersonate-group", "system:masters"),
                ("impersonate-user", "x"),
            ],
        )
        .await;
    assert_eq!(code, StatusCode::FORBIDDEN);

    let (code, body) = bed
        .call(
            "kubelet",
            Method::GET,
            "/containerLogs/team-a/web-0/app",
            &[("impersonate-user", "system:admin")],
        )
        .await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        format!(
            r#"users "system:admin" is forbidden: User "{APISERVER}" cannot impersonate resource "users" in API group "" at the cluster scope"#
        )
    );
    assert!(pod_calls(&bed.leaf_1).is_empty());
}

#[tokio::test]
async fn encoded_names_are_refused_before_any_leaf_request() {
    let bed = Bed::start().await;
    let kube: &[(&str, u16)] = &[
        (
            "/api/v1/namespaces/team-a/pods/x%2F..%2F..%2F..%2Fteam-b%2Fpods%2Fdb-0/log",
            400,
        ),
        (
            "/api/v1/namespaces/team-a/pods/..%2F..%2Fteam-b%2Fpods%2Fdb-0/exec?stdout=true",
            400,
        ),
        ("/api/v1/namespaces/team-a/pods/web-0%25/log", 400),
        // A dot segment, literal or encoded, is resolved before routing: no pod path is
        // left.
        ("/api/v1/namespaces/team-a/pods/../log", 404),
        ("/api/v1/namespaces/team-a/pods/%2E%2E/log", 404),
        (
            "/api/v1/namespaces/team-a-x%2F..%2F..%2Fteam-b/pods/db-0/log",
            404,
        ),
        ("/api/v1/namespaces/team-a-x%2F../pods/db-0/log", 404),
        ("/api/v1/namespaces/team-a-X/pods/db-0/log", 404),
        ("/api/v1/namespaces/team-a/pods/Web-0/log", 404),
        (
            "/api/v1/namespaces/team-a/pods/web-0/log?container=..%2F..%2Fx",
            400,
        ),
        (
            "/api/v1/namespaces/team-a-x%2F..%2F..%2Fteam-b/pods/db-0",
            404,
        ),
        ("/api/v1/namespaces/team-a-x%2F..%2F..%2Fteam-b/pods", 404),
    ];
    for (path, want) in kube {
        let (code, body) = bed.call("kube", Method::GET, path, &[]).await;
        assert_eq!(code.as_u16(), *want, "{path}: {body}");
        let status: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(status["kind"], "Status", "{path}: {body}");
        assert!(!body.contains("hunter2"), "{path}: {body}");
    }
    let (_, body) = bed.call("kube", Method::GET, kube[0].0, &[]).await;
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        r#"Name parameter invalid: "x/../../../team-b/pods/db-0": may not contain '/'"#
    );
    let (_, body) = bed
        .call(
            "kube",
            Method::GET,
            "/api/v1/namespaces/team-a-x%2F..%2F..%2Fteam-b/pods/db-0/log",
            &[],
        )
        .await;
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        status["message"],
        r#"namespaces "team-a-x/../../team-b" not found"#
    );

    let node: &[&str] = &[
        "/containerLogs/team-a/x%2F..%2F..%2F..%2Fteam-b%2Fpods%2Fdb-0/app",
        "/containerLogs/team-a-x%2F..%2F..%2Fteam-b/db-0/app",
        "/containerLogs/team-a/web-0/app%2F..",
        "/containerLogs/team-a/../app",
        "/exec/team-a-x%2F../db-0/app?output=1",
        "/portForward/team-a/x%2F..?port=80",
    ];
    for path in node {
        let (code, body) = bed.call("kubelet", Method::GET, path, &[]).await;
        assert_eq!(code, StatusCode::NOT_FOUND, "{path}: {body}");
        assert!(!body.contains("hunter2"), "{path}: {body}");
    }
    let (_, body) = bed.call("kubelet", Method::GET, node[0], &[]).await;
    assert_eq!(
        body,
        "pod \"x%2F..%2F..%2F..%2Fteam-b%2Fpods%2Fdb-0\" does not exist\n"
    );
    let (_, body) = bed.call("kubelet", Method::GET, node[2], &[]).await;
    assert_eq!(body, "container \"app%2F..\" not found in pod \"web-0\"\n");

    let (one, two) = (pod_calls(&bed.leaf_1), pod_calls(&bed.leaf_2));
    assert!(one.is_empty() && two.is_empty(), "{one:?} {two:?}");
}

#[tokio::test]
async fn a_pod_router_is_followed_only_to_a_leaf_that_holds_an_indexed_pod() {
    let bed = Bed::start().await;
    // `stray-0` lives in leaf-1; the router names leaf-2 for it.
    for (listener, path) in [
        ("kube", "/api/v1/namespaces/team-a/pods/stray-0/log"),
        ("kubelet", "/containerLogs/team-a/stray-0/app"),
    ] {
        let (code, body) = bed.call(listener, Method::GET, path, &[]).await;
        assert_eq!(code, StatusCode::BAD_GATEWAY, "{path}: {body}");
        assert!(body.contains(r#"leaf \"leaf-2\""#), "{path}: {body}");
    }
    assert!(pod_calls(&bed.leaf_2).is_empty());
    // A valid name no index holds is the router's to place.
    let (code, _) = bed
        .call(
            "kube",
            Method::GET,
            "/api/v1/namespaces/team-a/pods/stray-1/log",
            &[],
        )
        .await;
    assert_eq!(code, StatusCode::NOT_FOUND);
    let asked = pod_calls(&bed.leaf_2);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].path, "/api/v1/namespaces/team-a/pods/stray-1/log");
}
