//! The simulator against the real kubectl (every binary `kubesim::kubectl::all` finds):
//! tables, wide output, YAML, watch, logs, and both kinds of authentication.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kubesim::{Credential, KubeSim};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const TOKEN: &str = "t0ken-for-alice";

struct Fixture {
    sim: KubeSim,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

async fn fixture() -> Fixture {
    let sim = KubeSim::builder()
        .token(TOKEN, "alice")
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    sim.kubeconfig(&Credential::Token(TOKEN.into()), &kubeconfig)
        .unwrap();
    sim.create(pod("default", "web", &["app"], "n1", "10.1.0.5"))
        .unwrap();
    sim.create(pod("data", "db", &["pg", "sidecar"], "n2", "10.1.0.6"))
        .unwrap();
    Fixture {
        sim,
        dir,
        kubeconfig,
    }
}

fn pod(ns: &str, name: &str, containers: &[&str], node: &str, ip: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": name}},
        "spec": {"nodeName": node, "containers": containers.iter().map(|c| json!({"name": c, "image": "busybox"})).collect::<Vec<_>>()},
        "status": {"phase": "Running", "podIP": ip, "containerStatuses": containers.iter().map(|c| json!({"name": c, "ready": true, "restartCount": 0, "state": {"running": {}}})).collect::<Vec<_>>()}
    })
}

/// kubectl with a kubeconfig and a discovery cache of the test's own (never `~/.kube`).
fn command(bin: &Path, kubeconfig: &Path, cache: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .kill_on_drop(true);
    cmd
}

async fn kubectl(bin: &Path, kubeconfig: &Path, args: &[&str]) -> (bool, String, String) {
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        command(
            bin,
            kubeconfig,
            &kubeconfig
                .parent()
                .expect("kubeconfigs live in the fixture dir")
                .join("cache"),
        )
        .args(args)
        .output(),
    )
    .await
    .expect("kubectl finished within 30s")
    .expect("kubectl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Columns of each output line, whitespace-split.
fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

fn assert_clean(bin: &Path, stderr: &str) {
    assert!(
        stderr.trim().is_empty(),
        "{} wrote to stderr: {stderr}",
        bin.display()
    );
}

#[tokio::test]
async fn get_pods_prints_the_table() {
    let f = fixture().await;
    for bin in kubesim::kubectl::all() {
        let (ok, out, err) = kubectl(&bin, &f.kubeconfig, &["get", "pods"]).await;
        assert!(ok, "{err}");
        assert_clean(&bin, &err);
        let r = rows(&out);
        assert_eq!(
            r[0],
            ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
            "{out}"
        );
        assert_eq!(r.len(), 2, "only the default namespace: {out}");
        assert_eq!(r[1][..4], ["web", "1/1", "Running", "0"]);
    }
}

#[tokio::test]
async fn get_pods_all_namespaces_wide() {
    let f = fixture().await;
    for bin in kubesim::kubectl::all() {
        let (ok, out, err) =
            kubectl(&bin, &f.kubeconfig, &["get", "pods", "-A", "-o", "wide"]).await;
        assert!(ok, "{err}");
        assert_clean(&bin, &err);
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].starts_with("NAMESPACE")
                && lines[0].contains("IP")
                && lines[0].contains("NOMINATED NODE")
                && lines[0].contains("READINESS GATES"),
            "{out}"
        );
        let r = rows(&out);
        assert_eq!(r[1][..4], ["data", "db", "2/2", "Running"]);
        assert!(
            r[1].contains(&"10.1.0.6".to_string()) && r[1].contains(&"n2".to_string()),
            "{out}"
        );
        assert_eq!(r[2][..2], ["default", "web"]);
    }
}

