//! The chain without leafgate: kubectl -> kubesim (root role) -> kubesim (kubelet role),
//! with every kubectl binary, over SPDY; then the `kubesim::client` helpers against a
//! kubelet-role simulator directly.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use kubesim::client::{spdy_exec, spdy_port_forward, ws_exec};
use kubesim::testkit::{Finished, annotate_port, assert_echoes, echo_server, forwarding_from};
use kubesim::{Credential, KubeSim, KubeletClientCert, Recorded};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const TOKEN: &str = "t0ken-for-alice";
const NO_WS_EXEC: (&str, &str) = ("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false");
const NO_WS_FORWARD: (&str, &str) = ("KUBECTL_PORT_FORWARD_WEBSOCKETS", "false");

struct Chain {
    root: KubeSim,
    kubelet: KubeSim,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

fn pod(name: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "busybox"}]},
        "status": {"phase": "Running", "podIP": "10.1.0.5"}
    })
}

fn node(name: &str, addresses: Value, port: u16) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name},
        "status": {"addresses": addresses, "daemonEndpoints": {"kubeletEndpoint": {"Port": port}}}
    })
}

/// A kubelet-role simulator trusting `client_ca`, and a root whose node `n1` is it.
async fn chain_with(root: KubeSim) -> Chain {
    let kubelet = KubeSim::builder()
        .kubelet_role(&root.kubelet_client_cert().ca_pem)
        .start()
        .await
        .unwrap();
    wire(root, kubelet)
}

fn wire(root: KubeSim, kubelet: KubeSim) -> Chain {
    root.create(node(
        "n1",
        json!([{"type": "InternalIP", "address": "127.0.0.1"}]),
        kubelet.addr().port(),
    ))
    .unwrap();
    for name in ["web", "fwd"] {
        root.create(pod(name, "n1")).unwrap();
        kubelet.create(pod(name, "n1")).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    root.kubeconfig(&Credential::Token(TOKEN.into()), &kubeconfig)
        .unwrap();
    Chain {
        root,
        kubelet,
        dir,
        kubeconfig,
    }
}

async fn chain() -> Chain {
    chain_with(
        KubeSim::builder()
            .token(TOKEN, "alice")
            .start()
            .await
            .unwrap(),
    )
    .await
}

fn command(bin: &Path, c: &Chain) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--kubeconfig")
        .arg(&c.kubeconfig)
        .arg("--cache-dir")
        .arg(c.dir.path().join("cache"))
        .kill_on_drop(true);
    cmd
}

/// kubectl with `env` and optional stdin, within 30s.
async fn kubectl(
    bin: &Path,
    c: &Chain,
    args: &[&str],
    env: (&str, &str),
    stdin: Option<&[u8]>,
) -> Finished {
    let mut cmd = command(bin, c);
    cmd.args(args).env(env.0, env.1);
    kubesim::testkit::run(cmd, stdin).await
}

fn values<'a>(r: &'a Recorded, name: &str) -> Vec<&'a str> {
    r.headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
        .collect()
}

/// The last request `sim` received whose path starts with `prefix`.
fn last(reqs: Vec<Recorded>, prefix: &str) -> Recorded {
    reqs.into_iter()
        .rev()
        .find(|r| r.path.starts_with(prefix))
        .unwrap_or_else(|| panic!("no request to {prefix}"))
}

#[tokio::test]
async fn kubectl_exec_through_the_root_reaches_the_kubelet() {
    let c = chain().await;
    for bin in kubesim::kubectl::all() {
        let r = kubectl(
            &bin,
            &c,
            &["exec", "web", "--", "echo", "hi there"],
            NO_WS_EXEC,
            None,
        )
        .await;
        assert_eq!(r.code, Some(0), "{}: {}", bin.display(), r.err);
        assert_eq!(r.out, "hi there\n");

        // What the root sent: the kubelet's URL and query names, no user credentials.
        let sent = last(c.root.kubelet_requests(), "/exec/");
        assert_eq!(sent.method, "POST");
        assert_eq!(sent.path, "/exec/default/web/app");
        assert_eq!(sent.query, "command=echo&command=hi+there&error=1&output=1");
        assert!(values(&sent, "authorization").is_empty(), "{sent:?}");
        assert_eq!(values(&sent, "x-forwarded-for"), ["127.0.0.1"]);
        // What the kubelet got: the same, every protocol line kept, the root's identity.
        let got = last(c.kubelet.requests(), "/exec/");
        let asked = last(
            c.root.requests(),
            "/api/v1/namespaces/default/pods/web/exec",
        );
        assert!(!values(&asked, "authorization").is_empty());
        assert!(values(&got, "authorization").is_empty(), "{got:?}");
        let protocols = values(&asked, "x-stream-protocol-version");
        assert!(protocols.len() > 1, "kubectl offers several: {protocols:?}");
        assert_eq!(values(&got, "x-stream-protocol-version"), protocols);
        assert_eq!(got.user.as_deref(), Some("kube-apiserver-kubelet-client"));
        assert_eq!(got.query, sent.query);
    }
}

