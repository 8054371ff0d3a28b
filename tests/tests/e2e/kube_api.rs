//! The kube-api listener end to end with the real kubectl (every binary
//! `kubesim::kubectl::all()` lists): two simulated leaves behind leafgate, tenant `acme`
//! (namespaces `apps`, `apps-*`; `pods-table` and `redact`) and tenant `other`, each with
//! its own bearer token, and a kubeconfig the test writes.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use kubesim::KubeSim;
use kubesim::testkit::{annotate_port, assert_echoes, echo_server, forwarding_from};
use leafgate_tests::access_log::lines_where;
use leafgate_tests::certs::TestCa;
use leafgate_tests::config::{Leaf, Listener, Plugin, Tenant};
use leafgate_tests::kube::{self, Following, KubeUser};
use leafgate_tests::plugins::plugin;
use leafgate_tests::{Config, TestGateway};
use serde_json::{Value, json};
use tokio::process::Command;

const TOKEN_A: &str = "acme-token-1";
const TOKEN_OTHER: &str = "other-token-1";
const NO_WS_EXEC: (&str, &str) = ("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false");

fn pod(ns: &str, name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "labels": labels},
        "spec": {"nodeName": "leaf-node", "containers": [{"name": "app", "image": "busybox"}]},
        "status": {"phase": "Running", "podIP": "10.1.2.3"}
    })
}

/// The gateway's config: a kube-api listener over leaves a and b, tenant acme (with the
/// redact log filter, and `table_plugin` as its table formatter if given) and tenant other.
fn config(table_plugin: Option<&Path>) -> Config {
    config_with(table_plugin, false)
}

/// [`config`]; with `hyper_too`, `kube` reads upgrades in place whatever the environment
/// says (`http1_fast_path = true`) and a second kube-api listener, `kube-hyper`, serves
/// every request through hyper.
fn config_with(table_plugin: Option<&Path>, hyper_too: bool) -> Config {
    let kube = |name: &str| {
        Listener::kube_api(name)
            .tls("kube-api.pem", "kube-api-key.pem")
            .client_ca("clients-ca.pem")
    };
    let mut acme = Tenant::new("acme")
        .namespaces(["apps", "apps-*"])
        .tokens_file("acme.tokens")
        .client_names(["acme-ci"])
        .plugin(
            "log_filter",
            Plugin::new(plugin("redact")).config(json!({"patterns": [r"password=\S+"]})),
        );
    if let Some(table) = table_plugin {
        acme = acme.plugin("table_formatter", Plugin::new(table));
    }
    let config = if hyper_too {
        Config::new()
            .listener(kube("kube").set("http1_fast_path", true))
            .listener(kube("kube-hyper").set("http1_fast_path", false))
    } else {
        Config::new().listener(kube("kube"))
    };
    config
        .admin()
        .leaf(Leaf::new("leaf-a", "a.kubeconfig"))
        .leaf(Leaf::new("leaf-b", "b.kubeconfig"))
        .tenant(acme)
        .tenant(
            Tenant::new("other")
                .namespaces(["other"])
                .tokens_file("other.tokens"),
        )
}

struct Bed {
    gw: TestGateway,
    leaf_a: KubeSim,
    leaf_b: KubeSim,
    ca: TestCa,
    dir: tempfile::TempDir,
}

impl Bed {
    /// With `with_table_plugin`, acme's `table_formatter` is the `pods-table` plugin.
    async fn start(with_table_plugin: bool) -> Bed {
        Self::start_with(with_table_plugin, false).await
    }

    /// [`Bed::start`], with `kube-hyper` beside `kube` when `hyper_too` ([`config_with`]).
    async fn start_with(with_table_plugin: bool, hyper_too: bool) -> Bed {
        Self::start_config(with_table_plugin, hyper_too, |config, _| config).await
    }

