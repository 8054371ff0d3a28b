//! The Kosmos chain with the real kubectl: kubectl -> kubesim as the root cluster's API
//! server -> leafgate's node-api listener (the virtual node's kubelet endpoint) -> kubesim
//! as the pod's leaf cluster. Also SPDY exec straight from a client shaped like the root
//! API server, and port-forward sessions that must leave no descriptor behind.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use kubesim::client::{spdy_exec, spdy_port_forward};
use kubesim::testkit::{annotate_port, assert_echoes, echo_server, forwarding_from};
use kubesim::{Credential, KubeSim, Recorded};
use leafgate_tests::certs::TestCa;
use leafgate_tests::config::{Leaf, Listener, Tenant};
use leafgate_tests::{Config, TestGateway};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const TOKEN: &str = "root-user-token";
const NO_WS_EXEC: (&str, &str) = ("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false");
const NO_WS_FORWARD: (&str, &str) = ("KUBECTL_PORT_FORWARD_WEBSOCKETS", "false");

struct Chain {
    root: KubeSim,
    leaf: KubeSim,
    gw: TestGateway,
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
}

fn pod(name: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "busybox"}]},
        "status": {"phase": "Running"}
    })
}

/// The root's virtual node `vn-leaf` is leafgate: its address and kubelet port are the
/// node-api listener's; `pods` exist in the root (on the virtual node) and in the leaf.
async fn chain(pods: &[&str]) -> Chain {
    let root = KubeSim::builder()
        .token(TOKEN, "alice")
        .start()
        .await
        .unwrap();
    let leaf = KubeSim::builder().start().await.unwrap();
    let gw_dir = tempfile::tempdir().unwrap();
    leaf.kubeconfig(
        &Credential::ClientCert("leafgate".into()),
        &gw_dir.path().join("leaf.kubeconfig"),
    )
    .unwrap();
    std::fs::write(
        gw_dir.path().join("kubelet-client-ca.pem"),
        &root.kubelet_client_cert().ca_pem,
    )
    .unwrap();
    TestCa::new("node-api serving CA").issue(gw_dir.path(), "node-api", &["127.0.0.1"]);
    let config = Config::new()
        .admin()
        .listener(
            Listener::node_api("kubelet")
                .tls("node-api.pem", "node-api-key.pem")
                .client_ca("kubelet-client-ca.pem")
                .allowed_clients(["kube-apiserver-kubelet-client"]),
        )
        .leaf(Leaf::new("leaf-1", "leaf.kubeconfig"))
        .tenant(Tenant::new("team-a").namespaces(["team-a"]));
    let gw = TestGateway::start_in(gw_dir, config).await;
    root.create(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "vn-leaf", "labels": {"type": "virtual-kubelet"}},
        "status": {
            "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": gw.addr("kubelet").port()}}
        }
    }))
    .unwrap();
    for name in pods {
        root.create(pod(name, "vn-leaf")).unwrap();
        leaf.create(pod(name, "leaf-node-7")).unwrap();
    }
    let started = std::time::Instant::now();
    while pods
        .iter()
        .any(|p| gw.gateway.snapshot().pods.holders("team-a", p).is_empty())
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "pods not indexed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    root.kubeconfig(&Credential::Token(TOKEN.into()), &kubeconfig)
        .unwrap();
    Chain {
        root,
        leaf,
        gw,
        kubeconfig,
        dir,
    }
}

fn kubectl_cmd(bin: &Path, c: &Chain) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--kubeconfig")
        .arg(&c.kubeconfig)
        .arg("--cache-dir")
        .arg(c.dir.path().join("cache"))
        .arg("--namespace")
        .arg("team-a")
        .kill_on_drop(true);
    cmd
}

/// Runs kubectl to completion within 30 s; (exit code, stdout, stderr).
async fn kubectl(
    bin: &Path,
    c: &Chain,
    args: &[&str],
    stdin: Option<&[u8]>,
) -> (Option<i32>, String, String) {
    let mut cmd = kubectl_cmd(bin, c);
    cmd.args(args).env(NO_WS_EXEC.0, NO_WS_EXEC.1);
    let done = kubesim::testkit::run(cmd, stdin).await;
    (done.code, done.out, done.err)
}

fn header<'a>(r: &'a Recorded, name: &str) -> Vec<&'a str> {
    r.headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
        .collect()
}

fn last(reqs: Vec<Recorded>, path: &str) -> Recorded {
    reqs.into_iter()
        .rev()
        .find(|r| r.path == path)
        .unwrap_or_else(|| panic!("no request to {path}"))
}

