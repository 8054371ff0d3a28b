//! Ingress authors get only what is theirs: an Ingress cannot take a host (or a path on
//! it, a name under a wildcard, the catch-all) the TOML config routes, a host an older
//! Ingress of another namespace holds, a name a TOML certificate covers; its backends are
//! pod endpoints only; its annotations act only for its own tenant, within its limits.
//! Each refusal is checked where a client sees it (which upstream answers, which
//! certificate is served) and where the operator does (`/status`, Events, metrics).

use std::net::SocketAddr;
use std::time::Duration;

use http::StatusCode;
use kubesim::KubeSim;
use leafgate_tests::certs::TestCa;
use leafgate_tests::client::{get, tls_connect};
use leafgate_tests::config::{Kubernetes, Listener, Route, Tenant};
use leafgate_tests::ingress::{
    backend, backend_objects, eventually, ingress, ingress_class, list, path, root_kubeconfig,
    rule, service, service_port, simple_ingress, slice, tls_secret,
};
use leafgate_tests::{Config, TestGateway, TestUpstream};
use serde_json::{Value, json};

/// Long enough for a rebuild under a parallel test run on two shared cores.
const APPLIED: Duration = Duration::from_secs(10);

async fn root() -> KubeSim {
    let sim = KubeSim::builder().start().await.unwrap();
    sim.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "leafgate"}}))
        .unwrap();
    sim.create(ingress_class("leafgate", false)).unwrap();
    sim
}

/// A gateway on `sim` with `[kubernetes.ingress]` holding `ingress` as given: no
/// `allow_backends` unless the test writes it.
async fn gateway(sim: &KubeSim, ingress: Value, extra: Config) -> TestGateway {
    let dir = tempfile::tempdir().unwrap();
    root_kubeconfig(sim, dir.path(), "gw");
    let kubernetes = Kubernetes::new("root.kubeconfig")
        .identity("gw")
        .election("2s", "1s", "200ms")
        .ingress(ingress);
    TestGateway::start_in(dir, extra.admin().kubernetes(kubernetes)).await
}

/// The loopback test upstreams are reachable only when the operator opens loopback.
fn loopback_allowed() -> Value {
    json!({"allow_backends": ["127.0.0.0/8"]})
}

fn create(sim: &KubeSim, objects: impl IntoIterator<Item = Value>) {
    for o in objects {
        sim.create(o).unwrap();
    }
}

/// Which upstream answered (its `server` name), else the status and body.
async fn who(addr: SocketAddr, host: &str, p: &str) -> String {
    let a = get(addr, host, p).await;
    if a.status == StatusCode::OK && a.body.starts_with(b"{") {
        a.json()["server"].as_str().unwrap_or("?").to_string()
    } else {
        format!("{} {}", a.status.as_u16(), a.text().trim())
    }
}

async fn served(gw: &TestGateway, host: &str, p: &str, server: &str) {
    let web = gw.addr("web");
    eventually(
        &format!("{host}{p} served by {server}"),
        APPLIED,
        || async { who(web, host, p).await == server },
    )
    .await;
}

async fn status(gw: &TestGateway) -> Value {
    get(gw.admin(), "admin", "/status").await.json()["ingress"].clone()
}

/// `(ingress, host, certificate)` of each refusal `/status` lists.
async fn refused(gw: &TestGateway) -> Vec<(String, String, bool)> {
    let s = status(gw).await;
    s["refused"]
        .as_array()
        .unwrap_or_else(|| panic!("no refused list: {s}"))
        .iter()
        .map(|r| {
            (
                r["ingress"].as_str().unwrap().to_string(),
                r["host"].as_str().unwrap().to_string(),
                r["certificate"].as_bool().unwrap(),
            )
        })
        .collect()
}

