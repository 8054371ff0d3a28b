//! The admin listener: health, readiness, status, metrics and reload, for operators and
//! their tooling. Plain HTTP/1.1 on `[admin] bind`. It reads the gateway's state and asks
//! it to reload; it serves no traffic.
//!
//! - `GET /`: the dashboard ([`dashboard`]: its page, script and style, embedded).
//! - `GET /healthz`: 200 while the process runs.
//! - `GET /readyz`: 200 while accepting, 503 once shutdown began.
//! - `GET /status`: JSON: snapshot generation and load time, listeners, routes, tenants,
//!   leaves (server, auth, pod watch: synced, pods, restarts, last error), the last
//!   reload's result, the config's warnings, the root cluster (`kubernetes`) and the
//!   Ingress provider (`ingress`: synced, served, skipped, conflicts, shadowed, problems,
//!   last build), and `runtime` (tokio tasks alive, serving threads, open sessions: what
//!   `bench/soak.sh` samples for leaks).
//! - `GET /metrics`: Prometheus text format.
//! - `POST /reload`: reload now; 200 with the new generation, or 422 with every error.
//!
//! Probes and metrics are open: kubelets and scrapers reach them from the network, and
//! they tell nothing a tenant could use. `/status` (the whole config's shape) and
//! `/reload` are [`Access`]-checked: a loopback peer, meaning the peer address is exactly
//! `127.0.0.1` or `::1` (a local `curl`, `leafgate reload`, a sidecar), or a bearer token
//! from `[admin] tokens_file` (re-read on every reload). The peer is the socket's, never
//! a forwarded header. Other 127/8 addresses are not loopback here: the trusted set is the
//! two addresses local clients use, so that nothing else on the host's loopback range
//! (another network namespace's forwarding, an ssh tunnel end) is trusted by accident.
//!
//! Connections get the client listeners' first-byte, header-read and idle timeouts; accept
//! errors back off instead of spinning. It stops last on shutdown (its own stop token), so
//! `/readyz` answers 503 for the whole drain.

mod certs;
mod dashboard;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
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

use crate::config::{RouteAction, Tokens, UpstreamProtocol};
use crate::control::Control;
use crate::listener::conn::{self, InFlight};
use crate::metrics::LeafKindLabels;
use crate::proxy::{Body, full};

