//! The admin listener: health, readiness, status, metrics and reload, for operators and
//! their tooling. Plain HTTP/1.1 on `[admin] bind` (keep it on loopback or a private
//! network). It reads the gateway's state and asks it to reload; it serves no traffic.
//!
//! - `GET /healthz`: 200 while the process runs.
//! - `GET /readyz`: 200 while accepting, 503 once shutdown began.
//! - `GET /status`: JSON: snapshot generation and load time, listeners, routes, tenants,
//!   leaves (server, auth, pod watch: synced, pods, restarts, last error), the last
//!   reload's result, the root cluster (`kubernetes`) and the Ingress provider
//!   (`ingress`: synced, served, skipped, conflicts, shadowed, problems, last build).
//! - `GET /metrics`: Prometheus text format.
//! - `POST /reload`: reload now; 200 with the new generation, or 422 with every error.
//!
//! Connections get the client listeners' first-byte, header-read and idle timeouts; accept
//! errors back off instead of spinning. It stops last on shutdown (its own stop token), so
//! `/readyz` answers 503 for the whole drain.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::{Method, Request, Response, StatusCode, header};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::config::{RouteAction, UpstreamProtocol};
use crate::control::Control;
use crate::listener::{self, InFlight};
use crate::proxy::{Body, full};

pub async fn serve(socket: TcpListener, gateway: Arc<dyn Control>, stop: CancellationToken) {
    if let Ok(addr) = socket.local_addr() {
        info!(%addr, "admin listening");
    }
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(listener::HEADER_READ_TIMEOUT);
    let http = Arc::new(http);
    loop {
        let stream = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = socket.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // EMFILE and friends: back off instead of spinning on the error.
                    warn!(error = %e, "admin accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let gateway = gateway.clone();
        let http = http.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let timeouts = gateway.snapshot().config.timeouts;
            if !listener::first_byte(&stream, timeouts.first_byte).await {
                return;
            }
            let in_flight = Arc::new(InFlight::default());
            let counter = in_flight.clone();
            let svc = hyper::service::service_fn(move |req| {
                let gateway = gateway.clone();
                counter.track(async move {
                    Ok::<_, std::convert::Infallible>(handle(req, &*gateway).await)
                })
            });
            let conn = http.serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            let result = tokio::select! {
                r = conn.as_mut() => r,
                _ = listener::idle_for(&in_flight, timeouts.client_idle) => {
                    conn.as_mut().graceful_shutdown();
                    conn.as_mut().await
                }
                _ = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.as_mut().await
                }
            };
            if let Err(e) = result {
                debug!(error = %e, "admin connection ended with an error");
            }
        });
    }
    info!("admin stopped");
}

async fn handle(req: Request<Incoming>, gateway: &dyn Control) -> Response<Body> {
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/healthz") => text(StatusCode::OK, "ok\n"),
        (&Method::GET, "/readyz") if gateway.is_draining() => {
            text(StatusCode::SERVICE_UNAVAILABLE, "shutting down\n")
        }
        (&Method::GET, "/readyz") => text(StatusCode::OK, "ready\n"),
        (&Method::GET, "/status") => json_response(StatusCode::OK, &status(gateway)),
        (&Method::GET, "/metrics") => Response::builder()
            .header(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )
            .body(full(gateway.metrics().encode()))
            .expect("static parts make a valid response"),
        (&Method::POST, "/reload") => match gateway.reload().await {
            Ok(generation) => json_response(
                StatusCode::OK,
                &json!({ "ok": true, "generation": generation }),
            ),
            Err(e) => json_response(
                StatusCode::UNPROCESSABLE_ENTITY,
                &json!({ "ok": false, "error": e }),
            ),
        },
        (_, "/healthz" | "/readyz" | "/status" | "/metrics" | "/reload") => {
            text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n")
        }
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: the admin listener serves /healthz /readyz /status /metrics and POST /reload\n",
        ),
    }
}

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .body(full(body))
        .expect("static parts make a valid response")
}

fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(full(format!("{value:#}\n")))
        .expect("static parts make a valid response")
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// The `/status` document.
pub fn status(gateway: &dyn Control) -> Value {
    let snapshot = gateway.snapshot();
    let config = &snapshot.config;
    let addrs = gateway.listener_addrs();
    let listeners: Vec<Value> = config
        .listeners
        .iter()
        .map(|l| {
            let local = addrs
                .iter()
                .find(|a| a.name == l.name)
                .map(|a| a.local.to_string());
            json!({
                "name": l.name,
                "bind": l.bind.to_string(),
                "address": local,
                "kind": format!("{:?}", l.kind).to_lowercase(),
                "tls": l.tls.is_some(),
            })
        })
        .collect();
    let routes: Vec<Value> = config
        .routes
        .iter()
        .map(|r| {
            let mut v = json!({
                "name": r.name,
                "host": r.host.to_string(),
                "path": r.path.to_string(),
                "listeners": r.listeners,
                "tenant": r.tenant,
            });
            match &r.action {
                RouteAction::Direct(d) => v["direct"] = json!({ "status": d.status.as_u16() }),
                RouteAction::Proxy(u) => {
                    v["backends"] =
                        json!(u.backends.iter().map(|b| b.to_string()).collect::<Vec<_>>());
                    v["protocol"] = json!(match u.protocol {
                        UpstreamProtocol::Auto => "auto",
                        UpstreamProtocol::Http1 => "http1",
                        UpstreamProtocol::H2 => "h2",
                    });
                }
            }
            v
        })
        .collect();
    let tenants: Vec<Value> = config
        .tenants
        .iter()
        .map(|t| json!({ "name": t.name, "namespaces": t.namespaces }))
        .collect();
    let mut leaves: Vec<Value> = snapshot
        .leaves
        .values()
        .map(|leaf| {
            let c = &leaf.config;
            let watch = leaf.watch_state();
            let mut warnings = Vec::new();
            if c.tls.insecure_skip_verify {
                warnings.push("insecure-skip-tls-verify: the server's certificate is not checked");
            }
            json!({
                "name": c.name,
                "kubeconfig": c.kubeconfig.display().to_string(),
                "context": c.context,
                "server": c.server.to_string(),
                "auth": leaf.auth_kind(),
                "insecure_skip_tls_verify": c.tls.insecure_skip_verify,
                "warnings": warnings,
                "synced": watch.synced,
                "pods": watch.pods,
                "watch_restarts": watch.restarts,
                "last_error": watch.last_error.as_ref().map(|(_, e)| e),
                "last_error_at": watch.last_error.as_ref().map(|(at, _)| rfc3339(*at)),
            })
        })
        .collect();
    leaves.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let last_reload = gateway.last_reload().map(|r| match r.result {
        Ok(generation) => json!({ "at": rfc3339(r.at), "ok": true, "generation": generation }),
        Err(error) => json!({ "at": rfc3339(r.at), "ok": false, "error": error }),
    });
    json!({
        "generation": snapshot.generation,
        "loaded_at": rfc3339(snapshot.loaded_at),
        "config": config.path.display().to_string(),
        "listeners": listeners,
        "routes": routes,
        "tenants": tenants,
        "leaves": leaves,
        "last_reload": last_reload,
        "kubernetes": gateway.root_status(),
        "ingress": gateway.ingress_status(),
    })
}