/// Until a `HostTaken` Event on Ingress `ns/name` says `needle`.
async fn host_taken_event(sim: &KubeSim, ns: &str, name: &str, needle: &str) {
    eventually(
        &format!("a HostTaken Event on {ns}/{name}"),
        APPLIED,
        || async {
            list(sim, "v1", "Event").iter().any(|e| {
                e["involvedObject"]["namespace"] == ns
                    && e["involvedObject"]["name"] == name
                    && e["reason"] == "HostTaken"
                    && e["type"] == "Warning"
                    && e["message"].as_str().is_some_and(|m| m.contains(needle))
            })
        },
    )
    .await;
}

#[tokio::test]
async fn an_ingress_cannot_take_a_host_path_wildcard_name_or_catch_all_toml_routes() {
    let sim = root().await;
    let (toml, attacker) = (
        TestUpstream::start("toml").await,
        TestUpstream::start("attacker").await,
    );
    create(&sim, backend_objects("team-b", "grab", attacker.addr));
    create(
        &sim,
        [ingress(
            "team-b",
            "grab",
            Some("leafgate"),
            vec![
                rule(
                    "app.example",
                    vec![path("/metrics", "Prefix", backend("grab", 80))],
                ),
                rule(
                    "x.toml.example",
                    vec![path("/", "Prefix", backend("grab", 80))],
                ),
                rule("", vec![path("/metrics", "Prefix", backend("grab", 80))]),
                // Nobody else's: served, which tells the build has been applied.
                rule("b.example", vec![path("/", "Prefix", backend("grab", 80))]),
            ],
        )],
    );
    let config = Config::web()
        .route(
            Route::host("app.example")
                .name("login")
                .path("/login")
                .backend(toml.addr),
        )
        .route(
            Route::host("*.toml.example")
                .name("wild")
                .backend(toml.addr),
        )
        .route(Route::host("*").name("fallback").direct(404, "fallback"));
    let gw = gateway(&sim, loopback_allowed(), config).await;
    let web = gw.addr("web");
    served(&gw, "b.example", "/", "attacker").await;

    assert_eq!(who(web, "app.example", "/login").await, "toml");
    let metrics_path = who(web, "app.example", "/metrics").await;
    assert!(
        metrics_path.starts_with("404 ") && metrics_path.contains("no route"),
        "a new path on TOML's host is not the Ingress's: {metrics_path}"
    );
    assert_eq!(
        who(web, "x.toml.example", "/").await,
        "toml",
        "a name under TOML's wildcard"
    );
    assert_eq!(
        who(web, "nobody.example", "/metrics").await,
        "404 fallback",
        "TOML's `*` beats a host-less rule"
    );

    let mut taken = refused(&gw).await;
    taken.sort();
    let grab = |host: &str| ("team-b/grab".to_string(), host.to_string(), false);
    assert_eq!(
        taken,
        [grab("*"), grab("app.example"), grab("x.toml.example")]
    );
    host_taken_event(
        &sim,
        "team-b",
        "grab",
        "host app.example is taken by TOML route `login`",
    )
    .await;
    let metrics = get(gw.admin(), "admin", "/metrics").await.text();
    assert!(
        metrics.contains("leafgate_ingress_hosts_refused{what=\"rules\"} 3"),
        "{metrics}"
    );
}

#[tokio::test]
async fn an_ingress_cannot_take_a_host_from_an_older_ingress_of_another_namespace() {
    let sim = root().await;
    let (a, b) = (
        TestUpstream::start("team-a").await,
        TestUpstream::start("team-b").await,
    );
    create(&sim, backend_objects("team-a", "shop", a.addr));
    create(&sim, backend_objects("team-b", "evil", b.addr));
    create(
        &sim,
        [simple_ingress(
            "team-a",
            "shop",
            "leafgate",
            "shop.example",
            "shop",
        )],
    );
    let gw = gateway(&sim, loopback_allowed(), Config::web()).await;
    served(&gw, "shop.example", "/", "team-a").await;

    // Younger, in another namespace: a more specific path on team-a's host.
    create(
        &sim,
        [
            ingress(
                "team-b",
                "late",
                Some("leafgate"),
                vec![rule(
                    "shop.example",
                    vec![path("/admin", "Prefix", backend("evil", 80))],
                )],
            ),
            simple_ingress("team-b", "mine", "leafgate", "b.example", "evil"),
        ],
    );
    served(&gw, "b.example", "/", "team-b").await;
    let web = gw.addr("web");
    assert_eq!(who(web, "shop.example", "/admin").await, "team-a");
    assert_eq!(
        refused(&gw).await,
        [("team-b/late".to_string(), "shop.example".to_string(), false)]
    );
    host_taken_event(
        &sim,
        "team-b",
        "late",
        "namespace team-a (Ingress team-a/shop)",
    )
    .await;
}

