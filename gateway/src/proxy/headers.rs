//! Header rules for forwarding: hop-by-hop removal (RFC 9110 §7.6.1), the upgrade test
//! (RFC 9110 §7.8), and the `X-Forwarded-*` / `Via` headers a proxy adds.
//!
//! Pure functions over `HeaderMap`s; no I/O and no knowledge of routes.

use std::net::IpAddr;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1, plus the
/// non-standard `Proxy-Connection` and `Keep-Alive` every proxy strips).
/// RFC 9110's hop-by-hop fields plus the ones RFC 2616 listed: credentials meant for a
/// proxy (`Proxy-Authorization`, `Proxy-Authenticate`) end at leafgate, and `Trailer`
/// announces trailers of this hop's framing.
/// A `static`, not a `const`: a `const` array of `HeaderName`s is built and dropped again
/// at every use, and this one is read for every header line of every message.
static HOP_BY_HOP: [HeaderName; 9] = [
    header::CONNECTION,
    HeaderName::from_static("proxy-connection"),
    HeaderName::from_static("keep-alive"),
    header::TE,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::PROXY_AUTHORIZATION,
    header::PROXY_AUTHENTICATE,
    header::TRAILER,
];

const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
const X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");

/// The comma-separated tokens of every `Connection` header line, lowercased.
fn connection_tokens(headers: &HeaderMap) -> impl Iterator<Item = String> + '_ {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
}

/// True when the message asks to switch protocols: some `Connection` token is `upgrade`
/// (in any case, in a list or on a repeated line) and an `Upgrade` header is present.
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE) && connection_tokens(headers).any(|t| t == "upgrade")
}

/// Removes hop-by-hop headers and those the `Connection` header names. With
/// `keep_upgrade`, `Connection` and `Upgrade` stay untouched (the backend must see the
/// upgrade request as the client sent it) while the other hop-by-hop headers still go.
/// `TE: trailers` survives on requests: it is the one TE value meant end to end (gRPC).
pub fn strip_hop_by_hop(headers: &mut HeaderMap, keep_upgrade: bool) {
    // Most messages carry none of these, `Connection` included (so it names nothing
    // either): one pass over the names present is cheaper than hashing all nine for
    // removals that find nothing.
    if !headers.keys().any(|k| HOP_BY_HOP.contains(k)) {
        return;
    }
    let named: Vec<String> = connection_tokens(headers).collect();
    for name in named {
        if keep_upgrade && name == "upgrade" {
            continue;
        }
        if let Ok(name) = HeaderName::from_bytes(name.as_bytes()) {
            if name != header::TE {
                headers.remove(name);
            }
        }
    }
    let te_trailers = headers
        .get_all(header::TE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("trailers"));
    for name in &HOP_BY_HOP {
        if keep_upgrade && (name == header::CONNECTION || name == header::UPGRADE) {
            continue;
        }
        headers.remove(name);
    }
    if te_trailers {
        headers.insert(header::TE, HeaderValue::from_static("trailers"));
    }
}

/// A connection's peer as the forwarding headers write it, rendered once per connection:
/// every request on a keep-alive connection comes from the same address.
pub struct Peer {
    ip: IpAddr,
    /// `X-Forwarded-For` and `X-Real-IP`: the address as text.
    text: HeaderValue,
    /// `Forwarded`'s node (RFC 7239 §6): IPv6 addresses are bracketed, and so quoted.
    node: Box<str>,
}

impl Peer {
    /// An IPv4 peer on a dual-stack socket (`::ffff:a.b.c.d`) is written as IPv4.
    pub fn new(ip: IpAddr) -> Peer {
        let ip = ip.to_canonical();
        let node = match ip {
            IpAddr::V4(a) => a.to_string(),
            IpAddr::V6(a) => format!("\"[{a}]\""),
        };
        let text =
            HeaderValue::try_from(ip.to_string()).expect("an IP address is a valid header value");
        Peer {
            ip,
            text,
            node: node.into(),
        }
    }

    pub fn ip(&self) -> IpAddr {
        self.ip
    }

