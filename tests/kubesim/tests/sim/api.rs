//! The simulator's HTTP API over real TLS sockets: Status bodies, CRUD and selectors,
//! patches, watch resume, 410 after compaction, restart breaking watches, pod subresources.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use kubesim::KubeSim;
use serde_json::{Value, json};

const TOKEN: &str = "api-token";

/// A TLS connection to the simulator that trusts its CA, offering ring's suites in ring's
/// order (AES-256-GCM first).
async fn tls_connect(sim: &KubeSim) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    tls_connect_with(sim, rustls::crypto::ring::default_provider()).await
}

/// A TLS connection to the simulator that trusts its CA, offering `provider`'s suites.
async fn tls_connect_with(
    sim: &KubeSim,
    provider: rustls::crypto::CryptoProvider,
) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pki_types::pem::PemObject::pem_slice_iter(sim.ca_pem().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(sim.addr()).await.unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap()
}

async fn send(
    sim: &KubeSim,
    token: Option<&str>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> Response<Incoming> {
    let tls = tls_connect(sim).await;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let body = if body.is_null() {
        Bytes::new()
    } else {
        Bytes::from(body.to_string())
    };
    sender
        .send_request(req.body(Full::new(body)).unwrap())
        .await
        .unwrap()
}

async fn call(sim: &KubeSim, method: &str, path: &str, body: Value) -> (u16, Value) {
    let ct = if method == "PATCH" {
        "application/strategic-merge-patch+json"
    } else {
        "application/json"
    };
    let resp = send(
        sim,
        Some(TOKEN),
        method,
        path,
        &[("content-type", ct)],
        body,
    )
    .await;
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        code,
        serde_json::from_slice(&bytes)
            .unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into())),
    )
}

async fn sim() -> KubeSim {
    KubeSim::builder()
        .token(TOKEN, "tester")
        .start()
        .await
        .unwrap()
}

/// Reads watch events (one JSON per line) until `n` have arrived, within 10s.
async fn events(body: &mut Incoming, buf: &mut Vec<u8>, n: usize) -> Vec<Value> {
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), async {
        while out.len() < n {
            while let Some(i) = buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buf.drain(..=i).collect();
                out.push(serde_json::from_slice(&line).unwrap());
            }
            if out.len() >= n {
                break;
            }
            match body.frame().await {
                Some(Ok(f)) => buf.extend_from_slice(f.data_ref().expect("data frames")),
                _ => panic!("watch ended after {} events", out.len()),
            }
        }
    })
    .await
    .expect("watch events within 10s");
    out
}

/// kube-apiserver is a Go server: it takes the TLS 1.3 suite by Go's order (AES-128-GCM
/// first on AES hardware), not by the client's, and the simulator's clients offer Go's
/// order as kube-apiserver's and kubectl's do. A client offering only ChaCha20 still gets it.
#[tokio::test]
async fn the_api_server_and_its_clients_order_cipher_suites_as_go_does() {
    use rustls::CipherSuite::{
        TLS13_AES_128_GCM_SHA256, TLS13_AES_256_GCM_SHA384, TLS13_CHACHA20_POLY1305_SHA256,
    };
    let sim = sim().await;
    let suite = |tls: &tokio_rustls::client::TlsStream<tokio::net::TcpStream>| {
        tls.get_ref().1.negotiated_cipher_suite().unwrap().suite()
    };
    let ring_order = rustls::crypto::ring::default_provider();
    assert_eq!(
        ring_order.cipher_suites[0].suite(),
        TLS13_AES_256_GCM_SHA384,
        "the client below must prefer AES-256 for this test to mean anything"
    );
    assert_eq!(suite(&tls_connect(&sim).await), TLS13_AES_128_GCM_SHA256);
    let go = kubesim::tls::go_provider();
    assert_eq!(go.cipher_suites[0].suite(), TLS13_AES_128_GCM_SHA256);
    assert_eq!(go.cipher_suites.len(), ring_order.cipher_suites.len());
    let only_chacha = rustls::crypto::CryptoProvider {
        cipher_suites: vec![rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256],
        ..rustls::crypto::ring::default_provider()
    };
    let tls = tls_connect_with(&sim, only_chacha).await;
    assert_eq!(suite(&tls), TLS13_CHACHA20_POLY1305_SHA256);
}

