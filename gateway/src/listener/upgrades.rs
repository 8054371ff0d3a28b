//! A node-API or kube-API connection's first request, read in place when it asks to switch
//! protocols: every exec, attach and port-forward the root cluster's API server sends to a
//! node, and every one `kubectl` sends to the kube-API front, comes on a connection of its
//! own, as one such request with no body.
//!
//! The head is read where it lies in the connection's buffer (`fast::request::upgrade`:
//! hyper's parser and limits, the parts hyper's server would make of it) and answered by
//! the listener's front as hyper's path answers it (`front::node_api`, `front::kube_api`).
//! On 101 the client gets the leaf's head as hyper's server writes one
//! (`fast::switch::write_switched`), and its connection goes to the splice as it is, with
//! what it sent behind its head: no hyper server connection, dispatch or upgrade hand-over
//! sits between the client's request and the leaf's, or between the leaf's 101 and the
//! client's.
//!
//! The request gets its ID and trace context (`ids`) and its access log line
//! (`access::Pending`, written with the answer, or by the stream when it ends) as on
//! hyper's path.
//!
//! Any other answer (a refusal, a leaf that declined) is written by hyper: the connection
//! goes to hyper with the head put back, and hyper's service hands the answer already made
//! to the request it reads there, so the client gets it byte for byte as on hyper's path,
//! and hyper serves the connection from then on. Anything this does not take (another
//! method, a body, HTTP/2, a head over 16 KiB or one httparse refuses) goes to hyper
//! unread, as on the routes' fast path.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Empty;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;
use tracing::{Instrument, debug, debug_span};

use super::access::Pending;
use super::client::{Client, Front};
use super::{front, ids};
use crate::metrics::ListenerLabels;
use crate::proxy::fast::request::{self, Upgrade};
use crate::proxy::fast::switch;
use crate::proxy::upgrade::{ClientIo, RawUpgrade};
use crate::proxy::{Body, boxed, error_response};
use crate::runtime::signal::Waiter;

/// The most bytes read for the first head; a longer one goes to hyper (whose limit is far
/// higher).
const BUFFER: usize = 16 * 1024;

/// How the first request ended.
pub enum Ended<I> {
    /// The connection was spliced, or closed.
    Done,
    /// hyper serves the connection from `unread` on. With `answer`, `unread` starts with a
    /// request already answered: hyper's service hands it that answer.
    ToHyper {
        io: I,
        unread: Vec<u8>,
        answer: Option<Response<Body>>,
    },
}

/// Reads the first request on `io` within `head_timeout` and answers it when it is an
/// upgrade; `stop` (the listener draining) hands the connection to hyper as it stands.
/// As with hyper, the time runs from the connection's start, and `client_idle` does not
/// cut it short: hyper counts a connection whose first head it awaits as busy, not idle.
pub async fn serve<I>(
    mut io: I,
    client: &Arc<Client>,
    stop: &Waiter,
    head_timeout: Duration,
) -> Ended<I>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut buf = Vec::with_capacity(BUFFER);
    let deadline = tokio::time::sleep(head_timeout);
    tokio::pin!(deadline);
    let (mut parts, len) = loop {
        let read = tokio::select! {
            biased;
            () = stop.fired() => return to_hyper(io, buf, None),
            () = &mut deadline => {
                debug!(timeout = ?head_timeout, "no request head in time; closing");
                return Ended::Done;
            }
            read = io.read_buf(&mut buf) => read,
        };
        match read {
            // hyper reads what came before the close, as it would have.
            Ok(0) => return to_hyper(io, buf, None),
            Ok(_) => {}
            Err(e) => {
                debug!(error = %e, "no request head; closing");
                return Ended::Done;
            }
        }
        match request::upgrade(&buf) {
            Upgrade::Taken(parts, len) => break (parts, len),
            Upgrade::Partial if buf.len() < BUFFER => {}
            Upgrade::Partial => return to_hyper(io, buf, None),
            Upgrade::Other(why) => {
                debug!(why, "not an upgrade; serving the connection with hyper");
                return to_hyper(io, buf, None);
            }
        }
    };
    let snapshot = client.shared.snapshot.load_full();
    // A reload may have given the socket another kind since the accept: the request goes
    // to the front of the kind that is current, as on hyper's path.
    let Some((listener, front)) = snapshot
        .listeners
        .get(&*client.listener)
        .filter(|l| l.config.http1_fast_path)
        .map(|l| (l, Front::of(l.config.kind)))
        .filter(|(_, front)| *front != Front::Routes)
    else {
        return to_hyper(io, buf, None);
    };
    let started = Instant::now();
    let span = debug_span!(
        "request",
        method = %parts.method,
        path = parts.uri.path(),
        route = tracing::field::Empty,
        status = tracing::field::Empty,
    );
    let (raw, to_splice) = RawUpgrade::pair();
    parts.extensions.insert(raw);
    let mut req = Request::from_parts(parts, Empty::<Bytes>::new());
    // Its ID and trace, and its access log line, as on hyper's path (`front::dispatch`).
    let id = ids::assign(client, &mut req);
    let trace = ids::trace(client, &mut req);
    let line = Pending::of(
        client,
        &mut req,
        id.as_ref().map(|i| &i.value),
        trace,
        "fast",
    );
    let mut res = match front::normalize_path(&mut req) {
        Ok(()) if front == Front::NodeApi => {
            let answer = front::node_api(req, client, &snapshot, listener, started);
            Box::pin(answer.instrument(span)).await
        }
        Ok(()) => {
            let answer = front::kube_api(req.map(boxed), client, &snapshot, started);
            Box::pin(answer.instrument(span)).await
        }
        Err(e) => {
            let res = error_response(StatusCode::BAD_REQUEST, &e.to_string());
            client.record("", &res, started);
            res
        }
    };
    let labels = ListenerLabels {
        listener: client.listener.to_string(),
    };
    client
        .shared
        .metrics
        .fast_path_requests
        .get_or_create(&labels)
        .inc();
    if let Some(id) = id {
        id.answer(&mut res);
    }
    if let Some(line) = line {
        line.write(client, &res);
    }
    if res.status() != StatusCode::SWITCHING_PROTOCOLS {
        return to_hyper(io, buf, Some(res));
    }
    let mut head = Vec::with_capacity(256);
    switch::write_switched(&res.into_parts().0, &mut head);
    if let Err(e) = write_all(&mut io, &head).await {
        // The splice, waiting for this connection, logs the failed side.
        debug!(error = %e, "the client's connection failed before its 101 was written");
        return Ended::Done;
    }
    let early = Bytes::copy_from_slice(&buf[len..]);
    // An error means the splice is gone already (shutdown): the connection closes.
    let _ = to_splice.send(ClientIo::new(io, early));
    Ended::Done
}

fn to_hyper<I>(io: I, unread: Vec<u8>, answer: Option<Response<Body>>) -> Ended<I> {
    Ended::ToHyper { io, unread, answer }
}

async fn write_all<I: AsyncWrite + Unpin>(io: &mut I, bytes: &[u8]) -> std::io::Result<()> {
    io.write_all(bytes).await?;
    io.flush().await
}