    /// [`Bed::start_with`], the config as `extra` makes it of [`config_with`]'s (given the
    /// gateway's folder).
    async fn start_config(
        with_table_plugin: bool,
        hyper_too: bool,
        extra: impl FnOnce(Config, &Path) -> Config,
    ) -> Bed {
        let leaf_a = KubeSim::builder().start().await.unwrap();
        let leaf_b = KubeSim::builder().start().await.unwrap();
        let gw_dir = tempfile::tempdir().unwrap();
        kube::leaf_kubeconfigs(
            gw_dir.path(),
            &[(&leaf_a, "a.kubeconfig"), (&leaf_b, "b.kubeconfig")],
        );
        let ca = kube::serving_ca(gw_dir.path());
        std::fs::write(
            gw_dir.path().join("acme.tokens"),
            format!("# acme's CI\n\n  {TOKEN_A}  \n"),
        )
        .unwrap();
        std::fs::write(gw_dir.path().join("other.tokens"), TOKEN_OTHER).unwrap();
        let table = with_table_plugin.then(|| plugin("pods-table"));
        let config = extra(config_with(table.as_deref(), hyper_too), gw_dir.path());
        let gw = TestGateway::start_in(gw_dir, config).await;
        Bed {
            gw,
            leaf_a,
            leaf_b,
            ca,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// The standard pods: apps/web in leaf-a, apps/db in leaf-b, apps-2/job in leaf-b,
    /// other/secret in leaf-a.
    async fn with_pods(self) -> Bed {
        self.leaf_a
            .create(pod("apps", "web", json!({"app": "x"})))
            .unwrap();
        self.leaf_b
            .create(pod("apps", "db", json!({"app": "y"})))
            .unwrap();
        self.leaf_b
            .create(pod("apps-2", "job", json!({"app": "x"})))
            .unwrap();
        self.leaf_a
            .create(pod("other", "secret", json!({"app": "x"})))
            .unwrap();
        for (ns, name) in [
            ("apps", "web"),
            ("apps", "db"),
            ("apps-2", "job"),
            ("other", "secret"),
        ] {
            self.indexed(ns, name).await;
        }
        self
    }

    /// With the standard pods, acme's `table_formatter` the fault plugin `name`, put in by
    /// a reload.
    async fn with_table_formatter(name: &str) -> Bed {
        let plugin = leafgate_tests::plugins::fault_plugin(name);
        let bed = Bed::start(false).await;
        std::fs::write(&bed.gw.config, config(Some(&plugin)).to_string()).unwrap();
        bed.gw.gateway.reload().await.unwrap();
        bed.with_pods().await
    }

    /// acme's pods in `apps` as the Table kubectl asks for.
    async fn pod_table(&self) -> (u16, Value) {
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io";
        self.raw(Some(TOKEN_A), "/api/v1/namespaces/apps/pods", accept)
            .await
    }

    async fn indexed(&self, ns: &str, name: &str) {
        self.gw.indexed(ns, name).await;
    }

    fn addr(&self) -> SocketAddr {
        self.gw.addr("kube")
    }

    /// A kubeconfig for `user`, namespace `ns`.
    fn kubeconfig(&self, user: User<'_>, ns: &str) -> PathBuf {
        let user = match user {
            User::Token(t) => KubeUser::Token(t),
            User::Cert(cn) => KubeUser::Cert(cn),
        };
        kube::kubeconfig(self.dir.path(), &self.ca, self.addr(), user, Some(ns))
    }

    fn kubectl_cmd(&self, bin: &Path, kubeconfig: &Path) -> Command {
        let mut cmd = Command::new(bin);
        cmd.arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .kill_on_drop(true);
        cmd
    }

    /// Runs kubectl as `user` in namespace `apps` to completion within 30 s.
    async fn kubectl(
        &self,
        bin: &Path,
        user: User<'_>,
        args: &[&str],
        env: &[(&str, &str)],
        stdin: Option<&[u8]>,
    ) -> (Option<i32>, String, String) {
        let kubeconfig = self.kubeconfig(user, "apps");
        let mut cmd = self.kubectl_cmd(bin, &kubeconfig);
        cmd.args(args).envs(env.iter().copied());
        let done = kubesim::testkit::run(cmd, stdin).await;
        (done.code, done.out, done.err)
    }
}

impl Bed {
    /// kubectl as acme's token, namespace `apps`, no stdin.
    async fn as_acme(&self, bin: &Path, args: &[&str]) -> (Option<i32>, String, String) {
        self.kubectl(bin, User::Token(TOKEN_A), args, &[], None)
            .await
    }
}

#[derive(Clone, Copy)]
enum User<'a> {
    Token(&'a str),
    Cert(&'a str),
}

/// The table's rows as words, header first.
fn rows(out: &str) -> Vec<Vec<&str>> {
    out.lines()
        .map(|l| l.split_whitespace().collect())
        .collect()
}

#[tokio::test]
async fn kubectl_get_lists_both_leaves_in_one_table() {
    let bed = Bed::start(true).await.with_pods().await;
    let me = User::Token(TOKEN_A);
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let (code, out, err) = bed.kubectl(&bin, me, &["get", "pods"], &[], None).await;
        assert_eq!(code, Some(0), "{b}: {err}");
        assert_eq!(err, "", "{b}: kubectl warns about nothing");
        let r = rows(&out);
        // pods-table's columns (its LEAF column after AGE), IP and NODE hidden.
        assert_eq!(
            r[0],
            ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "LEAF"],
            "{b}: {out}"
        );
        assert_eq!(r.len(), 3, "{b}: {out}");
        assert_eq!((r[1][0], r[1][5]), ("db", "leaf-b"), "{b}: {out}");
        assert_eq!((r[2][0], r[2][5]), ("web", "leaf-a"), "{b}: {out}");

        let (code, out, err) = bed
            .kubectl(&bin, me, &["get", "pods", "-A", "-o", "wide"], &[], None)
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        let r = rows(&out);
        assert_eq!(
            r[0],
            [
                "NAMESPACE",
                "NAME",
                "READY",
                "STATUS",
                "RESTARTS",
                "AGE",
                "LEAF",
                "IP",
                "NODE"
            ],
            "{b}: {out}"
        );
        let names: Vec<(&str, &str)> = r[1..].iter().map(|w| (w[0], w[1])).collect();
        // kube-apiserver's storage-key order: `apps-2/job` before `apps/db`.
        assert_eq!(
            names,
            [("apps-2", "job"), ("apps", "db"), ("apps", "web")],
            "{b}: only acme's namespaces: {out}"
        );
        assert_eq!(r[1][7..], ["10.1.2.3", "leaf-node"], "{b}: {out}");

        let (code, out, err) = bed
            .kubectl(
                &bin,
                me,
                &["get", "pods", "-l", "app=x", "--show-labels"],
                &[],
                None,
            )
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        let r = rows(&out);
        assert_eq!(r.len(), 2, "{b}: {out}");
        assert_eq!(
            (r[1][0], *r[1].last().unwrap()),
            ("web", "app=x"),
            "{b}: {out}"
        );

        let (code, out, err) = bed
            .kubectl(
                &bin,
                me,
                &["get", "pods", "--field-selector", "metadata.name=db"],
                &[],
                None,
            )
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        assert_eq!(rows(&out).len(), 2, "{b}: {out}");

        let (code, out, err) = bed
            .kubectl(&bin, me, &["get", "pod", "web", "-o", "yaml"], &[], None)
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        assert!(out.starts_with("apiVersion: v1\n"), "{b}: {out}");
        for want in [
            "kind: Pod\n",
            "  name: web\n",
            "    leafgate.io/leaf: leaf-a\n",
        ] {
            assert!(out.contains(want), "{b}: no {want:?} in {out}");
        }
        let (code, out, err) = bed
            .kubectl(&bin, me, &["get", "pods", "-o", "json"], &[], None)
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        let list: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            list["items"].as_array().map(Vec::len),
            Some(2),
            "{b}: {out}"
        );

        let (code, _, err) = bed
            .kubectl(&bin, me, &["get", "pod", "nowhere"], &[], None)
            .await;
        assert_eq!(code, Some(1));
        assert_eq!(
            err.trim(),
            "Error from server (NotFound): pods \"nowhere\" not found",
            "{b}"
        );
    }
}

#[tokio::test]
async fn without_a_formatter_the_builtin_table_has_kubectls_columns_and_leaf() {
    let bed = Bed::start(false).await.with_pods().await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let (code, out, err) = bed
            .kubectl(
                &bin,
                User::Token(TOKEN_A),
                &["get", "pods", "-o", "wide"],
                &[],
                None,
            )
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        let header: Vec<&str> = out
            .lines()
            .next()
            .unwrap()
            .split("  ")
            .filter(|s| !s.is_empty())
            .map(str::trim)
            .collect();
        assert_eq!(
            header,
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
        let r = rows(&out);
        assert_eq!(r[1][0], "db", "{b}: {out}");
        assert_eq!(r[1][2], "Running", "{b}: {out}");
        assert_eq!(r[1].last(), Some(&"leaf-b"), "{b}: {out}");
    }
}

#[tokio::test]
async fn tenants_see_only_their_namespaces() {
    let bed = Bed::start(true).await.with_pods().await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let (code, _, err) = bed
            .kubectl(
                &bin,
                User::Token(TOKEN_A),
                &["get", "pods", "-n", "other"],
                &[],
                None,
            )
            .await;
        assert_eq!(code, Some(1), "{b}");
        assert_eq!(
            err.trim(),
            "Error from server (Forbidden): pods is forbidden: User \"tenant:acme\" cannot list resource \"pods\" in API group \"\" in the namespace \"other\"",
            "{b}"
        );
        let (code, _, err) = bed
            .kubectl(
                &bin,
                User::Token(TOKEN_A),
                &["exec", "-n", "other", "secret", "--", "true"],
                &[],
                None,
            )
            .await;
        assert_ne!(code, Some(0), "{b}");
        assert!(
            err.contains("pods \"secret\" is forbidden: User \"tenant:acme\" cannot"),
            "{b}: {err}"
        );

        let (code, _, err) = bed
            .kubectl(&bin, User::Token("made-up"), &["get", "pods"], &[], None)
            .await;
        assert_eq!(code, Some(1), "{b}");
        assert_eq!(
            err.trim(),
            "error: You must be logged in to the server (Unauthorized)",
            "{b}"
        );

        let (code, out, err) = bed
            .kubectl(
                &bin,
                User::Token(TOKEN_OTHER),
                &["get", "pods", "-A"],
                &[],
                None,
            )
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        let r = rows(&out);
        assert_eq!(r.len(), 2, "{b}: {out}");
        assert_eq!((r[1][0], r[1][1]), ("other", "secret"), "{b}: {out}");

        // A client certificate named in acme's client_names is acme.
        let (code, out, err) = bed
            .kubectl(&bin, User::Cert("acme-ci"), &["get", "pods"], &[], None)
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        assert_eq!(rows(&out).len(), 3, "{b}: {out}");
        let (code, _, err) = bed
            .kubectl(&bin, User::Cert("stranger"), &["get", "pods"], &[], None)
            .await;
        assert_eq!(code, Some(1), "{b}");
        assert!(err.contains("(Unauthorized)"), "{b}: {err}");
    }
}