#[tokio::test]
async fn get_pod_yaml() {
    let f = fixture().await;
    for bin in kubesim::kubectl::all() {
        let (ok, out, err) =
            kubectl(&bin, &f.kubeconfig, &["get", "pod", "web", "-o", "yaml"]).await;
        assert!(ok, "{err}");
        assert!(
            out.contains("kind: Pod")
                && out.contains("name: web")
                && out.contains("podIP: 10.1.0.5"),
            "{out}"
        );
        let (ok, _, err) = kubectl(&bin, &f.kubeconfig, &["get", "pod", "nope"]).await;
        assert!(!ok);
        assert!(
            err.contains("Error from server (NotFound): pods \"nope\" not found"),
            "{err}"
        );
    }
}

/// Reads lines from `lines` until one satisfies `want`, within 15s.
async fn read_until(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    want: impl Fn(&str) -> bool,
) -> String {
    tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            let line = lines
                .next_line()
                .await
                .unwrap()
                .expect("kubectl output ended early");
            if want(&line) {
                return line;
            }
        }
    })
    .await
    .expect("the expected line within 15s")
}

#[tokio::test]
async fn get_pods_watch_sees_a_new_pod() {
    let f = fixture().await;
    for (i, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        let mut child = command(&bin, &f.kubeconfig, &f.dir.path().join("cache"))
            .args(["get", "pods", "-w"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        read_until(&mut lines, |l| l.starts_with("web ")).await;
        // The watch is open once kubectl has asked for it.
        let name = format!("late-{i}");
        let watching = async {
            // This binary's watch is the (i+1)th on the pods collection.
            while f
                .sim
                .requests()
                .iter()
                .filter(|r| {
                    r.path == "/api/v1/namespaces/default/pods" && r.query.contains("watch=true")
                })
                .count()
                <= i
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), watching)
            .await
            .expect("kubectl opened a watch");
        f.sim
            .create(pod("default", &name, &["c"], "n1", "10.1.0.9"))
            .unwrap();
        let line = read_until(&mut lines, |l| l.starts_with(&name)).await;
        assert!(line.contains("1/1") && line.contains("Running"), "{line}");
        child.kill().await.unwrap();
    }
}

#[tokio::test]
async fn logs_tail_and_follow() {
    let f = fixture().await;
    for (i, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        let name = format!("logger-{i}");
        f.sim
            .create(pod("default", &name, &["app"], "n1", "10.1.0.7"))
            .unwrap();
        for line in ["one", "two", "three"] {
            f.sim.append_log("default", &name, "app", line);
        }
        let (ok, out, err) = kubectl(&bin, &f.kubeconfig, &["logs", &name, "--tail=2"]).await;
        assert!(ok, "{err}");
        assert_eq!(out, "two\nthree\n");
        let (ok, _, err) = kubectl(
            &bin,
            &f.kubeconfig,
            &["logs", "-n", "data", "db", "-c", "pg", "--previous"],
        )
        .await;
        assert!(!ok);
        assert!(
            err.contains(r#"Error from server (BadRequest): previous terminated container "pg" in pod "db" not found"#),
            "{err}"
        );

        let mut child = command(&bin, &f.kubeconfig, &f.dir.path().join("cache"))
            .args(["logs", "-f", &name])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        read_until(&mut lines, |l| l == "three").await;
        f.sim.append_log("default", &name, "app", "later");
        let next = tokio::time::timeout(Duration::from_secs(15), lines.next_line())
            .await
            .expect("the appended line within 15s")
            .unwrap();
        assert_eq!(next.as_deref(), Some("later"));
        child.kill().await.unwrap();
    }
}

/// With discovery cached (a token revoked after use) kubectl reports the Status message,
/// `(Unauthorized)`; with nothing cached its discovery client words the same 401 generically,
/// exactly as against kube-apiserver.
#[tokio::test]
async fn bad_token_is_unauthorized() {
    let f = fixture().await;
    let bad = f.dir.path().join("bad");
    f.sim
        .kubeconfig(&Credential::Token("wrong".into()), &bad)
        .unwrap();
    for bin in kubesim::kubectl::all() {
        let (ok, _, err) = kubectl(&bin, &f.kubeconfig, &["get", "pods"]).await;
        assert!(ok, "{err}");
        let (ok, _, err) = kubectl(&bin, &bad, &["get", "pods"]).await;
        assert!(!ok);
        assert!(
            err.contains("error: You must be logged in to the server (Unauthorized)"),
            "{err}"
        );
        let fresh = tempfile::tempdir().unwrap();
        let out = command(&bin, &bad, fresh.path())
            .args(["get", "pods"])
            .output()
            .await
            .unwrap();
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr)
                .contains("error: You must be logged in to the server"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let recorded = f.sim.requests();
    assert!(recorded.iter().any(|r| {
        r.user.is_none()
            && r.headers
                .iter()
                .any(|(k, v)| k == "authorization" && v == "Bearer wrong")
    }));
}

#[tokio::test]
async fn client_certificate_auth() {
    let f = fixture().await;
    let kc = f.dir.path().join("cert");
    f.sim
        .kubeconfig(&Credential::ClientCert("bob".into()), &kc)
        .unwrap();
    for bin in kubesim::kubectl::all() {
        let (ok, out, err) = kubectl(&bin, &kc, &["get", "pods", "-n", "data"]).await;
        assert!(ok, "{err}");
        assert!(out.contains("db"), "{out}");
    }
    assert!(
        f.sim
            .requests()
            .iter()
            .any(|r| r.user.as_deref() == Some("bob"))
    );
}

/// The `kubesim` binary serves the objects it was given to kubectl through the kubeconfig it
/// wrote.
#[tokio::test]
async fn binary_serves_loaded_pods() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("pods.json");
    std::fs::write(
        &objects,
        json!([pod("default", "loaded", &["c"], "n1", "10.2.0.1")]).to_string(),
    )
    .unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubesim"))
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--objects")
        .arg(&objects)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = read_until(&mut lines, |l| l.starts_with("url: https://127.0.0.1:")).await;
    read_until(&mut lines, |l| l.starts_with("kubeconfig: ")).await;
    for bin in kubesim::kubectl::all() {
        let (ok, out, err) = kubectl(&bin, &kubeconfig, &["get", "pods", "-o", "wide"]).await;
        assert!(ok, "{url}: {err}");
        assert!(out.contains("loaded") && out.contains("10.2.0.1"), "{out}");
    }
    child.kill().await.unwrap();
}

/// kubectl's writes: `label` (a merge patch), `patch --type=json`, `patch --type=strategic`.
#[tokio::test]
async fn label_and_patch() {
    let f = fixture().await;
    for (i, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        let tier = format!("tier=t{i}");
        let (ok, _, err) = kubectl(
            &bin,
            &f.kubeconfig,
            &["label", "pod", "web", &tier, "--overwrite"],
        )
        .await;
        assert!(ok, "{err}");
        let json_ops =
            format!(r#"[{{"op":"add","path":"/metadata/annotations","value":{{"n":"{i}"}}}}]"#);
        let (ok, _, err) = kubectl(
            &bin,
            &f.kubeconfig,
            &["patch", "pod", "web", "--type=json", "-p", &json_ops],
        )
        .await;
        assert!(ok, "{err}");
        let (ok, _, err) = kubectl(
            &bin,
            &f.kubeconfig,
            &[
                "patch",
                "pod",
                "web",
                "-p",
                r#"{"spec":{"containers":[{"name":"app","image":"nginx"}]}}"#,
            ],
        )
        .await;
        assert!(ok, "{err}");
        let (ok, out, err) =
            kubectl(&bin, &f.kubeconfig, &["get", "pod", "web", "-o", "json"]).await;
        assert!(ok, "{err}");
        let pod: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(pod["metadata"]["labels"]["tier"], format!("t{i}"));
        assert_eq!(pod["metadata"]["labels"]["app"], "web");
        assert_eq!(pod["metadata"]["annotations"]["n"], i.to_string());
        assert_eq!(pod["spec"]["containers"][0]["image"], "nginx");
        assert_eq!(pod["spec"]["containers"].as_array().unwrap().len(), 1);
    }
}
