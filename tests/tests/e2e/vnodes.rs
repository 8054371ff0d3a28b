//! Virtual nodes in the root cluster (kubesim in the root role): an `own` Node with its
//! heartbeat and readiness, a `patch` Node restored after its owner overwrites it, the
//! `prefer-gateway` plugin and its reload, leader election between replicas (in-process and
//! real processes killed with SIGKILL), and the chain from the Node alone: kubectl exec
//! through the root simulator, which finds leafgate by `GetPreferredNodeAddress`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use kubesim::{Credential, KubeSim};
use leafgate_tests::TestGateway;
use leafgate_tests::config::{Plugin, Tenant, VirtualNode};
use leafgate_tests::plugins::{plugin, repo_root};
use leafgate_tests::vnodes::{config, gateway_dir, get, kubernetes, node, root_sim};
use serde_json::{Value, json};

/// Polls `check` every 50 ms until it holds, failing after `within`.
async fn eventually(what: &str, within: Duration, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < within, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn ready(n: &Value) -> Option<(String, String)> {
    n["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
        .map(|c| {
            (
                c["status"].as_str().unwrap_or("").to_string(),
                c["reason"].as_str().unwrap_or("").to_string(),
            )
        })
}

fn leaf_node(name: &str, cpu: &str, memory: &str, alloc_cpu: &str, ready: bool) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": "110"},
            "allocatable": {"cpu": alloc_cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]
        }
    })
}

/// Tenant `team-a`, whose pods live in namespace `team-a`.
fn team_a() -> Tenant {
    Tenant::new("team-a").namespaces(["team-a"])
}

/// The Node `vn-leaf-1` leafgate owns for `leaf-1`, NotReady 3 s after the leaf goes.
fn own() -> VirtualNode {
    VirtualNode::own("vn-leaf-1", "leaf-1")
        .set("labels", json!({"topology.kubernetes.io/zone": "edge-1"}))
        .set("not_ready_after", "3s")
}

async fn status(gw: &TestGateway) -> Value {
    leafgate_tests::client::get(gw.admin(), "admin", "/status")
        .await
        .json()
}

