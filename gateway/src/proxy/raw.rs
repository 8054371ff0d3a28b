//! HTTP/2 clients' requests without a body to plain HTTP/1.1 backends, sent on the fast
//! path's raw pooled sockets from the stream's own task.
//!
//! hyper's HTTP/1.1 client puts a connection task and a dispatch channel between a stream
//! and its backend: each request is handed to the connection's task, encoded and written
//! there, and its answer parsed there and handed back, two task wake-ups and a channel
//! round trip per request. Here the stream's task writes the head on a pooled socket
//! itself and reads the answer's head where it lands, as an upgrade's raw exchange does
//! (`fast::switch`, whose head writer, answer reader and body this uses: the head as
//! hyper's client writes it, the answer read by the same parser and limits, its body
//! framed by RFC 9112 §6.3). The answer's body hands its socket back to the thread's pool
//! ([`RawPool`]) once it was read to its exact end; any other end closes it.
//!
//! A request with a body keeps hyper's client, which streams it while watching for an
//! early answer; so does every request from an HTTP/1.1 client that hyper's path serves,
//! which stays the reference the fast path is held to.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http::{Response, header};
use http_body::{Body as HttpBody, Frame, SizeHint};
use tracing::debug;

use super::dialled::Dialled;
use super::error::SendError;
use super::fast::lines::line;
use super::fast::pool::{Buffered, Home, RawPool};
use super::fast::switch::{self, Answer, Declined, Failed};
use super::upstream::BackendState;

/// Whether a request may go this way: it has no body, and its method frames its answer as
/// any other does (not `HEAD`, whose answer has no body whatever it says, nor `CONNECT`).
pub fn takes(parts: &http::request::Parts, bodiless: bool) -> bool {
    bodiless && parts.method != http::Method::HEAD && parts.method != http::Method::CONNECT
}

/// Sends the prepared request `parts` (headers final, hop-by-hop ones gone) to `backend` on
/// a pooled connection of this thread, or a new one, and reads its answer's head. A pooled
/// connection that turns out closed (the write failed, or it ended before any answer) is
/// replaced by a new one for an idempotent request, as on the fast path. The caller bounds
/// the whole exchange (connect and response-header timeouts).
pub async fn send(
    raw: &RawPool,
    backend: &BackendState,
    parts: &http::request::Parts,
) -> Result<Response<RawBody>, SendError> {
    let home = raw.home(backend.index());
    let mut pooled = home.checkout();
    loop {
        let reused = pooled.is_some();
        let (mut conn, dialled) = match pooled.take() {
            Some(conn) => (conn, None),
            None => {
                let dialling = Instant::now();
                // Boxed: dialling is rare, and its future inline would grow every request's.
                let tcp = Box::pin(raw.dial(&backend.backend)).await?;
                (Buffered::new(tcp), Some(dialling.elapsed()))
            }
        };
        write_head(parts, backend, &mut conn.head);
        let answer = switch::exchange_in(&mut conn.tcp, &conn.head, &mut conn.read).await;
        conn.shed();
        let answer = match answer {
            Ok(answer) => answer,
            Err(Failed::Unsent(_) | Failed::Unanswered(_))
                if reused && parts.method.is_idempotent() =>
            {
                debug!(backend = %backend.label, "pooled connection closed; trying a new one");
                continue;
            }
            Err(e) => return Err(SendError::Raw(e.to_string())),
        };
        let Answer::Declined(head, framing, early, keep_alive) = answer else {
            return Err(SendError::Raw(
                "a protocol switch nobody asked for".to_string(),
            ));
        };
        let body = RawBody {
            body: Some(Declined::new(conn, early, framing)),
            home: keep_alive.then_some(home),
        };
        let mut res = Response::from_parts(head, body);
        if let Some(took) = dialled {
            // The answer that waited for this connection says how long it took.
            res.extensions_mut().insert(Dialled::new(took));
        }
        return Ok(res);
    }
}

