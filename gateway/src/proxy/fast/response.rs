//! A backend's answer head, read where it lies in the upstream buffer, and the head the
//! client gets.
//!
//! Read as hyper's client reads it (same parser and limits): informational answers are
//! passed over, the body's framing follows RFC 9112 §6.3 (204 and 304 have none,
//! `Transfer-Encoding` ending in `chunked` wins over `Content-Length`, differing lengths
//! are an error, no length reads to the close), and the connection is reused only when
//! the backend keeps it alive. Written as hyper's server writes what `proxy::respond`
//! makes of it: leafgate's own `HTTP/1.1` status line with the backend's status and
//! reason, its headers but hop-by-hop ones, `Via` appended, a `Date` when it sent none,
//! `Connection: close` when this is the connection's last; and the framing leafgate reads
//! the body by, whatever `Connection` names: the length as the backend sent it when that
//! is one line of one number, else one line of the number it framed by (a list of equal
//! values, `5, 5`, made `5`), or chunked for a body read by chunks or to the close. No
//! length on a 204 or 304, whose bodies are empty whatever they say.

use super::lines::{Edit, digits, line};
use crate::access_log::Decimal;
use crate::proxy::clock;
use crate::proxy::headers;

/// Header lines an answer may have (hyper's client limit).
pub const MAX_HEADERS: usize = 100;

/// The most bytes an answer's head may take: hyper's client's read buffer.
pub const MAX_HEAD: usize = 8192 + 4096 * 100;

/// How an answer's body is delimited on the backend's connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// No body (204, 304, or `Content-Length: 0`).
    Empty,
    Length(u64),
    Chunked,
    /// The body ends when the backend closes.
    UntilClose,
}

/// What the bytes at the start of the upstream buffer are.
pub enum Read<'h, 'b> {
    Partial,
    /// An informational (1xx) answer of this many bytes, to pass over.
    Informational(usize),
    Answer(Answer<'h, 'b>),
    /// An answer hyper's client refuses too (a 502).
    Bad(&'static str),
}

pub struct Answer<'h, 'b> {
    /// Bytes the head takes in the buffer.
    pub len: usize,
    pub status: u16,
    pub framing: Framing,
    /// The backend keeps the connection open after this answer.
    pub keep_alive: bool,
    minor: u8,
    reason: &'b str,
    headers: &'h [httparse::Header<'b>],
    read: Found,
}

/// What reading an answer's framing found besides the framing itself.
#[derive(Clone, Copy)]
struct Found {
    keep_alive: bool,
    /// The one `Content-Length` line is one number, to be written as it came.
    plain_length: bool,
    /// A `Connection` line names more than `close` and `keep-alive`: some field may be
    /// this hop's.
    names: bool,
}

/// Reads the answer head at the start of `buf` into `slots`.
pub fn parse<'h, 'b>(
    buf: &'b [u8],
    slots: &'h mut [httparse::Header<'b>; MAX_HEADERS],
) -> Read<'h, 'b> {
    let mut res = httparse::Response::new(slots);
    let len = match res.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Read::Partial,
        Err(_) => return Read::Bad("an answer head that does not parse"),
    };
    let status = res.code.unwrap_or(0);
    let minor = res.version.unwrap_or(0);
    match status {
        0..=99 => return Read::Bad("a status code out of range"),
        101 => return Read::Bad("a protocol switch nobody asked for"),
        100..=199 => return Read::Informational(len),
        _ => {}
    }
    let headers: &'h [httparse::Header<'b>] = res.headers;
    let (framing, read) = match read_framing(status, minor, headers) {
        Ok(f) => f,
        Err(why) => return Read::Bad(why),
    };
    Read::Answer(Answer {
        len,
        status,
        framing,
        keep_alive: read.keep_alive,
        minor,
        reason: res.reason.unwrap_or(""),
        headers,
        read,
    })
}

