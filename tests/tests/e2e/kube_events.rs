//! Events and namespaces through the kube-api listener, with the real kubectl (every
//! binary `kubesim::kubectl::all()` lists): first kubectl straight at the simulator (its
//! events and namespaces served as kube-apiserver serves them), then through leafgate over
//! two simulated leaves: `describe pod` shows the pod's events from its leaf, `get events
//! -A` merges the leaves, `kubectl events` works, field selectors select, `get ns` prints
//! `NAME STATUS AGE` and a glob match no leaf has is NotFound. Hostile: tenant `other`
//! never sees acme's events (any selector, `-A`), and events are a tenant's by their own
//! namespace, whatever object they name (as RBAC scopes them).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kubesim::{Credential, KubeSim};
use leafgate_tests::TestGateway;
use leafgate_tests::certs::TestCa;
use leafgate_tests::kube::{self, Following, KubeUser};
use serde_json::{Value, json};
use tokio::process::Command;

const TOKEN_A: &str = "acme-events-token";
const TOKEN_OTHER: &str = "other-events-token";

fn pod(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": name},
        "spec": {"nodeName": "leaf-node", "containers": [{"name": "app", "image": "busybox"}]},
        "status": {"phase": "Running", "podIP": "10.1.2.3"}
    })
}

/// A kubelet-style event in `ns` about the object `about` (kind, namespace, name, uid).
fn event(ns: &str, name: &str, about: (&str, &str, &str, &str), reason: &str, msg: &str) -> Value {
    let now = kubesim::store::now_rfc3339();
    let (kind, obj_ns, obj_name, uid) = about;
    json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"namespace": ns, "name": name},
        "involvedObject": {"kind": kind, "namespace": obj_ns, "name": obj_name, "uid": uid, "apiVersion": "v1"},
        "reason": reason, "message": msg, "type": "Normal",
        "source": {"component": "kubelet", "host": "leaf-node"},
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
    })
}

fn uid(created: &Value) -> String {
    created["metadata"]["uid"].as_str().unwrap().to_string()
}

/// `get events -A`'s header, as words: kube-apiserver's event columns, then LEAF.
const ALL_NAMESPACES_HEADER: [&str; 8] = [
    "NAMESPACE",
    "LAST",
    "SEEN",
    "TYPE",
    "REASON",
    "OBJECT",
    "MESSAGE",
    "LEAF",
];

/// The table's rows as words, header first.
fn rows(out: &str) -> Vec<Vec<&str>> {
    out.lines()
        .map(|l| l.split_whitespace().collect())
        .collect()
}

fn kubectl(bin: &Path, kubeconfig: &Path, cache: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .kill_on_drop(true);
    cmd
}

async fn run(cmd: Command) -> (Option<i32>, String, String) {
    let done = kubesim::testkit::run(cmd, None).await;
    (done.code, done.out, done.err)
}

#[tokio::test]
async fn the_simulator_serves_events_and_namespaces_as_kube_apiserver() {
    let sim = KubeSim::builder().start().await.unwrap();
    let web = sim.create(pod("apps", "web")).unwrap();
    let about = ("Pod", "apps", "web", &*uid(&web));
    sim.create(event("apps", "web.1", about, "Pulled", "pulled busybox"))
        .unwrap();
    sim.create(event(
        "apps",
        "db.1",
        ("Pod", "apps", "db", "u-db"),
        "Started",
        "started",
    ))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("sim.kubeconfig");
    sim.kubeconfig(&Credential::ClientCert("admin".into()), &kubeconfig)
        .unwrap();
    let cache = dir.path().join("cache");
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let k = |args: &[&str]| kubectl(&bin, &kubeconfig, &cache, args);
        let (code, out, err) = run(k(&[
            "get",
            "events",
            "-n",
            "apps",
            "--field-selector",
            "involvedObject.name=web",
        ]))
        .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        let r = rows(&out);
        assert_eq!(
            r[0],
            ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
            "{b}: {out}"
        );
        assert_eq!(r.len(), 2, "{b}: {out}");
        assert_eq!(r[1][1..4], ["Normal", "Pulled", "pod/web"], "{b}: {out}");
        let (code, _, err) = run(k(&["get", "events", "--field-selector", "spec.x=y"])).await;
        assert_eq!(code, Some(1), "{b}");
        assert!(
            err.contains("field label not supported: spec.x"),
            "{b}: {err}"
        );
        let (code, out, err) = run(k(&["get", "ns"])).await;
        assert_eq!(code, Some(0), "{b}: {err}");
        let r = rows(&out);
        assert_eq!(r[0], ["NAME", "STATUS", "AGE"], "{b}: {out}");
        assert!(r.iter().any(|w| w[..2] == ["apps", "Active"]), "{b}: {out}");
        let (code, out, err) = run(k(&["describe", "pod", "web", "-n", "apps"])).await;
        assert_eq!(code, Some(0), "{b}: {err}");
        assert!(out.contains("pulled busybox"), "{b}: {out}");
        assert!(!out.contains("started"), "{b}: db's event: {out}");
    }
}