/// Writes the head of `parts` into `out` (cleared first) as hyper's client writes it, with
/// `Host` the backend's address when the client named no host, as hyper's pool sends it.
fn write_head(parts: &http::request::Parts, backend: &BackendState, out: &mut Vec<u8>) {
    out.clear();
    switch::write_head(parts, out);
    if !parts.headers.contains_key(header::HOST) {
        out.truncate(out.len() - 2);
        line(out, b"host", backend.backend.authority.as_str().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

/// A backend's answer body read off its raw connection; the connection goes back to its
/// pool when the body was read to its exact end and the backend keeps it alive.
pub struct RawBody {
    body: Option<Declined<Buffered>>,
    /// Where the connection goes back; `None` when the backend closes it after this answer.
    home: Option<Home>,
}

impl HttpBody for RawBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let Some(body) = self.body.as_mut() else {
            return Poll::Ready(None);
        };
        let frame = std::task::ready!(Pin::new(body).poll_frame(cx));
        if let Some(Err(_)) = frame {
            // A failed body leaves the connection in an unknown state: never reuse it.
            self.home = None;
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.body.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.body
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), HttpBody::size_hint)
    }
}

impl Drop for RawBody {
    fn drop(&mut self) {
        let (Some(home), Some(body)) = (self.home.take(), self.body.take()) else {
            return;
        };
        if let Some(conn) = body.into_clean() {
            home.give_back(conn);
        }
    }
}

#[cfg(test)]
mod tests {
    use http_body_util::BodyExt;

    use super::*;
    use crate::config::{Backend, Timeouts, UpstreamConfig, UpstreamProtocol};
    use crate::proxy::stub_backend::{self, Stub};
    use crate::proxy::upstream::Upstream;

    /// A backend answering each request head with `wire` (`stub_backend`), and an
    /// upstream of it.
    async fn backend(wire: &'static [u8], close_after: bool) -> (Upstream, Stub) {
        let stub = stub_backend::start(wire.to_vec(), close_after).await;
        let config = UpstreamConfig {
            backends: vec![Backend {
                tls: false,
                authority: stub.addr.to_string().parse().unwrap(),
            }],
            protocol: UpstreamProtocol::Auto,
            tls: None,
        };
        (Upstream::new(&config, Timeouts::default()).unwrap(), stub)
    }

    fn get(host: Option<&str>) -> http::request::Parts {
        let mut req = http::Request::builder()
            .method("GET")
            .uri("http://a.example/p?q=1")
            .version(http::Version::HTTP_2);
        if let Some(host) = host {
            req = req.header("host", host);
        }
        req.header("x-h", "v").body(()).unwrap().into_parts().0
    }

    /// One exchange: the answer's status and its body, or the error's reason.
    async fn fetch(
        upstream: &Upstream,
        parts: &http::request::Parts,
    ) -> Result<(u16, String), String> {
        let (raw, backend) = (upstream.raw().unwrap(), upstream.backend(0).unwrap());
        let res = send(raw, backend, parts).await.map_err(|e| e.to_string())?;
        let status = res.status().as_u16();
        let body = res.into_body().collect().await.map_err(|e| e.to_string())?;
        Ok((
            status,
            String::from_utf8_lossy(&body.to_bytes()).into_owned(),
        ))
    }

    #[tokio::test]
    async fn the_head_goes_as_hypers_client_writes_it_and_the_connection_is_used_again() {
        let wire = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-a: 1\r\n\r\nhello";
        let (upstream, mut stub) = backend(wire, false).await;
        for _ in 0..3 {
            assert_eq!(
                fetch(&upstream, &get(Some("a.example"))).await,
                Ok((200, "hello".into()))
            );
            assert_eq!(
                stub.heads.recv().await.unwrap(),
                "GET /p?q=1 HTTP/1.1\r\nhost: a.example\r\nx-h: v\r\n\r\n"
            );
        }
        assert_eq!(stub.accepted(), 1);
        // No host from the client: the backend's address, as hyper's pool writes it.
        fetch(&upstream, &get(None)).await.unwrap();
        let head = stub.heads.recv().await.unwrap();
        let addr = upstream.backend(0).unwrap().backend.authority.to_string();
        assert_eq!(
            head,
            format!("GET /p?q=1 HTTP/1.1\r\nx-h: v\r\nhost: {addr}\r\n\r\n")
        );
    }