#[tokio::test]
async fn unauthenticated_requests_get_a_401_status() {
    let sim = sim().await;
    for token in [None, Some("nope")] {
        let resp = send(&sim, token, "GET", "/api/v1/pods", &[], Value::Null).await;
        assert_eq!(resp.status(), 401);
        let body: Value =
            serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
        assert_eq!(body["reason"], "Unauthorized");
        assert_eq!(body["kind"], "Status");
    }
    assert_eq!(call(&sim, "GET", "/api/v1/pods", Value::Null).await.0, 200);
}

#[tokio::test]
async fn crud_selectors_and_paging() {
    let sim = sim().await;
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        let (code, _) = call(
            &sim,
            "POST",
            "/api/v1/namespaces/default/pods",
            json!({"metadata": {"name": name, "labels": {"app": app}}, "spec": {"nodeName": "n1"}}),
        )
        .await;
        assert_eq!(code, 201);
    }
    let (code, dup) = call(
        &sim,
        "POST",
        "/api/v1/namespaces/default/pods",
        json!({"metadata": {"name": "a"}}),
    )
    .await;
    assert_eq!((code, dup["reason"].as_str()), (409, Some("AlreadyExists")));
    let (_, l) = call(
        &sim,
        "GET",
        "/api/v1/pods?labelSelector=app%20in%20(web),app!=db",
        Value::Null,
    )
    .await;
    assert_eq!(l["items"].as_array().unwrap().len(), 2);
    let (_, l) = call(
        &sim,
        "GET",
        "/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dc",
        Value::Null,
    )
    .await;
    assert_eq!(l["items"][0]["metadata"]["name"], "c");
    let (_, p1) = call(&sim, "GET", "/api/v1/pods?limit=2", Value::Null).await;
    assert_eq!(p1["items"].as_array().unwrap().len(), 2);
    let cont = p1["metadata"]["continue"].as_str().unwrap();
    let (_, p2) = call(
        &sim,
        "GET",
        &format!("/api/v1/pods?limit=2&continue={cont}"),
        Value::Null,
    )
    .await;
    assert_eq!(p2["items"][0]["metadata"]["name"], "c");
    assert!(p2["metadata"].get("continue").is_none());
    let (code, gone) = call(
        &sim,
        "GET",
        "/api/v1/namespaces/default/pods/zz",
        Value::Null,
    )
    .await;
    assert_eq!(
        (code, gone["message"].as_str()),
        (404, Some("pods \"zz\" not found"))
    );
    let (code, _) = call(
        &sim,
        "DELETE",
        "/api/v1/namespaces/default/pods/a",
        Value::Null,
    )
    .await;
    assert_eq!(code, 200);
}

/// Pages of a filtered list across namespaces (`a` and `a-b`, which sort differently as
/// strings and as (namespace, name)) hold every selected object exactly once, in the
/// unpaged list's order, each page within its limit and only the last without `continue`.
#[tokio::test]
async fn pages_of_a_filtered_list_hold_each_object_once_in_order() {
    let sim = sim().await;
    for ns in ["a", "a-b", "b"] {
        sim.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .unwrap();
        for (i, app) in ["web", "db", "web", "web", "db"].iter().enumerate() {
            let name = format!("p{i}");
            sim.create(json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"namespace": ns, "name": name, "labels": {"app": app}},
                "spec": {"nodeName": "n1"}}))
                .unwrap();
        }
    }
    let names = |list: &Value| -> Vec<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| format!("{}/{}", o["metadata"]["namespace"], o["metadata"]["name"]))
            .collect()
    };
    let (_, whole) = call(
        &sim,
        "GET",
        "/api/v1/pods?labelSelector=app%3Dweb",
        Value::Null,
    )
    .await;
    let whole = names(&whole);
    assert_eq!(whole.len(), 9);
    let mut paged = Vec::new();
    let mut path = "/api/v1/pods?labelSelector=app%3Dweb&limit=2".to_string();
    for page in 1.. {
        assert!(page <= 5, "more pages than 9 objects in pages of 2 need");
        let (code, list) = call(&sim, "GET", &path, Value::Null).await;
        assert_eq!(code, 200, "{list}");
        let items = names(&list);
        assert!(items.len() <= 2 && !items.is_empty(), "{list}");
        paged.extend(items);
        match list["metadata"]["continue"].as_str() {
            Some(token) => {
                path = format!("/api/v1/pods?labelSelector=app%3Dweb&limit=2&continue={token}")
            }
            None => break,
        }
    }
    assert_eq!(paged, whole);
}

