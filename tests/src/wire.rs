//! HTTP/1.1 on the wire, for tests that compare two ways of serving the same bytes: a
//! client that writes exact bytes (in pieces) and reads back every answer as a list of
//! facts, and a scripted backend that echoes what reached it and answers as the request's
//! path says.
//!
//! The client's [`Outcome`] keeps what a client can rely on: each answer's version, status,
//! reason, headers (names lowercased, sorted; `date` left out), its framing lines apart
//! and its decoded body, then whether the connection ended cleanly or in the middle of an
//! answer. Two servers that give equal outcomes for the same bytes behave the same for
//! every client. The client reads as RFC 9112 §6.3 tells a user agent to: a
//! `Content-Length` that is not one valid number (a list, differing lines, a sign) breaks
//! the connection, as where the answer ends is then anyone's guess.
//!
//! The backend's paths:
//! - anything else: `200` with `content-length`, the body an echo of the request as it
//!   arrived: `METHOD target`, its headers (lowercased, sorted), a blank line, the body;
//! - `/chunked/<sizes>[/ext][/trailer]`: a chunked body of those chunk sizes (comma-separated),
//!   with chunk extensions and a trailer when asked;
//! - `/close/<n>`: `n` bytes with no length, then the connection closes;
//! - `/status/<code>`: that status, a 2-byte body unless the status has none;
//! - `/hop`: hop-by-hop headers in the answer (`Connection` naming one);
//! - `/early-hints`: a `103` before the `200`;
//! - `/bad-head`: a head no parser takes; `/no-answer`: the connection closes unanswered;
//! - `/short-body`: a length of 10 and 3 bytes, then the close; `/bad-chunk`: a chunk size
//!   that is not hex, mid-body;
//! - `/named/<field>[/close]`: a `Connection` line naming `<field>` (and `close` when asked,
//!   the backend then closing), the field present, a 5-byte body `hello`: sized by
//!   `Content-Length` unless the field is `transfer-encoding` (then chunked);
//! - `/lengths/<line>[/<line>...]`: one `Content-Length` line per segment, a `,` in a
//!   segment written `, ` (a list); the body is as long as the first value that is a
//!   number says (5 when none is);
//! - `/lengths-named/<line>[/<line>...]`: the same, with `Connection: Content-Length`
//!   beside the lines (a length the hop's own field list names);
//! - `/cl-te`: `Transfer-Encoding: chunked` and `Content-Length: 3` on a 5-byte chunked body;
//! - `/http10/close/<n>`, `/http10/length/<n>`, `/http10/keep-alive/<n>`: an `HTTP/1.0`
//!   answer of `n` bytes, to the close, sized, or sized and kept alive;
//! - `/big-head/<n>`: a header line of `n` bytes before a 2-byte body;
//! - `/early/<code>`: that status as soon as the head is in, before any of the body is
//!   read (an upload the backend will not take), `connection: close` and a body `early`;
//!   then the backend lingers: it shuts its side and reads the body's rest until the
//!   other end closes (closed at once, its unread bytes would reset the connection);
//! - `/hints-first...`: a `103` as soon as the head is in, before any of the body is read
//!   (a handler that starts before it reads the body), then the echo once the body is in.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Every answer a client read on one connection, and how the connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub answers: Vec<Answer>,
    pub end: End,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub version: u8,
    pub status: u16,
    pub reason: String,
    pub headers: Vec<(String, String)>,
    /// The `content-length` and `transfer-encoding` lines, in order, as `name: value`
    /// (the name lowercased, the value as sent).
    pub framing: Vec<String>,
    pub body: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The server closed after a whole answer (or before any).
    Closed,
    /// Still open when the client stopped waiting.
    Open,
    /// Closed, or bytes that are no answer, in the middle of one.
    Broken,
}

