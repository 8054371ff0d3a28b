//! The access log's HTTP lines, from both paths: on the fast path the facts of a request
//! are copied out of its head before the exchange consumes it ([`Facts`], one buffer per
//! connection, reused) and written with what the exchange answered; on hyper's path a
//! request's facts are kept from its head ([`Pending`]) and written with its answer, the
//! route the routes front chose ([`Routed`]), what a Kubernetes front learnt of the call
//! ([`ApiFacts`]), the backend's answer (`proxy::exchange::Upstreamed`) and leafgate's own
//! reason (`proxy::error::Refused`). A Kubernetes call whose answer opens a stream (an
//! exec, attach or port-forward, a followed log) writes its line when that ends
//! (`listener::api_lines`, through the request's [`Line`]).
//!
//! Nothing here runs when no listener writes a log: `Logs::of` answers `None` after one
//! atomic load.

use std::net::IpAddr;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderMap, HeaderValue, Method, Request, Response, Uri, Version, header};
use tokio::time::Instant;

use super::client::{Client, Front};
use crate::access_log::{Kind, ListenerLog, Record};
use crate::proxy::Body;
use crate::proxy::error::Refused;
use crate::proxy::exchange::{NoteUpstream, Upstreamed};
use crate::proxy::fast::exchange::Outcome;
use crate::proxy::fast::request::Head;
use crate::proxy::upstream::Upstream;
use crate::routing::path;
use crate::snapshot::Route;

/// The route the routes front answered a request by, on its answer for the log.
#[derive(Clone)]
pub struct Routed(pub Arc<Route>);

/// Notes on `res` the route that answered it, when the connection's listener writes a log.
pub fn routed(client: &Client, res: &mut Response<Body>, route: &Arc<Route>) {
    if client.shared.access_log.is_on() {
        res.extensions_mut().insert(Routed(route.clone()));
    }
}

/// What a fast-path request's line needs of its head, copied into one buffer that lives
/// as long as the connection (it grows to the largest head's facts, then stays).
#[derive(Default)]
pub struct Facts {
    buf: Vec<u8>,
    method: Range<usize>,
    target: Range<usize>,
    host: Range<usize>,
    referer: Option<Range<usize>>,
    user_agent: Option<Range<usize>>,
    request_id: Option<Range<usize>>,
    trace_id: Option<Range<usize>>,
}

impl Facts {
    /// Copies `head`'s method, target, host, referer and user agent, and the request's
    /// ID and trace-id.
    pub fn capture(
        &mut self,
        head: &Head<'_, '_>,
        request_id: Option<&[u8]>,
        trace_id: Option<&[u8]>,
    ) {
        self.buf.clear();
        self.method = self.put(head.method.as_bytes());
        self.target = self.put(head.target.as_bytes());
        self.host = self.put(head.host.as_bytes());
        self.referer = head.header("referer").map(|v| self.put(v));
        self.user_agent = head.header("user-agent").map(|v| self.put(v));
        self.request_id = request_id.map(|v| self.put(v));
        self.trace_id = trace_id.map(|v| self.put(v));
    }

    fn put(&mut self, b: &[u8]) -> Range<usize> {
        let start = self.buf.len();
        self.buf.extend_from_slice(b);
        start..self.buf.len()
    }

    fn get(&self, r: &Range<usize>) -> &[u8] {
        &self.buf[r.clone()]
    }
}

/// Writes the line of a request the fast path answered, as its exchange ended
/// (`outcome`); a request no answer went out for (the client left) writes none.
pub fn fast_line(
    log: &ListenerLog,
    client: &Client,
    route: &Route,
    upstream: &Upstream,
    facts: &Facts,
    outcome: &Outcome,
    elapsed: Duration,
) {
    if outcome.status == 0 {
        return;
    }
    let mut r = Record::new(Kind::Http, &client.listener);
    r.request_id = facts
        .request_id
        .as_ref()
        .and_then(|x| std::str::from_utf8(facts.get(x)).ok());
    r.trace_id = facts
        .trace_id
        .as_ref()
        .and_then(|x| std::str::from_utf8(facts.get(x)).ok());
    r.route = Some(&route.name);
    r.tenant = route.tenant.as_ref().map(|t| t.name.as_str());
    r.client = Some(client.peer);
    handshake(&mut r, client);
    r.method = std::str::from_utf8(facts.get(&facts.method)).ok();
    r.target = Some(facts.get(&facts.target));
    r.host = Some(facts.get(&facts.host));
    r.referer = facts.referer.as_ref().map(|x| facts.get(x));
    r.user_agent = facts.user_agent.as_ref().map(|x| facts.get(x));
    r.protocol = Some("HTTP/1.1");
    r.status = Some(outcome.status);
    r.bytes_out = Some(outcome.bytes_out);
    r.upstream = outcome
        .backend
        .and_then(|i| upstream.backend(i))
        .map(|b| b.label.as_str());
    r.upstream_status = outcome.upstream_answered.then_some(outcome.status);
    r.upstream_first_byte = outcome.first_byte;
    r.upstream_connect = outcome.upstream_connect;
    r.duration = Some(elapsed);
    r.served_by = Some("fast");
    r.refusal = (!outcome.refusal.is_empty()).then_some(outcome.refusal.as_str());
    log.write(&r);
}

