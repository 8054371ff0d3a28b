//! The `KubeSim` server: TLS listener on 127.0.0.1, authentication (bearer tokens, client
//! certificates), the request record, start/stop/restart on one port, and kubeconfigs.
//! It serves one of two roles: kube-apiserver (routing in `api`, which proxies pods on
//! nodes with a kubelet endpoint through `nodeproxy`), or a node's kubelet (`kubelet`,
//! client certificates required). This module does not interpret paths.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use base64::Engine;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::Value;
use tokio::net::TcpSocket;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::access::{AccessPolicy, AccessRule};
use crate::nodeproxy::{KubeletClient, KubeletClientCert};
use crate::store::Store;

/// Response bodies: whole or streamed.
pub type Body = BoxBody<Bytes, Infallible>;

/// Why the simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("certificate generation failed: {0}")]
    Cert(#[from] rcgen::Error),
    #[error("TLS configuration rejected: {0}")]
    Tls(#[from] rustls::Error),
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Bind { port: u16, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("the simulator is not running")]
    NotRunning,
    #[error("kubelet TLS material: {0}")]
    KubeletTls(#[from] crate::tls::TlsError),
}

/// The client's address, put in each request's extensions (for `X-Forwarded-For`).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub SocketAddr);

/// When the request's connection finished its TLS handshake, put in each request's
/// extensions (a client that dials ahead of need sends on an older connection).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Connected(pub std::time::Instant);

/// Which part of the chain the simulator plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    ApiServer,
    Kubelet,
}

/// One request as received, for assertions.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: String,
    pub headers: Vec<(String, String)>,
    /// The authenticated user, None when authentication failed.
    pub user: Option<String>,
    /// When its connection finished the TLS handshake (None: not received over one).
    pub connected: Option<std::time::Instant>,
}

/// Which credential a kubeconfig carries.
#[derive(Debug, Clone)]
pub enum Credential {
    /// A bearer token (must be one the simulator knows for it to work).
    Token(String),
    /// A client certificate issued by the simulator's client CA with this CN.
    ClientCert(String),
}

pub(crate) struct Shared {
    pub store: Store,
    pub tokens: HashMap<String, String>,
    pub requests: Mutex<Vec<Recorded>>,
    /// The paths of the watches streaming so far (each once its events are subscribed).
    pub watches: watch::Sender<Vec<String>>,
    /// TLS handshakes completed.
    pub handshakes: std::sync::atomic::AtomicUsize,
    /// How the apiserver role reaches kubelets.
    pub kubelet: KubeletClient,
    pub role: Role,
    /// `SubjectAccessReview`s: the policy and what was asked.
    pub access: AccessPolicy,
    /// What `/version` reports.
    pub git_version: String,
    /// The group versions not served (`KubeSimBuilder::without`).
    pub hidden: Vec<String>,
}

struct Running {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// Builds a `KubeSim`.
#[derive(Default)]
pub struct KubeSimBuilder {
    tokens: Vec<(String, String)>,
    kubelet_client: Option<KubeletClientCert>,
    kubelet_ca: Option<String>,
    address_types: Option<Vec<String>>,
    kubelet_role: Option<String>,
    git_version: Option<String>,
    hidden: Vec<String>,
}

impl KubeSimBuilder {
    /// Serves as a cluster whose CRDs do not serve `api_version`
    /// (`stable.example.com/v2`): it is absent from discovery (a group with no version
    /// left is not listed) and every path under it is a 404, as for a cluster partway
    /// through a CRD's version rollout, or without the CRD at all (each of its versions
    /// hidden). Objects stored by another version of the kind are still read there.
    pub fn without(mut self, api_version: &str) -> Self {
        self.hidden.push(api_version.to_string());
        self
    }

    /// Accepts `token` as a bearer token for `user`.
    pub fn token(mut self, token: &str, user: &str) -> Self {
        self.tokens.push((token.to_string(), user.to_string()));
        self
    }

    /// The certificate presented to kubelets (`--kubelet-client-certificate`/`-key`);
    /// generated (`KubeletClientCert::generate`) when not given.
    pub fn kubelet_client_cert(mut self, cert: KubeletClientCert) -> Self {
        self.kubelet_client = Some(cert);
        self
    }

    /// Verifies kubelets' serving certificates against this CA (PEM), as
    /// `--kubelet-certificate-authority`; without it they are not verified.
    pub fn kubelet_ca(mut self, ca_pem: &str) -> Self {
        self.kubelet_ca = Some(ca_pem.to_string());
        self
    }

