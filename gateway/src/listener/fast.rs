//! The HTTP/1.1 fast path of a routes listener: one loop per connection that reads each
//! request head in its buffer, writes the backend's head on a raw pooled socket in one
//! write, streams the body each way through two fixed buffers, and starts over. No task,
//! channel, header map or body object is made per request, and nothing is allocated in the
//! steady state (a test counts it).
//!
//! It serves only what it can serve exactly as hyper's path does (`proxy::fast::request`
//! says what that is; here: a route that proxies to plain HTTP/1.1 backends, a path that
//! needs no normalising). At the first request it does not take, it stops with the bytes
//! it holds unread, and the connection is served by hyper from there on ([`Ended::ToHyper`]),
//! malformed requests included: their 400s and 431s are hyper's own, and what RFC 9112
//! refuses that hyper hands on is the front's (`listener::front`). One exception: an
//! HTTP/2 preface after HTTP/1.1 requests gets a 400 here and the connection ends (handed
//! on, hyper's auto server would take it for a prior-knowledge h2c connection).
//!
//! This file is the loop and the plan: each head is parsed (`proxy::fast::request`), its
//! route looked up and the route's verdict read (`snapshot::Fast`, made once when the
//! snapshot was built: the one home of what the fast path serves), and the request handed
//! to the exchange (`proxy::fast::exchange`), which sends, streams, answers and fails.
//!
//! What hyper's path keeps, kept here: the same metrics (requests by route and status,
//! duration to the response head, upstream errors by kind), the same timeouts (a head
//! within `HEADER_READ_TIMEOUT` once begun, `client_idle` between requests, the route's
//! `connect`, `response_header` and body `idle`), retrying a request with no body on the
//! next backend when one refuses, the same error answers, and graceful drain (`stop` ends
//! the connection at the next request boundary; the answer in flight says
//! `Connection: close`).

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tracing::debug;

use super::access::{self, Facts};
use super::client::Client;
use super::conn::HEADER_READ_TIMEOUT;
use super::ids::{FastId, FastTrace};
use crate::access_log::ListenerLog;
use crate::config::{Config, ListenerKind};
use crate::metrics::{ListenerLabels, Metrics};
use crate::proxy::error::error_text;
use crate::proxy::exchange::Conn;
use crate::proxy::fast::buf::Wait;
use crate::proxy::fast::exchange::{Caller, FastConn, Next, Request};
use crate::proxy::fast::request::{self, Extras, Head};
use crate::proxy::fast::{lines, response};
use crate::proxy::headers::{ClientSide, Peer};
use crate::proxy::trace;
use crate::proxy::upstream::Upstream;
use crate::routing::path;
use crate::runtime::signal::Waiter;
use crate::snapshot::choice::Choice;
use crate::snapshot::{Fast, Route};

/// How a fast-path connection ended.
pub enum Ended {
    Closed,
    /// Closed by an answer made with the request's body unread: the client may still be
    /// sending it, so the connection lingers (`listener::linger`).
    Unread,
    /// A request the fast path does not take: hyper serves the connection from `unread` on.
    ToHyper(Vec<u8>),
}

