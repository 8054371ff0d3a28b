//! leafgate as the Ingress controller of its class, against a kubesim root with real
//! upstream servers on loopback as the endpoints: Service -> EndpointSlice readiness and
//! port changes, path types, one-label wildcard hosts, `defaultBackend`, TLS from Secrets
//! and their rotation, classes, bad annotations (skipped, with an Event), TOML precedence,
//! status written by the leader alone, and a WebSocket through many Ingress updates.
//! Each test owns one simulator and one gateway (two for the election test).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use http::StatusCode;
use kubesim::KubeSim;
use leafgate_tests::certs::TestCa;
use leafgate_tests::client::{Answer, get, tls_connect};
use leafgate_tests::config::{Listener, Route};
use leafgate_tests::ingress::{
    backend, backend_objects, eventually, get as get_object, ingress, ingress_class,
    kubernetes_section, list, path, root_kubeconfig, rule, service, service_port, simple_ingress,
    slice, tls_secret,
};
use leafgate_tests::{Config, TestGateway, TestUpstream};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

const NET: &str = "networking.k8s.io/v1";
/// Long enough for a rebuild under a parallel test run on two shared cores.
const APPLIED: Duration = Duration::from_secs(10);

/// The root: leafgate's own namespace (its leader Lease lives there; `[kubernetes]
/// namespace` defaults to `leafgate`, which the deployment creates) and its IngressClass.
async fn root() -> KubeSim {
    let sim = KubeSim::builder().start().await.unwrap();
    sim.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "leafgate"}}))
        .unwrap();
    sim.create(ingress_class("leafgate", false)).unwrap();
    sim
}

/// A gateway on `sim` with a plain listener `web` (and `extra` listeners or routes),
/// replica `identity`, and `[kubernetes.ingress]` holding `ingress`.
async fn gateway(sim: &KubeSim, identity: &str, ingress: Value, extra: Config) -> TestGateway {
    let dir = tempfile::tempdir().unwrap();
    root_kubeconfig(sim, dir.path(), identity);
    let config = extra
        .admin()
        .kubernetes(kubernetes_section(identity, ingress));
    TestGateway::start_in(dir, config).await
}

/// Which upstream answered (its `server` name), or the status when it was not a 200.
async fn who(addr: SocketAddr, host: &str, p: &str) -> String {
    let a = get(addr, host, p).await;
    served_by(&a)
}

fn served_by(a: &Answer) -> String {
    if a.status == StatusCode::OK {
        a.json()["server"].as_str().unwrap_or("?").to_string()
    } else {
        a.status.as_u16().to_string()
    }
}

async fn status(gw: &TestGateway) -> Value {
    get(gw.admin(), "admin", "/status").await.json()["ingress"].clone()
}

fn create(sim: &KubeSim, objects: impl IntoIterator<Item = Value>) {
    for o in objects {
        sim.create(o).unwrap();
    }
}

fn patch(sim: &KubeSim, api_version: &str, kind: &str, ns: &str, name: &str, p: Value) {
    sim.patch(api_version, kind, ns, name, &p, false).unwrap();
}

/// Until `host` answers from `server` on `gw`'s `web` listener.
async fn served(gw: &TestGateway, host: &str, p: &str, server: &str) -> Duration {
    let web = gw.addr("web");
    eventually(
        &format!("{host}{p} served by {server}"),
        APPLIED,
        || async { who(web, host, p).await == server },
    )
    .await
}

