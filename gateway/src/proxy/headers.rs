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
const HOP_BY_HOP: [HeaderName; 9] = [
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

/// What leafgate knows about the client side of a request.
pub struct ClientSide<'a> {
    pub peer: IpAddr,
    pub tls: bool,
    /// The host the client asked for, as it sent it (with port if any).
    pub host: Option<&'a str>,
}

/// Appends the client to `X-Forwarded-For`, sets `X-Forwarded-Proto` and
/// `X-Forwarded-Host` (unless a proxy before us set it), and appends leafgate to `Via`.
pub fn add_forwarded(headers: &mut HeaderMap, client: &ClientSide<'_>, version: http::Version) {
    let peer = client.peer.to_string();
    let xff = match headers.get(X_FORWARDED_FOR).and_then(|v| v.to_str().ok()) {
        Some(prior) => format!("{prior}, {peer}"),
        None => peer,
    };
    if let Ok(v) = HeaderValue::from_str(&xff) {
        headers.insert(X_FORWARDED_FOR, v);
    }
    headers.insert(
        X_FORWARDED_PROTO,
        HeaderValue::from_static(if client.tls { "https" } else { "http" }),
    );
    if !headers.contains_key(X_FORWARDED_HOST) {
        if let Some(v) = client.host.and_then(|h| HeaderValue::from_str(h).ok()) {
            headers.insert(X_FORWARDED_HOST, v);
        }
    }
    add_via(headers, version);
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

    #[test]
    fn forwarded_headers_append_to_a_prior_proxy() {
        let mut h = map(&[("x-forwarded-for", "203.0.113.7")]);
        let client = ClientSide {
            peer: "127.0.0.1".parse().unwrap(),
            tls: true,
            host: Some("a.example:8443"),
        };
        add_forwarded(&mut h, &client, http::Version::HTTP_11);
        assert_eq!(h["x-forwarded-for"], "203.0.113.7, 127.0.0.1");
        assert_eq!(h["x-forwarded-proto"], "https");
        assert_eq!(h["x-forwarded-host"], "a.example:8443");
        assert_eq!(h["via"], "1.1 leafgate");
    }
}
