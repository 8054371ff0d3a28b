//! Every way a proxied request can fail, and what the client reads for each.
//!
//! Failures climb in three steps: [`DialError`] (no connection could be had), inside
//! [`SendError`] (no response head came back, whatever the transport), classified by
//! [`classify`] into [`ProxyError`], which alone decides the status code, the metric's
//! `kind` and the one-line reason the client reads ([`ProxyError::response`]). Upgrades
//! build their `ProxyError` directly, as they dial and send themselves.
//!
//! It depends on no other proxy file but `body`, so the files that dial and send can all
//! name these errors without naming each other.

use std::error::Error as StdError;
use std::time::Duration;

use http::{Response, StatusCode, header};

use crate::errors::{self, Causes};

use super::body::{Body, full};

/// Why no connection to a backend could be had (HTTP/2, or a fresh plain HTTP/1.1 one).
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("no connection within {0:?}")]
    Timeout(Duration),
    #[error("the backend did not agree to HTTP/2 by ALPN (it offered {0})")]
    NoH2(String),
    #[error("HTTP/2 handshake: {0}")]
    Handshake(#[from] hyper::Error),
}

/// Why a request got no response head from a backend.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error(transparent)]
    Pooled(#[from] hyper_util::client::legacy::Error),
    #[error(transparent)]
    Dial(#[from] DialError),
    #[error(transparent)]
    Exchange(#[from] hyper::Error),
    /// An exchange on a raw pooled connection (`raw`) failed: why.
    #[error("{0}")]
    Raw(String),
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

/// On leafgate's own error answer: its reason, for the access log's `refusal`.
#[derive(Clone)]
pub struct Refused(pub String);

/// A plain-text error answer from leafgate itself.
pub fn error_response(status: StatusCode, reason: &str) -> Response<Body> {
    let text = error_text(status, reason);
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header(header::CACHE_CONTROL, "no-store")
        .extension(Refused(reason.to_string()))
        .body(full(text))
        .expect("static parts make a valid response")
}

/// The body of leafgate's own error answer: the status and a one-line reason.
pub fn error_text(status: StatusCode, reason: &str) -> String {
    format!(
        "{} {}: {reason}\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    )
}

/// Sorts a failed exchange with `backend` into what happened, for the status and the
/// reason; `connect` is the connect timeout a pooled client's timeout is reported as.
pub fn classify(err: SendError, backend: &str, connect: Duration) -> ProxyError {
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
        SendError::Raw(reason) => ProxyError::Reset { backend, reason },
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