#[tokio::test]
async fn node_status_strategic_patch() {
    let sim = sim().await;
    sim.create(
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "spec": {"podCIDR": "10.0.0.0/24"},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]}}),
    )
    .unwrap();
    let (code, n) = call(&sim, "PATCH", "/api/v1/nodes/n1/status", json!({
        "spec": {"podCIDR": "ignored"},
        "status": {"addresses": [{"type": "Hostname", "address": "n1"}], "conditions": [{"type": "Ready", "status": "True"}]}})).await;
    assert_eq!(code, 200, "{n}");
    assert_eq!(n["spec"]["podCIDR"], "10.0.0.0/24");
    assert_eq!(n["status"]["addresses"].as_array().unwrap().len(), 2);
    let (code, c) = call(
        &sim,
        "PUT",
        "/api/v1/nodes/n1",
        json!({"metadata": {"name": "n1", "resourceVersion": "1"}}),
    )
    .await;
    assert_eq!((code, c["reason"].as_str()), (409, Some("Conflict")));
}

#[tokio::test]
async fn watch_resumes_then_410_after_compaction() {
    let sim = sim().await;
    let lease = |name: &str| json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name, "namespace": "default"}});
    let first = sim.create(lease("l1")).unwrap();
    let rv = first["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    sim.create(lease("l2")).unwrap();
    let path = format!(
        "/apis/coordination.k8s.io/v1/namespaces/default/leases?watch=1&resourceVersion={rv}"
    );
    let resp = send(&sim, Some(TOKEN), "GET", &path, &[], Value::Null).await;
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    let ev = events(&mut body, &mut buf, 1).await;
    assert_eq!(
        (
            ev[0]["type"].as_str(),
            ev[0]["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("l2"))
    );
    sim.delete("coordination.k8s.io/v1", "Lease", "default", "l1")
        .unwrap();
    let ev = events(&mut body, &mut buf, 1).await;
    assert_eq!(
        (
            ev[0]["type"].as_str(),
            ev[0]["object"]["metadata"]["name"].as_str()
        ),
        (Some("DELETED"), Some("l1"))
    );

    sim.compact();
    let resp = send(&sim, Some(TOKEN), "GET", &path, &[], Value::Null).await;
    let mut body = resp.into_body();
    let ev = events(&mut body, &mut Vec::new(), 1).await;
    assert_eq!(ev[0]["type"], "ERROR");
    assert_eq!(ev[0]["object"]["code"], 410);
    assert_eq!(ev[0]["object"]["reason"], "Expired");
}

#[tokio::test]
async fn restart_breaks_watches_and_keeps_port_and_objects() {
    let mut sim = sim().await;
    let addr = sim.addr();
    let resp = send(
        &sim,
        Some(TOKEN),
        "GET",
        "/api/v1/namespaces?watch=true",
        &[],
        Value::Null,
    )
    .await;
    let mut body = resp.into_body();
    events(&mut body, &mut Vec::new(), 2).await;
    sim.restart().await.unwrap();
    let end = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match body.frame().await {
                Some(Ok(_)) => continue,
                other => return other.is_none() || matches!(other, Some(Err(_))),
            }
        }
    })
    .await
    .expect("the watch ends when the server restarts");
    assert!(end);
    assert_eq!(sim.addr(), addr);
    let (code, l) = call(&sim, "GET", "/api/v1/namespaces", Value::Null).await;
    assert_eq!(code, 200);
    assert_eq!(l["items"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn pod_subresources_default_the_container() {
    let sim = sim().await;
    sim.create(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "two"},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]}}),
    )
    .unwrap();
    let (code, s) = call(
        &sim,
        "POST",
        "/api/v1/namespaces/default/pods/two/exec?command=ls&stdout=true",
        Value::Null,
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(
        s["message"],
        "a container name must be specified for pod two, choose one of: [a b]"
    );
    let (code, s) = call(
        &sim,
        "GET",
        "/api/v1/namespaces/default/pods/none/attach",
        Value::Null,
    )
    .await;
    assert_eq!(
        (code, s["message"].as_str()),
        (404, Some("pods \"none\" not found"))
    );
    let (code, s) = call(
        &sim,
        "GET",
        "/api/v1/namespaces/default/pods/two/log",
        Value::Null,
    )
    .await;
    assert_eq!(code, 400, "{s}");
    sim.append_log("default", "two", "a", "x");
    sim.restart_container("default", "two", "a");
    sim.append_log("default", "two", "a", "y");
    let (code, s) = call(
        &sim,
        "GET",
        "/api/v1/namespaces/default/pods/two/log?container=a&previous=true",
        Value::Null,
    )
    .await;
    assert_eq!((code, s.as_str()), (200, Some("x\n")));
}

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