#[tokio::test]
async fn unserved_paths_and_methods_answer_as_the_api_server() {
    let bed = Bed::start(true).await.with_pods().await;
    let bin = kubesim::kubectl::pinned();
    let me = User::Token(TOKEN_A);
    let (code, _, err) = bed.kubectl(&bin, me, &["get", "secrets"], &[], None).await;
    assert_eq!(code, Some(1));
    assert!(
        err.contains("the server doesn't have a resource type \"secrets\""),
        "{err}"
    );
    let (code, _, err) = bed
        .kubectl(
            &bin,
            me,
            &["get", "--raw", "/apis/storage.k8s.io/v1/storageclasses"],
            &[],
            None,
        )
        .await;
    assert_eq!(code, Some(1));
    assert!(
        err.contains("the server could not find the requested resource"),
        "{err}"
    );
    let (code, _, err) = bed
        .kubectl(&bin, me, &["delete", "pod", "web"], &[], None)
        .await;
    assert_eq!(code, Some(1));
    assert!(err.contains("(MethodNotAllowed)"), "{err}");
}

#[tokio::test]
async fn kubectl_get_watch_prints_a_pod_added_to_a_leaf() {
    let bed = Bed::start(true).await.with_pods().await;
    for (i, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        let b = bin.display();
        let kubeconfig = bed.kubeconfig(User::Token(TOKEN_A), "apps");
        let mut cmd = bed.kubectl_cmd(&bin, &kubeconfig);
        cmd.args(["get", "pods", "-w"]);
        let mut watching = Following::spawn(cmd);
        let mut next = async || watching.next().await;
        assert!(next().await.starts_with("NAME "), "{b}");
        // The list first: db, the pods earlier rounds added, web.
        let mut listed: Vec<String> = Vec::new();
        while !listed.iter().any(|l| l.starts_with("web ")) {
            listed.push(next().await);
        }
        assert!(listed[0].starts_with("db "), "{b}: {listed:?}");
        assert_eq!(listed.len(), 2 + i, "{b}: {listed:?}");
        let late = format!("late-{i}");
        bed.leaf_b.create(pod("apps", &late, json!({}))).unwrap();
        let line = next().await;
        assert!(line.starts_with(&format!("{late} ")), "{b}: {line}");
        assert!(line.contains("leaf-b"), "{b}: {line}");
        watching.stop().await;
    }
}

#[tokio::test]
async fn kubectl_exec_reaches_the_pods_leaf_over_websocket_and_spdy() {
    let bed = Bed::start(true).await.with_pods().await;
    let me = User::Token(TOKEN_A);
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        for env in [&[][..], &[NO_WS_EXEC][..]] {
            let (code, out, err) = bed
                .kubectl(
                    &bin,
                    me,
                    &[
                        "exec",
                        "db",
                        "--",
                        "sh",
                        "-c",
                        "echo out; echo err >&2; exit 3",
                    ],
                    env,
                    None,
                )
                .await;
            assert_eq!(code, Some(3), "{b} {env:?}: {err}");
            assert_eq!(out, "out\n", "{b} {env:?}");
            let err = kubesim::testkit::without_unknown_stream_log(&err);
            assert!(err.starts_with("err\n"), "{b} {env:?}: {err}");
            let (code, out, err) = bed
                .kubectl(
                    &bin,
                    me,
                    &["exec", "-i", "web", "--", "cat"],
                    env,
                    Some(b"piped in\n"),
                )
                .await;
            assert_eq!(code, Some(0), "{b} {env:?}: {err}");
            assert_eq!(out, "piped in\n", "{b} {env:?}");
        }
        let exec = bed
            .leaf_b
            .requests()
            .into_iter()
            .rev()
            .find(|r| r.path == "/api/v1/namespaces/apps/pods/db/exec")
            .expect("the exec reached leaf-b");
        assert_eq!(exec.method, "POST", "{b}: the SPDY one last");
        assert_eq!(
            exec.user.as_deref(),
            Some("leafgate"),
            "{b}: the leaf's credentials"
        );
    }
}

#[tokio::test]
async fn kubectl_logs_tail_and_follow_through_redact() {
    let bed = Bed::start(true).await.with_pods().await;
    let me = User::Token(TOKEN_A);
    for (i, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        let b = bin.display();
        for n in 1..=5 {
            bed.leaf_a
                .append_log("apps", "web", "app", &format!("round {i} line {n}"));
        }
        let (code, out, err) = bed
            .kubectl(&bin, me, &["logs", "web", "--tail=3"], &[], None)
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        assert_eq!(
            out,
            format!("round {i} line 3\nround {i} line 4\nround {i} line 5\n"),
            "{b}"
        );

        let kubeconfig = bed.kubeconfig(me, "apps");
        let mut cmd = bed.kubectl_cmd(&bin, &kubeconfig);
        cmd.args(["logs", "-f", "web", "--tail=1"]);
        let mut following = Following::spawn(cmd);
        let mut next = async || following.next_line().await;
        next().await.expect("the tail");
        bed.leaf_a.append_log(
            "apps",
            "web",
            "app",
            &format!("login {i} password=hunter2 ok"),
        );
        assert_eq!(
            next().await.as_deref(),
            Some(format!("login {i} *** ok").as_str()),
            "{b}"
        );
        following.stop().await;
    }
}

#[tokio::test]
async fn kubectl_port_forward_carries_bytes_both_ways() {
    let bed = Bed::start(true).await.with_pods().await;
    annotate_port(&bed.leaf_b, "apps", "db", 5432, echo_server().await);
    let kubeconfig = bed.kubeconfig(User::Token(TOKEN_A), "apps");
    for bin in kubesim::kubectl::all() {
        for spdy in [false, true] {
            let b = format!("{} spdy={spdy}", bin.display());
            let mut cmd = bed.kubectl_cmd(&bin, &kubeconfig);
            if spdy {
                cmd.env("KUBECTL_PORT_FORWARD_WEBSOCKETS", "false");
            }
            let (mut child, local) = port_forward(cmd).await;
            let messages = [b"hello through leafgate".to_vec(), vec![b'z'; 256 * 1024]];
            assert_echoes(local, &messages, &b).await;
            child.kill().await.unwrap();
        }
    }
}

/// `cmd` running `port-forward pod/db :5432`: the kubectl and the local address it forwards.
async fn port_forward(mut cmd: Command) -> (tokio::process::Child, SocketAddr) {
    cmd.args(["port-forward", "pod/db", ":5432"]);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let local = forwarding_from(&mut child).await;
    (child, local)
}