/// The line's `sni` and `tls_version`, from the connection's handshake.
fn handshake<'a>(r: &mut Record<'a>, client: &'a Client) {
    if let Some(h) = &client.handshake {
        r.sni = h.sni.as_deref();
        r.tls_version = Some(h.version);
    }
}

/// A request hyper's path serves (or, on a Kubernetes front, one whose upgrade was read in
/// place), its line's facts kept from its head until the answer, or until the stream the
/// answer opened ends (`listener::api_lines`).
pub struct Pending {
    log: Arc<ListenerLog>,
    started: Instant,
    method: Method,
    uri: Uri,
    /// The target with its path normalised as the fronts route it, when that changed it.
    normal: Option<String>,
    version: Version,
    headers: HeaderMap<HeaderValue>,
    bytes_in: Option<u64>,
    request_id: Option<HeaderValue>,
    trace_id: Option<String>,
    served_by: &'static str,
}

/// On a Kubernetes front's request: its [`Pending`] line, for a stream or followed log to
/// write when it ends.
#[derive(Clone)]
pub struct Line(pub Arc<Pending>);

/// On an answer whose line is written when the stream it opened ends, not now.
#[derive(Clone, Copy)]
pub struct Deferred;

/// What a Kubernetes front's line says of the call, learnt as the front answers it and
/// put on the answer ([`ApiFacts::attach`]); a field not learnt is left out of the line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApiFacts {
    /// Whether some listener writes a log: without one nothing is kept.
    on: bool,
    tenant: Option<String>,
    verb: Option<&'static str>,
    namespace: Option<String>,
    pod: Option<String>,
    leaf: Option<String>,
}

impl ApiFacts {
    /// Empty facts that keep what they are told when the gateway writes a log.
    pub fn new(client: &Client) -> ApiFacts {
        ApiFacts {
            on: client.shared.access_log.is_on(),
            ..ApiFacts::default()
        }
    }

    /// The facts of a pod call the front has chosen a leaf for.
    pub fn call(tenant: &str, verb: &'static str, namespace: &str, pod: &str, leaf: &str) -> Self {
        ApiFacts {
            on: true,
            tenant: Some(tenant.to_string()),
            verb: Some(verb),
            namespace: Some(namespace.to_string()),
            pod: Some(pod.to_string()),
            leaf: Some(leaf.to_string()),
        }
    }

    /// Whether the facts are kept (some listener writes a log).
    pub fn on(&self) -> bool {
        self.on
    }

    pub fn tenant(&mut self, name: &str) {
        if self.on {
            self.tenant = Some(name.to_string());
        }
    }

    pub fn verb(&mut self, verb: &'static str) {
        if self.on {
            self.verb = Some(verb);
        }
    }

    pub fn namespace(&mut self, namespace: &str) {
        if self.on {
            self.namespace = Some(namespace.to_string());
        }
    }

    pub fn pod(&mut self, pod: &str) {
        if self.on {
            self.pod = Some(pod.to_string());
        }
    }

    pub fn leaf(&mut self, leaf: &str) {
        if self.on {
            self.leaf = Some(leaf.to_string());
        }
    }

    /// Puts the facts on `res`, filling in what facts already there (put by the call
    /// deeper down, which knows more) left out.
    pub fn attach<B>(self, res: &mut Response<B>) {
        if !self.on {
            return;
        }
        let merged = match res.extensions_mut().remove::<ApiFacts>() {
            Some(deeper) => ApiFacts {
                on: true,
                tenant: deeper.tenant.or(self.tenant),
                verb: deeper.verb.or(self.verb),
                namespace: deeper.namespace.or(self.namespace),
                pod: deeper.pod.or(self.pod),
                leaf: deeper.leaf.or(self.leaf),
            },
            None => self,
        };
        res.extensions_mut().insert(merged);
    }