#[tokio::test]
async fn kubectl_exec_stdin_and_exit_code_through_the_chain() {
    let c = chain().await;
    let input = b"first line\nsecond line\n".repeat(2000);
    for bin in kubesim::kubectl::all() {
        let r = kubectl(
            &bin,
            &c,
            &["exec", "-i", "web", "--", "sh", "-c", "cat; echo done >&2"],
            NO_WS_EXEC,
            Some(&input),
        )
        .await;
        assert_eq!(r.code, Some(0), "{}: {}", bin.display(), r.err);
        assert!(
            r.out.as_bytes() == input.as_slice(),
            "{} bytes",
            r.out.len()
        );
        assert_eq!(r.err, "done\n");
        assert!(
            last(c.root.kubelet_requests(), "/exec/")
                .query
                .contains("&input=1&"),
        );

        let r = kubectl(
            &bin,
            &c,
            &["exec", "web", "--", "sh", "-c", "exit 3"],
            NO_WS_EXEC,
            None,
        )
        .await;
        assert_eq!(r.code, Some(3), "{}: {}", bin.display(), r.err);
    }
}

#[tokio::test]
async fn kubectl_logs_and_follow_through_the_chain() {
    let c = chain().await;
    for (i, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        let name = format!("logger-{i}");
        c.root.create(pod(&name, "n1")).unwrap();
        c.kubelet.create(pod(&name, "n1")).unwrap();
        for line in ["one", "two", "three"] {
            c.kubelet.append_log("default", &name, "app", line);
        }
        let r = kubectl(&bin, &c, &["logs", &name, "--tail=2"], NO_WS_EXEC, None).await;
        assert_eq!(r.code, Some(0), "{}: {}", bin.display(), r.err);
        assert_eq!(r.out, "two\nthree\n");
        let sent = last(c.root.kubelet_requests(), "/containerLogs/");
        assert_eq!(
            (
                sent.method.as_str(),
                sent.path.as_str(),
                sent.query.as_str()
            ),
            (
                "GET",
                format!("/containerLogs/default/{name}/app").as_str(),
                "tailLines=2"
            )
        );
        assert_eq!(
            last(c.kubelet.requests(), "/containerLogs/")
                .user
                .as_deref(),
            Some("kube-apiserver-kubelet-client")
        );

        // The kubelet's 400 comes back as a BadRequest Status carrying its text.
        let r = kubectl(&bin, &c, &["logs", &name, "--previous"], NO_WS_EXEC, None).await;
        assert_ne!(r.code, Some(0));
        assert!(
            r.err.contains(&format!(r#"Error from server (BadRequest): previous terminated container "app" in pod "{name}" not found"#)),
            "{}",
            r.err
        );

        // A pod the kubelet does not know: its 404 becomes the generic NotFound.
        let ghost = format!("ghost-{i}");
        c.root.create(pod(&ghost, "n1")).unwrap();
        let r = kubectl(&bin, &c, &["logs", &ghost], NO_WS_EXEC, None).await;
        assert_ne!(r.code, Some(0));
        assert!(
            r.err.contains(&format!(
                "Error from server (NotFound): the server could not find the requested resource ( pods/log {ghost})"
            )),
            "{}",
            r.err
        );

        let mut child = command(&bin, &c)
            .args(["logs", "-f", &name])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(Duration::from_secs(15), async {
            let mut seen = Vec::new();
            while let Some(l) = lines.next_line().await.unwrap() {
                seen.push(l);
                if seen.last().map(String::as_str) == Some("three") {
                    break;
                }
            }
            seen
        })
        .await
        .expect("the log so far within 15s");
        assert_eq!(first.last().map(String::as_str), Some("three"));
        let later = format!("later from {}", bin.display());
        c.kubelet.append_log("default", &name, "app", &later);
        let next = tokio::time::timeout(Duration::from_secs(15), lines.next_line())
            .await
            .expect("the appended line within 15s")
            .unwrap();
        assert_eq!(next.as_deref(), Some(later.as_str()));
        child.kill().await.unwrap();
        assert!(
            last(c.root.kubelet_requests(), "/containerLogs/")
                .query
                .contains("follow=true")
        );
    }
}

#[tokio::test]
async fn kubectl_port_forward_through_the_chain() {
    let c = chain().await;
    annotate_port(&c.kubelet, "default", "fwd", 8080, echo_server().await);
    for bin in kubesim::kubectl::all() {
        let mut child = command(&bin, &c)
            .args(["port-forward", "pod/fwd", ":8080"])
            .env(NO_WS_FORWARD.0, NO_WS_FORWARD.1)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let local = forwarding_from(&mut child).await;
        let messages = [b"hello through two hops".to_vec(), vec![b'z'; 300 * 1024]];
        assert_echoes(local, &messages, &bin.display().to_string()).await;
        child.kill().await.unwrap();
        let sent = last(c.root.kubelet_requests(), "/portForward/");
        assert_eq!(
            (sent.method.as_str(), sent.path.as_str()),
            ("POST", "/portForward/default/fwd")
        );
        assert_eq!(
            values(&sent, "x-stream-protocol-version"),
            ["portforward.k8s.io"]
        );
        assert!(values(&sent, "authorization").is_empty());
    }
}

/// With `--kubelet-certificate-authority` the kubelet's certificate is checked: the right CA
/// works, a wrong one is `error dialing backend`.
#[tokio::test]
async fn kubelet_certificate_is_verified_when_a_ca_is_given() {
    let id = KubeletClientCert::generate().unwrap();
    let kubelet = KubeSim::builder()
        .kubelet_role(&id.ca_pem)
        .start()
        .await
        .unwrap();
    let root = KubeSim::builder()
        .token(TOKEN, "alice")
        .kubelet_client_cert(id.clone())
        .kubelet_ca(kubelet.ca_pem())
        .start()
        .await
        .unwrap();
    let c = wire(root, kubelet);
    let bin = kubesim::kubectl::pinned();
    let r = kubectl(
        &bin,
        &c,
        &["exec", "web", "--", "echo", "ok"],
        NO_WS_EXEC,
        None,
    )
    .await;
    assert_eq!((r.code, r.out.as_str()), (Some(0), "ok\n"), "{}", r.err);

    // Hostname comes first among the default types, and is verified as a DNS name.
    c.root
        .create(node(
            "by-name",
            json!([
                {"type": "InternalIP", "address": "192.0.2.1"},
                {"type": "Hostname", "address": "localhost"},
            ]),
            c.kubelet.addr().port(),
        ))
        .unwrap();
    c.root.create(pod("named", "by-name")).unwrap();
    c.kubelet.create(pod("named", "by-name")).unwrap();
    let out = spdy_exec(
        c.root.addr(),
        root_tls(&c.root),
        "/api/v1/namespaces/default/pods/named/exec?command=echo&command=named&stdout=true",
        &[],
        b"",
    )
    .await
    .unwrap();
    assert!(out.refused.is_none(), "{:?}", out.refused);
    assert_eq!(out.stdout, b"named\n");

    let other = KubeSim::builder().start().await.unwrap();
    let wrong = KubeSim::builder()
        .token(TOKEN, "alice")
        .kubelet_client_cert(id.clone())
        .kubelet_ca(other.ca_pem())
        .start()
        .await
        .unwrap();
    let kubelet = KubeSim::builder()
        .kubelet_role(&id.ca_pem)
        .start()
        .await
        .unwrap();
    let c = wire(wrong, kubelet);
    let r = kubectl(
        &bin,
        &c,
        &["exec", "web", "--", "echo", "ok"],
        NO_WS_EXEC,
        None,
    )
    .await;
    assert_ne!(r.code, Some(0));
    assert!(r.err.contains("error dialing backend"), "{}", r.err);
}

/// The root's own client configuration for `kubesim::client` calls (the user `alice`).
fn root_tls(root: &KubeSim) -> Arc<rustls::ClientConfig> {
    let (cert, key) = root.client_cert("alice").unwrap();
    Arc::new(kubesim::tls::client_config(Some(root.ca_pem()), &cert, &key).unwrap())
}

#[tokio::test]
async fn a_node_without_a_preferred_address_is_the_apiservers_error() {
    let root = KubeSim::builder()
        .kubelet_preferred_address_types(&["Hostname", "InternalIP"])
        .start()
        .await
        .unwrap();
    root.create(node(
        "n2",
        json!([{"type": "ExternalIP", "address": "127.0.0.1"}]),
        10250,
    ))
    .unwrap();
    root.create(pod("far", "n2")).unwrap();
    let out = spdy_exec(
        root.addr(),
        root_tls(&root),
        "/api/v1/namespaces/default/pods/far/exec?command=true&stdout=true",
        &[],
        b"",
    )
    .await
    .unwrap();
    let refused = out.refused.expect("refused");
    assert_eq!(refused.status, 500);
    let status: Value = serde_json::from_slice(&refused.body).unwrap();
    assert_eq!(
        status["message"],
        "no preferred addresses found; known addresses: [{ExternalIP 127.0.0.1}]"
    );
    assert!(root.kubelet_requests().is_empty());

    // A kubelet that does not answer is `error dialing backend`.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    root.create(node(
        "n3",
        json!([{"type": "InternalIP", "address": "127.0.0.1"}]),
        port,
    ))
    .unwrap();
    root.create(pod("down", "n3")).unwrap();
    let out = spdy_exec(
        root.addr(),
        root_tls(&root),
        "/api/v1/namespaces/default/pods/down/exec?command=true&stdout=true",
        &[],
        b"",
    )
    .await
    .unwrap();
    let refused = out.refused.expect("refused");
    let status: Value = serde_json::from_slice(&refused.body).unwrap();
    assert_eq!((refused.status, &status["code"]), (500, &json!(500)));
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "error dialing backend: dial tcp 127.0.0.1:{port}: "
        )),
        "{message}"
    );
}