/// Editing a `tokens_file` reloads it: the new token works, the removed one is refused.
#[tokio::test]
async fn a_rewritten_tokens_file_takes_effect_without_a_restart() {
    let bed = Bed::start(false).await.with_pods().await;
    let bin = kubesim::kubectl::pinned();
    let before = bed.gw.gateway.snapshot().generation;
    let file = bed.gw.path().join("acme.tokens");
    let tmp = bed.gw.path().join("acme.tokens.tmp");
    std::fs::write(&tmp, "acme-token-2\n").unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    let started = Instant::now();
    while bed.gw.gateway.snapshot().generation == before {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no reload after the tokens file changed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (code, out, err) = bed
        .kubectl(
            &bin,
            User::Token("acme-token-2"),
            &["get", "pods"],
            &[],
            None,
        )
        .await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(rows(&out).len(), 3, "{out}");
    let (code, _, err) = bed
        .kubectl(&bin, User::Token(TOKEN_A), &["get", "pods"], &[], None)
        .await;
    assert_eq!(code, Some(1));
    assert!(err.contains("(Unauthorized)"), "{err}");
}

impl Bed {
    /// A plain API client's TLS: the gateway's serving CA trusted, no client certificate.
    fn client_tls(&self) -> std::sync::Arc<rustls::ClientConfig> {
        self.client_tls_as(None)
    }

    /// A client config presenting a certificate the clients' CA issues for `cn`, if any.
    fn client_tls_as(&self, cn: Option<&str>) -> std::sync::Arc<rustls::ClientConfig> {
        use rustls_pki_types::pem::PemObject;
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(self.ca.roots());
        let tls = match cn {
            None => builder.with_no_client_auth(),
            Some(cn) => {
                let files = self.ca.issue(self.dir.path(), cn, &[cn]);
                builder
                    .with_client_auth_cert(
                        vec![files.der],
                        rustls_pki_types::PrivateKeyDer::from_pem_file(&files.key).unwrap(),
                    )
                    .unwrap()
            }
        };
        std::sync::Arc::new(tls)
    }

    /// One request as a plain API client sends it: (status, JSON body).
    async fn raw(&self, token: Option<&str>, path: &str, accept: &str) -> (u16, Value) {
        use http_body_util::BodyExt;
        let tcp = tokio::net::TcpStream::connect(self.addr()).await.unwrap();
        let stream = tokio_rustls::TlsConnector::from(self.client_tls())
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
        let mut req = http::Request::get(path)
            .header("host", "127.0.0.1")
            .header("accept", accept);
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        let res = sender
            .send_request(
                req.body(http_body_util::Empty::<bytes::Bytes>::new())
                    .unwrap(),
            )
            .await
            .unwrap();
        let code = res.status().as_u16();
        let body = res.into_body().collect().await.unwrap().to_bytes();
        (
            code,
            serde_json::from_slice(&body).unwrap_or_else(|_| json!(String::from_utf8_lossy(&body))),
        )
    }
}

const V1BETA1_TABLE: &str = "application/json;as=Table;v=v1beta1;g=meta.k8s.io";

#[tokio::test]
async fn tables_honour_include_object_and_the_version_asked_for() {
    let bed = Bed::start(true).await.with_pods().await;
    let pods = "/api/v1/namespaces/apps/pods";
    let (code, t) = bed
        .raw(
            Some(TOKEN_A),
            &format!("{pods}?includeObject=Object"),
            V1BETA1_TABLE,
        )
        .await;
    assert_eq!(code, 200, "{t}");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(t["rows"][0]["object"]["kind"], "Pod", "{t}");
    assert_eq!(
        t["rows"][0]["object"]["spec"]["nodeName"], "leaf-node",
        "{t}"
    );
    let (_, t) = bed
        .raw(
            Some(TOKEN_A),
            &format!("{pods}?includeObject=None"),
            V1BETA1_TABLE,
        )
        .await;
    assert_eq!(t["rows"].as_array().map(Vec::len), Some(2), "{t}");
    assert!(t["rows"][0].get("object").is_none(), "{t}");
    let (_, t) = bed.raw(Some(TOKEN_A), pods, V1BETA1_TABLE).await;
    assert_eq!(
        t["rows"][1]["object"]["kind"], "PartialObjectMetadata",
        "{t}"
    );
    assert_eq!(t["rows"][1]["object"]["metadata"]["name"], "web", "{t}");
    let (code, t) = bed
        .raw(
            Some(TOKEN_A),
            &format!("{pods}?includeObject=All"),
            V1BETA1_TABLE,
        )
        .await;
    assert_eq!((code, &t["reason"]), (400, &json!("BadRequest")), "{t}");

    // kube-apiserver's own bodies for no credentials and for a path it does not serve.
    let (code, t) = bed.raw(None, pods, "application/json").await;
    assert_eq!(code, 401);
    assert_eq!(
        t,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );
    let (code, t) = bed
        .raw(
            Some(TOKEN_A),
            "/api/v1/namespaces/apps/podtemplates",
            "application/json",
        )
        .await;
    assert_eq!(code, 404);
    assert_eq!(
        t["message"],
        "the server could not find the requested resource"
    );
    let (code, t) = bed
        .raw(
            Some(TOKEN_A),
            &format!("{pods}?labelSelector=app%3D%28"),
            "application/json",
        )
        .await;
    assert_eq!((code, &t["reason"]), (400, &json!("BadRequest")), "{t}");
}

#[tokio::test]
async fn a_table_formatter_that_answers_a_row_short_fails_the_request() {
    let bed = Bed::with_table_formatter("short-table").await;
    let (code, t) = bed.pod_table().await;
    assert_eq!(code, 502, "{t}");
    assert!(
        t["message"]
            .as_str()
            .is_some_and(|m| m.contains("answered 1 rows for 2 objects")),
        "{t}"
    );
    // -o json does not ask the plugin.
    let (code, _) = bed
        .raw(
            Some(TOKEN_A),
            "/api/v1/namespaces/apps/pods",
            "application/json",
        )
        .await;
    assert_eq!(code, 200);
}

/// `count` pods of acme in `apps`, alternating between the leaves, each carrying ~1 KiB of
/// annotation so the list is long in bytes: `count` x ~1.3 KiB of JSON.
async fn padded_pods(bed: &Bed, count: usize) -> Vec<String> {
    let names: Vec<String> = (0..count).map(|i| format!("pad-{i:04}")).collect();
    for (i, name) in names.iter().enumerate() {
        let mut p = pod("apps", name, json!({"app": "pad"}));
        p["metadata"]["annotations"] = json!({ "note": "x".repeat(1024) });
        let leaf = if i % 2 == 0 { &bed.leaf_a } else { &bed.leaf_b };
        leaf.create(p).unwrap();
    }
    for name in &names {
        bed.indexed("apps", name).await;
    }
    names
}

/// A list of ~800 KiB of pods is more than one formatter call reads: the gateway gives it
/// to `pods-table` in parts, each within the plugin's default limits (10 ms, 64 MiB), and
/// joins the rows, each still beside its own pod.
#[tokio::test]
async fn a_long_list_is_formatted_in_parts_within_the_plugins_default_limits() {
    let bed = Bed::start(true).await;
    let mut names = padded_pods(&bed, 600).await;
    names.sort();
    let (code, t) = bed.pod_table().await;
    assert_eq!(code, 200, "{t}");
    let rows = t["rows"].as_array().unwrap();
    let printed: Vec<&str> = rows
        .iter()
        .map(|r| r["cells"][0].as_str().unwrap())
        .collect();
    let objects: Vec<&str> = rows
        .iter()
        .map(|r| r["object"]["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(printed, objects, "every row beside its own pod");
    let mut sorted = printed.clone();
    sorted.sort();
    assert_eq!(sorted, names, "every pod printed once");
    // The LEAF column says where each pod runs, whichever part printed it.
    let leaf_at = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["name"] == "LEAF")
        .unwrap();
    for row in rows {
        let name = row["cells"][0].as_str().unwrap();
        let n: usize = name["pad-".len()..].parse().unwrap();
        let leaf = if n.is_multiple_of(2) {
            "leaf-a"
        } else {
            "leaf-b"
        };
        assert_eq!(row["cells"][leaf_at], leaf, "{name}");
    }
}

/// A formatter whose columns change from one part of a list to the next fails the request
/// (502) rather than print a table whose rows do not fit its header; a short list, one call,
/// prints.
#[tokio::test]
async fn a_table_formatter_that_answers_parts_of_a_list_with_other_columns_fails_the_request() {
    let bed = Bed::with_table_formatter("shifting-table").await;
    let (code, t) = bed.pod_table().await;
    assert_eq!(code, 200, "{t}");
    padded_pods(&bed, 600).await;
    let (code, t) = bed.pod_table().await;
    assert_eq!(code, 502, "{t}");
    assert!(
        t["message"]
            .as_str()
            .is_some_and(|m| m.contains("other columns for a later part of the list")),
        "{t}"
    );
}

/// Ten pods of acme in `apps`, five in each leaf, the odd ones `Pending` on no node.
async fn ten_pods(bed: &Bed) {
    for i in 0..10 {
        let mut p = pod("apps", &format!("p{i}"), json!({"n": i.to_string()}));
        if i % 2 == 1 {
            p["status"]["phase"] = json!("Pending");
            p["spec"]["nodeName"] = Value::Null;
        }
        let leaf = if i < 5 { &bed.leaf_a } else { &bed.leaf_b };
        leaf.create(p).unwrap();
    }
    for i in 0..10 {
        bed.indexed("apps", &format!("p{i}")).await;
    }
}

#[tokio::test]
async fn field_selectors_filter_on_every_field_kube_apiserver_selects_pods_by() {
    let bed = Bed::start(false).await.with_pods().await;
    ten_pods(&bed).await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let names = |out: &str| -> Vec<String> { out.lines().map(str::to_string).collect() };
        let get = |args: &'static [&'static str]| {
            let bin = bin.clone();
            let bed = &bed;
            async move {
                let mut all = vec!["get", "pods", "-o", "name"];
                all.extend_from_slice(args);
                bed.as_acme(&bin, &all).await
            }
        };
        let (code, out, err) = get(&["--field-selector", "status.phase!=Running"]).await;
        assert_eq!(code, Some(0), "{b}: {err}");
        assert_eq!(
            names(&out),
            ["pod/p1", "pod/p3", "pod/p5", "pod/p7", "pod/p9"],
            "{b}"
        );
        let (code, out, err) = get(&[
            "--field-selector",
            "spec.nodeName=leaf-node,metadata.name!=web",
        ])
        .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        assert_eq!(
            names(&out),
            ["pod/db", "pod/p0", "pod/p2", "pod/p4", "pod/p6", "pod/p8"],
            "{b}"
        );
        // Another tenant's namespace selected by field, across namespaces: nothing.
        let (code, out, err) = get(&["-A", "--field-selector", "metadata.namespace=other"]).await;
        assert_eq!(code, Some(0), "{b}: {err}");
        assert!(!out.contains("secret"), "{b}: {out}");
        // A field pods are not selected by: kube-apiserver's 400.
        let (code, _, err) = get(&["--field-selector", "spec.containers=x"]).await;
        assert_eq!(code, Some(1), "{b}");
        assert!(
            err.contains("field label not supported: spec.containers"),
            "{b}: {err}"
        );
    }
}