#[tokio::test]
async fn endpoints_follow_readiness_and_port_changes() {
    let sim = root().await;
    let (a, b) = (
        TestUpstream::start("a").await,
        TestUpstream::start("b").await,
    );
    // One slice per endpoint: both listen on 127.0.0.1, and a slice's port is shared by all
    // its endpoints (the EndpointSlice controller splits by target port the same way).
    create(
        &sim,
        [
            service("web", "app", vec![service_port("http", 80, None)]),
            slice(
                "web",
                "app-a",
                "app",
                "http",
                a.addr.port(),
                &[("127.0.0.1", true)],
            ),
            slice(
                "web",
                "app-b",
                "app",
                "http",
                b.addr.port(),
                &[("127.0.0.1", true)],
            ),
            simple_ingress("web", "app", "leafgate", "app.example", "app"),
        ],
    );
    let gw = gateway(&sim, "gw", json!({}), Config::web()).await;
    let web = gw.addr("web");
    served(&gw, "app.example", "/", "a").await;
    let mut seen = BTreeSet::new();
    for _ in 0..40 {
        seen.insert(who(web, "app.example", "/").await);
        if seen.len() == 2 {
            break;
        }
    }
    assert_eq!(
        seen,
        BTreeSet::from(["a".into(), "b".into()]),
        "both endpoints"
    );

    // b turns not ready: within 1 s only a answers (checked over 20 requests in a row).
    patch(
        &sim,
        "discovery.k8s.io/v1",
        "EndpointSlice",
        "web",
        "app-b",
        json!({"endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": false}}]}),
    );
    let started = Instant::now();
    let mut in_a_row = 0;
    while in_a_row < 20 {
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "b still served after 1 s"
        );
        in_a_row = if who(web, "app.example", "/").await == "a" {
            in_a_row + 1
        } else {
            0
        };
    }
    let s = status(&gw).await;
    assert_eq!(s["synced"], true, "{s}");

    // The Service port renamed, its slices following: the Ingress names the port by
    // number, so the route follows the new name.
    patch(
        &sim,
        "v1",
        "Service",
        "web",
        "app",
        json!({"spec": {"ports": [{"name": "web", "port": 80, "targetPort": "web", "protocol": "TCP"}]}}),
    );
    patch(
        &sim,
        "discovery.k8s.io/v1",
        "EndpointSlice",
        "web",
        "app-a",
        json!({"ports": [{"name": "web", "port": a.addr.port(), "protocol": "TCP"}]}),
    );
    served(&gw, "app.example", "/", "a").await;
    for _ in 0..5 {
        assert_eq!(who(web, "app.example", "/").await, "a", "after the rename");
    }
    // The target port renumbered (the pods moved to another port): the slice's port
    // changes and traffic goes there.
    let c = TestUpstream::start("c").await;
    patch(
        &sim,
        "discovery.k8s.io/v1",
        "EndpointSlice",
        "web",
        "app-a",
        json!({"ports": [{"name": "web", "port": c.addr.port(), "protocol": "TCP"}]}),
    );
    served(&gw, "app.example", "/", "c").await;
    // The Service port renumbered and the Ingress not: a missing port answers 503 with a
    // reason and is reported; the Ingress following it serves again.
    patch(
        &sim,
        "v1",
        "Service",
        "web",
        "app",
        json!({"spec": {"ports": [{"name": "web", "port": 8080, "targetPort": "web", "protocol": "TCP"}]}}),
    );
    served(&gw, "app.example", "/", "503").await;
    let s = status(&gw).await;
    assert!(
        s["problems"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["ingress"] == "web/app")),
        "{s}"
    );
    patch(
        &sim,
        NET,
        "Ingress",
        "web",
        "app",
        json!({"spec": {"rules": [rule("app.example", vec![path("/", "Prefix", backend("app", 8080))])]}}),
    );
    served(&gw, "app.example", "/", "c").await;
}

