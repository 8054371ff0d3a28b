//! The kube-api front as `kubectl auth`, `explain`, `apply`, `edit`, `version` and
//! `get --raw /readyz` meet it, with every kubectl `kubesim::kubectl::all()` lists: two
//! simulated leaves (leaf-a at the simulator's v1.37, leaf-b at v1.33.4) behind leafgate,
//! tenant `acme` (namespaces `apps`, `apps-*`, by token or by the client certificate
//! `acme-ci`) and tenant `other` (namespace `other`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use kubesim::KubeSim;
use leafgate_tests::certs::TestCa;
use leafgate_tests::config::{Leaf, Listener, Tenant};
use leafgate_tests::kube::{self, KubeUser};
use leafgate_tests::{Config, TestGateway};
use serde_json::{Value, json};
use tokio::process::Command;

const TOKEN_A: &str = "acme-token-1";
const TOKEN_OTHER: &str = "other-token-1";
/// What leaf-b runs: older than the simulator's default, so `/version` must say it.
const OLD_LEAF: &str = "v1.33.4";
/// kube-apiserver's 405, which every write through the front ends in.
const NOT_ALLOWED: &str = "the server does not allow this method on the requested resource";

fn pod(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "labels": {"app": "x"}},
        "spec": {"nodeName": "leaf-node", "containers": [{"name": "app", "image": "busybox"}]},
        "status": {"phase": "Running", "podIP": "10.1.2.3"}
    })
}

struct Bed {
    gw: TestGateway,
    _leaves: (KubeSim, KubeSim),
    ca: TestCa,
    dir: tempfile::TempDir,
}