async fn table(sim: &KubeSim, path: &str) -> Value {
    let resp = send(
        sim,
        Some(TOKEN),
        "GET",
        path,
        &[("accept", TABLE)],
        Value::Null,
    )
    .await;
    assert_eq!(resp.status(), 200);
    serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap()
}

#[tokio::test]
async fn tables_and_include_object() {
    let sim = sim().await;
    sim.create(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending"}}),
    )
    .unwrap();
    let t = table(&sim, "/api/v1/namespaces").await;
    assert_eq!(t["kind"], "Table");
    let names: Vec<_> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    // kube-apiserver's namespace printer: NAME STATUS AGE.
    assert_eq!(names, ["Name", "Status", "Age"]);
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let t = table(&sim, "/api/v1/namespaces/default/pods?includeObject=Object").await;
    assert_eq!(t["columnDefinitions"].as_array().unwrap().len(), 9);
    assert_eq!(t["rows"][0]["cells"][2], "Pending");
    assert_eq!(t["rows"][0]["object"]["kind"], "Pod");
    let t = table(&sim, "/api/v1/namespaces/default/pods/p?includeObject=None").await;
    assert!(t["rows"][0].get("object").is_none());
    // Watch as Table: the first event carries the columns.
    let resp = send(
        &sim,
        Some(TOKEN),
        "GET",
        "/api/v1/namespaces/default/pods?watch=1",
        &[("accept", TABLE)],
        Value::Null,
    )
    .await;
    let ev = events(&mut resp.into_body(), &mut Vec::new(), 1).await;
    assert_eq!(ev[0]["object"]["kind"], "Table");
    assert_eq!(ev[0]["object"]["rows"][0]["cells"][0], "p");
}

#[tokio::test]
async fn field_selector_watch_sees_pods_enter_and_leave() {
    let sim = sim().await;
    sim.create(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}))
        .unwrap();
    let resp = send(
        &sim,
        Some(TOKEN),
        "GET",
        "/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dn1",
        &[],
        Value::Null,
    )
    .await;
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    let bind = json!({"spec": {"nodeName": "n1"}});
    sim.patch("v1", "Pod", "default", "p", &bind, false)
        .unwrap();
    let ev = events(&mut body, &mut buf, 1).await;
    assert_eq!(ev[0]["type"], "ADDED");
    let label = json!({"metadata": {"labels": {"x": "y"}}});
    sim.patch("v1", "Pod", "default", "p", &label, false)
        .unwrap();
    let away = json!({"spec": {"nodeName": "n2"}});
    sim.patch("v1", "Pod", "default", "p", &away, false)
        .unwrap();
    let ev = events(&mut body, &mut buf, 2).await;
    assert_eq!(
        (ev[0]["type"].as_str(), ev[1]["type"].as_str()),
        (Some("MODIFIED"), Some("DELETED"))
    );
    assert_eq!(ev[1]["object"]["spec"]["nodeName"], "n2");
}