#[tokio::test]
async fn paths_wildcards_default_backend_and_tls_from_secrets() {
    let sim = root().await;
    let names = ["foo", "exact", "wild", "def", "api", "secure"];
    let mut ups = Vec::new();
    for n in names {
        let up = TestUpstream::start(n).await;
        create(&sim, backend_objects("apps", n, up.addr));
        ups.push(up);
    }
    create(
        &sim,
        [
            ingress(
                "apps",
                "paths",
                Some("leafgate"),
                vec![rule(
                    "paths.example",
                    vec![
                        path("/foo", "Prefix", backend("foo", 80)),
                        path("/exact", "Exact", backend("exact", 80)),
                    ],
                )],
            ),
            simple_ingress("apps", "wild", "leafgate", "*.wild.example", "wild"),
        ],
    );
    let mut fallback = ingress(
        "apps",
        "fallback",
        Some("leafgate"),
        vec![rule(
            "def.example",
            vec![path("/api", "Prefix", backend("api", 80))],
        )],
    );
    fallback["spec"]["defaultBackend"] = backend("def", 80);
    sim.create(fallback).unwrap();

    // TLS: the listener's own certificate is the default; the Ingress's Secret serves
    // secure.example by SNI.
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("ingress test CA");
    ca.issue(dir.path(), "default", &["default.example"]);
    let first = ca.issue(dir.path(), "secure-1", &["secure.example"]);
    let second = ca.issue(dir.path(), "secure-2", &["secure.example"]);
    sim.create(tls_secret("apps", "secure-tls", &first.cert, &first.key))
        .unwrap();
    let mut secure = simple_ingress("apps", "secure", "leafgate", "secure.example", "secure");
    secure["spec"]["tls"] = json!([{"hosts": ["secure.example"], "secretName": "secure-tls"}]);
    sim.create(secure).unwrap();
    let tls_listener = Listener::new("websecure").tls(
        dir.path().join("default.pem"),
        dir.path().join("default-key.pem"),
    );
    let gw = gateway(&sim, "gw", json!({}), Config::web().listener(tls_listener)).await;
    let web = gw.addr("web");
    served(&gw, "paths.example", "/foo", "foo").await;

    // Prefix is element-wise; Exact is exact.
    for p in ["/foo", "/foo/", "/foo/bar"] {
        assert_eq!(who(web, "paths.example", p).await, "foo", "{p}");
    }
    assert_ne!(who(web, "paths.example", "/foobar").await, "foo", "/foobar");
    assert_eq!(who(web, "paths.example", "/exact").await, "exact");
    assert_ne!(who(web, "paths.example", "/exact/more").await, "exact");
    // A wildcard host matches exactly one label.
    assert_eq!(who(web, "a.wild.example", "/").await, "wild");
    assert_eq!(
        who(web, "B.Wild.Example", "/x").await,
        "wild",
        "hosts are case-blind"
    );
    assert_ne!(who(web, "a.b.wild.example", "/").await, "wild");
    assert_ne!(who(web, "wild.example", "/").await, "wild");
    // defaultBackend: the catch-all, and the `/` of its own rule hosts.
    assert_eq!(who(web, "nobody.example", "/anything").await, "def");
    assert_eq!(who(web, "def.example", "/").await, "def");
    assert_eq!(who(web, "def.example", "/api/v1").await, "api");

    // TLS by SNI from the Secret, and its rotation.
    let tls = gw.addr("websecure");
    let peer = || async {
        tls_connect(tls, "secure.example", ca.roots(), &[b"http/1.1"])
            .await
            .peer_cert
    };
    assert!(
        peer().await == first.der,
        "the Secret's certificate for secure.example"
    );
    let other = tls_connect(tls, "default.example", ca.roots(), &[b"http/1.1"]).await;
    assert!(
        other.peer_cert != first.der,
        "other names keep the listener's certificate"
    );
    let session = tls_connect(tls, "secure.example", ca.roots(), &[b"http/1.1"]).await;
    let answer = leafgate_tests::client::send_h1(
        session.stream,
        http::Request::get("/")
            .header("host", "secure.example")
            .body(http_body_util::Empty::new())
            .unwrap(),
    )
    .await;
    assert_eq!(served_by(&answer), "secure");
    let rotated = tls_secret("apps", "secure-tls", &second.cert, &second.key);
    patch(
        &sim,
        "v1",
        "Secret",
        "apps",
        "secure-tls",
        json!({"data": rotated["data"]}),
    );
    eventually(
        "new handshakes get the rotated certificate",
        APPLIED,
        || async { peer().await == second.der },
    )
    .await;
}

