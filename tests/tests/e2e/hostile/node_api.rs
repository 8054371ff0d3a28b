//! node-api callers, tried as a hostile client certificate would: every certificate the
//! client CA signs (in kubeadm clusters: users', nodes', CSR-issued ones) reaches the
//! listener, so only the names the kubelet trusts may count. `allowed_clients` matches the
//! subject's CN (and O, when the entry names one), never a SAN; without it each caller is
//! authorized by a SubjectAccessReview on `nodes/proxy` at the root cluster, as the
//! kubelet's webhook mode does; with neither the config is refused.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use kubesim::{Credential, KubeSim};
use leafgate_tests::certs::TestCa;
use leafgate_tests::client::next_data;
use leafgate_tests::config::{Kubernetes, Leaf, Listener, Tenant, VirtualNode};
use leafgate_tests::{Config, TestGateway};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// The kubelet-client name the root API server presents (kubeadm's).
const APISERVER: &str = "kube-apiserver-kubelet-client";
/// The SubjectAccessReview path at the root cluster.
const SAR_PATH: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

/// The client CA of the node-api listener, issuing any subject a test needs.
struct ClientCa {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

/// A client certificate's subject: CN, O (groups) and DNS SANs.
struct Subject<'a> {
    cn: &'a str,
    orgs: &'a [&'a str],
    dns: &'a [&'a str],
}

impl ClientCa {
    fn new() -> ClientCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "root kubelet-client CA");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        ClientCa {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A client certificate and its key for `subject`.
    fn issue(&self, subject: &Subject) -> (CertificateDer<'static>, PrivateKeyDer<'static>) {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, subject.cn);
        for o in subject.orgs {
            params.distinguished_name.push(DnType::OrganizationName, *o);
        }
        params.subject_alt_names = subject
            .dns
            .iter()
            .map(|d| SanType::DnsName((*d).try_into().unwrap()))
            .collect();
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (
            cert.der().clone(),
            PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).unwrap(),
        )
    }
}

fn pod(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": ns, "name": name},
        "spec": {"nodeName": "leaf-node", "containers": [{"name": "main", "image": "busybox"}]}
    })
}

/// A gateway with a node-api listener `kubelet` in front of one leaf holding `apps/web-0`
/// (tenant `acme`), and, for SubjectAccessReview, a root cluster with one virtual node.
struct Bed {
    gw: TestGateway,
    leaf: KubeSim,
    root: Option<KubeSim>,
    server_ca: TestCa,
    client_ca: ClientCa,
}

/// The bed's config without its node-api listener, and that listener.
fn base() -> (Config, Listener) {
    let listener = Listener::node_api("kubelet")
        .tls("node-api.pem", "node-api-key.pem")
        .client_ca("client-ca.pem");
    let config = Config::new()
        .admin()
        .leaf(Leaf::new("leaf-1", "leaf.kubeconfig"))
        .tenant(Tenant::new("acme").namespaces(["apps"]));
    (config, listener)
}

/// The bed's config letting in `allowed_clients` by name.
fn allowed_config(allowed_clients: &[&str]) -> Config {
    let (config, listener) = base();
    config.listener(listener.allowed_clients(allowed_clients.iter()))
}

