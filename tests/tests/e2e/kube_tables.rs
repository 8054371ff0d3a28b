//! The pod table end to end: every shape of kubesim's catalogue (`kubesim::fixtures`),
//! spread over two simulated leaves, printed by the real kubectl three ways: straight at the
//! simulators (the oracle: kubesim's own `printPod`), through leafgate's built-in Table
//! (tenant `acme`, namespace `shapes`), through the `pods-table` plugin (tenant `plugged`,
//! namespace `plugged`, the same pods) and through its JavaScript twin
//! (`plugins/js/pods-table`, tenant `scripted`, namespace `scripted`). READY, STATUS and
//! RESTARTS must read the same every way, and the oracle must read as the catalogue worked
//! out by hand.
//!
//! Cells are cut out by the header's column positions, not split on spaces: RESTARTS
//! reads `5 (15m ago)` and NOMINATED NODE is two words.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kubesim::fixtures::{PodShape, pod_shapes};
use kubesim::{Credential, KubeSim};
use leafgate_tests::certs::TestCa;
use leafgate_tests::config::{Leaf, Listener, Plugin, Tenant};
use leafgate_tests::kube::{self, KubeUser};
use leafgate_tests::plugins::{Lang, lang_plugin, plugin};
use leafgate_tests::{Config, TestGateway};
use serde_json::json;
use tokio::process::Command;

const TOKEN_ACME: &str = "acme-token-1";
const TOKEN_PLUGGED: &str = "plugged-token-1";
const TOKEN_OTHER: &str = "other-token-1";
const TOKEN_SCRIPTED: &str = "scripted-token-1";
/// The columns compared across the three printers.
const COMPARED: [&str; 3] = ["READY", "STATUS", "RESTARTS"];

struct Bed {
    gw: TestGateway,
    leaves: [KubeSim; 2],
    shapes: Vec<PodShape>,
    ca: TestCa,
    dir: tempfile::TempDir,
}

/// A table as kubectl printed it: the header's column names, and each row's cells by name.
struct Printed {
    columns: Vec<String>,
    rows: BTreeMap<String, BTreeMap<String, String>>,
}

/// Cuts kubectl's human output into cells at the columns' start offsets: kubectl aligns
/// every cell under its header (a tabwriter), and a header name never holds two spaces.
fn parse(out: &str, key: &str) -> Printed {
    let mut lines = out.lines();
    let header = lines.next().unwrap_or_default();
    let mut starts = Vec::new();
    let mut columns = Vec::new();
    let mut at = 0;
    for name in header.split("  ").filter(|s| !s.trim().is_empty()) {
        let offset = header[at..].find(name.trim()).expect("a header name") + at;
        starts.push(offset);
        columns.push(name.trim().to_string());
        at = offset + name.trim().len();
    }
    let mut rows = BTreeMap::new();
    for line in lines {
        let cells: BTreeMap<String, String> = columns
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let end = starts
                    .get(i + 1)
                    .copied()
                    .unwrap_or(line.len())
                    .min(line.len());
                let cell = line.get(starts[i]..end).unwrap_or("").trim().to_string();
                (name.clone(), cell)
            })
            .collect();
        rows.insert(cells[key].clone(), cells);
    }
    Printed { columns, rows }
}

/// The gateway: a kube-api listener over both leaves; acme reads `shapes` with the
/// built-in table, plugged reads `plugged` through `pods-table`, scripted reads `scripted`
/// through the JavaScript pods-table, other reads `other`.
fn config() -> Config {
    Config::new()
        .admin()
        .listener(Listener::kube_api("kube").tls("kube-api.pem", "kube-api-key.pem"))
        .leaf(Leaf::new("leaf-a", "a.kubeconfig"))
        .leaf(Leaf::new("leaf-b", "b.kubeconfig"))
        .tenant(
            Tenant::new("acme")
                .namespaces(["shapes"])
                .tokens_file("acme.tokens"),
        )
        .tenant(
            Tenant::new("plugged")
                .namespaces(["plugged"])
                .tokens_file("plugged.tokens")
                .plugin("table_formatter", Plugin::new(plugin("pods-table"))),
        )
        .tenant(
            Tenant::new("scripted")
                .namespaces(["scripted"])
                .tokens_file("scripted.tokens")
                .plugin(
                    "table_formatter",
                    // The call itself, not the start-up: printing the catalogue in one
                    // call is more than 10 ms of the JavaScript interpreter on a busy host.
                    Plugin::new(lang_plugin(Lang::Js, "pods-table", "table-formatter"))
                        .set("deadline", "500ms"),
                ),
        )
        .tenant(
            Tenant::new("other")
                .namespaces(["other"])
                .tokens_file("other.tokens"),
        )
}