#[tokio::test]
async fn classes_bad_annotations_and_toml_precedence() {
    let sim = root().await;
    let names = ["good", "legacy", "other", "bad", "ingress-side"];
    let mut ups = Vec::new();
    for n in names {
        let up = TestUpstream::start(n).await;
        create(&sim, backend_objects("team", n, up.addr));
        ups.push(up);
    }
    let toml_side = TestUpstream::start("toml-side").await;
    let mut legacy = ingress(
        "team",
        "legacy",
        None,
        vec![rule(
            "legacy.example",
            vec![path("/", "Prefix", backend("legacy", 80))],
        )],
    );
    legacy["metadata"]["annotations"] = json!({"kubernetes.io/ingress.class": "leafgate"});
    let mut bad = simple_ingress("team", "bad", "leafgate", "bad.example", "bad");
    bad["metadata"]["annotations"] = json!({"leafgate.io/bandwidth-total": "lots"});
    create(
        &sim,
        [
            ingress_class("nginx", false),
            simple_ingress("team", "good", "leafgate", "good.example", "good"),
            simple_ingress("team", "other", "nginx", "other.example", "other"),
            legacy,
            bad,
            simple_ingress(
                "team",
                "shadowed",
                "leafgate",
                "toml.example",
                "ingress-side",
            ),
        ],
    );
    let route = Route::host("toml.example")
        .name("toml-route")
        .backend(toml_side.addr);
    let publish = json!({"publish_address": "203.0.113.7"});
    let gw = gateway(&sim, "gw", publish, Config::web().route(route)).await;
    let web = gw.addr("web");
    served(&gw, "good.example", "/", "good").await;
    assert_eq!(
        who(web, "legacy.example", "/").await,
        "legacy",
        "the legacy annotation"
    );
    assert_ne!(
        who(web, "other.example", "/").await,
        "other",
        "another class is ignored"
    );
    assert_ne!(
        who(web, "bad.example", "/").await,
        "bad",
        "a bad annotation skips the Ingress"
    );
    assert_eq!(
        who(web, "toml.example", "/").await,
        "toml-side",
        "TOML wins"
    );

    let s = status(&gw).await;
    let skipped = s["skipped"].as_array().cloned().unwrap_or_default();
    assert!(
        skipped.len() == 1 && skipped[0]["ingress"] == "team/bad",
        "only team/bad is skipped: {s}"
    );
    // The model refuses an Ingress's rules on a host TOML owns (issue 23): reported as
    // refused, with the TOML route as the owner.
    assert!(
        s["refused"].as_array().is_some_and(|v| v.iter().any(|x| {
            x["ingress"] == "team/shadowed" && x["owner"] == "TOML route `toml-route`"
        })),
        "{s}"
    );
    // The Event on the skipped Ingress, written once by the leader; none on the others.
    let bad_uid =
        get_object(&sim, NET, "Ingress", "team", "bad").unwrap()["metadata"]["uid"].clone();
    eventually(
        "an InvalidAnnotation Event on team/bad",
        APPLIED,
        || async {
            list(&sim, "v1", "Event").iter().any(|e| {
                e["involvedObject"]["name"] == "bad" && e["involvedObject"]["uid"] == bad_uid
            })
        },
    )
    .await;
    let events = list(&sim, "v1", "Event");
    let on_bad: Vec<&Value> = events
        .iter()
        .filter(|e| e["involvedObject"]["name"] == "bad")
        .collect();
    let e = on_bad[0];
    assert_eq!(e["metadata"]["namespace"], "team");
    assert_eq!(e["involvedObject"]["kind"], "Ingress");
    assert_eq!(e["involvedObject"]["apiVersion"], NET);
    assert_eq!(e["type"], "Warning");
    assert_eq!(e["reason"], "InvalidAnnotation");
    assert_eq!(e["source"]["component"], "leafgate");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("leafgate.io/bandwidth-total")),
        "{e}"
    );
    // Besides it, only the Ingress whose host TOML owns has one (HostTaken, issue 23).
    eventually("a HostTaken Event on team/shadowed", APPLIED, || async {
        list(&sim, "v1", "Event")
            .iter()
            .any(|e| e["involvedObject"]["name"] == "shadowed" && e["reason"] == "HostTaken")
    })
    .await;
    let events = list(&sim, "v1", "Event");
    let on_shadowed = events
        .iter()
        .filter(|e| e["involvedObject"]["name"] == "shadowed")
        .count();
    assert_eq!(on_shadowed, 1, "{events:?}");
    assert!(
        events.iter().all(|e| e["involvedObject"]["name"] == "bad"
            || (e["involvedObject"]["name"] == "shadowed" && e["reason"] == "HostTaken")),
        "Events only on the skipped and the refused Ingress: {events:?}"
    );
    // The ignored Ingress gets no status; the served ones do.
    eventually("status on team/good", APPLIED, || async {
        get_object(&sim, NET, "Ingress", "team", "good").unwrap()["status"]["loadBalancer"]["ingress"]
            == json!([{"ip": "203.0.113.7"}])
    })
    .await;
    let other = get_object(&sim, NET, "Ingress", "team", "other").unwrap();
    assert!(
        other["status"]["loadBalancer"]["ingress"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "{other}"
    );

    // Fixing the annotation serves it, and rebuilding does not repeat the Event.
    patch(
        &sim,
        NET,
        "Ingress",
        "team",
        "bad",
        json!({"metadata": {"annotations": {"leafgate.io/bandwidth-total": "10MiB/s"}}}),
    );
    served(&gw, "bad.example", "/", "bad").await;
    let count = list(&sim, "v1", "Event").len();
    assert_eq!(
        count,
        on_bad.len() + on_shadowed,
        "no new Event for a valid Ingress"
    );
}

