//! The read-only kinds through the kube-api front (deployments, replicasets,
//! statefulsets, daemonsets, services, configmaps, jobs, cronjobs), with the real kubectl
//! (every binary `kubesim::kubectl::all()` lists) over two simulated leaves. Every
//! expectation is what kubectl prints straight from the simulator (kube-apiserver's
//! printers, `tests/kubesim/src/kinds.rs`) for the same objects, never leafgate's output:
//! `get` of all eight kinds in a namespace, `-o wide`, `-A` (both leaves, in storage-key
//! order), `-l`, `--field-selector`, a name, `-o json`, `-w` seeing a change. Hostile:
//! tenant `other` gets the RBAC 403 on acme's namespace and acme on other's; nothing of
//! `other` appears in acme's lists or `get all -A`; a selector on a field the kind does
//! not index and a broken label selector get the simulator's own 400 words.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kubesim::{Credential, KubeSim};
use leafgate_tests::TestGateway;
use leafgate_tests::certs::TestCa;
use leafgate_tests::config::Tenant;
use leafgate_tests::kube::{self, Following, KubeUser};
use serde_json::{Value, json};
use tokio::process::Command;

pub(super) const TOKEN_A: &str = "acme-resources-token";
pub(super) const TOKEN_OTHER: &str = "other-resources-token";
const KINDS: &str = "deploy,rs,sts,ds,job,cronjob,svc,cm";

fn template(app: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": app}},
        "spec": {"containers": [{"name": "app", "image": format!("registry.example/{app}:1.0")}]},
    })
}

/// One object of each kind for `app` in `ns`, and the statuses their controllers write
/// (api version, kind, name, status).
fn objects(ns: &str, app: &str) -> (Vec<Value>, Vec<(&'static str, &'static str, Value)>) {
    let meta = |name: &str| json!({"namespace": ns, "name": name, "labels": {"app": app}});
    let selector = json!({"matchLabels": {"app": app}});
    let mut job_template = template(app);
    job_template["spec"]["restartPolicy"] = json!("Never");
    let mut ds_template = template(app);
    ds_template["spec"]["nodeSelector"] = json!({"kubernetes.io/os": "linux"});
    let created = vec![
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(app),
            "spec": {"replicas": 2, "selector": selector, "template": template(app)}}),
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta(&format!("{app}-5d4f8b9c6")),
            "spec": {"replicas": 2, "selector": selector, "template": template(app)}}),
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta(&format!("{app}-db")),
            "spec": {"replicas": 1, "serviceName": app, "selector": selector, "template": template(app)}}),
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta(&format!("{app}-agent")),
            "spec": {"selector": selector, "template": ds_template}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": meta(app),
            "spec": {"selector": {"app": app}, "clusterIP": "10.96.0.10",
                "ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(&format!("{app}-settings")),
            "data": {"a": "1", "b": "2"}}),
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(&format!("{app}-migrate")),
            "spec": {"completions": 1, "template": job_template}}),
        json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": meta(&format!("{app}-db-7f9c5d")), "data": {}, "revision": 1}),
        json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta(&format!("{app}-nightly")),
            "spec": {"schedule": "*/5 * * * *",
                "jobTemplate": {"spec": {"template": job_template}}}}),
    ];
    let statuses = vec![
        (
            "apps/v1",
            "Deployment",
            json!({"status": {"replicas": 2, "readyReplicas": 1,
            "updatedReplicas": 2, "availableReplicas": 1}}),
        ),
        (
            "apps/v1",
            "ReplicaSet",
            json!({"status": {"replicas": 2, "readyReplicas": 1}}),
        ),
        (
            "apps/v1",
            "StatefulSet",
            json!({"status": {"replicas": 1, "readyReplicas": 1}}),
        ),
        (
            "apps/v1",
            "DaemonSet",
            json!({"status": {"desiredNumberScheduled": 3,
            "currentNumberScheduled": 3, "numberReady": 2, "updatedNumberScheduled": 3,
            "numberAvailable": 2}}),
        ),
        (
            "batch/v1",
            "Job",
            json!({"status": {"succeeded": 1, "startTime": "2024-01-01T00:00:00Z",
            "completionTime": "2024-01-01T00:00:30Z", "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True"},
                {"type": "Complete", "status": "True"}]}}),
        ),
        // Long ago: the same age printed at any moment of the test.
        (
            "batch/v1",
            "CronJob",
            json!({"status": {"lastScheduleTime": "2024-01-01T00:00:00Z"}}),
        ),
    ];
    (created, statuses)
}

