//! Forwards a routed request to its upstream and streams the answer back.
//!
//! Phases of a proxied request, in order:
//! 1. `prepare`: drop hop-by-hop headers, add `X-Forwarded-*` and `Via`, make the client's
//!    host the one `Host` (the same preparation as upgrades and pod calls); `Upstream::send`
//!    aims the URI at the chosen backend.
//! 2. `send`: pick a backend (round-robin, skipping ones that just refused), send over the
//!    pooled client, wait for the response head within `response_header`. A refused
//!    connection marks the backend failed and, when the request has no body to replay,
//!    tries the next backend.
//! 3. `respond`: `prepare_response` (as for a declined upgrade's answer and a leaf's)
//!    makes the framing the client reads the one hyper's client read the body by (one
//!    length line, none beside chunks), strips hop-by-hop headers, adds `Via` and answers
//!    under leafgate's own HTTP/1.1; the body streams back under the idle timeout. Bodies
//!    are never buffered whole in either direction.
//!
//! Requests that switch protocols take another path (`upgrade`). Every failure is a
//! [`ProxyError`], which alone decides the status code and the reason the client reads.
//!
//! Files, each importing only the ones listed before it: `body` (the body type and its
//! wrappers), `clock` (coarse clocks), `error` (every failure and its status), `headers`
//! (pure header rules), `idle` (the shelf of idle upstream connections), `prepare` (the
//! one preparation of a request's head, and of its answer's), `exchange` (a request's
//! surroundings), `fast/` (the HTTP/1.1 fast path's codec and raw pool), `h2` and `http1`
//! (connections to backends), `upstream` (a route's backends), `splice` (the byte pump),
//! `upgrade` (the hijack path). This file uses them and none of them uses it.

pub mod body;
pub mod clock;
pub mod dialled;
pub mod error;
pub mod exchange;
pub mod fast;
pub mod h2;
pub mod headers;
pub mod http1;
pub mod idle;
pub mod prepare;
pub mod raw;
pub mod request_id;
pub mod splice;
#[cfg(test)]
pub mod stub_backend;
pub mod trace;
pub mod upgrade;
pub mod upstream;

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Either};
use hyper::body::Incoming;

pub use self::body::{Body, BoxError, InBody, Inbound, boxed, full};
pub use self::error::{ProxyError, error_response};
pub use self::exchange::Exchange;
pub use self::prepare::{Hops, prepare, prepare_response};

use self::body::{BodySent, IdleTimeout, SignalSent};
use self::error::{SendError, classify};
use self::exchange::{NoteUpstream, Upstreamed};
use self::http1::PooledBody;
use self::raw::RawBody;
use self::upstream::{BackendState, Upstream};

/// A backend's response body: from our HTTP/1.1 pool, a raw pooled socket (`raw`), or
/// hyper (HTTP/2, TLS).
type UpstreamBody = Either<Either<PooledBody, RawBody>, Incoming>;

/// An answer's body as `Upstream::send` gives it, as an [`UpstreamBody`].
fn hyper_side(body: Either<PooledBody, Incoming>) -> UpstreamBody {
    match body {
        Either::Left(pooled) => Either::Left(Either::Left(pooled)),
        Either::Right(incoming) => Either::Right(incoming),
    }
}

/// leafgate's own answer to a request: with the request's body unread (`body::unread`), it
/// says `Connection: close`, and hyper closes the connection once it is written.
pub fn own_answer(mut res: Response<Body>, body_unread: bool) -> Response<Body> {
    if body_unread {
        res.headers_mut().insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("close"),
        );
    }
    res
}

/// Sends an ordinary (non-upgrade) request to `upstream` and returns its response, or the
/// failure's answer. That answer ends the connection when the client's body was not read
/// to its end (see `body::unread`). `bound` bounds each attempt, from its start to the
/// response head, in place of the upstream's `response_header` timing (a Gateway API
/// rule's `timeouts.backendRequest`).
pub async fn forward(
    req: Request<Incoming>,
    upstream: &Upstream,
    exchange: &Exchange<'_>,
    bound: Option<Duration>,
) -> Response<Body> {
    let (mut parts, body) = req.into_parts();
    // The access log writes this request's line: its backend's answer is noted.
    let began = (parts.extensions.get::<NoteUpstream>()).map(|_| std::time::Instant::now());
    let replayable = http_body::Body::is_end_stream(&body);
    // An HTTP/2 stream with no body to send goes to a plain backend from its own task.
    let raw = upstream
        .raw()
        .filter(|_| parts.version == http::Version::HTTP_2 && raw::takes(&parts, replayable));
    prepare(&mut parts, Hops::DropAll, Some(&exchange.client));
    let timeouts = upstream.timeouts;
    let mut way = match raw {
        Some(raw) => Way::Raw(raw),
        None => {
            let (body, sent) = SignalSent::new(IdleTimeout::new(body, timeouts.idle));
            Way::Hyper {
                body: Some(body.boxed_unsync()),
                sent,
            }
        }
    };

    let attempts = if replayable { upstream.len() } else { 1 };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let backend = upstream.pick();
        let head = match &mut way {
            Way::Raw(raw) => {
                let within = bound.unwrap_or(timeouts.connect + timeouts.response_header);
                match tokio::time::timeout(within, raw::send(raw, backend, &parts)).await {
                    Ok(sent) => Ok(sent.map(|res| res.map(|b| Either::Left(Either::Right(b))))),
                    Err(_) => Err(within),
                }
            }
            Way::Hyper { body, sent } => {
                let mut req = Request::new(body.take().unwrap_or_else(empty));
                *req.method_mut() = parts.method.clone();
                // `Upstream::send` aims it at the backend; only the path and query are used.
                *req.uri_mut() = parts.uri.clone();
                // Only a request that may be tried again needs its headers kept for the next
                // try.
                *req.headers_mut() = if attempt < attempts {
                    parts.headers.clone()
                } else {
                    std::mem::take(&mut parts.headers)
                };
                let host = exchange.client.host;
                let head = match bound {
                    Some(bound) => {
                        let head = upstream.send(backend, req, host);
                        tokio::time::timeout(bound, head).await.map_err(|_| bound)
                    }
                    None => exchange_head(upstream, backend, req, host, sent).await,
                };
                head.map(|sent| sent.map(|res| res.map(hyper_side)))
            }
        };
        let err = match head {
            // An answer that came before the client's body was all read (a backend's
            // early 413) ends the connection, as on the fast path: the rest of the body
            // is not read for another request.
            Ok(Ok(res)) => {
                let status = Some(res.status().as_u16());
                // Asked only for a line: the first to ask takes a new connection's time.
                let connect = began
                    .and_then(|_| res.extensions().get::<dialled::Dialled>())
                    .and_then(dialled::Dialled::first);
                let res = respond(res, timeouts.idle);
                let res = noted(res, began, backend, status, connect);
                return own_answer(res, way.body_unsent());
            }
            // The client's body, not the backend, failed: its framing is broken (RFC 9112
            // §7.1), and the backend is not marked failed for it.
            Ok(Err(e)) if client_body_malformed(&e) => {
                let reason = "a malformed chunked request body";
                return own_answer(error_response(http::StatusCode::BAD_REQUEST, reason), true);
            }
            Ok(Err(e)) => classify(e, &backend.label, timeouts.connect),
            Err(after) => ProxyError::ResponseTimeout {
                backend: backend.label.clone(),
                after,
            },
        };
        if upstream.failed(backend, &err, exchange, attempt < attempts) {
            continue;
        }
        let res = noted(err.response(), began, backend, None, None);
        return own_answer(res, way.body_unsent());
    }
}