#[tokio::test]
async fn watch_list_ends_initial_events_with_a_bookmark() {
    let sim = sim().await;
    let path = "/api/v1/namespaces?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan";
    let resp = send(&sim, Some(TOKEN), "GET", path, &[], Value::Null).await;
    let ev = events(&mut resp.into_body(), &mut Vec::new(), 3).await;
    assert_eq!(
        (ev[0]["type"].as_str(), ev[1]["type"].as_str()),
        (Some("ADDED"), Some("ADDED"))
    );
    assert_eq!(ev[2]["type"], "BOOKMARK");
    assert_eq!(
        ev[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
}

#[tokio::test]
async fn log_options() {
    let sim = sim().await;
    sim.create(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "l"},
        "spec": {"containers": [{"name": "c"}]}}),
    )
    .unwrap();
    for line in ["alpha", "beta", "gamma"] {
        sim.append_log("default", "l", "c", line);
    }
    let base = "/api/v1/namespaces/default/pods/l/log";
    let (_, v) = call(&sim, "GET", &format!("{base}?tailLines=1"), Value::Null).await;
    assert_eq!(v, "gamma\n");
    let (_, v) = call(&sim, "GET", &format!("{base}?limitBytes=8"), Value::Null).await;
    assert_eq!(v, "alpha\nbe");
    let (_, v) = call(
        &sim,
        "GET",
        &format!("{base}?timestamps=true&tailLines=1"),
        Value::Null,
    )
    .await;
    let (ts, text) = v.as_str().unwrap().split_once(' ').unwrap();
    assert_eq!(text, "gamma\n");
    assert!(ts.ends_with('Z') && ts.contains('T'), "{ts}");
    let (_, v) = call(
        &sim,
        "GET",
        &format!("{base}?sinceSeconds=3600"),
        Value::Null,
    )
    .await;
    assert_eq!(v, "alpha\nbeta\ngamma\n");
    let (code, v) = call(&sim, "GET", &format!("{base}?sinceSeconds=0"), Value::Null).await;
    assert_eq!(code, 422, "{v}");
    let (code, v) = call(&sim, "GET", &format!("{base}?container=zz"), Value::Null).await;
    assert_eq!(
        (code, v["message"].as_str()),
        (400, Some("container zz is not valid for pod l"))
    );
}

#[tokio::test]
async fn apply_creates_then_merges() {
    let sim = sim().await;
    let path = "/apis/coordination.k8s.io/v1/namespaces/default/leases/l?fieldManager=leafgate";
    let ct = [("content-type", "application/apply-patch+yaml")];
    let body = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}});
    let resp = send(&sim, Some(TOKEN), "PATCH", path, &ct, body).await;
    assert_eq!(resp.status(), 201);
    let body = json!({"spec": {"leaseDurationSeconds": 15}});
    let resp = send(&sim, Some(TOKEN), "PATCH", path, &ct, body.clone()).await;
    assert_eq!(resp.status(), 200);
    let lease: Value =
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(
        (
            lease["spec"]["holderIdentity"].as_str(),
            lease["spec"]["leaseDurationSeconds"].as_i64()
        ),
        (Some("a"), Some(15))
    );
    let no_manager = "/apis/coordination.k8s.io/v1/namespaces/default/leases/l";
    let resp = send(&sim, Some(TOKEN), "PATCH", no_manager, &ct, body).await;
    assert_eq!(resp.status(), 422);
}