/// Creates `objects(ns, app)` in `sim`, statuses written as their controllers do.
fn populate(sim: &KubeSim, ns: &str, app: &str) -> usize {
    let (created, statuses) = objects(ns, app);
    let n = created.len();
    for object in created {
        let made = sim.create(object).unwrap();
        let (version, kind) = (
            made["apiVersion"].as_str().unwrap(),
            made["kind"].as_str().unwrap(),
        );
        let name = made["metadata"]["name"].as_str().unwrap();
        if let Some((_, _, status)) = statuses
            .iter()
            .find(|(v, k, _)| *v == version && *k == kind)
        {
            sim.patch_status(version, kind, ns, name, status).unwrap();
        }
    }
    n
}

pub(super) fn kubectl(bin: &Path, kubeconfig: &Path, cache: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .kill_on_drop(true);
    cmd
}

pub(super) async fn run(cmd: Command) -> (Option<i32>, String, String) {
    let done = kubesim::testkit::run(cmd, None).await;
    (done.code, done.out, done.err)
}

/// One printed table: its header's column names and each row's cells, cut where the
/// header's columns start (kubectl's tabwriter aligns every cell with its header, and
/// pads columns by at least three spaces; `LAST SCHEDULE` is one column).
#[derive(Debug)]
pub(super) struct Printed {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Printed {
    fn parse(text: &str) -> Printed {
        let mut cut = kubesim::testkit::cut_table(text).into_iter();
        Printed {
            header: cut.next().unwrap_or_default(),
            rows: cut.collect(),
        }
    }

    /// The header and rows without the columns named in `skip`.
    pub(super) fn without(&self, skip: &[&str]) -> Vec<Vec<String>> {
        let keep: Vec<usize> = (0..self.header.len())
            .filter(|i| !skip.contains(&self.header[*i].as_str()))
            .collect();
        std::iter::once(&self.header)
            .chain(&self.rows)
            .map(|r| keep.iter().map(|i| r[*i].clone()).collect())
            .collect()
    }

    /// Column `name`'s cells.
    pub(super) fn column(&self, name: &str) -> Vec<&str> {
        let at = self.header.iter().position(|h| h == name).unwrap();
        self.rows.iter().map(|r| r[at].as_str()).collect()
    }
}

/// The tables of a multi-kind `kubectl get`, one per kind.
pub(super) fn tables(out: &str) -> Vec<Printed> {
    out.split("\n\n")
        .filter(|t| !t.trim().is_empty())
        .map(Printed::parse)
        .collect()
}

/// The columns compared: ages count to the wall clock, LEAF is the front's.
pub(super) const SKIP: &[&str] = &["AGE", "LEAF", "NAMESPACE"];

/// Two leaves behind leafgate; tenant acme (`apps`, `apps-*`), tenant other (`other`):
/// acme's `web` objects in leaf-a's `apps`, its `api` objects in leaf-b's `apps-dev`,
/// other's `hidden` objects in leaf-a's `other`.
pub(super) struct Bed {
    pub(super) gw: TestGateway,
    pub(super) leaf_a: KubeSim,
    pub(super) leaf_b: KubeSim,
    pub(super) ca: TestCa,
    pub(super) dir: tempfile::TempDir,
}

impl Bed {
    async fn start() -> Bed {
        Bed::start_tenants(|acme| acme, |other| other).await
    }