    fn fill<'a>(&'a self, r: &mut Record<'a>) {
        r.tenant = self.tenant.as_deref();
        r.verb = self.verb;
        r.namespace = self.namespace.as_deref();
        r.pod = self.pod.as_deref();
        r.leaf = self.leaf.as_deref();
    }
}

/// How a stream or followed log ended, for its line (`listener::api_lines`).
pub struct Ended<'a> {
    pub status: u16,
    pub facts: &'a ApiFacts,
    /// Bytes from the client (a stream's), and to it.
    pub bytes_in: Option<u64>,
    pub bytes_out: u64,
    pub upstream: Option<&'a str>,
    pub throttled: Option<Duration>,
    pub end_reason: &'static str,
}

/// The headers a line reads; no other (and never `Authorization` or `Cookie`) is kept.
const KEPT: [header::HeaderName; 4] = [
    header::HOST,
    header::REFERER,
    header::USER_AGENT,
    http::header::HeaderName::from_static("x-forwarded-for"),
];

impl Pending {
    /// The facts of `req` when its listener writes a log; `req` is marked so that its
    /// backend's answer is noted (`NoteUpstream`), and on a Kubernetes front it carries
    /// its [`Line`]. `request_id`: the ID the request goes on with (`listener::ids`);
    /// `served_by`: `hyper`, or `fast` for an upgrade read in place.
    pub fn of<B: http_body::Body>(
        client: &Client,
        req: &mut Request<B>,
        request_id: Option<&HeaderValue>,
        trace_id: Option<String>,
        served_by: &'static str,
    ) -> Option<Arc<Pending>> {
        let log = client.shared.access_log.of(&client.listener)?;
        req.extensions_mut().insert(NoteUpstream);
        let mut headers = HeaderMap::new();
        for name in KEPT {
            if let Some(v) = req.headers().get(&name) {
                headers.insert(name, v.clone());
            }
        }
        let uri = req.uri().clone();
        let normal = normalized(uri.path_and_query().map_or(uri.path(), |p| p.as_str()));
        let pending = Arc::new(Pending {
            log,
            started: Instant::now(),
            method: req.method().clone(),
            uri,
            normal,
            version: req.version(),
            headers,
            bytes_in: http_body::Body::size_hint(req.body()).exact(),
            request_id: request_id.cloned(),
            trace_id,
            served_by,
        });
        if client.front != Front::Routes {
            req.extensions_mut().insert(Line(pending.clone()));
        }
        Some(pending)
    }

    /// Writes the line of the request answered with `res`, unless the stream it opened
    /// writes it when it ends ([`Deferred`]).
    pub fn write(&self, client: &Client, res: &Response<Body>) {
        if res.extensions().get::<Deferred>().is_some() {
            return;
        }
        let routed = res.extensions().get::<Routed>().map(|r| &r.0);
        let upstream = res.extensions().get::<Upstreamed>();
        let refused = res.extensions().get::<Refused>();
        let facts = res.extensions().get::<ApiFacts>();
        self.with_record(client, |r| {
            r.route = routed.map(|route| route.name.as_str());
            r.tenant = routed.and_then(|route| route.tenant.as_ref().map(|t| t.name.as_str()));
            if let Some(facts) = facts {
                facts.fill(r);
            }
            r.status = Some(res.status().as_u16());
            r.bytes_out = http_body::Body::size_hint(res.body()).exact();
            r.upstream = upstream.map(|u| u.backend.as_str());
            r.upstream_status = upstream.and_then(|u| u.status);
            r.upstream_first_byte = upstream.map(|u| u.first_byte);
            r.upstream_connect = upstream.and_then(|u| u.connect);
            r.refusal = refused.map(|r| r.0.as_str());
        });
    }

    /// Writes the line of a Kubernetes call whose stream or followed log has ended.
    pub fn write_ended(&self, client: &Client, end: &Ended<'_>) {
        self.with_record(client, |r| {
            end.facts.fill(r);
            r.status = Some(end.status);
            if end.bytes_in.is_some() {
                r.bytes_in = end.bytes_in;
            }
            r.bytes_out = Some(end.bytes_out);
            r.upstream = end.upstream;
            r.throttled = end.throttled;
            r.end_reason = Some(end.end_reason);
        });
    }

