//! Upstream servers for tests: real hyper servers on `127.0.0.1:0` that tell the client
//! what they received, stream large bodies, stall, and close on demand.
//!
//! Paths:
//! - any path: `200` with a JSON echo `{server, method, path, version, headers}`.
//! - `/stream/{bytes}`: `bytes` of body in 64 KiB chunks, counting how many were produced.
//! - `/slow/{ms}`: waits, then echoes.
//! - `/stall`: never answers.

use std::collections::BTreeMap;
use std::convert::Infallible;
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
}

pub struct TestUpstream {
    pub addr: SocketAddr,
    pub name: String,
    /// Body bytes `/stream/...` handed to hyper so far.
    pub produced: Arc<AtomicU64>,
    /// Requests served.
    pub requests: Arc<AtomicU64>,
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
        let socket = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = socket.local_addr().unwrap();
        let produced = Arc::new(AtomicU64::new(0));
        let requests = Arc::new(AtomicU64::new(0));
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
                let state = state.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(state.handle(req).await) }
                    });
                    let mut builder = auto::Builder::new(TokioExecutor::new());
                    builder = match speaks {
                        Speaks::Http1 => builder.http1_only(),
                        Speaks::H2c => builder.http2_only(),
                    };
                    let _ = builder.serve_connection(TokioIo::new(stream), svc).await;
                });
            }
        });
        TestUpstream {
            addr,
            name: name.to_string(),
            produced,
            requests,
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
    async fn handle(&self, req: Request<Incoming>) -> Response<Body> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let path = req.uri().path().to_string();
        if let Some(n) = path.strip_prefix("/stream/") {
            return self.stream(n.parse().unwrap());
        }
        if let Some(ms) = path.strip_prefix("/slow/") {
            tokio::time::sleep(Duration::from_millis(ms.parse().unwrap())).await;
        }
        if path == "/stall" {
            std::future::pending::<()>().await;
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
