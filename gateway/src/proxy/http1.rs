//! HTTP/1.1 to plain-TCP backends: hyper's `client::conn::http1` over a pool of idle
//! connections per serving thread and backend, with no pooled client in between.
//!
//! hyper-util's pooled client costs, per request, a checkout future racing a lazily built
//! connect future (a connector clone, a pool key of scheme and authority hashed under a
//! lock) and a spawned task to give the connection back. Here a request pops an idle
//! connection from its thread's list (an uncontended lock), sends, and the response body
//! puts the connection back when it has been read to its end. A body dropped before its
//! end closes the connection, as its unread rest would be read as the next response.
//!
//! A connection the backend closed while idle is noticed before use (`ready` fails) or, in
//! a race, by the send itself, which hands the unsent request back to be tried on another
//! connection, as the pooled client did. The idle connections sit on `idle`'s shelf, which
//! closes those past the route's idle timeout. TLS backends keep the pooled client
//! (`upstream`), which owns their handshake and ALPN.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, header};
use http_body::{Body as HttpBody, Frame, SizeHint};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tracing::debug;

use crate::config::Backend;

use super::body::Body;
use super::dialled::Dialled;
use super::error::{DialError, SendError};
use super::fast::pool::connect;
use super::idle::{Idles, Reusable};

/// Idle HTTP/1.1 connections to one upstream's plain backends, per serving thread.
pub struct Http1Pool {
    idles: Arc<Idles<SendRequest<Body>>>,
    connect: Duration,
}

impl Reusable for SendRequest<Body> {
    fn is_closed(&self) -> bool {
        SendRequest::is_closed(self)
    }
}

impl Http1Pool {
    pub fn new(backends: usize, connect: Duration, idle: Duration) -> Self {
        Http1Pool {
            idles: Idles::new(backends, idle),
            connect,
        }
    }

    /// Sends `req` to backend number `index` over an idle connection of this thread, or a
    /// new one. The URI is made origin-form, and `Host` is the backend's address when the
    /// client sent none.
    pub async fn send(
        &self,
        index: usize,
        backend: &Backend,
        mut req: Request<Body>,
    ) -> Result<Response<PooledBody>, SendError> {
        let slot = self.idles.slot_of(index);
        origin_form(&mut req);
        if !req.headers().contains_key(header::HOST) {
            if let Ok(host) = http::HeaderValue::from_str(backend.authority.as_str()) {
                req.headers_mut().insert(header::HOST, host);
            }
        }
        while let Some(mut sender) = self.idles.checkout(slot) {
            if sender.ready().await.is_err() {
                continue;
            }
            match sender.try_send_request(req).await {
                Ok(res) => return Ok(self.pooled(res, sender, slot)),
                Err(mut e) => match e.take_message() {
                    // Never written: the connection closed under us; try another.
                    Some(unsent) => {
                        debug!(error = %e.error(), "pooled connection closed; trying another");
                        req = unsent;
                    }
                    None => return Err(SendError::Exchange(e.into_error())),
                },
            }
        }
        // Boxed: dialling is rare, and its future inline would grow every request's.
        let dialling = std::time::Instant::now();
        let mut sender = Box::pin(self.dial(backend)).await?;
        let took = dialling.elapsed();
        let mut res = sender.send_request(req).await?;
        // The answer that waited for this connection says how long it took.
        res.extensions_mut().insert(Dialled::new(took));
        Ok(self.pooled(res, sender, slot))
    }

    async fn dial(&self, backend: &Backend) -> Result<SendRequest<Body>, DialError> {
        let tcp = connect(backend, self.connect).await?;
        let (sender, conn) = http1::handshake(TokioIo::new(tcp)).await?;
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                debug!(error = %e, "upstream HTTP/1.1 connection ended with an error");
            }
        });
        Ok(sender)
    }

    fn pooled(
        &self,
        res: Response<Incoming>,
        sender: SendRequest<Body>,
        slot: usize,
    ) -> Response<PooledBody> {
        res.map(|inner| PooledBody {
            inner,
            ended: false,
            back: Some(GiveBack {
                sender,
                idles: self.idles.clone(),
                slot,
            }),
        })
    }
}

