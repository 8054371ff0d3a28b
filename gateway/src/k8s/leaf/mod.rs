//! A leaf cluster: one TLS setup and one set of credentials, used two ways.
//!
//! - As a `kube::Client` ([`Leaf::client`]) for lists and watches (the pod reflector).
//! - As the upstream of raw forwarded requests: [`Leaf::send`] over a pooled HTTP/1.1
//!   client (so `hyper::upgrade::on` works on its 101s), or [`Leaf::connector`] +
//!   [`Leaf::prepare`] for the proxy core's own upgrade path, the way it dials routes.
//!
//! Streams start warm: each serving thread keeps a few spare connections to the leaf,
//! TLS-established ahead of need ([`Leaf::spares`], `tls::spares`), which the upgrade path
//! and the pooled client take before dialling. They belong to this `Leaf`: a reload that
//! changes the leaf's address, TLS or credentials builds a new one, and the old spares go
//! with the old `Leaf`.
//!
//! Both go through [`Leaf::prepare`]: the URI is aimed at the leaf's server (keeping a
//! path prefix such as `/k8s/clusters/c-1`), `Host` is the leaf's, and the caller's
//! `Authorization` is dropped and replaced by the leaf's own (a `tokenFile` is re-read as
//! soon as it changes). A reload that leaves the `[[leaf]]` and its files unchanged keeps
//! the `Leaf`, its pooled connections and its pod reflector ([`Leaf::built_from`]).
//! It must not decide which leaf a request goes to; that is routing's and the plugins'.
//!
//! The leaf's parts, one file each: `tls` (its client config and connector), `auth` (its
//! credentials, a `tokenFile` re-read when it changes), `version` (its `/version`, kept
//! current), `pods` (the pod reflector that feeds the index and the leaf's change feed),
//! `events` and `namespaces` (bounded raw JSON, through `raw`'s reflector), `kinds` (the
//! read-only kinds with the leaf's printed rows, through `printed`'s reflector).

mod auth;
pub mod custom;
pub mod events;
pub mod kinds;
pub mod namespaces;
pub mod pods;
mod printed;
mod raw;
pub mod tls;
pub mod version;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{HeaderValue, Request, Response, Uri, header};
use http_body::Body as HttpBody;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use hyper::body::Incoming;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::Connect;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tracing::warn;

use crate::config::{LeafAuth, LeafConfig, TenantConfig};
use crate::errors::{self, Causes};
use crate::metrics::LeafMetrics;
use crate::workers;

use self::auth::Credentials;
pub use self::auth::TokenError;
use self::events::LeafEvents;
use self::kinds::LeafKinds;
use self::namespaces::LeafNamespaces;
use self::pods::{LeafPods, WatchState};
use self::tls::LeafConnector;
use self::version::{LeafVersion, Version};
use crate::k8s::index::PodIndex;
use crate::tls::spares::{Policy, Spares};

/// Errors from the leaf's transport and middleware, boxed as hyper and tower expect.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a leaf's pooled client carries.
pub type LeafBody = UnsyncBoxBody<Bytes, BoxError>;

/// How long a pooled connection to a leaf may sit unused.
const POOL_IDLE: Duration = Duration::from_secs(90);
/// How long dialing a leaf's API server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a leaf could not be built or a request to it failed.
#[derive(Debug, thiserror::Error)]
pub enum LeafError {
    #[error("leaf `{leaf}`: TLS settings refused: {source}")]
    Tls { leaf: String, source: rustls::Error },
    #[error("leaf `{leaf}`: {source}")]
    Token { leaf: String, source: TokenError },
    #[error("leaf `{leaf}`: a leaf needs an async runtime to watch its pods")]
    NoRuntime { leaf: String },
    #[error("leaf `{leaf}`: request failed: {reason}")]
    Request { leaf: String, reason: String },
    #[error("leaf `{leaf}`: `{path}` does not make a valid URI on {server}")]
    Uri {
        leaf: String,
        path: String,
        server: String,
    },
}