/// Serves requests on `io` until it closes, `stop` asks it to, or a request needs hyper.
pub async fn serve<S>(io: &mut S, client: &Client, stop: &Waiter, client_idle: Duration) -> Ended
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let labels = ListenerLabels {
        listener: client.listener.to_string(),
    };
    let metrics = &client.shared.metrics;
    let served = metrics.fast_path_requests.get_or_create(&labels).clone();
    let mut conn = FastConn::new(client, served);
    // The access log's facts of the request being served, when its listener writes one.
    let mut facts = Facts::default();
    // The request's ID, when the config gives requests one.
    let mut id = FastId::default();
    // The new trace a request is given, with `[tracing] propagate`.
    let mut trace = FastTrace::default();
    // Some request was served: hyper's server takes an HTTP/2 preface only as a
    // connection's first bytes.
    let mut exchanged = false;
    loop {
        let step = {
            let mut slots = [httparse::EMPTY_HEADER; request::MAX_HEADERS];
            match request::parse(conn.input.bytes(), &mut slots) {
                request::Read::Partial => None,
                request::Read::Other(_) if exchanged && conn.input.bytes().starts_with(PREFACE) => {
                    Some(Step::Preface)
                }
                request::Read::Other(why) => Some(Step::Hyper(why)),
                request::Read::Fast(head) => Some(plan(
                    client,
                    &head,
                    Written {
                        head: &mut conn.head,
                        reply: &mut conn.reply,
                        facts: &mut facts,
                        id: &mut id,
                        trace: &mut trace,
                    },
                )),
            }
        };
        match step {
            None => {
                if conn.input.is_full() {
                    metrics.fast_path_handoffs.get_or_create(&labels).inc();
                    return to_hyper(&conn, "a head longer than the fast path's buffer");
                }
                let read = if conn.input.is_empty() {
                    if stop.is_fired() {
                        return Ended::Closed;
                    }
                    let wait = conn.idle_wait(client_idle);
                    tokio::select! {
                        biased;
                        r = conn.read_request(io, wait) => r,
                        () = stop.fired() => return Ended::Closed,
                    }
                } else {
                    conn.read_request(io, Wait::For(HEADER_READ_TIMEOUT)).await
                };
                match read {
                    Ok(0) => return Ended::Closed,
                    Ok(_) => {}
                    Err(e) => {
                        debug!(error = %e, "no request head; closing");
                        return Ended::Closed;
                    }
                }
            }
            Some(Step::Hyper(why)) => {
                metrics.fast_path_handoffs.get_or_create(&labels).inc();
                return to_hyper(&conn, why);
            }
            Some(Step::Preface) => {
                // Handed to hyper, it would switch the connection to HTTP/2 mid-way.
                let _ = io.write_all(&preface_refusal()).await;
                return Ended::Unread;
            }
            Some(Step::Go(plan)) => {
                let chosen = plan.entry.as_ref().and_then(|(e, i)| e.choice(*i));
                let request = Request {
                    route: &plan.route.name,
                    upstream: &plan.upstream,
                    head_len: plan.head_len,
                    body: plan.body,
                    close: plan.close,
                    idempotent: plan.idempotent,
                    answer_edit: chosen
                        .map(|c| &c.response_headers)
                        .filter(|m| !m.is_empty())
                        .map(|m| &m.edit),
                };
                exchanged = true;
                let next = conn.exchange(io, request, &|| stop.is_fired()).await;
                if let (Some(log), Some(began)) = (&plan.log, conn.outcome.started) {
                    let (route, upstream) = (&plan.route, &plan.upstream);
                    access::fast_line(
                        log,
                        client,
                        route,
                        upstream,
                        &facts,
                        &conn.outcome,
                        began.elapsed(),
                    );
                }
                if let Next::Close = next {
                    if conn.body_unread() {
                        return Ended::Unread;
                    }
                    let _ = io.shutdown().await;
                    return Ended::Closed;
                }
            }
        }
    }
}

/// What a plan writes, in buffers the connection keeps.
struct Written<'a> {
    /// The backend's head.
    head: &'a mut Vec<u8>,
    /// The lines the client's answer gets besides the backend's.
    reply: &'a mut Vec<u8>,
    facts: &'a mut Facts,
    id: &'a mut FastId,
    trace: &'a mut FastTrace,
}

/// Routes `head` as the routes front would, and writes the backend's head (with the
/// request's ID, when the config gives requests one, and the line returning it); when the
/// listener writes an access log, copies the head's facts for its line.
fn plan(client: &Client, head: &Head<'_, '_>, out: Written<'_>) -> Step {
    let snapshot = client.shared.snapshot.load();
    let Some(listener) = snapshot.listeners.get(&*client.listener) else {
        return Step::Hyper("the listener was removed");
    };
    if listener.config.kind != ListenerKind::Http || !listener.config.http1_fast_path {
        return Step::Hyper("the listener no longer takes the fast path");
    }
    let sni = client.handshake.as_ref().and_then(|h| h.sni.as_deref());
    if listener.misdirected(sni, head.host) {
        return Step::Hyper("a host another certificate serves (hyper's path answers 421)");
    }
    let path = head.target.split('?').next().unwrap_or("/");
    if !matches!(path::normalize(path), Ok(std::borrow::Cow::Borrowed(_))) {
        return Step::Hyper("a path to normalise or refuse");
    }
    let Some(route) = listener.router.lookup(head.host, path) else {
        return Step::Hyper("no route");
    };
    // What of the route the fast path serves was decided when the snapshot was built.
    if let Fast::Hyper(why) = &route.fast {
        return Step::Hyper(why);
    }
    let trusted = listener.config.trusts(client.peer.ip());
    if !head.fits(trusted) {
        return Step::Hyper("forwarding headers from a trusted proxy");
    }
    // The query as it came, `?` included (or nothing).
    let (query, config) = (&head.target[path.len()..], &snapshot.config);
    let mut chosen = None;
    if let Fast::Choose = &route.fast {
        let header = |name: &str| head.header(name);
        let Some((i, choice)) = route.choice_by(head.method, header, query.strip_prefix('?'))
        else {
            return Step::Hyper("no Gateway API candidate holds");
        };
        if let Some(why) = own_headers(choice, config) {
            return Step::Hyper(why);
        }
        chosen = Some((i, choice));
    }
    let target = match chosen.map(|(_, c)| c.target(path, query)) {
        Some(Err(why)) => return Step::Hyper(why),
        Some(Ok(target)) => target,
        None => None,
    };
    // Chosen only now: hyper's path would choose again from the same split.
    let (entry, backend) = match chosen {
        Some((i, choice)) => (Some((route.clone(), i)), choice.split.pick()),
        None => (None, route),
    };
    let Fast::Proxy(upstream) = &backend.fast else {
        // A candidate's backend routes are fast ones (`Fast::of`).
        return Step::Hyper("a Gateway API backend the fast path does not serve");
    };
    out.reply.clear();
    let id = config.request_id.as_ref().map(|config| {
        let name = config.header.as_str();
        let id = out.id.choose(head.lines(name), trusted);
        if config.response {
            lines::line(out.reply, name.as_bytes(), id);
        }
        (name, id)
    });
    // Off: `None`; on: the new trace's `traceparent`, or `None` inside when the request's
    // goes on as it came.
    let started = config
        .propagate_trace
        .then(|| out.trace.choose(head.lines("traceparent")));
    let trace_id = match started {
        Some(Some(tp)) => Some(trace::trace_id(tp)),
        Some(None) => head.lines("traceparent").1.map(trace::trace_id),
        None => None,
    };
    let choice = chosen.map(|(_, c)| c);
    head.write_upstream(
        out.head,
        &ClientSide {
            peer: &client.forwarded_peer,
            tls: client.tls,
            host: Some(choice.and_then(|c| c.host()).unwrap_or(head.host)),
            trusted,
        },
        &Extras {
            id,
            traceparent: started.flatten(),
            target,
            edit: choice.map(|c| &c.request_headers.edit),
        },
    );
    let log = client.shared.access_log.of(&client.listener);
    if log.is_some() {
        out.facts.capture(head, id.map(|(_, id)| id), trace_id);
    }
    Step::Go(Plan {
        log,
        route: backend.clone(),
        entry,
        upstream: upstream.clone(),
        head_len: head.len,
        body: head.content_length,
        close: head.close,
        idempotent: matches!(head.method, "GET" | "PUT" | "DELETE" | "OPTIONS"),
    })
}