#[tokio::test]
async fn an_ingress_certificate_cannot_replace_a_toml_certificate_or_another_namespaces() {
    let sim = root().await;
    let up = TestUpstream::start("team-b").await;
    create(&sim, backend_objects("team-b", "site", up.addr));
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("operator CA");
    ca.issue(dir.path(), "default", &["default.example"]);
    let wildcard = ca.issue(dir.path(), "wildcard", &["*.example.com"]);
    // The attacker's self-signed certificate names the TOML wildcard's hosts and its own.
    let attacker_ca = TestCa::new("attacker");
    let evil = attacker_ca.issue(
        dir.path(),
        "evil",
        &["login.example.com", "own.team-b.test"],
    );
    sim.create(tls_secret("team-b", "evil-tls", &evil.cert, &evil.key))
        .unwrap();
    let mut site = ingress(
        "team-b",
        "site",
        Some("leafgate"),
        vec![
            rule(
                "login.example.com",
                vec![path("/", "Prefix", backend("site", 80))],
            ),
            rule(
                "own.team-b.test",
                vec![path("/", "Prefix", backend("site", 80))],
            ),
        ],
    );
    site["spec"]["tls"] = json!([{"secretName": "evil-tls"}]);
    sim.create(site).unwrap();
    let tls_listener = Listener::new("websecure")
        .tls(
            dir.path().join("default.pem"),
            dir.path().join("default-key.pem"),
        )
        .certificate(&["*.example.com"], &wildcard.cert, &wildcard.key);
    let config = Config::web().listener(tls_listener);
    let gw = gateway(&sim, loopback_allowed(), config).await;
    let tls = gw.addr("websecure");
    // Trusting both issuers, so the handshake tells which certificate was picked.
    let roots = || {
        let mut both = ca.roots();
        both.roots.extend(attacker_ca.roots().roots);
        both
    };
    // The build is in (the web listener serves its host); its own host gets its
    // certificate.
    served(&gw, "own.team-b.test", "/", "team-b").await;
    let own = tls_connect(tls, "own.team-b.test", roots(), &[b"http/1.1"]).await;
    assert_eq!(own.peer_cert, evil.der);
    let session = tls_connect(tls, "login.example.com", roots(), &[b"http/1.1"]).await;
    assert_eq!(
        session.peer_cert, wildcard.der,
        "the TOML wildcard certificate"
    );
    assert_eq!(
        refused(&gw).await,
        [(
            "team-b/site".to_string(),
            "login.example.com".to_string(),
            true
        )]
    );
    host_taken_event(
        &sim,
        "team-b",
        "site",
        "the TOML certificate of listener `websecure`",
    )
    .await;
}

#[tokio::test]
async fn a_backend_at_the_admin_address_is_refused() {
    let sim = root().await;
    let gw = gateway(&sim, json!({}), Config::web()).await;
    let admin = gw.admin();
    create(
        &sim,
        [
            service("team-b", "admin", vec![service_port("http", 80, None)]),
            slice(
                "team-b",
                "admin-1",
                "admin",
                "http",
                admin.port(),
                &[(&admin.ip().to_string(), true)],
            ),
            simple_ingress("team-b", "admin", "leafgate", "admin.example", "admin"),
        ],
    );
    let web = gw.addr("web");
    eventually("the admin endpoint refused", APPLIED, || async {
        status(&gw).await["problems"].as_array().is_some_and(|p| {
            p.iter().any(|p| {
                p["ingress"] == "team-b/admin"
                    && p["problem"].as_str().is_some_and(|s| {
                        s.contains(&format!(
                            "endpoint {} port {} is a loopback address",
                            admin.ip(),
                            admin.port()
                        ))
                    })
            })
        })
    })
    .await;
    let a = get(web, "admin.example", "/status").await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE, "{}", a.text());
    assert!(
        !a.text().contains("listeners"),
        "the admin API leaked: {}",
        a.text()
    );
}

