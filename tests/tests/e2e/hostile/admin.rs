//! The admin listener, `leafgate check`'s tenant checks, the list `resourceVersion` and
//! `/run`, tried the way a hostile tenant or a peer on the network would.
//!
//! "Loopback" for the admin listener means the peer's address is exactly `127.0.0.1` or
//! `::1`. Every 127/8 address is local on Linux, so a client bound to `127.0.0.3` is a real
//! peer that is not loopback in that sense: it stands in for a pod or node on the network.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::Empty;
use kubesim::{Credential, KubeSim};
use leafgate_tests::certs::TestCa;
use leafgate_tests::client::{Answer, send_h1};
use leafgate_tests::config::{Leaf, Listener, Tenant};
use leafgate_tests::{Config, TestGateway};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket};
use tokio_rustls::TlsConnector;

const ADMIN_TOKEN: &str = "admin-token-0123456789abcdef";
const REMOTE: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 3));
const LOCAL: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// One request to the admin listener at `admin` (its port, on 127.0.0.1) from a socket
/// bound to `from`, with `token` as a bearer token when given.
async fn admin_call(
    admin: SocketAddr,
    from: IpAddr,
    method: Method,
    path: &str,
    token: Option<&str>,
) -> Answer {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(from, 0)).unwrap();
    let tcp = socket
        .connect(SocketAddr::new(LOCAL, admin.port()))
        .await
        .unwrap();
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "admin");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    send_h1(tcp, req.body(Empty::<Bytes>::new()).unwrap()).await
}

/// A gateway whose admin listener is bound on every address, as `deploy/` binds it.
async fn admin_on_all_addresses(tokens: Option<&str>) -> TestGateway {
    let dir = tempfile::tempdir().unwrap();
    let mut admin = json!({ "bind": "0.0.0.0:0" });
    if let Some(tokens) = tokens {
        std::fs::write(dir.path().join("admin.tokens"), tokens).unwrap();
        admin["tokens_file"] = json!("admin.tokens");
    }
    TestGateway::start_in(dir, Config::web().set("admin", admin)).await
}

#[tokio::test]
async fn admin_status_and_reload_from_a_non_loopback_peer_need_an_admin_token() {
    let gw = admin_on_all_addresses(Some(&format!("# operators\n{ADMIN_TOKEN}\n"))).await;
    let admin = gw.admin();

    // Probes and metrics stay open to everyone.
    for path in ["/healthz", "/readyz", "/metrics"] {
        let res = admin_call(admin, REMOTE, Method::GET, path, None).await;
        assert_eq!(res.status, StatusCode::OK, "{path}: {}", res.text());
    }
    // Status and reload: 401 without a token or with one the file does not hold.
    for token in [None, Some("not-the-token-0123456789"), Some("")] {
        for (method, path) in [(Method::GET, "/status"), (Method::POST, "/reload")] {
            let res = admin_call(admin, REMOTE, method.clone(), path, token).await;
            assert_eq!(res.status, StatusCode::UNAUTHORIZED, "{path} {token:?}");
            assert_eq!(
                res.headers["www-authenticate"], "Bearer realm=\"leafgate-admin\"",
                "{path}"
            );
            assert!(res.text().contains("[admin] tokens_file"), "{}", res.text());
            assert!(!res.text().contains("generation"), "{}", res.text());
        }
    }
    let before = gw.gateway.snapshot().generation;
    let res = admin_call(admin, REMOTE, Method::GET, "/status", Some(ADMIN_TOKEN)).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert_eq!(res.json()["generation"], before);
    let res = admin_call(admin, REMOTE, Method::POST, "/reload", Some(ADMIN_TOKEN)).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert_eq!(res.json()["generation"], before + 1);
    // A loopback peer needs no token.
    let res = admin_call(admin, LOCAL, Method::GET, "/status", None).await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());

    // The tokens file is re-read with the config: a rotated token replaces the old one.
    let file = gw.path().join("admin.tokens");
    let tmp = gw.path().join("admin.tokens.tmp");
    std::fs::write(&tmp, "rotated-admin-token-0123456789\n").unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    let started = Instant::now();
    while admin_call(admin, REMOTE, Method::GET, "/status", Some(ADMIN_TOKEN))
        .await
        .status
        == StatusCode::OK
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the old admin token still works after the tokens file changed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let res = admin_call(
        admin,
        REMOTE,
        Method::GET,
        "/status",
        Some("rotated-admin-token-0123456789"),
    )
    .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
}

