//! A client's request head, read where it lies in the connection's buffer, and the head
//! the backend gets, written in one piece.
//!
//! [`parse`] uses `httparse` as hyper does (same parser, same 100-header limit), then keeps
//! to the fast path only what it can carry exactly as hyper's path would: an HTTP/1.1
//! request in origin form, one valid `Host`, no body or one sized by a single plain
//! `Content-Length` of at most `headers::MAX_BODY`, no protocol switch, no `Expect`, no `Transfer-Encoding` or `TE`, a
//! `Connection` that says only `keep-alive` or `close`, and, from a trusted proxy, no
//! forwarding headers to append to. Everything else is [`Read::Other`]: the connection goes
//! to hyper with the bytes unread, and hyper answers it (its 400s and 431s included).
//!
//! [`Head::write_upstream`] writes what `proxy::prepare` makes of such a request: the same
//! method and target, the client's headers but hop-by-hop ones (and, from an untrusted
//! peer, the forwarding claims), then leafgate's forwarding headers and `Via`.

use super::lines::{Edit, digits, line};
use crate::proxy::headers::{self, ClientSide};

/// Header lines a request may have; more is hyper's 431 (the same limit).
pub const MAX_HEADERS: usize = 100;

/// The longest request target the fast path takes; longer ones (up to hyper's 64 KiB
/// limit, past it a 414) go to hyper.
const MAX_TARGET: usize = 8 * 1024;

/// What the bytes at the start of a connection's buffer are.
pub enum Read<'h, 'b> {
    /// The head is not complete yet.
    Partial,
    /// A request the fast path carries.
    Fast(Head<'h, 'b>),
    /// Anything else, and why: hyper's path answers it.
    Other(&'static str),
}

/// A request head the fast path carries, borrowed from the buffer it was read in.
pub struct Head<'h, 'b> {
    /// Bytes the head takes in the buffer; the body (if any) follows.
    pub len: usize,
    pub method: &'b str,
    /// The request target, in origin form (`/path?query`).
    pub target: &'b str,
    /// The one `Host`, as the client sent it.
    pub host: &'b str,
    /// Body bytes that follow the head.
    pub content_length: u64,
    /// The client asked to close the connection after this exchange.
    pub close: bool,
    headers: &'h [httparse::Header<'b>],
}

/// Reads the request head at the start of `buf` into `slots`.
pub fn parse<'h, 'b>(
    buf: &'b [u8],
    slots: &'h mut [httparse::Header<'b>; MAX_HEADERS],
) -> Read<'h, 'b> {
    let mut req = httparse::Request::new(slots);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Read::Partial,
        Err(_) => return Read::Other("a head httparse refuses"),
    };
    if req.version != Some(1) {
        return Read::Other("not HTTP/1.1");
    }
    let method = req.method.unwrap_or("");
    if !matches!(
        method,
        "GET" | "POST" | "PUT" | "DELETE" | "PATCH" | "OPTIONS"
    ) {
        return Read::Other("a method with special framing (HEAD, CONNECT) or an extension");
    }
    let target = req.path.unwrap_or("");
    if !is_plain_origin_form(target) {
        return Read::Other("a target not in plain origin form");
    }
    let headers: &'h [httparse::Header<'b>] = req.headers;
    let mut host = None;
    let mut content_length = None;
    let mut close = false;
    for h in headers {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"host") {
            if host.is_some() || !is_plain_host(h.value) {
                return Read::Other("a second or unusual Host");
            }
            host = std::str::from_utf8(h.value).ok();
        } else if name.eq_ignore_ascii_case(b"content-length") {
            if content_length.is_some() {
                return Read::Other("a repeated Content-Length");
            }
            match digits(h.value) {
                Some(n) if n <= headers::MAX_BODY => content_length = Some(n),
                // hyper's 431 or the front's 413.
                Some(_) => return Read::Other("a Content-Length past the largest body"),
                None => return Read::Other("an unusual Content-Length"),
            }
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in headers::list_tokens(h.value) {
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if !token.eq_ignore_ascii_case(b"keep-alive") {
                    return Read::Other("a Connection naming other headers or an upgrade");
                }
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding")
            || name.eq_ignore_ascii_case(b"te")
            || name.eq_ignore_ascii_case(b"upgrade")
            || name.eq_ignore_ascii_case(b"expect")
        {
            return Read::Other("Transfer-Encoding, TE, Upgrade or Expect");
        }
    }
    let Some(host) = host else {
        return Read::Other("no Host");
    };
    Read::Fast(Head {
        len,
        method,
        target,
        host,
        content_length: content_length.unwrap_or(0),
        close,
        headers,
    })
}

