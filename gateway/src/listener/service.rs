//! One request's way through the gateway: load the snapshot, find the route, answer.
//!
//! The snapshot is loaded once here and everything downstream uses that copy. The answer
//! comes from the route itself (`direct`), from its upstream (`proxy::forward`), or, when
//! the request switches protocols, from the hijack path (`proxy::upgrade`). Every request is
//! counted by route and status and timed to its response head.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::Histogram;
use tokio::time::Instant;
use tracing::{Instrument, info_span};

use super::identity::ClientIdentity;
use super::{kube_api, node_api};
use crate::config::ListenerKind;
use crate::metrics::{RequestLabels, RouteLabels};
use crate::proxy::headers::{self, ClientSide, Peer};
use crate::proxy::upgrade::{self, SpliceJob};
use crate::proxy::{self, Body, Exchange, error_response, full};
use crate::routing::path::{self, PathError};
use crate::runtime::Shared;
use crate::snapshot::{Action, Route};

/// The client end of a connection, shared by its requests.
pub struct Client {
    pub listener: Arc<str>,
    pub peer: SocketAddr,
    pub tls: bool,
    /// The verified client certificate's names (listeners with `client_ca`).
    pub identity: Option<Arc<ClientIdentity>>,
    pub shared: Arc<Shared>,
    /// The metric series this connection's last request was counted in: a keep-alive
    /// connection usually asks the same route and gets the same status, and reusing the
    /// handles saves building, hashing and looking up the label sets per request.
    pub last_series: Mutex<Option<Series>>,
    /// The peer as the forwarding headers write it, rendered once for all its requests.
    pub forwarded_peer: Peer,
}

impl Client {
    pub fn new(
        listener: Arc<str>,
        peer: SocketAddr,
        tls: bool,
        identity: Option<Arc<ClientIdentity>>,
        shared: Arc<Shared>,
    ) -> Self {
        Client {
            listener,
            peer,
            tls,
            identity,
            shared,
            last_series: Mutex::new(None),
            forwarded_peer: Peer::new(peer.ip()),
        }
    }
}

/// A request's counter and latency histogram, for one route and status on this listener.
pub struct Series {
    route: String,
    status: u16,
    requests: Counter,
    duration: Histogram,
}

/// The host a request is for: the URI's authority (HTTP/2, absolute-form) or `Host`.
fn request_host<B>(req: &Request<B>) -> Option<&str> {
    req.uri().authority().map(|a| a.as_str()).or_else(|| {
        req.headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
    })
}

/// Answers one request. Not an `async fn`: the answer's future is built in place rather
/// than copied into another one's state, since it is large and built once per request.
pub fn handle(
    req: Request<Incoming>,
    client: Arc<Client>,
) -> impl Future<Output = Result<Response<Body>, Infallible>> {
    let span = info_span!(
        "request",
        method = %req.method(),
        path = req.uri().path(),
        route = tracing::field::Empty,
        status = tracing::field::Empty,
    );
    dispatch(req, client).map(Ok).instrument(span)
}