/// Two leaves behind leafgate; tenant acme (`apps`, `apps-*`) and tenant other (`other`).
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

    /// Waits (up to 10 s) until leaf `leaf`'s event store holds `n` events and its
    /// namespace store `ns`: the stores have no signal to wait on from here.
    async fn held(&self, leaf: &str, n: usize, ns: &str) {
        let started = Instant::now();
        loop {
            let snapshot = self.gw.gateway.snapshot();
            let l = &snapshot.leaves[leaf];
            if l.events().len() >= n && l.namespaces().get(ns).is_some() {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{leaf}: {} events, namespace {ns} {}",
                l.events().len(),
                if l.namespaces().get(ns).is_some() {
                    "held"
                } else {
                    "missing"
                }
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// A kubeconfig for `token` in namespace `apps`.
    fn kubeconfig(&self, token: &str) -> PathBuf {
        kube::kubeconfig(
            self.dir.path(),
            &self.ca,
            self.gw.addr("kube"),
            KubeUser::Token(token),
            Some("apps"),
        )
    }

    /// kubectl as `token` following `args` (`get -w`), a line at a time.
    fn follow(&self, bin: &Path, token: &str, args: &[&str]) -> Following {
        let cache = self.dir.path().join("cache");
        Following::spawn(kubectl(bin, &self.kubeconfig(token), &cache, args))
    }

    /// kubectl's output for `args`, which must succeed.
    async fn ok(&self, bin: &Path, token: &str, args: &[&str]) -> String {
        let (code, out, err) = self.kubectl(bin, token, args).await;
        assert_eq!(code, Some(0), "{} {args:?}: {err}", bin.display());
        out
    }

    async fn kubectl(
        &self,
        bin: &Path,
        token: &str,
        args: &[&str],
    ) -> (Option<i32>, String, String) {
        let kubeconfig = self.kubeconfig(token);
        run(kubectl(
            bin,
            &kubeconfig,
            &self.dir.path().join("cache"),
            args,
        ))
        .await
    }

    /// acme: apps/web in leaf-a (two events), apps/db in leaf-b (one), apps-2/job in leaf-b
    /// (one); a pod `web` of another uid in leaf-b's apps with its own event; an event in
    /// apps about an object of other's namespace. other: other/secret in leaf-a (one event).
    async fn with_events(self) -> Bed {
        let web = uid(&self.leaf_a.create(pod("apps", "web")).unwrap());
        let db = uid(&self.leaf_b.create(pod("apps", "db")).unwrap());
        let job = uid(&self.leaf_b.create(pod("apps-2", "job")).unwrap());
        let secret = uid(&self.leaf_a.create(pod("other", "secret")).unwrap());
        let a = &self.leaf_a;
        let b = &self.leaf_b;
        a.create(event(
            "apps",
            "web.1",
            ("Pod", "apps", "web", &web),
            "Scheduled",
            "assigned apps/web",
        ))
        .unwrap();
        a.create(event(
            "apps",
            "web.2",
            ("Pod", "apps", "web", &web),
            "Pulled",
            "pulled busybox for web",
        ))
        .unwrap();
        b.create(event(
            "apps",
            "db.1",
            ("Pod", "apps", "db", &db),
            "Started",
            "started db",
        ))
        .unwrap();
        b.create(event(
            "apps-2",
            "job.1",
            ("Pod", "apps-2", "job", &job),
            "Started",
            "started job",
        ))
        .unwrap();
        b.create(event(
            "apps",
            "web.9",
            ("Pod", "apps", "web", "another-uid"),
            "Killing",
            "a web of leaf-b",
        ))
        .unwrap();
        a.create(event(
            "apps",
            "cross.1",
            ("Pod", "other", "secret", &secret),
            "Noticed",
            "names another namespace",
        ))
        .unwrap();
        a.create(event(
            "other",
            "secret.1",
            ("Pod", "other", "secret", &secret),
            "Pulled",
            "pulled the secret image",
        ))
        .unwrap();
        self.held("leaf-a", 4, "other").await;
        self.held("leaf-b", 3, "apps-2").await;
        self
    }
}

#[tokio::test]
async fn describe_pod_shows_its_events_from_its_leaf() {
    let bed = Bed::start().await.with_events().await;
    bed.gw.indexed("apps", "web").await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let out = bed.ok(&bin, TOKEN_A, &["describe", "pod", "web"]).await;
        let events = out.split("Events:").nth(1).unwrap_or("");
        assert!(!events.contains("<none>"), "{b}: {out}");
        for want in [
            "Scheduled",
            "assigned apps/web",
            "Pulled",
            "pulled busybox for web",
        ] {
            assert!(events.contains(want), "{b}: no {want:?} in {events}");
        }
        // The same name in the other leaf is another pod (another uid).
        assert!(!events.contains("a web of leaf-b"), "{b}: {events}");
        assert!(!events.contains("Noticed"), "{b}: {events}");
    }
}

#[tokio::test]
async fn get_events_merges_the_leaves_and_selects_by_field() {
    let bed = Bed::start().await.with_events().await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let out = bed.ok(&bin, TOKEN_A, &["get", "events", "-A"]).await;
        let r = rows(&out);
        assert_eq!(r[0], ALL_NAMESPACES_HEADER, "{b}: {out}");
        let seen: Vec<(&str, &str, &str)> = r[1..]
            .iter()
            .map(|w| (w[0], w[4], *w.last().unwrap()))
            .collect();
        // LAST SEEN is two words in the header, one in the rows. In kube-apiserver's
        // storage-key order: `apps-2/job.1` before `apps/cross.1` (`-` sorts before `/`).
        assert_eq!(
            seen,
            [
                ("apps-2", "pod/job", "leaf-b"),
                ("apps", "pod/secret", "leaf-a"),
                ("apps", "pod/db", "leaf-b"),
                ("apps", "pod/web", "leaf-a"),
                ("apps", "pod/web", "leaf-a"),
                ("apps", "pod/web", "leaf-b"),
            ],
            "{b}: both leaves, acme's namespaces only: {out}"
        );
        assert!(!out.contains("pulled the secret image"), "{b}: {out}");

        let out = bed
            .ok(
                &bin,
                TOKEN_A,
                &[
                    "get",
                    "events",
                    "--field-selector",
                    "involvedObject.name=db",
                    "-o",
                    "wide",
                ],
            )
            .await;
        let r = rows(&out);
        assert_eq!(r.len(), 2, "{b}: {out}");
        assert!(
            r[0].contains(&"SUBOBJECT") && r[0].contains(&"COUNT"),
            "{b}: {out}"
        );
        assert!(
            r[1].contains(&"db.1") && r[1].contains(&"leaf-b"),
            "{b}: {out}"
        );

        let (code, _, err) = bed
            .kubectl(
                &bin,
                TOKEN_A,
                &["get", "events", "--field-selector", "spec.nodeName=x"],
            )
            .await;
        assert_eq!(code, Some(1), "{b}");
        assert!(
            err.contains("field label not supported: spec.nodeName"),
            "{b}: {err}"
        );

        let out = bed.ok(&bin, TOKEN_A, &["events", "-n", "apps"]).await;
        for want in ["assigned apps/web", "started db", "a web of leaf-b"] {
            assert!(out.contains(want), "{b}: no {want:?} in {out}");
        }
        assert!(
            !out.contains("started job"),
            "{b}: apps-2 is not apps: {out}"
        );

        let out = bed
            .ok(&bin, TOKEN_A, &["events", "-n", "apps", "--for", "pod/db"])
            .await;
        assert!(out.contains("started db"), "{b}: {out}");
        assert!(!out.contains("assigned apps/web"), "{b}: {out}");

        let out = bed
            .ok(&bin, TOKEN_A, &["get", "event", "db.1", "-o", "json"])
            .await;
        let ev: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            ev["metadata"]["annotations"]["leafgate.io/leaf"], "leaf-b",
            "{b}"
        );
        assert!(ev["metadata"].get("managedFields").is_none(), "{b}: {out}");
    }
}