/// A leaf cluster, ready to dial.
pub struct Leaf {
    pub config: LeafConfig,
    transport: Arc<Transport>,
    client: kube::Client,
    pods: LeafPods,
    events: LeafEvents,
    namespaces: LeafNamespaces,
    kinds: LeafKinds,
    version: LeafVersion,
}

/// The part shared by the `kube::Client` service and `send`.
struct Transport {
    name: String,
    scheme: Scheme,
    authority: Authority,
    host: HeaderValue,
    /// The server URL's path without its trailing `/` (`""` usually).
    prefix: String,
    credentials: Credentials,
    connector: LeafConnector,
    /// Warm connections, one set per serving thread (a connection stays on its thread).
    spares: Vec<Spares>,
    /// Pooled clients for forwarded requests, one per serving thread (as routes'
    /// upstreams have), so a connection's exchanges stay on its thread; each dials
    /// through its thread's spares.
    clients: Vec<Client<Spares, LeafBody>>,
    /// The pooled client of the `kube::Client`, whose requests run on the control runtime.
    control: Client<LeafConnector, LeafBody>,
    /// Counts watch requests the server accepted (200): a watch resumed after a failure
    /// yields no event until something changes, so the reflector learns of it here.
    watches: tokio::sync::watch::Sender<u64>,
}

impl Leaf {
    /// Builds the leaf's TLS config, connector and clients, and starts its pod reflector
    /// on the current runtime, feeding `index`.
    pub fn new(
        config: &LeafConfig,
        index: &Arc<PodIndex>,
        metrics: Option<LeafMetrics>,
    ) -> Result<Leaf, LeafError> {
        let name = config.name.clone();
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| LeafError::NoRuntime { leaf: name.clone() })?;
        let tls = tls::client_config(&config.tls).map_err(|source| LeafError::Tls {
            leaf: name.clone(),
            source,
        })?;
        if config.tls.insecure_skip_verify {
            warn!(leaf = %name, server = %config.server, "insecure-skip-tls-verify: the leaf's server certificate is not checked");
        }
        let connector = tls::connector(tls, config.tls.server_name.clone(), CONNECT_TIMEOUT);
        let credentials = Credentials::new(&config.auth).map_err(|source| LeafError::Token {
            leaf: name.clone(),
            source,
        })?;
        let authority = config
            .server
            .authority()
            .cloned()
            .ok_or_else(|| LeafError::Uri {
                leaf: name.clone(),
                path: String::new(),
                server: config.server.to_string(),
            })?;
        let host = HeaderValue::from_str(authority.as_str()).map_err(|_| LeafError::Uri {
            leaf: name.clone(),
            path: String::new(),
            server: config.server.to_string(),
        })?;
        let pooled = || {
            Client::builder(TokioExecutor::new())
                .pool_timer(TokioTimer::new())
                .timer(TokioTimer::new())
                .pool_idle_timeout(POOL_IDLE)
                .clone()
        };
        let policy = Policy {
            dial_timeout: CONNECT_TIMEOUT,
            ..Policy::default()
        };
        let spares = Spares::group(connector.clone(), &config.server, policy, workers::count());
        let clients = spares.iter().map(|s| pooled().build(s.clone())).collect();
        let control = pooled().build(connector.clone());
        let transport = Arc::new(Transport {
            name: name.clone(),
            scheme: config.server.scheme().cloned().unwrap_or(Scheme::HTTPS),
            authority,
            host,
            prefix: config.server.path().trim_end_matches('/').to_string(),
            credentials,
            connector,
            spares,
            clients,
            control,
            watches: tokio::sync::watch::Sender::new(0),
        });
        // `kube::Client::new` spawns its buffer task: on the control runtime, like the
        // reflector, not on whichever serving thread first uses the leaf.
        let client = {
            let _on = runtime.enter();
            kube::Client::new(
                KubeService {
                    transport: transport.clone(),
                },
                config.namespace.clone(),
            )
        };
        let slot = index.slot(&name, metrics);
        let pods = LeafPods::start(
            client.clone(),
            slot,
            transport.watches.subscribe(),
            &runtime,
        );
        let events = LeafEvents::start(client.clone(), &name, &runtime);
        let namespaces = LeafNamespaces::start(client.clone(), &name, &runtime);
        let kinds = LeafKinds::start(client.clone(), &name, &runtime);
        let version = LeafVersion::start(client.clone(), transport.watches.subscribe(), &runtime);
        Ok(Leaf {
            config: config.clone(),
            transport,
            client,
            pods,
            events,
            namespaces,
            kinds,
            version,
        })
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Whether this leaf was built from the same `[[leaf]]`, kubeconfig and files: then a
    /// reload keeps it, with its connections and its pod reflector.
    pub fn built_from(&self, config: &LeafConfig) -> bool {
        self.config == *config
    }

