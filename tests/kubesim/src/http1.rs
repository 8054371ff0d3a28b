//! HTTP/1.1 by hand on a raw connection that is about to be upgraded: writing a request head
//! (as Go's `req.Write` does for `UpgradeAwareHandler`) and reading the response head with
//! its raw bytes kept, so a `101` can be relayed and the bytes after it spliced. Also reads
//! a refusal's body. Knows nothing of SPDY, WebSocket or Kubernetes.

use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The most header bytes we read before giving up on a response head.
const MAX_HEAD: usize = 64 * 1024;

/// Why a response head could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    #[error("reading the response: {0}")]
    Io(#[from] std::io::Error),
    #[error("the connection closed before a complete response head")]
    Eof,
    #[error("the response head is longer than {MAX_HEAD} bytes")]
    TooLong,
    #[error("malformed response head: {0:?}")]
    Malformed(String),
}

/// A response head: status, headers in order, and the exact bytes it came as.
#[derive(Debug, Clone)]
pub struct ResponseHead {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub raw: Bytes,
}

impl ResponseHead {
    /// The first value of `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Writes `method path HTTP/1.1`, `Host`, then `headers` in order, then the blank line.
pub async fn write_request<W: AsyncWrite + Unpin>(
    w: &mut W,
    method: &str,
    path_and_query: &str,
    host: &str,
    headers: &[(String, String)],
) -> std::io::Result<()> {
    let mut out = format!("{method} {path_and_query} HTTP/1.1\r\nHost: {host}\r\n");
    for (k, v) in headers {
        out.push_str(k);
        out.push_str(": ");
        out.push_str(v);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    w.write_all(out.as_bytes()).await?;
    w.flush().await
}

/// Reads one response head. Bytes past it stay in `buf` (the upgraded protocol's first).
pub async fn read_head<R: AsyncRead + Unpin>(
    r: &mut R,
    buf: &mut BytesMut,
) -> Result<ResponseHead, HeadError> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let raw = buf.split_to(end + 4).freeze();
            return parse_head(raw);
        }
        if buf.len() > MAX_HEAD {
            return Err(HeadError::TooLong);
        }
        if r.read_buf(buf).await? == 0 {
            return Err(HeadError::Eof);
        }
    }
}

fn parse_head(raw: Bytes) -> Result<ResponseHead, HeadError> {
    let text = String::from_utf8_lossy(&raw).into_owned();
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| HeadError::Malformed(status_line.to_string()))?;
    let headers = lines
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.split_once(':')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| HeadError::Malformed(l.to_string()))
        })
        .collect::<Result<_, _>>()?;
    Ok(ResponseHead {
        status,
        headers,
        raw,
    })
}

/// Reads the body after `head` (Content-Length, chunked, or to EOF), at most `limit` bytes
/// and within `deadline`; what arrived by then is returned.
pub async fn read_body<R: AsyncRead + Unpin>(
    r: &mut R,
    mut buf: BytesMut,
    head: &ResponseHead,
    limit: usize,
    deadline: Duration,
) -> Vec<u8> {
    let chunked = head
        .header("transfer-encoding")
        .is_some_and(|t| t.eq_ignore_ascii_case("chunked"));
    let length = head
        .header("content-length")
        .and_then(|l| l.parse::<usize>().ok());
    let read = async {
        if chunked {
            return dechunk(r, &mut buf, limit).await;
        }
        let want = length.unwrap_or(usize::MAX).min(limit);
        while buf.len() < want {
            match r.read_buf(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        buf.truncate(want.min(buf.len()));
        buf.to_vec()
    };
    tokio::time::timeout(deadline, read)
        .await
        .unwrap_or_default()
}

async fn dechunk<R: AsyncRead + Unpin>(r: &mut R, buf: &mut BytesMut, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < limit {
        let Some(eol) = buf.windows(2).position(|w| w == b"\r\n") else {
            match r.read_buf(buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => continue,
            }
        };
        let size_line = String::from_utf8_lossy(&buf[..eol]).into_owned();
        let size_hex = size_line.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_hex, 16) else {
            break;
        };
        if size == 0 {
            break;
        }
        while buf.len() < eol + 2 + size + 2 {
            match r.read_buf(buf).await {
                Ok(0) | Err(_) => {
                    buf.advance((eol + 2).min(buf.len()));
                    out.extend_from_slice(buf);
                    out.truncate(limit);
                    return out;
                }
                Ok(_) => {}
            }
        }
        buf.advance(eol + 2);
        out.extend_from_slice(&buf[..size]);
        buf.advance(size + 2);
    }
    out.truncate(limit);
    out
}

/// Percent-encodes a query component as Go's `url.QueryEscape` does (space as `+`).
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b))
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Encodes pairs as Go's `url.Values.Encode` does: sorted by key (stable, so repeated keys
/// keep their order).
pub fn encode_query(pairs: &[(&str, String)]) -> String {
    let mut sorted: Vec<&(&str, String)> = pairs.iter().collect();
    sorted.sort_by_key(|(k, _)| *k);
    sorted
        .iter()
        .map(|(k, v)| format!("{}={}", query_escape(k), query_escape(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn head_then_leftover_then_chunked_body() {
        let wire = b"HTTP/1.1 403 Forbidden\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let mut r = &wire[..];
        let mut buf = BytesMut::new();
        let head = read_head(&mut r, &mut buf).await.unwrap();
        assert_eq!(head.status, 403);
        assert_eq!(head.header("x-a"), Some("1"));
        assert!(head.raw.ends_with(b"chunked\r\n\r\n"));
        let body = read_body(&mut r, buf, &head, 1024, Duration::from_secs(1)).await;
        assert_eq!(body, b"abcde");
    }

    #[tokio::test]
    async fn content_length_body_is_capped() {
        let wire = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 10\r\n\r\n0123456789";
        let mut r = &wire[..];
        let mut buf = BytesMut::new();
        let head = read_head(&mut r, &mut buf).await.unwrap();
        assert_eq!(
            read_body(&mut r, buf, &head, 4, Duration::from_secs(1)).await,
            b"0123"
        );
        let mut bad = &b"SPDY\r\n\r\n"[..];
        assert!(matches!(
            read_head(&mut bad, &mut BytesMut::new()).await,
            Err(HeadError::Malformed(_))
        ));
    }

    #[test]
    fn query_like_go() {
        assert_eq!(
            encode_query(&[
                ("tty", "1".into()),
                ("command", "sh".into()),
                ("command", "echo a&b".into()),
                ("input", "1".into()),
            ]),
            "command=sh&command=echo+a%26b&input=1&tty=1"
        );
    }
}