/// The status writes (`PATCH`/`PUT` on `ingresses/*/status`) the root recorded, by user.
fn status_writers(sim: &KubeSim) -> Vec<(String, String)> {
    sim.requests()
        .into_iter()
        .filter(|r| {
            (r.method == "PATCH" || r.method == "PUT")
                && r.path.contains("/ingresses/")
                && r.path.ends_with("/status")
        })
        .map(|r| (r.user.unwrap_or_default(), r.path))
        .collect()
}

#[tokio::test]
async fn the_leader_writes_status_and_the_follower_never_does() {
    let sim = root().await;
    let up = TestUpstream::start("app").await;
    create(&sim, backend_objects("web", "app", up.addr));
    create(
        &sim,
        [simple_ingress(
            "web",
            "app",
            "leafgate",
            "app.example",
            "app",
        )],
    );
    let publish = json!({"publish_address": "203.0.113.7"});
    let one = gateway(&sim, "replica-1", publish.clone(), Config::web()).await;
    let two = gateway(&sim, "replica-2", publish, Config::web()).await;
    // Both serve; one leads.
    served(&one, "app.example", "/", "app").await;
    served(&two, "app.example", "/", "app").await;
    let lb = |sim: &KubeSim, name: &str| {
        get_object(sim, NET, "Ingress", "web", name).unwrap()["status"]["loadBalancer"]["ingress"]
            .clone()
    };
    eventually(
        "the leader writes loadBalancer.ingress",
        APPLIED,
        || async { lb(&sim, "app") == json!([{"ip": "203.0.113.7"}]) },
    )
    .await;
    // A new Ingress while both run, then the record: one writer, the Lease's holder.
    create(
        &sim,
        [simple_ingress(
            "web",
            "second",
            "leafgate",
            "second.example",
            "app",
        )],
    );
    eventually("status on the second Ingress", APPLIED, || async {
        lb(&sim, "second") == json!([{"ip": "203.0.113.7"}])
    })
    .await;
    let writers: BTreeSet<String> = status_writers(&sim).into_iter().map(|(u, _)| u).collect();
    assert_eq!(writers.len(), 1, "one replica writes status: {writers:?}");
    let leader = writers.into_iter().next().unwrap();
    let holders: Vec<String> = list(&sim, "coordination.k8s.io/v1", "Lease")
        .iter()
        .filter_map(|l| l["spec"]["holderIdentity"].as_str().map(str::to_string))
        .collect();
    assert!(
        holders.contains(&leader),
        "the writer {leader} holds a Lease: {holders:?}"
    );
    let follower = if leader == "replica-1" {
        "replica-2"
    } else {
        "replica-1"
    };
    assert!(
        !sim.requests()
            .iter()
            .any(|r| r.user.as_deref() == Some(follower)
                && matches!(r.method.as_str(), "POST" | "PATCH" | "PUT")
                && (r.path.contains("/ingresses/") || r.path.contains("/events"))),
        "the follower wrote status or an Event"
    );

    // The Ingress leaves the class: its status is cleared, and it is no longer served.
    patch(
        &sim,
        NET,
        "Ingress",
        "web",
        "second",
        json!({"spec": {"ingressClassName": "nginx"}}),
    );
    eventually(
        "the status of an Ingress no longer ours is cleared",
        APPLIED,
        || async { lb(&sim, "second").as_array().is_none_or(Vec::is_empty) },
    )
    .await;
    assert_ne!(who(one.addr("web"), "second.example", "/").await, "app");
    assert_eq!(
        lb(&sim, "app"),
        json!([{"ip": "203.0.113.7"}]),
        "the other keeps its status"
    );
    drop(two);
}