    /// [`Bed::start`] with tenants `acme` and `other` as the two functions make them
    /// (their `resources`, say).
    pub(super) async fn start_tenants(
        acme: impl FnOnce(Tenant) -> Tenant,
        other: impl FnOnce(Tenant) -> Tenant,
    ) -> Bed {
        let bed = Bed::of(kube::TwoLeaves::start_tenants(TOKEN_A, TOKEN_OTHER, acme, other).await);
        let a = populate(&bed.leaf_a, "apps", "web") + populate(&bed.leaf_a, "other", "hidden");
        let b = populate(&bed.leaf_b, "apps-dev", "api");
        bed.held("leaf-a", a).await;
        bed.held("leaf-b", b).await;
        for (sim, name) in [(&bed.leaf_a, "a"), (&bed.leaf_b, "b")] {
            sim.kubeconfig(
                &Credential::ClientCert("admin".into()),
                &bed.dir.path().join(format!("{name}.kubeconfig")),
            )
            .unwrap();
        }
        bed
    }

    /// The bed of `two`'s gateway and leaves, with a folder for kubeconfigs and caches.
    pub(super) fn of(two: kube::TwoLeaves) -> Bed {
        let dir = tempfile::tempdir().unwrap();
        let (gw, ca) = (two.gw, two.ca);
        let (leaf_a, leaf_b) = (two.leaf_a, two.leaf_b);
        Bed {
            gw,
            leaf_a,
            leaf_b,
            ca,
            dir,
        }
    }