#[tokio::test]
async fn client_helpers_through_the_root_and_websocket_passthrough() {
    let c = chain().await;
    let tls = root_tls(&c.root);
    let q = "command=sh&command=-c&command=cat%3B+echo+e+%3E%262%3B+exit+4&stdin=true&stdout=true&stderr=true";
    let path = format!("/api/v1/namespaces/default/pods/web/exec?{q}");
    let out = spdy_exec(c.root.addr(), tls.clone(), &path, &[], b"in")
        .await
        .unwrap();
    assert!(out.refused.is_none(), "{:?}", out.refused);
    assert_eq!(
        (out.stdout.as_slice(), out.stderr.as_slice()),
        (&b"in"[..], &b"e\n"[..])
    );
    assert_eq!(out.exit_code(), Some(4));
    // WebSocket goes to the kubelet untranslated (a GET with the v5 subprotocol).
    let out = ws_exec(c.root.addr(), tls, &path, &[], b"in")
        .await
        .unwrap();
    assert!(out.refused.is_none(), "{:?}", out.refused);
    assert_eq!(out.protocol, "v5.channel.k8s.io");
    assert_eq!(
        (out.stdout.as_slice(), out.exit_code()),
        (&b"in"[..], Some(4))
    );
    let sent = last(c.root.kubelet_requests(), "/exec/");
    assert_eq!(sent.method, "GET");
    assert_eq!(values(&sent, "upgrade"), ["websocket"]);

    // The kubelet's refusal comes back as it was written.
    let out = spdy_exec(
        c.root.addr(),
        root_tls(&c.root),
        "/api/v1/namespaces/default/pods/web/exec?command=true",
        &[],
        b"",
    )
    .await
    .unwrap();
    let refused = out.refused.expect("no stream asked for");
    assert_eq!(
        (refused.status, refused.body_text().as_str()),
        (
            400,
            "you must specify at least 1 of stdin, stdout, stderr\n"
        )
    );
    assert!(refused.raw_head.starts_with(b"HTTP/1.1 400 "));
    assert_eq!(
        last(c.root.kubelet_requests(), "/exec/").query,
        "command=true"
    );

    // attach runs the container's main process at the kubelet.
    let out = spdy_exec(
        c.root.addr(),
        root_tls(&c.root),
        "/api/v1/namespaces/default/pods/web/attach?stdout=true&stderr=true",
        &[],
        b"",
    )
    .await
    .unwrap();
    assert!(out.refused.is_none(), "{:?}", out.refused);
    assert_eq!(out.exit_code(), Some(0));
    let sent = last(c.root.kubelet_requests(), "/attach/");
    assert_eq!(
        (sent.path.as_str(), sent.query.as_str()),
        ("/attach/default/web/app", "error=1&output=1")
    );
}