/// How a request goes to its backends: with no body, on a raw pooled socket (`raw`); else
/// through hyper's client, which sends the body and says when it has sent it whole.
enum Way<'u> {
    Raw(&'u fast::pool::RawPool),
    Hyper { body: Option<Body>, sent: BodySent },
}

impl Way<'_> {
    /// An answer made before the client's body was all read ends the connection.
    fn body_unsent(&mut self) -> bool {
        match self {
            Way::Raw(_) => false,
            Way::Hyper { sent, .. } => !sent.sent_whole(),
        }
    }
}

/// `res` with the backend that answered it (`status`; `None`: leafgate answered for it),
/// when, and how long a new connection took (`connect`), for the access log, when the
/// request asked (`began`, see `NoteUpstream`).
fn noted(
    mut res: Response<Body>,
    began: Option<std::time::Instant>,
    backend: &BackendState,
    status: Option<u16>,
    connect: Option<Duration>,
) -> Response<Body> {
    if let Some(began) = began {
        res.extensions_mut().insert(Upstreamed {
            backend: backend.label.clone(),
            status,
            first_byte: began.elapsed(),
            connect,
        });
    }
    res
}

/// Sends `req` and waits for the response head. The response-header timer starts once the
/// request body has been sent: while it is still uploading, the client's pace (bounded by
/// the body's idle timeout) decides, not the backend's. A request with no body to send
/// gets the connect time on top, as connecting is then part of waiting for the head.
/// `Err` is the timeout that passed.
async fn exchange_head(
    upstream: &Upstream,
    backend: &BackendState,
    req: Request<Body>,
    host: Option<&str>,
    sent: &mut BodySent,
) -> Result<Result<Response<Either<PooledBody, Incoming>>, SendError>, Duration> {
    let timeouts = upstream.timeouts;
    let response = upstream.send(backend, req, host);
    tokio::pin!(response);
    let deadline = if sent.pending() {
        tokio::select! {
            biased;
            res = &mut response => return Ok(res),
            () = sent.wait() => {}
        }
        timeouts.response_header
    } else {
        timeouts.connect + timeouts.response_header
    };
    tokio::time::timeout(deadline, response)
        .await
        .map_err(|_| deadline)
}

/// Whether `err` is the client's request body failing to decode (a chunk size that is not
/// hex, a chunk not ended by CRLF: hyper's decoder reports these as `InvalidData` or
/// `InvalidInput`), as the backend's connection reports it (a body stream's error).
fn client_body_malformed(err: &SendError) -> bool {
    let top: &(dyn std::error::Error + 'static) = match err {
        SendError::Exchange(e) => e,
        SendError::Pooled(e) => e,
        SendError::Dial(_) | SendError::Raw(_) => return false,
    };
    let mut in_body = false;
    for e in crate::errors::chain(top) {
        if let Some(h) = e.downcast_ref::<hyper::Error>() {
            in_body |= h.is_user();
        }
        if in_body
            && let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::InvalidData | std::io::ErrorKind::InvalidInput
            )
        {
            return true;
        }
    }
    false
}

fn empty() -> Body {
    full(Bytes::new())
}

/// Turns the backend's response into the client's head (`prepare_response`: its framing
/// as hyper's client read it, hop-by-hop headers out, `Via` in, leafgate's own HTTP/1.1),
/// body streamed under the idle timeout.
fn respond(res: Response<UpstreamBody>, idle: Duration) -> Response<Body> {
    let (mut parts, body) = res.into_parts();
    prepare_response(&mut parts);
    Response::from_parts(parts, IdleTimeout::new(body, idle).boxed_unsync())
}
