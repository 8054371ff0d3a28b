//! The simulator against the real kubectl (every binary `kubesim::kubectl::all` finds):
//! tables, wide output, YAML, watch, logs, and both kinds of authentication.

use super::common::{read_until, watching};
use kubesim::testkit::echo_server;
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
        // This binary's watch is the (i+1)th on the pods collection.
        let name = format!("late-{i}");
        watching(&f.sim, "/api/v1/namespaces/default/pods", i + 1).await;
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

// ---- Streaming subresources: exec, attach, port-forward ----

/// The two ways kubectl carries exec/attach: WebSocket (the default) and SPDY (forced by
/// `KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false`), with the method each must arrive with:
/// kubectl falls back from a failed WebSocket to SPDY, so the method proves which one ran.
const COMMAND_TRANSPORTS: [(&str, &str, &str); 2] = [
    ("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "true", "GET"),
    ("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false", "POST"),
];
/// Likewise for port-forward: the WebSocket tunnel (GET) and plain SPDY (POST).
const FORWARD_TRANSPORTS: [(&str, &str, &str); 2] = [
    ("KUBECTL_PORT_FORWARD_WEBSOCKETS", "true", "GET"),
    ("KUBECTL_PORT_FORWARD_WEBSOCKETS", "false", "POST"),
];

struct Run {
    code: Option<i32>,
    out: String,
    err: String,
}

/// kubectl with an environment variable and optional stdin, within 30s.
async fn kubectl_env(
    bin: &Path,
    kubeconfig: &Path,
    args: &[&str],
    env: (&str, &str),
    stdin: Option<&[u8]>,
) -> Run {
    use tokio::io::AsyncWriteExt;
    let cache = kubeconfig
        .parent()
        .expect("kubeconfigs live in the fixture dir")
        .join("cache");
    let mut child = command(bin, kubeconfig, &cache)
        .args(args)
        .env(env.0, env.1)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(input).await.unwrap();
        // Dropping the pipe is kubectl's end of input.
        drop(pipe);
    }
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("kubectl {args:?} ({}={}) finished within 30s", env.0, env.1))
        .unwrap();
    Run {
        code: out.status.code(),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The methods of the streaming requests to `subresource` recorded from index `from` on.
fn stream_methods(sim: &KubeSim, from: usize, subresource: &str) -> Vec<String> {
    sim.requests()[from..]
        .iter()
        .filter(|r| r.path.ends_with(&format!("/{subresource}")))
        .map(|r| r.method.clone())
        .collect()
}

#[tokio::test]
async fn exec_echo_over_websocket_and_spdy() {
    let f = fixture().await;
    for bin in kubesim::kubectl::all() {
        for (var, value, method) in COMMAND_TRANSPORTS {
            let mark = f.sim.requests().len();
            let r = kubectl_env(
                &bin,
                &f.kubeconfig,
                &["exec", "web", "--", "echo", "hi", "there"],
                (var, value),
                None,
            )
            .await;
            assert_eq!(
                r.code,
                Some(0),
                "{} {var}={value}: {}",
                bin.display(),
                r.err
            );
            assert_eq!(r.out, "hi there\n", "{var}={value}");
            assert_clean(&bin, &r.err);
            assert_eq!(
                stream_methods(&f.sim, mark, "exec"),
                [method],
                "{var}={value}"
            );
        }
    }
}

#[tokio::test]
async fn exec_stdin_and_stderr() {
    let f = fixture().await;
    let input = b"first line\nsecond line\n".repeat(2000);
    for bin in kubesim::kubectl::all() {
        for (var, value, method) in COMMAND_TRANSPORTS {
            let mark = f.sim.requests().len();
            let r = kubectl_env(
                &bin,
                &f.kubeconfig,
                &["exec", "-i", "web", "--", "sh", "-c", "cat; echo done >&2"],
                (var, value),
                Some(&input),
            )
            .await;
            assert_eq!(
                r.code,
                Some(0),
                "{} {var}={value}: {}",
                bin.display(),
                r.err
            );
            assert!(
                r.out.as_bytes() == input.as_slice(),
                "{var}={value}: {} bytes back of {}",
                r.out.len(),
                input.len()
            );
            assert_eq!(r.err, "done\n", "{var}={value}");
            assert_eq!(
                stream_methods(&f.sim, mark, "exec"),
                [method],
                "{var}={value}"
            );
        }
    }
}

#[tokio::test]
async fn exec_exit_code_and_missing_command() {
    let f = fixture().await;
    for bin in kubesim::kubectl::all() {
        for (var, value, _) in COMMAND_TRANSPORTS {
            let r = kubectl_env(
                &bin,
                &f.kubeconfig,
                &["exec", "web", "--", "sh", "-c", "echo partial; exit 3"],
                (var, value),
                None,
            )
            .await;
            assert_eq!(r.code, Some(3), "{var}={value}: {}", r.err);
            assert_eq!(r.out, "partial\n");
            assert!(
                r.err.contains("command terminated with exit code 3"),
                "{var}={value}: {}",
                r.err
            );
            let r = kubectl_env(
                &bin,
                &f.kubeconfig,
                &["exec", "web", "--", "/nonexistent/kubesim-tool"],
                (var, value),
                None,
            )
            .await;
            assert_ne!(r.code, Some(0), "{var}={value}");
            assert!(
                r.err.contains("Internal error occurred")
                    && r.err.contains("/nonexistent/kubesim-tool"),
                "{var}={value}: {}",
                r.err
            );
        }
    }
}

#[tokio::test]
async fn attach_prints_the_main_process_output() {
    let f = fixture().await;
    let mut talker = pod("default", "talker", &["app"], "n1", "10.1.0.8");
    talker["spec"]["containers"][0]["command"] = json!(["sh", "-c"]);
    talker["spec"]["containers"][0]["args"] = json!(["echo attached; echo also >&2"]);
    f.sim.create(talker).unwrap();
    for bin in kubesim::kubectl::all() {
        for (var, value, method) in COMMAND_TRANSPORTS {
            let mark = f.sim.requests().len();
            let r = kubectl_env(
                &bin,
                &f.kubeconfig,
                &["attach", "talker"],
                (var, value),
                None,
            )
            .await;
            assert_eq!(
                r.code,
                Some(0),
                "{} {var}={value}: {}",
                bin.display(),
                r.err
            );
            assert_eq!(r.out, "attached\n", "{var}={value}");
            // kubectl's own notices come first on stderr; the process's line ends it.
            assert!(r.err.ends_with("\nalso\n"), "{var}={value}: {}", r.err);
            assert_eq!(
                stream_methods(&f.sim, mark, "attach"),
                [method],
                "{var}={value}"
            );
        }
    }
}

/// Sends `msg` through `local`, expects it echoed back, then half-closes and expects EOF.
async fn round_trip(local: std::net::SocketAddr, msg: &[u8]) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut conn = tokio::net::TcpStream::connect(local).await.unwrap();
    conn.write_all(msg).await.unwrap();
    let mut back = vec![0u8; msg.len()];
    tokio::time::timeout(Duration::from_secs(10), conn.read_exact(&mut back))
        .await
        .expect("the echo within 10s")
        .unwrap();
    assert_eq!(back, msg);
    conn.shutdown().await.unwrap();
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), conn.read_to_end(&mut rest))
        .await
        .expect("EOF within 10s after the half-close")
        .unwrap();
    assert!(rest.is_empty());
}