#[tokio::test]
async fn a_tenant_never_sees_another_tenants_events() {
    let bed = Bed::start().await.with_events().await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        // other's -A: its own event only, not acme's event that names its namespace (that
        // event lives in acme's namespace, as RBAC would scope it).
        let out = bed.ok(&bin, TOKEN_OTHER, &["get", "events", "-A"]).await;
        let r = rows(&out);
        assert_eq!(r.len(), 2, "{b}: {out}");
        assert_eq!((r[1][0], r[1][4]), ("other", "pod/secret"), "{b}: {out}");
        for selector in [
            "metadata.namespace=apps",
            "involvedObject.namespace=other",
            "involvedObject.name=web",
            "type=Normal",
        ] {
            let (code, out, err) = bed
                .kubectl(
                    &bin,
                    TOKEN_OTHER,
                    &[
                        "get",
                        "events",
                        "-A",
                        "--field-selector",
                        selector,
                        "-o",
                        "json",
                    ],
                )
                .await;
            assert_eq!(code, Some(0), "{b} {selector}: {err}");
            let list: Value = serde_json::from_str(&out).unwrap();
            for item in list["items"].as_array().unwrap() {
                assert_eq!(
                    item["metadata"]["namespace"], "other",
                    "{b} {selector}: {out}"
                );
            }
        }
        let (code, _, err) = bed
            .kubectl(&bin, TOKEN_OTHER, &["get", "events", "-n", "apps"])
            .await;
        assert_eq!(code, Some(1), "{b}");
        assert_eq!(
            err.trim(),
            "Error from server (Forbidden): events is forbidden: User \"tenant:other\" cannot list resource \"events\" in API group \"\" in the namespace \"apps\"",
            "{b}"
        );
        let (code, _, err) = bed
            .kubectl(&bin, TOKEN_OTHER, &["get", "event", "db.1", "-n", "apps"])
            .await;
        assert_eq!(code, Some(1), "{b}");
        assert!(err.contains("(Forbidden)"), "{b}: {err}");
        // describe of another tenant's pod: refused before any event is read.
        let (code, out, _) = bed
            .kubectl(&bin, TOKEN_OTHER, &["describe", "pod", "web", "-n", "apps"])
            .await;
        assert_ne!(code, Some(0), "{b}");
        assert!(!out.contains("assigned apps/web"), "{b}: {out}");
        // acme sees the event in its namespace that names other's pod: its namespace, its event.
        let out = bed
            .ok(
                &bin,
                TOKEN_A,
                &[
                    "get",
                    "events",
                    "--field-selector",
                    "involvedObject.namespace=other",
                ],
            )
            .await;
        let r = rows(&out);
        assert_eq!(r.len(), 2, "{b}: {out}");
        assert!(out.contains("names another namespace"), "{b}: {out}");
    }
}

