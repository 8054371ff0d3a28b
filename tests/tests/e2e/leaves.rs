//! Leaf clusters against kubesim over real TLS: client-certificate, token and rotated
//! token-file auth, a wrong CA, kubeconfig errors at line:column, and the pod index
//! following pods added, relabelled, deleted, across a simulator restart and on two leaves.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Empty};
use kubesim::{Credential, KubeSim};
use leafgate::kubernetes::Held;
use leafgate_tests::certs::TestCa;
use leafgate_tests::client::get;
use leafgate_tests::config::Leaf;
use leafgate_tests::{Config, TestGateway};
use serde_json::{Value, json};

/// Polls until `check` holds; returns how long it took. Panics after `limit`.
async fn within<F>(limit: Duration, what: &str, mut check: F) -> Duration
where
    F: FnMut() -> bool,
{
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    started.elapsed()
}

/// A gateway with an admin listener and `leaves` (`(name, kubeconfig file)`), the
/// kubeconfigs already written in `dir`.
async fn gateway(dir: tempfile::TempDir, leaves: &[(&str, &str)]) -> TestGateway {
    let mut config = Config::new().admin();
    for (name, kubeconfig) in leaves {
        config = config.leaf(Leaf::new(name, kubeconfig));
    }
    TestGateway::start_in(dir, config).await
}

fn pod(ns: &str, name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": ns, "name": name, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "busybox"}, {"name": "sidecar", "image": "envoy"}]}
    })
}

fn holders(gw: &TestGateway, ns: &str, name: &str) -> Vec<Held> {
    gw.gateway.snapshot().pods.holders(ns, name)
}

async fn status_leaf(gw: &TestGateway, name: &str) -> Value {
    let status = get(gw.admin(), "admin", "/status").await.json();
    status["leaves"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == name)
        .unwrap_or_else(|| panic!("no leaf {name} in /status: {status:#}"))
        .clone()
}

async fn wait_synced(gw: &TestGateway, name: &str) {
    let started = Instant::now();
    loop {
        let leaf = status_leaf(gw, name).await;
        if leaf["synced"] == true {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "leaf {name} not synced: {leaf:#}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Sends `GET path` through the leaf with the caller's own `Authorization`, which must
/// not reach the leaf; returns the status.
async fn send_through(gw: &TestGateway, leaf: &str, path: &str) -> u16 {
    let leaf = gw.gateway.snapshot().leaves[leaf].clone();
    let req = Request::get(path)
        .header("authorization", "Bearer the-callers-own")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let res = leaf.send(req).await.unwrap();
    let status = res.status().as_u16();
    res.into_body().collect().await.unwrap();
    status
}

/// The `Authorization` headers and users kubesim recorded for requests to `path`.
fn recorded(sim: &KubeSim, path: &str) -> Vec<(Vec<String>, Option<String>)> {
    sim.requests()
        .into_iter()
        .filter(|r| r.path == path)
        .map(|r| {
            let auth = r
                .headers
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case("authorization"))
                .map(|(_, v)| v.clone())
                .collect();
            (auth, r.user)
        })
        .collect()
}

#[tokio::test]
async fn client_certificate_leaf_watches_and_forwards_without_the_callers_credentials() {
    let sim = KubeSim::builder().start().await.unwrap();
    sim.create(pod("apps", "web-0", json!({"app": "web"})))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    sim.kubeconfig(
        &Credential::ClientCert("leafgate".into()),
        &dir.path().join("leaf.kubeconfig"),
    )
    .unwrap();
    let gw = gateway(dir, &[("leaf-1", "leaf.kubeconfig")]).await;
    wait_synced(&gw, "leaf-1").await;
    let leaf = status_leaf(&gw, "leaf-1").await;
    assert_eq!(leaf["auth"], "client-certificate");
    assert_eq!(leaf["pods"], 1);
    assert_eq!(leaf["insecure_skip_tls_verify"], false);

    let held = holders(&gw, "apps", "web-0");
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].leaf(), "leaf-1");
    assert_eq!(held[0].labels()["app"], "web");
    assert_eq!(
        held[0].containers().collect::<Vec<_>>(),
        ["main", "sidecar"]
    );
    assert!(held[0].uid().is_some_and(|u| !u.is_empty()));

    let path = "/api/v1/namespaces/apps/pods/web-0";
    assert_eq!(send_through(&gw, "leaf-1", path).await, 200);
    let seen = recorded(&sim, path);
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0], (vec![], Some("leafgate".to_string())));

    let metrics = get(gw.admin(), "admin", "/metrics").await.text();
    assert!(
        metrics.contains("leafgate_leaf_up{leaf=\"leaf-1\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("leafgate_leaf_pods{leaf=\"leaf-1\"} 1"));
    assert!(metrics.contains("leafgate_leaf_watch_restarts_total{leaf=\"leaf-1\"} 0"));

    // A reload that changes nothing keeps the leaf: same connections, same reflector.
    let before = gw.gateway.snapshot().leaves["leaf-1"].clone();
    gw.gateway.reload().await.unwrap();
    assert!(Arc::ptr_eq(
        &before,
        &gw.gateway.snapshot().leaves["leaf-1"]
    ));
    assert_eq!(holders(&gw, "apps", "web-0").len(), 1);
}