#[tokio::test]
async fn port_forward_carries_bytes_both_ways() {
    let f = fixture().await;
    let echo = echo_server().await;
    let mut fwd = pod("default", "fwd", &["app"], "n1", "10.1.0.10");
    fwd["metadata"]["annotations"] = json!({"kubesim.leafgate.io/port-8080": echo.to_string()});
    f.sim.create(fwd).unwrap();
    for bin in kubesim::kubectl::all() {
        for (var, value, method) in FORWARD_TRANSPORTS {
            let mark = f.sim.requests().len();
            let mut child = command(&bin, &f.kubeconfig, &f.dir.path().join("cache"))
                .args(["port-forward", "pod/fwd", ":8080"])
                .env(var, value)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            let line =
                read_until(&mut lines, |l| l.starts_with("Forwarding from 127.0.0.1:")).await;
            let local: std::net::SocketAddr = line
                .trim_start_matches("Forwarding from ")
                .split(" -> ")
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert!(line.ends_with("-> 8080"), "{line}");
            // Connections one after another, then side by side, some bigger than a SPDY
            // window, all over the one forward.
            round_trip(local, b"hello through the pod").await;
            let big = vec![b'x'; 200 * 1024];
            let together: Vec<Vec<u8>> = (0..4u8)
                .map(|i| vec![b'a' + i; 100 * 1024 + usize::from(i)])
                .chain([big])
                .collect();
            futures_util::future::join_all(together.iter().map(|m| round_trip(local, m))).await;
            child.kill().await.unwrap();
            let mut err = String::new();
            use tokio::io::AsyncReadExt;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .await
                .unwrap();
            assert!(!err.contains("error"), "{var}={value}: {err}");
            assert_eq!(
                stream_methods(&f.sim, mark, "portforward"),
                [method],
                "{} {var}={value}",
                bin.display()
            );
        }
    }
}

