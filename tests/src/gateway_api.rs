//! The Gateway API conformance suite's harness, ported: a kubesim root with the suite's
//! base (`tests/fixtures/gateway-api/base.yaml`, the upstream Namespaces and Gateways,
//! applied with the real kubectl), its echo backends as Services whose EndpointSlices list
//! one loopback address per pod ([`crate::echo`]), leafgate as the controller of the
//! GatewayClass `leafgate` with its own address range, and the harness's checks: status
//! conditions by type and reason, and requests that must give the same answer three times
//! in a row within 30 s (`RequiredConsecutiveSuccesses`, `MaxTimeToConsistency`).
//!
//! Each suite owns one range `n` (100..=199): Gateways bind on `127.0.n.0/24` (ports 80
//! and 443, as the tests run as root) and pods listen on `127.n.0.k`, so suites run in
//! parallel without sharing an address.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kubesim::KubeSim;
use serde_json::{Value, json};

use crate::client::{Answer, send_h1};
use crate::echo::{EchoPod, HTTP_PORT};
use crate::ingress::{eventually, root_kubeconfig};
use crate::{Config, TestGateway};

pub const GROUP: &str = "gateway.networking.k8s.io";
pub const V1: &str = "gateway.networking.k8s.io/v1";
/// The class the suite runs with (its `--gateway-class`).
pub const CLASS: &str = "leafgate";
/// leafgate's default `controller_name`.
pub const CONTROLLER: &str = "leafgate.io/gateway-controller";
pub const INFRA: &str = "gateway-conformance-infra";
pub const WEB: &str = "gateway-conformance-web-backend";
pub const APP: &str = "gateway-conformance-app-backend";
/// `MaxTimeToConsistency`.
pub const CONSISTENCY: Duration = Duration::from_secs(30);
/// `RequiredConsecutiveSuccesses`.
const CONSECUTIVE: usize = 3;

/// A file of `tests/fixtures/gateway-api`, the suite's placeholders filled in.
pub fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/gateway-api")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .replace("{GATEWAY_CLASS_NAME}", CLASS)
        .replace("{GATEWAY_CONTROLLER_NAME}", CONTROLLER)
}

/// The echo backends of the conformance base: (namespace, Service, replicas).
const BACKENDS: [(&str, &str, usize); 6] = [
    (INFRA, "infra-backend-v1", 2),
    (INFRA, "infra-backend-v2", 2),
    (INFRA, "infra-backend-v3", 1),
    (APP, "app-backend-v1", 2),
    (APP, "app-backend-v2", 2),
    (WEB, "web-backend", 1),
];

/// One suite: the root, its backends, leafgate.
pub struct Suite {
    pub sim: KubeSim,
    pub gateway: TestGateway,
    pub pods: Vec<EchoPod>,
    /// The CA of the suite's certificates (`tls-validity-checks-certificate` in the
    /// infra namespace and `certificate` in the web-backend one, as the suite creates them).
    pub ca: crate::certs::TestCa,
    /// Its range (`n`).
    pub range: u8,
}

/// leafgate's config for a suite: the controller of the class, with the addresses of
/// range `n`, the pods of range `pods` its only allowed backends, replica `identity`,
/// more keys of `[kubernetes.gateway]` (`gateway`) and the rest of `extra`. With
/// `LEAFGATE_TEST_HTTP1_FAST_PATH=off` in the environment its Gateway listeners serve
/// every request through hyper, unless `gateway` says otherwise (`scripts/test.sh` runs
/// the suite on both paths).
fn leafgate(n: u8, pods: u8, identity: &str, gateway: &Value, extra: Config) -> Config {
    let mut table = json!({
        "addresses": [format!("127.0.{n}.0/24")],
        // The pods' loopback range only: the gateway's own 127.0.0.1 stays refused.
        "allow_backends": [format!("127.{pods}.0.0/16")],
    });
    if std::env::var("LEAFGATE_TEST_HTTP1_FAST_PATH").as_deref() == Ok("off") {
        table["http1_fast_path"] = json!(false);
    }
    for (key, value) in gateway.as_object().expect("an object of keys") {
        table[key] = value.clone();
    }
    let kubernetes = crate::config::Kubernetes::new("root.kubeconfig")
        .identity(identity)
        .election("2s", "1s", "200ms")
        .set("gateway", table);
    extra.admin().kubernetes(kubernetes)
}

