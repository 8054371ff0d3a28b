//! The one preparation of a request's head for the far side, whichever way it goes out: a
//! route's backend (`forward`), an upgrade (`upgrade`), or a pod call to a leaf (the
//! listener's `podcall`). Hop-by-hop headers out, the forwarding headers in, the client's
//! host as the one `Host`; and the answer's head on its way back.
//!
//! The URI is not its business: the target decides it (`Upstream::send` per attempt,
//! `Upstream::uri` for an upgrade, the leaf for a pod call), after this has run. It does
//! no I/O and allocates nothing beyond what `headers` does.

use http::header::{self, HeaderMap, HeaderValue};
use http::request::Parts;

use super::headers::{self as rules, ClientSide};

/// Which hop-by-hop headers a request loses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hops {
    /// Every one: an ordinary request.
    DropAll,
    /// All but `Connection` and `Upgrade`, which the far side must read as the client sent
    /// them: a protocol switch (WebSocket, SPDY, exec).
    KeepUpgrade,
}

/// Readies `parts` for the far side: hop-by-hop headers out as `hops` says; then, for a
/// `client` the far side is to learn about, the forwarding headers (`X-Forwarded-*`,
/// `Forwarded`, `Via`, see [`rules::add_forwarded`]) and the host it asked for as the
/// one `Host`. With no `client` the headers are otherwise passed as they came (a pod
/// relay, which the leaf answers for itself).
pub fn prepare(parts: &mut Parts, hops: Hops, client: Option<&ClientSide<'_>>) {
    rules::strip_hop_by_hop(&mut parts.headers, hops == Hops::KeepUpgrade);
    let Some(client) = client else {
        return;
    };
    rules::add_forwarded(&mut parts.headers, client, parts.version);
    if let Some(host) = client.host {
        set_host(&mut parts.headers, host);
    }
}

/// Readies a response's head for the client, whichever far side sent it (a route's
/// backend, an upgrade's that declined, a leaf): its framing as hyper's client read it
/// ([`one_framing`]), hop-by-hop headers out, `Via` in (saying what was received), then
/// leafgate's own HTTP/1.1 for an HTTP/1.0 answer (RFC 9110 §6.2; hyper's server would
/// otherwise write `HTTP/1.0` and end the client's connection with a body to the close;
/// an HTTP/1.0 client still gets `HTTP/1.0`, hyper sees to that). The fast path writes
/// the same head itself (`fast::response`).
pub fn prepare_response(parts: &mut http::response::Parts) {
    one_framing(&mut parts.headers);
    rules::strip_hop_by_hop(&mut parts.headers, false);
    rules::add_via(&mut parts.headers, parts.version);
    if parts.version == http::Version::HTTP_10 {
        parts.version = http::Version::HTTP_11;
    }
}

/// Makes an answer's framing headers say what hyper's client read its body by, which is
/// what hyper's server then frames it by, and nothing else (RFC 9112 §6.3, RFC 9110 §8.6):
/// beside `Transfer-Encoding` the body is read by its coding and a `Content-Length` goes
/// (hyper's server would write it and cut the body to it); a list of lengths (`5, 5`) or
/// repeated lines, all the same number (hyper's client refuses any other), become one line
/// of it in decimal, as the fast path writes it. A single plain length, the common case,
/// is left as it is.
fn one_framing(headers: &mut HeaderMap) {
    use http::header::{CONTENT_LENGTH, TRANSFER_ENCODING};
    let mut lengths = headers.get_all(CONTENT_LENGTH).iter();
    let Some(first) = lengths.next() else {
        return;
    };
    let plain = lengths.next().is_none() && first.as_bytes().iter().all(u8::is_ascii_digit);
    if headers.contains_key(TRANSFER_ENCODING) {
        headers.remove(CONTENT_LENGTH);
        return;
    }
    if plain {
        return;
    }
    let value = first.as_bytes();
    let first_value = value.split(|&b| b == b',').next().unwrap_or(value);
    let number = std::str::from_utf8(first_value.trim_ascii())
        .ok()
        .and_then(|n| n.parse::<u64>().ok());
    if let Some(n) = number {
        headers.insert(CONTENT_LENGTH, HeaderValue::from(n));
    }
}

/// Makes `host` the request's one `Host`. HTTP/2 clients name the host in `:authority`;
/// upstreams read `Host`. An HTTP/1.1 request whose only `Host` already says it is kept as
/// it is (no header value built). A second `Host` line goes: the route was chosen by the
/// first, and a backend reading another would serve a host nobody routed.
fn set_host(headers: &mut HeaderMap, host: &str) {
    let mut lines = headers.get_all(header::HOST).iter();
    let first = lines.next().map(|h| h.as_bytes());
    if first == Some(host.as_bytes()) && lines.next().is_none() {
        return;
    }
    if let Ok(v) = HeaderValue::from_str(host) {
        headers.insert(header::HOST, v);
    }
}

#[cfg(test)]
mod tests {
    use http::header::HOST;
    use http::{HeaderValue, Request};

    use super::*;
    use crate::proxy::headers::Peer;

    /// An upgrade request's head as a client sends it, with a hop-by-hop extra.
    fn upgrade_head() -> Parts {
        let mut req = Request::new(());
        let h = req.headers_mut();
        h.insert(HOST, HeaderValue::from_static("a.example"));
        h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        req.into_parts().0
    }

    fn hosts(h: &HeaderMap) -> Vec<&str> {
        h.get_all(HOST)
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect()
    }

    #[test]
    fn the_routed_host_is_the_only_host_the_backend_reads() {
        let mut h = HeaderMap::new();
        set_host(&mut h, "a.example");
        assert_eq!(hosts(&h), ["a.example"], "HTTP/2: from :authority");

        h.insert(HOST, HeaderValue::from_static("a.example"));
        set_host(&mut h, "a.example");
        assert_eq!(hosts(&h), ["a.example"]);

        h.append(HOST, HeaderValue::from_static("b.example"));
        set_host(&mut h, "a.example");
        assert_eq!(hosts(&h), ["a.example"], "a second Host line goes");

        set_host(&mut h, "bad\nhost");
        assert_eq!(hosts(&h), ["a.example"], "an invalid host changes nothing");
    }

    #[test]
    fn an_upgrade_keeps_its_switch_and_an_ordinary_request_loses_it() {
        let peer = Peer::new("10.0.0.9".parse().unwrap());
        let client = ClientSide {
            peer: &peer,
            tls: true,
            host: Some("a.example"),
            trusted: false,
        };
        let mut up = upgrade_head();
        prepare(&mut up, Hops::KeepUpgrade, Some(&client));
        assert_eq!(up.headers[header::CONNECTION], "Upgrade");
        assert_eq!(up.headers[header::UPGRADE], "websocket");
        assert!(!up.headers.contains_key("keep-alive"));
        assert_eq!(up.headers["x-forwarded-for"], "10.0.0.9");
        assert_eq!(up.headers["x-forwarded-proto"], "https");
        assert_eq!(hosts(&up.headers), ["a.example"]);

        let mut plain = upgrade_head();
        prepare(&mut plain, Hops::DropAll, Some(&client));
        assert!(!plain.headers.contains_key(header::CONNECTION));
        assert!(!plain.headers.contains_key(header::UPGRADE));
        assert_eq!(plain.headers["via"], "1.1 leafgate");
    }

    #[test]
    fn with_no_client_only_hop_by_hop_headers_change() {
        let mut parts = upgrade_head();
        prepare(&mut parts, Hops::DropAll, None);
        let names: Vec<&str> = parts.headers.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["host"]);
    }
}
