//! One request's first steps, whichever front answers it: the span, the path normalised
//! (see `routing::path`), what RFC 9112 refuses that hyper hands on refused
//! (`proxy::headers::refused`: `Host` lines, transfer codings, a length past the
//! largest body), the snapshot loaded once (everything downstream uses that copy),
//! the front the connection was accepted for, and the request counted by route and status
//! and timed to its response head.
//!
//! The three fronts are siblings: `routes` (host and path routes), `node_api` (the kubelet
//! API of virtual nodes) and `kube_api` (one Kubernetes API endpoint for tenants).

use std::convert::Infallible;
use std::sync::Arc;

use futures_util::FutureExt;
use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use tokio::time::Instant;
use tracing::{Instrument, debug_span};

use super::access::Pending;
use super::client::{Client, Front};
use super::ids;
use super::{kube_api, node_api, routes};
use crate::proxy::body::ReadToEnd;
use crate::proxy::headers;
use crate::proxy::{Body, InBody, Inbound, body, boxed, error_response, own_answer};
use crate::routing::path::{self, PathError};
use crate::snapshot::{ListenerState, Snapshot};

/// Answers one request. Not an `async fn`: the answer's future is built in place rather
/// than copied into another one's state, since it is large and built once per request.
///
/// The request's span (method, path, then route and status) is a debug one, as the fast
/// path makes none: built and entered at every poll, an info span was the largest single
/// cost of a node-API exec's setup, on the path between the client's request and the
/// leaf's. The few warnings a request can log name what they are about themselves.
pub fn handle(
    req: Request<Incoming>,
    client: Arc<Client>,
) -> impl Future<Output = Result<Response<Body>, Infallible>> {
    let span = debug_span!(
        "request",
        method = %req.method(),
        path = req.uri().path(),
        route = tracing::field::Empty,
        status = tracing::field::Empty,
    );
    // Boxed: the answer's state is kilobytes (10 KiB in a dev build), and hyper moves the
    // future it is handed (into each HTTP/2 stream's task as it spawns it): what moves is
    // then a pointer, for one allocation.
    Box::pin(dispatch(req, client)).map(Ok).instrument(span)
}

pin_project_lite::pin_project! {
    /// A request's answer: one made already (`listener::upgrades` answered the request
    /// before hyper read it), or the one its front is making.
    #[project = AnswerProj]
    pub enum Answer<F> {
        Ready { res: Option<Response<Body>> },
        Making { #[pin] making: F },
    }
}

impl<F> Answer<F> {
    /// `ready` when there is one, else what `make` starts.
    pub fn new(ready: Option<Response<Body>>, make: impl FnOnce() -> F) -> Self {
        match ready {
            Some(res) => Answer::Ready { res: Some(res) },
            None => Answer::Making { making: make() },
        }
    }
}

impl<F> Future for Answer<F>
where
    F: Future<Output = Result<Response<Body>, Infallible>>,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match self.project() {
            AnswerProj::Ready { res } => {
                std::task::Poll::Ready(Ok(res.take().expect("an answer is polled to its end once")))
            }
            AnswerProj::Making { making } => making.poll(cx),
        }
    }
}

/// The request's answer, noted on its connection (`Client::answering`) before hyper
/// writes it.
async fn dispatch(mut req: Request<Incoming>, client: Arc<Client>) -> Response<Body> {
    let id = ids::assign(&client, &mut req);
    let trace = ids::trace(&client, &mut req);
    let line = Pending::of(
        &client,
        &mut req,
        id.as_ref().map(|i| &i.value),
        trace,
        "hyper",
    );
    let mut res = answer(req, &client).await;
    if let Some(id) = id {
        id.answer(&mut res);
    }
    client.answering(&res);
    if let Some(line) = line {
        line.write(&client, &res);
    }
    res
}

