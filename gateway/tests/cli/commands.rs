//! The `leafgate` binary as users run it: `check` on good and broken configs, and `run`
//! draining on SIGTERM.

use std::path::PathBuf;
use std::process::Command;

fn leafgate() -> Command {
    Command::new(env!("CARGO_BIN_EXE_leafgate"))
}

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

/// Runs `leafgate check` on `config`; returns (success, stderr).
fn check(config: &str) -> (bool, String) {
    let out = leafgate()
        .arg("check")
        .arg("--config")
        .arg(repo(config))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_default_config_checks_clean() {
    let (ok, stderr) = check("config/leafgate.toml");
    assert!(ok, "{stderr}");
}

#[test]
fn broken_configs_fail_with_key_and_line_column() {
    let cases = [
        (
            "tests/configs/unknown-key.toml",
            ":4:1: listener[0].colour: unknown field `colour`",
        ),
        (
            "tests/configs/bad-rate.toml",
            ":7:32: tenant[0].bandwidth.per_connection: `10 furlongs` has an unknown unit",
        ),
        (
            "tests/configs/duplicate-route.toml",
            ":12:8: route[1]: duplicate route: host `app.example.com` prefix /api is already routed at 7:8",
        ),
        (
            "tests/configs/missing-cert.toml",
            ":4:16: listener[0].tls.cert: cannot read",
        ),
    ];
    for (config, expected) in cases {
        let (ok, stderr) = check(config);
        assert!(!ok, "{config} passed the check");
        assert!(
            stderr.contains(expected),
            "{config}: expected `{expected}` in:\n{stderr}"
        );
    }
}

#[test]
fn every_error_in_a_file_is_reported_at_once() {
    let (ok, stderr) = check("tests/configs/missing-cert.toml");
    assert!(!ok);
    assert!(stderr.contains(":4:16: listener[0].tls.cert"), "{stderr}");
    assert!(stderr.contains(":4:50: listener[0].tls.key"), "{stderr}");
    assert!(stderr.contains("2 error(s)"), "{stderr}");
}

/// A `leafgate run` process, killed when dropped.
struct Running {
    child: std::process::Child,
    admin: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `leafgate run` on `config` and reads the admin address from its JSON log.
fn run(config: &std::path::Path) -> Running {
    use std::io::BufRead;
    let mut child = leafgate()
        .args(["--log-format", "json", "run", "--config"])
        .arg(config)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = std::io::BufReader::new(stderr).lines();
    let admin = loop {
        let line = lines
            .next()
            .expect("leafgate exited before its admin listener started")
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        if v["fields"]["message"] == "admin listening" {
            break v["fields"]["addr"].as_str().unwrap().to_string();
        }
    };
    // Keep draining the log so the process never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    Running { child, admin }
}

#[test]
fn leafgate_reload_reports_success_and_errors_with_line_column() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("leafgate.toml");
    let good =
        "[admin]\nbind = \"127.0.0.1:0\"\n\n[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n";
    std::fs::write(&config, good).unwrap();
    let gw = run(&config);

    let out = leafgate()
        .args(["reload", "--admin", &gw.admin])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("reloaded: generation"));

    // The file watcher may reload first; the explicit reload answers with the same error.
    std::fs::write(&config, format!("{good}unknown_thing = 1\n")).unwrap();
    let out = leafgate()
        .args(["reload", "--admin", &gw.admin])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("leafgate.toml:7:1: listener[0].unknown_thing: unknown field"),
        "{stderr}"
    );
    assert!(stderr.contains("keeps its running config"), "{stderr}");
}

/// A config of `tenants` tenants with all four hooks, each tenant's `[tenant.plugins]`
/// starting with `extra`; the plugin file is a placeholder (the slot check runs before any
/// plugin is compiled). Returns `leafgate check`'s (success, stderr).
fn check_plugin_tenants(tenants: usize, extra: &str) -> (bool, String, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.wasm"), b"").unwrap();
    let mut toml = String::new();
    for i in 0..tenants {
        toml.push_str(&format!(
            "[[tenant]]\nname = \"t{i}\"\n[tenant.plugins]\n{extra}pod_router = \"p.wasm\"\naddress_rewriter = \"p.wasm\"\nlog_filter = \"p.wasm\"\ntable_formatter = \"p.wasm\"\n\n"
        ));
    }
    let config = dir.path().join("leafgate.toml");
    std::fs::write(&config, toml).unwrap();
    let out = leafgate()
        .arg("check")
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        config,
    )
}

#[test]
fn a_config_needing_more_plugin_slots_than_the_runtime_has_fails_check_at_the_key() {
    // 2 tenants x 4 hooks x 200 instances = 1600 > 1000: the second tenant overflows.
    let (ok, stderr, config) = check_plugin_tenants(2, "instances = 200\n");
    assert!(!ok, "the check passed: {stderr}");
    let expected = format!(
        "{}:13:13: tenant[1].plugins.instances: the plugins need 1600 instance slots",
        config.display()
    );
    assert!(stderr.contains(&expected), "want {expected}\ngot {stderr}");
    assert!(stderr.contains("more than the 1000"), "{stderr}");

    // With the default (8 per hook), 31 fully-hooked tenants fit and the 32nd does not.
    let (_, stderr, _) = check_plugin_tenants(31, "");
    assert!(
        !stderr.contains("instance slots"),
        "31 tenants fit: {stderr}"
    );
    let (ok, stderr, _) = check_plugin_tenants(32, "");
    assert!(!ok);
    assert!(
        stderr.contains("tenant[31].plugins.instances: the plugins need 1024 instance slots"),
        "{stderr}"
    );
}