impl Head<'_, '_> {
    /// The first value of the header `name` (lowercase), for the access log.
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    }

    /// How many lines of the header `name` the head has, and the first's value.
    pub fn lines(&self, name: &str) -> (usize, Option<&[u8]>) {
        let mut lines = self
            .headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case(name));
        let first = lines.next().map(|h| h.value);
        (usize::from(first.is_some()) + lines.count(), first)
    }

    /// Whether this request can go as it is for a peer `trusted` or not: a trusted proxy's
    /// forwarding headers are appended to, which hyper's path does.
    pub fn fits(&self, trusted: bool) -> bool {
        !trusted
            || !self
                .headers
                .iter()
                .any(|h| headers::is_forwarding_claim(h.name.as_bytes()))
    }

    /// Writes the head the backend gets into `out` (cleared first), as `proxy::prepare`
    /// readies a request for an untrusted `client` (see [`Head::fits`]), with `extras`.
    /// `client.host` is the host sent: the client's, or a rewrite's, which then replaces
    /// the client's `Host` line (as `prepare` makes it the one `Host`).
    pub fn write_upstream(&self, out: &mut Vec<u8>, client: &ClientSide<'_>, extras: &Extras<'_>) {
        let Extras {
            id,
            traceparent,
            target,
            edit,
        } = *extras;
        let host = client.host.unwrap_or(self.host);
        let rehost = host != self.host;
        out.clear();
        out.extend_from_slice(self.method.as_bytes());
        out.push(b' ');
        match target {
            Some(pieces) => pieces.iter().for_each(|p| out.extend_from_slice(p)),
            None => out.extend_from_slice(self.target.as_bytes()),
        }
        out.extend_from_slice(b" HTTP/1.1\r\n");
        for h in self.headers {
            let name = h.name.as_bytes();
            // `Connection` names only `keep-alive` (itself hop-by-hop) or `close`.
            if headers::is_hop_by_hop(name)
                || headers::is_forwarding_claim(name)
                || (self.close && name.eq_ignore_ascii_case(b"close"))
                || id.is_some_and(|(id, _)| name.eq_ignore_ascii_case(id.as_bytes()))
                || (traceparent.is_some()
                    && (name.eq_ignore_ascii_case(b"traceparent")
                        || name.eq_ignore_ascii_case(b"tracestate")))
                || edit.is_some_and(|e| e.drops(name))
            {
                continue;
            }
            if rehost && name.eq_ignore_ascii_case(b"host") {
                line(out, b"host", host.as_bytes());
                continue;
            }
            line(out, name, h.value);
        }
        if let Some(edit) = edit {
            out.extend_from_slice(edit.lines());
        }
        if let Some((name, value)) = id {
            line(out, name.as_bytes(), value);
        }
        if let Some(value) = traceparent {
            line(out, b"traceparent", value);
        }
        line(out, b"x-forwarded-for", client.peer.text());
        line(out, b"x-forwarded-proto", client.proto().as_bytes());
        line(out, b"x-forwarded-host", host.as_bytes());
        line(out, b"x-real-ip", client.peer.text());
        out.extend_from_slice(b"forwarded: ");
        headers::push_forwarded_element(out, client);
        out.extend_from_slice(b"\r\nvia: 1.1 leafgate\r\n\r\n");
    }
}

/// What the backend's head carries besides the client's request, each `None` for none.
#[derive(Clone, Copy, Default)]
pub struct Extras<'a> {
    /// A lowercase header name and the request's ID: the client's lines of that header
    /// are left out and the ID's written instead.
    pub id: Option<(&'a str, &'a [u8])>,
    /// A new trace's: the client's `traceparent` and `tracestate` are left out and it is
    /// written.
    pub traceparent: Option<&'a [u8]>,
    /// The request target to send in place of the client's, in pieces written one after
    /// the other (a rewritten path, then the query as it came).
    pub target: Option<[&'a [u8]; 3]>,
    /// A header modifier's edit of the client's lines.
    pub edit: Option<&'a Edit>,
}

/// What the bytes at the start of a node-API connection's buffer are (see [`upgrade`]).
// Made once per connection and matched at once: boxing the parts would cost an allocation
// on an exec's path for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Upgrade {
    /// The head is not complete yet.
    Partial,
    /// A request asking to switch protocols, as hyper's server would hand it to a service,
    /// and the bytes its head takes.
    Taken(http::request::Parts, usize),
    /// Anything else, and why: hyper's path answers it.
    Other(&'static str),
}