/// Bodies as kube-apiserver's `TestMaxResourceSize` sends them: past 3 MiB a create and a
/// patch get 413 RequestEntityTooLarge; under it an unknown field, however big, is pruned;
/// deep nesting is either pruned or a 400 (the two answers that test allows).
#[tokio::test]
async fn oversized_and_deeply_nested_bodies() {
    const LIMIT: usize = 3 * 1024 * 1024;
    let sim = sim().await;
    let path = "/apis/gateway.networking.k8s.io/v1/namespaces/default/gateways";
    let gw = |name: &str, junk: Value| {
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": name}, "spec": {"gatewayClassName": "c", "listeners": [], "junk": junk}})
    };
    let too_large = |code: u16, v: &Value| {
        assert_eq!(code, 413, "{v}");
        assert_eq!(
            (
                v["reason"].as_str(),
                v["message"].as_str(),
                v["code"].as_u64()
            ),
            (
                Some("RequestEntityTooLarge"),
                Some("Request entity too large: limit is 3145728"),
                Some(413)
            )
        );
    };

    let under = gw("big", json!("x".repeat(LIMIT - 300)));
    assert!(under.to_string().len() <= LIMIT);
    let (code, v) = call(&sim, "POST", path, under).await;
    assert_eq!(code, 201);
    assert_eq!(v["spec"].get("junk"), None, "pruned");
    let over = gw("huge", json!("x".repeat(LIMIT)));
    let (code, v) = call(&sim, "POST", path, over).await;
    too_large(code, &v);
    let patch = json!({"spec": {"junk": "x".repeat(LIMIT)}});
    let resp = send(
        &sim,
        Some(TOKEN),
        "PATCH",
        &format!("{path}/big"),
        &[("content-type", "application/merge-patch+json")],
        patch,
    )
    .await;
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    too_large(code, &serde_json::from_slice(&bytes).unwrap());

    let nested = |depth: usize| (0..depth).fold(json!("x"), |inner, _| json!({"a": inner}));
    let (code, v) = call(&sim, "POST", path, gw("nested", nested(100))).await;
    assert_eq!(code, 201, "{v}");
    assert_eq!(v["spec"].get("junk"), None, "pruned");
    let (code, v) = call(&sim, "POST", path, gw("deeper", nested(200))).await;
    assert_eq!(
        (code, v["reason"].as_str()),
        (400, Some("BadRequest")),
        "{v}"
    );
    let (code, list) = call(&sim, "GET", path, Value::Null).await;
    assert_eq!(code, 200);
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["big", "nested"]);
}

// ---- Streaming subresources: negotiation answers and raw WebSocket clients ----

async fn stream_pod(sim: &KubeSim, annotations: Value) {
    sim.create(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "annotations": annotations},
        "spec": {"nodeName": "n1", "containers": [{"name": "app"}]}}))
        .unwrap();
}

