//! The routes front: find the route for the request's host and path, and answer from the
//! route itself (`direct`, with a Gateway API redirect's `Location`), from its upstream
//! (`proxy::forward`), or, when the request switches protocols, through the hijack path
//! (`proxy::upgrade`). A Gateway API candidate's filters apply to the request before
//! (`Choice::apply`) and to the answer after; its request timeout bounds the exchange.
//! On a Gateway's HTTPS port, a request for a host another certificate serves than the
//! one its connection asked for by SNI is misdirected: 421, before any routing.

use std::time::Duration;

use http::{Request, Response, StatusCode, header};
use hyper::body::Incoming;
use tokio::time::Instant;

use super::access;
use super::client::Client;
use crate::proxy::headers::{self, ClientSide};
use crate::proxy::upgrade::{self, SpliceJob, UpgradeLog};
use crate::proxy::{self, Body, Exchange, error_response, full, own_answer};
use crate::snapshot::choice::Applied;
use crate::snapshot::{Action, ListenerState, Route};

/// The host a request is for: the URI's authority (HTTP/2, absolute-form) or `Host`.
fn request_host<B>(req: &Request<B>) -> Option<&str> {
    req.uri().authority().map(|a| a.as_str()).or_else(|| {
        req.headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
    })
}

/// Answers one request on a routes listener (`listener` is `None` once a reload removed
/// it: nothing is routed then) and counts it under its route.
pub async fn serve(
    mut req: Request<Incoming>,
    client: &Client,
    listener: Option<&ListenerState>,
    started: Instant,
) -> Response<Body> {
    let host = request_host(&req).map(str::to_owned);
    let sni = client.handshake.as_ref().and_then(|h| h.sni.as_deref());
    if let (Some(l), Some(sni), Some(h)) = (listener, sni, host.as_deref())
        && l.misdirected(Some(sni), h)
    {
        let reason = format!(
            "host `{h}` is served with another certificate than the one for `{sni}` this connection asked for: connect with `{h}` as the server name"
        );
        let unread = proxy::body::unread(&req);
        let res = own_answer(
            error_response(StatusCode::MISDIRECTED_REQUEST, &reason),
            unread,
        );
        client.record("", &res, started);
        return res;
    }
    let found = listener
        .and_then(|l| {
            l.router
                .lookup(host.as_deref().unwrap_or(""), req.uri().path())
        })
        .cloned();
    let trusted = listener.is_some_and(|l| l.config.trusts(client.peer.ip()));
    // leafgate's own answers leave the body unread: they end the connection then (see
    // `proxy::body::unread`; `proxy::forward` decides for its own failures).
    let unread = proxy::body::unread(&req);

    // A Gateway API entry chooses among its candidates by the request's headers, query
    // and method; the chosen one's filters apply to what is sent and answered.
    let picked = found.as_ref().and_then(|f| f.pick(&req));
    let Some((route, choice)) = picked else {
        let reason = format!(
            "no route for host `{}` and path `{}`",
            host.as_deref().unwrap_or(""),
            req.uri().path()
        );
        let res = own_answer(error_response(StatusCode::NOT_FOUND, &reason), unread);
        client.record("", &res, started);
        return res;
    };
    tracing::Span::current().record("route", route.name.as_str());
    let applied = match choice.map(|c| c.apply(&mut req, host.as_deref())) {
        Some(Err(why)) => {
            let res = own_answer(error_response(StatusCode::BAD_REQUEST, &why), unread);
            client.record(&route.name, &res, started);
            return res;
        }
        Some(Ok(applied)) => applied,
        None => Applied::default(),
    };

    let mut res = match &route.action {
        Action::Direct(d) => {
            let mut res = Response::new(full(d.body.clone()));
            *res.status_mut() = d.status;
            *res.headers_mut() = d.headers.clone();
            if let Some(location) = applied.location {
                res.headers_mut().insert(header::LOCATION, location);
            }
            own_answer(res, unread)
        }
        Action::Proxy(upstream) => {
            let exchange = Exchange {
                route: &route.name,
                client: ClientSide {
                    peer: &client.forwarded_peer,
                    tls: client.tls,
                    host: applied.host.or(host.as_deref()),
                    trusted,
                },
                conn: client.conn(),
                metrics: &client.shared.metrics,
            };
            let upgrade =
                headers::is_upgrade(req.headers()) && req.version() <= http::Version::HTTP_11;
            let forwarded = async {
                if upgrade {
                    let job = splice_job(client, &route).logging(upgrade_log(client, &req));
                    Box::pin(upgrade::forward(req, upstream, &exchange, job))
                        .await
                        .unwrap_or_else(|e| own_answer(e.response(), unread))
                } else {
                    let attempt = choice.and_then(|c| c.backend_timeout);
                    proxy::forward(req, upstream, &exchange, attempt).await
                }
            };
            match choice.and_then(|c| c.request_timeout) {
                Some(within) => within_request_timeout(forwarded, started, within).await,
                None => forwarded.await,
            }
        }
        // A backend route is never a choice itself (`snapshot::gateway`).
        Action::Gateway(_) => own_answer(
            error_response(StatusCode::INTERNAL_SERVER_ERROR, "a choice of choices"),
            unread,
        ),
    };
    if let Some(c) = choice {
        c.response_headers.apply(res.headers_mut());
    }
    access::routed(client, &mut res, &route);
    client.record(&route.name, &res, started);
    res
}

/// The answer of `forwarded`, or a 504 once the route's request timeout `within` has
/// passed since the request arrived (`started`). The request's body may be half read
/// then: the answer ends the connection.
async fn within_request_timeout(
    forwarded: impl Future<Output = Response<Body>>,
    started: Instant,
    within: Duration,
) -> Response<Body> {
    match tokio::time::timeout_at(started + within, forwarded).await {
        Ok(res) => res,
        Err(_) => {
            let reason = format!("the route's request timeout of {within:?} passed");
            own_answer(error_response(StatusCode::GATEWAY_TIMEOUT, &reason), true)
        }
    }
}

/// Where an upgraded connection's line goes when it ends, when the listener writes a log.
fn upgrade_log<B>(client: &Client, req: &Request<B>) -> Option<UpgradeLog> {
    let log = client.shared.access_log.of(&client.listener)?;
    let snapshot = client.shared.snapshot.load();
    let request_id = snapshot
        .config
        .request_id
        .as_ref()
        .and_then(|c| req.headers().get(&c.header))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    Some(UpgradeLog { log, request_id })
}

fn splice_job(client: &Client, route: &Route) -> SpliceJob {
    let shared = &client.shared;
    SpliceJob::new(
        &shared.tasks,
        &shared.kill,
        &shared.metrics,
        &route.name,
        route.tenant.as_ref().map(|t| t.name.as_str()),
        route.connection_limiters(),
    )
}