impl Suite {
    /// The root with leafgate's namespace, the GatewayClass and the base, the backends,
    /// and leafgate on range `n` (`extra` adds to its config: tenants...).
    pub async fn start(n: u8, extra: Config) -> Suite {
        Suite::start_with(n, extra, json!({})).await
    }

    /// [`Suite::start`] with more keys of `[kubernetes.gateway]` (`gateway`, an object).
    pub async fn start_with(n: u8, extra: Config, gateway: Value) -> Suite {
        assert!((100..=199).contains(&n), "a suite's range is 100..=199");
        let sim = KubeSim::builder().start().await.unwrap();
        sim.create(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "leafgate"}}),
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        root_kubeconfig(&sim, dir.path(), "gw");
        apply(dir.path(), &fixture("gatewayclass.yaml")).await;
        apply(dir.path(), &fixture("base.yaml")).await;
        let ca = crate::certs::TestCa::new("gateway-conformance");
        for (ns, name) in [
            (INFRA, "tls-validity-checks-certificate"),
            (WEB, "certificate"),
        ] {
            secret(&sim, &ca, dir.path(), ns, name);
        }
        let mut pods = Vec::new();
        for (ns, service, replicas) in BACKENDS {
            pods.extend(backend(&sim, n, ns, service, replicas, pods.len()).await);
        }
        let config = leafgate(n, n, "gw", &gateway, extra);
        let gateway = TestGateway::start_in(dir, config).await;
        Suite {
            sim,
            gateway,
            pods,
            ca,
            range: n,
        }
    }

    /// A second leafgate on the same root (another replica, never the leader while the
    /// suite's runs), binding Gateways on range `m` with more keys of
    /// `[kubernetes.gateway]` (`gateway`): it serves the same Gateways as the suite's
    /// leafgate, each on the address of range `m` with the same last byte (both hand out
    /// their ranges in the same order).
    pub async fn replica(&self, m: u8, gateway: Value) -> TestGateway {
        assert!((100..=199).contains(&m) && m != self.range);
        let dir = tempfile::tempdir().unwrap();
        let identity = format!("gw-{m}");
        root_kubeconfig(&self.sim, dir.path(), &identity);
        let config = leafgate(m, self.range, &identity, &gateway, crate::Config::new());
        TestGateway::start_in(dir, config).await
    }

    /// Pods for the Service `ns/service` something else declared (an example's manifest):
    /// `replicas` echo servers on the next free addresses of the suite's range, listed
    /// in one EndpointSlice under the Service's port `port` (its name) as the
    /// EndpointSlice controller writes it.
    pub async fn pods_for(&mut self, ns: &str, service: &str, port: &str, replicas: usize) {
        let mut pods = Vec::new();
        for k in 0..replicas {
            let last = u8::try_from(self.pods.len() + k + 1).expect("at most 254 pods");
            let ip = IpAddr::V4(Ipv4Addr::new(127, self.range, 0, last));
            pods.push(EchoPod::start(ns, &format!("{service}-{k}"), ip).await);
        }
        let ports = json!([{"name": port, "port": HTTP_PORT, "protocol": "TCP"}]);
        self.sim.create(slice(ns, service, ports, &pods)).unwrap();
        self.pods.extend(pods);
    }

    /// A client config trusting the suite's CA.
    pub fn tls(&self) -> std::sync::Arc<rustls::ClientConfig> {
        trusting(self.ca.roots())
    }

    pub fn dir(&self) -> &Path {
        self.gateway.path()
    }

    /// `kubectl apply` of `yaml` at the root.
    pub async fn apply(&self, yaml: &str) {
        apply(self.dir(), yaml).await;
    }

    /// The object as the root stores it.
    pub fn object(&self, kind: &str, ns: &str, name: &str) -> Option<Value> {
        crate::ingress::get(&self.sim, V1, kind, ns, name)
    }

    /// Until `check` holds of the object `kind ns/name`; panics with `what` after
    /// [`CONSISTENCY`].
    pub async fn until(
        &self,
        what: &str,
        kind: &str,
        ns: &str,
        name: &str,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        let started = Instant::now();
        loop {
            if let Some(o) = self.object(kind, ns, name).filter(|o| check(o)) {
                return o;
            }
            assert!(
                started.elapsed() < CONSISTENCY,
                "{what}: not within {CONSISTENCY:?}; {kind} {ns}/{name} is {:#}",
                self.object(kind, ns, name).unwrap_or(Value::Null)
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The Gateway's address once it is Accepted and Programmed at its generation with
    /// an address (`GatewayMustHaveLatestConditions` and the address the harness sends to).
    pub async fn gateway_address(&self, name: &str) -> IpAddr {
        let g = self
            .until("the Gateway programmed", "Gateway", INFRA, name, |g| {
                latest(g, &g["status"]["conditions"], "Accepted", true)
                    && latest(g, &g["status"]["conditions"], "Programmed", true)
                    && g["status"]["addresses"][0]["value"].is_string()
            })
            .await;
        g["status"]["addresses"][0]["value"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    }

    /// Until the route's parent entry for Gateway `gateway` (in [`INFRA`]) is ours and has
    /// `type` with `status` and `reason` at the route's generation; returns the route.
    pub async fn route_parent(
        &self,
        ns: &str,
        name: &str,
        gateway: &str,
        type_: &str,
        status: bool,
        reason: &str,
    ) -> Value {
        self.until(
            &format!("{type_}={status}/{reason} for parent {gateway}"),
            "HTTPRoute",
            ns,
            name,
            |r| {
                parents(r, gateway).any(|p| {
                    p["controllerName"] == CONTROLLER
                        && condition(&p["conditions"], type_).is_some_and(|c| {
                            c["status"] == if status { "True" } else { "False" }
                                && c["reason"] == reason
                                && c["observedGeneration"] == r["metadata"]["generation"]
                        })
                })
            },
        )
        .await
    }

    /// The harness's `HTTPRouteMustHaveResolvedRefsConditionsTrue` for route `ns/name`
    /// on Gateway `gateway`.
    pub async fn resolved(&self, ns: &str, route: &str, gateway: &str) {
        self.route_parent(ns, route, gateway, "ResolvedRefs", true, "ResolvedRefs")
            .await;
    }

    /// The harness's `GatewayAndHTTPRoutesMustBeAccepted` for one route on
    /// `gateway`: the Gateway's address and port 80.
    pub async fn accepted(&self, gateway: &str, ns: &str, route: &str) -> SocketAddr {
        let ip = self.gateway_address(gateway).await;
        self.route_parent(ns, route, gateway, "Accepted", true, "Accepted")
            .await;
        SocketAddr::new(ip, 80)
    }
}

/// A client config trusting `roots` only.
pub fn trusting(roots: rustls::RootCertStore) -> std::sync::Arc<rustls::ClientConfig> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    std::sync::Arc::new(config)
}

/// The suite's `kubernetes.io/tls` Secret `ns/name`, issued by `ca` for the names the
/// upstream suite gives it (`*.org`, `*.wildcard.org`), and the `.org` hosts the tests
/// send by name, as rustls (unlike Go) takes no wildcard over a one-label suffix, nor the
/// bare `*`.
fn secret(sim: &KubeSim, ca: &crate::certs::TestCa, dir: &Path, ns: &str, name: &str) {
    let names = [
        "*.org",
        "*.wildcard.org",
        "example.org",
        "second-example.org",
        "unknown-example.org",
    ];
    let files = ca.issue(dir, &format!("{ns}-{name}"), &names);
    sim.create(crate::ingress::tls_secret(
        ns,
        name,
        &files.cert,
        &files.key,
    ))
    .unwrap();
}

/// The route's `status.parents[]` entries naming Gateway `gateway`.
pub fn parents<'r>(route: &'r Value, gateway: &'r str) -> impl Iterator<Item = &'r Value> {
    route["status"]["parents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |p| p["parentRef"]["name"] == gateway)
}

/// The condition of `type_` in `conditions`.
pub fn condition<'c>(conditions: &'c Value, type_: &str) -> Option<&'c Value> {
    conditions.as_array()?.iter().find(|c| c["type"] == type_)
}

/// `type_` has `status` at `object`'s generation.
pub fn latest(object: &Value, conditions: &Value, type_: &str, status: bool) -> bool {
    condition(conditions, type_).is_some_and(|c| {
        c["status"] == if status { "True" } else { "False" }
            && c["observedGeneration"] == object["metadata"]["generation"]
    })
}

/// Every condition in `conditions` is at `object`'s generation.
pub fn all_latest(object: &Value, conditions: &Value) -> bool {
    conditions.as_array().is_some_and(|cs| {
        !cs.is_empty()
            && cs
                .iter()
                .all(|c| c["observedGeneration"] == object["metadata"]["generation"])
    })
}

/// `kubectl apply -f -` of `yaml` against the root of `dir/root.kubeconfig`.
pub async fn apply(dir: &Path, yaml: &str) {
    // kubesim serves no OpenAPI document to validate against; the API server validates.
    kubectl(dir, &["apply", "--validate=false", "-f", "-"], Some(yaml)).await;
}

/// The real kubectl against the root; panics with its output when it fails.
pub async fn kubectl(dir: &Path, args: &[&str], stdin: Option<&str>) -> String {
    use tokio::io::AsyncWriteExt;
    let mut cmd = tokio::process::Command::new(kubesim::kubectl::pinned());
    cmd.arg("--kubeconfig")
        .arg(dir.join("root.kubeconfig"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("kubectl runs");
    let mut input = child.stdin.take().unwrap();
    if let Some(s) = stdin {
        input.write_all(s.as_bytes()).await.unwrap();
    }
    drop(input);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("kubectl within 30 s")
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "kubectl {args:?} failed:\n{stdout}\n{stderr}"
    );
    stdout
}

/// A Service of the base as upstream declares it (`infra-backend-v1` with its three
/// ports, the others with one unnamed 8080 -> 3000), and its pods: `replicas` echo servers
/// `name-<k>` on `127.n.0.<first + k + 1>`, listed in one EndpointSlice as the
/// EndpointSlice controller writes it.
async fn backend(
    sim: &KubeSim,
    n: u8,
    ns: &str,
    name: &str,
    replicas: usize,
    first: usize,
) -> Vec<EchoPod> {
    let ports = if name == "infra-backend-v1" {
        json!([
            {"name": "first-port", "protocol": "TCP", "port": 8080, "targetPort": 3000},
            {"name": "second-port", "protocol": "TCP", "appProtocol": "kubernetes.io/h2c", "port": 8081, "targetPort": 3001},
            {"name": "third-port", "protocol": "TCP", "appProtocol": "kubernetes.io/ws", "port": 8082, "targetPort": 3000},
        ])
    } else {
        json!([{"protocol": "TCP", "port": 8080, "targetPort": 3000}])
    };
    sim.create(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"type": "ClusterIP", "selector": {"app": name}, "ports": ports}
    }))
    .unwrap();
    let mut pods = Vec::new();
    for k in 0..replicas {
        let ip = IpAddr::V4(Ipv4Addr::new(127, n, 0, (first + k + 1) as u8));
        pods.push(EchoPod::start(ns, &format!("{name}-{k}"), ip).await);
    }
    // Each Service port by its name at its target port: the pods serve HTTP at 3000 and
    // h2c at 3001.
    let slice_ports: Vec<Value> = ports
        .as_array()
        .unwrap()
        .iter()
        .map(|p| json!({"name": p["name"].as_str().unwrap_or(""), "port": p["targetPort"], "protocol": "TCP"}))
        .collect();
    sim.create(slice(ns, name, json!(slice_ports), &pods))
        .unwrap();
    pods
}

