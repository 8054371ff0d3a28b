//! The Gateway API conformance suite's backend, `echo-basic`
//! (`conformance/echo-basic/echo-basic.go` in gateway-api v1.6.1), as far as the ported
//! tests use it: every request gets `200` and the JSON
//! `{path, host, method, proto, headers, httpPort, namespace, ingress, service, pod}` (the
//! path as the request line wrote it, query included; header names in Go's canonical form,
//! each with its list of values; `Host` not among them, as Go takes it out), with
//! `Content-Type: application/json` and `X-Content-Type-Options: nosniff`;
//! `X-Echo-Set-Header: Name:value,...` sets response headers; `?delay=1s` (or `500ms`)
//! waits that long before answering; `/ws` is a WebSocket echo.
//!
//! One server per "pod", each on its own loopback address at the container port (3000), so
//! a Service's EndpointSlice lists one address per pod as a cluster's does; and its h2c
//! server at 3001, as echo-basic's (`H2C_PORT`).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Request, Response};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// The port echo-basic serves plain HTTP on (`HTTP_PORT`).
pub const HTTP_PORT: u16 = 3000;

/// The port echo-basic serves h2c on (`H2C_PORT`): HTTP/2 without TLS, and an HTTP/1.1
/// request that does not ask to upgrade to it answered 400 `Expected h2c request`.
pub const H2C_PORT: u16 = 3001;

/// What a pod's servers answer with.
#[derive(Clone)]
struct Pod {
    namespace: Arc<str>,
    name: Arc<str>,
    served: Arc<AtomicU64>,
}

impl Pod {
    /// Serves the connections of `socket` until the pod stops; `h2c`: as echo-basic's
    /// h2c server.
    async fn serve(self, socket: TcpListener, h2c: bool) {
        loop {
            let Ok((stream, _)) = socket.accept().await else {
                return;
            };
            let pod = self.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |mut req: Request<Incoming>| {
                    pod.served.fetch_add(1, Ordering::Relaxed);
                    let r = if h2c && req.version() != http::Version::HTTP_2 {
                        let mut r = Response::new(Full::new(Bytes::from("Expected h2c request")));
                        *r.status_mut() = http::StatusCode::BAD_REQUEST;
                        r
                    } else {
                        websocket(&mut req)
                            .unwrap_or_else(|| answer(&req, &pod.namespace, &pod.name))
                    };
                    let delay = delay(req.uri().query());
                    async move {
                        if let Some(d) = delay {
                            tokio::time::sleep(d).await;
                        }
                        Ok::<_, Infallible>(r)
                    }
                });
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection_with_upgrades(TokioIo::new(stream), service)
                    .await;
            });
        }
    }
}

/// One echo-basic pod.
pub struct EchoPod {
    pub name: String,
    pub namespace: String,
    pub addr: SocketAddr,
    served: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for EchoPod {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Go's `http.CanonicalHeaderKey`: the first letter and each letter after a `-` upper
/// case, the others lower case.
pub fn canonical(name: &str) -> String {
    let mut upper = true;
    name.chars()
        .map(|c| {
            let out = if upper {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
            upper = c == '-';
            out
        })
        .collect()
}

fn answer(req: &Request<Incoming>, namespace: &str, pod: &str) -> Response<Full<Bytes>> {
    let mut headers: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in req.headers() {
        if name == http::header::HOST {
            continue;
        }
        headers
            .entry(canonical(name.as_str()))
            .or_default()
            .push(String::from_utf8_lossy(value.as_bytes()).into_owned());
    }
    let host = req
        .headers()
        .get(http::header::HOST)
        .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned())
        .or_else(|| req.uri().authority().map(|a| a.to_string()))
        .unwrap_or_default();
    let path = req
        .uri()
        .path_and_query()
        .map_or("/".to_string(), |p| p.to_string());
    let body = json!({
        "path": path,
        "host": host,
        "method": req.method().as_str(),
        "proto": format!("{:?}", req.version()),
        "headers": headers,
        "httpPort": HTTP_PORT.to_string(),
        "namespace": namespace,
        "ingress": "",
        "service": "",
        "pod": pod,
    });
    let mut response = Response::new(Full::new(Bytes::from(
        serde_json::to_vec_pretty(&body).unwrap(),
    )));
    let h = response.headers_mut();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    for list in req.headers().get_all("x-echo-set-header") {
        for kv in String::from_utf8_lossy(list.as_bytes()).split(',') {
            let (name, value) = kv.trim().split_once(':').unwrap_or((kv.trim(), ""));
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value.trim()),
            ) {
                h.append(n, v);
            }
        }
    }
    response
}