#[tokio::test]
async fn a_reload_that_moves_or_removes_the_address_clears_the_old_one() {
    let sim = root().await;
    let up = TestUpstream::start("app").await;
    create(&sim, backend_objects("web", "app", up.addr));
    create(
        &sim,
        [
            simple_ingress("web", "app", "leafgate", "app.example", "app"),
            simple_ingress("web", "stale", "nginx", "stale.example", "app"),
        ],
    );
    let lb = |name: &str| {
        get_object(&sim, NET, "Ingress", "web", name).unwrap()["status"]["loadBalancer"]["ingress"]
            .clone()
    };
    let (old, new) = (
        json!([{"ip": "203.0.113.7"}]),
        json!([{"ip": "198.51.100.9"}]),
    );
    let publish = json!({"publish_address": "203.0.113.7"});
    let gw = gateway(&sim, "gw", publish, Config::web()).await;
    eventually("the first address", APPLIED, || async { lb("app") == old }).await;

    // A reload moves the gateway: the served Ingress gets the new address at once.
    let config = std::fs::read_to_string(&gw.config).unwrap();
    let moved = config.replace("203.0.113.7", "198.51.100.9");
    std::fs::write(&gw.config, &moved).unwrap();
    gw.gateway.reload().await.unwrap();
    eventually("the new address", APPLIED, || async { lb("app") == new }).await;
    // The old address, still on an Ingress this gateway does not serve (a write that
    // raced the move), is ours to clear; another controller's address is not.
    sim.patch_status(NET, "Ingress", "web", "stale", &json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}, {"ip": "10.9.9.9"}]}}}))
        .unwrap();
    eventually("the old address cleared", APPLIED, || async {
        lb("stale").as_array().is_none_or(Vec::is_empty)
    })
    .await;
    sim.patch_status(
        NET,
        "Ingress",
        "web",
        "stale",
        &json!({"status": {"loadBalancer": {"ingress": [{"ip": "10.9.9.9"}]}}}),
    )
    .unwrap();

    // A reload removes `publish_address`: what the gateway published is cleared.
    std::fs::write(
        &gw.config,
        moved.replace("publish_address = \"198.51.100.9\"", ""),
    )
    .unwrap();
    gw.gateway.reload().await.unwrap();
    eventually("the address cleared", APPLIED, || async {
        lb("app").as_array().is_none_or(Vec::is_empty)
    })
    .await;
    // Put a retired address back on `app`, after the foreign one went on `stale`: once the
    // gateway has cleared it again, its watch has shown it `stale`'s write too (one watch,
    // in order), and that sync left the foreign address alone.
    sim.patch_status(
        NET,
        "Ingress",
        "web",
        "app",
        &json!({"status": {"loadBalancer": {"ingress": [{"ip": "198.51.100.9"}]}}}),
    )
    .unwrap();
    eventually("the retired address cleared again", APPLIED, || async {
        lb("app").as_array().is_none_or(Vec::is_empty)
    })
    .await;
    assert_eq!(
        lb("stale"),
        json!([{"ip": "10.9.9.9"}]),
        "another controller's address stays"
    );
}

#[tokio::test]
async fn a_websocket_survives_fifty_ingress_updates() {
    let sim = root().await;
    let ws = leafgate_tests::backends::websocket_echo("ws").await;
    let plain = TestUpstream::start("plain").await;
    create(&sim, backend_objects("web", "ws", ws.addr));
    create(&sim, backend_objects("web", "plain", plain.addr));
    create(
        &sim,
        [simple_ingress("web", "ws", "leafgate", "ws.example", "ws")],
    );
    let gw = gateway(&sim, "gw", json!({}), Config::web()).await;
    let web = gw.addr("web");
    eventually("the ws route", APPLIED, || async {
        get(web, "ws.example", "/").await.status != StatusCode::NOT_FOUND
    })
    .await;
    let tcp = tokio::net::TcpStream::connect(web).await.unwrap();
    let (mut socket, res) = tokio_tungstenite::client_async("ws://ws.example/socket", tcp)
        .await
        .unwrap();
    assert_eq!(res.headers()["x-backend"], "ws");
    let mut rules = vec![rule(
        "ws.example",
        vec![path("/", "Prefix", backend("ws", 80))],
    )];
    for i in 0..50 {
        // Each update adds a host, and is waited for, so it really was swapped in.
        let host = format!("h{i}.example");
        rules.push(rule(&host, vec![path("/", "Prefix", backend("plain", 80))]));
        patch(
            &sim,
            NET,
            "Ingress",
            "web",
            "ws",
            json!({"spec": {"rules": rules}}),
        );
        served(&gw, &host, "/", "plain").await;
        let text = format!("update {i}");
        socket.send(Message::text(text.clone())).await.unwrap();
        let back = tokio::time::timeout(Duration::from_secs(5), socket.next())
            .await
            .unwrap_or_else(|_| panic!("no echo after update {i}"))
            .unwrap()
            .unwrap();
        assert_eq!(back.into_text().unwrap().as_str(), text, "after update {i}");
    }
    let s = status(&gw).await;
    assert!(s["applied"].as_u64().is_some_and(|n| n >= 50), "{s}");
    socket.close(None).await.unwrap();
}