    /// `--kubelet-preferred-address-types` (default `nodeproxy::DEFAULT_ADDRESS_TYPES`).
    pub fn kubelet_preferred_address_types(mut self, types: &[&str]) -> Self {
        self.address_types = Some(types.iter().map(|t| t.to_string()).collect());
        self
    }

    /// Plays a node's kubelet instead of kube-apiserver: serves the kubelet API
    /// (`kubelet` module) for the pods of its own store, and requires a client certificate
    /// signed by `client_ca_pem` (`RequireAndVerifyClientCert`).
    pub fn kubelet_role(mut self, client_ca_pem: &str) -> Self {
        self.kubelet_role = Some(client_ca_pem.to_string());
        self
    }

    /// The version `/version` reports, `v<major>.<minor>.<patch>[-suffix]` (default
    /// `discovery::GIT_VERSION`); `major` and `minor` follow from it.
    pub fn version(mut self, git_version: &str) -> Self {
        self.git_version = Some(git_version.to_string());
        self
    }

    /// Generates the CAs and certificates and starts serving on 127.0.0.1:0.
    pub async fn start(self) -> Result<KubeSim, SimError> {
        let ca = Ca::new("kubesim-ca")?;
        let client_ca = Ca::new("kubesim-client-ca")?;
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])?;
        params
            .distinguished_name
            .push(DnType::CommonName, "kube-apiserver");
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &ca.issuer)?;
        let mut roots = rustls::RootCertStore::empty();
        roots.add(client_ca.der.clone())?;
        let provider = crate::tls::go_provider();
        let verifier = match &self.kubelet_role {
            Some(pem) => rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(crate::tls::roots(pem, "the kubelet's client CA")?),
                provider.clone(),
            )
            .build(),
            None => rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider.clone(),
            )
            .allow_unauthenticated()
            .build(),
        }
        .map_err(|e| rustls::Error::General(format!("client CA: {e}")))?;
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        // A Go server chooses the suite by its own order, not the client's (it would take
        // ChaCha20 for a client asking for it first; no client here does).
        config.ignore_client_order = true;
        let identity = match self.kubelet_client {
            Some(c) => c,
            None => KubeletClientCert::generate()?,
        };
        let address_types = self.address_types.unwrap_or_else(|| {
            crate::nodeproxy::DEFAULT_ADDRESS_TYPES
                .iter()
                .map(|t| t.to_string())
                .collect()
        });
        let kubelet = KubeletClient::new(identity, self.kubelet_ca.as_deref(), address_types)?;
        let shared = Arc::new(Shared {
            store: Store::new(),
            tokens: self.tokens.into_iter().collect(),
            requests: Mutex::new(Vec::new()),
            watches: watch::Sender::new(Vec::new()),
            handshakes: Default::default(),
            kubelet,
            role: if self.kubelet_role.is_some() {
                Role::Kubelet
            } else {
                Role::ApiServer
            },
            access: AccessPolicy::default(),
            git_version: self
                .git_version
                .unwrap_or_else(|| crate::discovery::GIT_VERSION.to_string()),
            hidden: self.hidden,
        });
        let mut sim = KubeSim {
            ca_pem: ca.pem.clone(),
            client_ca,
            tls: Arc::new(config),
            shared,
            port: 0,
            running: None,
        };
        sim.listen().await?;
        Ok(sim)
    }
}

pub(crate) struct Ca {
    pub issuer: Issuer<'static, KeyPair>,
    pub pem: String,
    der: CertificateDer<'static>,
}

impl Ca {
    pub fn new(name: &str) -> Result<Ca, rcgen::Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(Ca {
            pem: cert.pem(),
            der: cert.der().clone(),
            issuer: Issuer::new(params, key),
        })
    }
}

/// A running kube-apiserver simulator.
pub struct KubeSim {
    ca_pem: String,
    client_ca: Ca,
    tls: Arc<rustls::ServerConfig>,
    shared: Arc<Shared>,
    port: u16,
    running: Option<Running>,
}

impl KubeSim {
    pub fn builder() -> KubeSimBuilder {
        KubeSimBuilder::default()
    }