/// The EndpointSlice the EndpointSlice controller writes for Service `ns/name` with
/// `ports`, listing `pods`.
fn slice(ns: &str, name: &str, ports: Value, pods: &[EchoPod]) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("{name}-abcde"), "namespace": ns,
                     "labels": {"kubernetes.io/service-name": name,
                                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
        "addressType": "IPv4",
        "ports": ports,
        "endpoints": pods.iter().map(|p| json!({
            "addresses": [p.addr.ip().to_string()],
            "conditions": {"ready": true, "serving": true, "terminating": false},
            "targetRef": {"kind": "Pod", "namespace": ns, "name": p.name},
        })).collect::<Vec<_>>()
    })
}

/// What a request is expected to get, as the harness's `ExpectedResponse` says it.
#[derive(Debug, Clone)]
pub struct Expect<'a> {
    pub host: &'a str,
    pub path: &'a str,
    pub headers: Vec<(&'a str, &'a str)>,
    /// `GET` unless set.
    pub method: &'a str,
    /// 200 unless set.
    pub status: u16,
    /// For a 200: the backend Service whose pod must answer (`pod` starts with it).
    pub backend: &'a str,
    pub namespace: &'a str,
    /// Headers the backend must have received (the values of a name joined by `,`, as the
    /// harness compares them) and names it must not have (`ExpectedRequest`).
    pub received: Vec<(&'a str, &'a str)>,
    pub not_received: Vec<&'a str>,
    /// Headers the answer must carry (joined by `,`) and names it must not.
    pub answered: Vec<(&'a str, &'a str)>,
    pub not_answered: Vec<&'a str>,
    /// Headers the echo backend is asked to answer with (`BackendSetResponseHeaders`, sent
    /// as `X-Echo-Set-Header`).
    pub backend_sets: Vec<(&'a str, &'a str)>,
    /// For a 200: the host and path the backend must have been sent when they are not the
    /// request's (`ExpectedRequest`, after a rewrite).
    pub sent_host: Option<&'a str>,
    pub sent_path: Option<&'a str>,
    /// For a redirect: the `Location` it must give (`RedirectRequest`).
    pub redirect: Option<Redirected<'a>>,
}