#[tokio::test]
async fn without_admin_tokens_a_non_loopback_peer_is_forbidden_status_and_reload() {
    let gw = admin_on_all_addresses(None).await;
    let admin = gw.admin();
    for (method, path) in [(Method::GET, "/status"), (Method::POST, "/reload")] {
        let res = admin_call(admin, REMOTE, method.clone(), path, Some(ADMIN_TOKEN)).await;
        assert_eq!(res.status, StatusCode::FORBIDDEN, "{path}: {}", res.text());
        assert!(res.text().contains("loopback"), "{}", res.text());
        let res = admin_call(admin, LOCAL, method, path, None).await;
        assert_eq!(res.status, StatusCode::OK, "{path}: {}", res.text());
    }
    let res = admin_call(admin, REMOTE, Method::GET, "/healthz", None).await;
    assert_eq!(res.status, StatusCode::OK);
}

/// `leafgate reload --token-file` sends the file's token; without the flag, none.
#[tokio::test]
async fn leafgate_reload_sends_the_token_from_its_token_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("admin.tokens");
    std::fs::write(&file, format!("# the operator's\n\n  {ADMIN_TOKEN}  \n")).unwrap();
    for with_token in [true, false] {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = stream.read(&mut buf).await.unwrap();
                assert!(n > 0, "the CLI closed before its request ended");
                head.extend_from_slice(&buf[..n]);
            }
            let body = "{\"ok\":true,\"generation\":7}";
            stream
                .write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .as_bytes(),
                )
                .await
                .unwrap();
            String::from_utf8(head).unwrap()
        });
        let mut cmd = tokio::process::Command::new(leafgate_tests::binary::leafgate());
        cmd.arg("reload").arg("--admin").arg(addr.to_string());
        if with_token {
            cmd.arg("--token-file").arg(&file);
        }
        let out = cmd.output().await.unwrap();
        assert!(out.status.success(), "{out:?}");
        let head = seen.await.unwrap().to_ascii_lowercase();
        assert!(head.starts_with("post /reload "), "{head}");
        let auth = format!(
            "authorization: bearer {}\r\n",
            ADMIN_TOKEN.to_ascii_lowercase()
        );
        assert_eq!(head.contains(&auth), with_token, "{head}");
        if !with_token {
            assert!(!head.contains("authorization"), "{head}");
        }
    }
}

/// Runs `leafgate check` on `toml` in `dir`: (success, stderr).
fn check(dir: &Path, toml: &str) -> (bool, String) {
    let config = dir.join("leafgate.toml");
    std::fs::write(&config, toml).unwrap();
    let out = std::process::Command::new(leafgate_tests::binary::leafgate())
        .arg("check")
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn leafgate_check_refuses_a_token_or_client_name_in_two_tenants_and_overlapping_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.tokens"),
        "shared-token-0123456789\nonly-a-token-0123456789\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("b.tokens"),
        "only-b-token-0123456789\n# same as a's\nshared-token-0123456789\n",
    )
    .unwrap();
    let toml = r#"[[tenant]]
name = "team-a"
namespaces = ["team-*"]
tokens_file = "a.tokens"
client_names = ["ci-a", "deployer"]

[[tenant]]
name = "team-b"
namespaces = ["other", "team-b"]
tokens_file = "b.tokens"
client_names = ["ci-b", "deployer"]

[[tenant]]
name = "team-c"
namespaces = ["*-prod"]
"#;
    let (ok, err) = check(dir.path(), toml);
    assert!(!ok, "{err}");
    let config = dir.path().join("leafgate.toml");
    let at =
        |line: usize, col: usize, key: &str| format!("{}:{line}:{col}: {key}: ", config.display());
    let line_of = |at: &str| {
        err.lines()
            .find(|l| l.starts_with(at))
            .unwrap_or_else(|| panic!("no error at {at}:\n{err}"))
            .to_string()
    };
    // Tokens: at the later tenant's tokens_file, naming the tenant that has it first, never
    // printing the token itself.
    let tokens = line_of(&at(10, 15, "tenant[1].tokens_file"));
    assert!(tokens.contains("`team-a`"), "{tokens}");
    assert!(tokens.contains("line 3"), "{tokens}");
    assert!(!err.contains("shared-token"), "a token was printed:\n{err}");
    let names = line_of(&at(11, 25, "tenant[1].client_names[1]"));
    assert!(
        names.contains("`deployer`") && names.contains("`team-a`"),
        "{names}"
    );
    let overlap = line_of(&at(9, 24, "tenant[1].namespaces[1]"));
    assert!(
        overlap.contains("`team-b`")
            && overlap.contains("`team-*`")
            && overlap.contains("`team-a`"),
        "{overlap}"
    );
    // Globs against globs: `*-prod` and `team-*` share `team-prod`.
    let globs = line_of(&at(15, 15, "tenant[2].namespaces[0]"));
    assert!(globs.contains("`team-a`"), "{globs}");
    // `other` overlaps nobody: four errors in all.
    assert_eq!(
        err.lines().filter(|l| l.contains(": tenant[")).count(),
        4,
        "{err}"
    );
}