#[tokio::test]
async fn chunked_lists_page_through_every_pod_once() {
    let bed = Bed::start(false).await.with_pods().await;
    ten_pods(&bed).await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let (code, out, err) = bed
            .as_acme(&bin, &["get", "pods", "--chunk-size=2", "-o", "name"])
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        let mut want: Vec<String> = (0..10).map(|i| format!("pod/p{i}")).collect();
        want.insert(0, "pod/db".into());
        want.push("pod/web".into());
        assert_eq!(out.lines().collect::<Vec<_>>(), want, "{b}");
        // The same with the table kubectl prints by default (paged Tables).
        let (code, out, err) = bed
            .as_acme(&bin, &["get", "pods", "--chunk-size=3", "--no-headers"])
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        assert_eq!(out.lines().count(), 12, "{b}: {out}");

        // A page as the API answers it: the continue token and what remains.
        let (code, out, err) = bed
            .as_acme(
                &bin,
                &["get", "--raw", "/api/v1/namespaces/apps/pods?limit=5"],
            )
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        let page: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(page["items"].as_array().unwrap().len(), 5, "{b}");
        assert_eq!(page["metadata"]["remainingItemCount"], 7, "{b}: {out}");
        let token = page["metadata"]["continue"].as_str().unwrap();
        let (code, out, err) = bed
            .as_acme(
                &bin,
                &[
                    "get",
                    "--raw",
                    &format!("/api/v1/namespaces/apps/pods?limit=5&continue={token}"),
                ],
            )
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        let next: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(next["items"][0]["metadata"]["name"], "p4", "{b}: {out}");
        assert_eq!(
            next["metadata"]["resourceVersion"], page["metadata"]["resourceVersion"],
            "{b}"
        );
    }
}