async fn dispatch(mut req: Request<Incoming>, client: Arc<Client>) -> Response<Body> {
    let started = Instant::now();
    if let Err(e) = normalize_path(&mut req) {
        let res = error_response(StatusCode::BAD_REQUEST, &e.to_string());
        record(&client, "", &res, started);
        return res;
    }
    let snapshot = client.shared.snapshot.load_full();
    let host = request_host(&req).map(str::to_owned);
    let listener = snapshot.listeners.get(&*client.listener);
    if let Some(l) = listener.filter(|l| l.config.kind == ListenerKind::NodeApi) {
        // Boxed, as are the other rare paths below: their futures are large, and inline
        // they would make every proxied request's future as large, copied at each move.
        let res = Box::pin(node_api::serve(
            req,
            &client,
            &snapshot,
            &l.config.allowed_clients,
        ))
        .await;
        record(&client, node_api::ROUTE, &res, started);
        return res;
    }
    if listener.is_some_and(|l| l.config.kind == ListenerKind::KubeApi) {
        let res = Box::pin(kube_api::serve(req, &client, &snapshot)).await;
        record(&client, kube_api::ROUTE, &res, started);
        return res;
    }
    let route = listener
        .and_then(|l| {
            l.router
                .lookup(host.as_deref().unwrap_or(""), req.uri().path())
        })
        .cloned();
    let trusted = listener.is_some_and(|l| l.config.trusts(client.peer.ip()));

    let Some(route) = route else {
        let reason = format!(
            "no route for host `{}` and path `{}`",
            host.as_deref().unwrap_or(""),
            req.uri().path()
        );
        let res = error_response(StatusCode::NOT_FOUND, &reason);
        record(&client, "", &res, started);
        return res;
    };
    tracing::Span::current().record("route", route.name.as_str());

    let res = match &route.action {
        Action::Direct(d) => {
            let mut res = Response::new(full(d.body.clone()));
            *res.status_mut() = d.status;
            *res.headers_mut() = d.headers.clone();
            res
        }
        Action::Proxy(upstream) => {
            let exchange = Exchange {
                route: &route.name,
                client: ClientSide {
                    peer: &client.forwarded_peer,
                    tls: client.tls,
                    host: host.as_deref(),
                    trusted,
                },
                metrics: &client.shared.metrics,
            };
            let upgrade =
                headers::is_upgrade(req.headers()) && req.version() <= http::Version::HTTP_11;
            let result = if upgrade {
                let job = splice_job(&client, &route);
                Box::pin(upgrade::forward(req, upstream, &exchange, job)).await
            } else {
                proxy::forward(req, upstream, &exchange).await
            };
            result.unwrap_or_else(|e| e.response())
        }
    };
    record(&client, &route.name, &res, started);
    res
}

/// Routes and forwards the normalised path (see `routing::path`); the query is untouched.
fn normalize_path<B>(req: &mut Request<B>) -> Result<(), PathError> {
    let normal = match path::normalize(req.uri().path())? {
        std::borrow::Cow::Borrowed(_) => return Ok(()),
        std::borrow::Cow::Owned(p) => p,
    };
    let path_and_query = match req.uri().query() {
        Some(q) => format!("{normal}?{q}"),
        None => normal,
    };
    let mut parts = req.uri().clone().into_parts();
    parts.path_and_query = Some(
        path_and_query
            .parse()
            .map_err(|_| PathError::BadEncoding(path_and_query.clone()))?,
    );
    *req.uri_mut() =
        http::Uri::from_parts(parts).map_err(|_| PathError::BadEncoding(path_and_query))?;
    Ok(())
}

fn splice_job(client: &Client, route: &Route) -> SpliceJob {
    let (up, down) = route.connection_limiters();
    SpliceJob {
        up,
        down,
        tasks: client.shared.tasks.clone(),
        kill: client.shared.kill.clone(),
        metrics: client.shared.metrics.clone(),
        route: route.name.clone(),
        tenant: route
            .tenant
            .as_ref()
            .map(|t| t.name.clone())
            .unwrap_or_default(),
    }
}

fn record(client: &Client, route: &str, res: &Response<Body>, started: Instant) {
    let status = res.status().as_u16();
    tracing::Span::current().record("status", status);
    let elapsed = started.elapsed().as_secs_f64();
    // A poisoned cache only costs the lookup; the metrics stay right.
    let mut last = client.last_series.lock().unwrap_or_else(|e| e.into_inner());
    match last.as_ref() {
        Some(s) if s.status == status && s.route == route => {
            s.requests.inc();
            s.duration.observe(elapsed);
        }
        _ => {
            let metrics = &client.shared.metrics;
            let series = Series {
                route: route.to_string(),
                status,
                requests: metrics
                    .requests
                    .get_or_create(&RequestLabels {
                        listener: client.listener.to_string(),
                        route: route.to_string(),
                        status,
                    })
                    .clone(),
                duration: metrics
                    .request_duration
                    .get_or_create(&RouteLabels {
                        route: route.to_string(),
                    })
                    .clone(),
            };
            series.requests.inc();
            series.duration.observe(elapsed);
            *last = Some(series);
        }
    }
}