/// Reads, at the start of `buf`, an HTTP/1.1 request that asks to switch protocols and has
/// no body: `GET` or `POST` (an exec, attach or port-forward over SPDY or WebSocket), a
/// target in plain origin form, an `Upgrade` line (what makes hyper's server ready to
/// hand the connection over), no `Content-Length`, `Transfer-Encoding` or `Expect`. Its
/// parts are what hyper's server makes of the same head: the same parser and header limit,
/// the target parsed as hyper parses it, names lowercased, lines kept in order.
pub fn upgrade(buf: &[u8]) -> Upgrade {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut slots);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Upgrade::Partial,
        Err(_) => return Upgrade::Other("a head httparse refuses"),
    };
    if req.version != Some(1) {
        return Upgrade::Other("not HTTP/1.1");
    }
    let method = match req.method {
        Some("GET") => http::Method::GET,
        Some("POST") => http::Method::POST,
        _ => return Upgrade::Other("a method other than GET or POST"),
    };
    let target = req.path.unwrap_or("");
    if !is_plain_origin_form(target) {
        return Upgrade::Other("a target not in plain origin form");
    }
    let Ok(uri) = target.parse::<http::Uri>() else {
        return Upgrade::Other("a target http does not parse");
    };
    let mut headers = http::HeaderMap::with_capacity(req.headers.len());
    let mut upgrade = false;
    for h in req.headers.iter() {
        let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(h.name.as_bytes()),
            http::HeaderValue::from_bytes(h.value),
        ) else {
            return Upgrade::Other("a header line http does not take");
        };
        if name == http::header::CONTENT_LENGTH
            || name == http::header::TRANSFER_ENCODING
            || name == http::header::EXPECT
        {
            return Upgrade::Other("a body or an expectation");
        }
        upgrade |= name == http::header::UPGRADE;
        headers.append(name, value);
    }
    if !upgrade {
        return Upgrade::Other("no Upgrade");
    }
    // What RFC 9112 refuses (its Host lines, its codings) is refused in the front, on
    // hyper's path, so both ways of reading an upgrade answer it alike.
    if headers::refused(&headers, http::Version::HTTP_11, None).is_some() {
        return Upgrade::Other("a head RFC 9112 refuses");
    }
    let (mut parts, ()) = http::Request::new(()).into_parts();
    parts.method = method;
    parts.uri = uri;
    parts.version = http::Version::HTTP_11;
    parts.headers = headers;
    Upgrade::Taken(parts, len)
}

/// An origin-form target whose every byte `http::Uri` and the router take as they are:
/// RFC 3986's path and query characters (unreserved, sub-delims, `:@/?%`).
fn is_plain_origin_form(target: &str) -> bool {
    target.starts_with('/')
        && target.len() <= MAX_TARGET
        && target
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?%".contains(&b))
}

