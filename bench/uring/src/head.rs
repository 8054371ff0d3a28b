//! The prototype's HTTP/1.1: the request head the upstream gets and the answer head the
//! client gets, as leafgate's fast path writes them.
//!
//! `leafgate::proxy` is private to the gateway crate, so this is not `proxy::fast` called
//! as a library: it is the same parser (`httparse`, 100 header lines) and the same output,
//! written again for the bench, kept to what `bench/proxy.sh` sends and its upstream answers.
//! Requests: `gateway/src/proxy/fast/request.rs`'s `parse` and `Head::write_upstream` for an
//! untrusted plain-HTTP client (hop-by-hop and forwarding-claim lines dropped, then
//! `x-forwarded-for`, `x-forwarded-proto`, `x-forwarded-host`, `x-real-ip`, `forwarded`
//! and `via: 1.1 leafgate`). Answers: `response.rs`'s `Answer::write_client` for an answer
//! framed by one `Content-Length` (hop-by-hop lines dropped, `via` appended, a `date`
//! when there was none, `connection: close` on the connection's last). What the fast path
//! hands to hyper instead, the prototype refuses with a status and closes; an answer it
//! cannot frame by a length is a 502.

use std::net::IpAddr;

/// Header lines a head may have, as hyper's limit.
pub const MAX_HEADERS: usize = 100;
/// The longest head taken, request or answer (hyper's default buffer limit is larger; the
/// bench's heads are a few hundred bytes).
pub const MAX_HEAD: usize = 64 * 1024;
/// The largest body carried either way: the prototype holds a whole message in memory.
pub const MAX_BODY: u64 = 1 << 20;

/// The client's address as the forwarding headers write it.
pub struct Peer {
    text: String,
    /// `Forwarded`'s node: IPv6 bracketed and quoted (RFC 7239 §6).
    node: String,
}

impl Peer {
    pub fn new(ip: IpAddr) -> Peer {
        let ip = ip.to_canonical();
        let node = match ip {
            IpAddr::V4(a) => a.to_string(),
            IpAddr::V6(a) => format!("\"[{a}]\""),
        };
        Peer {
            text: ip.to_string(),
            node,
        }
    }
}

/// What the bytes at the start of a client's buffer are.
#[derive(Debug, PartialEq, Eq)]
pub enum Request {
    /// Not a whole request yet.
    Partial,
    /// A whole request of `len` bytes (head and body), written for the upstream.
    Ready { len: usize, close: bool },
    /// A request the prototype does not carry: answer this status and close.
    Refused(u16),
}

/// Reads the request at the start of `buf`; when it is whole, writes what the upstream
/// gets (head and body) into `out`.
pub fn request(buf: &[u8], peer: &Peer, out: &mut Vec<u8>) -> Request {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut slots);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => return Request::Refused(431),
        Ok(httparse::Status::Partial) => return Request::Partial,
        Err(httparse::Error::TooManyHeaders) => return Request::Refused(431),
        Err(_) => return Request::Refused(400),
    };
    if req.version != Some(1) {
        return Request::Refused(505);
    }
    let method = req.method.unwrap_or("");
    if !matches!(
        method,
        "GET" | "POST" | "PUT" | "DELETE" | "PATCH" | "OPTIONS"
    ) {
        return Request::Refused(501);
    }
    let target = req.path.unwrap_or("");
    if !is_plain_origin_form(target) {
        return Request::Refused(400);
    }
    let mut host = None;
    let mut length = None;
    let mut close = false;
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"host") {
            if host.is_some() || !is_plain_host(h.value) {
                return Request::Refused(400);
            }
            host = std::str::from_utf8(h.value).ok();
        } else if name.eq_ignore_ascii_case(b"content-length") {
            match (length, digits(h.value)) {
                (None, Some(n)) if n <= MAX_BODY => length = Some(n),
                (None, Some(_)) => return Request::Refused(413),
                _ => return Request::Refused(400),
            }
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in list_tokens(h.value) {
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if !token.eq_ignore_ascii_case(b"keep-alive") {
                    return Request::Refused(501);
                }
            }
        } else if ["transfer-encoding", "te", "upgrade", "expect"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n.as_bytes()))
        {
            return Request::Refused(501);
        }
    }
    let Some(host) = host else {
        return Request::Refused(400);
    };
    // Bounded by MAX_BODY above.
    let total = len + length.unwrap_or(0) as usize;
    if buf.len() < total {
        return Request::Partial;
    }
    out.clear();
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        // `Connection: close` names a field `close`, this hop's too.
        let named = close && name.eq_ignore_ascii_case(b"close");
        if !is_hop_by_hop(name) && !is_forwarding_claim(name) && !named {
            line(out, name, h.value);
        }
    }
    line(out, b"x-forwarded-for", peer.text.as_bytes());
    line(out, b"x-forwarded-proto", b"http");
    line(out, b"x-forwarded-host", host.as_bytes());
    line(out, b"x-real-ip", peer.text.as_bytes());
    out.extend_from_slice(b"forwarded: for=");
    out.extend_from_slice(peer.node.as_bytes());
    out.extend_from_slice(b";proto=http;host=");
    push_quoted(out, host);
    out.extend_from_slice(b"\r\nvia: 1.1 leafgate\r\n\r\n");
    out.extend_from_slice(&buf[len..total]);
    Request::Ready { len: total, close }
}