#[tokio::test]
async fn namespaces_are_the_ones_the_leaves_have() {
    let bed = Bed::start().await.with_events().await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let out = bed.ok(&bin, TOKEN_A, &["get", "ns"]).await;
        let r = rows(&out);
        assert_eq!(r[0], ["NAME", "STATUS", "AGE"], "{b}: {out}");
        let names: Vec<(&str, &str)> = r[1..].iter().map(|w| (w[0], w[1])).collect();
        assert_eq!(
            names,
            [("apps", "Active"), ("apps-2", "Active")],
            "{b}: {out}"
        );
        assert!(r[1][2].ends_with('s'), "{b}: a real age: {out}");

        let out = bed.ok(&bin, TOKEN_A, &["get", "ns", "-o", "wide"]).await;
        let r = rows(&out);
        assert_eq!(r[0], ["NAME", "STATUS", "AGE", "LEAF"], "{b}: {out}");
        assert_eq!((r[1][0], r[1][3]), ("apps", "leaf-a,leaf-b"), "{b}: {out}");
        assert_eq!((r[2][0], r[2][3]), ("apps-2", "leaf-b"), "{b}: {out}");

        let (code, _, err) = bed.kubectl(&bin, TOKEN_A, &["get", "ns", "apps-zzz"]).await;
        assert_eq!(code, Some(1), "{b}");
        assert_eq!(
            err.trim(),
            "Error from server (NotFound): namespaces \"apps-zzz\" not found",
            "{b}"
        );
        let out = bed.ok(&bin, TOKEN_A, &["get", "ns", "apps-2"]).await;
        assert_eq!(rows(&out)[1][..2], ["apps-2", "Active"], "{b}: {out}");

        // Another tenant's namespace is refused whether or not it exists.
        for ns in ["other", "nowhere"] {
            let (code, _, err) = bed.kubectl(&bin, TOKEN_A, &["get", "ns", ns]).await;
            assert_eq!(code, Some(1), "{b}");
            assert!(err.contains("(Forbidden)"), "{b}: {err}");
        }
        let out = bed.ok(&bin, TOKEN_OTHER, &["get", "ns"]).await;
        assert_eq!(rows(&out).len(), 2, "{b}: {out}");
    }
}

