//! Forwards a routed request to its upstream and streams the answer back.
//!
//! Phases of a proxied request, in order:
//! 1. `prepare`: drop hop-by-hop headers, add `X-Forwarded-*` and `Via`, keep the client's
//!    `Host`, aim the URI at the chosen backend.
//! 2. `send`: pick a backend (round-robin, skipping ones that just refused), send over the
//!    pooled client, wait for the response head within `response_header`. A refused
//!    connection marks the backend failed and, when the request has no body to replay,
//!    tries the next backend.
//! 3. `respond`: strip hop-by-hop headers from the response, add `Via`, and stream the body
//!    back under the idle timeout. Bodies are never buffered whole in either direction.
//!
//! Requests that switch protocols take another path (`upgrade`). Every failure is a
//! [`ProxyError`], which alone decides the status code and the reason the client reads.

pub mod body;
pub mod h2;
pub mod headers;
pub mod http1;
pub mod splice;
pub mod upgrade;
pub mod upstream;

use std::error::Error as StdError;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Either, Full};
use hyper::body::Incoming;
use tracing::{debug, warn};

use crate::errors::{self, Causes};
use crate::metrics::{Metrics, UpstreamErrorLabels};

use self::body::{BodySent, IdleTimeout, SignalSent};
use self::h2::DialError;
use self::headers::ClientSide;
use self::http1::PooledBody;
use self::upstream::{BackendState, SendError, Upstream};

/// A backend's response body: from our HTTP/1.1 pool, or from hyper (HTTP/2, TLS).
type UpstreamBody = Either<PooledBody, Incoming>;

pub type BoxError = Box<dyn StdError + Send + Sync>;

/// The body type of every request and response leafgate sends.
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

/// A body with all its bytes in hand.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// Why a request could not be answered by its upstream. `status` maps each to a code.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("connecting to {backend} failed: {reason}")]
    Connect { backend: String, reason: String },
    #[error("connecting to {backend} timed out after {after:?}")]
    ConnectTimeout { backend: String, after: Duration },
    #[error("{backend} sent no response head within {after:?}")]
    ResponseTimeout { backend: String, after: Duration },
    #[error("{backend} closed or reset the connection before answering: {reason}")]
    Reset { backend: String, reason: String },
    #[error("the upgrade to {backend} failed: {reason}")]
    Upgrade { backend: String, reason: String },
}

impl ProxyError {
    pub fn status(&self) -> StatusCode {
        match self {
            ProxyError::ConnectTimeout { .. } | ProxyError::ResponseTimeout { .. } => {
                StatusCode::GATEWAY_TIMEOUT
            }
            ProxyError::Connect { .. } | ProxyError::Reset { .. } | ProxyError::Upgrade { .. } => {
                StatusCode::BAD_GATEWAY
            }
        }
    }

    /// The `kind` label of `upstream_errors`.
    pub fn kind(&self) -> &'static str {
        match self {
            ProxyError::Connect { .. } => "connect",
            ProxyError::ConnectTimeout { .. } | ProxyError::ResponseTimeout { .. } => "timeout",
            ProxyError::Reset { .. } => "reset",
            ProxyError::Upgrade { .. } => "upgrade",
        }
    }

    pub fn backend(&self) -> &str {
        match self {
            ProxyError::Connect { backend, .. }
            | ProxyError::ConnectTimeout { backend, .. }
            | ProxyError::ResponseTimeout { backend, .. }
            | ProxyError::Reset { backend, .. }
            | ProxyError::Upgrade { backend, .. } => backend,
        }
    }

    /// The answer the client gets: the status and a one-line reason.
    pub fn response(&self) -> Response<Body> {
        error_response(self.status(), &self.to_string())
    }
}

/// A plain-text error answer from leafgate itself.
pub fn error_response(status: StatusCode, reason: &str) -> Response<Body> {
    let text = format!(
        "{} {}: {reason}\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-store")
        .body(full(text))
        .expect("static parts make a valid response")
}

/// Everything about the request's surroundings the proxy needs.
pub struct Exchange<'a> {
    pub route: &'a str,
    pub client: ClientSide<'a>,
    pub metrics: &'a Metrics,
}

impl Exchange<'_> {
    fn count_error(&self, err: &ProxyError) {
        self.metrics
            .upstream_errors
            .get_or_create(&UpstreamErrorLabels {
                route: self.route.to_string(),
                backend: err.backend().to_string(),
                kind: err.kind(),
            })
            .inc();
    }
}