/// A port that was free a moment ago (the kernel does not hand it out again at once).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One HTTP/1.1 GET over a fresh connection; the status code, or `None` when nothing
/// answered.
fn status_of(port: u16, path: &str) -> Option<u16> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    conn.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: drain.example\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    conn.read_to_string(&mut answer).ok()?;
    answer.split(' ').nth(1)?.parse().ok()
}

/// A config with an admin server on `admin` and one listener on `web` answering every
/// request itself, draining for `shutdown_delay` on SIGTERM; its path.
fn drain_config(dir: &std::path::Path, admin: u16, web: u16, shutdown_delay: &str) -> PathBuf {
    let config = dir.join("leafgate.toml");
    std::fs::write(
        &config,
        format!(
            r#"
            [admin]
            bind = "127.0.0.1:{admin}"
            [timeouts]
            shutdown_delay = "{shutdown_delay}"
            [[listener]]
            name = "web"
            bind = "127.0.0.1:{web}"
            [[route]]
            host = "*"
            direct = {{ status = 200, body = "served" }}
            "#
        ),
    )
    .unwrap();
    config
}

/// Sends SIGTERM to `child`.
#[allow(
    unsafe_code,
    reason = "std cannot send SIGTERM (Child::kill is SIGKILL); kill(2) on our own child"
)]
fn sigterm(child: &std::process::Child) {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) with a pid we spawned and own.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
}

/// Waits for `child` to exit, at most 15 s after `signalled`.
fn exit_after(
    child: &mut std::process::Child,
    signalled: std::time::Instant,
) -> std::process::ExitStatus {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            signalled.elapsed() < std::time::Duration::from_secs(15),
            "leafgate did not exit after SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn sigterm_turns_readyz_503_while_requests_are_still_served_then_exits() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let (admin, web) = (free_port(), free_port());
    let config = drain_config(dir.path(), admin, web, "2s");
    let mut child = leafgate()
        .arg("run")
        .arg("--config")
        .arg(&config)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while status_of(admin, "/readyz") != Some(200) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "leafgate did not become ready"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(status_of(web, "/"), Some(200));

    sigterm(&child);
    let signalled = Instant::now();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(status_of(admin, "/readyz"), Some(503), "not draining");
    // Load balancers still send for a while: those requests are served.
    assert_eq!(
        status_of(web, "/"),
        Some(200),
        "a request during shutdown_delay"
    );
    assert!(signalled.elapsed() < Duration::from_secs(2));

    let exit = exit_after(&mut child, signalled);
    assert!(exit.success(), "{exit:?}");
    assert!(
        signalled.elapsed() >= Duration::from_secs(2),
        "it waited out shutdown_delay"
    );
    assert_eq!(status_of(web, "/"), None, "the listener is closed");
}

/// A SIGTERM that arrives while the gateway is still starting (its admin listening, its
/// listeners not yet) is acted on once it has started: the gateway drains and exits
/// cleanly. A signal that came before leafgate listened for it would end the process at
/// once, killed, with nothing drained.
#[test]
fn a_sigterm_while_the_gateway_starts_drains_it_once_started() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let config = drain_config(dir.path(), free_port(), free_port(), "1s");
    let mut child = leafgate()
        .env("RUST_LOG", "info")
        .arg("run")
        .arg("--config")
        .arg(&config)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut log = Vec::new();
    // The admin server is the first thing the gateway starts; its listeners come after.
    loop {
        let line = lines
            .next()
            .expect("leafgate logged that its admin listens")
            .unwrap();
        let admin_up = line.contains("admin listening");
        log.push(line);
        if admin_up {
            break;
        }
    }
    sigterm(&child);
    let signalled = std::time::Instant::now();
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let exit = exit_after(&mut child, signalled);
    log.extend(rest.join().unwrap());
    let log = log.join("\n");
    assert_eq!(exit.signal(), None, "killed by the signal: {log}");
    assert!(exit.success(), "{exit:?}: {log}");
    assert!(log.contains("draining"), "{log}");
}

#[test]
fn check_names_the_leaf_kubeconfig_problems_at_their_keys() {
    let dir = tempfile::tempdir().unwrap();
    let exec = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\nusers:\n- name: eks\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: eks\ncurrent-context: c\n";
    std::fs::write(dir.path().join("exec.kubeconfig"), exec).unwrap();
    let config = dir.path().join("leafgate.toml");
    std::fs::write(
        &config,
        "[[leaf]]\nname = \"gone\"\nkubeconfig = \"missing.kubeconfig\"\n\
         [[leaf]]\nname = \"ctx\"\nkubeconfig = \"exec.kubeconfig\"\ncontext = \"nope\"\n\
         [[leaf]]\nname = \"exec\"\nkubeconfig = \"exec.kubeconfig\"\n",
    )
    .unwrap();
    let out = leafgate()
        .arg("check")
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    for expected in [
        ":3:14: leaf[0].kubeconfig: cannot read",
        ":7:11: leaf[1].context: context `nope`",
        ":10:14: leaf[2].kubeconfig: users[eks].user.exec: exec credential plugins are not supported",
    ] {
        assert!(
            stderr.contains(expected),
            "missing {expected:?} in:\n{stderr}"
        );
    }
}