/// Why a Gateway API candidate's header modifiers are left to hyper's path, if they
/// are: one names a header leafgate writes there before the modifier runs and here after
/// the client's lines (the request's ID, the trace context), so the two would differ.
fn own_headers(choice: &Choice<Arc<Route>>, config: &Config) -> Option<&'static str> {
    let names = |name: &str| {
        [&choice.request_headers, &choice.response_headers]
            .iter()
            .any(|m| m.edit.names(name))
    };
    let id = config
        .request_id
        .as_ref()
        .is_some_and(|c| names(c.header.as_str()));
    let trace = config.propagate_trace && (names("traceparent") || names("tracestate"));
    (id || trace).then_some("a header modifier on the request's ID or trace context")
}

/// What to do with a complete request head.
enum Step {
    Hyper(&'static str),
    /// An HTTP/2 preface after HTTP/1.1 requests: a 400, and the connection ends.
    Preface,
    Go(Plan),
}

/// The answer to an HTTP/2 preface after HTTP/1.1 requests, on both paths (hyper's
/// server closes such a connection without one; the listener writes it then): leafgate's
/// own 400, the connection's last.
pub fn preface_refusal() -> Vec<u8> {
    let status = http::StatusCode::BAD_REQUEST;
    let text = error_text(status, "an HTTP/2 preface after HTTP/1.1 requests");
    let mut out = Vec::new();
    response::write_error(&mut out, status, &text, true, &[], None);
    out
}

/// The start of an HTTP/2 connection preface (RFC 9113 §3.4), as an HTTP/1 request line.
const PREFACE: &[u8] = b"PRI * HTTP/2.0";

/// A request the fast path takes, and the route it keeps alive while it is served; its
/// backend head is written in `FastConn::head`.
struct Plan {
    /// The listener's access log, when it writes one.
    log: Option<Arc<ListenerLog>>,
    /// The route that serves it (a Gateway API candidate's backend route).
    route: Arc<Route>,
    /// The Gateway API entry and the place of the candidate that chose `route`.
    entry: Option<(Arc<Route>, usize)>,
    upstream: Arc<Upstream>,
    head_len: usize,
    body: u64,
    close: bool,
    /// The method is idempotent (RFC 9110 §9.2.2): sent again when a pooled connection
    /// turns out closed after the write.
    idempotent: bool,
}

fn to_hyper(conn: &FastConn<'_, Client>, why: &'static str) -> Ended {
    debug!(why, "served by hyper from here on");
    Ended::ToHyper(conn.input.bytes().to_vec())
}

impl Caller for Client {
    fn forwarded_peer(&self) -> &Peer {
        &self.forwarded_peer
    }

    fn tls(&self) -> bool {
        self.tls
    }

    fn conn(&self) -> Conn<'_> {
        Client::conn(self)
    }

    fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    fn count_elapsed(&self, route: &str, status: u16, elapsed: Duration) {
        Client::count_elapsed(self, route, status, elapsed);
    }
}