#[tokio::test]
async fn port_forward_to_an_unannotated_port_reports_the_error() {
    let f = fixture().await;
    for bin in kubesim::kubectl::all() {
        for (var, value, _) in FORWARD_TRANSPORTS {
            let mut child = command(&bin, &f.kubeconfig, &f.dir.path().join("cache"))
                .args(["port-forward", "pod/web", ":9999"])
                .env(var, value)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
            let line =
                read_until(&mut lines, |l| l.starts_with("Forwarding from 127.0.0.1:")).await;
            let local: std::net::SocketAddr = line
                .trim_start_matches("Forwarding from ")
                .split(" -> ")
                .next()
                .unwrap()
                .parse()
                .unwrap();
            {
                use tokio::io::AsyncReadExt;
                let mut conn = tokio::net::TcpStream::connect(local).await.unwrap();
                let mut rest = Vec::new();
                let _ = tokio::time::timeout(Duration::from_secs(10), conn.read_to_end(&mut rest))
                    .await
                    .expect("the failed forward closes the local connection within 10s");
                assert!(rest.is_empty());
            }
            // closeConnection makes kubectl give up the whole forward, with the message.
            let status = tokio::time::timeout(Duration::from_secs(15), child.wait())
                .await
                .expect("kubectl exits within 15s after a closeConnection error")
                .unwrap();
            let mut err = String::new();
            use tokio::io::AsyncReadExt;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .await
                .unwrap();
            assert!(!status.success(), "{var}={value}");
            assert!(
                err.contains("error forwarding port 9999 to pod web_default"),
                "{var}={value}: {err}"
            );
        }
    }
}