/// How the body of a final answer (`status`, HTTP/1.`minor`, `headers`) is delimited on
/// the backend's connection, and whether the backend keeps the connection open after it;
/// or why hyper's client would refuse the answer.
pub fn framing(
    status: u16,
    minor: u8,
    headers: &[httparse::Header<'_>],
) -> Result<(Framing, bool), &'static str> {
    read_framing(status, minor, headers).map(|(framing, read)| (framing, read.keep_alive))
}

/// [`framing`], and what else the same pass over the headers finds for writing the head.
fn read_framing(
    status: u16,
    minor: u8,
    headers: &[httparse::Header<'_>],
) -> Result<(Framing, Found), &'static str> {
    let mut keep_alive = minor == 1;
    let mut close = false;
    let mut names = false;
    let mut chunked = None;
    let mut length = None;
    // `Content-Length` lines, and values in them.
    let mut lines = 0u32;
    let mut values = 0u32;
    for h in headers {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"connection") {
            for token in headers::list_tokens(h.value) {
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    keep_alive = true;
                } else {
                    names = true;
                }
            }
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            if minor == 0 {
                return Err("Transfer-Encoding on HTTP/1.0");
            }
            // The last line's last coding decides, as hyper reads it.
            chunked = Some(
                headers::list_tokens(h.value)
                    .last()
                    .is_some_and(|t| t.eq_ignore_ascii_case(b"chunked")),
            );
        } else if name.eq_ignore_ascii_case(b"content-length") {
            lines += 1;
            for v in h.value.split(|&b| b == b',') {
                values += 1;
                let Some(n) = digits(v.trim_ascii()) else {
                    return Err("an invalid Content-Length");
                };
                if length.is_some_and(|l| l != n) {
                    return Err("differing Content-Lengths");
                }
                length = Some(n);
            }
        }
    }
    let framing = match (status, chunked, length) {
        (204 | 304, _, _) => Framing::Empty,
        (_, Some(true), _) => Framing::Chunked,
        (_, Some(false), _) | (_, None, None) => Framing::UntilClose,
        (_, None, Some(0)) => Framing::Empty,
        (_, None, Some(n)) => Framing::Length(n),
    };
    let keep_alive = keep_alive
        && !close
        && framing != Framing::UntilClose
        && !(chunked.is_some() && length.is_some());
    let read = Found {
        keep_alive,
        plain_length: lines == 1 && values == 1,
        names,
    };
    Ok((framing, read))
}

