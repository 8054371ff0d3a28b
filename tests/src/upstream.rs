//! Upstream servers for tests: real hyper servers on `127.0.0.1:0` that tell the client
//! what they received, stream large bodies, stall, and close on demand.
//!
//! Paths:
//! - any path: `200` with a JSON echo `{server, method, path, version, headers}`.
//! - `/stream/{bytes}`: `bytes` of body in 64 KiB chunks, counting how many were produced.
//! - `/slow/{ms}`: waits, then echoes.
//! - `/stall`: never answers.
//! - `/upgrade-echo`: `101`, then echoes bytes.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::json;
use tokio::net::TcpListener;

/// An address nothing listens on: a port that was free a moment ago.
pub fn closed_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// Which HTTP versions the upstream accepts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Speaks {
    /// HTTP/1.1 only.
    Http1,
    /// Prior-knowledge HTTP/2 only.
    H2c,
    /// Whatever the client speaks: HTTP/1.1, or HTTP/2 (by ALPN over TLS, or prior knowledge).
    Any,
}

pub struct TestUpstream {
    pub addr: SocketAddr,
    pub name: String,
    /// Body bytes `/stream/...` handed to hyper so far.
    pub produced: Arc<AtomicU64>,
    /// Requests served.
    pub requests: Arc<AtomicU64>,
    /// TCP connections accepted.
    pub connections: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestUpstream {
    pub async fn start(name: &str) -> TestUpstream {
        Self::start_speaking(name, Speaks::Http1).await
    }

    pub async fn start_speaking(name: &str, speaks: Speaks) -> TestUpstream {
        Self::start_with(name, speaks, None).await
    }

    /// An HTTP/1.1 upstream behind TLS with `tls` (a test makes it demand client
    /// certificates when it wants mutual TLS). The echo gains `client_cert: true|false`.
    pub async fn start_tls(name: &str, tls: Arc<rustls::ServerConfig>) -> TestUpstream {
        Self::start_with(name, Speaks::Http1, Some(tls)).await
    }

    /// An upstream behind TLS speaking `speaks`; what it offers by ALPN is `tls`'s.
    pub async fn start_tls_speaking(
        name: &str,
        speaks: Speaks,
        tls: Arc<rustls::ServerConfig>,
    ) -> TestUpstream {
        Self::start_with(name, speaks, Some(tls)).await
    }

    async fn start_with(
        name: &str,
        speaks: Speaks,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> TestUpstream {
        let socket = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = socket.local_addr().unwrap();
        let produced = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let accepted = connections.clone();
        let state = Arc::new(State {
            name: name.to_string(),
            produced: produced.clone(),
            requests: requests.clone(),
        });
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = socket.accept().await else {
                    continue;
                };
                accepted.fetch_add(1, Ordering::Relaxed);
                let state = state.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    let mut builder = auto::Builder::new(TokioExecutor::new());
                    builder = match speaks {
                        Speaks::Http1 => builder.http1_only(),
                        Speaks::H2c => builder.http2_only(),
                        Speaks::Any => builder,
                    };
                    let Some(tls) = tls else {
                        let svc = state.service(false);
                        let _ = builder
                            .serve_connection_with_upgrades(TokioIo::new(stream), svc)
                            .await;
                        return;
                    };
                    let Ok(stream) = tokio_rustls::TlsAcceptor::from(tls).accept(stream).await
                    else {
                        return;
                    };
                    let client_cert = stream.get_ref().1.peer_certificates().is_some();
                    let svc = state.service(client_cert);
                    let _ = builder
                        .serve_connection_with_upgrades(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        TestUpstream {
            addr,
            name: name.to_string(),
            produced,
            requests,
            connections,
            task,
        }
    }
}

type Body = BoxBody<Bytes, Infallible>;

struct State {
    name: String,
    produced: Arc<AtomicU64>,
    requests: Arc<AtomicU64>,
}

impl State {
    fn service(
        self: Arc<Self>,
        client_cert: bool,
    ) -> impl hyper::service::Service<
        Request<Incoming>,
        Response = Response<Body>,
        Error = Infallible,
        Future = impl Future<Output = Result<Response<Body>, Infallible>> + Send,
    > + Clone {
        hyper::service::service_fn(move |req| {
            let state = self.clone();
            async move { Ok::<_, Infallible>(state.handle(req, client_cert).await) }
        })
    }

    async fn handle(&self, mut req: Request<Incoming>, client_cert: bool) -> Response<Body> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let path = req.uri().path().to_string();
        if path == "/upgrade-echo" {
            // Switches to a byte echo, like a tiny exec stream.
            let upgrade = hyper::upgrade::on(&mut req);
            tokio::spawn(async move {
                if let Ok(upgraded) = upgrade.await {
                    let (mut r, mut w) = tokio::io::split(TokioIo::new(upgraded));
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                    let _ = tokio::io::AsyncWriteExt::shutdown(&mut w).await;
                }
            });
            return Response::builder()
                .status(101)
                .header("connection", "Upgrade")
                .header("upgrade", "x-echo")
                .body(Full::new(Bytes::new()).boxed())
                .unwrap();
        }
        if let Some(n) = path.strip_prefix("/stream/") {
            return self.stream(n.parse().unwrap());
        }
        if let Some(ms) = path.strip_prefix("/slow/") {
            tokio::time::sleep(Duration::from_millis(ms.parse().unwrap())).await;
        }
        if path == "/stall" {
            std::future::pending::<()>().await;
        }
        if path == "/drain-then-stall" {
            // Reads the whole upload, then never answers.
            let _ = req.into_body().collect().await;
            return std::future::pending().await;
        }
        let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, v) in req.headers() {
            headers
                .entry(k.to_string())
                .or_default()
                .push(v.to_str().unwrap_or("").to_string());
        }
        let echo = json!({
            "server": self.name,
            "method": req.method().as_str(),
            "path": req.uri().path_and_query().map(|p| p.as_str()),
            // HTTP/2's `:authority` (absent from HTTP/1.1 origin-form requests).
            "authority": req.uri().authority().map(|a| a.as_str()),
            "version": format!("{:?}", req.version()),
            "headers": headers,
        });
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let mut echo = echo;
        echo["body_len"] = json!(body.len());
        echo["client_cert"] = json!(client_cert);
        Response::builder()
            .header("content-type", "application/json")
            .header("connection", "keep-alive, x-upstream-private")
            .header("x-upstream-private", "must not reach the client")
            .header("keep-alive", "timeout=5")
            .body(Full::new(Bytes::from(echo.to_string())).boxed())
            .unwrap()
    }

    fn stream(&self, total: u64) -> Response<Body> {
        const CHUNK: usize = 64 * 1024;
        let produced = self.produced.clone();
        let chunk = Bytes::from(vec![b'x'; CHUNK]);
        let stream = futures_util::stream::unfold(0u64, move |sent| {
            let produced = produced.clone();
            let chunk = chunk.clone();
            async move {
                if sent >= total {
                    return None;
                }
                let n = (total - sent).min(CHUNK as u64);
                produced.fetch_add(n, Ordering::Relaxed);
                Some((
                    Ok::<_, Infallible>(Frame::data(chunk.slice(..n as usize))),
                    sent + n,
                ))
            }
        });
        Response::builder()
            .header("content-length", total.to_string())
            .body(StreamBody::new(stream).boxed())
            .unwrap()
    }
}
