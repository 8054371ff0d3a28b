//! `examples/`: every folder holds a config `leafgate check` accepts, as a user runs it,
//! and the README lists it.
//!
//! The repository holds each example's TOML, kubeconfigs and tokens files, but no
//! certificates, keys or plugins: keys do not belong in a repository (not even test ones:
//! secret scanners and copy-paste into production), certificates expire, and plugins are
//! built from `plugins/`. So the test copies each folder into a temporary one and makes
//! what the config names there: a certificate and key from a test CA wherever a table has
//! `cert` and `key`, that CA wherever it says `client_ca` or `ca` (or a kubeconfig says
//! `certificate-authority`), and the built plugin wherever it names a `.wasm` file.
//! `examples/README.md` says how a user makes the same files.
//!
//! `examples/gateway-api/` is applied besides: its manifest with the real kubectl to a
//! kubesim root, its Gateway Accepted and Programmed, its routes Accepted with their
//! references resolved, and each rule serving as its comment says.

use std::path::{Path, PathBuf};
use std::process::Output;

use leafgate_tests::certs::TestCa;
use leafgate_tests::gateway_api::{Expect, Redirected, Suite, expect, expect_tls, latest};
use leafgate_tests::plugins::{plugin, repo_root};
use toml::Value;

/// The examples the README promises, one per use.
const EXAMPLES: [&str; 5] = ["gateway-api", "ingress", "kube-api", "node-api", "routing"];

/// What the examples read from the pod's environment (the downward API).
const ENV: [(&str, &str); 2] = [("POD_IP", "10.1.2.3"), ("POD_NAME", "leafgate-0")];

