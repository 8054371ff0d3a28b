//! Ingress authors get only what is theirs: an Ingress cannot take a host (or a path on
//! it, a name under a wildcard, the catch-all) the TOML config routes, a host an older
//! Ingress of another namespace (or, with `host_owner = "tenant"`, another tenant) holds,
//! a name a TOML certificate covers, a host outside its tenant's `hosts` patterns; its
//! backends are pod endpoints only; its annotations act only for its own tenant, within
//! its limits.
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
    warning_event(sim, "HostTaken", ns, name, needle).await;
}

/// Until a `Warning` Event of `reason` on Ingress `ns/name` says `needle`.
async fn warning_event(sim: &KubeSim, reason: &str, ns: &str, name: &str, needle: &str) {
    eventually(
        &format!("a {reason} Event on {ns}/{name}"),
        APPLIED,
        || async {
            list(sim, "v1", "Event").iter().any(|e| {
                e["involvedObject"]["namespace"] == ns
                    && e["involvedObject"]["name"] == name
                    && e["reason"] == reason
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

#[tokio::test]
async fn a_tenant_cannot_claim_a_host_outside_its_hosts_patterns() {
    let sim = root().await;
    let up = TestUpstream::start("team-a").await;
    create(&sim, backend_objects("team-a", "app", up.addr));
    let dir = tempfile::tempdir().unwrap();
    let own_ca = TestCa::new("team-a");
    let evil = own_ca.issue(
        dir.path(),
        "evil",
        &["evil.example", "app.team-a.example.com"],
    );
    sim.create(tls_secret("team-a", "evil-tls", &evil.cert, &evil.key))
        .unwrap();
    let to_app = || vec![path("/", "Prefix", backend("app", 80))];
    let mut grab = ingress(
        "team-a",
        "grab",
        Some("leafgate"),
        vec![
            rule("evil.example", to_app()),
            // Matches names under example.com that no pattern covers.
            rule("*.example.com", to_app()),
            // The catch-all of hosts nobody routes: not within any host pattern.
            rule("", to_app()),
            // Within the patterns: served, which tells the build has been applied.
            rule("app.team-a.example.com", to_app()),
            rule("*.x.team-a.example.com", to_app()),
        ],
    );
    grab["spec"]["tls"] =
        json!([{"hosts": ["evil.example", "app.team-a.example.com"], "secretName": "evil-tls"}]);
    sim.create(grab).unwrap();
    let config = Config::web().tenant(
        Tenant::new("team-a")
            .namespaces(["team-a"])
            .hosts(["team-a.example.com", "*.team-a.example.com"]),
    );
    let gw = gateway(&sim, loopback_allowed(), config).await;
    let web = gw.addr("web");
    served(&gw, "app.team-a.example.com", "/", "team-a").await;
    assert_eq!(who(web, "y.x.team-a.example.com", "/").await, "team-a");
    for host in ["evil.example", "www.example.com", "nobody.test"] {
        let answer = who(web, host, "/").await;
        assert!(
            answer.starts_with("404 ") && answer.contains("no route"),
            "{host} is not team-a's to claim: {answer}"
        );
    }

    let mut refusals = refused(&gw).await;
    refusals.sort();
    let grab = |host: &str, certificate| ("team-a/grab".to_string(), host.to_string(), certificate);
    assert_eq!(
        refusals,
        [
            grab("*", false),
            grab("*.example.com", false),
            grab("evil.example", false),
            grab("evil.example", true),
        ]
    );
    let s = status(&gw).await;
    let why = s["refused"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["host"] == "evil.example" && r["certificate"] == false)
        .map(|r| r["reason"].as_str().unwrap().to_string());
    assert_eq!(
        why.as_deref(),
        Some(
            "host evil.example is not allowed (tenant team-a may claim only hosts matching team-a.example.com, *.team-a.example.com): its rules for it are not served"
        ),
        "{s}"
    );
    warning_event(
        &sim,
        "HostNotAllowed",
        "team-a",
        "grab",
        "tenant team-a may claim only hosts matching team-a.example.com, *.team-a.example.com",
    )
    .await;
    let metrics = get(gw.admin(), "admin", "/metrics").await.text();
    assert!(
        metrics.contains("leafgate_ingress_hosts_refused{what=\"rules\"} 3")
            && metrics.contains("leafgate_ingress_hosts_refused{what=\"certificate\"} 1"),
        "{metrics}"
    );
}

/// `[kubernetes.ingress]` with `host_owner = "tenant"`, loopback backends allowed.
fn tenant_ownership() -> Value {
    json!({"allow_backends": ["127.0.0.0/8"], "host_owner": "tenant"})
}

#[tokio::test]
async fn with_tenant_ownership_a_tenants_second_namespace_adds_paths_to_its_host() {
    let sim = root().await;
    let (web_up, admin_up) = (
        TestUpstream::start("web").await,
        TestUpstream::start("admin").await,
    );
    create(&sim, backend_objects("team-a", "web", web_up.addr));
    create(
        &sim,
        backend_objects("team-a-admin", "admin", admin_up.addr),
    );
    create(
        &sim,
        [simple_ingress(
            "team-a",
            "web",
            "leafgate",
            "shop.example",
            "web",
        )],
    );
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("operator CA");
    ca.issue(dir.path(), "default", &["default.example"]);
    let shop = ca.issue(dir.path(), "shop", &["shop.example"]);
    sim.create(tls_secret(
        "team-a-admin",
        "shop-tls",
        &shop.cert,
        &shop.key,
    ))
    .unwrap();
    let tls_listener = Listener::new("websecure").tls(
        dir.path().join("default.pem"),
        dir.path().join("default-key.pem"),
    );
    let config = Config::web()
        .listener(tls_listener)
        .tenant(Tenant::new("team-a").namespaces(["team-a", "team-a-*"]));
    let gw = gateway(&sim, tenant_ownership(), config).await;
    served(&gw, "shop.example", "/", "web").await;

    // Younger, in the tenant's other namespace: a path and the certificate of its host.
    let mut admin = ingress(
        "team-a-admin",
        "admin",
        Some("leafgate"),
        vec![rule(
            "shop.example",
            vec![path("/admin", "Prefix", backend("admin", 80))],
        )],
    );
    admin["spec"]["tls"] = json!([{"hosts": ["shop.example"], "secretName": "shop-tls"}]);
    sim.create(admin).unwrap();
    served(&gw, "shop.example", "/admin", "admin").await;
    assert_eq!(who(gw.addr("web"), "shop.example", "/").await, "web");
    let session = tls_connect(
        gw.addr("websecure"),
        "shop.example",
        ca.roots(),
        &[b"http/1.1"],
    )
    .await;
    assert_eq!(
        session.peer_cert, shop.der,
        "the second namespace's certificate"
    );
    assert_eq!(refused(&gw).await, []);
}

#[tokio::test]
async fn with_tenant_ownership_another_tenant_is_refused() {
    let sim = root().await;
    let (a, b) = (
        TestUpstream::start("team-a").await,
        TestUpstream::start("intruder").await,
    );
    create(&sim, backend_objects("team-a", "shop", a.addr));
    create(&sim, backend_objects("team-b", "evil", b.addr));
    create(&sim, backend_objects("tenantless", "evil", b.addr));
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
    let config = Config::web()
        .tenant(Tenant::new("team-a").namespaces(["team-a", "team-a-*"]))
        .tenant(Tenant::new("team-b").namespaces(["team-b"]));
    let gw = gateway(&sim, tenant_ownership(), config).await;
    served(&gw, "shop.example", "/", "team-a").await;

    // Younger: another tenant's namespace, and a namespace no tenant owns.
    let late = |ns: &str| {
        ingress(
            ns,
            "late",
            Some("leafgate"),
            vec![rule(
                "shop.example",
                vec![path("/admin", "Prefix", backend("evil", 80))],
            )],
        )
    };
    create(
        &sim,
        [
            late("team-b"),
            late("tenantless"),
            simple_ingress("team-b", "mine", "leafgate", "b.example", "evil"),
        ],
    );
    served(&gw, "b.example", "/", "intruder").await;
    eventually("both refusals reported", APPLIED, || async {
        refused(&gw).await.len() == 2
    })
    .await;
    assert_eq!(
        who(gw.addr("web"), "shop.example", "/admin").await,
        "team-a"
    );
    let mut refusals = refused(&gw).await;
    refusals.sort();
    assert_eq!(
        refusals,
        [
            ("team-b/late".to_string(), "shop.example".to_string(), false),
            (
                "tenantless/late".to_string(),
                "shop.example".to_string(),
                false
            ),
        ]
    );
    for ns in ["team-b", "tenantless"] {
        host_taken_event(
            &sim,
            ns,
            "late",
            "host shop.example is taken by tenant team-a (Ingress team-a/shop)",
        )
        .await;
    }
}