    /// The line's record with what the request's head says, completed by `fill`, written.
    fn with_record<'a>(&'a self, client: &'a Client, fill: impl FnOnce(&mut Record<'a>)) {
        let target = self
            .uri
            .path_and_query()
            .map_or(self.uri.path(), |p| p.as_str());
        let header = |name: &header::HeaderName| self.headers.get(name).map(HeaderValue::as_bytes);
        let host = self
            .uri
            .authority()
            .map(|a| a.as_str().as_bytes())
            .or(header(&header::HOST));
        let forwarded_for = self.headers.get("x-forwarded-for").and_then(|v| {
            let snapshot = client.shared.snapshot.load();
            let listener = snapshot.listeners.get(&*client.listener)?;
            let trusts = |ip: IpAddr| listener.config.trusts(ip);
            trusts(client.peer.ip())
                .then(|| forwarded_client(v.as_bytes(), trusts))
                .flatten()
        });
        let kind = match client.front {
            Front::Routes => Kind::Http,
            Front::NodeApi => Kind::NodeApi,
            Front::KubeApi => Kind::KubeApi,
        };
        let mut r = Record::new(kind, &client.listener);
        r.request_id = self.request_id.as_ref().and_then(|v| v.to_str().ok());
        r.trace_id = self.trace_id.as_deref();
        r.client = Some(client.peer);
        handshake(&mut r, client);
        r.forwarded_for = forwarded_for;
        r.method = Some(self.method.as_str());
        // As routed: the path normalised as the fronts route it, the query as it came.
        r.target = Some(self.normal.as_deref().unwrap_or(target).as_bytes());
        r.host = host;
        r.referer = header(&header::REFERER);
        r.user_agent = header(&header::USER_AGENT);
        r.protocol = Some(protocol(self.version));
        r.bytes_in = self.bytes_in;
        r.served_by = Some(self.served_by);
        fill(&mut r);
        r.duration = Some(self.started.elapsed());
        self.log.write(&r);
    }
}

/// `target` with its path normalised as the fronts route it (`None`: as it is, or not a
/// path the fronts take).
fn normalized(target: &str) -> Option<String> {
    let (p, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    match path::normalize(p) {
        Ok(std::borrow::Cow::Owned(p)) => Some(match query {
            Some(q) => format!("{p}?{q}"),
            None => p,
        }),
        _ => None,
    }
}

/// The client a trusted proxy's `X-Forwarded-For` names: the last address that is not
/// itself a trusted proxy, read from the right (the left part is the client's own claim).
fn forwarded_client(value: &[u8], trusts: impl Fn(IpAddr) -> bool) -> Option<&[u8]> {
    let text = std::str::from_utf8(value).ok()?;
    let mut last = None;
    for hop in text.rsplit(',').map(str::trim) {
        let ip: IpAddr = hop.parse().ok()?;
        last = Some(hop);
        if !trusts(ip) {
            break;
        }
    }
    last.map(str::as_bytes)
}

/// The protocol as nginx's `$server_protocol` writes it.
fn protocol(v: Version) -> &'static str {
    match v {
        Version::HTTP_09 => "HTTP/0.9",
        Version::HTTP_10 => "HTTP/1.0",
        Version::HTTP_2 => "HTTP/2.0",
        Version::HTTP_3 => "HTTP/3.0",
        _ => "HTTP/1.1",
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::{forwarded_client, normalized};

    #[test]
    fn the_forwarded_client_is_the_first_untrusted_hop_from_the_right() {
        let trusted = |ip: IpAddr| ip.to_string().starts_with("10.");
        assert_eq!(
            forwarded_client(b"6.6.6.6, 192.0.2.1, 10.0.0.2", trusted),
            Some(&b"192.0.2.1"[..])
        );
        assert_eq!(
            forwarded_client(b"10.0.0.1", trusted),
            Some(&b"10.0.0.1"[..])
        );
        assert_eq!(forwarded_client(b"not an address", trusted), None);
    }

    #[test]
    fn the_path_is_written_as_routed() {
        assert_eq!(normalized("/a/../b?x=1").as_deref(), Some("/b?x=1"));
        assert_eq!(normalized("/plain"), None);
    }
}