/// Lists across namespaces come in kube-apiserver's storage-key order
/// (`/pods/<namespace>/<name>`: `apps-2/job` before `apps/db`), page after page, as JSON and
/// as the Tables kubectl prints.
#[tokio::test]
async fn lists_pages_and_tables_across_namespaces_come_in_storage_key_order() {
    let bed = Bed::start(false).await.with_pods().await;
    let want = [("apps-2", "job"), ("apps", "db"), ("apps", "web")];
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let (code, out, err) = bed
            .as_acme(
                &bin,
                &["get", "pods", "-A", "--chunk-size=1", "--no-headers"],
            )
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        let r = rows(&out);
        let listed: Vec<(&str, &str)> = r.iter().map(|w| (w[0], w[1])).collect();
        assert_eq!(listed, want, "{b}: paged Tables: {out}");
        let (code, out, err) = bed
            .as_acme(&bin, &["get", "pods", "-A", "--chunk-size=1", "-o", "json"])
            .await;
        assert_eq!(code, Some(0), "{b}: {err}");
        let list: Value = serde_json::from_str(&out).unwrap();
        let listed: Vec<(&str, &str)> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let m = &p["metadata"];
                (
                    m["namespace"].as_str().unwrap(),
                    m["name"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(listed, want, "{b}: paged JSON");
    }
}

/// Waits until `/status` says `leaf` is out of sync (within 15 s).
async fn wait_unsynced(gw: &TestGateway, leaf: &str) {
    let started = Instant::now();
    loop {
        let status = leafgate_tests::client::get(gw.admin(), "admin", "/status")
            .await
            .json();
        let synced = status["leaves"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == leaf)
            .map(|l| l["synced"].clone());
        if synced == Some(Value::Bool(false)) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{leaf} still in sync: {status:#}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_stopped_leaf_is_said_out_loud_hidden_or_refused_as_its_stale_policy_says() {
    let mut bed = Bed::start(false).await.with_pods().await;
    bed.leaf_b.stop().await;
    wait_unsynced(&bed.gw, "leaf-b").await;
    let reload = |policy: &str| {
        let config = config(None);
        let text = config.to_string().replace(
            "name = \"leaf-b\"",
            &format!("name = \"leaf-b\"\nstale = \"{policy}\""),
        );
        assert!(text.contains("stale = "), "{text}");
        std::fs::write(&bed.gw.config, text).unwrap();
        bed.gw.gateway.reload()
    };
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        // warn (the default): the last-known pods, and a warning naming the leaf.
        let (code, out, err) = bed.as_acme(&bin, &["get", "pods", "-o", "name"]).await;
        assert_eq!(code, Some(0), "{b}: {err}");
        assert_eq!(
            out.lines().collect::<Vec<_>>(),
            ["pod/db", "pod/web"],
            "{b}"
        );
        let warning = err
            .lines()
            .find(|l| l.starts_with("Warning: leaf leaf-b is not in sync since "))
            .unwrap_or_else(|| panic!("{b}: no warning in {err:?}"));
        assert!(
            warning.ends_with("its pods are shown as last seen"),
            "{b}: {warning}"
        );
        assert!(!err.contains("leaf-a"), "{b}: {err}");
    }
    // hide: leaf-b's pods left out, with the warning.
    reload("hide").await.unwrap();
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let (code, out, err) = bed.as_acme(&bin, &["get", "pods", "-o", "name"]).await;
        assert_eq!(code, Some(0), "{b}: {err}");
        assert_eq!(out.lines().collect::<Vec<_>>(), ["pod/web"], "{b}");
        assert!(err.contains("its pods are left out"), "{b}: {err}");
        let (code, _, err) = bed.as_acme(&bin, &["get", "pod", "db"]).await;
        assert_eq!(code, Some(1), "{b}");
        assert!(err.contains(r#"pods "db" not found"#), "{b}: {err}");
    }
    // fail: a 503 naming the leaf.
    reload("fail").await.unwrap();
    for bin in kubesim::kubectl::all() {
        let b = bin.display();
        let (code, out, err) = bed.as_acme(&bin, &["get", "pods"]).await;
        assert_eq!(code, Some(1), "{b}: {out}");
        assert!(
            err.contains("leaf leaf-b is not in sync since ") && err.contains("try again later"),
            "{b}: {err}"
        );
    }
}

/// A kube-API connection's first request is read in place when it is an upgrade with no
/// body (`listener::upgrades`, as on node-api listeners), and on hyper's path otherwise:
/// for the same bytes, a client gets the same bytes either way (a 101 and the stream
/// behind it, a `Status` refusal, a leaf's declined answer, what follows on the
/// connection), and the leaf gets the same request.
#[tokio::test]
async fn the_upgrades_read_in_place_answer_as_hypers_path_does() {
    let bed = Bed::start_with(false, true).await.with_pods().await;
    let tls = bed.client_tls();
    let auth = format!("Authorization: Bearer {TOKEN_A}\r\n");
    let ws = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n";
    let spdy = "Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\
X-Stream-Protocol-Version: v4.channel.k8s.io\r\nX-Stream-Protocol-Version: v3.channel.k8s.io\r\n";
    let pods = "/api/v1/namespaces/apps/pods";
    let exec = format!("{pods}/web/exec?command=echo&command=hi&container=app&stdout=true");
    // (what, request, read in place)
    let cases: Vec<(&str, String, bool)> = vec![
        (
            "a WebSocket exec, to its end",
            format!("GET {exec} HTTP/1.1\r\nHost: kube\r\n{auth}{ws}\r\n"),
            true,
        ),
        (
            "a SPDY exec's 101",
            format!("POST {exec} HTTP/1.1\r\nHost: kube\r\n{auth}{spdy}\r\n"),
            true,
        ),
        (
            "no token",
            format!("GET {exec} HTTP/1.1\r\nHost: kube\r\n{ws}\r\n"),
            true,
        ),
        (
            "no Host (RFC 9112: 400, as Go's server answers)",
            format!("GET {exec} HTTP/1.1\r\n{auth}{ws}\r\n"),
            false,
        ),
        (
            "two Host lines",
            format!("GET {exec} HTTP/1.1\r\nHost: kube\r\nHost: other\r\n{auth}{ws}\r\n"),
            false,
        ),
        (
            "a token no tenant has",
            format!("GET {exec} HTTP/1.1\r\nHost: kube\r\nAuthorization: Bearer nope\r\n{ws}\r\n"),
            true,
        ),
        (
            "impersonation",
            format!(
                "GET {exec} HTTP/1.1\r\nHost: kube\r\n{auth}Impersonate-User: admin\r\n{ws}\r\n"
            ),
            true,
        ),
        (
            "another tenant's pod",
            format!(
                "GET /api/v1/namespaces/other/pods/secret/exec?command=ls&stdout=true \
HTTP/1.1\r\nHost: kube\r\n{auth}{ws}\r\n"
            ),
            true,
        ),
        (
            "a pod no leaf has",
            format!(
                "GET {pods}/ghost/exec?command=ls&stdout=true HTTP/1.1\r\nHost: kube\r\n{auth}{ws}\r\n"
            ),
            true,
        ),
        (
            "a name no pod can have",
            format!(
                "GET {pods}/Not_A_Name/exec?command=ls HTTP/1.1\r\nHost: kube\r\n{auth}{ws}\r\n"
            ),
            true,
        ),
        (
            "a subresource pods have not",
            format!("GET {pods}/web/nope HTTP/1.1\r\nHost: kube\r\n{auth}{ws}\r\n"),
            true,
        ),
        (
            "a method the subresource refuses",
            format!("POST {pods}/web/log HTTP/1.1\r\nHost: kube\r\n{auth}{spdy}\r\n"),
            true,
        ),
        (
            "a container no pod can have",
            format!(
                "GET {pods}/web/exec?command=ls&container=Bad_Name HTTP/1.1\r\nHost: kube\r\n{auth}{ws}\r\n"
            ),
            true,
        ),
        (
            "a path to normalise",
            format!(
                "GET {pods}/x/../web/exec?command=echo&command=hi&stdout=true HTTP/1.1\r\nHost: kube\r\n{auth}{ws}\r\n"
            ),
            true,
        ),
        (
            "Upgrade without Connection: the leaf declines",
            format!("GET {exec} HTTP/1.1\r\nHost: kube\r\n{auth}Upgrade: websocket\r\n\r\n"),
            true,
        ),
        (
            "an upgrade on /version, then a second request",
            format!(
                "GET /version HTTP/1.1\r\nHost: kube\r\n{auth}{ws}\r\nGET /version HTTP/1.1\r\nHost: kube\r\n{auth}\r\n"
            ),
            true,
        ),
        (
            "a request with a body goes to hyper",
            format!(
                "POST {exec} HTTP/1.1\r\nHost: kube\r\nContent-Length: 2\r\n{auth}{spdy}\r\nhi"
            ),
            false,
        ),
        (
            "not an upgrade",
            format!("GET /version HTTP/1.1\r\nHost: kube\r\n{auth}\r\n"),
            false,
        ),
        (
            "a head hyper refuses",
            format!("GET {exec} HTTP/1.1\r\nHost: kube\r\nBad Name: x\r\n{auth}{ws}\r\n"),
            false,
        ),
        (
            "a head over the 16 KiB read in place",
            format!(
                "GET {exec} HTTP/1.1\r\nHost: kube\r\nX-Big: {}\r\n{auth}{ws}\r\n",
                "b".repeat(20_000)
            ),
            false,
        ),
    ];
    // A caller known by its client certificate: its identity comes from the connection,
    // not from the head read in place.
    let (ci, stranger) = (
        bed.client_tls_as(Some("acme-ci")),
        bed.client_tls_as(Some("stranger")),
    );
    let other_token = format!("Authorization: Bearer {TOKEN_OTHER}\r\n");
    let as_certificates = [
        (
            "acme-ci's WebSocket exec",
            &ci,
            format!("GET {exec} HTTP/1.1\r\nHost: kube\r\n{ws}\r\n"),
        ),
        (
            "acme-ci on another tenant's pod",
            &ci,
            format!(
                "GET /api/v1/namespaces/other/pods/secret/exec?command=ls HTTP/1.1\r\nHost: kube\r\n{ws}\r\n"
            ),
        ),
        (
            "acme-ci with another tenant's token",
            &ci,
            format!("GET {exec} HTTP/1.1\r\nHost: kube\r\n{other_token}{ws}\r\n"),
        ),
        (
            "a certificate no tenant names",
            &stranger,
            format!("GET {exec} HTTP/1.1\r\nHost: kube\r\n{ws}\r\n"),
        ),
    ];
    let cases = cases
        .into_iter()
        .map(|(what, request, in_place)| (what, &tls, request, in_place))
        .chain(
            as_certificates
                .into_iter()
                .map(|(what, tls, request)| (what, tls, request, true)),
        );
    let wire = |listener: &str, tls: &std::sync::Arc<rustls::ClientConfig>, request: &[u8]| {
        let (addr, tls, request) = (bed.gw.addr(listener), tls.clone(), request.to_vec());
        async move { leafgate_tests::client::wire(addr, tls, "127.0.0.1", &request).await }
    };
    let mut answers = std::collections::HashMap::new();
    for (what, tls, request, in_place) in cases {
        let before = bed.gw.read_in_place("kube").await;
        let fast = wire("kube", tls, request.as_bytes()).await;
        let taken = bed.gw.read_in_place("kube").await - before;
        let hyper = wire("kube-hyper", tls, request.as_bytes()).await;
        assert!(!fast.is_empty(), "{what}: no answer");
        assert_eq!(
            fast, hyper,
            "{what}: read in place and through hyper differ"
        );
        assert_eq!(taken, u64::from(in_place), "{what}: {fast}");
        answers.insert(what, fast);
    }
    assert_eq!(bed.gw.read_in_place("kube-hyper").await, 0);
    // The same on both paths, and what kube-apiserver answers: acme-ci runs acme's exec,
    // and nobody reaches a pod their certificate does not give them.
    let status = |what: &str| answers[what].split("\r\n").next().unwrap_or("").to_string();
    assert_eq!(
        status("acme-ci's WebSocket exec"),
        "HTTP/1.1 101 Switching Protocols"
    );
    assert_eq!(
        status("acme-ci on another tenant's pod"),
        "HTTP/1.1 403 Forbidden"
    );
    // As kube-apiserver's authenticators run: the certificate before the token.
    assert_eq!(
        status("acme-ci with another tenant's token"),
        "HTTP/1.1 101 Switching Protocols"
    );
    assert_eq!(
        status("a certificate no tenant names"),
        "HTTP/1.1 401 Unauthorized"
    );

    // The leaf got each exec the same way both times.
    let execs: Vec<_> = bed
        .leaf_a
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/v1/namespaces/apps/pods/web/exec")
        .map(|r| (r.method, r.query, r.user, r.headers))
        .collect();
    assert!(execs.len() >= 2, "{execs:?}");
    for pair in execs.chunks(2) {
        assert_eq!(pair[0], pair[1]);
    }
}

/// An answer the kube-API front gives before reading the request's body to its end (a
/// create it refuses) ends the connection, as the routes front does, whether the body came
/// with the head or after it; a request whose body the front reads (an access review)
/// keeps the connection for the next request. On the listener that reads upgrades in place
/// and on hyper's alike.
#[tokio::test]
async fn an_answer_before_the_body_is_read_ends_the_connection() {
    let bed = Bed::start_with(false, true).await;
    let auth = format!("Authorization: Bearer {TOKEN_A}\r\n");
    let review = r#"{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","spec":{"resourceAttributes":{"namespace":"apps","verb":"get","resource":"pods"}}}"#;
    let create = r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}"#;
    let next = format!("GET /version HTTP/1.1\r\nHost: kube\r\n{auth}\r\n");
    // (what, path, body, answers before the connection ends or goes quiet, ends)
    let cases = [
        (
            "a refused create",
            "/api/v1/namespaces/apps/pods",
            create,
            1,
            true,
        ),
        (
            "an access review",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            review,
            2,
            false,
        ),
    ];
    for listener in ["kube", "kube-hyper"] {
        for (what, path, body, answers, ends) in cases {
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: kube\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            let rest = format!("{body}{next}");
            let with_head = format!("{head}{rest}");
            for (split, first, rest) in [(false, &with_head, ""), (true, &head, rest.as_str())] {
                let what = format!("{what} on {listener}, body after the head: {split}");
                let (text, ended) = leafgate_tests::client::split_exchange(
                    bed.gw.addr(listener),
                    bed.client_tls(),
                    "127.0.0.1",
                    first.as_bytes(),
                    rest.as_bytes(),
                )
                .await;
                assert_eq!(text.matches("HTTP/1.1 ").count(), answers, "{what}: {text}");
                assert_eq!(ended, ends, "{what}: {text}");
                assert_eq!(
                    text.to_ascii_lowercase().contains("connection: close"),
                    ends,
                    "{what}: {text}"
                );
            }
        }
    }
}

/// That `line` is of acme's call `verb` to pod `apps/{pod}` in `leaf`.
fn assert_pod_call(line: &Value, verb: &str, pod: &str, leaf: &str) {
    let got = [
        &line["verb"],
        &line["tenant"],
        &line["namespace"],
        &line["pod"],
        &line["leaf"],
    ];
    let want = [verb, "acme", "apps", pod, leaf].map(|w| json!(w));
    assert_eq!(got, want.each_ref(), "{line}");
}

/// The `X-Request-Id` of the last request `sim` recorded at `path`.
fn request_id_seen(sim: &KubeSim, path: &str) -> Option<String> {
    let request = sim.requests().into_iter().rev().find(|r| r.path == path)?;
    request
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("x-request-id"))
        .map(|(_, v)| v.clone())
}

/// kube-api lines with the real kubectl, on the listener that reads upgrades in place
/// (`kube`, `served_by` fast) and hyper's (`kube-hyper`): a list names its verb, namespace
/// and tenant; an exec (WebSocket and SPDY) writes its line when its stream ends, with
/// the pod, its leaf, the bytes spliced each way and why it ended; a followed log writes
/// its line once kubectl goes, not before, and so does a port-forward; the leaf sees the
/// request ID each line carries;
/// a dead leaf's exec is a 502 with its refusal; no line holds the tenant's token.
#[tokio::test]
async fn kube_api_lines_name_verb_pod_leaf_and_tenant_and_streams_write_theirs_at_the_end() {
    let mut bed = Bed::start_config(false, true, |config, dir| {
        let log = dir.join("access.log").display().to_string();
        config
            .set("request_id", json!({}))
            .set("access_log", json!({ "format": "json", "path": log }))
    })
    .await
    .with_pods()
    .await;
    let log = bed.gw.path().join("access.log");
    let bin = kubesim::kubectl::all().into_iter().next().unwrap();
    let exec_path = "/api/v1/namespaces/apps/pods/db/exec";
    let log_path = "/api/v1/namespaces/apps/pods/web/log";
    let on = |l: &Value, listener: &str, path: &str| {
        l["kind"] == "kube-api" && l["listener"] == listener && l["path"] == path
    };
    let kubeconfig_of = |listener: &str| {
        let server = bed.gw.addr(listener);
        kube::kubeconfig(
            bed.dir.path(),
            &bed.ca,
            server,
            KubeUser::Token(TOKEN_A),
            Some("apps"),
        )
    };
    for (listener, served_by) in [("kube", "fast"), ("kube-hyper", "hyper")] {
        let kubeconfig = kubeconfig_of(listener);
        let kubectl = |args: &[&str], env: &[(&str, &str)]| {
            let mut cmd = bed.kubectl_cmd(&bin, &kubeconfig);
            cmd.args(args).envs(env.iter().copied());
            kubesim::testkit::run(cmd, None)
        };
        let done = kubectl(&["get", "pods", "-o", "name"], &[]).await;
        assert_eq!(done.code, Some(0), "{listener}: {}", done.err);
        let list = lines_where(&log, 1, |l| on(l, listener, "/api/v1/namespaces/apps/pods")).await;
        let list = &list[0];
        assert_eq!(list["verb"], "list", "{list}");
        assert_eq!(list["namespace"], "apps", "{list}");
        assert_eq!(list["tenant"], "acme", "{list}");
        assert_eq!(list["status"], 200, "{list}");
        assert_eq!(list["method"], "GET", "{list}");
        assert!(
            list.get("pod").is_none() && list.get("leaf").is_none(),
            "{list}"
        );
        assert!(list.get("refusal").is_none(), "{list}");
        let id = list["request_id"].as_str().unwrap_or_default();
        assert_eq!(id.len(), 32, "{list}");

        for (n, env) in [&[][..], &[NO_WS_EXEC][..]].into_iter().enumerate() {
            let done = kubectl(&["exec", "db", "--", "sh", "-c", "echo out; exit 3"], env).await;
            assert_eq!(done.code, Some(3), "{listener} {env:?}: {}", done.err);
            assert_eq!(done.out, "out\n", "{listener} {env:?}");
            let lines = lines_where(&log, n + 1, |l| on(l, listener, exec_path)).await;
            let exec = &lines[n];
            assert_pod_call(exec, "exec", "db", "leaf-b");
            assert_eq!(exec["status"], 101, "{exec}");
            // kubectl's SPDY exec is a POST, which Go's HTTP client writes with
            // `Content-Length: 0`, and the in-place reader leaves any head with a length
            // to hyper: hyper's on either listener.
            let served_by = if env.is_empty() { served_by } else { "hyper" };
            assert_eq!(exec["served_by"], served_by, "{exec}");
            let method = if env.is_empty() { "GET" } else { "POST" };
            assert_eq!(exec["method"], method, "{exec}");
            // Written when the stream ended: "out\n" and the exit status went out, and
            // the client's own frames (its close, at least) came in.
            assert!(exec["bytes_out"].as_u64().unwrap() > 4, "{exec}");
            assert!(exec["bytes_in"].as_u64().is_some(), "{exec}");
            assert!(exec["duration_ms"].as_f64().is_some(), "{exec}");
            assert!(exec["throttled_ms"].as_f64().is_some(), "{exec}");
            let reason = exec["end_reason"].as_str().unwrap_or_default();
            // The leaf (the simulator) drops the stream without TLS's close_notify once the
            // exit status is out: `upstream closed`; a clean end is `closed`.
            assert!(
                ["closed", "client closed", "upstream closed"].contains(&reason),
                "{exec}"
            );
            assert_eq!(
                request_id_seen(&bed.leaf_b, exec_path).as_deref(),
                exec["request_id"].as_str(),
                "{listener}: the leaf saw the line's request ID"
            );
        }

        bed.leaf_a
            .append_log("apps", "web", "app", &format!("{listener} first"));
        let mut cmd = bed.kubectl_cmd(&bin, &kubeconfig);
        cmd.args(["logs", "-f", "web", "--tail=1"]);
        let mut following = Following::spawn(cmd);
        assert_eq!(following.next().await, format!("{listener} first"));
        tokio::time::sleep(Duration::from_millis(300)).await;
        let open = lines_where(&log, 0, |l| on(l, listener, log_path)).await;
        assert!(
            open.is_empty(),
            "a line while the log is followed: {open:#?}"
        );
        following.stop().await;
        // leafgate finds the caller gone when it next writes to it: the leaf's lines go on.
        let started = Instant::now();
        let logs = loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let found = text
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .find(|l| on(l, listener, log_path));
            if let Some(found) = found {
                break found;
            }
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "no logs line:\n{text}"
            );
            bed.leaf_a
                .append_log("apps", "web", "app", "after the caller went");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let logs = &logs;
        assert_pod_call(logs, "logs", "web", "leaf-a");
        assert_eq!(logs["status"], 200, "{logs}");
        assert_eq!(logs["end_reason"], "client closed", "{logs}");
        assert!(logs["bytes_out"].as_u64().unwrap() > 5, "{logs}");
        assert_eq!(
            request_id_seen(&bed.leaf_a, log_path).as_deref(),
            logs["request_id"].as_str(),
            "{listener}: the leaf saw the line's request ID"
        );
    }

    // A port-forward: its line when kubectl ends it, with the bytes each way (the
    // forwarded bytes inside their frames).
    annotate_port(&bed.leaf_b, "apps", "db", 5432, echo_server().await);
    let pf_path = "/api/v1/namespaces/apps/pods/db/portforward";
    let (mut child, local) = port_forward(bed.kubectl_cmd(&bin, &kubeconfig_of("kube"))).await;
    let sent = vec![b'p'; 64 * 1024];
    assert_echoes(local, std::slice::from_ref(&sent), "port-forward").await;
    let open = lines_where(&log, 0, |l| on(l, "kube", pf_path)).await;
    assert!(open.is_empty(), "a line while forwarding: {open:#?}");
    child.kill().await.unwrap();
    let pf = lines_where(&log, 1, |l| on(l, "kube", pf_path)).await;
    let pf = &pf[0];
    assert_pod_call(pf, "port-forward", "db", "leaf-b");
    assert_eq!(pf["status"], 101, "{pf}");
    for way in ["bytes_in", "bytes_out"] {
        assert!(pf[way].as_u64().unwrap() > 64 * 1024, "{way}: {pf}");
    }

    // A dead leaf: leaf-b's pods are still indexed, its API server gone.
    bed.leaf_b.stop().await;
    for listener in ["kube", "kube-hyper"] {
        let kubeconfig = kubeconfig_of(listener);
        let mut cmd = bed.kubectl_cmd(&bin, &kubeconfig);
        cmd.args(["exec", "db", "--", "true"]);
        let done = kubesim::testkit::run(cmd, None).await;
        assert_ne!(done.code, Some(0), "{listener}: {}", done.out);
        let dead = lines_where(&log, 1, |l| {
            on(l, listener, exec_path) && l["status"].as_u64().is_some_and(|s| s >= 500)
        })
        .await;
        let dead = &dead[0];
        assert!(
            [502, 503].contains(&dead["status"].as_u64().unwrap()),
            "{dead}"
        );
        assert!(
            dead["refusal"].as_str().is_some_and(|r| !r.is_empty()),
            "{dead}"
        );
        assert_pod_call(dead, "exec", "db", "leaf-b");
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains(TOKEN_A),
        "the tenant's token in the log:\n{text}"
    );
    assert!(!text.to_ascii_lowercase().contains("bearer"), "{text}");
}