    /// The leaf's API client, for lists, watches and typed calls.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// Dials one fresh connection to the leaf's server with the leaf's TLS: for the
    /// proxy core's upgrade path (HTTP/1.1 handshake, then hijack), after [`Leaf::prepare`].
    pub fn connector(&self) -> LeafConnector {
        self.transport.connector.clone()
    }

    /// This serving thread's warm connections to the leaf, for the upgrade path to start
    /// a stream on.
    pub fn spares(&self) -> Spares {
        let spares = &self.transport.spares;
        spares[workers::current_index() % spares.len()].clone()
    }

    /// Aims `parts` at the leaf: URI on its server, its `Host`, and its `Authorization`
    /// in place of the caller's.
    pub fn prepare(&self, parts: &mut http::request::Parts) -> Result<(), LeafError> {
        self.transport.prepare(parts)
    }

    /// Sends `req` (its path and query, method, headers and body) to the leaf over a
    /// pooled HTTP/1.1 connection. On a `101` answer `hyper::upgrade::on(&mut response)`
    /// yields the leaf's upgraded stream.
    pub async fn send<B>(&self, req: Request<B>) -> Result<Response<Incoming>, LeafError>
    where
        B: HttpBody<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let transport = &self.transport;
        let client = &transport.clients[workers::current_index() % transport.clients.len()];
        transport
            .send(client, req.map(|b| b.map_err(Into::into).boxed_unsync()))
            .await
    }

    /// The leaf's pod watch, for `/status`.
    pub fn watch_state(&self) -> WatchState {
        self.pods.state()
    }

    /// The leaf's Kubernetes version, once its server has told it.
    pub fn version(&self) -> Option<Version> {
        self.version.get()
    }

    /// Every pod the leaf holds now (from its reflector's feed).
    pub fn pods(&self) -> Vec<Arc<crate::k8s::raw_pod::RawPod>> {
        self.pods.list()
    }

    /// The leaf's recent events (its event reflector's bounded store).
    pub fn events(&self) -> &LeafEvents {
        &self.events
    }

    /// The leaf's read-only kinds (deployments, services, ...), with its printed rows.
    pub fn kinds(&self) -> &LeafKinds {
        &self.kinds
    }

    /// Watches the read-only kinds and custom resources that `tenants` who may reach the
    /// leaf are served (each
    /// config's tenants, as a snapshot is built from it), and no other.
    pub fn serve_kinds(&self, tenants: &[TenantConfig]) {
        let reaching: Vec<&TenantConfig> = tenants
            .iter()
            .filter(|t| t.may_reach(self.name()))
            .collect();
        self.kinds.want(
            reaching.iter().flat_map(|t| t.resources.iter().copied()),
            reaching.iter().flat_map(|t| t.custom.iter()),
        );
    }

    /// The leaf's namespaces (its namespace reflector's store).
    pub fn namespaces(&self) -> &LeafNamespaces {
        &self.namespaces
    }

    /// The leaf's change feed: its pods by namespace and their recent changes, which the
    /// kube-api front lists and watches from.
    pub fn feed(&self) -> &Arc<crate::k8s::feed::Feed<crate::k8s::RawPod>> {
        self.pods.feed()
    }

    /// How the leaf authenticates, for `/status` (never the token itself).
    pub fn auth_kind(&self) -> &'static str {
        match (&self.config.auth, self.config.tls.identity.is_some()) {
            (LeafAuth::Token(_), _) => "token",
            (LeafAuth::TokenFile(_), _) => "token-file",
            (LeafAuth::None, true) => "client-certificate",
            (LeafAuth::None, false) => "none",
        }
    }
}