/// A host the router and the forwarding headers take as they are: a valid `Host` (a name
/// or address and an optional port, `headers::is_host`; any other is the front's 400 on
/// hyper's path) of letters, digits and `-._~:[]` only.
fn is_plain_host(value: &[u8]) -> bool {
    value
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || b"-._~:[]".contains(&b))
        && headers::is_host(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::headers::Peer;

    fn read(head: &[u8]) -> Result<(usize, String, u64, bool), &'static str> {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        match parse(head, &mut slots) {
            Read::Partial => Err("partial"),
            Read::Other(why) => Err(why),
            Read::Fast(h) => Ok((h.len, h.host.to_string(), h.content_length, h.close)),
        }
    }

    #[test]
    fn a_plain_request_is_read_in_place() {
        let head =
            b"POST /a?b=1 HTTP/1.1\r\nHost: a.example:8080\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(
            read(head),
            Ok((head.len() - 5, "a.example:8080".into(), 5, false))
        );
        assert_eq!(read(b"GET / HTTP/1.1\r\nHost: a\r\n"), Err("partial"));
        let close = b"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close\r\n\r\n";
        assert_eq!(read(close).map(|r| r.3), Ok(true));
    }

    #[test]
    fn anything_unusual_goes_to_hyper() {
        let others: &[&[u8]] = &[
            b"GET / HTTP/1.0\r\nHost: a\r\n\r\n",
            b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET /\"x\" HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET / HTTP/1.1\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 1\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551615\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9007199254740993\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: \r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: u@a\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a:b:c\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: [[\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: x-secret\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nTE: trailers\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: a\r\nX-Folded: a\r\n b\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
            b"GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n",
        ];
        for head in others {
            assert!(
                read(head).is_err(),
                "{:?} should go to hyper",
                String::from_utf8_lossy(head)
            );
        }
    }

    #[test]
    fn too_many_headers_go_to_hyper() {
        let mut head = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
        for i in 0..MAX_HEADERS {
            head.extend_from_slice(format!("x-{i}: {i}\r\n").as_bytes());
        }
        head.extend_from_slice(b"\r\n");
        assert!(read(&head).is_err());
    }

    #[test]
    fn the_backend_reads_the_client_s_headers_with_leafgate_s_forwarding() {
        let head = b"GET /p HTTP/1.1\r\nHost: a.example\r\nConnection: keep-alive\r\nKeep-Alive: 5\r\nX-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\nVia: 1.1 edge\r\nAccept: */*\r\n\r\n";
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let Read::Fast(h) = parse(head, &mut slots) else {
            panic!("fast")
        };
        assert!(h.fits(false));
        assert!(
            !h.fits(true),
            "a trusted proxy's claims are appended to by hyper's path"
        );
        let peer = Peer::new("10.0.0.9".parse().unwrap());
        let client = ClientSide {
            peer: &peer,
            tls: true,
            host: Some("a.example"),
            trusted: false,
        };
        let mut out = Vec::new();
        h.write_upstream(&mut out, &client, &Extras::default());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET /p HTTP/1.1\r\nHost: a.example\r\nVia: 1.1 edge\r\nAccept: */*\r\n\
             x-forwarded-for: 10.0.0.9\r\nx-forwarded-proto: https\r\n\
             x-forwarded-host: a.example\r\nx-real-ip: 10.0.0.9\r\n\
             forwarded: for=10.0.0.9;proto=https;host=a.example\r\nvia: 1.1 leafgate\r\n\r\n"
        );
    }

    #[test]
    fn the_request_s_id_replaces_every_line_of_the_client_s() {
        let head = b"GET /p HTTP/1.1\r\nHost: a\r\nX-Request-Id: one\r\nx-request-id: two\r\n\r\n";
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let Read::Fast(h) = parse(head, &mut slots) else {
            panic!("fast")
        };
        assert_eq!(h.lines("x-request-id"), (2, Some(&b"one"[..])));
        assert_eq!(h.lines("x-other"), (0, None));
        let peer = Peer::new("10.0.0.9".parse().unwrap());
        let client = ClientSide {
            peer: &peer,
            tls: false,
            host: Some("a"),
            trusted: false,
        };
        let mut out = Vec::new();
        let id = Some(("x-request-id", &b"0123abcd"[..]));
        h.write_upstream(
            &mut out,
            &client,
            &Extras {
                id,
                ..Extras::default()
            },
        );
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("one") && !text.contains("two"), "{text}");
        assert_eq!(
            text.matches("x-request-id: 0123abcd\r\n").count(),
            1,
            "{text}"
        );
    }

    /// A rewrite's target and host and a header modifier's edit, as `proxy::prepare` and
    /// `Choice::apply` make them on hyper's path: the new target, the rewritten host as
    /// the one `Host` and in the forwarding headers, the edited lines out and its own in.
    #[test]
    fn a_rewrite_and_an_edit_go_into_the_backend_s_head() {
        let head = b"GET /prefix/one/two?q=1 HTTP/1.1\r\nHost: a.example\r\nX-Set: old\r\nX-Gone: g\r\nAccept: */*\r\n\r\n";
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let Read::Fast(h) = parse(head, &mut slots) else {
            panic!("fast")
        };
        let n = |s: &str| http::HeaderName::from_bytes(s.as_bytes()).unwrap();
        let edit = Edit::new(
            &[(n("x-set"), http::HeaderValue::from_static("new"))],
            &[],
            &[n("x-gone")],
        );
        let peer = Peer::new("10.0.0.9".parse().unwrap());
        let client = ClientSide {
            peer: &peer,
            tls: false,
            host: Some("b.example"),
            trusted: false,
        };
        let extras = Extras {
            target: Some([b"/one", b"/two", b"?q=1"]),
            edit: Some(&edit),
            ..Extras::default()
        };
        let mut out = Vec::new();
        h.write_upstream(&mut out, &client, &extras);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET /one/two?q=1 HTTP/1.1\r\nhost: b.example\r\nAccept: */*\r\nx-set: new\r\n\
             x-forwarded-for: 10.0.0.9\r\nx-forwarded-proto: http\r\n\
             x-forwarded-host: b.example\r\nx-real-ip: 10.0.0.9\r\n\
             forwarded: for=10.0.0.9;proto=http;host=b.example\r\nvia: 1.1 leafgate\r\n\r\n"
        );
    }
}
