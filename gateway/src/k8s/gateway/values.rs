//! The values a route writes into a request or answer head, checked to be one value
//! there (a path, a header line, a hostname) so no route author can inject a line or
//! another authority; and the Gateway API's duration (GEP-2257). The store holds what it
//! was sent, so the CRD's validation is not taken on trust.

use std::time::Duration;

use super::hostnames;

/// Why `value` is not a path a match or a path modifier may name: it must start with `/`,
/// hold no `//` (which a client may read as an authority) and only the characters the CRD allows in a path match (RFC 3986 `pchar`s and
/// `/`, `%` only before two hex digits), so it is one path in a request line or a
/// `Location`, never another authority or a second line.
pub fn path_invalid(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut i = 0;
    let mut ok = value.starts_with('/') && !value.contains("//");
    while ok && i < bytes.len() {
        let b = bytes[i];
        ok = match b {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3);
                i += 2;
                hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit))
            }
            _ => b.is_ascii_alphanumeric() || b"-/._~!$&'()*+,;=:@".contains(&b),
        };
        i += 1;
    }
    (!ok).then(|| {
        format!(
            "path `{}` is not an absolute path of URL characters",
            value.escape_debug()
        )
    })
}

/// Why `value` may not be what a path modifier writes: it holds a `.` or `..` segment
/// (`%2e` counted as `.`), which the backend or the redirected client would resolve to
/// another path than the one routed (the front normalises every request path, so a
/// routed path never holds one).
pub fn dot_segment(value: &str) -> Option<String> {
    let dots = value.split('/').any(|segment| {
        let segment = segment.replace("%2e", ".").replace("%2E", ".");
        segment == "." || segment == ".."
    });
    dots.then(|| {
        format!(
            "path `{}` holds a `.` or `..` segment",
            value.escape_debug()
        )
    })
}

/// Why `name` (and `value`) cannot be written as one header line: the name must be an
/// HTTP token, the value without control characters but tab.
pub fn header_invalid(name: &str, value: Option<&str>) -> Option<String> {
    if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
        return Some(format!(
            "header name `{}` is not an HTTP token",
            name.escape_debug()
        ));
    }
    match value.map(http::HeaderValue::from_str) {
        Some(Err(_)) => Some(format!(
            "the value of header {name} holds a control character"
        )),
        _ => None,
    }
}

/// The headers no header modifier may set, add or remove: those that frame the message or
/// describe one connection (`Content-Length`, `Transfer-Encoding` and the hop-by-hop ones
/// `proxy::headers` strips), `Host` (a rewrite's `hostname` sets it, checked), and those
/// leafgate writes for the backend to trust (`Via`, `Forwarded`, `X-Forwarded-*`,
/// `X-Real-IP`): a route author must not forge a client's address, smuggle a second
/// message or end a connection.
const PROTECTED: [&str; 15] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
    "proxy-authenticate",
    "proxy-authorization",
    "via",
    "forwarded",
    "x-real-ip",
    "x-forwarded-",
];

/// Why a header modifier may not touch header `name`, if it may not.
pub fn protected(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    PROTECTED
        .iter()
        .any(|p| match p.strip_suffix('-') {
            Some(_) => lower.starts_with(p),
            None => lower == *p,
        })
        .then(|| {
            format!(
                "header {name} cannot be modified: it frames the message, describes the connection or is leafgate's to write"
            )
        })
}

/// Why `host` is not a hostname a redirect or a rewrite may set: a Gateway API
/// `PreciseHostname` (no wildcard).
pub fn precise_invalid(host: &str) -> Option<String> {
    match host.starts_with('*') {
        true => Some(format!(
            "hostname `{}` is a wildcard: a redirect or rewrite names one host",
            host.escape_debug()
        )),
        false => hostnames::invalid(host),
    }
}

/// A GEP-2257 duration: one to four `<number><unit>` parts, units `h`, `m`, `s`, `ms`,
/// each number of at most five digits (`1h30m`, `500ms`, `0s`).
pub fn duration(text: &str) -> Option<Duration> {
    let mut total = Duration::ZERO;
    let mut rest = text;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 5 {
            return None;
        }
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, len) = if rest.starts_with("ms") {
            (Duration::from_millis(n), 2)
        } else {
            match rest.bytes().next()? {
                b'h' => (Duration::from_secs(n * 3600), 1),
                b'm' => (Duration::from_secs(n * 60), 1),
                b's' => (Duration::from_secs(n), 1),
                _ => return None,
            }
        };
        rest = &rest[len..];
        total += unit;
        parts += 1;
    }
    (1..=4).contains(&parts).then_some(total)
}