impl Bed {
    /// The gateway over both leaves; `pin`: the listener's `kubernetes_version`. Returns
    /// once apps/web is indexed and both leaves have told their versions.
    async fn start(pin: Option<&str>) -> Bed {
        let leaf_a = KubeSim::builder().start().await.unwrap();
        let leaf_b = KubeSim::builder().version(OLD_LEAF).start().await.unwrap();
        let gw_dir = tempfile::tempdir().unwrap();
        kube::leaf_kubeconfigs(
            gw_dir.path(),
            &[(&leaf_a, "a.kubeconfig"), (&leaf_b, "b.kubeconfig")],
        );
        let ca = kube::serving_ca(gw_dir.path());
        std::fs::write(gw_dir.path().join("acme.tokens"), TOKEN_A).unwrap();
        std::fs::write(gw_dir.path().join("other.tokens"), TOKEN_OTHER).unwrap();
        let mut listener = Listener::kube_api("kube")
            .tls("kube-api.pem", "kube-api-key.pem")
            .client_ca("clients-ca.pem");
        if let Some(v) = pin {
            listener = listener.kubernetes_version(v);
        }
        let config = Config::new()
            .admin()
            .listener(listener)
            .leaf(Leaf::new("leaf-a", "a.kubeconfig"))
            .leaf(Leaf::new("leaf-b", "b.kubeconfig"))
            .tenant(
                Tenant::new("acme")
                    .namespaces(["apps", "apps-*"])
                    .tokens_file("acme.tokens")
                    .client_names(["acme-ci"]),
            )
            .tenant(
                Tenant::new("other")
                    .namespaces(["other"])
                    .tokens_file("other.tokens"),
            );
        let gw = TestGateway::start_in(gw_dir, config).await;
        leaf_a.create(pod("apps", "web")).unwrap();
        leaf_a.create(pod("other", "secret")).unwrap();
        gw.indexed("apps", "web").await;
        gw.indexed("other", "secret").await;
        let started = Instant::now();
        while ["leaf-a", "leaf-b"].iter().any(|name| {
            let snapshot = gw.gateway.snapshot();
            let leaf = &snapshot.leaves[*name];
            leaf.version().is_none() || !leaf.watch_state().synced
        }) {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the leaves' versions never came"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Bed {
            gw,
            _leaves: (leaf_a, leaf_b),
            ca,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn addr(&self) -> SocketAddr {
        self.gw.addr("kube")
    }

    /// A kubeconfig for a bearer token, or (`None`) a client certificate named `acme-ci`.
    fn kubeconfig(&self, token: Option<&str>) -> PathBuf {
        let user = token.map_or(KubeUser::Cert("acme-ci"), KubeUser::Token);
        kube::kubeconfig(self.dir.path(), &self.ca, self.addr(), user, Some("apps"))
    }

    /// Runs `bin` as acme (token, or its certificate with `token: None`) in namespace
    /// `apps`, each binary with its own cache directory.
    async fn kubectl(
        &self,
        bin: &Path,
        token: Option<&str>,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> (Option<i32>, String, String) {
        let cache = self
            .dir
            .path()
            .join(format!("cache-{}", bin.to_string_lossy().replace('/', "_")));
        let mut cmd = Command::new(bin);
        cmd.arg("--kubeconfig")
            .arg(self.kubeconfig(token))
            .arg("--cache-dir")
            .arg(cache)
            .args(args)
            .envs(env.iter().copied())
            .kill_on_drop(true);
        let done = kubesim::testkit::run(cmd, None).await;
        (done.code, done.out, done.err)
    }

    /// One request as a plain client sends it, with acme's token: (status, headers, body).
    async fn raw(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> (u16, http::HeaderMap, Bytes) {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(self.ca.roots())
            .with_no_client_auth();
        let tcp = tokio::net::TcpStream::connect(self.addr()).await.unwrap();
        let stream = tokio_rustls::TlsConnector::from(std::sync::Arc::new(tls))
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
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "127.0.0.1")
            .header("authorization", format!("Bearer {TOKEN_A}"))
            .header("content-type", content_type)
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let res = sender.send_request(req).await.unwrap();
        let code = res.status().as_u16();
        let headers = res.headers().clone();
        let body = res.into_body().collect().await.unwrap().to_bytes();
        (code, headers, body)
    }
}

#[tokio::test]
async fn auth_can_i_answers_from_the_tenants_rights() {
    let bed = Bed::start(None).await;
    for bin in kubesim::kubectl::all() {
        let can_i = |args: &'static [&'static str]| {
            let bed = &bed;
            let bin = bin.clone();
            async move {
                let mut all = vec!["auth", "can-i"];
                all.extend_from_slice(args);
                bed.kubectl(&bin, Some(TOKEN_A), &all, &[]).await
            }
        };
        for yes in [
            &["get", "pods"][..],
            &["list", "pods", "-n", "apps-2"],
            &["watch", "pods", "--all-namespaces"],
            // `pods/exec` would be the pod named exec: subresources go in a flag.
            &["create", "pods", "--subresource=exec"],
            &["create", "pods", "--subresource=portforward"],
            &["get", "pods", "--subresource=log"],
            &["list", "namespaces"],
            &["get", "namespace/apps-9"],
            &["get", "/readyz"],
        ] {
            let (code, out, err) = can_i(yes).await;
            assert_eq!((code, out.trim()), (Some(0), "yes"), "{yes:?}: {out}{err}");
        }
        for no in [
            &["delete", "pods"][..],
            &["create", "pods"],
            &["create", "pods/exec"],
            &["patch", "pods"],
            &["get", "secrets"],
            &["get", "/metrics"],
        ] {
            let (code, out, err) = can_i(no).await;
            assert_eq!(code, Some(1), "{no:?}: {out}{err}");
            assert!(
                out.starts_with("no - leafgate serves"),
                "{no:?}: {out}{err}"
            );
        }
        // Another tenant's namespace and one that exists nowhere: the same no, so the
        // answer says nothing of which exists.
        let (code, other, _) = can_i(&["get", "pods", "-n", "other"]).await;
        assert_eq!(code, Some(1), "{other}");
        assert!(other.starts_with("no - "), "{other}");
        let (_, nowhere, _) = can_i(&["get", "pods", "-n", "nowhere"]).await;
        assert_eq!(other.replace("other", "X"), nowhere.replace("nowhere", "X"));
        let (code, out, _) = can_i(&["create", "pods", "--subresource=exec", "-n", "other"]).await;
        assert_eq!(code, Some(1), "{out}");
        let (code, out, _) = can_i(&["get", "namespace/other"]).await;
        assert_eq!(code, Some(1), "{out}");
    }
}

#[tokio::test]
async fn auth_can_i_list_and_whoami_say_what_and_who() {
    let bed = Bed::start(None).await;
    for bin in kubesim::kubectl::all() {
        let (code, out, err) = bed
            .kubectl(&bin, Some(TOKEN_A), &["auth", "can-i", "--list"], &[])
            .await;
        assert_eq!(code, Some(0), "{err}");
        let header: Vec<&str> = out
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        assert_eq!(
            header,
            [
                "Resources",
                "Non-Resource",
                "URLs",
                "Resource",
                "Names",
                "Verbs"
            ],
            "{out}"
        );
        let line = |start: &str| {
            out.lines()
                .find(|l| l.starts_with(start))
                .unwrap_or_else(|| panic!("no {start} in {out}"))
                .split_whitespace()
                .collect::<Vec<_>>()
        };
        assert_eq!(
            line("pods/exec "),
            ["pods/exec", "[]", "[]", "[create", "get]"]
        );
        assert_eq!(
            line("pods "),
            ["pods", "[]", "[]", "[get", "list", "watch]"]
        );
        assert_eq!(line("namespaces "), ["namespaces", "[]", "[apps]", "[get]"]);
        assert!(out.contains("[/readyz]"), "{out}");
        // In another tenant's namespace: only what holds everywhere.
        let (_, other, _) = bed
            .kubectl(
                &bin,
                Some(TOKEN_A),
                &["auth", "can-i", "--list", "-n", "other"],
                &[],
            )
            .await;
        assert!(!other.lines().any(|l| l.starts_with("pods")), "{other}");
        assert!(
            other.contains("selfsubjectaccessreviews.authorization.k8s.io"),
            "{other}"
        );

        let (code, out, err) = bed
            .kubectl(&bin, Some(TOKEN_A), &["auth", "whoami"], &[])
            .await;
        assert_eq!(code, Some(0), "{err}");
        let rows: Vec<Vec<&str>> = out
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert!(rows.contains(&vec!["Username", "tenant:acme"]), "{out}");
        assert!(
            rows.contains(&vec!["Groups", "[system:authenticated]"]),
            "{out}"
        );
        assert!(
            rows.contains(&vec!["Extra:", "leafgate.io/tenant", "[acme]"]),
            "{out}"
        );
        let (code, out, err) = bed.kubectl(&bin, None, &["auth", "whoami"], &[]).await;
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains("acme-ci"), "the certificate's name: {out}");
    }
}

#[tokio::test]
async fn impersonation_is_refused_as_kube_apiserver_refuses_it() {
    let bed = Bed::start(None).await;
    for bin in kubesim::kubectl::all() {
        // Discovery is refused first; kubectl's discovery client cannot decode the
        // Status, so it says `unknown`, as it does against kube-apiserver.
        let (code, out, err) = bed
            .kubectl(&bin, Some(TOKEN_A), &["--as=x", "get", "pods"], &[])
            .await;
        assert_eq!(code, Some(1), "{out}");
        assert!(err.contains("Error from server (Forbidden)"), "{err}");
        // A plain request shows the words.
        let (code, out, err) = bed
            .kubectl(
                &bin,
                Some(TOKEN_A),
                &["--as=x", "get", "--raw", "/api/v1/namespaces/apps/pods"],
                &[],
            )
            .await;
        assert_eq!(code, Some(1), "{out}");
        assert!(
            err.contains(r#"users "x" is forbidden: User "tenant:acme" cannot impersonate resource "users" in API group "" at the cluster scope"#),
            "{err}"
        );
        assert!(!out.contains("web"), "{out}");
    }
}

#[tokio::test]
async fn explain_apply_and_edit_read_the_openapi_documents() {
    let bed = Bed::start(None).await;
    let manifest = bed.dir.path().join("pod.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: new\n  namespace: apps\nspec:\n  containers:\n  - name: app\n    image: busybox\n",
    )
    .unwrap();
    let manifest = manifest.to_str().unwrap();
    for bin in kubesim::kubectl::all() {
        let (code, out, err) = bed
            .kubectl(&bin, Some(TOKEN_A), &["explain", "pod"], &[])
            .await;
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains("KIND:") && out.contains("Pod"), "{out}");
        assert!(
            out.contains("Pod is a collection of containers that can run on a host."),
            "{out}"
        );
        let (code, out, err) = bed
            .kubectl(
                &bin,
                Some(TOKEN_A),
                &["explain", "pod.spec.containers.image"],
                &[],
            )
            .await;
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains("Container image name."), "{out}");

        for verb in ["apply", "create"] {
            let (code, out, err) = bed
                .kubectl(&bin, Some(TOKEN_A), &[verb, "-f", manifest], &[])
                .await;
            assert_eq!(code, Some(1), "{verb}: {out}");
            assert!(err.contains(NOT_ALLOWED), "{verb}: {err}");
            assert!(!err.contains("openapi"), "{verb}: {err}");
        }

        let (code, out, err) = bed
            .kubectl(
                &bin,
                Some(TOKEN_A),
                &["edit", "pod", "web"],
                &[("KUBE_EDITOR", "true")],
            )
            .await;
        assert_eq!(code, Some(0), "{out}{err}");
        assert!(err.contains("Edit cancelled, no changes made."), "{err}");
    }
}