#[test]
fn every_example_passes_leafgate_check_and_is_listed_in_the_readme() {
    let examples = repo_root().join("examples");
    let mut found: Vec<String> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(found, EXAMPLES, "one folder per example under examples/");

    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    for name in EXAMPLES {
        assert!(
            readme.contains(&format!("examples/{name}/")),
            "README.md does not list examples/{name}/"
        );
        let copy = ready_copy(&examples.join(name));
        let out = check(&copy.path().join("leafgate.toml"));
        assert!(
            out.status.success(),
            "leafgate check rejects examples/{name}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).ends_with(": ok\n"),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

/// The check above loads what the config names: a copy missing one certificate fails,
/// naming it.
#[test]
fn an_example_missing_a_named_file_fails_the_check() {
    let copy = ready_copy(&repo_root().join("examples/routing"));
    std::fs::remove_file(copy.path().join("certs/api.pem")).unwrap();
    let out = check(&copy.path().join("leafgate.toml"));
    assert!(!out.status.success(), "a missing certificate was accepted");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("certs/api.pem"), "{stderr}");
}

/// `examples/gateway-api/` as a user applies it (range 166): its tenants in the suite's
/// config, its manifest applied, the certificate it names made as its comment says, pods
/// for its Services. The Gateway is Accepted and Programmed, both routes Accepted with
/// their references resolved, and every rule does what it says: plain HTTP redirected to
/// HTTPS, the canary header to v2, the API's header modifiers, the catalogue's rewrite,
/// the split.
#[tokio::test]
async fn the_gateway_api_example_is_accepted_programmed_and_served() {
    let example = repo_root().join("examples/gateway-api");
    let read = |f: &str| std::fs::read_to_string(example.join(f)).unwrap();
    let config: Value = toml::from_str(&read("leafgate.toml")).unwrap();
    let mut extra = leafgate_tests::Config::new();
    for tenant in config["tenant"].as_array().unwrap() {
        extra = extra.push("tenant", tenant.clone());
    }
    let mut suite = Suite::start(166, extra).await;
    suite.apply(&read("gateway-api.yaml")).await;
    let cert = suite.ca.issue(suite.dir(), "store", &["store.example.com"]);
    let secret =
        leafgate_tests::ingress::tls_secret("certs", "store-example-com", &cert.cert, &cert.key);
    suite.sim.create(secret).unwrap();
    suite.pods_for("store", "store-v1", "http", 2).await;
    suite.pods_for("store", "store-v2", "http", 1).await;
    let gateway = suite
        .until(
            "the example's Gateway programmed",
            "Gateway",
            "edge",
            "edge",
            |g| {
                let c = &g["status"]["conditions"];
                latest(g, c, "Accepted", true)
                    && latest(g, c, "Programmed", true)
                    && g["status"]["listeners"].as_array().is_some_and(|ls| {
                        ls.len() == 2
                            && ls
                                .iter()
                                .all(|l| latest(g, &l["conditions"], "Programmed", true))
                    })
            },
        )
        .await;
    let ip: std::net::IpAddr = gateway["status"]["addresses"][0]["value"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    for route in ["store-http", "store"] {
        for condition in ["Accepted", "ResolvedRefs"] {
            suite
                .route_parent("store", route, "edge", condition, true, condition)
                .await;
        }
    }
    let host = "store.example.com";
    let to_https = Redirected {
        scheme: "https",
        ..Redirected::default()
    };
    expect(
        (ip, 80).into(),
        &Expect::redirect(host, "/cart", 301, to_https),
    )
    .await;
    let at = |path| Expect::ok(host, path, "store-v1").namespace("store");
    for e in [
        Expect::ok(host, "/", "store-v2")
            .namespace("store")
            .headers(&[("env", "canary")]),
        at("/api/orders")
            .headers(&[("X-Debug", "1")])
            .received(&[("X-Edge", "leafgate")], &["X-Debug"])
            .answered(&[], &[("Cache-Control", "no-store")], &[]),
        at("/products/shoes").sent("", "/catalog/shoes"),
        Expect::ok(host, "/", "store-v").namespace("store"),
    ] {
        expect_tls((ip, 443).into(), suite.tls(), &e).await;
    }
}

/// Runs `leafgate check --config config` with the examples' environment.
fn check(config: &Path) -> Output {
    std::process::Command::new(leafgate_tests::binary::leafgate())
        .args(["check", "--config"])
        .arg(config)
        .envs(ENV)
        .output()
        .expect("leafgate runs")
}

/// A temporary copy of `example` with every certificate, key and plugin its config names.
fn ready_copy(example: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(example, dir.path());
    let text = std::fs::read_to_string(dir.path().join("leafgate.toml")).unwrap();
    let config: Value = toml::from_str(&text).unwrap();
    let ca = TestCa::new("examples CA");
    provide(&ca, dir.path(), &config);
    dir
}

/// Makes the files `value` (a part of the config in `dir`) names.
fn provide(ca: &TestCa, dir: &Path, value: &Value) {
    match value {
        Value::Table(table) => {
            if let (Some(cert), Some(key)) = (
                table.get("cert").and_then(Value::as_str),
                table.get("key").and_then(Value::as_str),
            ) {
                let hosts: Vec<&str> = table
                    .get("hosts")
                    .and_then(Value::as_array)
                    .map(|h| h.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_else(|| vec!["leafgate.example"]);
                ca.issue_to(&file(dir, cert), &file(dir, key), hosts[0], &hosts);
            }
            for ca_key in ["client_ca", "ca"] {
                if let Some(path) = table.get(ca_key).and_then(Value::as_str) {
                    std::fs::write(file(dir, path), &ca.cert_pem).unwrap();
                }
            }
            if let Some(kubeconfig) = table.get("kubeconfig").and_then(Value::as_str) {
                provide_kubeconfig(ca, &dir.join(kubeconfig));
            }
            table.values().for_each(|v| provide(ca, dir, v));
        }
        Value::Array(items) => items.iter().for_each(|v| provide(ca, dir, v)),
        Value::String(path) if Path::new(path).extension().is_some_and(|e| e == "wasm") => {
            let stem = Path::new(path).file_stem().unwrap().to_string_lossy();
            std::fs::copy(plugin(&stem.replace('_', "-")), file(dir, path)).unwrap();
        }
        _ => {}
    }
}

/// The CA files a committed kubeconfig names, beside it (the servers are made up, so
/// only that they parse as certificates matters).
fn provide_kubeconfig(ca: &TestCa, kubeconfig: &Path) {
    let text = std::fs::read_to_string(kubeconfig)
        .unwrap_or_else(|e| panic!("{}: {e}", kubeconfig.display()));
    let dir = kubeconfig.parent().unwrap();
    for line in text.lines() {
        if let Some(path) = line.trim().strip_prefix("certificate-authority:") {
            std::fs::write(file(dir, path.trim()), &ca.cert_pem).unwrap();
        }
    }
}

/// `path` under `dir`, its folder made.
fn file(dir: &Path, path: &str) -> PathBuf {
    let path = dir.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    path
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