#[tokio::test]
async fn exec_with_a_terminal_sends_resize_and_runs() {
    // kubectl asks for a TTY only when its stdin is a terminal: `script` gives it one.
    let script = Path::new("/usr/bin/script");
    if !script.is_file() {
        eprintln!("skipped: /usr/bin/script (util-linux) is not installed");
        return;
    }
    let f = fixture().await;
    for bin in kubesim::kubectl::all() {
        for (var, value, method) in COMMAND_TRANSPORTS {
            let mark = f.sim.requests().len();
            let line = format!(
                "{} --kubeconfig {} --cache-dir {} exec -it web -- sh -c 'echo tty-ok'",
                bin.display(),
                f.kubeconfig.display(),
                f.dir.path().join("cache").display()
            );
            let out = tokio::time::timeout(
                Duration::from_secs(30),
                Command::new(script)
                    .args(["-qec", &line, "/dev/null"])
                    .env(var, value)
                    .stdin(Stdio::null())
                    .kill_on_drop(true)
                    .output(),
            )
            .await
            .expect("kubectl exec -it finished within 30s")
            .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{var}={value}: {text}");
            assert!(text.contains("tty-ok"), "{var}={value}: {text}");
            let reqs: Vec<_> = f.sim.requests()[mark..]
                .iter()
                .filter(|r| r.path.ends_with("/exec"))
                .map(|r| (r.method.clone(), r.query.contains("tty=true")))
                .collect();
            assert_eq!(reqs, [(method.to_string(), true)], "{var}={value}");
        }
    }
}

#[tokio::test]
async fn attach_with_stdin() {
    let f = fixture().await;
    let mut catter = pod("default", "catter", &["app"], "n1", "10.1.0.11");
    catter["spec"]["containers"][0]["command"] = json!(["cat"]);
    f.sim.create(catter).unwrap();
    for bin in kubesim::kubectl::all() {
        for (var, value, _) in COMMAND_TRANSPORTS {
            let r = kubectl_env(
                &bin,
                &f.kubeconfig,
                &["attach", "-i", "catter"],
                (var, value),
                Some(b"typed into the main process\n"),
            )
            .await;
            assert_eq!(
                r.code,
                Some(0),
                "{} {var}={value}: {}",
                bin.display(),
                r.err
            );
            assert_eq!(r.out, "typed into the main process\n", "{var}={value}");
        }
    }
}

/// `kubectl cp` is tar over exec: a few hundred KiB each way through the stream protocols.
/// The "container" is this machine, so the pod paths are the test's temporary directory.
#[tokio::test]
async fn cp_both_ways() {
    let f = fixture().await;
    let blob: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let src = f.dir.path().join("blob");
    std::fs::write(&src, &blob).unwrap();
    for (b, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        for (var, value, _) in COMMAND_TRANSPORTS {
            let back = f.dir.path().join(format!("back-{b}-{value}"));
            let r = kubectl_env(
                &bin,
                &f.kubeconfig,
                &[
                    "cp",
                    &format!("web:{}", src.display()),
                    &back.display().to_string(),
                ],
                (var, value),
                None,
            )
            .await;
            assert_eq!(r.code, Some(0), "{var}={value}: {}", r.err);
            assert!(std::fs::read(&back).unwrap() == blob, "{var}={value}: from");
            let into = f.dir.path().join(format!("into-{b}-{value}"));
            std::fs::create_dir(&into).unwrap();
            let r = kubectl_env(
                &bin,
                &f.kubeconfig,
                &[
                    "cp",
                    &src.display().to_string(),
                    &format!("web:{}/copy", into.display()),
                ],
                (var, value),
                None,
            )
            .await;
            assert_eq!(r.code, Some(0), "{var}={value}: {}", r.err);
            assert!(
                std::fs::read(into.join("copy")).unwrap() == blob,
                "{var}={value}: to"
            );
        }
    }
}