    /// The address as `X-Forwarded-For` and `X-Real-IP` write it.
    pub fn text(&self) -> &[u8] {
        self.text.as_bytes()
    }
}

/// What leafgate knows about the client side of a request.
pub struct ClientSide<'a> {
    pub peer: &'a Peer,
    pub tls: bool,
    /// The host the client asked for, as it sent it (with port if any).
    pub host: Option<&'a str>,
    /// The peer is one of the listener's `trusted_proxies`: the forwarding headers it sent
    /// are believed, kept and appended to.
    pub trusted: bool,
}

/// Sets the forwarding headers a backend reads to learn who the client is.
///
/// From a trusted proxy, `X-Forwarded-For` and `Forwarded` get the peer appended and the
/// other `X-Forwarded-*` and `X-Real-IP` are kept (set only when missing). From anyone
/// else every one of them is a claim leafgate cannot check, so all are dropped and
/// replaced by leafgate's own: a client cannot make a backend believe another address.
/// `Via` is appended either way.
pub fn add_forwarded(headers: &mut HeaderMap, client: &ClientSide<'_>, version: http::Version) {
    let peer = client.peer;
    let proto = client.proto();
    // Room for the six headers below at once: a parsed request's map is sized to the
    // headers it came with, and growing it one insert at a time rehashes it twice.
    headers.reserve(6);
    if !client.trusted {
        let claimed: Vec<HeaderName> = headers
            .keys()
            .filter(|k| k.as_str().starts_with("x-forwarded-"))
            .cloned()
            .collect();
        for name in claimed {
            headers.remove(name);
        }
        headers.remove(header::FORWARDED);
        headers.remove(X_REAL_IP);
    }

    // Only a trusted proxy's own values are left to append to.
    let prior = |headers: &HeaderMap, name: &HeaderName| {
        if client.trusted {
            joined(headers, name)
        } else {
            None
        }
    };
    match prior(headers, &X_FORWARDED_FOR) {
        Some(prior) => set(headers, X_FORWARDED_FOR, &format!("{prior}, {}", peer.ip)),
        None => {
            headers.insert(X_FORWARDED_FOR, peer.text.clone());
        }
    }
    if !headers.contains_key(X_FORWARDED_PROTO) {
        headers.insert(X_FORWARDED_PROTO, HeaderValue::from_static(proto));
    }
    if !headers.contains_key(X_FORWARDED_HOST) {
        if let Some(host) = client.host {
            set(headers, X_FORWARDED_HOST, host);
        }
    }
    if !headers.contains_key(X_REAL_IP) {
        headers.insert(X_REAL_IP, peer.text.clone());
    }

    let mut element = Vec::with_capacity(64);
    push_forwarded_element(&mut element, client);
    let forwarded = match prior(headers, &header::FORWARDED) {
        Some(prior) => [prior.as_bytes(), b", ", &element].concat(),
        None => element,
    };
    match HeaderValue::from_bytes(&forwarded) {
        Ok(v) => {
            headers.insert(header::FORWARDED, v);
        }
        Err(_) => {
            headers.remove(header::FORWARDED);
        }
    }
    add_via(headers, version);
}

/// Appends leafgate's own `Forwarded` element for `client` (RFC 7239 §4):
/// `for=<node>;proto=<http|https>[;host=<host>]`.
pub fn push_forwarded_element(out: &mut Vec<u8>, client: &ClientSide<'_>) {
    out.extend_from_slice(b"for=");
    out.extend_from_slice(client.peer.node.as_bytes());
    out.extend_from_slice(b";proto=");
    out.extend_from_slice(client.proto().as_bytes());
    if let Some(host) = client.host {
        out.extend_from_slice(b";host=");
        push_quoted(out, host);
    }
}

impl ClientSide<'_> {
    /// The scheme the client spoke, as `X-Forwarded-Proto` and `Forwarded` write it.
    pub fn proto(&self) -> &'static str {
        if self.tls { "https" } else { "http" }
    }
}