/// A client configuration the kubelet role accepts, and the kubelet it talks to.
async fn kubelet_alone() -> (KubeSim, Arc<rustls::ClientConfig>, KubeletClientCert) {
    let id = KubeletClientCert::generate().unwrap();
    let kubelet = KubeSim::builder()
        .kubelet_role(&id.ca_pem)
        .start()
        .await
        .unwrap();
    kubelet.create(pod("web", "n1")).unwrap();
    let tls =
        kubesim::tls::client_config(Some(kubelet.ca_pem()), &id.cert_pem, &id.key_pem).unwrap();
    (kubelet, Arc::new(tls), id)
}

#[tokio::test]
async fn client_helpers_against_the_kubelet_role() {
    let (kubelet, tls, _) = kubelet_alone().await;
    let addr = kubelet.addr();
    let q =
        "command=sh&command=-c&command=cat%3B+echo+e+%3E%262%3B+exit+2&input=1&output=1&error=1";
    let out = spdy_exec(
        addr,
        tls.clone(),
        &format!("/exec/default/web/app?{q}"),
        &[],
        b"abc",
    )
    .await
    .unwrap();
    assert!(out.refused.is_none(), "{:?}", out.refused);
    assert_eq!(out.protocol, "v4.channel.k8s.io");
    assert_eq!(
        (out.stdout.as_slice(), out.stderr.as_slice()),
        (&b"abc"[..], &b"e\n"[..])
    );
    assert_eq!(out.exit_code(), Some(2));
    assert_eq!(
        out.status.unwrap()["details"]["causes"][0]["reason"],
        "ExitCode"
    );

    // With the pod's uid in the path; `true` is not `1` on the kubelet.
    let uid = kubelet
        .store()
        .get(
            kubesim::resources::find("", "v1", "pods").unwrap(),
            "default",
            "web",
        )
        .unwrap()["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    let out = ws_exec(
        addr,
        tls.clone(),
        &format!("/exec/default/web/{uid}/app?command=echo&command=ws&output=1"),
        &[],
        b"",
    )
    .await
    .unwrap();
    assert_eq!(
        (out.stdout.as_slice(), out.exit_code()),
        (&b"ws\n"[..], Some(0))
    );
    let out = spdy_exec(
        addr,
        tls.clone(),
        "/exec/default/web/app?command=true&output=true",
        &[],
        b"",
    )
    .await
    .unwrap();
    let refused = out.refused.expect("no stream asked for");
    assert_eq!(refused.status, 400);
    assert!(
        refused
            .body_text()
            .contains("you must specify at least 1 of stdin, stdout, stderr")
    );

    let echo = echo_server().await;
    annotate_port(&kubelet, "default", "web", 7000, echo);
    let out = spdy_port_forward(
        addr,
        tls.clone(),
        "/portForward/default/web",
        &[],
        7000,
        b"ping",
        4,
    )
    .await
    .unwrap();
    assert_eq!(
        (out.data.as_slice(), out.error.as_str()),
        (&b"ping"[..], "")
    );
    let out = spdy_port_forward(
        addr,
        tls.clone(),
        "/portForward/default/web",
        &[],
        7001,
        b"x",
        1,
    )
    .await
    .unwrap();
    assert!(out.data.is_empty());
    assert!(out.error.contains("7001"), "{}", out.error);
    let out = spdy_port_forward(
        addr,
        tls.clone(),
        "/portForward/default/web/not-the-uid",
        &[],
        7000,
        b"x",
        1,
    )
    .await
    .unwrap();
    let refused = out.refused.expect("uid mismatch");
    assert_eq!(
        (refused.status, refused.body_text().as_str()),
        (404, "pod not found")
    );
}