impl Bed {
    /// `allowed_clients` given: matched by name; `None`: authorized by the root cluster.
    async fn start(allowed_clients: Option<&[&str]>) -> Bed {
        let leaf = KubeSim::builder().start().await.unwrap();
        leaf.create(pod("apps", "web-0")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        leaf.kubeconfig(
            &Credential::ClientCert("leafgate".into()),
            &dir.path().join("leaf.kubeconfig"),
        )
        .unwrap();
        let server_ca = TestCa::new("node-api serving CA");
        server_ca.issue(dir.path(), "node-api", &["leafgate.node", "127.0.0.1"]);
        let client_ca = ClientCa::new();
        std::fs::write(dir.path().join("client-ca.pem"), &client_ca.pem).unwrap();
        let (mut config, listener) = base();
        let root = match allowed_clients {
            Some(names) => {
                config = allowed_config(names);
                None
            }
            None => {
                let root = KubeSim::builder().start().await.unwrap();
                for ns in ["kube-node-lease", "leafgate-system"] {
                    root.create(
                        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
                    )
                    .unwrap();
                }
                root.kubeconfig(
                    &Credential::ClientCert("leafgate".into()),
                    &dir.path().join("root.kubeconfig"),
                )
                .unwrap();
                config = config
                    .listener(listener)
                    .kubernetes(
                        Kubernetes::new("root.kubeconfig")
                            .gateway_address("127.0.0.1")
                            .node_api_listener("kubelet")
                            .set("namespace", "leafgate-system")
                            .identity("gw-0"),
                    )
                    .virtual_node(VirtualNode::own("vn-leaf-1", "leaf-1"));
                Some(root)
            }
        };
        let gw = TestGateway::start_in(dir, config).await;
        let bed = Bed {
            gw,
            leaf,
            root,
            server_ca,
            client_ca,
        };
        bed.indexed("apps", "web-0").await;
        bed
    }

    fn addr(&self) -> SocketAddr {
        self.gw.addr("kubelet")
    }

    fn root(&self) -> &KubeSim {
        self.root.as_ref().expect("a bed with a root cluster")
    }

    async fn indexed(&self, ns: &str, name: &str) {
        self.gw.indexed(ns, name).await;
    }

    /// One request presenting a certificate for `subject`: the status and the body.
    async fn call(
        &self,
        subject: &Subject<'_>,
        method: Method,
        path: &str,
    ) -> (StatusCode, String) {
        let res = self.send(subject, method, path).await;
        let status = res.status();
        let body = res.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    /// One request presenting a certificate for `subject`: the response, body unread.
    async fn send(
        &self,
        subject: &Subject<'_>,
        method: Method,
        path: &str,
    ) -> http::Response<hyper::body::Incoming> {
        let (cert, key) = self.client_ca.issue(subject);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(self.server_ca.roots())
            .with_client_auth_cert(vec![cert], key)
            .unwrap();
        let tcp = TcpStream::connect(self.addr()).await.unwrap();
        let tls = TlsConnector::from(Arc::new(tls))
            .connect(ServerName::try_from("leafgate.node").unwrap(), tcp)
            .await
            .unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .unwrap();
        tokio::spawn(conn);
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "leafgate.node")
            .body(Empty::<Bytes>::new())
            .unwrap();
        sender.send_request(req).await.unwrap()
    }

    /// How many log requests for `apps/web-0` reached the leaf.
    fn leaf_log_calls(&self) -> usize {
        self.leaf
            .requests()
            .iter()
            .filter(|r| r.path == "/api/v1/namespaces/apps/pods/web-0/log")
            .count()
    }

    /// SubjectAccessReviews the root answered for `user`.
    fn reviews_of(&self, user: &str) -> Vec<Value> {
        self.root()
            .access_reviews()
            .into_iter()
            .filter(|r| r["user"] == user)
            .collect()
    }
}

const LOGS: &str = "/containerLogs/apps/web-0/main";

#[tokio::test]
async fn an_intruder_certificate_is_refused_with_allowed_clients_and_without() {
    let intruder = Subject {
        cn: "intruder",
        orgs: &[],
        dns: &[],
    };
    let bed = Bed::start(Some(&[APISERVER])).await;
    for path in ["/pods", LOGS] {
        let (code, body) = bed.call(&intruder, Method::GET, path).await;
        assert_eq!(code, StatusCode::FORBIDDEN, "{path}: {body}");
        assert!(!body.contains("web-0"), "{body}");
    }
    assert_eq!(bed.leaf_log_calls(), 0);

    // Without allowed_clients the root cluster decides, and it has no rule for intruder.
    let bed = Bed::start(None).await;
    let (code, body) = bed.call(&intruder, Method::GET, "/pods").await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        body,
        "Forbidden (user=intruder, verb=get, resource=nodes, subresource=proxy)"
    );
    let (code, body) = bed
        .call(
            &intruder,
            Method::POST,
            "/exec/apps/web-0/main?command=id&output=1",
        )
        .await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        body,
        "Forbidden (user=intruder, verb=create, resource=nodes, subresource=proxy)"
    );
    let (code, _) = bed.call(&intruder, Method::GET, LOGS).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(bed.leaf_log_calls(), 0);
    assert!(
        bed.leaf.requests().iter().all(|r| !r.path.contains("exec")),
        "no exec reached the leaf"
    );
}

