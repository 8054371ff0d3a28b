//! Choosing the stream transport and protocol from a streaming request's headers, and the
//! answers that go with the choice: `101` with the headers the kubelet sends, or the
//! kubelet's refusals (`400` without `X-Stream-Protocol-Version`, `403` with one
//! `X-Accepted-Stream-Protocol-Versions` per protocol we serve). We pick from our own lists,
//! in our order, never from the client's (`httpstream.Handshake`). Runs nothing.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::Full;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;

/// The SPDY header naming the protocols a client offers, and our answer's header.
pub const PROTOCOL_HEADER: &str = "x-stream-protocol-version";
/// Sent once per protocol we serve when none is in common.
pub const ACCEPTED_HEADER: &str = "x-accepted-stream-protocol-versions";

/// Remote-command protocols over SPDY. v5 over SPDY behaves as v4 (the kubelet does the
/// same), so both are served.
pub const SPDY_COMMAND: &[&str] = &["v5.channel.k8s.io", "v4.channel.k8s.io"];
/// Port-forward over SPDY.
pub const SPDY_FORWARD: &[&str] = &["portforward.k8s.io"];
/// Remote-command subprotocols over WebSocket.
pub const WS_COMMAND: &[&str] = &[
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "base64.channel.k8s.io",
    "channel.k8s.io",
];
/// kubectl >= 1.31 tunnels SPDY port-forward inside WebSocket binary messages.
pub const WS_TUNNEL: &str = "SPDY/3.1+portforward.k8s.io";
/// Port-forward subprotocols over WebSocket: the SPDY tunnel, then the kubelet's v4 channels.
pub const WS_FORWARD: &[&str] = &[
    WS_TUNNEL,
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
    "channel.k8s.io",
    "base64.channel.k8s.io",
];

/// How the call's streams will travel once upgraded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// SPDY/3.1 on the upgraded connection, with the chosen `X-Stream-Protocol-Version`.
    Spdy(&'static str),
    /// WebSocket with the chosen subprotocol (`""` when the client offered none, which the
    /// kubelet serves as `channel.k8s.io`).
    WebSocket(&'static str),
}

type Answer = Response<Full<Bytes>>;
/// A refusal, boxed: it is the rare path and a `Response` is large.
pub type Refusal = Box<Answer>;

/// A plain-text refusal, as Go's `http.Error` writes it.
pub fn refusal(status: StatusCode, msg: &str) -> Answer {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .header("x-content-type-options", "nosniff")
        .body(Full::new(Bytes::from(format!("{msg}\n"))))
        .expect("static parts make a valid response")
}

fn refuse(status: StatusCode, msg: &str) -> Refusal {
    Box::new(refusal(status, msg))
}

/// All values of `name`, split at commas and trimmed (one header line per value and
/// comma-joined lists are both accepted).
fn values(headers: &HeaderMap, name: &str) -> Vec<String> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect()
}

fn has_token(headers: &HeaderMap, name: &str, token: &str) -> bool {
    values(headers, name)
        .iter()
        .any(|v| v.eq_ignore_ascii_case(token))
}

/// The first of `ours` the client offered.
fn pick(ours: &[&'static str], offered: &[String]) -> Option<&'static str> {
    ours.iter()
        .copied()
        .find(|p| offered.iter().any(|o| o == p))
}

/// Chooses the transport for a call (`forward`: port-forward rather than exec/attach), or
/// answers the refusal the kubelet would. On success the `101` answer is ready to send.
pub fn negotiate(headers: &HeaderMap, forward: bool) -> Result<(Transport, Answer), Refusal> {
    if !has_token(headers, "connection", "upgrade") {
        return Err(refuse(StatusCode::BAD_REQUEST, "Upgrade request required"));
    }
    if has_token(headers, "upgrade", "websocket") {
        websocket(headers, forward)
    } else if has_token(headers, "upgrade", "SPDY/3.1") {
        spdy(headers, forward)
    } else {
        Err(refuse(
            StatusCode::BAD_REQUEST,
            "unable to upgrade: only SPDY/3.1 and websocket upgrades are served",
        ))
    }
}

fn spdy(headers: &HeaderMap, forward: bool) -> Result<(Transport, Answer), Refusal> {
    let ours = if forward { SPDY_FORWARD } else { SPDY_COMMAND };
    let offered = values(headers, PROTOCOL_HEADER);
    if offered.is_empty() {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "unable to upgrade: X-Stream-Protocol-Version is required",
        ));
    }
    let Some(chosen) = pick(ours, &offered) else {
        let mut refusal = refuse(
            StatusCode::FORBIDDEN,
            &format!(
                "unable to upgrade: unable to negotiate protocol: client supports [{}], server accepts [{}]",
                offered.join(" "),
                ours.join(" ")
            ),
        );
        for p in ours {
            refusal
                .headers_mut()
                .append(ACCEPTED_HEADER, HeaderValue::from_static(p));
        }
        return Err(refusal);
    };
    let ok = Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header("connection", "Upgrade")
        .header("upgrade", "SPDY/3.1")
        .header(PROTOCOL_HEADER, chosen)
        .body(Full::new(Bytes::new()))
        .expect("static parts make a valid response");
    Ok((Transport::Spdy(chosen), ok))
}