#[tokio::test]
async fn version_is_the_oldest_leaf_and_health_answers_as_kube_apiserver() {
    let bed = Bed::start(None).await;
    for bin in kubesim::kubectl::all() {
        let (code, out, err) = bed
            .kubectl(&bin, Some(TOKEN_A), &["version", "-o", "json"], &[])
            .await;
        assert_eq!(code, Some(0), "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["serverVersion"]["gitVersion"], OLD_LEAF, "{out}");
        assert_eq!(v["serverVersion"]["minor"], "33", "{out}");

        for path in ["/readyz", "/livez", "/healthz", "/readyz/ping"] {
            let (code, out, err) = bed
                .kubectl(&bin, Some(TOKEN_A), &["get", "--raw", path], &[])
                .await;
            assert_eq!((code, out.as_str()), (Some(0), "ok"), "{path}: {err}");
        }
        let (code, out, err) = bed
            .kubectl(
                &bin,
                Some(TOKEN_A),
                &["get", "--raw", "/readyz?verbose"],
                &[],
            )
            .await;
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(out, "[+]ping ok\n[+]leaf-sync ok\nreadyz check passed\n");
    }
}

#[tokio::test]
async fn a_pinned_version_wins_over_the_leaves() {
    let bed = Bed::start(Some("v1.36.2")).await;
    let (code, _, body) = bed.raw("GET", "/version", "", Vec::new()).await;
    assert_eq!(code, 200);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        (&v["major"], &v["minor"], &v["gitVersion"]),
        (&json!("1"), &json!("36"), &json!("v1.36.2"))
    );
}