/// Status, `X-Accepted-Stream-Protocol-Versions` values and body text of a streaming request.
async fn refused(
    sim: &KubeSim,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> (u16, Vec<String>, String) {
    let resp = send(sim, Some(TOKEN), method, path, headers, Value::Null).await;
    let code = resp.status().as_u16();
    let accepted = resp
        .headers()
        .get_all("x-accepted-stream-protocol-versions")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (code, accepted, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn streaming_negotiation_refusals() {
    let sim = sim().await;
    stream_pod(&sim, json!({})).await;
    let exec = "/api/v1/namespaces/default/pods/web/exec?command=true&stdout=true";
    let spdy = [("connection", "Upgrade"), ("upgrade", "SPDY/3.1")];
    let (code, _, body) = refused(&sim, "POST", exec, &spdy).await;
    assert_eq!(
        (code, body.as_str()),
        (
            400,
            "unable to upgrade: X-Stream-Protocol-Version is required\n"
        )
    );
    let old = [
        ("connection", "Upgrade"),
        ("upgrade", "SPDY/3.1"),
        ("x-stream-protocol-version", "v3.channel.k8s.io"),
        (
            "x-stream-protocol-version",
            "v2.channel.k8s.io,v1.channel.k8s.io",
        ),
    ];
    let (code, accepted, body) = refused(&sim, "POST", exec, &old).await;
    assert_eq!(code, 403, "{body}");
    assert_eq!(accepted, ["v5.channel.k8s.io", "v4.channel.k8s.io"]);
    let forward = "/api/v1/namespaces/default/pods/web/portforward";
    let wrong = [
        ("connection", "Upgrade"),
        ("upgrade", "SPDY/3.1"),
        ("x-stream-protocol-version", "v4.channel.k8s.io"),
    ];
    let (code, accepted, _) = refused(&sim, "POST", forward, &wrong).await;
    assert_eq!(
        (code, accepted),
        (403, vec!["portforward.k8s.io".to_string()])
    );
    let (code, _, body) = refused(&sim, "POST", exec, &[]).await;
    assert_eq!((code, body.as_str()), (400, "Upgrade request required\n"));
    // The v4 WebSocket channels are laid out from the ports in the query.
    let ws = [
        ("connection", "Upgrade"),
        ("upgrade", "websocket"),
        ("sec-websocket-version", "13"),
        ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ("sec-websocket-protocol", "v4.channel.k8s.io"),
    ];
    let (code, _, body) = refused(&sim, "GET", forward, &ws).await;
    assert_eq!(
        (code, body.as_str()),
        (400, "query parameter \"port\" is required\n")
    );
    let (code, _, _) = refused(&sim, "GET", exec, &ws[..4]).await;
    assert_eq!(code, 101, "no subprotocol is the kubelet's channel.k8s.io");
    let (code, _, body) = refused(
        &sim,
        "GET",
        "/api/v1/namespaces/default/pods/web/exec?command=true",
        &ws,
    )
    .await;
    assert_eq!(
        (code, body.as_str()),
        (
            400,
            "you must specify at least 1 of stdin, stdout, stderr\n"
        )
    );
    sim.create(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending"},
        "spec": {"containers": [{"name": "app"}]}}),
    )
    .unwrap();
    for sub in [
        "exec?command=true&stdout=true",
        "attach?stdout=true",
        "portforward",
    ] {
        let (code, s) = call(
            &sim,
            "POST",
            &format!("/api/v1/namespaces/default/pods/pending/{sub}"),
            Value::Null,
        )
        .await;
        assert_eq!(
            (code, s["message"].as_str()),
            (400, Some("pod pending does not have a host assigned")),
            "{sub}"
        );
    }
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;

/// A WebSocket to `path` offering `protocol`, as kubectl would open it.
async fn ws_connect(sim: &KubeSim, path: &str, protocol: &str) -> Ws {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut req = format!("wss://localhost{path}")
        .into_client_request()
        .unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    req.headers_mut()
        .insert("sec-websocket-protocol", protocol.parse().unwrap());
    let (ws, resp) = tokio_tungstenite::client_async(req, tls_connect(sim).await)
        .await
        .unwrap();
    assert_eq!(resp.headers()["sec-websocket-protocol"], protocol);
    ws
}

/// Every message until the server closes, within 10s; the close must be a normal one.
async fn ws_drain(ws: &mut Ws) -> Vec<tokio_tungstenite::tungstenite::Message> {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(msg) = ws.next().await {
            match msg.unwrap() {
                Message::Close(frame) => {
                    assert_eq!(u16::from(frame.expect("a close status").code), 1000);
                    return;
                }
                m => got.push(m),
            }
        }
        panic!("the connection ended without a close");
    })
    .await
    .expect("the server closes within 10s");
    got
}

#[tokio::test]
async fn websocket_v5_exec_with_stdin_close_and_exit_code() {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let sim = sim().await;
    stream_pod(&sim, json!({})).await;
    let mut ws = ws_connect(
        &sim,
        "/api/v1/namespaces/default/pods/web/exec?command=sh&command=-c&command=cat%3B%20echo%20oops%20%3E%262%3B%20exit%202&stdin=true&stdout=true&stderr=true",
        "v5.channel.k8s.io",
    )
    .await;
    ws.send(Message::binary(b"\x00from stdin".to_vec()))
        .await
        .unwrap();
    // v5 CLOSE of stdin: cat sees EOF and the script goes on.
    ws.send(Message::binary(vec![255, 0])).await.unwrap();
    let got = ws_drain(&mut ws).await;
    assert_eq!(
        got[0],
        Message::binary(vec![1]),
        "first an empty stdout frame"
    );
    let on = |ch: u8| -> Vec<u8> {
        got[1..]
            .iter()
            .filter_map(|m| match m {
                Message::Binary(b) if b[0] == ch => Some(b[1..].to_vec()),
                _ => None,
            })
            .flatten()
            .collect()
    };
    assert_eq!(on(1), b"from stdin");
    assert_eq!(on(2), b"oops\n");
    let status: Value = serde_json::from_slice(&on(3)).unwrap();
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["reason"], "NonZeroExitCode");
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "ExitCode", "message": "2"}])
    );
}