    async fn listen(&mut self) -> Result<(), SimError> {
        let bind = |port: u16| -> Result<tokio::net::TcpListener, std::io::Error> {
            let sock = TcpSocket::new_v4()?;
            sock.set_reuseaddr(true)?;
            sock.bind(SocketAddr::from(([127, 0, 0, 1], port)))?;
            sock.listen(1024)
        };
        let listener = bind(self.port).map_err(|source| SimError::Bind {
            port: self.port,
            source,
        })?;
        let addr = listener.local_addr().map_err(|source| SimError::Bind {
            port: self.port,
            source,
        })?;
        self.port = addr.port();
        let (stop, stopped) = watch::channel(false);
        let acceptor = tokio_rustls::TlsAcceptor::from(self.tls.clone());
        let shared = self.shared.clone();
        let task = tokio::spawn(accept_loop(listener, acceptor, shared, stopped));
        self.running = Some(Running { addr, stop, task });
        Ok(())
    }

    /// `https://127.0.0.1:{port}`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The CA that signed the serving certificate, as PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// Stops serving: closes the listener and every open connection (watches break).
    pub async fn stop(&mut self) {
        if let Some(r) = self.running.take() {
            let _ = r.stop.send(true);
            let _ = r.task.await;
            let _ = r.addr;
        }
    }

    /// Stops and serves again on the same port, keeping the store.
    pub async fn restart(&mut self) -> Result<(), SimError> {
        self.stop().await;
        self.listen().await
    }

    /// The object store (create/replace/patch/delete objects, logs, compaction).
    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    /// Every request this simulator sent to kubelets (path and query as sent, the
    /// headers other than `Host`; `user` is None).
    pub fn kubelet_requests(&self) -> Vec<Recorded> {
        self.shared.kubelet.requests()
    }

    /// The certificate this simulator presents to kubelets, with its CA (PEM), which a
    /// kubelet side trusts as its client CA.
    pub fn kubelet_client_cert(&self) -> &KubeletClientCert {
        &self.shared.kubelet.identity
    }