/// Sends an ordinary (non-upgrade) request to `upstream` and returns its response.
pub async fn forward(
    req: Request<Incoming>,
    upstream: &Upstream,
    exchange: &Exchange<'_>,
) -> Result<Response<Body>, ProxyError> {
    let (mut parts, body) = req.into_parts();
    let replayable = http_body::Body::is_end_stream(&body);
    headers::strip_hop_by_hop(&mut parts.headers, false);
    headers::add_forwarded(&mut parts.headers, &exchange.client, parts.version);
    if let Some(host) = exchange.client.host {
        // HTTP/2 clients name the host in `:authority`; upstreams read `Host`. An HTTP/1.1
        // request's `Host` already says it and is kept as it is.
        let same = parts.headers.get(header::HOST).map(|h| h.as_bytes()) == Some(host.as_bytes());
        if !same {
            if let Ok(v) = http::HeaderValue::from_str(host) {
                parts.headers.insert(header::HOST, v);
            }
        }
    }
    let timeouts = upstream.timeouts;
    let (body, mut sent) = SignalSent::new(IdleTimeout::new(body, timeouts.idle));
    let mut body = Some(body.boxed_unsync());

    let attempts = if replayable { upstream.len() } else { 1 };
    let mut attempt = 0;
    loop {
        attempt += 1;
        let backend = upstream.pick();
        let mut req = Request::new(body.take().unwrap_or_else(empty));
        *req.method_mut() = parts.method.clone();
        // `Upstream::send` aims it at the backend; only the path and query are used.
        *req.uri_mut() = parts.uri.clone();
        // Only a request that may be tried again needs its headers kept for the next try.
        *req.headers_mut() = if attempt < attempts {
            parts.headers.clone()
        } else {
            std::mem::take(&mut parts.headers)
        };
        let host = exchange.client.host;
        let err = match exchange_head(upstream, backend, req, host, &mut sent).await {
            Ok(Ok(res)) => return Ok(respond(res, timeouts.idle)),
            Ok(Err(e)) => classify(e, &backend.label, timeouts.connect),
            Err(after) => ProxyError::ResponseTimeout {
                backend: backend.label.clone(),
                after,
            },
        };
        exchange.count_error(&err);
        let refused = matches!(
            err,
            ProxyError::Connect { .. } | ProxyError::ConnectTimeout { .. }
        );
        if refused {
            upstream.eject(backend);
        }
        if refused && attempt < attempts {
            debug!(backend = %backend.label, error = %err, "backend refused; trying the next one");
            continue;
        }
        warn!(route = exchange.route, backend = %backend.label, error = %err, "upstream failed");
        return Err(err);
    }
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
) -> Result<Result<Response<UpstreamBody>, SendError>, Duration> {
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

fn empty() -> Body {
    full(Bytes::new())
}

/// Turns the backend's response into the client's: hop-by-hop headers out, `Via` in, body
/// streamed under the idle timeout.
fn respond(res: Response<UpstreamBody>, idle: Duration) -> Response<Body> {
    let (mut parts, body) = res.into_parts();
    headers::strip_hop_by_hop(&mut parts.headers, false);
    headers::add_via(&mut parts.headers, parts.version);
    Response::from_parts(parts, IdleTimeout::new(body, idle).boxed_unsync())
}

/// Sorts a failed exchange into what happened, for the status and the reason.
fn classify(err: SendError, backend: &str, connect: Duration) -> ProxyError {
    let backend = backend.to_string();
    match err {
        SendError::Pooled(e) if e.is_connect() => {
            // hyper-util reports its connect timeout as an io::Error of kind TimedOut.
            if io_kind(&e) == Some(std::io::ErrorKind::TimedOut) {
                ProxyError::ConnectTimeout {
                    backend,
                    after: connect,
                }
            } else {
                ProxyError::Connect {
                    backend,
                    reason: errors::describe(&e, Causes::Innermost),
                }
            }
        }
        SendError::Dial(DialError::Timeout(after)) => ProxyError::ConnectTimeout { backend, after },
        SendError::Dial(e) => ProxyError::Connect {
            backend,
            reason: errors::describe(&e, Causes::Innermost),
        },
        SendError::Pooled(e) => ProxyError::Reset {
            backend,
            reason: errors::describe(&e, Causes::Innermost),
        },
        SendError::Exchange(e) => ProxyError::Reset {
            backend,
            reason: errors::describe(&e, Causes::Innermost),
        },
    }
}

/// The kind of the first `io::Error` in an error chain, if there is one.
fn io_kind(err: &(dyn StdError + 'static)) -> Option<std::io::ErrorKind> {
    errors::chain(err).find_map(|e| e.downcast_ref::<std::io::Error>().map(|io| io.kind()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that wraps another, as hyper-util's connect errors wrap the io::Error.
    #[derive(Debug, thiserror::Error)]
    #[error("tcp connect error")]
    struct Wrapper(#[source] std::io::Error);

    #[test]
    fn the_io_kind_is_found_anywhere_in_the_chain() {
        let timed_out = Wrapper(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "whatever the message says",
        ));
        assert_eq!(io_kind(&timed_out), Some(std::io::ErrorKind::TimedOut));
        let refused = Wrapper(std::io::ErrorKind::ConnectionRefused.into());
        assert_eq!(
            io_kind(&refused),
            Some(std::io::ErrorKind::ConnectionRefused)
        );
        let plain = std::fmt::Error;
        assert_eq!(io_kind(&plain), None);
    }
}