#[tokio::test]
async fn token_leaf_sends_its_token_in_place_of_the_callers() {
    let sim = KubeSim::builder()
        .token("leaf-token", "leafgate-sa")
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    sim.kubeconfig(
        &Credential::Token("leaf-token".into()),
        &dir.path().join("leaf.kubeconfig"),
    )
    .unwrap();
    let gw = gateway(dir, &[("leaf-1", "leaf.kubeconfig")]).await;
    wait_synced(&gw, "leaf-1").await;
    assert_eq!(status_leaf(&gw, "leaf-1").await["auth"], "token");
    let path = "/api/v1/namespaces/default/pods";
    assert_eq!(send_through(&gw, "leaf-1", path).await, 200);
    assert_eq!(
        recorded(&sim, path),
        [(
            vec!["Bearer leaf-token".to_string()],
            Some("leafgate-sa".to_string())
        )]
    );
}

/// A kubeconfig naming its CA and token by file, relative to itself.
fn token_file_kubeconfig(sim: &KubeSim, dir: &Path, token: &str) {
    std::fs::write(dir.join("ca.pem"), sim.ca_pem()).unwrap();
    std::fs::write(dir.join("token"), format!("{token}\n")).unwrap();
    std::fs::write(
        dir.join("leaf.kubeconfig"),
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: {}\n    certificate-authority: ca.pem\nusers:\n- name: sa\n  user:\n    tokenFile: token\ncontexts:\n- name: sim\n  context:\n    cluster: sim\n    user: sa\ncurrent-context: sim\n",
            sim.url()
        ),
    )
    .unwrap();
}

#[tokio::test]
async fn a_rotated_token_file_is_used_by_the_next_request() {
    let sim = KubeSim::builder()
        .token("token-1", "sa-1")
        .token("token-2", "sa-2")
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    token_file_kubeconfig(&sim, dir.path(), "token-1");
    let token = dir.path().join("token");
    let gw = gateway(dir, &[("leaf-1", "leaf.kubeconfig")]).await;
    wait_synced(&gw, "leaf-1").await;
    assert_eq!(status_leaf(&gw, "leaf-1").await["auth"], "token-file");
    let path = "/api/v1/namespaces/default/pods/x";
    send_through(&gw, "leaf-1", path).await;

    // Rotated the way the kubelet does it: the new file renamed over the old one.
    let next = token.with_extension("new");
    std::fs::write(&next, "token-2\n").unwrap();
    std::fs::rename(&next, &token).unwrap();
    send_through(&gw, "leaf-1", path).await;
    let users: Vec<_> = recorded(&sim, path).into_iter().map(|(_, u)| u).collect();
    assert_eq!(users, [Some("sa-1".into()), Some("sa-2".into())]);
    // No reload was needed (nor done): the token file is not part of the leaf's identity.
    assert_eq!(gw.gateway.snapshot().generation, 1);
}