/// True for a header that describes one connection, not the message (see [`HOP_BY_HOP`]),
/// by its name as it came on the wire, in any case.
pub fn is_hop_by_hop(name: &[u8]) -> bool {
    HOP_BY_HOP_NAMES
        .iter()
        .any(|h| h.len() == name.len() && h.eq_ignore_ascii_case(name))
}

/// [`HOP_BY_HOP`] as bytes, for the fast path's check of each header line (a test keeps
/// the two lists the same).
const HOP_BY_HOP_NAMES: [&[u8]; 9] = [
    b"connection",
    b"proxy-connection",
    b"keep-alive",
    b"te",
    b"transfer-encoding",
    b"upgrade",
    b"proxy-authorization",
    b"proxy-authenticate",
    b"trailer",
];

/// True for a header a client could use to claim another address, scheme or host
/// (`X-Forwarded-*`, `Forwarded`, `X-Real-IP`): [`add_forwarded`] replaces them all for a
/// peer that is not trusted. By its name as it came on the wire, in any case.
pub fn is_forwarding_claim(name: &[u8]) -> bool {
    let prefix = b"x-forwarded-";
    (name.len() >= prefix.len() && name[..prefix.len()].eq_ignore_ascii_case(prefix))
        || name.eq_ignore_ascii_case(b"forwarded")
        || name.eq_ignore_ascii_case(b"x-real-ip")
}

/// The comma-separated tokens of a list header's value, trimmed of spaces and tabs, empty
/// ones left out (RFC 9110 §5.6.1).
pub fn list_tokens(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(|t| t.trim_ascii())
        .filter(|t| !t.is_empty())
}

/// The largest request body length leafgate takes: 2^53, the largest integer every
/// client and backend library represents exactly (RFC 9110 §8.6 lets a recipient refuse a
/// length it cannot hold). A longer `Content-Length` gets 413 before any of the body is
/// read, on both paths (`listener::front`, `proxy::fast::request`); hyper itself answers
/// 431 to one past `u64::MAX - 2`, and the fast path leaves those to it.
pub const MAX_BODY: u64 = 1 << 53;

/// Whether a request's `Host` value is valid (RFC 9112 §3.2, RFC 3986 §3.2.2): `uri-host
/// [ ":" port ]`, where the host is a bracketed IP literal or a registered name (which
/// covers IPv4 addresses) of unreserved characters, percent escapes and sub-delimiters.
/// No userinfo (`user@host`), no spaces; empty is not valid here (the caller decides
/// whether an empty `Host` is allowed).
pub fn is_host(value: &[u8]) -> bool {
    let (host, port) = if value.first() == Some(&b'[') {
        let Some(end) = value.iter().position(|&b| b == b']') else {
            return false;
        };
        let literal = &value[1..end];
        let ok = !literal.is_empty()
            && literal
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b":.-_~!$&'()*+,;=".contains(&b));
        if !ok {
            return false;
        }
        (&value[..=end], &value[end + 1..])
    } else {
        match value.iter().position(|&b| b == b':') {
            Some(at) => (&value[..at], &value[at..]),
            None => (value, &b""[..]),
        }
    };
    let name_ok = !host.is_empty()
        && (host[0] == b'['
            || host
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=".contains(&b)));
    let port_ok = match port.split_first() {
        None => true,
        Some((b':', digits)) => digits.iter().all(u8::is_ascii_digit),
        Some(_) => false,
    };
    name_ok && port_ok
}

