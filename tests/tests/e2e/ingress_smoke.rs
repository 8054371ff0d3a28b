//! Ingress routes and config reloads together: both swap the one snapshot, one at a time,
//! so neither loses the other's change. A reload keeps the Ingress routes (and lets a new
//! TOML route win over an Ingress on its host); an Ingress change after it keeps the
//! reload's routes.

use std::net::SocketAddr;
use std::time::Duration;

use http::StatusCode;
use kubesim::KubeSim;
use leafgate_tests::client::get;
use leafgate_tests::config::Route;
use leafgate_tests::ingress::{
    backend_objects, eventually, ingress_class, kubernetes_section, root_kubeconfig, simple_ingress,
};
use leafgate_tests::{Config, TestGateway, TestUpstream};
use serde_json::json;

const APPLIED: Duration = Duration::from_secs(10);

/// Which upstream answered, or the status when it was not a 200.
async fn who(addr: SocketAddr, host: &str) -> String {
    let a = get(addr, host, "/").await;
    if a.status == StatusCode::OK {
        a.json()["server"].as_str().unwrap_or("?").to_string()
    } else {
        a.status.as_u16().to_string()
    }
}

#[tokio::test]
async fn reloads_and_ingress_changes_keep_each_others_routes() {
    let sim = KubeSim::builder().start().await.unwrap();
    sim.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "leafgate"}}))
        .unwrap();
    sim.create(ingress_class("leafgate", false)).unwrap();
    let from_ingress = TestUpstream::start("ingress").await;
    let from_toml = TestUpstream::start("toml").await;
    for o in backend_objects("web", "app", from_ingress.addr) {
        sim.create(o).unwrap();
    }
    for (name, host) in [("app", "app.example"), ("other", "other.example")] {
        sim.create(simple_ingress("web", name, "leafgate", host, "app"))
            .unwrap();
    }

    let dir = tempfile::tempdir().unwrap();
    root_kubeconfig(&sim, dir.path(), "gw");
    let config = Config::web()
        .admin()
        .kubernetes(kubernetes_section("gw", json!({})));
    let gw = TestGateway::start_in(dir, &config).await;
    let web = gw.addr("web");
    for host in ["app.example", "other.example"] {
        eventually(&format!("{host} served"), APPLIED, || async {
            who(web, host).await == "ingress"
        })
        .await;
    }

    // A reload adds a TOML route for app.example: it wins there at once, and the other
    // Ingress route is still served (the reload started from the Ingress routes).
    let with_route = config.route(
        Route::host("app.example")
            .name("toml-app")
            .backend(from_toml.addr),
    );
    std::fs::write(&gw.config, with_route.to_string()).unwrap();
    gw.gateway.reload().await.unwrap();
    assert_eq!(who(web, "app.example").await, "toml");
    assert_eq!(who(web, "other.example").await, "ingress");
    // Until the provider's next build, web/app's route is reported shadowed by the TOML
    // route; that build (a few ms later) refuses it with the TOML route as the owner.
    let status = get(gw.admin(), "admin", "/status").await.json();
    let ingress = &status["ingress"];
    let shadowed = ingress["shadowed"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["ingress"] == "web/app" && s["route"] == "toml-app");
    let refused = ingress["refused"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["ingress"] == "web/app" && r["owner"] == "TOML route `toml-app`");
    assert!(shadowed || refused, "{status}");

    // An Ingress change after the reload: served, and the reload's route stays.
    sim.create(simple_ingress(
        "web",
        "third",
        "leafgate",
        "third.example",
        "app",
    ))
    .unwrap();
    eventually("third.example served", APPLIED, || async {
        who(web, "third.example").await == "ingress"
    })
    .await;
    assert_eq!(who(web, "app.example").await, "toml");
    assert_eq!(who(web, "other.example").await, "ingress");
}
