//! Kubernetes Ingress fixtures: the objects an ingress controller reads (IngressClass,
//! Ingress, Service, EndpointSlice, TLS Secret) built as the API returns them, written into
//! a kubesim root, and the gateway config that points leafgate at that root. Nothing here
//! waits on a fixed delay: `eventually` polls the condition a test names.

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use kubesim::{Credential, KubeSim};

use crate::config::Kubernetes;
use serde_json::{Value, json};

/// The controller name leafgate's IngressClass carries.
pub const CONTROLLER: &str = "leafgate.io/ingress-controller";

/// An IngressClass `name` for leafgate's controller, marked default when `default`.
pub fn ingress_class(name: &str, default: bool) -> Value {
    let mut class = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": name},
        "spec": {"controller": CONTROLLER}
    });
    if default {
        class["metadata"]["annotations"] =
            json!({"ingressclass.kubernetes.io/is-default-class": "true"});
    }
    class
}

/// A Service port: `name`, `port`, and the `appProtocol` when given.
pub fn service_port(name: &str, port: u16, app_protocol: Option<&str>) -> Value {
    let mut p = json!({"name": name, "port": port, "protocol": "TCP", "targetPort": name});
    if let Some(a) = app_protocol {
        p["appProtocol"] = json!(a);
    }
    p
}

/// A ClusterIP Service `ns/name` with `ports` (from `service_port`).
pub fn service(ns: &str, name: &str, ports: Vec<Value>) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"type": "ClusterIP", "selector": {"app": name}, "ports": ports}
    })
}

/// An EndpointSlice `ns/name` of Service `svc`: one port (`port_name`, the target port
/// number all its endpoints listen on) and endpoints as (address, ready).
pub fn slice(
    ns: &str,
    name: &str,
    svc: &str,
    port_name: &str,
    port: u16,
    endpoints: &[(&str, bool)],
) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": ns,
                     "labels": {"kubernetes.io/service-name": svc,
                                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
        "addressType": "IPv4",
        "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
        "endpoints": endpoints.iter().map(|(addr, ready)| json!({
            "addresses": [addr],
            "conditions": {"ready": ready, "serving": ready, "terminating": false}
        })).collect::<Vec<_>>()
    })
}

/// A Service `ns/name` whose port `http` (port 80) has one slice pointing at `upstream`.
pub fn backend_objects(ns: &str, name: &str, upstream: SocketAddr) -> [Value; 2] {
    [
        service(ns, name, vec![service_port("http", 80, None)]),
        slice(
            ns,
            &format!("{name}-1"),
            name,
            "http",
            upstream.port(),
            &[(&upstream.ip().to_string(), true)],
        ),
    ]
}

/// A `kubernetes.io/tls` Secret holding the PEM files `cert` and `key`.
pub fn tls_secret(ns: &str, name: &str, cert: &Path, key: &Path) -> Value {
    let b64 =
        |p: &Path| base64::engine::general_purpose::STANDARD.encode(std::fs::read(p).unwrap());
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": ns},
        "data": {"tls.crt": b64(cert), "tls.key": b64(key)}
    })
}

/// An Ingress backend: Service `svc` at port number `port`.
pub fn backend(svc: &str, port: u16) -> Value {
    json!({"service": {"name": svc, "port": {"number": port}}})
}

/// One path of a rule: (`path`, `pathType`, backend).
pub fn path(path: &str, path_type: &str, backend: Value) -> Value {
    json!({"path": path, "pathType": path_type, "backend": backend})
}

/// A rule for `host` ("" for any host) with `paths`.
pub fn rule(host: &str, paths: Vec<Value>) -> Value {
    let mut r = json!({"http": {"paths": paths}});
    if !host.is_empty() {
        r["host"] = json!(host);
    }
    r
}

/// An Ingress `ns/name` of class `class` (None: no `ingressClassName`) with `rules`.
pub fn ingress(ns: &str, name: &str, class: Option<&str>, rules: Vec<Value>) -> Value {
    let mut i = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"rules": rules}
    });
    if let Some(c) = class {
        i["spec"]["ingressClassName"] = json!(c);
    }
    i
}

/// An Ingress of class `class` sending `host` (all paths) to Service `svc` port 80.
pub fn simple_ingress(ns: &str, name: &str, class: &str, host: &str, svc: &str) -> Value {
    ingress(
        ns,
        name,
        Some(class),
        vec![rule(host, vec![path("/", "Prefix", backend(svc, 80))])],
    )
}

/// Reads an object back from the simulator's store.
pub fn get(sim: &KubeSim, api_version: &str, kind: &str, ns: &str, name: &str) -> Option<Value> {
    let res = kubesim::api::resource_of(api_version, kind).ok()?;
    sim.store().get(res, ns, name).ok()
}

/// Every object of `api_version`/`kind` in the simulator (all namespaces).
pub fn list(sim: &KubeSim, api_version: &str, kind: &str) -> Vec<Value> {
    let res = kubesim::api::resource_of(api_version, kind).expect("a served kind");
    sim.store().list(res, "").0
}

/// Writes a kubeconfig for the root as `dir/root.kubeconfig`, authenticating as `user`
/// (a client certificate), so the request record tells gateways apart.
pub fn root_kubeconfig(sim: &KubeSim, dir: &Path, user: &str) {
    sim.kubeconfig(
        &Credential::ClientCert(user.into()),
        &dir.join("root.kubeconfig"),
    )
    .unwrap();
}

/// The `[kubernetes]` section for the root at `root.kubeconfig`, replica `identity`, with
/// short election timings so a replica leads within a second (the defaults are 15/5/2 s),
/// and `[kubernetes.ingress]` holding `ingress` (`class`, `publish_address`...). The test
/// "pods" listen on loopback, which Ingress backends reach only when `allow_backends`
/// opens it: added unless `ingress` says otherwise (the hostile suite does).
pub fn kubernetes_section(identity: &str, ingress: Value) -> Kubernetes {
    let mut ingress = ingress;
    if let Some(keys) = ingress.as_object_mut() {
        keys.entry("allow_backends")
            .or_insert_with(|| json!(["127.0.0.0/8"]));
    }
    Kubernetes::new("root.kubeconfig")
        .identity(identity)
        .election("2s", "1s", "200ms")
        .ingress(ingress)
}

/// Polls `check` every 20 ms until it holds; returns how long it took. Panics after
/// `within` with `what`.
pub async fn eventually<F, Fut>(what: &str, within: Duration, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < within, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    started.elapsed()
}