/// Makes an absolute request URI origin-form (path and query), as a request to an origin
/// server is written.
fn origin_form(req: &mut Request<Body>) {
    if req.uri().scheme().is_none() && req.uri().authority().is_none() {
        return;
    }
    let path = req
        .uri()
        .path_and_query()
        .cloned()
        .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/"));
    *req.uri_mut() = http::Uri::from(path);
}

/// A connection waiting for its response body's end to go back to its pool.
struct GiveBack {
    sender: SendRequest<Body>,
    idles: Arc<Idles<SendRequest<Body>>>,
    slot: usize,
}

/// A backend's response body; once read to its end, its connection goes back to the pool.
pub struct PooledBody {
    inner: Incoming,
    ended: bool,
    back: Option<GiveBack>,
}

impl HttpBody for PooledBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let frame = std::task::ready!(Pin::new(&mut self.inner).poll_frame(cx));
        match &frame {
            None => self.ended = true,
            // A failed body leaves the connection in an unknown state: never reuse it.
            Some(Err(_)) => self.back = None,
            Some(Ok(_)) => {}
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for PooledBody {
    fn drop(&mut self) {
        let Some(back) = self.back.take() else {
            return;
        };
        if !(self.ended || self.inner.is_end_stream()) || back.sender.is_closed() {
            return;
        }
        back.idles.give_back(back.slot, back.sender);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use http_body_util::BodyExt;

    use super::*;
    use crate::proxy::stub_backend::{self, Stub};

    /// A backend answering every request with `body` (`stub_backend`; with `close_after`
    /// it closes each connection after its first answer without saying so).
    async fn backend(body: &'static str, close_after: bool) -> (Backend, Stub) {
        let wire = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        let stub = stub_backend::start(wire.into_bytes(), close_after).await;
        let backend = Backend {
            tls: false,
            authority: stub.addr.to_string().parse().unwrap(),
        };
        (backend, stub)
    }

    fn get() -> Request<Body> {
        let mut req = Request::new(crate::proxy::body::full(Bytes::new()));
        *req.uri_mut() = "http://ignored.example/path?q=1".parse().unwrap();
        req
    }

    fn pool() -> Http1Pool {
        Http1Pool::new(1, Duration::from_secs(2), Duration::from_secs(30))
    }

    #[tokio::test]
    async fn a_connection_read_to_its_end_is_used_again() {
        let (backend, stub) = backend("hello", false).await;
        let pool = pool();
        for _ in 0..3 {
            let res = pool.send(0, &backend, get()).await.unwrap();
            let body = res.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, "hello");
        }
        assert_eq!(stub.accepted(), 1);
    }

    #[tokio::test]
    async fn a_body_dropped_before_its_end_closes_its_connection() {
        let (backend, stub) = backend("a body nobody reads", false).await;
        let pool = pool();
        let res = pool.send(0, &backend, get()).await.unwrap();
        drop(res);
        let res = pool.send(0, &backend, get()).await.unwrap();
        let body = res.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body, "a body nobody reads");
        assert_eq!(stub.accepted(), 2);
    }

    #[tokio::test]
    async fn a_connection_the_backend_closed_is_replaced_without_losing_the_request() {
        let (backend, stub) = backend("once", true).await;
        let pool = pool();
        for i in 1..=3 {
            let res = pool.send(0, &backend, get()).await.unwrap();
            let body = res.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, "once", "request {i}");
        }
        assert_eq!(stub.accepted(), 3);
    }

    #[tokio::test]
    async fn an_idle_connection_past_the_timeout_is_not_used() {
        let (backend, stub) = backend("hello", false).await;
        let pool = Http1Pool::new(1, Duration::from_secs(2), Duration::from_millis(1));
        for _ in 0..2 {
            let res = pool.send(0, &backend, get()).await.unwrap();
            res.into_body().collect().await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(stub.accepted(), 2);
    }

    #[tokio::test]
    async fn an_idle_connection_is_closed_by_the_sweep_without_a_request() {
        let (backend, stub) = backend("hello", false).await;
        let pool = Http1Pool::new(1, Duration::from_secs(2), Duration::from_millis(100));
        let res = pool.send(0, &backend, get()).await.unwrap();
        res.into_body().collect().await.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(stub.closed(), 0, "still idle within its timeout");
        let deadline = Instant::now() + Duration::from_secs(5);
        while stub.closed() == 0 {
            assert!(
                Instant::now() < deadline,
                "the idle connection was never closed"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(stub.accepted(), 1);
    }
}