#[tokio::test]
async fn kubectl_get_events_watch_follows_the_leaves_without_other_tenants() {
    let bed = Bed::start().await.with_events().await;
    for (i, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        let b = bin.display();
        let mut watching = bed.follow(&bin, TOKEN_A, &["get", "events", "-w"]);
        let mut next = async || watching.next().await;
        assert!(next().await.starts_with("LAST SEEN "), "{b}");
        // The list first: apps' five events, and those earlier rounds added.
        let mut listed = Vec::new();
        for _ in 0..5 + 2 * i {
            listed.push(next().await);
        }
        assert!(
            listed.iter().all(|l| !l.contains("secret image")),
            "{b}: {listed:?}"
        );
        // Another tenant's event, then one of ours: the next line is ours.
        bed.leaf_a
            .create(event(
                "other",
                &format!("late.{i}"),
                ("Pod", "other", "secret", "u"),
                "Late",
                "other's late event",
            ))
            .unwrap();
        bed.leaf_b
            .create(event(
                "apps",
                &format!("late.{i}"),
                ("Pod", "apps", "db", "u"),
                "Late",
                "acme's late event",
            ))
            .unwrap();
        let line = next().await;
        assert!(
            line.contains("acme's late event") && line.ends_with("leaf-b"),
            "{b}: {line}"
        );
        bed.leaf_a
            .create(event(
                "apps",
                &format!("later.{i}"),
                ("Pod", "apps", "web", "u"),
                "Later",
                "acme's later event",
            ))
            .unwrap();
        let line = next().await;
        assert!(
            line.contains("acme's later event") && line.ends_with("leaf-a"),
            "{b}: {line}"
        );
        watching.stop().await;
    }
}