impl Bed {
    /// Two leaves holding every shape twice (namespaces `shapes` and `plugged`), the shapes
    /// alternating between the leaves, and tenant other's one pod; the gateway over them.
    async fn start() -> Bed {
        let leaves = [
            KubeSim::builder().start().await.unwrap(),
            KubeSim::builder().start().await.unwrap(),
        ];
        let gw_dir = tempfile::tempdir().unwrap();
        for (sim, file) in leaves.iter().zip(["a.kubeconfig", "b.kubeconfig"]) {
            sim.kubeconfig(
                &Credential::ClientCert("leafgate".into()),
                &gw_dir.path().join(file),
            )
            .unwrap();
        }
        let ca = kube::serving_ca(gw_dir.path());
        for (file, token) in [
            ("acme.tokens", TOKEN_ACME),
            ("plugged.tokens", TOKEN_PLUGGED),
            ("other.tokens", TOKEN_OTHER),
            ("scripted.tokens", TOKEN_SCRIPTED),
        ] {
            std::fs::write(gw_dir.path().join(file), token).unwrap();
        }
        let shapes = pod_shapes();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        for (i, shape) in shapes.iter().enumerate() {
            for ns in ["shapes", "plugged", "scripted"] {
                let mut pod = shape.pod_at(now);
                pod["metadata"]["namespace"] = json!(ns);
                leaves[i % 2].create(pod).unwrap();
            }
        }
        leaves[0]
            .create(json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"namespace": "other", "name": "secret"},
                "spec": {"nodeName": "node-1", "containers": [{"name": "app", "image": "busybox"}]},
                "status": {"phase": "Running"},
            }))
            .unwrap();
        let gw = TestGateway::start_in(gw_dir, config()).await;
        for shape in &shapes {
            for ns in ["shapes", "plugged", "scripted"] {
                gw.indexed(ns, shape.name()).await;
            }
        }
        gw.indexed("other", "secret").await;
        Bed {
            gw,
            leaves,
            shapes,
            ca,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// A kubeconfig for leafgate's kube-api front as `token`.
    fn gateway_kubeconfig(&self, token: &str) -> PathBuf {
        let addr = self.gw.addr("kube");
        kube::kubeconfig(
            self.dir.path(),
            &self.ca,
            addr,
            KubeUser::Token(token),
            None,
        )
    }

    /// A kubeconfig straight at leaf `i`'s simulator.
    fn leaf_kubeconfig(&self, i: usize) -> PathBuf {
        let path = self.dir.path().join(format!("leaf-{i}.kubeconfig"));
        self.leaves[i]
            .kubeconfig(&Credential::ClientCert("tester".into()), &path)
            .unwrap();
        path
    }

    /// Runs kubectl to completion; asserts it succeeded and said nothing on stderr.
    async fn kubectl(&self, bin: &Path, kubeconfig: &Path, args: &[&str]) -> String {
        let mut cmd = Command::new(bin);
        cmd.arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args);
        let done = kubesim::testkit::run(cmd, None).await;
        let b = bin.display();
        assert_eq!(done.code, Some(0), "{b} {args:?}: {}", done.err);
        assert_eq!(done.err, "", "{b} {args:?}: kubectl warns about nothing");
        done.out
    }

    /// The oracle: `kubectl get pods -n shapes -o wide` straight at both simulators.
    async fn oracle(&self, bin: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut rows = BTreeMap::new();
        for i in 0..2 {
            let out = self
                .kubectl(
                    bin,
                    &self.leaf_kubeconfig(i),
                    &["get", "pods", "-n", "shapes", "-o", "wide"],
                )
                .await;
            let printed = parse(&out, "NAME");
            assert_eq!(
                printed.columns,
                [
                    "NAME",
                    "READY",
                    "STATUS",
                    "RESTARTS",
                    "AGE",
                    "IP",
                    "NODE",
                    "NOMINATED NODE",
                    "READINESS GATES"
                ],
                "{out}"
            );
            rows.extend(printed.rows);
        }
        rows
    }
}

/// kubectl straight at the simulator prints every shape as the catalogue worked it out
/// from `printPod`: the oracle holds before leafgate stands in between.
#[tokio::test]
async fn the_simulator_prints_every_shape_as_printpod_does() {
    let bed = Bed::start().await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let oracle = bed.oracle(&bin).await;
        assert_eq!(oracle.len(), bed.shapes.len(), "{b}: {oracle:?}");
        for shape in &bed.shapes {
            let row = &oracle[shape.name()];
            let p = &shape.printed;
            let got = [
                "READY",
                "STATUS",
                "RESTARTS",
                "IP",
                "NODE",
                "NOMINATED NODE",
                "READINESS GATES",
            ]
            .map(|c| row[c].as_str());
            let want = [
                &p.ready,
                &p.status,
                &p.restarts,
                &p.ip,
                &p.node,
                &p.nominated,
                &p.gates,
            ]
            .map(String::as_str);
            assert_eq!(got, want, "{b}: {}: {}", shape.name(), shape.about);
        }
    }
}