/// What RFC 9112 makes a server refuse in an HTTP/1 request that hyper's server hands on
/// (hyper answers the rest itself: a malformed head, a `Transfer-Encoding` whose last
/// coding is not `chunked`, lengths that differ), and the status it gets:
/// - more than one `Host` line, an invalid `Host`, or (HTTP/1.1) none or an empty one:
///   400 (§3.2);
/// - a transfer coding other than one `chunked` (`gzip, chunked`, `chunked, chunked`, on
///   one line or several): 501 (§6.1: leafgate decodes only `chunked`, and would forward
///   a body still coded with nothing saying so);
/// - a `Content-Length` past [`MAX_BODY`]: 413 (RFC 9110 §8.6).
///
/// The fast path takes none of these (`proxy::fast::request` hands them to hyper), so
/// both paths answer them here, alike.
pub fn refused(
    headers: &HeaderMap,
    version: http::Version,
    length: Option<u64>,
) -> Option<Refusal> {
    if version > http::Version::HTTP_11 {
        return length
            .is_some_and(|n| n > MAX_BODY)
            .then_some(Refusal::TooLarge);
    }
    let mut hosts = headers.get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (Some(_), Some(_)) => return Some(Refusal::Host("more than one Host line")),
        (None, _) if version == http::Version::HTTP_11 => {
            return Some(Refusal::Host("no Host in an HTTP/1.1 request"));
        }
        (Some(h), None) if h.is_empty() && version == http::Version::HTTP_11 => {
            return Some(Refusal::Host("an empty Host in an HTTP/1.1 request"));
        }
        (Some(h), None) if !h.is_empty() && !is_host(h.as_bytes()) => {
            return Some(Refusal::Host("a Host that is not a host and port"));
        }
        _ => {}
    }
    let mut codings = headers
        .get_all(header::TRANSFER_ENCODING)
        .iter()
        .flat_map(|v| list_tokens(v.as_bytes()));
    if let Some(first) = codings.next() {
        let only_chunked = first.eq_ignore_ascii_case(b"chunked") && codings.next().is_none();
        if !only_chunked {
            return Some(Refusal::Coding);
        }
    }
    length
        .is_some_and(|n| n > MAX_BODY)
        .then_some(Refusal::TooLarge)
}

/// Why [`refused`] refuses a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 400: what is wrong with `Host`.
    Host(&'static str),
    /// 501: a transfer coding leafgate does not decode.
    Coding,
    /// 413: a length past [`MAX_BODY`].
    TooLarge,
}

impl Refusal {
    pub fn status(self) -> http::StatusCode {
        match self {
            Refusal::Host(_) => http::StatusCode::BAD_REQUEST,
            Refusal::Coding => http::StatusCode::NOT_IMPLEMENTED,
            Refusal::TooLarge => http::StatusCode::PAYLOAD_TOO_LARGE,
        }
    }

    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Host(why) => why,
            Refusal::Coding => "a transfer coding other than chunked",
            Refusal::TooLarge => "a Content-Length past the largest body leafgate takes (2^53)",
        }
    }
}

/// Every line of a list header joined into one value (RFC 9110 §5.3), or `None`.
fn joined(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
    let lines: Vec<&str> = headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .collect();
    (!lines.is_empty()).then(|| lines.join(", "))
}

/// Replaces `name` with `value`; a value that is not a valid header value (a host with
/// control characters) leaves the header out rather than failing the request.
fn set(headers: &mut HeaderMap, name: HeaderName, value: &str) {
    match HeaderValue::from_str(value) {
        Ok(v) => {
            headers.insert(name, v);
        }
        Err(_) => {
            headers.remove(name);
        }
    }
}

/// Appends a `Forwarded` value, as a token when it is one, else as a quoted-string (RFC 9110
/// §5.6.4).
fn push_quoted(out: &mut Vec<u8>, value: &str) {
    let token = !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if token {
        out.extend_from_slice(value.as_bytes());
        return;
    }
    out.reserve(value.len() + 2);
    out.push(b'"');
    for b in value.bytes() {
        if b == b'"' || b == b'\\' {
            out.push(b'\\');
        }
        out.push(b);
    }
    out.push(b'"');
}