#[tokio::test]
async fn own_node_appears_renews_its_lease_and_turns_not_ready_only_after_the_grace() {
    let root = root_sim(KubeSim::builder()).await;
    let mut leaf = KubeSim::builder().start().await.unwrap();
    leaf.create(leaf_node("n1", "4", "8Gi", "3500m", true))
        .unwrap();
    leaf.create(leaf_node("n2", "2", "4Gi", "2", true)).unwrap();
    leaf.create(leaf_node("sick", "64", "256Gi", "64", false))
        .unwrap();
    let dir = gateway_dir(&root, &leaf, "replica-a");
    let gw = TestGateway::start_in(dir, config(kubernetes("replica-a"), team_a(), own())).await;

    eventually("the Node is Ready", Duration::from_secs(15), || {
        node(&root, "vn-leaf-1").is_some_and(|n| ready(&n).is_some_and(|(s, _)| s == "True"))
    })
    .await;
    let n = node(&root, "vn-leaf-1").unwrap();
    let labels = &n["metadata"]["labels"];
    assert_eq!(labels["type"], "virtual-kubelet");
    assert_eq!(labels["kubernetes.io/role"], "agent");
    assert_eq!(labels["topology.kubernetes.io/zone"], "edge-1");
    assert_eq!(
        n["spec"]["taints"],
        json!([{"key": "virtual-kubelet.io/provider", "value": "leafgate", "effect": "NoSchedule"}])
    );
    let s = &n["status"];
    assert_eq!(s["capacity"]["cpu"], "6", "summed over Ready nodes only");
    assert_eq!(s["capacity"]["memory"], (12u64 << 30).to_string());
    assert_eq!(s["capacity"]["pods"], "220");
    assert_eq!(s["allocatable"]["cpu"], "5500m");
    assert_eq!(
        s["addresses"][0],
        json!({"type": "Hostname", "address": "127.0.0.1"}),
        "first under the API server's default first type"
    );
    assert_eq!(
        s["daemonEndpoints"]["kubeletEndpoint"]["Port"],
        gw.addr("kubelet").port()
    );
    assert_eq!(
        s["nodeInfo"]["kubeletVersion"],
        kubesim::discovery::version()["gitVersion"]
    );

    let lease = || {
        get(
            &root,
            "coordination.k8s.io/v1",
            "Lease",
            "kube-node-lease",
            "vn-leaf-1",
        )
    };
    eventually("the heartbeat Lease exists", Duration::from_secs(5), || {
        lease().is_some()
    })
    .await;
    let first = lease().unwrap()["spec"]["renewTime"].clone();
    eventually("the heartbeat Lease renews", Duration::from_secs(5), || {
        lease().is_some_and(|l| l["spec"]["renewTime"] != first)
    })
    .await;

    let st = status(&gw).await;
    assert_eq!(st["kubernetes"]["leading"], true, "{st}");
    assert_eq!(st["kubernetes"]["leader"], "replica-a");
    let metrics = leafgate_tests::client::get(gw.admin(), "admin", "/metrics")
        .await
        .text();
    assert!(metrics.contains("leafgate_leader 1"), "{metrics}");

    // The leaf goes away: Ready holds through the grace, then turns False with a reason.
    leaf.stop().await;
    let stopped = Instant::now();
    eventually("Ready turns False", Duration::from_secs(15), || {
        node(&root, "vn-leaf-1")
            .and_then(|n| ready(&n))
            .is_some_and(|(s, reason)| s == "False" && reason == "LeafUnreachable")
    })
    .await;
    assert!(
        stopped.elapsed() >= Duration::from_secs(2),
        "NotReady after {:?}: a short outage must not flip Ready",
        stopped.elapsed()
    );
    leaf.restart().await.unwrap();
    eventually("Ready again", Duration::from_secs(20), || {
        node(&root, "vn-leaf-1").is_some_and(|n| ready(&n).is_some_and(|(s, _)| s == "True"))
    })
    .await;
}

