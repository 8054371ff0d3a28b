//! The objects an ingress controller reads and writes, against the real kubectl:
//! `kubectl apply` of an IngressClass, Service, EndpointSlice, Secrets and an Ingress;
//! `kubectl get ingress` columns; the status subresource (and the main resource leaving
//! status alone); no-op writes that store nothing; `type=` field selectors on Secrets;
//! Events read with `kubectl get events` and `kubectl describe ingress`.

use std::path::Path;

use super::common::{fixture, kubectl};
use kubesim::KubeSim;
use kubesim::testkit::{Finished, run};
use serde_json::json;

const TOKEN: &str = "t0ken-for-ingress";

async fn ok(bin: &Path, dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> String {
    let Finished { code, out, err } = run(kubectl(bin, dir, args), stdin).await;
    assert_eq!(code, Some(0), "kubectl {args:?} failed: {err}\n{out}");
    out
}

fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// The objects as a user writes them; the Ingress last.
fn objects(backend_port: u16) -> Vec<serde_json::Value> {
    vec![
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
               "metadata": {"name": "leafgate"},
               "spec": {"controller": "leafgate.io/ingress-controller"}}),
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "web", "namespace": "default"},
               "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": "web-abc", "namespace": "default",
                            "labels": {"kubernetes.io/service-name": "web"}},
               "addressType": "IPv4",
               "ports": [{"name": "http", "port": 8080}],
               "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}]}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
               "metadata": {"name": "web-tls", "namespace": "default"},
               "data": {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": "other", "namespace": "default"},
               "data": {"x": "eA=="}}),
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
               "metadata": {"name": "web", "namespace": "default"},
               "spec": {"ingressClassName": "leafgate",
                        "tls": [{"hosts": ["app.example"], "secretName": "web-tls"}],
                        "rules": [{"host": "app.example", "http": {"paths": [
                            {"path": "/", "pathType": "Prefix",
                             "backend": {"service": {"name": "web", "port": {"number": backend_port}}}}]}}]}}),
    ]
}

/// `objects` as a YAML stream (JSON documents are YAML).
fn manifests(backend_port: u16) -> String {
    objects(backend_port)
        .iter()
        .map(|o| format!("---\n{o}\n"))
        .collect::<String>()
}

fn ingress(sim: &KubeSim) -> serde_json::Value {
    let res = kubesim::api::resource_of("networking.k8s.io/v1", "Ingress").unwrap();
    sim.store().get(res, "default", "web").unwrap()
}