/// Appends `<version> leafgate` to `Via` (RFC 9110 §7.6.3), on requests and responses.
pub fn add_via(headers: &mut HeaderMap, version: http::Version) {
    let me = match version {
        http::Version::HTTP_10 => "1.0 leafgate",
        http::Version::HTTP_2 => "2 leafgate",
        http::Version::HTTP_3 => "3 leafgate",
        _ => "1.1 leafgate",
    };
    headers.append(header::VIA, HeaderValue::from_static(me));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hop_by_hop_names_as_bytes_are_the_header_list() {
        let names: Vec<&[u8]> = HOP_BY_HOP.iter().map(|h| h.as_str().as_bytes()).collect();
        assert_eq!(names, HOP_BY_HOP_NAMES);
        assert!(is_hop_by_hop(b"Transfer-Encoding"));
        assert!(!is_hop_by_hop(b"transfer-encodin"));
        assert!(!is_hop_by_hop(b"x-te"));
    }

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn upgrade_needs_a_connection_token_and_an_upgrade_header() {
        assert!(is_upgrade(&map(&[
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "websocket")
        ])));
        assert!(is_upgrade(&map(&[
            ("connection", "keep-alive"),
            ("connection", "UPGRADE"),
            ("upgrade", "SPDY/3.1")
        ])));
        assert!(!is_upgrade(&map(&[
            ("connection", "upgraded"),
            ("upgrade", "websocket")
        ])));
        assert!(!is_upgrade(&map(&[("connection", "upgrade")])));
        assert!(!is_upgrade(&map(&[("upgrade", "websocket")])));
    }

    #[test]
    fn strips_hop_by_hop_and_connection_named_headers() {
        let mut h = map(&[
            ("connection", "close, x-secret"),
            ("x-secret", "1"),
            ("keep-alive", "timeout=5"),
            ("proxy-connection", "keep-alive"),
            ("te", "gzip, trailers"),
            ("transfer-encoding", "chunked"),
            ("x-end-to-end", "kept"),
        ]);
        strip_hop_by_hop(&mut h, false);
        let names: Vec<_> = h.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["x-end-to-end", "te"]);
        assert_eq!(h["te"], "trailers");
    }

    #[test]
    fn upgrade_requests_keep_connection_and_upgrade() {
        let mut h = map(&[
            ("connection", "Upgrade"),
            ("upgrade", "SPDY/3.1"),
            ("keep-alive", "1"),
            ("x-stream-protocol-version", "v4.channel.k8s.io"),
            ("x-stream-protocol-version", "v3.channel.k8s.io"),
        ]);
        strip_hop_by_hop(&mut h, true);
        assert_eq!(h["connection"], "Upgrade");
        assert_eq!(h["upgrade"], "SPDY/3.1");
        assert!(!h.contains_key("keep-alive"));
        assert_eq!(h.get_all("x-stream-protocol-version").iter().count(), 2);
    }

    fn spoofed() -> HeaderMap {
        map(&[
            ("x-forwarded-for", "203.0.113.7"),
            ("x-forwarded-for", "198.51.100.1"),
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "bank.example"),
            ("x-forwarded-port", "443"),
            ("forwarded", "for=203.0.113.7;proto=https"),
            ("x-real-ip", "203.0.113.7"),
        ])
    }

    fn client(peer: &Peer, trusted: bool) -> ClientSide<'_> {
        ClientSide {
            peer,
            tls: false,
            host: Some("a.example:8443"),
            trusted,
        }
    }

    #[test]
    fn a_trusted_proxy_s_forwarding_headers_are_kept_and_appended_to() {
        let mut h = spoofed();
        let peer = Peer::new("10.0.0.9".parse().unwrap());
        add_forwarded(&mut h, &client(&peer, true), http::Version::HTTP_11);
        assert_eq!(h["x-forwarded-for"], "203.0.113.7, 198.51.100.1, 10.0.0.9");
        assert_eq!(h["x-forwarded-proto"], "https", "the proxy terminated TLS");
        assert_eq!(h["x-forwarded-host"], "bank.example");
        assert_eq!(h["x-forwarded-port"], "443");
        assert_eq!(h["x-real-ip"], "203.0.113.7");
        assert_eq!(
            h["forwarded"],
            "for=203.0.113.7;proto=https, for=10.0.0.9;proto=http;host=\"a.example:8443\""
        );
        assert_eq!(h["via"], "1.1 leafgate");
    }

    #[test]
    fn an_untrusted_peer_s_forwarding_headers_are_replaced() {
        let mut h = spoofed();
        let peer = Peer::new("10.0.0.9".parse().unwrap());
        add_forwarded(&mut h, &client(&peer, false), http::Version::HTTP_2);
        assert_eq!(h.get_all("x-forwarded-for").iter().count(), 1);
        assert_eq!(h["x-forwarded-for"], "10.0.0.9");
        assert_eq!(h["x-forwarded-proto"], "http");
        assert_eq!(h["x-forwarded-host"], "a.example:8443");
        assert!(!h.contains_key("x-forwarded-port"));
        assert_eq!(h["x-real-ip"], "10.0.0.9");
        assert_eq!(
            h["forwarded"],
            "for=10.0.0.9;proto=http;host=\"a.example:8443\""
        );
        assert_eq!(h["via"], "2 leafgate");
    }

    #[test]
    fn forwarded_quotes_ipv6_nodes_and_maps_ipv4_peers_back() {
        let mut h = HeaderMap::new();
        let v6 = Peer::new("2001:db8::7".parse().unwrap());
        let mut c = client(&v6, false);
        c.host = Some("plain.example");
        add_forwarded(&mut h, &c, http::Version::HTTP_11);
        assert_eq!(
            h["forwarded"],
            "for=\"[2001:db8::7]\";proto=http;host=plain.example"
        );

        let mut h = HeaderMap::new();
        let mapped = Peer::new("::ffff:192.0.2.1".parse().unwrap());
        c.peer = &mapped;
        add_forwarded(&mut h, &c, http::Version::HTTP_11);
        assert_eq!(h["x-forwarded-for"], "192.0.2.1");
        assert_eq!(h["x-real-ip"], "192.0.2.1");
        assert_eq!(
            h["forwarded"],
            "for=192.0.2.1;proto=http;host=plain.example"
        );
    }

    #[test]
    fn a_host_is_a_name_or_literal_and_a_port() {
        for ok in [
            &b"a.example"[..],
            b"A.Example:8080",
            b"10.0.0.1:80",
            b"[::1]",
            b"[::1]:8080",
            b"xn--caf-dma.example",
            b"a.example:",
        ] {
            assert!(is_host(ok), "{}", String::from_utf8_lossy(ok));
        }
        for bad in [
            &b""[..],
            b"user@a.example",
            b"user:pw@a.example",
            b"a b",
            b"a.example:80:80",
            b"a.example:x",
            b"[::1",
            b"[]",
            b"[::1]x",
            b":80",
            b"a/b",
        ] {
            assert!(!is_host(bad), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn rfc_9112_refusals() {
        let v11 = http::Version::HTTP_11;
        let with = |lines: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (n, v) in lines {
                h.append(*n, HeaderValue::from_static(v));
            }
            h
        };
        let host = with(&[("host", "a.example")]);
        assert_eq!(refused(&host, v11, None), None);
        assert_eq!(refused(&host, v11, Some(MAX_BODY)), None);
        assert_eq!(
            refused(&host, v11, Some(MAX_BODY + 1)),
            Some(Refusal::TooLarge)
        );
        let status = |h: &HeaderMap, v| refused(h, v, None).map(|r| r.status().as_u16());
        assert_eq!(status(&with(&[]), v11), Some(400));
        assert_eq!(status(&with(&[]), http::Version::HTTP_10), None);
        assert_eq!(status(&with(&[]), http::Version::HTTP_2), None);
        assert_eq!(status(&with(&[("host", "")]), v11), Some(400));
        assert_eq!(
            status(&with(&[("host", "a"), ("host", "a")]), v11),
            Some(400)
        );
        assert_eq!(status(&with(&[("host", "u@a")]), v11), Some(400));
        let te = |v: &'static str| status(&with(&[("host", "a"), ("transfer-encoding", v)]), v11);
        assert_eq!(te("chunked"), None);
        assert_eq!(te("Chunked"), None);
        assert_eq!(te("gzip, chunked"), Some(501));
        assert_eq!(te("chunked, chunked"), Some(501));
        let two = with(&[
            ("host", "a"),
            ("transfer-encoding", "chunked"),
            ("transfer-encoding", "chunked"),
        ]);
        assert_eq!(status(&two, v11), Some(501));
    }
}