/// The harness's `RedirectRequest`: what a redirect's `Location` must say. An empty field
/// is what the harness makes of it: any host, the request's scheme (`http`) and path, and
/// no port or the scheme's own.
#[derive(Debug, Clone, Copy, Default)]
pub struct Redirected<'a> {
    pub scheme: &'a str,
    pub host: &'a str,
    pub port: &'a str,
    pub path: &'a str,
}

impl Redirected<'_> {
    /// Whether `location` is this, for a request to `path`, as `http.go` compares them.
    fn check(&self, location: Option<&str>, path: &str) -> Result<(), String> {
        let location = location.ok_or("no Location")?;
        let uri: http::Uri = location
            .parse()
            .map_err(|e| format!("Location {location}: {e}"))?;
        let scheme = uri.scheme_str().unwrap_or("");
        let host = uri.host().unwrap_or("");
        let port = uri.port().map(|p| p.to_string()).unwrap_or_default();
        let request_path = path.split('?').next().unwrap_or(path);
        // The expected value of `field`, else `default`, is what the Location gives.
        let want = |field: &str, want: &str, default: &str, got: &str| {
            let want = if want.is_empty() { default } else { want };
            match want == got {
                true => Ok(()),
                false => Err(format!(
                    "Location {location}: {field} {got:?}, not {want:?}"
                )),
            }
        };
        if !self.host.is_empty() {
            want("host", self.host, "", host)?;
        }
        let well_known = match scheme {
            "http" => "80",
            "https" => "443",
            _ => "",
        };
        if self.port.is_empty() {
            if !port.is_empty() && port != well_known {
                return Err(format!("Location {location}: port {port} for {scheme}"));
            }
        } else {
            want("port", self.port, "", &port)?;
        }
        want("scheme", self.scheme, "http", scheme)?;
        want("path", self.path, request_path, uri.path())
    }
}

