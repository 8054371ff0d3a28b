//! `leafgate plugin check` and `leafgate plugin run`, end to end: the built binary, real
//! plugins compiled from `plugins/`, requests on stdin, decisions on stdout.

#[path = "../../../tests/src/plugins.rs"]
#[allow(dead_code)]
mod build;
// What `build` runs cargo with, beside it as in the harness crate.
#[path = "../../../tests/src/cargo.rs"]
mod cargo;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn leafgate(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_leafgate"))
        .args(args)
        // Compiled plugins are kept across the invocations of this test run.
        .env(
            "LEAFGATE_PLUGIN_CACHE",
            build::target_dir().join("plugin-cache"),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the leafgate binary runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a plugin that is expected to answer. These tests check answers, not deadlines (that
/// is `run_reports_a_plugin_failure_plainly`), so the deadline is generous: the first call
/// instantiates the plugin and builds its config (`redact` compiles its regexes), and on a
/// machine busy with other test binaries the default 10 ms (whose wall-clock cap is 90 ms)
/// can pass before the process gets the CPU.
fn run_ok(plugin: &Path, world: &str, config: Option<&str>, stdin: &str) -> String {
    let mut args = vec![
        "plugin",
        "run",
        plugin.to_str().unwrap(),
        "--world",
        world,
        "--deadline",
        "2s",
    ];
    if let Some(c) = config {
        args.extend(["--config", c]);
    }
    let out = leafgate(&args, stdin);
    assert!(
        out.status.success(),
        "leafgate {args:?} failed: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

#[test]
fn redact_filters_lines_from_stdin() {
    let out = run_ok(
        &build::plugin("redact"),
        "log-filter",
        Some(r#"{"patterns":["password=\\S+","token=[0-9a-f]+"],"drop":["healthz"]}"#),
        "start\nuser=bob password=s3cret\nGET /healthz\ntoken=deadbeef done\n",
    );
    assert_eq!(out, "start\nuser=bob ***\n*** done\n");
}

#[test]
fn redact_handles_more_lines_than_one_batch() {
    let input: String = (0..1000)
        .map(|i| format!("line {i} password=p{i}\n"))
        .collect();
    let out = run_ok(
        &build::plugin("redact"),
        "log-filter",
        Some(r#"{"patterns":["password=\\S+"]}"#),
        &input,
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1000);
    assert_eq!(lines[999], "line 999 ***");
}

#[test]
fn pods_table_turns_a_pod_list_into_table_json() {
    let pods = r#"{"kind":"PodList","apiVersion":"v1","items":[
        {"metadata":{"name":"web-1","creationTimestamp":"2020-01-01T00:00:00Z"},
         "spec":{"nodeName":"n1","containers":[{"name":"a"},{"name":"b"}]},
         "status":{"phase":"Running","podIP":"10.0.0.9","containerStatuses":[
            {"name":"a","ready":true,"restartCount":1,"state":{"running":{}}},
            {"name":"b","ready":true,"restartCount":4,"state":{"running":{}}}]}}]}"#;
    let out = run_ok(&build::plugin("pods-table"), "table-formatter", None, pods);
    let table: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(table["columnDefinitions"][0]["name"], "NAME");
    assert_eq!(table["columnDefinitions"][7]["name"], "NODE");
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[0], "web-1");
    assert_eq!(cells[1], "2/2");
    assert_eq!(cells[2], "Running");
    // RESTARTS is a string column, as kube-apiserver's (`5 (3m ago)` when a container
    // has terminated before).
    assert_eq!(cells[3], "5");
    assert!(
        cells[4].as_str().unwrap().contains('y'),
        "created in 2020: {}",
        cells[4]
    );
    assert_eq!(cells[6], "10.0.0.9");
}

#[test]
fn label_router_and_prefer_gateway_print_their_decisions() {
    let out = run_ok(
        &build::plugin("label-router"),
        "pod-router",
        Some(r#"{"rules":[{"namespace":"edge-*","leaf":"leaf-2"}]}"#),
        r#"{"tenant":"a","namespace":"edge-1","pod":"p","verb":"logs","leaves":["leaf-1","leaf-2"]}"#,
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out).unwrap(),
        serde_json::json!({"leaf": "leaf-2"})
    );

    let out = run_ok(
        &build::plugin("prefer-gateway"),
        "address-rewriter",
        None,
        r#"{"node":"vn","leaf":"leaf-1","gateway_address":"192.0.2.1",
            "addresses":[{"type":"Hostname","address":"h"},{"type":"InternalIP","address":"10.0.0.1"}]}"#,
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out).unwrap(),
        serde_json::json!([
            {"type": "InternalIP", "address": "192.0.2.1"},
            {"type": "Hostname", "address": "h"},
            {"type": "InternalIP", "address": "10.0.0.1"}
        ])
    );
}

#[test]
fn check_names_the_world_or_what_is_missing() {
    let redact = build::plugin("redact");
    let out = leafgate(&["plugin", "check", redact.to_str().unwrap()], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("fits the log-filter world"),
        "{}",
        text(&out.stdout)
    );

    let out = leafgate(
        &[
            "plugin",
            "check",
            redact.to_str().unwrap(),
            "--world",
            "table-formatter",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("missing export `format`") && err.contains("log-filter world"),
        "{err}"
    );
}

#[test]
fn run_reports_a_plugin_failure_plainly() {
    let faulty = build::fault_plugin("faulty-router");
    let req =
        |pod: &str| format!(r#"{{"namespace":"n","pod":"{pod}","verb":"exec","leaves":["l"]}}"#);
    let out = leafgate(
        &[
            "plugin",
            "run",
            faulty.to_str().unwrap(),
            "--world",
            "pod-router",
        ],
        &req("spin-1"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("timeout: deadline exceeded"),
        "{}",
        text(&out.stderr)
    );

    let out = leafgate(
        &[
            "plugin",
            "run",
            faulty.to_str().unwrap(),
            "--world",
            "pod-router",
            // A trap, not the deadline, must end this call even on a busy machine.
            "--deadline",
            "2s",
        ],
        &req("trap-1"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("told to trap on trap-1"),
        "{}",
        text(&out.stderr)
    );

    let args = [
        "plugin",
        "run",
        faulty.to_str().unwrap(),
        "--world",
        "pod-router",
        "--memory",
        "8MiB",
        "--deadline",
        "2s",
    ];
    let out = leafgate(&args, &req("bomb-1"));
    assert!(
        text(&out.stderr).contains("memory: memory limit reached"),
        "{}",
        text(&out.stderr)
    );
}

/// `leafgate check` on a config of one tenant with `hooks` (TOML lines of its
/// `[tenant.plugins]`): (success, stdout, stderr).
fn check_tenant(hooks: &str) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("leafgate.toml");
    std::fs::write(
        &config,
        format!("[[tenant]]\nname = \"acme\"\n[tenant.plugins]\n{hooks}\n"),
    )
    .unwrap();
    let out = leafgate(&["check", "--config", config.to_str().unwrap()], "");
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// `leafgate check` says what each tenant's plugin needs (component size, start-up,
/// memory per warm instance) against its limits, and names the key to raise where it
/// does not fit: a start-up over `memory` or past `startup` fails the check, per-call
/// isolation of a plugin whose start-up is longer than its deadline is a warning.
#[test]
fn check_says_what_each_plugin_needs_and_the_key_to_raise() {
    let python = build::lang_plugin(build::Lang::Python, "label_router", "pod-router");
    let redact = build::plugin("redact");
    let stuck = build::fault_plugin("stuck-start");
    let hook = |key: &str, path: &Path, extra: &str| {
        format!(
            "{key} = {{ path = {:?}{extra} }}\n",
            path.display().to_string()
        )
    };

    let (ok, out, err) = check_tenant(&format!(
        "{}{}",
        hook("pod_router", &python, ""),
        hook("log_filter", &redact, "")
    ));
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    for (line, key, plugin) in [
        (
            lines[0],
            "pod_router",
            "label_router-pod-router, pod-router",
        ),
        (lines[1], "log_filter", "redact, log-filter"),
    ] {
        let head = format!("tenant acme: tenant[0].plugins.{key} ({plugin}): component ");
        assert!(line.starts_with(&head), "want {head}\ngot {line}");
        for part in [
            "of its 1s `startup`",
            "per warm instance of its 64.0 MiB `memory`",
            "up to 8 `instances`",
            "each call under its 10.0 ms `deadline` (start-up outside it): fits",
        ] {
            assert!(line.contains(part), "{part}: {line}");
        }
    }
    assert!(lines[2].ends_with(": ok"), "{out}");

    let (ok, _, err) = check_tenant(&hook("pod_router", &python, ", memory = \"1MiB\""));
    assert!(!ok);
    assert!(
        err.contains("tenant[0].plugins.pod_router")
            && err.contains("its start-up needs more memory than its limit")
            && err.contains("raise `memory`"),
        "{err}"
    );

    let started = std::time::Instant::now();
    let (ok, _, err) = check_tenant(&hook("pod_router", &stuck, ", startup = \"200ms\""));
    assert!(!ok);
    assert!(
        err.contains("tenant[0].plugins.pod_router")
            && err.contains("start-up limit exceeded")
            && err.contains("raise `startup`"),
        "{err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));

    let (ok, out, err) = check_tenant(&hook(
        "pod_router",
        &python,
        ", isolation = \"per-call\", deadline = \"1ms\"",
    ));
    assert!(ok, "a warning, not an error: {err}");
    assert!(
        out.contains(": tight: with isolation = \"per-call\""),
        "{out}"
    );
    assert!(
        err.contains("warning: tenant[0].plugins.pod_router: with isolation")
            && err.contains("raise `deadline`"),
        "{err}"
    );
}