#[tokio::test]
async fn reviews_read_json_refuse_other_types_and_openapi_hashes_move() {
    let bed = Bed::start(None).await;
    let ssar = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let review = |ns: &str, verb: &str| {
        serde_json::to_vec(&json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": ns, "verb": verb, "resource": "pods"}}
        }))
        .unwrap()
    };
    let (code, _, body) = bed
        .raw("POST", ssar, "application/json", review("apps", "list"))
        .await;
    assert_eq!(code, 201);
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["status"]["allowed"], true, "{answer}");
    assert_eq!(answer["spec"]["resourceAttributes"]["namespace"], "apps");
    let (_, _, body) = bed
        .raw("POST", ssar, "application/json", review("other", "list"))
        .await;
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["status"]["allowed"], false, "{answer}");

    // Hostile bodies: another kind, no attributes, an unknown media type, a broken
    // protobuf envelope, too large.
    let wrong = serde_json::to_vec(&json!({"apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview", "spec": {"user": "admin"}}))
    .unwrap();
    let (code, _, body) = bed.raw("POST", ssar, "application/json", wrong).await;
    assert_eq!(code, 400, "{body:?}");
    let empty = serde_json::to_vec(&json!({"spec": {}})).unwrap();
    let (code, _, _) = bed.raw("POST", ssar, "application/json", empty).await;
    assert_eq!(code, 422);
    let (code, _, _) = bed.raw("POST", ssar, "text/plain", b"yes".to_vec()).await;
    assert_eq!(code, 415);
    let (code, _, _) = bed
        .raw(
            "POST",
            ssar,
            "application/vnd.kubernetes.protobuf",
            b"k8s\0\x0a\x7f".to_vec(),
        )
        .await;
    assert_eq!(code, 400);
    let (code, _, _) = bed
        .raw("POST", ssar, "application/json", vec![b' '; 100_000])
        .await;
    assert_eq!(code, 413);
    let (code, _, _) = bed.raw("GET", ssar, "", Vec::new()).await;
    assert_eq!(code, 405);

    // The OpenAPI root names each document by its hash; a stale hash moves.
    let (code, _, root) = bed.raw("GET", "/openapi/v3", "", Vec::new()).await;
    assert_eq!(code, 200);
    let root: Value = serde_json::from_slice(&root).unwrap();
    let url = root["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, headers, _) = bed.raw("GET", &url, "", Vec::new()).await;
    assert_eq!(code, 200);
    assert_eq!(headers["cache-control"], "public, immutable");
    let (code, headers, _) = bed
        .raw("GET", "/openapi/v3/api/v1?hash=0123", "", Vec::new())
        .await;
    assert_eq!(code, 301);
    assert_eq!(headers["location"], url.as_str());
}