    /// Waits (up to 10 s) until leaf `leaf` holds `n` objects of the read-only kinds: the
    /// stores have no signal to wait on from here.
    pub(super) async fn held(&self, leaf: &str, n: usize) {
        let started = Instant::now();
        loop {
            let snapshot = self.gw.gateway.snapshot();
            let counts: Vec<_> = snapshot.leaves[leaf].kinds().counts().collect();
            if counts.iter().map(|(_, c)| c).sum::<usize>() >= n {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{leaf}: {counts:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A kubeconfig for `token` through the front.
    fn kubeconfig(&self, token: &str) -> PathBuf {
        kube::kubeconfig(
            self.dir.path(),
            &self.ca,
            self.gw.addr("kube"),
            KubeUser::Token(token),
            Some("apps"),
        )
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    /// kubectl's cache for calls as `token` through the front: discovery is each tenant's
    /// own (its `resources`), and kubectl keys its discovery cache by server alone.
    fn front_cache(&self, token: &str) -> PathBuf {
        let id: String = token
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .take(24)
            .collect();
        self.dir.path().join(format!("cache-{id}"))
    }

    /// kubectl as `token` through the front.
    pub(super) async fn front(
        &self,
        bin: &Path,
        token: &str,
        args: &[&str],
    ) -> (Option<i32>, String, String) {
        run(kubectl(
            bin,
            &self.kubeconfig(token),
            &self.front_cache(token),
            args,
        ))
        .await
    }

    /// One request as `token` with `method` and `accept` through the front, over TLS: the
    /// whole answer as text.
    pub(super) async fn raw(&self, token: &str, method: &str, path: &str, accept: &str) -> String {
        let tls = leafgate_tests::gateway_api::trusting(self.ca.roots());
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
        );
        leafgate_tests::client::wire(self.gw.addr("kube"), tls, "127.0.0.1", request.as_bytes())
            .await
    }

    /// kubectl straight at leaf `a` or `b`, as its admin.
    pub(super) async fn direct(
        &self,
        bin: &Path,
        leaf: &str,
        args: &[&str],
    ) -> (Option<i32>, String, String) {
        let kubeconfig = self.dir.path().join(format!("{leaf}.kubeconfig"));
        run(kubectl(bin, &kubeconfig, &self.cache(), args)).await
    }
}

pub(super) fn ok((code, out, err): (Option<i32>, String, String), what: &str) -> String {
    assert_eq!(code, Some(0), "{what}: {err}");
    out
}

fn args<'a>(base: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(more).copied().collect()
}

#[tokio::test]
async fn every_kind_prints_as_the_leaf_prints_it() {
    let bed = Bed::start().await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display().to_string();
        for extra in [&[][..], &["-o", "wide"][..]] {
            let mut all_namespaces = Vec::new();
            for (leaf, name, ns) in [("b", "leaf-b", "apps-dev"), ("a", "leaf-a", "apps")] {
                let get = args(&["get", KINDS, "-n", ns], extra);
                let want = tables(&ok(bed.direct(&bin, leaf, &get).await, &b));
                let got = tables(&ok(bed.front(&bin, TOKEN_A, &get).await, &b));
                assert_eq!(want.len(), 8, "{b} {get:?}: {want:?}");
                assert_eq!(got.len(), want.len(), "{b} {get:?}: {got:?}");
                for (got, want) in got.iter().zip(&want) {
                    assert_eq!(got.without(SKIP), want.without(SKIP), "{b} {get:?}");
                    assert_eq!(got.header.last().map(String::as_str), Some("LEAF"), "{b}");
                    assert!(
                        got.column("LEAF").iter().all(|l| *l == name),
                        "{b}: {got:?}"
                    );
                    assert!(
                        got.column("AGE").iter().all(|a| a.ends_with('s')),
                        "{b}: {got:?}"
                    );
                }
                all_namespaces.push(want);
            }
            // Both leaves, in storage-key order (`apps-dev/...` before `apps/...`), other's
            // `hidden` nowhere.
            let get = args(&["get", KINDS, "-A"], extra);
            let got = tables(&ok(bed.front(&bin, TOKEN_A, &get).await, &b));
            assert_eq!(got.len(), 8, "{b} {get:?}");
            for (i, got) in got.iter().enumerate() {
                let mut want = all_namespaces[0][i].without(SKIP);
                want.extend(all_namespaces[1][i].without(SKIP).into_iter().skip(1));
                assert_eq!(got.without(SKIP), want, "{b} {get:?}");
                assert_eq!(got.column("NAMESPACE"), ["apps-dev", "apps"], "{b} {get:?}");
            }
        }
        let out = ok(
            bed.front(&bin, TOKEN_A, &["get", "deploy,svc", "-A", "-l", "app=web"])
                .await,
            &b,
        );
        let names: Vec<_> = tables(&out)
            .iter()
            .flat_map(|t| {
                t.column("NAME")
                    .into_iter()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(names, ["deployment.apps/web", "service/web"], "{b}: {out}");
        let select = [
            "get",
            "deploy",
            "-A",
            "--field-selector",
            "metadata.name=api",
        ];
        let out = ok(bed.front(&bin, TOKEN_A, &select).await, &b);
        assert_eq!(Printed::parse(&out).column("NAME"), ["api"], "{b}: {out}");
        let select = [
            "get",
            "svc",
            "-A",
            "--field-selector",
            "spec.type=ClusterIP,metadata.namespace=apps",
        ];
        let out = ok(bed.front(&bin, TOKEN_A, &select).await, &b);
        assert_eq!(Printed::parse(&out).column("NAME"), ["web"], "{b}: {out}");
        let select = [
            "get",
            "job",
            "-A",
            "--field-selector",
            "status.successful=1",
        ];
        let out = ok(bed.front(&bin, TOKEN_A, &select).await, &b);
        assert_eq!(
            Printed::parse(&out).column("NAME"),
            ["api-migrate", "web-migrate"],
            "{b}: {out}"
        );
        // One by name, as JSON: the leaf's object with the leaf annotation.
        let out = ok(
            bed.front(&bin, TOKEN_A, &["get", "deploy", "web", "-o", "json"])
                .await,
            &b,
        );
        let web: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            web["metadata"]["annotations"]["leafgate.io/leaf"], "leaf-a",
            "{b}"
        );
        assert_eq!(web["status"]["readyReplicas"], 1, "{b}");
        assert_eq!(web["kind"], "Deployment", "{b}");
        // A name no leaf has: the simulator's own words.
        let missing = ["get", "deploy", "nope", "-n", "apps"];
        let (code, _, err) = bed.front(&bin, TOKEN_A, &missing).await;
        let (want_code, _, want_err) = bed.direct(&bin, "a", &missing).await;
        assert_eq!((code, err), (want_code, want_err), "{b}");
    }
}

#[tokio::test]
async fn a_watch_sees_a_change_of_the_leaf() {
    let bed = Bed::start().await;
    let bin = kubesim::kubectl::all().into_iter().next().unwrap();
    let cmd = kubectl(
        &bin,
        &bed.kubeconfig(TOKEN_A),
        &bed.cache(),
        &["get", "deploy", "-w"],
    );
    let mut watch = Following::spawn(cmd);
    let header = watch.next().await;
    assert!(header.starts_with("NAME"), "{header}");
    let first = watch.next().await;
    assert_eq!(
        first.split_whitespace().take(2).collect::<Vec<_>>(),
        ["web", "1/2"],
        "{first}"
    );
    bed.leaf_a
        .patch_status(
            "apps/v1",
            "Deployment",
            "apps",
            "web",
            &json!({"status": {"readyReplicas": 2}}),
        )
        .unwrap();
    let changed = watch.next().await;
    assert_eq!(
        changed.split_whitespace().take(2).collect::<Vec<_>>(),
        ["web", "2/2"],
        "{changed}"
    );
    watch.stop().await;
}

#[tokio::test]
async fn other_tenants_namespaces_are_forbidden_and_nothing_leaks() {
    let bed = Bed::start().await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display().to_string();
        let (code, _, err) = bed
            .front(&bin, TOKEN_OTHER, &["get", "deploy", "-n", "apps"])
            .await;
        assert_eq!(code, Some(1), "{b}");
        assert!(
            err.contains("deployments.apps is forbidden: User \"tenant:other\" cannot list resource \"deployments\" in API group \"apps\" in the namespace \"apps\""),
            "{b}: {err}"
        );
        let (code, _, err) = bed
            .front(
                &bin,
                TOKEN_A,
                &["get", "cm", "hidden-settings", "-n", "other"],
            )
            .await;
        assert_eq!(code, Some(1), "{b}");
        assert!(
            err.contains("configmaps \"hidden-settings\" is forbidden: User \"tenant:acme\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"other\""),
            "{b}: {err}"
        );
        for get in [
            &["get", KINDS, "-A", "-o", "wide"][..],
            &["get", "all", "-A"][..],
        ] {
            let out = ok(bed.front(&bin, TOKEN_A, get).await, &b);
            assert!(
                out.contains("web") && out.contains("api"),
                "{b} {get:?}: {out}"
            );
            assert!(
                !out.contains("hidden") && !out.contains("other"),
                "{b} {get:?}: {out}"
            );
        }
        let out = ok(bed.front(&bin, TOKEN_A, &["get", "all", "-A"]).await, &b);
        let kinds: Vec<String> = tables(&out)
            .iter()
            .map(|t| t.column("NAME")[0].split('/').next().unwrap().to_string())
            .collect();
        for kind in [
            "service",
            "daemonset.apps",
            "deployment.apps",
            "replicaset.apps",
            "statefulset.apps",
            "cronjob.batch",
            "job.batch",
        ] {
            assert!(kinds.iter().any(|k| k == kind), "{b}: no {kind} in {out}");
        }
        // Hostile selectors: the simulator's own 400s.
        for hostile in [
            &[
                "get",
                "deploy",
                "-n",
                "apps",
                "--field-selector",
                "spec.replicas=2",
            ][..],
            &[
                "get",
                "job",
                "-n",
                "apps",
                "--field-selector",
                "spec.completions=1",
            ][..],
            &[
                "get",
                "svc",
                "-n",
                "apps",
                "--field-selector",
                "spec.ports=80",
            ][..],
        ] {
            let (code, out, err) = bed.front(&bin, TOKEN_A, hostile).await;
            let (want_code, _, want_err) = bed.direct(&bin, "a", hostile).await;
            assert_eq!(want_code, Some(1), "{b} {hostile:?}: {want_err}");
            assert_eq!((code, err), (want_code, want_err), "{b} {hostile:?}: {out}");
        }
        // A broken label selector: kube-apiserver's 400 (the parser's own words differ).
        let broken = ["get", "deploy", "-n", "apps", "-l", "app in ((web"];
        let (code, _, err) = bed.front(&bin, TOKEN_A, &broken).await;
        assert_eq!(code, Some(1), "{b}");
        assert!(
            err.starts_with("Error from server (BadRequest): ")
                && err.contains("unable to parse requirement"),
            "{b}: {err}"
        );
        // Verbs the front does not serve.
        let (code, _, err) = bed
            .front(&bin, TOKEN_A, &["delete", "deploy", "web", "-n", "apps"])
            .await;
        assert_eq!(code, Some(1), "{b}");
        assert!(
            err.contains("MethodNotAllowed") || err.contains("not allowed"),
            "{b}: {err}"
        );
    }
}

/// The other kinds, from the simulator's `shop` fixture (services, endpoints, an
/// endpointslice, an ingress, a configmap, secrets, a serviceaccount, a limitrange, a
/// resourcequota, a PVC, a networkpolicy, an HPA, a PDB, ...) applied in leaf-b's
/// `apps-shop`.
const OTHER_KINDS: &str =
    "ep,pvc,sa,limits,quota,endpointslices,ing,netpol,hpa,pdb,controllerrevisions";

#[tokio::test]
async fn the_other_kinds_print_as_the_leaf_prints_them() {
    let bed = Bed::start().await;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kube-resources/shop.yaml");
    let shop = std::fs::read_to_string(&path)
        .unwrap()
        .replace("shop", "apps-shop");
    let bin = kubesim::kubectl::pinned();
    let kubeconfig = bed.dir.path().join("b.kubeconfig");
    let apply = kubectl(
        &bin,
        &kubeconfig,
        &bed.cache(),
        &["apply", "--validate=false", "-f", "-"],
    );
    let done = kubesim::testkit::run(apply, Some(shop.as_bytes())).await;
    assert_eq!(done.code, Some(0), "apply: {}", done.err);
    // The fixture's 16 objects of the kinds kept (not the namespace, not the two
    // secrets), beside the 9 of `apps-dev`.
    bed.held("leaf-b", 9 + 16).await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display().to_string();
        for extra in [&[][..], &["-o", "wide"][..]] {
            let get = args(&["get", OTHER_KINDS, "-n", "apps-shop"], extra);
            let (code, out, err) = bed.direct(&bin, "b", &get).await;
            assert_eq!(code, Some(0), "{b} {get:?}: {err}");
            let want = tables(&out);
            assert!(want.len() >= 9, "{b} {get:?}: {out}");
            let (code, out, got_err) = bed.front(&bin, TOKEN_A, &get).await;
            assert_eq!(code, Some(0), "{b} {get:?}: {got_err}");
            // The Endpoints' deprecation warning too.
            assert_eq!(got_err, err, "{b} {get:?}");
            let got = tables(&out);
            assert_eq!(got.len(), want.len(), "{b} {get:?}: {out}");
            for (got, want) in got.iter().zip(&want) {
                assert_eq!(got.without(SKIP), want.without(SKIP), "{b} {get:?}");
                assert!(
                    got.column("LEAF").iter().all(|l| *l == "leaf-b"),
                    "{b}: {got:?}"
                );
            }
        }
        // Every kind is in discovery, with its short name and the `all` category.
        let out = ok(
            bed.front(&bin, TOKEN_A, &["api-resources", "--no-headers"])
                .await,
            &b,
        );
        let resources: Vec<Vec<&str>> = out
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        for want in [
            &["deployments", "deploy", "apps/v1", "true", "Deployment"][..],
            &[
                "horizontalpodautoscalers",
                "hpa",
                "autoscaling/v2",
                "true",
                "HorizontalPodAutoscaler",
            ][..],
            &[
                "endpointslices",
                "discovery.k8s.io/v1",
                "true",
                "EndpointSlice",
            ][..],
            &["services", "svc", "v1", "true", "Service"][..],
        ] {
            assert!(
                resources.iter().any(|r| r == want),
                "{b}: no {want:?} in {out}"
            );
        }
        let out = ok(
            bed.front(
                &bin,
                TOKEN_A,
                &["api-resources", "--categories", "all", "-o", "name"],
            )
            .await,
            &b,
        );
        let mut all: Vec<&str> = out.lines().collect();
        all.sort();
        assert_eq!(
            all,
            [
                "cronjobs.batch",
                "daemonsets.apps",
                "deployments.apps",
                "horizontalpodautoscalers.autoscaling",
                "jobs.batch",
                "pods",
                "replicasets.apps",
                "services",
                "statefulsets.apps"
            ],
            "{b}"
        );
    }
}

/// `s` with its runs of whitespace as single spaces, without the lines naming `skip`.
fn norm(s: &str, skip: &str) -> String {
    s.lines()
        .filter(|l| !l.contains(skip))
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn describe_and_rollout_status_read_through_the_front() {
    let bed = Bed::start().await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display().to_string();
        // kubectl's own lookups (the ReplicaSets by selector, the events by object) run
        // against the front as against the leaf; only the leaf annotation differs.
        for describe in [
            &["describe", "deployment", "web", "-n", "apps"][..],
            &["describe", "service", "web", "-n", "apps"][..],
        ] {
            let want = ok(bed.direct(&bin, "a", describe).await, &b);
            let got = ok(bed.front(&bin, TOKEN_A, describe).await, &b);
            assert!(got.contains("leafgate.io/leaf: leaf-a"), "{b}: {got}");
            assert_eq!(
                norm(&got, "leafgate.io/leaf"),
                norm(&want, "Annotations:"),
                "{b} {describe:?}"
            );
        }
        // `rollout history` reads the deployment's ReplicaSets, as against the leaf.
        let history = ["rollout", "history", "deployment/web", "-n", "apps"];
        let want = ok(bed.direct(&bin, "a", &history).await, &b);
        let got = ok(bed.front(&bin, TOKEN_A, &history).await, &b);
        assert_eq!(got, want, "{b}");
        // `explain` finds the kind in the front's OpenAPI v3 documents, with the upstream
        // field documentation.
        let explain = ["explain", "deployment.spec.strategy"];
        let got = ok(bed.front(&bin, TOKEN_A, &explain).await, &b);
        for want in [
            "KIND:",
            "Deployment",
            "apps",
            "FIELD: strategy <DeploymentStrategy>",
            "The deployment strategy to use to replace existing pods with new ones.",
            "rollingUpdate",
            "Rolling update config params.",
        ] {
            assert!(got.contains(want), "{b}: {want:?} in {got}");
        }
    }
    // `rollout status` watches the deployment until it is available.
    let bin = kubesim::kubectl::pinned();
    let args = ["rollout", "status", "deployment/web", "-n", "apps"];
    let cmd = kubectl(&bin, &bed.kubeconfig(TOKEN_A), &bed.cache(), &args);
    let mut rollout = Following::spawn(cmd);
    let waiting = rollout.next().await;
    // Its status has not observed the spec yet (no observedGeneration).
    assert_eq!(
        waiting,
        "Waiting for deployment spec update to be observed..."
    );
    let status = json!({"status": {"observedGeneration": 1, "readyReplicas": 2,
        "availableReplicas": 2}});
    bed.leaf_a
        .patch_status("apps/v1", "Deployment", "apps", "web", &status)
        .unwrap();
    let mut last = waiting;
    while let Some(line) = rollout.next_line().await {
        last = line;
    }
    assert_eq!(last, "deployment \"web\" successfully rolled out");
}