#[tokio::test]
async fn a_dns_san_naming_the_allowed_client_is_not_the_allowed_client() {
    let bed = Bed::start(Some(&[APISERVER])).await;
    let impostor = Subject {
        cn: "intruder",
        orgs: &["system:masters"],
        dns: &[APISERVER],
    };
    let (code, body) = bed.call(&impostor, Method::GET, "/pods").await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert!(
        body.contains("intruder") && !body.contains("web-0"),
        "{body}"
    );
    let (code, _) = bed.call(&impostor, Method::GET, LOGS).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(bed.leaf_log_calls(), 0);

    // The real client, by CN, is let in.
    let apiserver = Subject {
        cn: APISERVER,
        orgs: &[],
        dns: &[],
    };
    let (code, body) = bed.call(&apiserver, Method::GET, "/pods").await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert!(body.contains("web-0"), "{body}");
}

#[tokio::test]
async fn an_allowed_client_naming_an_organization_needs_both_cn_and_o() {
    let entry = format!("{APISERVER}/kubeadm:cluster-admins");
    let bed = Bed::start(Some(&[entry.as_str()])).await;
    let no_org = Subject {
        cn: APISERVER,
        orgs: &["system:nodes"],
        dns: &[],
    };
    let (code, body) = bed.call(&no_org, Method::GET, "/pods").await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    let with_org = Subject {
        cn: APISERVER,
        orgs: &["system:nodes", "kubeadm:cluster-admins"],
        dns: &[],
    };
    let (code, body) = bed.call(&with_org, Method::GET, "/pods").await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert!(body.contains("web-0"), "{body}");
}

#[tokio::test]
async fn subject_access_review_allow_and_deny_are_honoured_and_cached() {
    let bed = Bed::start(None).await;
    bed.root().access_rule("ops", "get", true);
    bed.root().access_rule("ops", "*", false);
    let ops = Subject {
        cn: "ops",
        orgs: &["oncall"],
        dns: &[],
    };

    // Allowed: /pods and the logs both ask `get` on nodes/proxy; one review serves both.
    let (code, body) = bed.call(&ops, Method::GET, "/pods").await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert!(body.contains("web-0"), "{body}");
    let (code, _) = bed.call(&ops, Method::GET, LOGS).await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(bed.leaf_log_calls(), 1);
    let reviews = bed.reviews_of("ops");
    assert_eq!(reviews.len(), 1, "{reviews:#?}");
    assert_eq!(
        reviews[0],
        json!({
            "user": "ops",
            "groups": ["oncall", "system:authenticated"],
            "resourceAttributes": {
                "verb": "get", "version": "v1", "resource": "nodes",
                "subresource": "proxy", "name": "vn-leaf-1"
            }
        })
    );

    // Denied: `create` (exec), answered with the kubelet's words, and cached too.
    for _ in 0..2 {
        let (code, body) = bed
            .call(
                &ops,
                Method::POST,
                "/exec/apps/web-0/main?command=id&output=1",
            )
            .await;
        assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(
            body,
            "Forbidden (user=ops, verb=create, resource=nodes, subresource=proxy)"
        );
    }
    let reviews = bed.reviews_of("ops");
    assert_eq!(reviews.len(), 2, "{reviews:#?}");
    assert_eq!(reviews[1]["resourceAttributes"]["verb"], "create");

    // Another identity is another review: the cache is per user and groups.
    let ops_elsewhere = Subject {
        cn: "ops",
        orgs: &[],
        dns: &[],
    };
    let (code, _) = bed.call(&ops_elsewhere, Method::GET, "/pods").await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(bed.reviews_of("ops").len(), 3);
    let sar_posts = bed
        .root()
        .requests()
        .iter()
        .filter(|r| r.path == SAR_PATH && r.method == "POST")
        .count();
    assert_eq!(
        sar_posts, 3,
        "one SubjectAccessReview per identity and verb"
    );
}

