//! The Gateway API conformance suite's backend, `echo-basic`
//! (`conformance/echo-basic/echo-basic.go` in gateway-api v1.6.1), as far as the ported
//! tests use it: every request gets `200` and the JSON
//! `{path, host, method, proto, headers, httpPort, namespace, ingress, service, pod}` (the
//! path as the request line wrote it, query included; header names in Go's canonical form,
//! each with its list of values; `Host` not among them, as Go takes it out), with
//! `Content-Type: application/json` and `X-Content-Type-Options: nosniff`;
//! `X-Echo-Set-Header: Name:value,...` sets response headers.
//!
//! One server per "pod", each on its own loopback address at the container port (3000), so
//! a Service's EndpointSlice lists one address per pod as a cluster's does.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

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

/// One echo-basic pod.
pub struct EchoPod {
    pub name: String,
    pub namespace: String,
    pub addr: SocketAddr,
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

impl EchoPod {
    /// Starts pod `namespace/name` on `ip`:[`HTTP_PORT`].
    pub async fn start(namespace: &str, name: &str, ip: IpAddr) -> EchoPod {
        let socket = TcpListener::bind(SocketAddr::new(ip, HTTP_PORT))
            .await
            .unwrap_or_else(|e| panic!("echo pod {name} on {ip}: {e}"));
        let addr = socket.local_addr().unwrap();
        let (ns, pod) = (namespace.to_string(), name.to_string());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = socket.accept().await else {
                    return;
                };
                let (ns, pod) = (ns.clone(), pod.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                        let r = answer(&req, &ns, &pod);
                        async move { Ok::<_, Infallible>(r) }
                    });
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        EchoPod {
            name: name.to_string(),
            namespace: namespace.to_string(),
            addr,
            task,
        }
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