/// What the bytes at the start of an upstream connection's buffer are.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    Partial,
    /// A whole answer of `len` bytes, written for the client; the upstream connection can
    /// carry another request when `keep_alive`.
    Ready {
        len: usize,
        keep_alive: bool,
    },
    /// An answer the prototype cannot carry (a 502 to the client).
    Bad(&'static str),
}

/// Reads the answer at the start of `buf`; when it is whole, writes what the client gets
/// into `out`, with `connection: close` when `last`.
pub fn answer(buf: &[u8], last: bool, out: &mut Vec<u8>) -> Answer {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut slots);
    let len = match res.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => return Answer::Bad("a long head"),
        Ok(httparse::Status::Partial) => return Answer::Partial,
        Err(_) => return Answer::Bad("a head that does not parse"),
    };
    let status = res.code.unwrap_or(0);
    let minor = res.version.unwrap_or(0);
    if !(200..=599).contains(&status) {
        return Answer::Bad("an informational answer");
    }
    let bodiless = matches!(status, 204 | 304);
    let mut length = None;
    let mut keep_alive = minor == 1;
    let mut date = false;
    for h in res.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            match (length, digits(h.value)) {
                (None, Some(n)) if n <= MAX_BODY => length = Some(n),
                _ => return Answer::Bad("a length the prototype does not take"),
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            return Answer::Bad("a chunked answer");
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in list_tokens(h.value) {
                if token.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive = true;
                }
            }
        }
        date |= name.eq_ignore_ascii_case(b"date");
    }
    let body = match (bodiless, length) {
        (true, _) => 0,
        (false, Some(n)) => n as usize,
        (false, None) => return Answer::Bad("an answer with no length"),
    };
    let total = len + body;
    if buf.len() < total {
        return Answer::Partial;
    }
    out.clear();
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(res.reason.unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    for h in res.headers.iter() {
        let name = h.name.as_bytes();
        if !is_hop_by_hop(name) {
            line(out, name, h.value);
        }
    }
    out.extend_from_slice(if minor == 0 {
        b"via: 1.0 leafgate\r\n"
    } else {
        b"via: 1.1 leafgate\r\n"
    });
    if !bodiless && length.is_none() {
        out.extend_from_slice(b"content-length: 0\r\n");
    }
    if last {
        out.extend_from_slice(b"connection: close\r\n");
    }
    if !date {
        line(
            out,
            b"date",
            httpdate::fmt_http_date(std::time::SystemTime::now()).as_bytes(),
        );
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&buf[len..total]);
    Answer::Ready {
        len: total,
        keep_alive,
    }
}

/// The whole answer the prototype sends for a request it refuses, closing after it.
pub fn refusal(status: u16) -> Vec<u8> {
    let reason = match status {
        400 => "Bad Request",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    };
    format!("HTTP/1.1 {status} {reason}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
        .into_bytes()
}

fn line(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// A length of plain digits, as the fast path reads one.
fn digits(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| {
        n.checked_mul(10)?
            .checked_add(u64::from(b.is_ascii_digit().then(|| b - b'0')?))
    })
}

fn list_tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|t| !t.is_empty())
}

/// The gateway's hop-by-hop list (`proxy::headers::HOP_BY_HOP_NAMES`).
fn is_hop_by_hop(name: &[u8]) -> bool {
    [
        "connection",
        "proxy-connection",
        "keep-alive",
        "te",
        "transfer-encoding",
        "upgrade",
        "proxy-authorization",
        "proxy-authenticate",
        "trailer",
    ]
    .iter()
    .any(|h| name.eq_ignore_ascii_case(h.as_bytes()))
}

/// A line an untrusted client could claim another address, scheme or host with.
fn is_forwarding_claim(name: &[u8]) -> bool {
    let prefix = b"x-forwarded-";
    name.get(..prefix.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(prefix))
        || name.eq_ignore_ascii_case(b"forwarded")
        || name.eq_ignore_ascii_case(b"x-real-ip")
}

/// `Forwarded`'s host: a token as it is, else a quoted-string (RFC 9110 §5.6.4).
fn push_quoted(out: &mut Vec<u8>, value: &str) {
    if !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    {
        out.extend_from_slice(value.as_bytes());
        return;
    }
    out.push(b'"');
    for b in value.bytes() {
        if b == b'"' || b == b'\\' {
            out.push(b'\\');
        }
        out.push(b);
    }
    out.push(b'"');
}

fn is_plain_origin_form(target: &str) -> bool {
    target.starts_with('/')
        && target.len() <= 8 * 1024
        && target
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b))
}