#[tokio::test]
async fn kubelet_role_routes_methods_and_client_certificates() {
    let (kubelet, tls, _) = kubelet_alone().await;
    let addr = kubelet.addr();
    // spdy_exec POSTs: unknown paths are 404, GET-only routes 405.
    for (path, status) in [
        ("/nope", 404),
        ("/exec/default/web", 404),
        ("/containerLogs/default/web/app", 405),
        ("/healthz", 200),
        ("/exec/default/missing/app?command=true&output=1", 404),
    ] {
        let out = spdy_exec(addr, tls.clone(), path, &[], b"").await.unwrap();
        assert_eq!(out.refused.map(|a| a.status), Some(status), "{path}");
    }
    // A certificate from another CA is refused in the handshake.
    let stranger = KubeletClientCert::generate().unwrap();
    let bad = kubesim::tls::client_config(
        Some(kubelet.ca_pem()),
        &stranger.cert_pem,
        &stranger.key_pem,
    )
    .unwrap();
    assert!(
        spdy_exec(addr, Arc::new(bad), "/healthz", &[], b"")
            .await
            .is_err()
    );
    // Logs and healthz over plain HTTPS GET.
    kubelet.append_log("default", "web", "app", "hello");
    for (path, want_status, want_body) in [
        ("/healthz", 200, "ok"),
        ("/containerLogs/default/web/app?tail=all", 200, "hello\n"),
        (
            "/containerLogs/default/web/nope",
            404,
            "container \"nope\" not found in pod \"web\"",
        ),
        (
            "/containerLogs/default/web/app?tailLines=x",
            400,
            r#"{"message": "Unable to decode query."}"#,
        ),
    ] {
        let (status, body) = get(addr, tls.clone(), path).await;
        assert_eq!((status, body.as_str()), (want_status, want_body), "{path}");
    }
}