impl<'a> Expect<'a> {
    /// `path` on `host` answered by a pod of `backend` in [`INFRA`].
    pub fn ok(host: &'a str, path: &'a str, backend: &'a str) -> Self {
        Expect {
            host,
            path,
            headers: Vec::new(),
            method: "GET",
            status: 200,
            backend,
            namespace: INFRA,
            received: Vec::new(),
            not_received: Vec::new(),
            answered: Vec::new(),
            not_answered: Vec::new(),
            backend_sets: Vec::new(),
            sent_host: None,
            sent_path: None,
            redirect: None,
        }
    }

    /// `path` on `host` answered `status` by leafgate with a `Location` as `redirect`
    /// says.
    pub fn redirect(host: &'a str, path: &'a str, status: u16, redirect: Redirected<'a>) -> Self {
        Expect {
            redirect: Some(redirect),
            ..Expect::status(host, path, status)
        }
    }

    /// The backend must be sent `host` (if not empty) and `path` (`ExpectedRequest`).
    pub fn sent(self, host: &'a str, path: &'a str) -> Self {
        Expect {
            sent_host: (!host.is_empty()).then_some(host),
            sent_path: Some(path),
            ..self
        }
    }

    /// `path` on `host` answered with `status` by leafgate itself.
    pub fn status(host: &'a str, path: &'a str, status: u16) -> Self {
        Expect {
            status,
            ..Expect::ok(host, path, "")
        }
    }