/// kubesim serves no OpenAPI documents, so kubectl's client-side validation is off
/// (`--validate=false`); apply's patch still comes from kubectl's compiled-in types.
#[tokio::test]
async fn apply_get_ingress_and_status_subresource() {
    for bin in kubesim::kubectl::all() {
        let f = fixture(TOKEN).await;
        let dir = f.dir.path();
        let apply = ["apply", "--validate=false", "-f", "-"];
        let out = ok(&bin, dir, &apply, Some(manifests(80).as_bytes())).await;
        assert!(
            out.contains("ingress.networking.k8s.io/web created"),
            "{out}"
        );
        let created = ingress(&f.sim);
        assert!(
            created["metadata"]["creationTimestamp"]
                .as_str()
                .is_some_and(|t| t.ends_with('Z')),
            "{created}"
        );

        let r = rows(&ok(&bin, dir, &["get", "ingress"], None).await);
        assert_eq!(
            r[0],
            ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"],
            "{r:?}"
        );
        // ADDRESS is empty: the row has one cell fewer, PORTS "80, 443" splits in two.
        assert_eq!(r[1][..5], ["web", "leafgate", "app.example", "80,", "443"]);

        // The status subresource, as a controller writes it.
        let status = r#"{"status":{"loadBalancer":{"ingress":[{"ip":"203.0.113.7"}]}}}"#;
        let patch_status = [
            "patch",
            "ingress",
            "web",
            "--subresource=status",
            "--type=merge",
            "-p",
            status,
        ];
        ok(&bin, dir, &patch_status, None).await;
        let r = rows(&ok(&bin, dir, &["get", "ingress"], None).await);
        assert_eq!(r[1][..4], ["web", "leafgate", "app.example", "203.0.113.7"]);

        // The same status again stores nothing: no new resourceVersion, no watch event.
        let rv = f.sim.store().resource_version();
        ok(&bin, dir, &patch_status, None).await;
        assert_eq!(f.sim.store().resource_version(), rv, "a no-op write");

        // The main resource ignores status: a spec change goes in, the status stays.
        let both = r#"{"spec":{"ingressClassName":"other"},"status":{"loadBalancer":{"ingress":[{"ip":"198.51.100.1"}]}}}"#;
        ok(
            &bin,
            dir,
            &["patch", "ingress", "web", "--type=merge", "-p", both],
            None,
        )
        .await;
        let now = ingress(&f.sim);
        assert_eq!(now["spec"]["ingressClassName"], "other");
        assert_eq!(
            now["status"]["loadBalancer"]["ingress"][0]["ip"],
            "203.0.113.7"
        );

        // A second apply patches the spec (the backend port) and keeps the status.
        let out = ok(&bin, dir, &apply, Some(manifests(81).as_bytes())).await;
        assert!(
            out.contains("ingress.networking.k8s.io/web configured"),
            "{out}"
        );
        let now = ingress(&f.sim);
        assert_eq!(
            now["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["port"]["number"],
            81
        );
        assert_eq!(
            now["status"]["loadBalancer"]["ingress"][0]["ip"],
            "203.0.113.7"
        );

        // Secrets by type, as a controller lists only TLS ones.
        let r = rows(
            &ok(
                &bin,
                dir,
                &[
                    "get",
                    "secrets",
                    "--field-selector",
                    "type=kubernetes.io/tls",
                ],
                None,
            )
            .await,
        );
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!(r[1][0], "web-tls");
        let bad = run(
            kubectl(&bin, dir, &["get", "ingress", "--field-selector", "type=x"]),
            None,
        )
        .await;
        assert_ne!(bad.code, Some(0));
        assert!(
            bad.err.contains("field label not supported: type"),
            "{}",
            bad.err
        );
    }
}

#[tokio::test]
async fn events_read_by_kubectl() {
    let f = fixture(TOKEN).await;
    let dir = f.dir.path();
    let web = objects(80).pop().expect("the Ingress is last");
    f.sim.create(web).unwrap();
    let ing = ingress(&f.sim);
    let now = kubesim::store::now_rfc3339();
    f.sim
        .create(json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web.17f0", "namespace": "default"},
            "involvedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                               "namespace": "default", "name": "web",
                               "uid": ing["metadata"]["uid"]},
            "type": "Warning", "reason": "InvalidAnnotation",
            "message": "leafgate.io/tenant: no tenant named nobody",
            "source": {"component": "leafgate"},
            "reportingComponent": "leafgate.io/ingress-controller",
            "firstTimestamp": now, "lastTimestamp": now, "count": 1
        }))
        .unwrap();
    f.sim
        .create(json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "other.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
            "type": "Normal", "reason": "Pulled", "message": "pulled",
            "firstTimestamp": now, "lastTimestamp": now, "count": 3
        }))
        .unwrap();
    for bin in kubesim::kubectl::all() {
        let r = rows(&ok(&bin, dir, &["get", "events"], None).await);
        assert_eq!(
            r[0],
            ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
            "{r:?}"
        );
        assert_eq!(r.len(), 3, "{r:?}");
        let selected = rows(
            &ok(
                &bin,
                dir,
                &[
                    "get",
                    "events",
                    "--field-selector",
                    "involvedObject.kind=Ingress,involvedObject.name=web,reason=InvalidAnnotation",
                ],
                None,
            )
            .await,
        );
        assert_eq!(selected.len(), 2, "{selected:?}");
        assert_eq!(
            selected[1][1..4],
            ["Warning", "InvalidAnnotation", "ingress/web"]
        );
        let described = ok(&bin, dir, &["describe", "ingress", "web"], None).await;
        assert!(
            described.contains("InvalidAnnotation")
                && described.contains("leafgate.io/tenant: no tenant named nobody")
                && !described.contains("Pulled"),
            "{described}"
        );
    }
}
