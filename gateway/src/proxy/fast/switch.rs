//! An upgrade's exchange on the raw connection: the request's head written in one write,
//! the answer's head read where it lies. `proxy::upgrade` sends every upgrade without a
//! request body this way rather than through a hyper client connection, whose handshake,
//! connection task and dispatch channel all sit between the client's request and the
//! backend's answer (an exec's path).
//!
//! The head goes out as hyper's client writes it: the request line with the origin-form
//! target, then each header line as the map holds it (names lowercase, repeated lines
//! kept), nothing added. The answer is read as hyper's client reads it: the same parser,
//! header count and buffer limit; informational answers other than 101 passed over; a
//! reason phrase other than the status's own kept. A 101 hands the connection over with
//! the bytes read behind its head. Any other answer's body is framed as `response` frames
//! one (RFC 9112 §6.3, the same refusals) and streamed as it comes ([`Declined`]).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Version, header};
use http_body::{Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::io::poll_read_buf;

use super::chunked::Decoder;
use super::lines::line;
use super::response::{self, Framing, MAX_HEAD, MAX_HEADERS};
use crate::proxy::clock;

/// Bytes read at a time, for the head and for a declined answer's body.
const READ: usize = 8192;

/// The most an exchange's read buffer may have grown to and still be kept for the next one.
const KEEP: usize = 2 * READ;

/// Writes the head of the request `parts` into `out`; its URI is origin-form.
pub fn write_head(parts: &http::request::Parts, out: &mut Vec<u8>) {
    out.extend_from_slice(parts.method.as_str().as_bytes());
    out.push(b' ');
    let target = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in &parts.headers {
        line(out, name.as_str().as_bytes(), value.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
}

/// Writes the client's copy of a backend's 101 `head` into `out`, as hyper's server writes
/// a 101 it is handed with an empty body: the status line with the backend's reason, each
/// header line as the map holds it but those a 101 cannot carry (`Content-Length`,
/// `Transfer-Encoding`, `Trailer`), every `Connection` value on one line, and a `Date`
/// when the backend sent none.
pub fn write_switched(head: &http::response::Parts, out: &mut Vec<u8>) {
    out.extend_from_slice(if head.version == Version::HTTP_10 {
        b"HTTP/1.0 "
    } else {
        b"HTTP/1.1 "
    });
    out.extend_from_slice(head.status.as_str().as_bytes());
    out.push(b' ');
    match head.extensions.get::<hyper::ext::ReasonPhrase>() {
        Some(reason) => out.extend_from_slice(reason.as_bytes()),
        None => out.extend_from_slice(
            head.status
                .canonical_reason()
                .unwrap_or("<none>")
                .as_bytes(),
        ),
    }
    out.extend_from_slice(b"\r\n");
    let mut date = false;
    for name in head.headers.keys() {
        if *name == header::CONTENT_LENGTH
            || *name == header::TRANSFER_ENCODING
            || *name == header::TRAILER
        {
            continue;
        }
        date |= *name == header::DATE;
        let mut values = head.headers.get_all(name).iter();
        if *name == header::CONNECTION {
            out.extend_from_slice(b"connection: ");
            if let Some(first) = values.next() {
                out.extend_from_slice(first.as_bytes());
            }
            for more in values {
                out.extend_from_slice(b", ");
                out.extend_from_slice(more.as_bytes());
            }
            out.extend_from_slice(b"\r\n");
            continue;
        }
        for value in values {
            line(out, name.as_str().as_bytes(), value.as_bytes());
        }
    }
    if !date {
        out.extend_from_slice(b"date: ");
        out.extend_from_slice(&clock::date());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// The backend's final answer to an upgrade request.
#[derive(Debug)]
pub enum Answer {
    /// 101: its head, and the bytes the backend sent right behind it.
    Switched(http::response::Parts, Bytes),
    /// Any other status: its head, how its body is delimited, the body's first bytes, and
    /// whether the backend keeps the connection open after it (a plain request's answer
    /// gives its connection back then, `proxy::raw`).
    Declined(http::response::Parts, Framing, Bytes, bool),
}

/// Why an upgrade request got no answer.
#[derive(Debug, thiserror::Error)]
pub enum Failed {
    /// Writing the head failed: the backend cannot have read the request.
    #[error("{0}")]
    Unsent(io::Error),
    /// The connection ended before the answer's first byte.
    #[error("{0}")]
    Unanswered(String),
    /// The answer broke off, or broke the rules hyper's client reads it by.
    #[error("{0}")]
    Bad(String),
}

/// Writes `head` on `io` and reads the backend's final answer's head.
pub async fn exchange<S>(io: &mut S, head: &[u8]) -> Result<Answer, Failed>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    exchange_in(io, head, &mut BytesMut::with_capacity(READ)).await
}

/// [`exchange`], reading into `buf` (empty), which is left empty again: the head and the
/// early bytes are views of its memory, which it takes back at its next read once they
/// are gone.
pub async fn exchange_in<S>(io: &mut S, head: &[u8], buf: &mut BytesMut) -> Result<Answer, Failed>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    io.write_all(head).await.map_err(Failed::Unsent)?;
    io.flush().await.map_err(Failed::Unsent)?;
    let mut answered = false;
    loop {
        let read = buf.len();
        if let Some(answer) = parse(buf)? {
            if read > KEEP {
                // A long head grew the buffer: its memory is not kept for the next exchange
                // (a pooled connection would hold it while idle).
                *buf = BytesMut::new();
            }
            return Ok(answer);
        }
        if buf.len() >= MAX_HEAD {
            return Err(Failed::Bad(format!(
                "an answer head over {} KiB",
                MAX_HEAD / 1024
            )));
        }
        buf.reserve(READ);
        // Nothing read yet means the server never answered (a spare it had closed): the
        // request may go again. Anything after that is a broken answer.
        match io.read_buf(buf).await {
            Ok(0) if !answered => {
                return Err(Failed::Unanswered("the connection closed".to_string()));
            }
            Ok(0) => {
                return Err(bad("the connection closed inside an answer's head"));
            }
            Ok(_) => answered = true,
            Err(e) if !answered => return Err(Failed::Unanswered(e.to_string())),
            Err(e) => return Err(Failed::Bad(e.to_string())),
        }
    }
}

/// The final answer at the start of `buf` once it is whole (informational ones before it
/// are taken off); what follows its head is left as its early bytes. Header values are
/// views of the head's bytes, as hyper's client makes them: nothing is copied per line.
fn parse(buf: &mut BytesMut) -> Result<Option<Answer>, Failed> {
    loop {
        let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut res = httparse::Response::new(&mut slots);
        let len = match res.parse(buf) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(bad(&format!("an answer head that does not parse ({e})"))),
        };
        let code = res.code.unwrap_or(0);
        let status = StatusCode::from_u16(code).map_err(|_| bad("a status code out of range"))?;
        if status.is_informational() && code != 101 {
            buf.advance(len);
            continue;
        }
        let minor = res.version.unwrap_or(0);
        let framing = if code == 101 {
            None
        } else {
            Some(response::framing(code, minor, res.headers).map_err(bad)?)
        };
        // Where each line's name and value lie in the head, to take them as views of it
        // once the parser's borrow of the buffer ends.
        let base = buf.as_ptr() as usize;
        let at = |b: &[u8]| (b.as_ptr() as usize - base, b.len());
        let mut lines = [((0, 0), (0, 0)); MAX_HEADERS];
        for (line, h) in lines.iter_mut().zip(res.headers.iter()) {
            *line = (at(h.name.as_bytes()), at(h.value));
        }
        let count = res.headers.len();
        let reason = res.reason.unwrap_or("");
        let phrase = (Some(reason) != status.canonical_reason())
            .then(|| hyper::ext::ReasonPhrase::try_from(reason.as_bytes()).ok())
            .flatten();
        let head = buf.split_to(len).freeze();
        // Room for the lines added on the way to the client (`Via`, `Date`, a request ID, a
        // length), so the map is not grown for them.
        let mut headers = HeaderMap::with_capacity(count + 4);
        for &((name_at, name_len), (value_at, value_len)) in &lines[..count] {
            let name = HeaderName::from_bytes(&head[name_at..name_at + name_len])
                .map_err(|_| bad("an invalid header name"))?;
            let value = head.slice(value_at..value_at + value_len);
            let value = HeaderValue::from_maybe_shared(value)
                .map_err(|_| bad("an invalid header value"))?;
            headers.append(name, value);
        }
        let (mut parts, ()) = http::Response::new(()).into_parts();
        parts.status = status;
        parts.version = if minor == 1 {
            Version::HTTP_11
        } else {
            Version::HTTP_10
        };
        parts.headers = headers;
        if let Some(phrase) = phrase {
            parts.extensions.insert(phrase);
        }
        return Ok(Some(match framing {
            // A switched connection may live for hours: what came behind the 101 (often
            // nothing, a few bytes else) is copied out rather than kept as a view of the
            // whole read buffer.
            None => Answer::Switched(parts, Bytes::copy_from_slice(buf)),
            Some((framing, keep_alive)) => {
                Answer::Declined(parts, framing, buf.split().freeze(), keep_alive)
            }
        }));
    }
}

fn bad(why: &str) -> Failed {
    Failed::Bad(why.to_string())
}

/// The body of a declined upgrade's answer, read off the backend's connection as the
/// client takes it: its length as an exact size hint (so the client gets the same
/// `Content-Length`), chunks decoded, or everything up to the close.
pub struct Declined<S> {
    io: S,
    /// What came with the head, taken first.
    early: Bytes,
    /// What was read after it.
    buf: BytesMut,
    left: Left,
}

enum Left {
    Bytes(u64),
    Chunks(Decoder),
    UntilClose,
    Done,
}

impl<S> Declined<S> {
    /// The body framed by `framing` on `io`, whose first bytes (read with the head) are
    /// `early` (taken as they are: a body that came whole with its head is never copied).
    pub fn new(io: S, early: Bytes, framing: Framing) -> Self {
        let left = match framing {
            Framing::Empty => Left::Done,
            Framing::Length(n) => Left::Bytes(n),
            Framing::Chunked => Left::Chunks(Decoder::default()),
            Framing::UntilClose => Left::UntilClose,
        };
        Declined {
            io,
            early,
            buf: BytesMut::new(),
            left,
        }
    }

    /// The connection, when the body was read to its exact end with nothing after it: the
    /// next exchange on it starts on a clean stream.
    pub fn into_clean(self) -> Option<S> {
        let clean = matches!(self.left, Left::Done) && self.early.is_empty() && self.buf.is_empty();
        clean.then_some(self.io)
    }

    /// The body's next data out of the bytes read so far, if they hold some: the early
    /// bytes first, then those read after them.
    fn take(&mut self) -> io::Result<Option<Bytes>> {
        while !self.early.is_empty() {
            let (used, data) = self.left.next(&self.early)?;
            let framed = self.early.split_to(used);
            if let Some(data) = data {
                return Ok(Some(framed.slice(data)));
            }
            if used == 0 {
                break;
            }
        }
        if self.buf.is_empty() {
            return Ok(None);
        }
        let (used, data) = self.left.next(&self.buf)?;
        let framed = self.buf.split_to(used);
        Ok(data.map(|data| framed.freeze().slice(data)))
    }
}

impl Left {
    /// How many of `bytes` the body's next step uses, and where in them its data lies.
    fn next(&mut self, bytes: &[u8]) -> io::Result<(usize, Option<std::ops::Range<usize>>)> {
        match self {
            Left::Done => Ok((0, None)),
            Left::Bytes(n) => {
                let take = usize::try_from(*n).unwrap_or(usize::MAX).min(bytes.len());
                *n -= take as u64;
                if *n == 0 {
                    *self = Left::Done;
                }
                Ok((take, Some(0..take)))
            }
            Left::UntilClose => Ok((bytes.len(), Some(0..bytes.len()))),
            Left::Chunks(decoder) => {
                let piece = decoder
                    .decode(bytes)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                if decoder.is_done() {
                    *self = Left::Done;
                }
                Ok((piece.used, piece.data))
            }
        }
    }
}

impl<S: AsyncRead + Unpin> http_body::Body for Declined<S> {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        loop {
            if let Some(data) = this.take()? {
                return Poll::Ready(Some(Ok(Frame::data(data))));
            }
            if let Left::Done = this.left {
                return Poll::Ready(None);
            }
            // Whatever was read is used up (a chunk's framing may end mid-way): read more.
            this.buf.reserve(READ);
            if ready!(poll_read_buf(Pin::new(&mut this.io), cx, &mut this.buf))? == 0 {
                if let Left::UntilClose = this.left {
                    this.left = Left::Done;
                    return Poll::Ready(None);
                }
                return Poll::Ready(Some(Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the backend closed before the end of the body",
                ))));
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.left, Left::Done)
    }

    fn size_hint(&self) -> SizeHint {
        match self.left {
            Left::Done => SizeHint::with_exact(0),
            Left::Bytes(n) => SizeHint::with_exact(n),
            Left::Chunks(_) | Left::UntilClose => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use http_body::Body as _;
    use http_body_util::BodyExt;

    use super::*;

    use tokio::io::AsyncReadExt;

    fn parts(head: &str) -> http::request::Parts {
        let mut lines = head.lines();
        let mut first = lines.next().unwrap().split(' ');
        let mut req = http::Request::builder()
            .method(first.next().unwrap())
            .uri(first.next().unwrap());
        for l in lines {
            let (name, value) = l.split_once(": ").unwrap();
            req = req.header(name, value);
        }
        req.body(()).unwrap().into_parts().0
    }

    /// The answer `wire` gives, read through a pipe written in `cut`-byte pieces, and what
    /// follows its head: a declined answer's body, or what came behind a 101.
    async fn answer(wire: &'static [u8], cut: usize) -> (Result<Answer, Failed>, Vec<u8>) {
        let (mut ours, mut theirs) = tokio::io::duplex(1 << 20);
        let backend = tokio::spawn(async move {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                if theirs.read(&mut byte).await.unwrap() == 0 {
                    break;
                }
                head.push(byte[0]);
            }
            for piece in wire.chunks(cut) {
                theirs.write_all(piece).await.unwrap();
                tokio::task::yield_now().await;
            }
            drop(theirs);
            head
        });
        let answer = exchange(&mut ours, b"GET / HTTP/1.1\r\nhost: a\r\n\r\n").await;
        let head = backend.await.unwrap();
        assert_eq!(head, b"GET / HTTP/1.1\r\nhost: a\r\n\r\n");
        let rest = match &answer {
            Ok(Answer::Declined(_, framing, early, _)) => {
                let body = Declined::new(ours, early.clone(), *framing);
                // The client's `Content-Length` comes from this hint.
                let exact = body.size_hint().exact();
                match framing {
                    Framing::Length(n) => assert_eq!(exact, Some(*n)),
                    Framing::Empty => assert_eq!(exact, Some(0)),
                    Framing::Chunked | Framing::UntilClose => assert_eq!(exact, None),
                }
                body.collect()
                    .await
                    .map(|b| b.to_bytes().to_vec())
                    .unwrap_or_else(|e| format!("error: {e}").into_bytes())
            }
            Ok(Answer::Switched(_, early)) => {
                // What the backend sent behind the 101: read with the head, then off the
                // connection.
                let mut rest = early.to_vec();
                ours.read_to_end(&mut rest).await.unwrap();
                rest
            }
            Err(_) => Vec::new(),
        };
        (answer, rest)
    }

    #[test]
    fn the_head_goes_out_as_the_map_holds_it() {
        let p = parts(
            "GET /api/v1/namespaces/a/pods/p/exec?command=sh&stdin=true\n\
             host: leaf:6443\nconnection: Upgrade\nupgrade: SPDY/3.1\n\
             x-stream-protocol-version: v4.channel.k8s.io\n\
             x-stream-protocol-version: v3.channel.k8s.io",
        );
        let mut out = Vec::new();
        write_head(&p, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET /api/v1/namespaces/a/pods/p/exec?command=sh&stdin=true HTTP/1.1\r\n\
             host: leaf:6443\r\nconnection: Upgrade\r\nupgrade: SPDY/3.1\r\n\
             x-stream-protocol-version: v4.channel.k8s.io\r\n\
             x-stream-protocol-version: v3.channel.k8s.io\r\n\r\n"
        );
    }

    #[tokio::test]
    async fn a_101_comes_with_the_bytes_behind_its_head_whatever_the_pieces() {
        let wire: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n\
            HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
            Sec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n\x82\x01\x00";
        for cut in [1, 7, wire.len()] {
            let (answer, behind) = answer(wire, cut).await;
            let Ok(Answer::Switched(head, _)) = answer else {
                panic!("{answer:?}");
            };
            assert_eq!(head.status, StatusCode::SWITCHING_PROTOCOLS);
            assert_eq!(head.headers["sec-websocket-protocol"], "v5.channel.k8s.io");
            assert!(head.extensions.get::<hyper::ext::ReasonPhrase>().is_none());
            assert_eq!(behind, b"\x82\x01\x00", "cut {cut}");
        }
    }

    #[tokio::test]
    async fn a_declined_upgrade_keeps_its_body_however_it_is_framed() {
        let cases: [(&'static [u8], &[u8]); 4] = [
            (
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 5\r\n\r\nhello",
                b"hello",
            ),
            (
                b"HTTP/1.1 403 Nope\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n",
                b"abcde",
            ),
            (b"HTTP/1.1 404 Not Found\r\n\r\nuntil the close", b"until the close"),
            (b"HTTP/1.1 204 No Content\r\n\r\n", b""),
        ];
        for (wire, body) in cases {
            for cut in [1, 3, wire.len()] {
                let (answer, rest) = answer(wire, cut).await;
                assert!(matches!(answer, Ok(Answer::Declined(..))), "{answer:?}");
                assert_eq!(
                    String::from_utf8_lossy(&rest),
                    String::from_utf8_lossy(body)
                );
            }
        }
        let (answer, _) = answer(b"HTTP/1.1 403 Nope\r\n\r\n", 100).await;
        let Ok(Answer::Declined(head, ..)) = answer else {
            panic!()
        };
        let phrase = head.extensions.get::<hyper::ext::ReasonPhrase>().unwrap();
        assert_eq!(phrase.as_bytes(), b"Nope");
    }

    #[tokio::test]
    async fn what_hyper_refuses_is_refused() {
        let cases: [&'static [u8]; 6] = [
            b"HTTP/1.1 999999 Big\r\n\r\n",
            b"HTTP/1.1 400 X\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 400 X\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.0 400 X\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"HTTP/1.1 101 Switching\r\nUpgrade: x\r\n folded\r\n\r\n",
            b"HTTP/1.1 101 Switch",
        ];
        for wire in cases {
            let (answer, _) = answer(wire, wire.len()).await;
            assert!(
                matches!(answer, Err(Failed::Bad(_))),
                "{}: {answer:?}",
                String::from_utf8_lossy(wire)
            );
        }
        let (answer, _) = answer(b"", 1).await;
        assert!(matches!(answer, Err(Failed::Unanswered(_))), "{answer:?}");
    }

    #[tokio::test]
    async fn a_body_cut_short_or_badly_chunked_is_an_error() {
        for wire in [
            &b"HTTP/1.1 400 X\r\nContent-Length: 9\r\n\r\nshort"[..],
            b"HTTP/1.1 400 X\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
            b"HTTP/1.1 400 X\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        ] {
            let (answer, rest) = answer(wire, 2).await;
            assert!(matches!(answer, Ok(Answer::Declined(..))));
            assert!(
                rest.starts_with(b"error: "),
                "{}",
                String::from_utf8_lossy(&rest)
            );
        }
    }

    #[tokio::test]
    async fn a_head_over_hypers_buffer_is_refused() {
        let mut wire = b"HTTP/1.1 101 Switching Protocols\r\n".to_vec();
        while wire.len() <= MAX_HEAD {
            wire.extend_from_slice(b"x-pad: ");
            wire.extend_from_slice(&[b'a'; 8000]);
            wire.extend_from_slice(b"\r\n");
        }
        let wire: &'static [u8] = wire.leak();
        let (answer, _) = answer(wire, 64 * 1024).await;
        assert!(matches!(answer, Err(Failed::Bad(_))), "{answer:?}");
    }

    #[tokio::test]
    async fn a_buffer_a_long_head_grew_is_not_kept_for_the_next_exchange() {
        let mut wire = b"HTTP/1.1 200 OK\r\nx-pad: ".to_vec();
        wire.extend_from_slice(&[b'a'; 64 * 1024]);
        wire.extend_from_slice(b"\r\ncontent-length: 0\r\n\r\n");
        let (mut ours, mut theirs) = tokio::io::duplex(1 << 20);
        theirs.write_all(&wire).await.unwrap();
        let mut buf = BytesMut::new();
        let answer = exchange_in(&mut ours, b"GET / HTTP/1.1\r\n\r\n", &mut buf).await;
        assert!(matches!(answer, Ok(Answer::Declined(..))), "{answer:?}");
        drop(answer);
        // Were the grown memory still this buffer's, the next read would take it back.
        buf.reserve(READ);
        assert!(buf.capacity() <= KEEP, "kept {} bytes", buf.capacity());
    }
}