impl Answer<'_, '_> {
    /// Writes the head the client gets into `out` (cleared first); `last` when the client
    /// connection closes after this answer; `extra`: header lines leafgate adds (each
    /// ending in CRLF, the request's ID); `edit`: a response header modifier's, applied
    /// to the head as hyper's path applies it to the prepared answer (its `Date` the only
    /// one when it writes one).
    pub fn write_client(&self, out: &mut Vec<u8>, last: bool, extra: &[u8], edit: Option<&Edit>) {
        out.clear();
        // leafgate's own version (RFC 9110 §6.2): the client speaks HTTP/1.1, whatever the
        // backend spoke; `Via` says what that was.
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(&status_digits(self.status));
        out.push(b' ');
        out.extend_from_slice(self.reason.as_bytes());
        out.extend_from_slice(b"\r\n");
        let bodiless = matches!(self.status, 204 | 304);
        // The backend's one plain length is written as it came, where it came, when the
        // body is sized by it; anything else (a list, repeated lines, a line `Connection`
        // names) is left out for one line of the number the body is framed by.
        let copy_length = self.read.plain_length
            && !bodiless
            && matches!(self.framing, Framing::Length(_) | Framing::Empty);
        let mut date = false;
        let mut length = false;
        let mut te_trailers = false;
        for h in self.headers {
            let name = h.name.as_bytes();
            if name.eq_ignore_ascii_case(b"te") {
                te_trailers |=
                    headers::list_tokens(h.value).any(|t| t.eq_ignore_ascii_case(b"trailers"));
            }
            if headers::is_hop_by_hop(name)
                || (self.read.names && self.named_by_connection(name))
                || edit.is_some_and(|e| e.drops(name))
            {
                continue;
            }
            if name.eq_ignore_ascii_case(b"content-length") {
                if !copy_length {
                    continue;
                }
                length = true;
            }
            date |= name.eq_ignore_ascii_case(b"date");
            line(out, name, h.value);
        }
        if te_trailers {
            out.extend_from_slice(b"te: trailers\r\n");
        }
        out.extend_from_slice(if self.minor == 0 {
            b"via: 1.0 leafgate\r\n"
        } else {
            b"via: 1.1 leafgate\r\n"
        });
        match self.framing {
            Framing::Chunked | Framing::UntilClose => {
                out.extend_from_slice(b"transfer-encoding: chunked\r\n");
            }
            _ if length || bodiless => {}
            Framing::Empty => out.extend_from_slice(b"content-length: 0\r\n"),
            Framing::Length(n) => {
                out.extend_from_slice(b"content-length: ");
                decimal(out, n);
                out.extend_from_slice(b"\r\n");
            }
        }
        if let Some(edit) = edit {
            out.extend_from_slice(edit.lines());
            date |= edit.dates();
        }
        out.extend_from_slice(extra);
        if last {
            out.extend_from_slice(b"connection: close\r\n");
        }
        if !date {
            out.extend_from_slice(b"date: ");
            out.extend_from_slice(&clock::date());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }

    /// Whether a `Connection` line of the answer names `name` (it is then hop-by-hop).
    fn named_by_connection(&self, name: &[u8]) -> bool {
        self.headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case("connection"))
            .any(|h| headers::list_tokens(h.value).any(|t| t.eq_ignore_ascii_case(name)))
    }
}

/// Appends `n` in decimal, with no allocation.
fn decimal(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(Decimal::of(n).as_bytes());
}

/// A status code's three digits (httparse reads exactly three).
fn status_digits(status: u16) -> [u8; 3] {
    let n = status.min(999);
    [
        b'0' + (n / 100) as u8,
        b'0' + (n / 10 % 10) as u8,
        b'0' + (n % 10) as u8,
    ]
}