/// Through leafgate, the built-in Table and the `pods-table` plugin print READY, STATUS and
/// RESTARTS of every shape as kubectl prints them straight from the simulator; the built-in
/// table's wide columns match too, and LEAF names the leaf each shape was put in.
#[tokio::test]
async fn every_shape_prints_through_leafgate_as_the_simulator_prints_it() {
    let bed = Bed::start().await;
    let acme = bed.gateway_kubeconfig(TOKEN_ACME);
    let plugged = bed.gateway_kubeconfig(TOKEN_PLUGGED);
    let scripted = bed.gateway_kubeconfig(TOKEN_SCRIPTED);
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let oracle = bed.oracle(&bin).await;
        let out = bed
            .kubectl(&bin, &acme, &["get", "pods", "-n", "shapes", "-o", "wide"])
            .await;
        let builtin = parse(&out, "NAME");
        assert_eq!(
            builtin.columns,
            [
                "NAME",
                "READY",
                "STATUS",
                "RESTARTS",
                "AGE",
                "IP",
                "NODE",
                "NOMINATED NODE",
                "READINESS GATES",
                "LEAF"
            ],
            "{b}: {out}"
        );
        let out = bed
            .kubectl(
                &bin,
                &plugged,
                &["get", "pods", "-n", "plugged", "-o", "wide"],
            )
            .await;
        let plugin = parse(&out, "NAME");
        assert_eq!(
            plugin.columns,
            [
                "NAME", "READY", "STATUS", "RESTARTS", "AGE", "LEAF", "IP", "NODE"
            ],
            "{b}: {out}"
        );
        let out = bed
            .kubectl(
                &bin,
                &scripted,
                &["get", "pods", "-n", "scripted", "-o", "wide"],
            )
            .await;
        let js = parse(&out, "NAME");
        assert_eq!(
            js.columns, plugin.columns,
            "{b}: the JavaScript pods-table: {out}"
        );
        for (i, shape) in bed.shapes.iter().enumerate() {
            let name = shape.name();
            let want = &oracle[name];
            let leaf = ["leaf-a", "leaf-b"][i % 2];
            for (printer, rows) in [
                ("built-in", &builtin.rows),
                ("pods-table", &plugin.rows),
                ("js pods-table", &js.rows),
            ] {
                let row = rows
                    .get(name)
                    .unwrap_or_else(|| panic!("{b}: {printer} has no {name}"));
                assert_eq!(
                    COMPARED.map(|c| &row[c]),
                    COMPARED.map(|c| &want[c]),
                    "{b}: {printer}: {name}: {}",
                    shape.about
                );
                assert_eq!(row["LEAF"], leaf, "{b}: {printer}: {name}");
                for c in ["IP", "NODE"] {
                    assert_eq!(row[c], want[c], "{b}: {printer}: {name}: {c}");
                }
            }
            let row = &builtin.rows[name];
            for c in ["NOMINATED NODE", "READINESS GATES"] {
                assert_eq!(row[c], want[c], "{b}: built-in: {name}: {c}");
            }
        }
        assert_eq!(builtin.rows.len(), bed.shapes.len(), "{b}");
        assert_eq!(plugin.rows.len(), bed.shapes.len(), "{b}");
        assert_eq!(js.rows.len(), bed.shapes.len(), "{b}");
    }
}

/// The shapes are acme's and plugged's: tenant other, asking for every namespace or for
/// theirs by name, sees only its own pod, and the refusal names nothing of theirs.
#[tokio::test]
async fn another_tenant_sees_none_of_the_shapes() {
    let bed = Bed::start().await;
    let other = bed.gateway_kubeconfig(TOKEN_OTHER);
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let out = bed.kubectl(&bin, &other, &["get", "pods", "-A"]).await;
        let printed = parse(&out, "NAME");
        let names: Vec<&String> = printed.rows.keys().collect();
        assert_eq!(names, ["secret"], "{b}: {out}");

        let mut cmd = Command::new(&bin);
        cmd.arg("--kubeconfig")
            .arg(&other)
            .arg("--cache-dir")
            .arg(bed.dir.path().join("cache"))
            .args(["get", "pods", "-n", "shapes", "-o", "wide"]);
        let done = kubesim::testkit::run(cmd, None).await;
        assert_eq!(done.code, Some(1), "{b}: {}", done.out);
        assert_eq!(
            done.err.trim(),
            "Error from server (Forbidden): pods is forbidden: User \"tenant:other\" cannot list resource \"pods\" in API group \"\" in the namespace \"shapes\"",
            "{b}"
        );
        assert_eq!(done.out, "", "{b}: nothing of the shapes");
    }
}