/// Writes `pieces` to `addr` one after another, then reads every answer until the server
/// closes or stays silent for `quiet`. `methods` are the requests' methods in order (a
/// `HEAD` answer has no body).
pub async fn exchange(
    addr: SocketAddr,
    pieces: &[Vec<u8>],
    methods: &[&str],
    quiet: Duration,
) -> Outcome {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    tcp.set_nodelay(true).unwrap();
    for piece in pieces {
        if tcp.write_all(piece).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let closed = loop {
        match tokio::time::timeout(quiet, tcp.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => break false,
        }
    };
    read_answers(&got, methods, closed)
}

/// Writes `first` to `addr`, waits up to `wait` for `before` whole final answers, then
/// writes `rest` and reads on as [`exchange`] does. Returns every answer read and how the
/// connection ended, and whether those answers had come before `rest` was written (an
/// early answer to an upload whose body `rest` ends).
pub async fn answered_early(
    addr: SocketAddr,
    (first, before): (&[u8], usize),
    rest: &[u8],
    methods: &[&str],
    wait: Duration,
    quiet: Duration,
) -> (Outcome, bool) {
    let finals = |o: &Outcome| o.answers.iter().filter(|a| a.status >= 200).count();
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    tcp.set_nodelay(true).unwrap();
    tcp.write_all(first)
        .await
        .expect("the head and the body's start");
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let deadline = tokio::time::Instant::now() + wait;
    let mut closed = false;
    while finals(&read_answers(&got, methods, false)) < before {
        match tokio::time::timeout_at(deadline, tcp.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                closed = true;
                break;
            }
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    let early = finals(&read_answers(&got, methods, closed)) >= before;
    // The server may have stopped reading: what it does not take is its business.
    let _ = tcp.write_all(rest).await;
    while !closed {
        match tokio::time::timeout(quiet, tcp.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => closed = true,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    (read_answers(&got, methods, closed), early)
}

/// The answers in `bytes`, as [`exchange`] reports them.
pub fn read_answers(mut bytes: &[u8], methods: &[&str], closed: bool) -> Outcome {
    let mut answers = Vec::new();
    let mut methods = methods.iter();
    let mut method = methods.next().copied();
    loop {
        if bytes.is_empty() {
            let end = if closed { End::Closed } else { End::Open };
            return Outcome { answers, end };
        }
        let mut slots = [httparse::EMPTY_HEADER; 128];
        let mut res = httparse::Response::new(&mut slots);
        let len = match res.parse(bytes) {
            Ok(httparse::Status::Complete(len)) => len,
            _ => {
                return Outcome {
                    answers,
                    end: End::Broken,
                };
            }
        };
        let status = res.code.unwrap_or(0);
        // `Some(None)`: a length that is not one valid number.
        let mut length: Option<Option<usize>> = None;
        let mut chunked = false;
        let mut headers = Vec::new();
        let mut framing = Vec::new();
        for h in res.headers.iter() {
            let name = h.name.to_ascii_lowercase();
            let value = String::from_utf8_lossy(h.value).into_owned();
            match name.as_str() {
                "content-length" => {
                    let n = value
                        .bytes()
                        .all(|b| b.is_ascii_digit())
                        .then(|| value.parse::<usize>().ok())
                        .flatten();
                    length = match length {
                        None => Some(n),
                        Some(before) if before == n => Some(n),
                        Some(_) => Some(None),
                    };
                    framing.push(format!("{name}: {value}"));
                }
                "transfer-encoding" => {
                    chunked = value.to_ascii_lowercase().ends_with("chunked");
                    framing.push(format!("{name}: {value}"));
                }
                "date" => {}
                _ => headers.push((name, value)),
            }
        }
        headers.sort();
        let version = res.version.unwrap_or(9);
        let reason = res.reason.unwrap_or("").to_string();
        bytes = &bytes[len..];
        let no_body = (100..200).contains(&status)
            || status == 204
            || status == 304
            || method == Some("HEAD");
        let body = if no_body {
            Vec::new()
        } else if chunked {
            match dechunk(bytes) {
                Some((body, used)) => {
                    bytes = &bytes[used..];
                    body
                }
                None => {
                    return Outcome {
                        answers,
                        end: End::Broken,
                    };
                }
            }
        } else if let Some(n) = length {
            let Some(n) = n else {
                return Outcome {
                    answers,
                    end: End::Broken,
                };
            };
            if bytes.len() < n {
                return Outcome {
                    answers,
                    end: End::Broken,
                };
            }
            let body = bytes[..n].to_vec();
            bytes = &bytes[n..];
            body
        } else {
            let body = bytes.to_vec();
            bytes = &[];
            if !closed {
                return Outcome {
                    answers,
                    end: End::Broken,
                };
            }
            body
        };
        if status >= 200 {
            method = methods.next().copied();
        }
        answers.push(Answer {
            version,
            status,
            reason,
            headers,
            framing,
            body: String::from_utf8_lossy(&body).into_owned(),
        });
    }
}

/// A chunked body at the start of `bytes`: its data and the bytes it took, trailers read
/// and dropped.
pub fn dechunk(bytes: &[u8]) -> Option<(Vec<u8>, usize)> {
    let mut at = 0;
    let mut data = Vec::new();
    loop {
        let line_end = find(&bytes[at..], b"\r\n")? + at;
        let line = std::str::from_utf8(&bytes[at..line_end]).ok()?;
        let size = usize::from_str_radix(line.split(';').next()?.trim(), 16).ok()?;
        at = line_end + 2;
        if size == 0 {
            loop {
                let end = find(&bytes[at..], b"\r\n")? + at;
                let empty = end == at;
                at = end + 2;
                if empty {
                    return Some((data, at));
                }
            }
        }
        if bytes.len() < at + size + 2 || &bytes[at + size..at + size + 2] != b"\r\n" {
            return None;
        }
        data.extend_from_slice(&bytes[at..at + size]);
        at += size + 2;
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A scripted HTTP/1.1 backend on `127.0.0.1:0` (see the module's paths); keep-alive.
pub struct ScriptedBackend {
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for ScriptedBackend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ScriptedBackend {
    pub async fn start() -> ScriptedBackend {
        let socket = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = socket.local_addr().unwrap();
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = socket.accept().await {
                tokio::spawn(serve(tcp));
            }
        });
        ScriptedBackend { addr, task }
    }
}

async fn serve(mut tcp: TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        // A whole request: head, then its body by length or chunks.
        let mut hinted = false;
        let request = loop {
            if let Some(status) = early_status(&buf) {
                return answer_early(tcp, status).await;
            }
            if !hinted && head_path(&buf).is_some_and(|p| p.starts_with("/hints-first")) {
                hinted = true;
                let hints = b"HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n";
                if tcp.write_all(hints).await.is_err() {
                    return;
                }
            }
            if let Some(r) = take_request(&mut buf) {
                break r;
            }
            match tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let Some((method, target, echo)) = request else {
            return;
        };
        let answer = script(&method, &target, &echo);
        if tcp.write_all(&answer.bytes).await.is_err() || answer.close {
            let _ = tcp.shutdown().await;
            return;
        }
    }
}

/// The status an `/early/<code>` request whose head is complete at the start of `buf`
/// asks for.
fn early_status(buf: &[u8]) -> Option<u16> {
    head_path(buf)?.strip_prefix("/early/")?.parse().ok()
}

/// The target of the request whose head is complete at the start of `buf`.
fn head_path(buf: &[u8]) -> Option<String> {
    let mut slots = [httparse::EMPTY_HEADER; 256];
    let mut req = httparse::Request::new(&mut slots);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(_)) => req.path.map(str::to_string),
        _ => None,
    }
}

/// Answers `status` before the request's body is read, then lingers (see the module).
async fn answer_early(mut tcp: TcpStream, status: u16) {
    let answer = format!(
        "HTTP/1.1 {status} Scripted\r\nconnection: close\r\ncontent-length: 5\r\n\r\nearly"
    );
    if tcp.write_all(answer.as_bytes()).await.is_err() {
        return;
    }
    let _ = tcp.shutdown().await;
    let mut sink = vec![0u8; 16 * 1024];
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        while matches!(tcp.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

/// The request at the start of `buf`, taken out of it: `None` when incomplete,
/// `Some(None)` when it does not parse.
#[allow(clippy::type_complexity, reason = "a test helper's one return")]
fn take_request(buf: &mut Vec<u8>) -> Option<Option<(String, String, String)>> {
    let mut slots = [httparse::EMPTY_HEADER; 256];
    let mut req = httparse::Request::new(&mut slots);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return None,
        Err(_) => return Some(None),
    };
    let method = req.method.unwrap_or("").to_string();
    let target = req.path.unwrap_or("").to_string();
    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_ascii_lowercase(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    headers.sort();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked"));
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let (body, used) = if chunked {
        dechunk(&buf[len..])?
    } else {
        if buf.len() < len + length {
            return None;
        }
        (buf[len..len + length].to_vec(), length)
    };
    let mut echo = format!("{method} {target}\n");
    for (n, v) in &headers {
        let _ = writeln!(echo, "{n}: {v}");
    }
    echo.push('\n');
    echo.push_str(&String::from_utf8_lossy(&body));
    buf.drain(..len + used);
    Some(Some((method, target, echo)))
}

/// The `n` bytes of body the scripted answers carry: `abc...z` over and over.
pub fn filler(n: usize) -> String {
    (0..n).map(|i| (b'a' + (i % 26) as u8) as char).collect()
}

struct Scripted {
    bytes: Vec<u8>,
    close: bool,
}

fn script(method: &str, target: &str, echo: &str) -> Scripted {
    let parts: Vec<&str> = target.trim_start_matches('/').split('/').collect();
    let keep = |bytes: Vec<u8>| Scripted {
        bytes,
        close: false,
    };
    let no_body = method == "HEAD";
    match parts.as_slice() {
        ["chunked", sizes, flags @ ..] => {
            let mut out = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nx-kind: chunked\r\n\r\n".to_vec();
            if !no_body {
                for size in sizes.split(',').filter_map(|s| s.parse::<usize>().ok()).filter(|&s| s > 0) {
                    let ext = if flags.contains(&"ext") { ";name=value" } else { "" };
                    out.extend_from_slice(format!("{size:x}{ext}\r\n{}\r\n", filler(size)).as_bytes());
                }
                out.extend_from_slice(b"0\r\n");
                if flags.contains(&"trailer") {
                    out.extend_from_slice(b"x-trailer: 1\r\n");
                }
                out.extend_from_slice(b"\r\n");
            }
            keep(out)
        }
        ["close", n] => {
            let n = n.parse().unwrap_or(0);
            Scripted {
                bytes: format!("HTTP/1.1 200 OK\r\nx-kind: close\r\n\r\n{}", filler(n)).into_bytes(),
                close: true,
            }
        }
        ["status", code] => {
            let code: u16 = code.parse().unwrap_or(200);
            let body = if matches!(code, 204 | 304) || no_body { "" } else { "ok" };
            let length = if code == 204 { String::new() } else { "content-length: 2\r\n".to_string() };
            keep(format!("HTTP/1.1 {code} Scripted\r\n{length}\r\n{body}").into_bytes())
        }
        ["hop"] => keep(
            b"HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\nProxy-Authenticate: x\r\nX-End: 1\r\ncontent-length: 3\r\n\r\nhop"
                .to_vec(),
        ),
        ["early-hints"] => keep(
            b"HTTP/1.1 103 Early Hints\r\nlink: </a>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhints".to_vec(),
        ),
        ["bad-head"] => Scripted {
            bytes: b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n".to_vec(),
            close: true,
        },
        ["no-answer"] => Scripted {
            bytes: Vec::new(),
            close: true,
        },
        ["short-body"] => Scripted {
            bytes: b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc".to_vec(),
            close: true,
        },
        ["bad-chunk"] => Scripted {
            bytes: b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\nxx\r\n0\r\n\r\n".to_vec(),
            close: true,
        },
        ["named", field, flags @ ..] => {
            let close = flags.contains(&"close");
            let tokens = if close { format!("close, {field}") } else { (*field).to_string() };
            let mut out = format!("HTTP/1.1 200 OK\r\nConnection: {tokens}\r\n");
            match field.to_ascii_lowercase().as_str() {
                "transfer-encoding" => out.push_str("Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
                "content-length" => out.push_str("Content-Length: 5\r\n\r\nhello"),
                _ => out.push_str(&format!("{field}: named\r\nContent-Length: 5\r\n\r\nhello")),
            }
            Scripted {
                bytes: out.into_bytes(),
                close,
            }
        }
        [kind @ ("lengths" | "lengths-named"), lines @ ..] => {
            let mut out = "HTTP/1.1 200 OK\r\n".to_string();
            if *kind == "lengths-named" {
                out.push_str("Connection: Content-Length\r\n");
            }
            for l in lines {
                out.push_str(&format!("Content-Length: {}\r\n", l.replace(',', ", ")));
            }
            let n = lines
                .iter()
                .flat_map(|l| l.split(','))
                .find_map(|v| v.bytes().all(|b| b.is_ascii_digit()).then(|| v.parse::<usize>().ok()).flatten())
                .unwrap_or(5);
            out.push_str(&format!("\r\n{}", filler(n)));
            keep(out.into_bytes())
        }
        ["cl-te"] => keep(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_vec(),
        ),
        ["http10", kind, n] => {
            let n: usize = n.parse().unwrap_or(0);
            let head = match *kind {
                "length" => format!("content-length: {n}\r\n"),
                "keep-alive" => format!("Connection: keep-alive\r\ncontent-length: {n}\r\n"),
                _ => String::new(),
            };
            Scripted {
                bytes: format!("HTTP/1.0 200 OK\r\nx-kind: http10\r\n{head}\r\n{}", filler(n)).into_bytes(),
                close: *kind != "keep-alive",
            }
        }
        ["big-head", n] => {
            let n = n.parse().unwrap_or(0);
            keep(format!("HTTP/1.1 200 OK\r\nx-big: {}\r\ncontent-length: 2\r\n\r\nok", filler(n)).into_bytes())
        }
        _ => {
            let body = if no_body { "" } else { echo };
            keep(format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nx-kind: echo\r\n\r\n{body}", echo.len()).into_bytes())
        }
    }
}