/// The line of the first line of `text` that starts with `prefix`, 1-based.
fn line_of(text: &str, prefix: &str) -> usize {
    text.lines()
        .position(|l| l.starts_with(prefix))
        .expect("the key is written")
        + 1
}

#[tokio::test]
async fn a_node_api_with_neither_allowed_clients_nor_a_root_cluster_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    TestCa::new("node-api serving CA").issue(dir.path(), "node-api", &["127.0.0.1"]);
    std::fs::write(dir.path().join("client-ca.pem"), ClientCa::new().pem).unwrap();
    let config = Config::new()
        .listener(
            Listener::node_api("kubelet")
                .tls("node-api.pem", "node-api-key.pem")
                .client_ca("client-ca.pem"),
        )
        .tenant(Tenant::new("acme").namespaces(["apps"]))
        .to_string();
    let file = dir.path().join("leafgate.toml");
    std::fs::write(&file, &config).unwrap();
    let out = check(&file).await;
    assert!(!out.status.success(), "{config}");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let line = line_of(&config, "kind = ");
    assert!(err.contains("listener[0].allowed_clients"), "{err}");
    assert!(err.contains(&format!(":{line}:")), "line {line}: {err}");
    assert!(err.contains("[kubernetes]"), "{err}");
}

async fn check(file: &Path) -> std::process::Output {
    let bin = tokio::task::spawn_blocking(leafgate_tests::binary::leafgate)
        .await
        .unwrap();
    tokio::process::Command::new(bin)
        .arg("check")
        .arg("--config")
        .arg(file)
        .output()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_client_taken_out_of_allowed_clients_loses_its_open_log_follow_within_a_second() {
    let ops = Subject {
        cn: "ops",
        orgs: &["oncall"],
        dns: &[],
    };
    let apiserver = Subject {
        cn: APISERVER,
        orgs: &[],
        dns: &[],
    };
    let bed = Bed::start(Some(&[APISERVER, "ops/oncall"])).await;
    bed.leaf.append_log("apps", "web-0", "main", "line 1");
    let follow = format!("{LOGS}?follow=true");
    let mut bodies = Vec::new();
    for subject in [&ops, &apiserver] {
        let res = bed.send(subject, Method::GET, &follow).await;
        assert_eq!(res.status(), StatusCode::OK);
        let mut body = res.into_body();
        let first = next_data(&mut body, Duration::from_secs(10)).await;
        assert!(first.is_some_and(|d| d.starts_with(b"line 1")));
        bodies.push(body);
    }
    let [mut revoked, mut kept] = <[_; 2]>::try_from(bodies).unwrap();

    std::fs::write(&bed.gw.config, allowed_config(&[APISERVER]).to_string()).unwrap();
    bed.gw.gateway.reload().await.unwrap();
    let reloaded = Instant::now();
    if let Some(data) = next_data(&mut revoked, Duration::from_secs(2)).await {
        panic!("the follow of a client no longer allowed still delivers: {data:?}");
    }
    let ended = reloaded.elapsed();
    eprintln!("after the reload: the removed client's follow ended in {ended:?}");
    assert!(ended < Duration::from_millis(1250), "{ended:?}");

    // The client still named goes on, and the removed one is refused from now on.
    bed.leaf.append_log("apps", "web-0", "main", "line 2");
    let next = next_data(&mut kept, Duration::from_secs(10)).await;
    assert!(next.is_some_and(|d| d.starts_with(b"line 2")));
    let (code, _) = bed.call(&ops, Method::GET, LOGS).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    let metrics = leafgate_tests::client::get(bed.gw.admin(), "admin", "/metrics")
        .await
        .text();
    assert!(
        metrics.contains(r#"leafgate_revoked_total{tenant="acme",kind="log_follow"} 1"#),
        "{metrics}"
    );
}