    pub fn namespace(self, namespace: &'a str) -> Self {
        Expect { namespace, ..self }
    }

    /// Sent with `headers`.
    pub fn headers(self, headers: &[(&'a str, &'a str)]) -> Self {
        Expect {
            headers: headers.to_vec(),
            ..self
        }
    }

    /// The backend must receive `headers` and none of `absent`.
    pub fn received(self, headers: &[(&'a str, &'a str)], absent: &[&'a str]) -> Self {
        Expect {
            received: headers.to_vec(),
            not_received: absent.to_vec(),
            ..self
        }
    }

    /// The echo backend answers with `sets`; the answer must carry `headers` and none of
    /// `absent`.
    pub fn answered(
        self,
        sets: &[(&'a str, &'a str)],
        headers: &[(&'a str, &'a str)],
        absent: &[&'a str],
    ) -> Self {
        Expect {
            backend_sets: sets.to_vec(),
            answered: headers.to_vec(),
            not_answered: absent.to_vec(),
            ..self
        }
    }

    /// Sent with `method`.
    pub fn method(self, method: &'a str) -> Self {
        Expect { method, ..self }
    }

    /// Whether `answer` is what is expected, and if not why.
    fn check(&self, answer: &Answer) -> Result<(), String> {
        let status = answer.status;
        let body: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        if status.as_u16() != self.status {
            return Err(format!("status {status}, body {body}"));
        }
        let answered = |name: &str| {
            let values: Vec<&str> = answer
                .headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            (!values.is_empty()).then(|| values.join(","))
        };
        headers_are("answer", &self.answered, &self.not_answered, answered)?;
        if let Some(r) = &self.redirect {
            r.check(answered("location").as_deref(), self.path)?;
        }
        if self.status != 200 {
            return Ok(());
        }
        let (ns, pod, path) = crate::echo::read(&body);
        if path != self.sent_path.unwrap_or(self.path) {
            return Err(format!("echoed path {path}"));
        }
        if let Some(host) = self.sent_host.filter(|h| body["host"] != *h) {
            return Err(format!("echoed host {}, not {host}", body["host"]));
        }
        if ns != self.namespace || !pod.starts_with(self.backend) {
            return Err(format!("answered by {ns}/{pod}"));
        }
        let received = |name: &str| {
            let (_, values) = body["headers"]
                .as_object()?
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))?;
            let values: Vec<&str> = values
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            Some(values.join(","))
        };
        headers_are("request", &self.received, &self.not_received, received)
    }
}