impl Transport {
    fn prepare(&self, parts: &mut http::request::Parts) -> Result<(), LeafError> {
        let pq = parts.uri.path_and_query().map_or("/", PathAndQuery::as_str);
        let full = format!("{}{pq}", self.prefix);
        let uri_err = || LeafError::Uri {
            leaf: self.name.clone(),
            path: pq.to_string(),
            server: format!("{}://{}{}", self.scheme, self.authority, self.prefix),
        };
        let path_and_query: PathAndQuery = full.parse().map_err(|_| uri_err())?;
        parts.uri = Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(path_and_query)
            .build()
            .map_err(|_| uri_err())?;
        parts.version = http::Version::HTTP_11;
        parts.headers.insert(header::HOST, self.host.clone());
        // The caller's credentials are for leafgate, never for the leaf.
        parts.headers.remove(header::AUTHORIZATION);
        parts.headers.remove(header::PROXY_AUTHORIZATION);
        let auth = self
            .credentials
            .authorization()
            .map_err(|source| LeafError::Token {
                leaf: self.name.clone(),
                source,
            })?;
        if let Some(v) = auth {
            parts.headers.insert(header::AUTHORIZATION, v);
        }
        Ok(())
    }

    async fn send<C: Connect + Clone + Send + Sync + 'static>(
        &self,
        client: &Client<C, LeafBody>,
        req: Request<LeafBody>,
    ) -> Result<Response<Incoming>, LeafError> {
        let (mut parts, body) = req.into_parts();
        self.prepare(&mut parts)?;
        client
            .request(Request::from_parts(parts, body))
            .await
            .map_err(|e| LeafError::Request {
                leaf: self.name.clone(),
                reason: errors::describe(&e, Causes::All),
            })
    }
}

/// The tower service `kube::Client` runs on: the leaf's transport.
#[derive(Clone)]
struct KubeService {
    transport: Arc<Transport>,
}

