//! Each request's ID (`[request_id]`), on both paths: the ID a trusted proxy sent, when
//! it sent one line of a sane token (`proxy::request_id::is_sane`), else a new one. The
//! request goes on with it (the client's own lines replaced), the access log writes it,
//! and the answer carries it back when `response`. A value that is not sane is never
//! forwarded, whoever sent it.

use http::header::{HeaderName, HeaderValue};
use http::{Request, Response};

use super::client::Client;
use crate::proxy::Body;
use crate::proxy::request_id::{self, MAX_KEPT, is_sane};
use crate::proxy::trace;

/// The ID a hyper-path request goes on with.
pub struct Assigned {
    name: HeaderName,
    pub value: HeaderValue,
    response: bool,
}

/// Gives `req` its ID, when the config asks for IDs.
pub fn assign<B>(client: &Client, req: &mut Request<B>) -> Option<Assigned> {
    let snapshot = client.shared.snapshot.load();
    let config = snapshot.config.request_id.as_ref()?;
    let trusted = snapshot
        .listeners
        .get(&*client.listener)
        .is_some_and(|l| l.config.trusts(client.peer.ip()));
    let mut lines = req.headers().get_all(&config.header).iter();
    let kept = match (lines.next(), lines.next()) {
        (Some(v), None) if trusted && is_sane(v.as_bytes()) => Some(v.clone()),
        _ => None,
    };
    let value = kept.unwrap_or_else(|| {
        HeaderValue::from_bytes(&request_id::generate()).expect("hex digits are a header value")
    });
    req.headers_mut()
        .insert(config.header.clone(), value.clone());
    Some(Assigned {
        name: config.header.clone(),
        value,
        response: config.response,
    })
}

const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// With `[tracing] propagate`, the request's `traceparent`: the one it came with when it
/// is one valid line, else a new trace's (its `tracestate` dropped); its trace-id, for the
/// line.
pub fn trace<B>(client: &Client, req: &mut Request<B>) -> Option<String> {
    if !client.shared.snapshot.load().config.propagate_trace {
        return None;
    }
    let mut lines = req.headers().get_all(&TRACEPARENT).iter();
    if let (Some(v), None) = (lines.next(), lines.next())
        && trace::is_valid(v.as_bytes())
    {
        return std::str::from_utf8(trace::trace_id(v.as_bytes()))
            .ok()
            .map(str::to_owned);
    }
    let started = trace::start();
    let headers = req.headers_mut();
    headers.remove(&TRACESTATE);
    headers.insert(
        TRACEPARENT,
        HeaderValue::from_bytes(&started).expect("hex digits are a header value"),
    );
    std::str::from_utf8(trace::trace_id(&started))
        .ok()
        .map(str::to_owned)
}

impl Assigned {
    /// Puts the ID on the answer, when the config returns it.
    pub fn answer(self, res: &mut Response<Body>) {
        if self.response {
            res.headers_mut().insert(self.name, self.value);
        }
    }
}

/// A fast-path request's ID, held in place for the connection (no allocation).
pub struct FastId {
    buf: [u8; MAX_KEPT],
    len: usize,
}

impl Default for FastId {
    fn default() -> Self {
        FastId {
            buf: [0; MAX_KEPT],
            len: 0,
        }
    }
}

impl FastId {
    /// Chooses the ID of a request whose lines of `config.header` are `lines` (how many,
    /// and the first), from a peer `trusted` or not.
    pub fn choose(&mut self, lines: (usize, Option<&[u8]>), trusted: bool) -> &[u8] {
        match lines {
            (1, Some(v)) if trusted && is_sane(v) => {
                self.buf[..v.len()].copy_from_slice(v);
                self.len = v.len();
            }
            _ => {
                let id = request_id::generate();
                self.buf[..id.len()].copy_from_slice(&id);
                self.len = id.len();
            }
        }
        self.get()
    }

    pub fn get(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// A fast-path request's trace, held in place for the connection.
pub struct FastTrace {
    started: [u8; trace::LEN],
}

impl Default for FastTrace {
    fn default() -> Self {
        FastTrace {
            started: [0; trace::LEN],
        }
    }
}

impl FastTrace {
    /// For a request whose `traceparent` lines are `lines`: `None` when it goes on as it
    /// came, else the new trace's `traceparent` (its `tracestate` to drop).
    pub fn choose(&mut self, lines: (usize, Option<&[u8]>)) -> Option<&[u8]> {
        match lines {
            (1, Some(v)) if trace::is_valid(v) => None,
            _ => {
                self.started = trace::start();
                Some(&self.started)
            }
        }
    }
}
