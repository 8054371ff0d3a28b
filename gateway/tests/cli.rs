//! The `leafgate` binary as users run it: `check` on good and broken configs.

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