impl tower_service::Service<Request<kube::client::Body>> for KubeService {
    type Response = Response<Incoming>;
    type Error = LeafError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Incoming>, LeafError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), LeafError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<kube::client::Body>) -> Self::Future {
        let transport = self.transport.clone();
        let watch = req
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
        Box::pin(async move {
            let req = req.map(|b| b.map_err(BoxError::from).boxed_unsync());
            let res = transport.send(&transport.control, req).await?;
            if watch && res.status() == http::StatusCode::OK {
                transport.watches.send_modify(|n| *n += 1);
            }
            Ok(res)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LeafAuth, LeafTls};
    use http_body_util::Empty;
    use hyper_util::rt::TokioIo;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;
    use tokio::sync::mpsc;

    /// A plain-HTTP "API server": `/upgrade` answers 101 and echoes; anything else (the
    /// reflector's list) gets a 500. Sends each `/upgrade` request head to `heads`.
    async fn server(heads: mpsc::Sender<String>) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                let heads = heads.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if tcp.read(&mut byte).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    if !head.contains(" /prefix/upgrade?x=1 ") {
                        let _ = tcp
                            .write_all(b"HTTP/1.1 500 No\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                            .await;
                        return;
                    }
                    let _ = heads.send(head).await;
                    tcp.write_all(b"HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: x-test\r\n\r\n")
                        .await
                        .unwrap();
                    let mut buf = [0u8; 64];
                    while let Ok(n) = tcp.read(&mut buf).await {
                        if n == 0 || tcp.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    /// A leaf `leaf-1` on `addr` (plain HTTP, path prefix `/prefix/`).
    fn config(addr: std::net::SocketAddr) -> LeafConfig {
        LeafConfig {
            name: "leaf-1".into(),
            kubeconfig: "leaf.kubeconfig".into(),
            context: "c".into(),
            server: format!("http://{addr}/prefix/").parse().unwrap(),
            namespace: "default".into(),
            tls: LeafTls {
                roots: None,
                insecure_skip_verify: false,
                server_name: None,
                identity: None,
            },
            auth: LeafAuth::Token("leaf-token".into()),
            stale: Default::default(),
            fingerprint: [0; 32],
        }
    }

    /// The server a spare is connected to, once the leaf's spares have one ready.
    async fn spare_peer(leaf: &Leaf) -> std::net::SocketAddr {
        let spares = leaf.spares();
        let started = std::time::Instant::now();
        // The first take finds none and is the demand the keeper answers.
        let io = loop {
            if let Some(io) = spares.take() {
                break io;
            }
            assert!(started.elapsed() < Duration::from_secs(5), "no spare came");
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        match io {
            hyper_rustls::MaybeHttpsStream::Http(tcp) => tcp.inner().peer_addr().unwrap(),
            hyper_rustls::MaybeHttpsStream::Https(_) => unreachable!("a plain-HTTP leaf"),
        }
    }

    #[tokio::test]
    async fn a_leaf_moved_on_reload_never_gets_the_old_address_s_spares() {
        let (tx, _heads) = mpsc::channel(4);
        let (old, new) = (server(tx.clone()).await, server(tx).await);
        let index = PodIndex::new();
        let before = Leaf::new(&config(old), &index, None).unwrap();
        assert_eq!(spare_peer(&before).await, old);
        // The reload's leaf: another address, so not `built_from` the old config, and a
        // new `Leaf` with its own spares, whatever the old one still holds.
        let moved = LeafConfig {
            // What loading the rewritten kubeconfig computes: another digest of its files.
            fingerprint: [1; 32],
            ..config(new)
        };
        assert!(!before.built_from(&moved));
        let after = Leaf::new(&moved, &index, None).unwrap();
        assert_eq!(spare_peer(&after).await, new);
        assert_eq!(spare_peer(&before).await, old);
    }

    #[tokio::test]
    async fn send_replaces_the_callers_authorization_and_upgrades() {
        let (tx, mut heads) = mpsc::channel(4);
        let addr = server(tx).await;
        let config = config(addr);
        let index = PodIndex::new();
        let leaf = Leaf::new(&config, &index, None).unwrap();
        let req = Request::post("/upgrade?x=1")
            .header(header::HOST, "gateway.example")
            .header(header::AUTHORIZATION, "Bearer callers-token")
            .header(header::CONNECTION, "Upgrade")
            .header(header::UPGRADE, "x-test")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let mut res = leaf.send(req).await.unwrap();
        assert_eq!(res.status(), 101);
        let head = heads.recv().await.unwrap().to_ascii_lowercase();
        assert!(
            head.starts_with("post /prefix/upgrade?x=1 http/1.1\r\n"),
            "{head}"
        );
        assert!(
            head.contains("authorization: bearer leaf-token\r\n"),
            "{head}"
        );
        assert!(!head.contains("callers-token"), "{head}");
        assert!(head.contains(&format!("host: {addr}\r\n")), "{head}");

        let mut io = TokioIo::new(hyper::upgrade::on(&mut res).await.unwrap());
        io.write_all(b"ping").await.unwrap();
        let mut back = [0u8; 4];
        io.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"ping");
    }
}