/// The `delay` query parameter, as Go's `time.ParseDuration` reads the values the tests
/// send (`1s`, `500ms`).
fn delay(query: Option<&str>) -> Option<Duration> {
    let value = query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("delay="))?;
    let digits = value.bytes().take_while(u8::is_ascii_digit).count();
    let n: u64 = value[..digits].parse().ok()?;
    match &value[digits..] {
        "ms" => Some(Duration::from_millis(n)),
        "s" => Some(Duration::from_secs(n)),
        "m" => Some(Duration::from_secs(n * 60)),
        _ => None,
    }
}

/// The answer to a WebSocket handshake at `/ws` (101, then an echo of every message on
/// the upgraded connection), or `None` for any other request.
fn websocket(req: &mut Request<Incoming>) -> Option<Response<Full<Bytes>>> {
    let upgrade = req.headers().get(http::header::UPGRADE)?;
    if req.uri().path() != "/ws" || !upgrade.as_bytes().eq_ignore_ascii_case(b"websocket") {
        return None;
    }
    let key = req.headers().get(http::header::SEC_WEBSOCKET_KEY)?;
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let upgraded = hyper::upgrade::on(req);
    tokio::spawn(async move {
        let Ok(io) = upgraded.await else {
            return;
        };
        let role = tokio_tungstenite::tungstenite::protocol::Role::Server;
        let ws =
            tokio_tungstenite::WebSocketStream::from_raw_socket(TokioIo::new(io), role, None).await;
        crate::backends::echo_messages(ws).await;
    });
    let mut res = Response::new(Full::new(Bytes::new()));
    *res.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
    let h = res.headers_mut();
    h.insert(http::header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(
        http::header::CONNECTION,
        HeaderValue::from_static("Upgrade"),
    );
    h.insert(
        http::header::SEC_WEBSOCKET_ACCEPT,
        HeaderValue::from_str(&accept).ok()?,
    );
    Some(res)
}

impl EchoPod {
    /// Starts pod `namespace/name` on `ip`:[`HTTP_PORT`], and its h2c server on
    /// `ip`:[`H2C_PORT`].
    pub async fn start(namespace: &str, name: &str, ip: IpAddr) -> EchoPod {
        let bind = |port| async move {
            TcpListener::bind(SocketAddr::new(ip, port))
                .await
                .unwrap_or_else(|e| panic!("echo pod {name} on {ip}:{port}: {e}"))
        };
        let (http, h2c) = (bind(HTTP_PORT).await, bind(H2C_PORT).await);
        let addr = http.local_addr().unwrap();
        let served = Arc::new(AtomicU64::new(0));
        let pod = Pod {
            namespace: namespace.into(),
            name: name.into(),
            served: served.clone(),
        };
        let task = tokio::spawn(async move {
            tokio::join!(pod.clone().serve(http, false), pod.serve(h2c, true));
        });
        EchoPod {
            name: name.to_string(),
            namespace: namespace.to_string(),
            addr,
            served,
            task,
        }
    }

    /// The requests this pod has been sent.
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }
}

/// The JSON an echo pod answered with, as the conformance harness reads it.
pub fn read(body: &Value) -> (&str, &str, &str) {
    (
        body["namespace"].as_str().unwrap_or(""),
        body["pod"].as_str().unwrap_or(""),
        body["path"].as_str().unwrap_or(""),
    )
}