async fn answer(mut req: Request<Incoming>, client: &Arc<Client>) -> Response<Body> {
    let started = Instant::now();
    if let Err(e) = normalize_path(&mut req) {
        let res = own_answer(
            error_response(StatusCode::BAD_REQUEST, &e.to_string()),
            body::unread(&req),
        );
        client.record("", &res, started);
        return res;
    }
    // What RFC 9112 refuses and hyper hands on: refused here, so that the fast path (which
    // hands such requests to hyper) and hyper's path answer alike. The connection ends
    // with the answer, as nginx ends it after a 400, 413 or 501.
    let length = http_body::Body::size_hint(req.body()).exact();
    if let Some(refusal) = headers::refused(req.headers(), req.version(), length) {
        let res = own_answer(
            error_response(refusal.status(), refusal.reason()),
            req.version() <= http::Version::HTTP_11,
        );
        client.record("", &res, started);
        return res;
    }
    let snapshot = client.shared.snapshot.load_full();
    let listener = snapshot.listeners.get(&*client.listener);
    // The front was chosen at accept. A reload may since have given the listener another
    // kind on the same socket (or removed it): its connections then follow the config that
    // is current, never the old front with the new listener's settings (a node-api front
    // must not run with an HTTP listener's empty `allowed_clients`).
    let front = match listener {
        Some(l) if Front::of(l.config.kind) == client.front => client.front,
        Some(l) => Front::of(l.config.kind),
        None => Front::Routes,
    };
    match (front, listener) {
        (Front::NodeApi, Some(l)) => {
            // Boxed, as are the other rare paths: their futures are large, and inline they
            // would make every proxied request's future as large, copied at each move.
            Box::pin(node_api(req, client, &snapshot, l, started)).await
        }
        (Front::KubeApi, Some(_)) => {
            Box::pin(kube_api(req.map(boxed), client, &snapshot, started)).await
        }
        _ => routes::serve(req, client, listener, started).await,
    }
}

/// A node-API request, counted and timed: its path is normalised already.
/// `listener::upgrades` calls this for the requests whose heads it read itself.
pub async fn node_api<B: Inbound>(
    req: Request<B>,
    client: &Arc<Client>,
    snapshot: &Arc<Snapshot>,
    listener: &ListenerState,
    started: Instant,
) -> Response<Body> {
    let (req, read) = body::tracked(req);
    let res = node_api::serve(req, client, snapshot, &listener.config.allowed_clients).await;
    let res = api_answer(res, &read);
    client.record(node_api::ROUTE, &res, started);
    res
}

/// A kube-api request, counted and timed: its path is normalised already. The front takes
/// one body type (`proxy::InBody`, made by `proxy::boxed`) from hyper and from
/// `listener::upgrades` alike: a boxed body costs an allocation, where a front generic over
/// two would be compiled twice.
pub async fn kube_api(
    req: Request<InBody>,
    client: &Arc<Client>,
    snapshot: &Arc<Snapshot>,
    started: Instant,
) -> Response<Body> {
    let (req, read) = if body::unread(&req) {
        let (req, read) = body::tracked(req);
        (req.map(boxed), read)
    } else {
        (req, ReadToEnd::none())
    };
    let res = kube_api::serve(req, client, snapshot).await;
    let res = api_answer(res, &read);
    client.record(kube_api::ROUTE, &res, started);
    res
}

/// An API front's answer, given before its request's body was read to the end (refused,
/// or the leaf answered early): it ends the connection, as on the routes front
/// (`proxy::own_answer`). A protocol switch is never one.
fn api_answer(res: Response<Body>, read: &ReadToEnd) -> Response<Body> {
    let unread = read.unread() && res.status() != StatusCode::SWITCHING_PROTOCOLS;
    own_answer(res, unread)
}

/// Routes and forwards the normalised path (see `routing::path`); the query is untouched.
pub fn normalize_path<B>(req: &mut Request<B>) -> Result<(), PathError> {
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