/// `events.k8s.io/v1` serves the same events in the newer API's shape (`regarding`, `note`,
/// `deprecatedSource`), selects with its own field labels (`regarding.name`; the core
/// `involvedObject.name` is its 400), prints the same table, and refuses another tenant's
/// namespace naming its group, as kube-apiserver does.
#[tokio::test]
async fn events_k8s_io_serves_the_same_events_in_the_new_apis_shape() {
    let bed = Bed::start().await.with_events().await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let out = bed
            .ok(
                &bin,
                TOKEN_A,
                &[
                    "get",
                    "events.v1.events.k8s.io",
                    "--field-selector",
                    "regarding.name=web",
                    "-o",
                    "json",
                ],
            )
            .await;
        let list: Value = serde_json::from_str(&out).unwrap();
        let items = list["items"].as_array().unwrap();
        let mut notes: Vec<&str> = items.iter().map(|i| i["note"].as_str().unwrap()).collect();
        notes.sort();
        assert_eq!(
            notes,
            [
                "a web of leaf-b",
                "assigned apps/web",
                "pulled busybox for web"
            ],
            "{b}: {out}"
        );
        for item in items {
            assert_eq!(item["apiVersion"], "events.k8s.io/v1", "{b}: {item}");
            assert_eq!(item["regarding"]["name"], "web", "{b}: {item}");
            assert_eq!(item["deprecatedSource"]["component"], "kubelet", "{b}");
            assert_eq!(item["deprecatedCount"], 1, "{b}: {item}");
            assert!(item.get("involvedObject").is_none(), "{b}: {item}");
            assert!(item.get("message").is_none(), "{b}: {item}");
        }
        // The table is kube-apiserver's printEvent, as under core/v1.
        let out = bed
            .ok(&bin, TOKEN_A, &["get", "events.events.k8s.io", "-A"])
            .await;
        let r = rows(&out);
        assert_eq!(r[0], ALL_NAMESPACES_HEADER, "{b}: {out}");
        assert_eq!(r.len(), 7, "acme's six events: {b}: {out}");
        let (code, _, err) = bed
            .kubectl(
                &bin,
                TOKEN_A,
                &[
                    "get",
                    "events.events.k8s.io",
                    "--field-selector",
                    "involvedObject.name=web",
                ],
            )
            .await;
        assert_eq!(code, Some(1), "{b}");
        assert!(
            err.contains("field label not supported: involvedObject.name"),
            "{b}: {err}"
        );
        let (code, _, err) = bed
            .kubectl(
                &bin,
                TOKEN_OTHER,
                &["get", "events.events.k8s.io", "-n", "apps"],
            )
            .await;
        assert_eq!(code, Some(1), "{b}");
        assert_eq!(
            err.trim(),
            "Error from server (Forbidden): events.events.k8s.io is forbidden: User \"tenant:other\" cannot list resource \"events\" in API group \"events.k8s.io\" in the namespace \"apps\"",
            "{b}"
        );
        let (code, out, err) = bed
            .kubectl(
                &bin,
                TOKEN_A,
                &["auth", "can-i", "watch", "events.events.k8s.io"],
            )
            .await;
        assert_eq!((code, out.trim()), (Some(0), "yes"), "{b}: {err}");
        // `explain` reads the group's own OpenAPI document.
        let out = bed
            .ok(
                &bin,
                TOKEN_A,
                &["explain", "events.note", "--api-version=events.k8s.io/v1"],
            )
            .await;
        assert!(out.contains("GROUP:      events.k8s.io"), "{b}: {out}");
        assert!(out.contains("FIELD: note <string>"), "{b}: {out}");
    }
}

/// A watch with a field selector sees an event modified out of what it selects as
/// `DELETED` (its content as it was, as kube-apiserver's watch cache sends it) and one
/// modified into it as `ADDED`.
#[tokio::test]
async fn an_event_modified_across_a_watchs_selector_leaves_and_enters_it() {
    let bed = Bed::start().await.with_events().await;
    let mut warning = event(
        "apps",
        "web.backoff",
        ("Pod", "apps", "web", "u"),
        "BackOff",
        "back-off restarting",
    );
    warning["type"] = json!("Warning");
    let mut current = bed.leaf_a.create(warning.clone()).unwrap();
    bed.held("leaf-a", 5, "apps").await;
    for (i, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        let b = bin.display();
        let kubeconfig = bed.kubeconfig(TOKEN_A);
        let mut watching = Following::spawn(kubectl(
            &bin,
            &kubeconfig,
            &bed.dir.path().join("cache"),
            &[
                "get",
                "events",
                "-w",
                "--output-watch-events",
                "--field-selector",
                "type=Warning",
            ],
        ));
        let mut next = async || watching.next().await;
        assert!(next().await.starts_with("EVENT "), "{b}");
        // The list: the Warning, and the markers of earlier rounds.
        for _ in 0..=i {
            let listed = next().await;
            assert!(listed.starts_with("ADDED "), "{b}: {listed}");
        }
        // A new Warning shows the watch is following (the list came before it).
        let mut marker = warning.clone();
        marker["metadata"]["name"] = json!(format!("web.marker-{i}"));
        marker["message"] = json!(format!("marker {i}"));
        bed.leaf_a.create(marker).unwrap();
        let line = next().await;
        assert!(line.contains(&format!("marker {i}")), "{b}: {line}");
        // Modified out of the selector: DELETED, still reading as the Warning it was.
        let was = current["message"].as_str().unwrap().to_string();
        let mut normal = current.clone();
        normal["type"] = json!("Normal");
        normal["message"] = json!("recovered");
        normal["metadata"]["resourceVersion"] = json!("");
        let normal = bed.leaf_a.replace(normal).unwrap();
        let line = next().await;
        assert!(
            line.starts_with("DELETED ") && line.contains("Warning") && line.contains(&was),
            "{b}: {line}"
        );
        // Modified back into it: ADDED, as it now is.
        let mut again = normal.clone();
        again["type"] = json!("Warning");
        again["message"] = json!(format!("back-off again {i}"));
        again["metadata"]["resourceVersion"] = json!("");
        current = bed.leaf_a.replace(again).unwrap();
        let line = next().await;
        assert!(
            line.starts_with("ADDED ") && line.contains(&format!("back-off again {i}")),
            "{b}: {line}"
        );
        watching.stop().await;
    }
}