#[tokio::test]
async fn kubectl_exec_and_logs_reach_the_leaf_through_leafgate() {
    let c = chain(&["web"]).await;
    for (i, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        let (code, out, err) = kubectl(
            &bin,
            &c,
            &["exec", "web", "--", "echo", "from the leaf"],
            None,
        )
        .await;
        assert_eq!(code, Some(0), "{}: {err}", bin.display());
        assert_eq!(out, "from the leaf\n");
        let exec = last(c.leaf.requests(), "/api/v1/namespaces/team-a/pods/web/exec");
        assert_eq!(exec.method, "POST", "SPDY, as the root API server sends it");
        assert_eq!(
            exec.query,
            "container=app&stdout=true&stderr=true&command=echo&command=from+the+leaf"
        );
        assert_eq!(
            exec.user.as_deref(),
            Some("leafgate"),
            "the leaf's own identity"
        );
        assert!(header(&exec, "x-stream-protocol-version").len() > 1);

        let input = b"line through three hops\n".repeat(500);
        let (code, out, err) = kubectl(
            &bin,
            &c,
            &[
                "exec",
                "-i",
                "web",
                "--",
                "sh",
                "-c",
                "cat; echo to-stderr >&2; exit 4",
            ],
            Some(&input),
        )
        .await;
        assert_eq!(code, Some(4), "{}: {err}", bin.display());
        assert!(
            out.as_bytes() == input.as_slice(),
            "{} bytes of stdout",
            out.len()
        );
        assert!(err.contains("to-stderr"), "{err}");

        for line in ["one", "two", "three"] {
            c.leaf
                .append_log("team-a", "web", "app", &format!("{line} {i}"));
        }
        let (code, out, err) = kubectl(&bin, &c, &["logs", "web", "--tail=2"], None).await;
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(out, format!("two {i}\nthree {i}\n"));

        let mut child = kubectl_cmd(&bin, &c)
            .args(["logs", "-f", "web", "--tail=1"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = tokio::time::timeout(Duration::from_secs(15), lines.next_line())
            .await
            .expect("the tail within 15 s")
            .unwrap();
        assert_eq!(first.as_deref(), Some(format!("three {i}").as_str()));
        c.leaf.append_log("team-a", "web", "app", "written later");
        let next = tokio::time::timeout(Duration::from_secs(15), lines.next_line())
            .await
            .expect("the later line within 15 s")
            .unwrap();
        assert_eq!(next.as_deref(), Some("written later"));
        child.kill().await.unwrap();
        let log = last(c.leaf.requests(), "/api/v1/namespaces/team-a/pods/web/log");
        assert_eq!(log.query, "container=app&follow=true&tailLines=1");
    }
}

#[tokio::test]
async fn kubectl_port_forward_reaches_the_leaf_through_leafgate() {
    let c = chain(&["fwd"]).await;
    annotate_port(&c.leaf, "team-a", "fwd", 8080, echo_server().await);
    for bin in kubesim::kubectl::all() {
        let mut child = kubectl_cmd(&bin, &c)
            .args(["port-forward", "pod/fwd", ":8080"])
            .env(NO_WS_FORWARD.0, NO_WS_FORWARD.1)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let local = forwarding_from(&mut child).await;
        let messages = [b"hello across the chain".to_vec(), vec![b'q'; 256 * 1024]];
        assert_echoes(local, &messages, &bin.display().to_string()).await;
        child.kill().await.unwrap();
        let pf = last(
            c.leaf.requests(),
            "/api/v1/namespaces/team-a/pods/fwd/portforward",
        );
        assert_eq!(pf.method, "POST");
        assert_eq!(
            header(&pf, "x-stream-protocol-version"),
            ["portforward.k8s.io"]
        );
        assert_eq!(pf.user.as_deref(), Some("leafgate"));
    }
}

/// A TLS client configuration with the root's kubelet-client certificate.
fn kubelet_client(root: &KubeSim) -> Arc<rustls::ClientConfig> {
    let id = root.kubelet_client_cert();
    // The node-api certificate is not checked, as kube-apiserver does by default.
    Arc::new(
        kubesim::tls::client_config(None, &id.cert_pem, &id.key_pem)
            .expect("the kubelet-client identity loads"),
    )
}

/// SPDY exec as the root API server sends it to a kubelet, straight at leafgate.
#[tokio::test]
async fn spdy_exec_from_an_apiserver_shaped_client_runs_in_the_leaf() {
    let c = chain(&["web"]).await;
    let path = "/exec/team-a/web/app?command=sh&command=-c&command=cat%3B%20echo%20oops%20%3E%262%3B%20exit%205&input=1&output=1&error=1";
    let outcome = spdy_exec(
        c.gw.addr("kubelet"),
        kubelet_client(&c.root),
        path,
        &[("X-Forwarded-For", "10.0.0.1")],
        b"stdin for the leaf\n",
    )
    .await
    .unwrap();
    assert!(outcome.refused.is_none(), "{:?}", outcome.refused);
    assert_eq!(
        String::from_utf8_lossy(&outcome.stdout),
        "stdin for the leaf\n"
    );
    assert_eq!(String::from_utf8_lossy(&outcome.stderr), "oops\n");
    assert_eq!(outcome.exit_code(), Some(5));
    let exec = last(c.leaf.requests(), "/api/v1/namespaces/team-a/pods/web/exec");
    assert_eq!(
        exec.query,
        "container=app&stdin=true&stdout=true&stderr=true&command=sh&command=-c&command=cat%3B+echo+oops+%3E%262%3B+exit+5"
    );
    assert_eq!(exec.user.as_deref(), Some("leafgate"));
    assert!(
        header(&exec, "authorization")
            .iter()
            .all(|a| !a.contains(TOKEN))
    );
}

/// The sockets the gateway holds open for this chain, from `/proc/net/tcp{,6}` (the gateway
/// runs inside this test process beside other tests, so its descriptors are told apart by
/// address): accepted node-api connections (local address `node_api`) and its connections
/// to the leaf (remote address `leaf`), established or half-closed by the peer
/// (`CLOSE_WAIT`: a descriptor nobody closed). By the whole address, not the port alone:
/// tests running beside this one bind the same port numbers on other loopback addresses.
fn gateway_sockets(node_api: SocketAddr, leaf: SocketAddr) -> usize {
    let (node_api, leaf) = (proc_net_address(node_api), proc_net_address(leaf));
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(remote), Some(state)) = (cols.get(1), cols.get(2), cols.get(3))
            else {
                return false;
            };
            matches!(*state, "01" | "08") && (*local == node_api || *remote == leaf)
        })
        .count()
}