#[tokio::test]
async fn a_wrong_ca_shows_the_tls_reason_and_insecure_skip_verify_is_warned() {
    let real = KubeSim::builder().token("t", "u").start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A CA that did not sign the server's certificate, named by file.
    TestCa::new("some-other-ca").write(dir.path(), "other-ca.pem");
    let wrong = real
        .kubeconfig_yaml(&Credential::Token("t".into()))
        .unwrap()
        .replace(
            "    certificate-authority-data:",
            "    certificate-authority: other-ca.pem\n    x-unused:",
        );
    std::fs::write(dir.path().join("wrong.kubeconfig"), wrong).unwrap();
    let insecure = real
        .kubeconfig_yaml(&Credential::Token("t".into()))
        .unwrap()
        .replace(
            "    certificate-authority-data:",
            "    insecure-skip-tls-verify: true\n    x-unused:",
        );
    std::fs::write(dir.path().join("insecure.kubeconfig"), insecure).unwrap();
    let gw = gateway(
        dir,
        &[
            ("wrong-ca", "wrong.kubeconfig"),
            ("insecure", "insecure.kubeconfig"),
        ],
    )
    .await;
    wait_synced(&gw, "insecure").await;
    let insecure = status_leaf(&gw, "insecure").await;
    assert_eq!(insecure["insecure_skip_tls_verify"], true);
    assert!(
        insecure["warnings"][0]
            .as_str()
            .unwrap()
            .contains("insecure-skip-tls-verify"),
        "{insecure:#}"
    );

    let started = Instant::now();
    let leaf = loop {
        let leaf = status_leaf(&gw, "wrong-ca").await;
        if leaf["last_error"].is_string() {
            break leaf;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{leaf:#}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(leaf["synced"], false);
    let error = leaf["last_error"].as_str().unwrap();
    assert!(
        error.contains("invalid peer certificate") && error.contains("UnknownIssuer"),
        "{error}"
    );
    let metrics = get(gw.admin(), "admin", "/metrics").await.text();
    assert!(
        metrics.contains("leafgate_leaf_up{leaf=\"wrong-ca\"} 0"),
        "{metrics}"
    );
}

#[tokio::test]
async fn pods_added_relabelled_and_deleted_are_seen_within_a_second() {
    let sim = KubeSim::builder().token("t", "u").start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    sim.kubeconfig(
        &Credential::Token("t".into()),
        &dir.path().join("leaf.kubeconfig"),
    )
    .unwrap();
    let gw = gateway(dir, &[("leaf-1", "leaf.kubeconfig")]).await;
    wait_synced(&gw, "leaf-1").await;
    let second = Duration::from_secs(1);

    sim.create(pod(
        "apps",
        "api-0",
        json!({"app": "api", "track": "stable"}),
    ))
    .unwrap();
    let added = within(second, "added", || holders(&gw, "apps", "api-0").len() == 1).await;

    sim.patch(
        "v1",
        "Pod",
        "apps",
        "api-0",
        &json!({"metadata": {"labels": {"track": "canary"}}}),
        false,
    )
    .unwrap();
    let relabelled = within(second, "relabelled", || {
        holders(&gw, "apps", "api-0")
            .first()
            .is_some_and(|h| h.labels().get("track").map(String::as_str) == Some("canary"))
    })
    .await;

    sim.delete("v1", "Pod", "apps", "api-0").unwrap();
    let deleted = within(second, "deleted", || {
        holders(&gw, "apps", "api-0").is_empty()
    })
    .await;
    println!("seen after: added {added:?}, relabelled {relabelled:?}, deleted {deleted:?}");
}

#[tokio::test]
async fn the_index_resyncs_after_the_simulator_restarts() {
    let mut sim = KubeSim::builder().token("t", "u").start().await.unwrap();
    sim.create(pod("apps", "before", json!({}))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    sim.kubeconfig(
        &Credential::Token("t".into()),
        &dir.path().join("leaf.kubeconfig"),
    )
    .unwrap();
    let gw = gateway(dir, &[("leaf-1", "leaf.kubeconfig")]).await;
    wait_synced(&gw, "leaf-1").await;
    let limit = Duration::from_secs(15);

    // A quiet restart: nothing changed, so the resumed watch yields no event; the leaf must
    // still be seen failing, then synced again once the server accepts the watch.
    sim.stop().await;
    let started = Instant::now();
    while status_leaf(&gw, "leaf-1").await["synced"] == true {
        assert!(
            started.elapsed() < limit,
            "the broken watch was not noticed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sim.restart().await.unwrap();
    wait_synced(&gw, "leaf-1").await;

    // Changes while the server is down reach the index once it is back: the watch
    // resumes from its resourceVersion and replays them.
    sim.stop().await;
    sim.delete("v1", "Pod", "apps", "before").unwrap();
    sim.create(pod("apps", "during", json!({}))).unwrap();
    sim.restart().await.unwrap();
    let resumed = within(limit, "resumed", || {
        holders(&gw, "apps", "during").len() == 1 && holders(&gw, "apps", "before").is_empty()
    })
    .await;

    // History compacted while down: the resumed watch gets 410 Gone and relists.
    sim.stop().await;
    sim.delete("v1", "Pod", "apps", "during").unwrap();
    sim.create(pod("apps", "after", json!({}))).unwrap();
    sim.compact();
    sim.restart().await.unwrap();
    let relisted = within(limit, "relisted", || {
        holders(&gw, "apps", "after").len() == 1 && holders(&gw, "apps", "during").is_empty()
    })
    .await;
    wait_synced(&gw, "leaf-1").await;
    let leaf = status_leaf(&gw, "leaf-1").await;
    assert_eq!(leaf["pods"], 1, "{leaf:#}");
    assert!(leaf["watch_restarts"].as_u64().unwrap() >= 1, "{leaf:#}");
    println!("resynced after: resumed {resumed:?}, relisted {relisted:?}");
}

#[tokio::test]
async fn two_leaves_holding_the_same_pod_are_both_reported() {
    let one = KubeSim::builder().token("t", "u").start().await.unwrap();
    let two = KubeSim::builder().token("t", "u").start().await.unwrap();
    one.create(pod("shared", "db-0", json!({"leaf": "one"})))
        .unwrap();
    two.create(pod("shared", "db-0", json!({"leaf": "two"})))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cred = Credential::Token("t".into());
    one.kubeconfig(&cred, &dir.path().join("one.kubeconfig"))
        .unwrap();
    two.kubeconfig(&cred, &dir.path().join("two.kubeconfig"))
        .unwrap();
    let gw = gateway(
        dir,
        &[("leaf-1", "one.kubeconfig"), ("leaf-2", "two.kubeconfig")],
    )
    .await;
    within(Duration::from_secs(10), "both leaves", || {
        holders(&gw, "shared", "db-0").len() == 2
    })
    .await;
    let mut held: Vec<(String, String)> = holders(&gw, "shared", "db-0")
        .iter()
        .map(|h| (h.leaf().to_string(), h.labels()["leaf"].clone()))
        .collect();
    held.sort();
    assert_eq!(
        held,
        [
            ("leaf-1".to_string(), "one".to_string()),
            ("leaf-2".to_string(), "two".to_string())
        ]
    );
    // The whole listing, per leaf, from the reflectors' stores.
    let snapshot = gw.gateway.snapshot();
    let total: usize = snapshot.leaves.values().map(|l| l.pods().len()).sum();
    assert_eq!(total, 2);
}

#[tokio::test]
async fn a_changed_kubeconfig_rebuilds_the_leaf_and_a_removed_leaf_leaves_the_index() {
    let sim = KubeSim::builder().token("t", "u").start().await.unwrap();
    sim.create(pod("apps", "web-0", json!({}))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("leaf.kubeconfig");
    sim.kubeconfig(&Credential::Token("t".into()), &kubeconfig)
        .unwrap();
    let gw = gateway(dir, &[("leaf-1", "leaf.kubeconfig")]).await;
    wait_synced(&gw, "leaf-1").await;
    let first = gw.gateway.snapshot().leaves["leaf-1"].clone();

    // Another credential: a new leaf (new TLS setup, new reflector); the old one's pods
    // leave the index once it is gone, so the pod is held once, not twice.
    sim.kubeconfig(&Credential::ClientCert("leafgate".into()), &kubeconfig)
        .unwrap();
    gw.gateway.reload().await.unwrap();
    let second = gw.gateway.snapshot().leaves["leaf-1"].clone();
    assert!(!Arc::ptr_eq(&first, &second));
    assert_eq!(second.auth_kind(), "client-certificate");
    drop((first, second));
    wait_synced(&gw, "leaf-1").await;
    within(Duration::from_secs(5), "one copy after the rebuild", || {
        holders(&gw, "apps", "web-0").len() == 1
    })
    .await;

    // The leaf removed from the config: its pods and its metric series go.
    let admin_only = Config::new().admin();
    std::fs::write(&gw.config, admin_only.to_string()).unwrap();
    gw.gateway.reload().await.unwrap();
    within(Duration::from_secs(5), "pods gone with the leaf", || {
        gw.gateway.snapshot().pods.is_empty()
    })
    .await;
    let metrics = get(gw.admin(), "admin", "/metrics").await.text();
    assert!(!metrics.contains("leaf=\"leaf-1\""), "{metrics}");
}