#[tokio::test]
async fn an_endpointslice_the_controller_does_not_manage_is_refused() {
    let sim = root().await;
    let (pod, elsewhere) = (
        TestUpstream::start("pod").await,
        TestUpstream::start("elsewhere").await,
    );
    create(&sim, backend_objects("team-b", "app", pod.addr));
    let mut by_hand = slice(
        "team-b",
        "app-hand",
        "app",
        "http",
        elsewhere.addr.port(),
        &[("127.0.0.1", true)],
    );
    by_hand["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] = json!("me");
    create(
        &sim,
        [
            by_hand,
            simple_ingress("team-b", "app", "leafgate", "app.example", "app"),
        ],
    );
    let gw = gateway(&sim, loopback_allowed(), Config::web()).await;
    served(&gw, "app.example", "/", "pod").await;
    let web = gw.addr("web");
    for _ in 0..10 {
        assert_eq!(who(web, "app.example", "/").await, "pod");
    }
    let s = status(&gw).await;
    assert!(
        s["problems"]
            .as_array()
            .is_some_and(|p| p
                .iter()
                .any(|p| p["problem"].as_str().is_some_and(|t| t.contains(
                    "EndpointSlice app-hand is not managed by the EndpointSlice controller"
                )))),
        "{s}"
    );
}

#[tokio::test]
async fn a_tenant_annotation_cannot_name_another_tenant_and_rates_are_clamped() {
    let sim = root().await;
    let up = TestUpstream::start("team-b").await;
    create(&sim, backend_objects("team-b", "app", up.addr));
    let mut spoof = simple_ingress("team-b", "spoof", "leafgate", "spoof.example", "app");
    spoof["metadata"]["annotations"] = json!({"leafgate.io/tenant": "team-a"});
    let mut fast = simple_ingress("team-b", "fast", "leafgate", "fast.example", "app");
    fast["metadata"]["annotations"] = json!({"leafgate.io/bandwidth-per-connection": "44KiB/s"});
    create(&sim, [spoof, fast]);
    let config = Config::web()
        .tenant(Tenant::new("team-a").namespaces(["team-a"]))
        .tenant(
            Tenant::new("team-b")
                .namespaces(["team-b"])
                .bandwidth("per_connection", "20KiB/s"),
        );
    let gw = gateway(&sim, loopback_allowed(), config).await;
    served(&gw, "fast.example", "/", "team-b").await;
    let web = gw.addr("web");
    assert_ne!(
        who(web, "spoof.example", "/").await,
        "team-b",
        "spoof is not served"
    );
    let s = status(&gw).await;
    assert!(
        s["skipped"]
            .as_array()
            .is_some_and(|v| v.iter().any(|x| x["ingress"] == "team-b/spoof"
                && x["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("tenant `team-a` does not own namespace team-b")))),
        "{s}"
    );
    assert!(
        s["problems"].as_array().is_some_and(|v| v.iter().any(|x| x["ingress"] == "team-b/fast"
            && x["problem"]
                == "leafgate.io/bandwidth-per-connection is above tenant team-b's limit: lowered to it")),
        "{s}"
    );
    eventually(
        "an InvalidAnnotation Event on team-b/spoof",
        APPLIED,
        || async {
            list(&sim, "v1", "Event").iter().any(|e| {
                e["involvedObject"]["name"] == "spoof" && e["reason"] == "InvalidAnnotation"
            })
        },
    )
    .await;
}