/// Whether `get` (a header's values joined by `,`, `None` when absent) gives each of
/// `want` and none of `absent`, as the harness compares them.
fn headers_are(
    what: &str,
    want: &[(&str, &str)],
    absent: &[&str],
    get: impl Fn(&str) -> Option<String>,
) -> Result<(), String> {
    for (name, value) in want {
        let got = get(name);
        if got.as_deref() != Some(*value) {
            return Err(format!("{what} header {name}: {got:?}, not {value:?}"));
        }
    }
    match absent.iter().find(|n| get(n).is_some()) {
        Some(name) => Err(format!("{what} header {name} is there: {:?}", get(name))),
        None => Ok(()),
    }
}

/// The harness's `MakeRequestAndExpectEventuallyConsistentResponse`: until three answers
/// in a row are as `expect` says, within [`CONSISTENCY`].
pub async fn expect(addr: SocketAddr, expect: &Expect<'_>) {
    expect_over(addr, None, expect).await
}

/// [`expect`] over TLS (`MakeTLSRequestAndExpectEventuallyConsistentResponse`), the
/// request's host sent as SNI and the certificate verified with `tls`.
pub async fn expect_tls(
    addr: SocketAddr,
    tls: std::sync::Arc<rustls::ClientConfig>,
    expect: &Expect<'_>,
) {
    expect_over(addr, Some(tls), expect).await
}

async fn expect_over(
    addr: SocketAddr,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    expect: &Expect<'_>,
) {
    let started = Instant::now();
    let mut in_a_row = 0;
    let mut last = String::new();
    while in_a_row < CONSECUTIVE {
        assert!(
            started.elapsed() < CONSISTENCY,
            "{} {} {}{} {:?}: not {} within {CONSISTENCY:?}: {last}",
            addr,
            expect.method,
            expect.host,
            expect.path,
            expect.headers,
            expect.status
        );
        // No host: the address, as the harness's URL `http://{gwAddr}{path}` gives it.
        let host = match expect.host {
            "" => addr.to_string(),
            h => h.to_string(),
        };
        let sets = expect
            .backend_sets
            .iter()
            .map(|(n, v)| format!("{n}:{v}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut headers = expect.headers.clone();
        if !sets.is_empty() {
            headers.push(("X-Echo-Set-Header", &sets));
        }
        let sent = send_over(
            addr,
            tls.clone(),
            expect.method,
            &host,
            expect.path,
            &headers,
        )
        .await;
        let checked = sent.and_then(|answer| expect.check(&answer));
        match checked {
            Ok(()) => in_a_row += 1,
            Err(why) => {
                in_a_row = 0;
                last = why;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

/// `GET http://{host}{path}` with `headers` over a new HTTP/1.1 connection to `addr`; a
/// connection refused (the Gateway not listening yet) is an error, not a panic.
pub async fn request(
    addr: SocketAddr,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Answer, String> {
    send(addr, "GET", host, path, headers).await
}

/// [`request`] with another method.
pub async fn send(
    addr: SocketAddr,
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Answer, String> {
    send_over(addr, None, method, host, path, headers).await
}

/// [`send`] in plain HTTP, or over TLS with `tls`, `host` (without a port) sent as SNI.
pub async fn send_over(
    addr: SocketAddr,
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Answer, String> {
    let io = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connecting: {e}"))?;
    let req = head(method, host, path, headers);
    let Some(tls) = tls else {
        return Ok(send_h1(io, req).await);
    };
    let sni = host.rsplit_once(':').map_or(host, |(h, _)| h).to_string();
    let sni = rustls::pki_types::ServerName::try_from(sni).map_err(|e| format!("SNI: {e}"))?;
    let io = tokio_rustls::TlsConnector::from(tls)
        .connect(sni, io)
        .await
        .map_err(|e| format!("TLS handshake: {e}"))?;
    Ok(send_h1(io, req).await)
}

fn head(
    method: &str,
    host: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> http::Request<http_body_util::Empty<bytes::Bytes>> {
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", host);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    req.body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap()
}

/// Polls until `check` holds (see [`eventually`]), for what is not an object's status.
pub async fn until<F, Fut>(what: &str, check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    eventually(what, CONSISTENCY, check).await
}