#[tokio::test]
async fn websocket_base64_exec_success() {
    use tokio_tungstenite::tungstenite::Message;
    let sim = sim().await;
    stream_pod(&sim, json!({})).await;
    let mut ws = ws_connect(
        &sim,
        "/api/v1/namespaces/default/pods/web/exec?command=echo&command=hi&stdout=true",
        "v4.base64.channel.k8s.io",
    )
    .await;
    let got = ws_drain(&mut ws).await;
    assert_eq!(
        got,
        [
            Message::text("1"),
            Message::text("1aGkK"),
            Message::text(format!(
                "3{}",
                base64::Engine::encode(
                    &base64::engine::general_purpose::STANDARD,
                    r#"{"metadata":{},"status":"Success"}"#
                )
            )),
        ]
    );
}

#[tokio::test]
async fn websocket_v4_port_forward_channels() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut conn, _) = listener.accept().await.unwrap();
        let (mut r, mut w) = conn.split();
        let _ = tokio::io::copy(&mut r, &mut w).await;
    });
    let sim = sim().await;
    stream_pod(
        &sim,
        json!({"kubesim.leafgate.io/port-8080": target.to_string()}),
    )
    .await;
    let mut ws = ws_connect(
        &sim,
        "/api/v1/namespaces/default/pods/web/portforward?ports=8080,9090",
        "v4.channel.k8s.io",
    )
    .await;
    let mut next = async || {
        tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("a message within 10s")
            .unwrap()
            .unwrap()
    };
    // Each port's data and error channel opens with the port, little-endian.
    let mut opening = Vec::new();
    for _ in 0..4 {
        opening.push(next().await);
    }
    for (ch, port) in [(0u8, 8080u16), (1, 8080), (2, 9090), (3, 9090)] {
        let mut want = vec![ch];
        want.extend_from_slice(&port.to_le_bytes());
        assert!(opening.contains(&Message::binary(want)), "{opening:?}");
    }
    // Port 9090 has no annotation: its error channel says so, as JSON.
    let err = next().await;
    let Message::Binary(b) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(b[0], 3);
    let body: Value = serde_json::from_slice(&b[1..]).unwrap();
    assert_eq!(body["closeConnection"], true);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("error forwarding port 9090 to pod web_default"),
        "{body}"
    );
    ws.send(Message::binary(b"\x00ping".to_vec()))
        .await
        .unwrap();
    let echoed = tokio::time::timeout(Duration::from_secs(10), ws.next())
        .await
        .expect("the echo within 10s")
        .unwrap()
        .unwrap();
    assert_eq!(echoed, Message::binary(b"\x00ping".to_vec()));
}

#[tokio::test]
async fn a_dropped_exec_connection_kills_the_process() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let sim = sim().await;
    stream_pod(&sim, json!({})).await;
    let mut ws = ws_connect(
        &sim,
        "/api/v1/namespaces/default/pods/web/exec?command=sh&command=-c&command=echo%20%24%24%3B%20exec%20sleep%2060&stdout=true",
        "v5.channel.k8s.io",
    )
    .await;
    let mut out = Vec::new();
    let pid = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match ws.next().await.unwrap().unwrap() {
                Message::Binary(b) if b[0] == 1 => out.extend_from_slice(&b[1..]),
                other => panic!("unexpected {other:?}"),
            }
            if out.ends_with(b"\n") {
                return String::from_utf8(out.clone()).unwrap().trim().to_string();
            }
        }
    })
    .await
    .expect("the pid within 10s");
    let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
    assert!(proc.exists(), "the process runs while the client is there");
    drop(ws);
    let gone = async {
        while proc.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), gone)
        .await
        .expect("the process is killed and reaped within 10s of the hang-up");
}