fn websocket(headers: &HeaderMap, forward: bool) -> Result<(Transport, Answer), Refusal> {
    let ours = if forward { WS_FORWARD } else { WS_COMMAND };
    let key = headers
        .get("sec-websocket-key")
        .map(|k| k.as_bytes().to_vec())
        .filter(|k| !k.is_empty());
    let (Some(key), true) = (key, has_token(headers, "sec-websocket-version", "13")) else {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "websocket: a Sec-WebSocket-Key and Sec-WebSocket-Version 13 are required",
        ));
    };
    let offered = values(headers, "sec-websocket-protocol");
    let chosen = if offered.is_empty() {
        ""
    } else {
        // golang.org/x/net/websocket answers a failed subprotocol handshake with 403.
        pick(ours, &offered).ok_or_else(|| {
            refuse(
                StatusCode::FORBIDDEN,
                &format!(
                    "requested protocol(s) are not supported: [{}]; supports [{}]",
                    offered.join(" "),
                    ours.join(" ")
                ),
            )
        })?
    };
    let mut ok = Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-accept", derive_accept_key(&key));
    if !chosen.is_empty() {
        ok = ok.header("sec-websocket-protocol", chosen);
    }
    let ok = ok
        .body(Full::new(Bytes::new()))
        .expect("static parts make a valid response");
    Ok((Transport::WebSocket(chosen), ok))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.append(*k, HeaderValue::from_static(v));
        }
        m
    }

    #[test]
    fn spdy_picks_from_our_list_in_our_order() {
        let req = h(&[
            ("connection", "Upgrade"),
            ("upgrade", "SPDY/3.1"),
            ("x-stream-protocol-version", "v2.channel.k8s.io"),
            (
                "x-stream-protocol-version",
                "v4.channel.k8s.io, v5.channel.k8s.io",
            ),
        ]);
        let (t, resp) = negotiate(&req, false).unwrap();
        assert_eq!(t, Transport::Spdy("v5.channel.k8s.io"));
        assert_eq!(resp.status(), 101);
        assert_eq!(resp.headers()[PROTOCOL_HEADER], "v5.channel.k8s.io");
        assert_eq!(resp.headers()["upgrade"], "SPDY/3.1");
    }

    #[test]
    fn spdy_refusals() {
        let bare = h(&[("connection", "Upgrade"), ("upgrade", "SPDY/3.1")]);
        assert_eq!(negotiate(&bare, false).unwrap_err().status(), 400);
        let other = h(&[
            ("connection", "Upgrade"),
            ("upgrade", "SPDY/3.1"),
            ("x-stream-protocol-version", "v4.channel.k8s.io"),
        ]);
        let r = negotiate(&other, true).unwrap_err();
        assert_eq!(r.status(), 403);
        let accepted: Vec<_> = r.headers().get_all(ACCEPTED_HEADER).iter().collect();
        assert_eq!(accepted, ["portforward.k8s.io"]);
        assert_eq!(
            negotiate(&h(&[("upgrade", "SPDY/3.1")]), false)
                .unwrap_err()
                .status(),
            400
        );
    }

    #[test]
    fn websocket_accept_key_and_subprotocol() {
        let req = h(&[
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-version", "13"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
            (
                "sec-websocket-protocol",
                "channel.k8s.io, v5.channel.k8s.io",
            ),
        ]);
        let (t, resp) = negotiate(&req, false).unwrap();
        assert_eq!(t, Transport::WebSocket("v5.channel.k8s.io"));
        // RFC 6455's own example.
        assert_eq!(
            resp.headers()["sec-websocket-accept"],
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
        let tunnel = h(&[
            ("connection", "Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-version", "13"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
            ("sec-websocket-protocol", "SPDY/3.1+portforward.k8s.io"),
        ]);
        assert_eq!(
            negotiate(&tunnel, true).unwrap().0,
            Transport::WebSocket(WS_TUNNEL)
        );
        assert_eq!(negotiate(&tunnel, false).unwrap_err().status(), 403);
    }
}