/// Writes leafgate's own error answer into `out` (cleared first), as
/// `ProxyError::response` makes it on hyper's path: `text` as a plain-text body that is
/// not cached; `last` when the client connection closes after it; `extra` and `edit` as
/// in [`Answer::write_client`].
pub fn write_error(
    out: &mut Vec<u8>,
    status: http::StatusCode,
    text: &str,
    last: bool,
    extra: &[u8],
    edit: Option<&Edit>,
) {
    let drops = |name: &[u8]| edit.is_some_and(|e| e.drops(name));
    out.clear();
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    if !drops(b"content-type") {
        out.extend_from_slice(b"content-type: text/plain; charset=utf-8\r\n");
    }
    if !drops(b"cache-control") {
        out.extend_from_slice(b"cache-control: no-store\r\n");
    }
    out.extend_from_slice(b"content-length: ");
    decimal(out, text.len() as u64);
    out.extend_from_slice(b"\r\n");
    if let Some(edit) = edit {
        out.extend_from_slice(edit.lines());
    }
    out.extend_from_slice(extra);
    if last {
        out.extend_from_slice(b"connection: close\r\n");
    }
    if !edit.is_some_and(Edit::dates) {
        out.extend_from_slice(b"date: ");
        out.extend_from_slice(&clock::date());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(head: &[u8], last: bool) -> Result<(Framing, bool, String), &'static str> {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        match parse(head, &mut slots) {
            Read::Partial => Err("partial"),
            Read::Informational(_) => Err("informational"),
            Read::Bad(why) => Err(why),
            Read::Answer(a) => {
                let mut out = Vec::new();
                a.write_client(&mut out, last, &[], None);
                Ok((a.framing, a.keep_alive, String::from_utf8(out).unwrap()))
            }
        }
    }

    const DATE: &str = "date: Sun, 06 Nov 1994 08:49:37 GMT\r\n";

    #[test]
    fn the_framing_is_read_as_hyper_reads_it() {
        let cases: &[(&str, Framing, bool)] = &[
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n",
                Framing::Length(5),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 5, 5\r\n\r\n",
                Framing::Length(5),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
                Framing::Empty,
                true,
            ),
            ("HTTP/1.1 204 No Content\r\n\r\n", Framing::Empty, true),
            (
                "HTTP/1.1 304 Not Modified\r\ncontent-length: 9\r\n\r\n",
                Framing::Empty,
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n",
                Framing::Chunked,
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n",
                Framing::Chunked,
                false,
            ),
            (
                "HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\n",
                Framing::UntilClose,
                false,
            ),
            ("HTTP/1.1 200 OK\r\n\r\n", Framing::UntilClose, false),
            (
                "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 1\r\n\r\n",
                Framing::Length(1),
                false,
            ),
            (
                "HTTP/1.0 200 OK\r\ncontent-length: 1\r\n\r\n",
                Framing::Length(1),
                false,
            ),
            (
                "HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 1\r\n\r\n",
                Framing::Length(1),
                true,
            ),
        ];
        for (head, framing, keep_alive) in cases {
            let (f, k, _) = answer(head.as_bytes(), false).unwrap();
            assert_eq!((f, k), (*framing, *keep_alive), "{head}");
        }
        for bad in [
            "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\n",
            "HTTP/1.1 200 OK\r\ncontent-length: -5\r\n\r\n",
            "HTTP/1.1 101 Switching Protocols\r\n\r\n",
            "HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
            "HTTP/1.1 200 OK\r\nbad header\r\n\r\n",
        ] {
            assert!(answer(bad.as_bytes(), false).is_err(), "{bad}");
        }
        assert_eq!(
            answer(b"HTTP/1.1 100 Continue\r\n\r\n", false).unwrap_err(),
            "informational"
        );
    }

    #[test]
    fn the_client_reads_the_backend_s_head_less_its_hops() {
        let head = format!(
            "HTTP/1.1 200 Fine\r\nConnection: keep-alive, x-hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\n{DATE}Content-Length: 2\r\nX-App: 1\r\n\r\n"
        );
        let (_, _, out) = answer(head.as_bytes(), true).unwrap();
        assert_eq!(
            out,
            format!(
                "HTTP/1.1 200 Fine\r\n{DATE}Content-Length: 2\r\nX-App: 1\r\nvia: 1.1 leafgate\r\nconnection: close\r\n\r\n"
            )
        );
        let (_, _, out) = answer(
            b"HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n",
            false,
        )
        .unwrap();
        assert!(out.starts_with("HTTP/1.1 404 Not Found\r\nvia: 1.1 leafgate\r\ntransfer-encoding: chunked\r\ndate: "), "{out}");
        let (_, _, out) =
            answer(format!("HTTP/1.1 200 OK\r\n{DATE}\r\n").as_bytes(), false).unwrap();
        assert!(
            out.contains("transfer-encoding: chunked\r\n"),
            "until-close is re-framed: {out}"
        );
        let (_, _, out) = answer(
            format!("HTTP/1.1 204 No Content\r\n{DATE}\r\n").as_bytes(),
            false,
        )
        .unwrap();
        assert!(!out.contains("content-length"), "{out}");
    }

    /// The framing lines of the head the client gets.
    fn framing_lines(head: &str) -> Vec<String> {
        let (_, _, out) = answer(head.as_bytes(), false).unwrap();
        out.lines()
            .filter(|l| {
                let l = l.to_ascii_lowercase();
                l.starts_with("content-length:") || l.starts_with("transfer-encoding:")
            })
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn the_length_written_is_the_one_the_body_is_framed_by() {
        let cases: &[(&str, &[&str])] = &[
            // The ordinary length, as it came.
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
                &["Content-Length: 5"],
            ),
            // `Connection` naming the length takes the line, not the framing.
            (
                "HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 5\r\n\r\n",
                &["content-length: 5"],
            ),
            (
                "HTTP/1.1 200 OK\r\nConnection: content-length\r\nContent-Length: 0\r\n\r\n",
                &["content-length: 0"],
            ),
            (
                "HTTP/1.1 200 OK\r\nConnection: transfer-encoding\r\nTransfer-Encoding: chunked\r\n\r\n",
                &["transfer-encoding: chunked"],
            ),
            // A list, or repeated lines, of one number: one line of it.
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n",
                &["content-length: 5"],
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n",
                &["content-length: 5"],
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615,18446744073709551615\r\n\r\n",
                &["content-length: 18446744073709551615"],
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 0, 0\r\n\r\n",
                &["content-length: 0"],
            ),
            // Chunks win over a length, which goes.
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
                &["transfer-encoding: chunked"],
            ),
            // No length on answers without a body.
            (
                "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
                &[],
            ),
            ("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", &[]),
            // An HTTP/1.0 body to the close is chunked (under HTTP/1.1).
            ("HTTP/1.0 200 OK\r\n\r\n", &["transfer-encoding: chunked"]),
        ];
        for (head, lines) in cases {
            assert_eq!(framing_lines(head), *lines, "{head}");
        }
    }

    #[test]
    fn an_http_1_0_answer_goes_out_under_http_1_1() {
        let (framing, keep_alive, out) =
            answer(format!("HTTP/1.0 200 OK\r\n{DATE}\r\n").as_bytes(), false).unwrap();
        assert_eq!((framing, keep_alive), (Framing::UntilClose, false));
        assert_eq!(
            out,
            format!(
                "HTTP/1.1 200 OK\r\n{DATE}via: 1.0 leafgate\r\ntransfer-encoding: chunked\r\n\r\n"
            )
        );
    }

    #[test]
    fn numbers_are_written_in_decimal() {
        for n in [0, 7, 10, 12_345, u64::MAX] {
            let mut out = Vec::new();
            decimal(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
    }

    /// A response modifier's edit: the backend's lines it sets or removes out, its own in,
    /// its `Date` the only one; leafgate's own error answer edited the same way.
    #[test]
    fn an_edit_goes_into_the_client_s_head() {
        let n = |s: &str| http::HeaderName::from_bytes(s.as_bytes()).unwrap();
        let v = http::HeaderValue::from_static;
        let edit = Edit::new(
            &[(n("x-set"), v("new")), (n("date"), v(&DATE[6..35]))],
            &[(n("x-add"), v("two"))],
            &[n("x-gone"), n("content-type")],
        );
        let head = b"HTTP/1.1 200 OK\r\nX-Set: old\r\nX-Gone: g\r\nX-Add: one\r\nDate: then\r\ncontent-length: 0\r\n\r\n";
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let Read::Answer(a) = parse(head, &mut slots) else {
            panic!("an answer")
        };
        let mut out = Vec::new();
        a.write_client(&mut out, false, b"x-request-id: 1\r\n", Some(&edit));
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "HTTP/1.1 200 OK\r\nX-Add: one\r\ncontent-length: 0\r\nvia: 1.1 leafgate\r\n\
                 x-set: new\r\n{DATE}x-add: two\r\nx-request-id: 1\r\n\r\n"
            )
        );
        let mut out = Vec::new();
        let status = http::StatusCode::BAD_GATEWAY;
        write_error(
            &mut out,
            status,
            "502 Bad Gateway: x\n",
            true,
            &[],
            Some(&edit),
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "HTTP/1.1 502 Bad Gateway\r\ncache-control: no-store\r\ncontent-length: 19\r\n\
                 x-set: new\r\n{DATE}x-add: two\r\nconnection: close\r\n\r\n502 Bad Gateway: x\n"
            )
        );
    }
}