/// The fast path's plain host: letters, digits and `-._~:[]`, not empty, at most one `:`
/// outside brackets (a simpler check than the gateway's `headers::is_host`, enough to keep
/// what the forwarding headers write clean).
fn is_plain_host(value: &[u8]) -> bool {
    !value.is_empty()
        && value
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"-._~:[]".contains(&b))
        && (value.starts_with(b"[") || value.iter().filter(|&&b| b == b':').count() <= 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer() -> Peer {
        Peer::new("127.0.0.1".parse().unwrap())
    }

    #[test]
    fn the_upstream_gets_the_fast_path_s_head() {
        // The gateway's own case (request.rs), for a plain-HTTP client.
        let head = b"GET /p HTTP/1.1\r\nHost: a.example\r\nConnection: keep-alive\r\nKeep-Alive: 5\r\nX-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\nVia: 1.1 edge\r\nAccept: */*\r\n\r\n";
        let mut out = Vec::new();
        let peer = Peer::new("10.0.0.9".parse().unwrap());
        assert_eq!(
            request(head, &peer, &mut out),
            Request::Ready {
                len: head.len(),
                close: false
            }
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET /p HTTP/1.1\r\nHost: a.example\r\nVia: 1.1 edge\r\nAccept: */*\r\n\
             x-forwarded-for: 10.0.0.9\r\nx-forwarded-proto: http\r\n\
             x-forwarded-host: a.example\r\nx-real-ip: 10.0.0.9\r\n\
             forwarded: for=10.0.0.9;proto=http;host=a.example\r\nvia: 1.1 leafgate\r\n\r\n"
        );
    }

    #[test]
    fn a_body_waits_until_it_is_whole() {
        let head = b"POST / HTTP/1.1\r\nHost: a:80\r\nContent-Length: 5\r\n\r\nhel";
        let mut out = Vec::new();
        assert_eq!(request(head, &peer(), &mut out), Request::Partial);
        let whole = [&head[..], b"lo", b"GET"].concat();
        assert_eq!(
            request(&whole, &peer(), &mut out),
            Request::Ready {
                len: head.len() + 2,
                close: false
            }
        );
        assert!(out.ends_with(
            b"forwarded: for=127.0.0.1;proto=http;host=\"a:80\"\r\nvia: 1.1 leafgate\r\n\r\nhello"
        ));
    }

    #[test]
    fn what_the_fast_path_leaves_to_hyper_is_refused() {
        let cases: &[(&[u8], u16)] = &[
            (b"GET / HTTP/1.0\r\nHost: a\r\n\r\n", 505),
            (b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n", 501),
            (b"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400),
            (
                b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n",
                400,
            ),
            (
                b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
                400,
            ),
            (
                b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n",
                400,
            ),
            (
                b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n",
                413,
            ),
            (
                b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
                501,
            ),
            (
                b"GET / HTTP/1.1\r\nHost: a\r\nConnection: x-secret\r\n\r\n",
                501,
            ),
            (b"GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400),
            (b"\x00\x01\x02 garbage\r\n\r\n", 400),
        ];
        for (head, status) in cases {
            let mut out = Vec::new();
            assert_eq!(
                request(head, &peer(), &mut out),
                Request::Refused(*status),
                "{:?}",
                String::from_utf8_lossy(head)
            );
            assert!(out.is_empty(), "nothing goes upstream");
        }
        let long = [&b"GET / HTTP/1.1\r\nX: "[..], &[b'a'; MAX_HEAD]].concat();
        assert_eq!(
            request(&long, &peer(), &mut Vec::new()),
            Request::Refused(431)
        );
    }

    #[test]
    fn the_client_gets_the_answer_with_via_and_without_hop_by_hop_lines() {
        let up = b"HTTP/1.1 200 OK\r\nDate: x\r\nKeep-Alive: timeout=5\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nabcHTTP";
        let mut out = Vec::new();
        assert_eq!(
            answer(up, false, &mut out),
            Answer::Ready {
                len: up.len() - 4,
                keep_alive: true
            }
        );
        assert_eq!(
            String::from_utf8(out.clone()).unwrap(),
            "HTTP/1.1 200 OK\r\nDate: x\r\nContent-Length: 3\r\nvia: 1.1 leafgate\r\n\r\nabc"
        );
        assert_eq!(
            answer(&up[..up.len() - 6], false, &mut out),
            Answer::Partial
        );
        let closing = b"HTTP/1.1 204 No Content\r\nConnection: close\r\nDate: x\r\n\r\n";
        assert_eq!(
            answer(closing, true, &mut out),
            Answer::Ready {
                len: closing.len(),
                keep_alive: false
            }
        );
        assert!(out.ends_with(b"via: 1.1 leafgate\r\nconnection: close\r\n\r\n"));
        for bad in [
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"nonsense\r\n\r\n",
        ] {
            assert!(matches!(answer(bad, false, &mut out), Answer::Bad(_)));
        }
    }
}