/// `fieldSelector` is one grammar, kube-apiserver's `fields.ParseSelector`, for pods and
/// events alike: `metadata.name=a\,b` is one term (a name with a comma, which nothing
/// has), `!=` of it holds for everything, and a bad escape is the same 400 for both.
#[tokio::test]
async fn a_field_selector_with_an_escaped_comma_is_one_term_for_pods_and_events_alike() {
    let bed = Bed::start().await.with_events().await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let mut refusals = Vec::new();
        for resource in ["pods", "events"] {
            let get = async |selector: &str| {
                let args = ["get", resource, "-o", "name", "--field-selector", selector];
                bed.kubectl(&bin, TOKEN_A, &args).await
            };
            let (code, out, err) = get(r"metadata.name=a\,b").await;
            assert_eq!((code, out.as_str()), (Some(0), ""), "{b} {resource}: {err}");
            let (code, out, err) = get(r"metadata.name!=a\,b").await;
            assert_eq!(code, Some(0), "{b} {resource}: {err}");
            let want = if resource == "pods" {
                "pod/web"
            } else {
                "event/web.1"
            };
            assert!(out.lines().any(|l| l == want), "{b} {resource}: {out}");
            let (code, _, err) = get(r"metadata.name=a\x").await;
            assert_eq!(code, Some(1), "{b} {resource}");
            refusals.push(err.trim().to_string());
        }
        // The 400 as kubectl prints it (its own words around the server's message).
        let refusal = |resource: &str| {
            format!(
                r#"Error from server (BadRequest): Unable to find "/v1, Resource={resource}" that match label selector "", field selector "metadata.name=a\\x": invalid field selector: invalid escape sequence: \x"#
            )
        };
        assert_eq!(refusals, [refusal("pods"), refusal("events")], "{b}");
    }
}

/// `kubectl get ns -w` follows the leaves' namespaces: a namespace of the tenant's added
/// to a leaf is printed, one of nobody's is not.
#[tokio::test]
async fn kubectl_get_ns_watch_sees_a_namespace_added() {
    let bed = Bed::start().await.with_events().await;
    let namespace =
        |name: &str| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    for (i, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        let b = bin.display();
        let mut watching = bed.follow(&bin, TOKEN_A, &["get", "ns", "-w"]);
        let mut next = async || watching.next().await;
        assert!(next().await.starts_with("NAME "), "{b}");
        // The list: apps, apps-2, and what earlier rounds added, each once.
        for _ in 0..2 + i {
            let line = next().await;
            assert!(line.starts_with("apps"), "{b}: {line}");
        }
        bed.leaf_a
            .create(namespace(&format!("nobodys-{i}")))
            .unwrap();
        bed.leaf_b
            .create(namespace(&format!("apps-new-{i}")))
            .unwrap();
        let line = next().await;
        let name = line.split_whitespace().next();
        assert_eq!(name, Some(format!("apps-new-{i}").as_str()), "{b}: {line}");
        watching.stop().await;
    }
}