pub async fn serve(socket: TcpListener, gateway: Arc<dyn Control>, stop: CancellationToken) {
    if let Ok(addr) = socket.local_addr() {
        info!(%addr, "admin listening");
    }
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(conn::HEADER_READ_TIMEOUT);
    let http = Arc::new(http);
    loop {
        let (stream, peer) = tokio::select! {
            _ = stop.cancelled() => break,
            accepted = socket.accept() => match accepted {
                Ok(accepted) => accepted,
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
            if !conn::first_byte(&stream, timeouts.first_byte).await {
                return;
            }
            let in_flight = Arc::new(InFlight::default());
            let counter = in_flight.clone();
            let svc = hyper::service::service_fn(move |req| {
                let gateway = gateway.clone();
                counter.track(async move {
                    Ok::<_, std::convert::Infallible>(handle(req, peer, &*gateway).await)
                })
            });
            let conn = http.serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            let result = tokio::select! {
                r = conn.as_mut() => r,
                _ = conn::idle_for(&in_flight, timeouts.client_idle) => {
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

async fn handle(req: Request<Incoming>, peer: SocketAddr, gateway: &dyn Control) -> Response<Body> {
    if matches!(req.uri().path(), "/status" | "/reload") {
        let admin = gateway.snapshot().config.admin.clone();
        let tokens = admin.as_ref().and_then(|a| a.tokens.as_ref());
        match access(peer.ip(), bearer(&req), tokens) {
            Access::Granted => {}
            Access::NeedsToken => {
                return Response::builder()
                    .status(StatusCode::UNAUTHORIZED)
                    .header(header::WWW_AUTHENTICATE, "Bearer realm=\"leafgate-admin\"")
                    .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
                    .body(full(
                        "unauthorized: /status and /reload need a bearer token from [admin] tokens_file, or a loopback peer (127.0.0.1, ::1)\n",
                    ))
                    .expect("static parts make a valid response");
            }
            Access::LoopbackOnly => {
                return text(
                    StatusCode::FORBIDDEN,
                    "forbidden: /status and /reload answer only loopback peers (127.0.0.1, ::1); set [admin] tokens_file to admit bearer tokens\n",
                );
            }
        }
    }
    match (req.method(), req.uri().path()) {
        (&Method::GET, path) if dashboard::is_file(path) => {
            dashboard::file(path).expect("is_file said so")
        }
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
            .body(full({
                let snapshot = gateway.snapshot();
                gateway.metrics().encode_scrape(
                    certs::expiries(&snapshot, SystemTime::now()),
                    kinds_kept(&snapshot),
                )
            }))
            .expect("static parts make a valid response"),
        (&Method::POST, "/reload") => match gateway.reload().await {
            Ok(generation) => json_response(
                StatusCode::OK,
                &json!({ "ok": true, "generation": generation }),
            ),
            Err(e) => json_response(
                StatusCode::UNPROCESSABLE_ENTITY,
                &json!({ "ok": false, "error": e.to_string(), "kind": e.kind() }),
            ),
        },
        (_, path) if dashboard::is_file(path) => {
            text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n")
        }
        (_, "/healthz" | "/readyz" | "/status" | "/metrics" | "/reload") => {
            text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n")
        }
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: the admin listener serves the dashboard at /, /healthz /readyz /status /metrics and POST /reload\n",
        ),
    }
}

/// Whether a peer may have `/status` and `/reload`.
#[derive(Debug, PartialEq, Eq)]
enum Access {
    Granted,
    /// Not loopback, and no token of the tokens file: 401.
    NeedsToken,
    /// Not loopback, and no tokens file: nothing the peer sends can help, 403.
    LoopbackOnly,
}

/// The loopback peers: exactly the addresses local clients use (see the module's header),
/// IPv4-mapped `::ffff:127.0.0.1` included, as a dual-stack socket reports it.
fn is_loopback_peer(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4 == Ipv4Addr::LOCALHOST,
        IpAddr::V6(v6) => {
            v6 == Ipv6Addr::LOCALHOST || v6.to_ipv4_mapped() == Some(Ipv4Addr::LOCALHOST)
        }
    }
}

fn access(peer: IpAddr, token: Option<&str>, tokens: Option<&Tokens>) -> Access {
    if is_loopback_peer(peer) {
        return Access::Granted;
    }
    match tokens {
        None => Access::LoopbackOnly,
        Some(tokens) if token.is_some_and(|t| tokens.contains(t)) => Access::Granted,
        Some(_) => Access::NeedsToken,
    }
}

/// The request's `Authorization: Bearer` token, if it has one.
fn bearer<B>(req: &Request<B>) -> Option<&str> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
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
/// Each leaf's read-only kinds as it keeps them, for `leafgate_leaf_objects` and
/// `leafgate_leaf_object_bytes`.
fn kinds_kept(snapshot: &crate::snapshot::Snapshot) -> Vec<(LeafKindLabels, i64, i64)> {
    let mut out = Vec::new();
    for (name, leaf) in &snapshot.leaves {
        for k in leaf.kinds().footprint() {
            let labels = LeafKindLabels {
                leaf: name.clone(),
                resource: k.gvr.entry(),
            };
            let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
            out.push((labels, count(k.objects), count(k.bytes)));
        }
    }
    out
}

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
                "kinds": leaf.kinds().footprint().iter().map(|k| {
                    let mut kind = json!({
                        "resource": k.gvr.entry(),
                        "watched": k.watched,
                        "objects": k.objects,
                        "json_bytes": k.bytes,
                    });
                    if let Some(why) = k.refused {
                        kind["version"] = json!(k.gvr.version());
                        kind["refused"] = json!(why);
                    }
                    kind
                }).collect::<Vec<_>>(),
                "last_error": watch.last_error.as_ref().map(|(_, e)| e),
                "last_error_at": watch.last_error.as_ref().map(|(at, _)| rfc3339(*at)),
            })
        })
        .collect();
    leaves.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let last_reload = gateway.last_reload().map(|r| match r.result {
        Ok(generation) => json!({ "at": rfc3339(r.at), "ok": true, "generation": generation }),
        Err(error) => json!({
            "at": rfc3339(r.at),
            "ok": false,
            "error": error.to_string(),
            "kind": error.kind(),
        }),
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
        "warnings": config.warnings,
        "kubernetes": gateway.root_status(),
        "ingress": gateway.ingress_status(),
        "gateway": gateway.gateway_status(),
        "runtime": gateway.runtime_status(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_127_0_0_1_and_ipv6_loopback_are_loopback_peers() {
        for ip in ["127.0.0.1", "::1", "::ffff:127.0.0.1"] {
            assert!(is_loopback_peer(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "127.0.0.2",
            "127.1.2.3",
            "10.0.0.1",
            "0.0.0.0",
            "::",
            "::ffff:127.0.0.2",
        ] {
            assert!(!is_loopback_peer(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn a_remote_peer_needs_a_token_of_the_file_and_no_file_means_loopback_only() {
        let remote: IpAddr = "10.1.2.3".parse().unwrap();
        let tokens = Tokens::parse("right-token-0123456789\n");
        assert_eq!(access(remote, None, Some(&tokens)), Access::NeedsToken);
        assert_eq!(
            access(remote, Some("wrong"), Some(&tokens)),
            Access::NeedsToken
        );
        assert_eq!(
            access(remote, Some("right-token-0123456789"), Some(&tokens)),
            Access::Granted
        );
        assert_eq!(
            access(remote, Some("right-token-0123456789"), None),
            Access::LoopbackOnly
        );
        assert_eq!(
            access(remote, None, Some(&Tokens::default())),
            Access::NeedsToken
        );
        assert_eq!(access("::1".parse().unwrap(), None, None), Access::Granted);
    }

    #[test]
    fn the_bearer_token_is_read_from_authorization() {
        let req = |v: &str| {
            Request::get("/")
                .header("authorization", v)
                .body(())
                .unwrap()
        };
        assert_eq!(bearer(&req("Bearer abc")), Some("abc"));
        assert_eq!(bearer(&req("bearer  abc ")), Some("abc"));
        assert_eq!(bearer(&req("Basic abc")), None);
        assert_eq!(bearer(&req("Bearer ")), None);
        assert_eq!(bearer(&Request::get("/").body(()).unwrap()), None);
    }
}