    /// How many TLS handshakes clients completed with this simulator.
    pub fn handshakes(&self) -> usize {
        self.shared
            .handshakes
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How many watches of `path` (a collection's path, no query) have started streaming.
    pub fn watches(&self, path: &str) -> usize {
        self.shared
            .watches
            .borrow()
            .iter()
            .filter(|p| *p == path)
            .count()
    }

    /// Returns once `n` watches of `path` have started streaming: each has taken its
    /// snapshot or history and subscribed to later changes, so a change made after this
    /// returns reaches them. The signal a test waits on instead of polling `requests`.
    pub async fn watching(&self, path: &str, n: usize) {
        let mut rx = self.shared.watches.subscribe();
        // The sender lives as long as `self`.
        let _ = rx
            .wait_for(|started| started.iter().filter(|p| *p == path).count() >= n)
            .await;
    }

    /// Adds a `SubjectAccessReview` rule: `user` (or `*`) doing `verb` (or `*`) is allowed
    /// or denied; the first matching rule decides (see `access`).
    pub fn access_rule(&self, user: &str, verb: &str, allowed: bool) {
        self.shared.access.push(AccessRule {
            user: user.to_string(),
            verb: verb.to_string(),
            allowed,
        });
    }

    /// The `spec` of every `SubjectAccessReview` answered so far, in order.
    pub fn access_reviews(&self) -> Vec<Value> {
        self.shared.access.reviews()
    }

    /// Issues a client certificate and key (PEM) for `cn` from the client CA.
    pub fn client_cert(&self, cn: &str) -> Result<(String, String), SimError> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.client_ca.issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// The client CA certificate (PEM), for callers that issue their own client certs.
    pub fn client_ca_pem(&self) -> &str {
        &self.client_ca.pem
    }

    /// A kubeconfig (YAML) for `cred`, with everything embedded.
    pub fn kubeconfig_yaml(&self, cred: &Credential) -> Result<String, SimError> {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let user = match cred {
            Credential::Token(t) => format!("    token: {t}\n"),
            Credential::ClientCert(cn) => {
                let (cert, key) = self.client_cert(cn)?;
                format!(
                    "    client-certificate-data: {}\n    client-key-data: {}\n",
                    b64(&cert),
                    b64(&key)
                )
            }
        };
        Ok(format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kubesim\n  cluster:\n    server: {}\n    certificate-authority-data: {}\nusers:\n- name: kubesim\n  user:\n{user}contexts:\n- name: kubesim\n  context:\n    cluster: kubesim\n    user: kubesim\n    namespace: default\ncurrent-context: kubesim\n",
            self.url(),
            b64(&self.ca_pem)
        ))
    }

    /// Writes `kubeconfig_yaml(cred)` to `path`.
    pub fn kubeconfig(&self, cred: &Credential, path: &Path) -> Result<(), SimError> {
        std::fs::write(path, self.kubeconfig_yaml(cred)?).map_err(|source| SimError::Write {
            path: path.display().to_string(),
            source,
        })
    }

    /// Test object API: creates `obj` (apiVersion and kind pick the resource), creating its
    /// namespace first when missing.
    pub fn create(&self, obj: Value) -> Result<Value, crate::api::ApiError> {
        crate::api::create_object(&self.shared.store, obj)
    }

    /// Test object API: replaces `obj` (apiVersion, kind, namespace and name pick it); a
    /// non-empty stale `metadata.resourceVersion` conflicts as over HTTP.
    pub fn replace(&self, obj: Value) -> Result<Value, crate::api::ApiError> {
        let (res, ns, name) = crate::api::locate(&obj)?;
        Ok(self.shared.store.update(res, &ns, &name, obj, false)?)
    }

    /// Test object API: a JSON merge patch of the `status` subresource of the object
    /// `api_version`/`kind` `ns`/`name`, as a controller writes it.
    pub fn patch_status(
        &self,
        api_version: &str,
        kind: &str,
        ns: &str,
        name: &str,
        patch: &Value,
    ) -> Result<Value, crate::api::ApiError> {
        let res = crate::api::resource_of(api_version, kind)?;
        Ok(self.shared.store.patch(res, ns, name, patch, false, true)?)
    }

    /// Test object API: a JSON merge patch (`strategic` = false) or strategic merge patch of
    /// the object `api_version`/`kind` `ns`/`name` (`ns` ignored for cluster-scoped kinds).
    pub fn patch(
        &self,
        api_version: &str,
        kind: &str,
        ns: &str,
        name: &str,
        patch: &Value,
        strategic: bool,
    ) -> Result<Value, crate::api::ApiError> {
        let res = crate::api::resource_of(api_version, kind)?;
        Ok(self
            .shared
            .store
            .patch(res, ns, name, patch, strategic, false)?)
    }

    /// Test object API: deletes an object; watchers see DELETED.
    pub fn delete(
        &self,
        api_version: &str,
        kind: &str,
        ns: &str,
        name: &str,
    ) -> Result<Value, crate::api::ApiError> {
        let res = crate::api::resource_of(api_version, kind)?;
        Ok(self.shared.store.delete(res, ns, name)?)
    }

    /// Ends a container's current log: it becomes the `previous` one (as after a restart).
    pub fn restart_container(&self, ns: &str, pod: &str, container: &str) {
        self.shared.store.restart_container(ns, pod, container)
    }

    /// Appends a log line to a container (followers see it live).
    pub fn append_log(&self, ns: &str, pod: &str, container: &str, line: &str) {
        self.shared.store.append_log(ns, pod, container, line)
    }

    /// Forgets watch history: resuming from an older resourceVersion gets 410 Gone.
    pub fn compact(&self) {
        self.shared.store.compact()
    }
}

impl Drop for KubeSim {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            let _ = r.stop.send(true);
            r.task.abort();
        }
    }
}

fn common_name(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let cn = cert
        .subject()
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    Some(cn)
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        let (tcp, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
            _ = stopped.changed() => break,
            Some(_) = conns.join_next(), if !conns.is_empty() => continue,
        };
        // Go's net package turns Nagle off on every TCP connection; kube-apiserver's do too.
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let shared = shared.clone();
        conns.spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let connected = Connected(std::time::Instant::now());
            shared
                .handshakes
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let cert_user = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .and_then(|c| common_name(c));
            let svc = hyper::service::service_fn(move |mut req: Request<Incoming>| {
                let shared = shared.clone();
                let cert_user = cert_user.clone();
                req.extensions_mut().insert(ClientAddr(peer));
                req.extensions_mut().insert(connected);
                async move {
                    Ok::<_, Infallible>(match shared.role {
                        Role::ApiServer => crate::api::handle(shared, cert_user, req).await,
                        Role::Kubelet => crate::kubelet::handle(shared, cert_user, req).await,
                    })
                }
            });
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection_with_upgrades(TokioIo::new(tls), svc)
                .await;
        });
    }
    conns.shutdown().await;
}