#[test]
fn leafgate_check_refuses_an_admin_token_that_is_also_a_tenants() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("admin.tokens"),
        "admin-only-token-0123456789
# handed to team-a too
team-a-token-0123456789
",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("a.tokens"),
        "team-a-token-0123456789
",
    )
    .unwrap();
    let toml = "[admin]\nbind = \"127.0.0.1:0\"\ntokens_file = \"admin.tokens\"\n\n[[tenant]]\nname = \"team-a\"\nnamespaces = [\"team-a\"]\ntokens_file = \"a.tokens\"\n";
    let (ok, err) = check(dir.path(), toml);
    assert!(!ok, "a tenant holding an admin token was accepted:\n{err}");
    let want = format!(
        "{}:3:15: admin.tokens_file: ",
        dir.path().join("leafgate.toml").display()
    );
    let line = err
        .lines()
        .find(|l| l.starts_with(&want))
        .unwrap_or_else(|| panic!("no error at {want}:\n{err}"));
    assert!(
        line.contains("line 3") && line.contains("`team-a`"),
        "{line}"
    );
    assert!(!err.contains("team-a-token"), "a token was printed:\n{err}");
}

#[test]
fn leafgate_check_warns_about_short_tokens_and_passes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.tokens"),
        "long-enough-token-0123\ntiny1\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("admin.tokens"), "x\n").unwrap();
    let toml = "[admin]\nbind = \"127.0.0.1:0\"\ntokens_file = \"admin.tokens\"\n\n[[tenant]]\nname = \"team-a\"\nnamespaces = [\"team-a\"]\ntokens_file = \"a.tokens\"\n";
    let (ok, err) = check(dir.path(), toml);
    assert!(ok, "{err}");
    let config = dir.path().join("leafgate.toml");
    for (line, col, key, token_line) in [
        (8, 15, "tenant[0].tokens_file", 2),
        (3, 15, "admin.tokens_file", 1),
    ] {
        let want = format!("warning: {}:{line}:{col}: {key}: ", config.display());
        let found = err
            .lines()
            .find(|l| l.starts_with(&want))
            .unwrap_or_else(|| panic!("no warning {want}:\n{err}"));
        assert!(found.contains(&format!("line {token_line}")), "{found}");
        assert!(found.contains("16"), "{found}");
    }
    assert!(!err.contains("tiny1"), "a token was printed:\n{err}");
}

fn pod(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": name},
        "spec": {"nodeName": "leaf-node", "containers": [{"name": "main", "image": "busybox"}]},
        "status": {"phase": "Running"}
    })
}