/// `addr` as `/proc/net/tcp{,6}` writes it: the address's 32-bit words in host (little
/// endian) order, in hex, then `:` and the port.
fn proc_net_address(addr: SocketAddr) -> String {
    let octets: Vec<u8> = match addr.ip() {
        std::net::IpAddr::V4(ip) => ip.octets().to_vec(),
        std::net::IpAddr::V6(ip) => ip.octets().to_vec(),
    };
    let words: String = octets
        .chunks(4)
        .map(|w| format!("{:08X}", u32::from_le_bytes([w[0], w[1], w[2], w[3]])))
        .collect();
    format!("{words}:{:04X}", addr.port())
}

#[test]
fn proc_net_addresses_are_written_as_the_kernel_writes_them() {
    assert_eq!(
        proc_net_address("127.0.0.1:8080".parse().unwrap()),
        "0100007F:1F90"
    );
    assert_eq!(
        proc_net_address("[::1]:443".parse().unwrap()),
        "00000000000000000000000001000000:01BB"
    );
}

/// Port-forward sessions opened and closed leave no descriptor open in the gateway.
#[tokio::test]
async fn five_hundred_port_forward_sessions_leave_no_descriptor_behind() {
    let c = chain(&["fwd"]).await;
    annotate_port(&c.leaf, "team-a", "fwd", 9000, echo_server().await);
    let tls = kubelet_client(&c.root);
    let addr = c.gw.addr("kubelet");
    let session = |i: usize| {
        let tls = tls.clone();
        async move {
            let msg = format!("session {i}");
            let out = spdy_port_forward(
                addr,
                tls,
                "/portForward/team-a/fwd?port=9000",
                &[],
                9000,
                msg.as_bytes(),
                msg.len(),
            )
            .await
            .unwrap();
            assert!(out.refused.is_none(), "{:?}", out.refused);
            assert_eq!(String::from_utf8_lossy(&out.data), msg, "{}", out.error);
        }
    };
    // Warm up: pooled connections, lazily built state.
    session(0).await;
    let (node_api, leaf) = (addr, c.leaf.addr());
    // The leaf's spare connections are kept on purpose (bounded, closed a minute after the
    // last stream): they are not counted as left behind.
    let gateway_fds = || {
        let spares = c.gw.gateway.snapshot().leaves["leaf-1"].spares().held();
        gateway_sockets(node_api, leaf).saturating_sub(spares)
    };
    // Without a kube-api listener the leaf watches none of the front's read-only kinds.
    let leaf_1 = c.gw.gateway.snapshot().leaves["leaf-1"].clone();
    assert!(
        leaf_1.kinds().watched().is_empty(),
        "{:?}",
        leaf_1.kinds().watched()
    );
    let before = gateway_fds();
    for round in 0..50 {
        let sessions: Vec<_> = (0..10).map(|i| session(round * 10 + i)).collect();
        futures_util::future::join_all(sessions).await;
    }
    let started = std::time::Instant::now();
    loop {
        let now = gateway_fds();
        if now <= before {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the gateway holds {now} descriptors, {before} before 500 sessions"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