#[tokio::test]
async fn patch_mode_restores_only_addresses_and_port_and_follows_the_plugin() {
    let root = root_sim(KubeSim::builder()).await;
    let leaf = KubeSim::builder().start().await.unwrap();
    let kosmos = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "kosmos-leaf-1", "labels": {"owner": "kosmos", "kosmos.io/node": "true"}},
        "spec": {"taints": [{"key": "kosmos.io/node", "effect": "NoSchedule"}]},
        "status": {
            "addresses": [
                {"type": "InternalDNS", "address": "10.9.9.9"},
                {"type": "Hostname", "address": "kosmos-leaf-1"}
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "capacity": {"cpu": "100", "memory": "1Ti"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KosmosReady"}],
            "nodeInfo": {"kubeletVersion": "v1.30.0-kosmos"}
        }
    });
    root.create(kosmos.clone()).unwrap();
    let dir = gateway_dir(&root, &leaf, "replica-a");
    let with_rewriter = |preferred: &str| {
        let rewriter =
            Plugin::new(plugin("prefer-gateway")).config(json!({"preferred_type": preferred}));
        config(
            kubernetes("replica-a"),
            team_a().plugin("address_rewriter", rewriter),
            VirtualNode::patch("owner=kosmos", "leaf-1").tenant("team-a"),
        )
    };
    let gw = TestGateway::start_in(dir, with_rewriter("InternalIP")).await;
    let port = gw.addr("kubelet").port();

    let first_address = |want: Value| {
        let root = &root;
        move || {
            node(root, "kosmos-leaf-1").is_some_and(|n| {
                n["status"]["addresses"][0] == want
                    && n["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == port
            })
        }
    };
    eventually(
        "the plugin's answer on the Node",
        Duration::from_secs(15),
        first_address(json!({"type": "InternalIP", "address": "127.0.0.1"})),
    )
    .await;
    let n = node(&root, "kosmos-leaf-1").unwrap();
    assert_eq!(
        &n["status"]["addresses"].as_array().unwrap()[1..],
        kosmos["status"]["addresses"].as_array().unwrap().as_slice(),
        "the owner's addresses follow, in order"
    );
    for field in ["capacity", "conditions", "nodeInfo"] {
        assert_eq!(
            n["status"][field], kosmos["status"][field],
            "{field} untouched"
        );
    }
    assert_eq!(n["metadata"]["labels"], kosmos["metadata"]["labels"]);
    assert_eq!(n["spec"], kosmos["spec"]);
    // InternalIP loses to Hostname under the API server's default order: /status says so.
    let st = status(&gw).await;
    let report = st["kubernetes"]["virtual_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["node"] == "kosmos-leaf-1")
        .cloned()
        .unwrap_or_else(|| panic!("no report for the node: {st}"));
    assert!(
        report["warning"]
            .as_str()
            .is_some_and(|w| w.contains("not the gateway address")),
        "{report}"
    );

    // The owner writes its addresses back: leafgate restores its own within 5 s.
    root.patch(
        "v1",
        "Node",
        "",
        "kosmos-leaf-1",
        &json!({"status": {"addresses": kosmos["status"]["addresses"], "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}}),
        false,
    )
    .unwrap();
    assert!(!first_address(
        json!({"type": "InternalIP", "address": "127.0.0.1"})
    )());
    eventually(
        "restored after the owner's overwrite",
        Duration::from_secs(5),
        first_address(json!({"type": "InternalIP", "address": "127.0.0.1"})),
    )
    .await;

    // A reload changing the plugin's config: the Node follows, the warning goes.
    std::fs::write(&gw.config, with_rewriter("Hostname").to_string()).unwrap();
    gw.gateway.reload().await.unwrap();
    eventually(
        "the Node follows the reloaded plugin",
        Duration::from_secs(5),
        first_address(json!({"type": "Hostname", "address": "127.0.0.1"})),
    )
    .await;
    let st = status(&gw).await;
    let warnings: Vec<&Value> = st["kubernetes"]["virtual_nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["node"] == "kosmos-leaf-1")
        .map(|r| &r["warning"])
        .collect();
    assert_eq!(warnings, [&Value::Null], "{st}");
}

fn leader_lease(root: &KubeSim) -> Option<Value> {
    get(
        root,
        "coordination.k8s.io/v1",
        "Lease",
        "leafgate-system",
        "leafgate-leader",
    )
}

fn holder(root: &KubeSim) -> Option<String> {
    leader_lease(root)?["spec"]["holderIdentity"]
        .as_str()
        .map(str::to_string)
}

/// Writes to Nodes and node Leases in the root's record, as (user, path) in order.
fn node_writes(root: &KubeSim) -> Vec<(String, String)> {
    root.requests()
        .into_iter()
        .filter(|r| r.method != "GET")
        .filter(|r| {
            r.path.starts_with("/api/v1/nodes")
                || r.path
                    .starts_with("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/")
        })
        .map(|r| (r.user.unwrap_or_default(), r.path))
        .collect()
}

/// Each change of writer in the record needs a change of leader: one run per term.
fn assert_one_writer_per_term(root: &KubeSim, terms: usize) {
    let writes = node_writes(root);
    let mut runs: Vec<&str> = Vec::new();
    for (user, _) in &writes {
        if runs.last() != Some(&user.as_str()) {
            runs.push(user);
        }
    }
    assert!(
        runs.len() <= terms,
        "writers took turns {runs:?} over {terms} terms: two replicas wrote in one term"
    );
}

#[tokio::test]
async fn two_replicas_elect_one_writer_and_hand_over() {
    let root = root_sim(KubeSim::builder()).await;
    let leaf = KubeSim::builder().start().await.unwrap();
    let a = TestGateway::start_in(
        gateway_dir(&root, &leaf, "replica-a"),
        config(kubernetes("replica-a"), team_a(), own()),
    )
    .await;
    let b = TestGateway::start_in(
        gateway_dir(&root, &leaf, "replica-b"),
        config(kubernetes("replica-b"), team_a(), own()),
    )
    .await;
    eventually("a leader", Duration::from_secs(10), || {
        holder(&root).is_some()
    })
    .await;
    eventually("the Node", Duration::from_secs(10), || {
        node(&root, "vn-leaf-1").is_some()
    })
    .await;
    let first = holder(&root).unwrap();
    let (leader, follower) = if first == "replica-a" { (a, b) } else { (b, a) };
    let sa = status(&leader).await;
    assert_eq!(sa["kubernetes"]["leading"], true, "{sa}");
    // The follower shows the leader once it has read the lease (its first try may have
    // lost the race to create it).
    let started = Instant::now();
    loop {
        let sb = status(&follower).await;
        assert_eq!(sb["kubernetes"]["leading"], false, "{sb}");
        if sb["kubernetes"]["leader"] == first.as_str() {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(5), "{sb}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        node_writes(&root).iter().all(|(user, _)| *user == first),
        "only the leader writes"
    );

    // The leader stops (releasing the lease): the follower takes over and writes.
    leader.gateway.shutdown().await;
    let second = if first == "replica-a" {
        "replica-b"
    } else {
        "replica-a"
    };
    eventually("the follower leads", Duration::from_secs(10), || {
        holder(&root).as_deref() == Some(second)
    })
    .await;
    eventually("the new leader writes", Duration::from_secs(10), || {
        node_writes(&root).last().is_some_and(|(u, _)| u == second)
    })
    .await;
    let term = leader_lease(&root).unwrap()["spec"]["leaseTransitions"]
        .as_u64()
        .unwrap();
    assert_one_writer_per_term(&root, usize::try_from(term).unwrap() + 1);
}

fn spawn_leafgate(bin: &Path, dir: &Path) -> tokio::process::Child {
    tokio::process::Command::new(bin)
        .args(["run", "--config"])
        .arg(dir.join("leafgate.toml"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("leafgate starts")
}

#[tokio::test]
async fn sigkill_of_the_leader_process_hands_over_and_the_restarted_one_follows() {
    let bin = tokio::task::spawn_blocking(leafgate_tests::binary::leafgate)
        .await
        .unwrap();
    let root = root_sim(KubeSim::builder()).await;
    let leaf = KubeSim::builder().start().await.unwrap();
    let dirs: Vec<tempfile::TempDir> = ["replica-a", "replica-b"]
        .iter()
        .map(|id| {
            let dir = gateway_dir(&root, &leaf, id);
            std::fs::write(
                dir.path().join("leafgate.toml"),
                config(kubernetes(id), team_a(), own()).to_string(),
            )
            .unwrap();
            dir
        })
        .collect();
    let mut a = spawn_leafgate(&bin, dirs[0].path());
    eventually("replica-a leads", Duration::from_secs(20), || {
        holder(&root).as_deref() == Some("replica-a")
    })
    .await;
    let mut b = spawn_leafgate(&bin, dirs[1].path());
    eventually("replica-a writes the Node", Duration::from_secs(10), || {
        node(&root, "vn-leaf-1").is_some()
    })
    .await;
    // Let replica-b come up and campaign for a while: it must not take over.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(holder(&root).as_deref(), Some("replica-a"));

    // SIGKILL: no release; the lease must expire before replica-b takes it.
    a.start_kill().unwrap();
    a.wait().await.unwrap();
    let killed = Instant::now();
    eventually("replica-b takes over", Duration::from_secs(20), || {
        holder(&root).as_deref() == Some("replica-b")
    })
    .await;
    assert!(
        killed.elapsed() >= Duration::from_secs(2),
        "taken over {:?} after the kill: before the lease could expire",
        killed.elapsed()
    );
    eventually("replica-b writes", Duration::from_secs(10), || {
        node_writes(&root)
            .last()
            .is_some_and(|(u, _)| u == "replica-b")
    })
    .await;

    // replica-a restarted follows.
    let mut a = spawn_leafgate(&bin, dirs[0].path());
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(holder(&root).as_deref(), Some("replica-b"));
    let writes = node_writes(&root);
    let last_a = writes.iter().rposition(|(u, _)| u == "replica-a");
    let first_b = writes.iter().position(|(u, _)| u == "replica-b");
    assert!(
        last_a < first_b,
        "replica-a wrote after replica-b took over"
    );
    let term = leader_lease(&root).unwrap()["spec"]["leaseTransitions"]
        .as_u64()
        .unwrap();
    assert_one_writer_per_term(&root, usize::try_from(term).unwrap() + 1);
    a.start_kill().unwrap();
    b.start_kill().unwrap();
}

/// The whole chain from leafgate's own Node: the root simulator picks the node's address
/// by `GetPreferredNodeAddress` over `InternalDNS,InternalIP,Hostname,...` and its port from
/// `daemonEndpoints`; nobody but leafgate wrote the Node.
#[tokio::test]
async fn kubectl_exec_reaches_the_leaf_through_the_node_leafgate_publishes() {
    const TOKEN: &str = "root-user-token";
    let order = [
        "InternalDNS",
        "InternalIP",
        "Hostname",
        "ExternalDNS",
        "ExternalIP",
    ];
    let root = root_sim(
        KubeSim::builder()
            .token(TOKEN, "alice")
            .kubelet_preferred_address_types(&order),
    )
    .await;
    let leaf = KubeSim::builder().start().await.unwrap();
    let pod = |node: &str| {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "team-a"},
            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "busybox"}]},
            "status": {"phase": "Running"}
        })
    };
    root.create(pod("vn-leaf-1")).unwrap();
    leaf.create(pod("leaf-node-7")).unwrap();
    let kubernetes = kubernetes("replica-a").set("preferred_address_types", order);
    let gw = TestGateway::start_in(
        gateway_dir(&root, &leaf, "replica-a"),
        config(kubernetes, team_a(), own()),
    )
    .await;
    eventually("the Node is published", Duration::from_secs(15), || {
        node(&root, "vn-leaf-1").is_some_and(|n| {
            n["status"]["addresses"][0] == json!({"type": "InternalDNS", "address": "127.0.0.1"})
        })
    })
    .await;
    eventually("the pod is indexed", Duration::from_secs(10), || {
        !gw.gateway
            .snapshot()
            .pods
            .holders("team-a", "web")
            .is_empty()
    })
    .await;

    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    root.kubeconfig(&Credential::Token(TOKEN.into()), &kubeconfig)
        .unwrap();
    let bin = kubesim::kubectl::all()
        .into_iter()
        .next()
        .expect("a kubectl (scripts/tools.sh)");
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::new(&bin)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .args([
                "-n",
                "team-a",
                "exec",
                "web",
                "--",
                "echo",
                "via the published node",
            ])
            .env("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("kubectl within 30 s")
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "via the published node\n"
    );
    assert!(
        leaf.requests()
            .iter()
            .any(|r| r.path == "/api/v1/namespaces/team-a/pods/web/exec"
                && r.user.as_deref() == Some("leafgate")),
        "the exec reached the leaf with leafgate's identity"
    );
}

/// Runs `kubernetes-validate --strict` (installed by scripts/tools.sh) on `files`.
fn kubernetes_validate(files: &[PathBuf]) -> std::process::Output {
    let py = repo_root().join("target/tools/py");
    let script = py.join("bin/kubernetes-validate");
    assert!(
        script.is_file(),
        "{} is missing: run scripts/tools.sh",
        script.display()
    );
    std::process::Command::new("python3")
        .arg(script)
        .args(["--strict", "--kubernetes-version", "1.33"])
        .args(files)
        .env("PYTHONPATH", &py)
        .output()
        .expect("python3 runs")
}

/// The `leafgate.toml` inside deploy/'s ConfigMap, read with PyYAML (a kubernetes-validate
/// dependency) so no YAML crate is needed.
fn configmap_toml(path: &Path) -> String {
    let py = repo_root().join("target/tools/py");
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, yaml; sys.stdout.write(yaml.safe_load(open(sys.argv[1]))['data']['leafgate.toml'])",
        ])
        .arg(path)
        .env("PYTHONPATH", &py)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn deploy_manifests_validate_against_the_kubernetes_schemas() {
    let dir = repo_root().join("deploy/kubernetes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for wanted in [
        "deployment.yaml",
        "rbac.yaml",
        "services.yaml",
        "pdb.yaml",
        "configmap.yaml",
    ] {
        assert!(names.iter().any(|n| n == wanted), "{wanted} in {names:?}");
    }
    let out = kubernetes_validate(&files);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // The validator does reject: a misspelt field in a copy of the Deployment.
    let tmp = tempfile::tempdir().unwrap();
    let broken = tmp.path().join("deployment.yaml");
    let text = std::fs::read_to_string(dir.join("deployment.yaml")).unwrap();
    assert!(text.contains("  replicas: 2\n"), "two replicas");
    std::fs::write(&broken, text.replace("  replicas: 2\n", "  replica: 2\n")).unwrap();
    assert!(!kubernetes_validate(&[broken]).status.success());

    // The ConfigMap's leafgate.toml has every key right: the only complaints are about
    // what exists in the pod alone (mounted files, downward-API variables, the service
    // account).
    let toml = configmap_toml(&dir.join("configmap.yaml"));
    let errors = leafgate::Config::parse(Path::new("/etc/leafgate/leafgate.toml"), &toml)
        .expect_err("the pod's files are not here")
        .0;
    for e in &errors {
        let m = &e.message;
        assert!(
            m.contains("cannot read")
                || m.contains("environment variable")
                || m.contains("KUBERNETES_SERVICE_HOST"),
            "{e}"
        );
    }
}

/// Another holder in the Lease (a replica that took it while this one was cut off): the
/// leader steps down at its next try and writes nothing more.
#[tokio::test]
async fn a_leader_that_loses_the_lease_stops_writing_at_once() {
    let root = root_sim(KubeSim::builder()).await;
    let leaf = KubeSim::builder().start().await.unwrap();
    let gw = TestGateway::start_in(
        gateway_dir(&root, &leaf, "replica-a"),
        config(kubernetes("replica-a"), team_a(), own()),
    )
    .await;
    eventually("replica-a writes", Duration::from_secs(10), || {
        !node_writes(&root).is_empty()
    })
    .await;
    let mut lease = leader_lease(&root).unwrap();
    lease["spec"]["holderIdentity"] = json!("intruder");
    lease["spec"]["leaseDurationSeconds"] = json!(3600);
    lease["spec"]["renewTime"] = json!(kubesim::store::now_rfc3339());
    root.replace(lease).unwrap();
    let mut stepped_down = false;
    for _ in 0..40 {
        if status(&gw).await["kubernetes"]["leading"] == false {
            stepped_down = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        stepped_down,
        "replica-a still leads 2 s after losing the lease"
    );
    let writes = node_writes(&root).len();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        node_writes(&root).len(),
        writes,
        "writes after stepping down"
    );
    assert_eq!(holder(&root).as_deref(), Some("intruder"));
    let metrics = leafgate_tests::client::get(gw.admin(), "admin", "/metrics")
        .await
        .text();
    assert!(metrics.contains("leafgate_leader 0"), "{metrics}");
}