/// One request over TLS to `addr` (server name `sni`, trusting `ca`), with a bearer token
/// or a client certificate named `cn` from `client_ca` (issued into `dir`).
async fn tls_call(
    addr: SocketAddr,
    (ca, sni): (&TestCa, &str),
    client: Option<(&TestCa, &Path, &str)>,
    token: Option<&str>,
    method: Method,
    path: &str,
) -> Answer {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(ca.roots());
    let tls = match client {
        Some((client_ca, dir, cn)) => {
            let files = client_ca.issue(dir, cn, &[cn]);
            builder
                .with_client_auth_cert(
                    vec![CertificateDer::from_pem_file(&files.cert).unwrap()],
                    PrivateKeyDer::from_pem_file(&files.key).unwrap(),
                )
                .unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let stream = TlsConnector::from(std::sync::Arc::new(tls))
        .connect(ServerName::try_from(sni.to_string()).unwrap(), tcp)
        .await
        .unwrap();
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", sni);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    send_h1(stream, req.body(Empty::<Bytes>::new()).unwrap()).await
}

const ACME: &str = "acme-token-0123456789";

/// Another tenant's pods changing in the same leaf leave a tenant's list `resourceVersion`
/// where it was; the tenant's own changes move it, and a watch resumes from it.
#[tokio::test]
async fn another_tenants_pod_does_not_move_a_tenants_list_resource_version() {
    let leaf = KubeSim::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    leaf.kubeconfig(
        &Credential::ClientCert("leafgate".into()),
        &dir.path().join("leaf.kubeconfig"),
    )
    .unwrap();
    let ca = TestCa::new("kube-api CA");
    ca.issue(dir.path(), "kube-api", &["127.0.0.1"]);
    std::fs::write(dir.path().join("acme.tokens"), format!("{ACME}\n")).unwrap();
    std::fs::write(dir.path().join("rival.tokens"), "rival-token-0123456789\n").unwrap();
    let config = Config::new()
        .listener(Listener::kube_api("kube").tls("kube-api.pem", "kube-api-key.pem"))
        .leaf(Leaf::new("leaf", "leaf.kubeconfig"))
        .tenant(
            Tenant::new("acme")
                .namespaces(["apps"])
                .tokens_file("acme.tokens"),
        )
        .tenant(
            Tenant::new("rival")
                .namespaces(["rival"])
                .tokens_file("rival.tokens"),
        );
    let gw = TestGateway::start_in(dir, config).await;
    leaf.create(pod("apps", "web")).unwrap();
    leaf.create(pod("rival", "db")).unwrap();
    gw.indexed("apps", "web").await;
    gw.indexed("rival", "db").await;
    let kube = gw.addr("kube");
    let list = |path: &'static str| {
        let ca = &ca;
        async move {
            let res = tls_call(kube, (ca, "127.0.0.1"), None, Some(ACME), Method::GET, path).await;
            assert_eq!(res.status, StatusCode::OK, "{}", res.text());
            res.json()
        }
    };
    let version = |v: &Value| {
        v["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let first = list("/api/v1/namespaces/apps/pods").await;
    let all_first = list("/api/v1/pods").await;

    // The rival's pods come and change: acme's lists do not move.
    leaf.create(pod("rival", "db-2")).unwrap();
    gw.indexed("rival", "db-2").await;
    let label = json!({"metadata": {"labels": {"changed": "yes"}}});
    leaf.patch("v1", "Pod", "rival", "db", &label, false)
        .unwrap();
    let started = Instant::now();
    while !gw.gateway.snapshot().leaves.values().any(|l| {
        l.pods()
            .iter()
            .any(|p| p.name() == "db" && p.labels().is_some_and(|l| l.contains_key("changed")))
    }) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "rival/db's change not seen"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        version(&list("/api/v1/namespaces/apps/pods").await),
        version(&first)
    );
    assert_eq!(version(&list("/api/v1/pods").await), version(&all_first));

    // Acme's own new pod moves it, and a watch from the old version sees only that pod.
    leaf.create(pod("apps", "web-2")).unwrap();
    gw.indexed("apps", "web-2").await;
    let now = list("/api/v1/namespaces/apps/pods").await;
    assert_ne!(version(&now), version(&first));
    let watch = tls_call(
        kube,
        (&ca, "127.0.0.1"),
        None,
        Some(ACME),
        Method::GET,
        &format!(
            "/api/v1/namespaces/apps/pods?watch=true&timeoutSeconds=1&resourceVersion={}",
            version(&first)
        ),
    )
    .await;
    assert_eq!(watch.status, StatusCode::OK, "{}", watch.text());
    let events: Vec<(String, String)> = watch
        .text()
        .lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            (
                e["type"].as_str().unwrap().to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(events, [("ADDED".to_string(), "web-2".to_string())]);
}

/// `/run` output past 1 MiB is cut, and the answer ends saying so.
#[tokio::test]
async fn run_output_cut_at_one_mib_ends_with_a_truncation_marker() {
    let leaf = KubeSim::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let clients = tempfile::tempdir().unwrap();
    leaf.kubeconfig(
        &Credential::ClientCert("leafgate".into()),
        &dir.path().join("leaf.kubeconfig"),
    )
    .unwrap();
    let server_ca = TestCa::new("node-api serving CA");
    server_ca.issue(dir.path(), "node-api", &["leafgate.node"]);
    let client_ca = TestCa::new("root kubelet-client CA");
    client_ca.write(dir.path(), "client-ca.pem");
    let apiserver = "kube-apiserver-kubelet-client";
    let config = Config::new()
        .listener(
            Listener::node_api("kubelet")
                .tls("node-api.pem", "node-api-key.pem")
                .client_ca("client-ca.pem")
                .allowed_clients([apiserver]),
        )
        .leaf(Leaf::new("leaf", "leaf.kubeconfig"))
        .tenant(Tenant::new("acme").namespaces(["apps"]));
    let gw = TestGateway::start_in(dir, config).await;
    leaf.create(pod("apps", "web")).unwrap();
    gw.indexed("apps", "web").await;
    let run = |cmd: &'static str| {
        let (server_ca, client_ca, clients) = (&server_ca, &client_ca, clients.path());
        let addr = gw.addr("kubelet");
        async move {
            let path = format!("/run/apps/web/main?cmd={cmd}");
            let client = Some((client_ca, clients, apiserver));
            tls_call(
                addr,
                (server_ca, "leafgate.node"),
                client,
                None,
                Method::POST,
                &path,
            )
            .await
        }
    };
    const MIB: usize = 1 << 20;
    let marker = "\n[leafgate: output truncated at 1048576 bytes; 151424 more dropped]\n";
    let res = run("head%20-c%201200000%20/dev/zero").await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body.len(), MIB + marker.len());
    assert!(res.body[..MIB].iter().all(|b| *b == 0));
    assert_eq!(&res.body[MIB..], marker.as_bytes());
    // Exactly 1 MiB is not cut.
    let res = run("head%20-c%201048576%20/dev/zero").await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.body.len(), MIB);
}