/// A GET over HTTP/1.1 (the log is not followed, so the body ends).
async fn get(addr: SocketAddr, tls: Arc<rustls::ClientConfig>, path: &str) -> (u16, String) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    let mut conn = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    conn.write_all(req.as_bytes()).await.unwrap();
    let mut buf = bytes::BytesMut::new();
    let head = kubesim::http1::read_head(&mut conn, &mut buf)
        .await
        .unwrap();
    let body =
        kubesim::http1::read_body(&mut conn, buf, &head, 1 << 20, Duration::from_secs(10)).await;
    (head.status, String::from_utf8_lossy(&body).into_owned())
}

/// kubectl's default WebSocket transports reach the kubelet as they left kubectl (a GET with
/// `Upgrade: websocket`), as kube-apiserver passes them to a node that declares
/// `ExtendWebSocketsToKubelet`; the kubelet role serves v5 and the port-forward tunnel.
#[tokio::test]
async fn kubectl_websockets_pass_through_untranslated() {
    let c = chain().await;
    annotate_port(&c.kubelet, "default", "fwd", 8080, echo_server().await);
    for bin in kubesim::kubectl::all() {
        let r = kubectl(
            &bin,
            &c,
            &["exec", "-i", "web", "--", "cat"],
            ("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "true"),
            Some(b"over websockets\n"),
        )
        .await;
        assert_eq!(r.code, Some(0), "{}: {}", bin.display(), r.err);
        assert_eq!(r.out, "over websockets\n");
        let got = last(c.kubelet.requests(), "/exec/");
        assert_eq!(got.method, "GET");
        assert_eq!(values(&got, "upgrade"), ["websocket"]);
        assert!(
            values(&got, "sec-websocket-protocol")
                .iter()
                .any(|p| p.contains("v5.channel.k8s.io")),
            "{got:?}"
        );

        let mut child = command(&bin, &c)
            .args(["port-forward", "pod/fwd", ":8080"])
            .env("KUBECTL_PORT_FORWARD_WEBSOCKETS", "true")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let local = forwarding_from(&mut child).await;
        assert_echoes(local, &[b"tunnelled".to_vec()], &bin.display().to_string()).await;
        child.kill().await.unwrap();
        let got = last(c.kubelet.requests(), "/portForward/");
        assert_eq!(
            (got.method.as_str(), values(&got, "upgrade")),
            ("GET", vec!["websocket"])
        );
    }
}