/// A `SubjectAccessReview` created with kubectl comes back with kube-apiserver's shape:
/// the spec as sent and `status.allowed` (with `denied` and `reason` when a rule denies).
/// kubesim serves no OpenAPI, so client-side validation is off (`--validate=false`).
#[tokio::test]
async fn subject_access_review_answers_the_policy() {
    let f = fixture().await;
    f.sim.access_rule("ops", "get", true);
    f.sim.access_rule("intruder", "*", false);
    let sar = |user: &str, verb: &str| {
        format!(
            "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec:\n  user: {user}\n  groups: [\"system:authenticated\"]\n  resourceAttributes:\n    verb: {verb}\n    resource: nodes\n    subresource: proxy\n    name: vn-leaf-1\n"
        )
    };
    for bin in kubesim::kubectl::all() {
        for (user, verb, want) in [
            ("ops", "get", "allowed: true"),
            ("intruder", "get", "denied: true"),
            ("ops", "create", "allowed: false"),
        ] {
            let file = f.dir.path().join(format!("sar-{user}-{verb}.yaml"));
            std::fs::write(&file, sar(user, verb)).unwrap();
            let (ok, out, err) = kubectl(
                &bin,
                &f.kubeconfig,
                &[
                    "create",
                    "--validate=false",
                    "-f",
                    file.to_str().unwrap(),
                    "-o",
                    "yaml",
                ],
            )
            .await;
            assert!(ok, "{err}");
            assert_clean(&bin, &err);
            assert!(
                out.contains("kind: SubjectAccessReview")
                    && out.contains(&format!("user: {user}"))
                    && out.contains("subresource: proxy")
                    && out.contains(want),
                "{user} {verb}: {out}"
            );
        }
    }
    let reviews = f.sim.access_reviews();
    assert!(
        reviews
            .iter()
            .all(|r| r["resourceAttributes"]["name"] == "vn-leaf-1")
    );
    assert_eq!(reviews.len(), 3 * kubesim::kubectl::all().len());
}

/// A pod that is not ready yet: `Ready` False.
fn unready_pod(ns: &str, name: &str) -> serde_json::Value {
    let mut p = pod(ns, name, &["app"], "n1", "10.1.0.8");
    p["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
    p["status"]["containerStatuses"][0]["ready"] = json!(false);
    p
}

/// `kubectl wait` (1.37 lists by streaming: `sendInitialEvents=true` and the
/// initial-events-end bookmark; 1.32 lists then watches) returns promptly once the
/// condition holds: the simulator gives it what it needs.
#[tokio::test]
async fn kubectl_wait_for_ready_and_for_delete_return_promptly() {
    let f = fixture().await;
    let path = "/api/v1/namespaces/default/pods";
    for (i, bin) in kubesim::kubectl::all().into_iter().enumerate() {
        let b = bin.display();
        let name = format!("slow-{i}");
        f.sim.create(unready_pod("default", &name)).unwrap();
        let cache = f.dir.path().join("cache");
        let before = f.sim.watches(path);
        let target = format!("pod/{name}");
        let ready = command(&bin, &f.kubeconfig, &cache)
            .args(["wait", "--for=condition=Ready", &target, "--timeout=30s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        watching(&f.sim, path, before + 1).await;
        let streamed = f.sim.requests().iter().any(|r| {
            r.path == path && r.query.contains("sendInitialEvents=true") && r.query.contains(&name)
        });
        assert_eq!(streamed, i == 0, "{b}: only 1.37 lists by streaming");
        let patch = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        f.sim
            .patch_status("v1", "Pod", "default", &name, &patch)
            .unwrap();
        let changed = std::time::Instant::now();
        let out = tokio::time::timeout(Duration::from_secs(10), ready.wait_with_output())
            .await
            .expect("kubectl wait ended")
            .unwrap();
        assert!(
            out.status.success(),
            "{b}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            changed.elapsed() < Duration::from_secs(2),
            "{b}: {:?}",
            changed.elapsed()
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("condition met"),
            "{b}"
        );

        let before = f.sim.watches(path);
        let gone = command(&bin, &f.kubeconfig, &cache)
            .args(["wait", "--for=delete", &target, "--timeout=30s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        watching(&f.sim, path, before + 1).await;
        f.sim.delete("v1", "Pod", "default", &name).unwrap();
        let deleted = std::time::Instant::now();
        let out = tokio::time::timeout(Duration::from_secs(10), gone.wait_with_output())
            .await
            .expect("kubectl wait ended")
            .unwrap();
        assert!(
            out.status.success(),
            "{b}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            deleted.elapsed() < Duration::from_secs(2),
            "{b}: {:?}",
            deleted.elapsed()
        );
    }
}