    #[tokio::test]
    async fn an_answer_keeps_its_headers_and_a_chunked_body_its_connection() {
        let wire = b"HTTP/1.1 201 Made\r\nTransfer-Encoding: chunked\r\nX-One: a\r\nX-One: b\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let (upstream, stub) = backend(wire, false).await;
        let (raw, backend) = (upstream.raw().unwrap(), upstream.backend(0).unwrap());
        for _ in 0..2 {
            let res = send(raw, backend, &get(Some("a.example"))).await.unwrap();
            assert_eq!(res.status(), 201);
            let ones: Vec<_> = res.headers().get_all("x-one").iter().collect();
            assert_eq!(ones, ["a", "b"]);
            let phrase = res.extensions().get::<hyper::ext::ReasonPhrase>().unwrap();
            assert_eq!(phrase.as_bytes(), b"Made");
            let body = res.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body, "abcde");
        }
        assert_eq!(stub.accepted(), 1);
    }

    #[tokio::test]
    async fn a_body_to_the_close_or_left_unread_takes_its_connection_with_it() {
        let (upstream, stub) = backend(b"HTTP/1.1 200 OK\r\n\r\nto the close", true).await;
        for _ in 0..2 {
            assert_eq!(
                fetch(&upstream, &get(Some("a"))).await,
                Ok((200, "to the close".into()))
            );
        }
        assert_eq!(stub.accepted(), 2);

        let (upstream, stub) = backend(
            b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nnot read",
            false,
        )
        .await;
        let (raw, backend) = (upstream.raw().unwrap(), upstream.backend(0).unwrap());
        drop(send(raw, backend, &get(Some("a"))).await.unwrap());
        drop(send(raw, backend, &get(Some("a"))).await.unwrap());
        assert_eq!(stub.accepted(), 2, "a body dropped early closes");
    }

    #[tokio::test]
    async fn a_pooled_connection_the_backend_closed_is_replaced_for_a_get() {
        let wire = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\nonce";
        let (upstream, stub) = backend(wire, true).await;
        for i in 1..=3 {
            assert_eq!(
                fetch(&upstream, &get(Some("a"))).await,
                Ok((200, "once".into())),
                "request {i}"
            );
        }
        assert_eq!(stub.accepted(), 3);
    }

    #[tokio::test]
    async fn what_hypers_client_refuses_is_an_error_that_says_why() {
        let cases: [(&'static [u8], &str); 4] = [
            (
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
                "a protocol switch nobody asked for",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "differing Content-Lengths",
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
                "the backend closed before the end of the body",
            ),
            (b"nonsense\r\n\r\n", "an answer head that does not parse"),
        ];
        for (wire, why) in cases {
            let (upstream, _stub) = backend(wire, true).await;
            let err = fetch(&upstream, &get(Some("a"))).await.unwrap_err();
            assert!(
                err.contains(why),
                "{}: {err}",
                String::from_utf8_lossy(wire)
            );
        }
    }

    #[test]
    fn only_a_request_without_a_body_that_frames_its_answer_plainly_goes_raw() {
        let with = |method: &str| {
            let parts = http::Request::builder()
                .method(method)
                .body(())
                .unwrap()
                .into_parts()
                .0;
            (takes(&parts, true), takes(&parts, false))
        };
        assert_eq!(with("GET"), (true, false));
        assert_eq!(with("DELETE"), (true, false));
        assert_eq!(with("HEAD"), (false, false));
        assert_eq!(with("CONNECT"), (false, false));
    }

    #[tokio::test]
    async fn bytes_a_backend_sends_past_its_answer_never_reach_the_next_request() {
        // One answer, then the head of a second nobody asked for: were the connection used
        // again, the next request would read the backend's forgery as its answer.
        let wire = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nforged";
        let (upstream, stub) = backend(wire, false).await;
        for _ in 0..2 {
            assert_eq!(
                fetch(&upstream, &get(Some("a"))).await,
                Ok((200, "ok".into()))
            );
        }
        assert_eq!(
            stub.accepted(),
            2,
            "the connection with bytes left over was not reused"
        );
    }
}
