//! The raw exchange (`fast::switch`) against hyper's client, answer by answer: the same
//! backend bytes must give the same status, headers, reason phrase and body or bytes
//! behind a 101, or the same error, whichever way the upgrade went out.

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::BodyExt;
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;

/// What came of one upgrade request, as far as the client can tell.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    Answer {
        status: u16,
        headers: Vec<(String, Vec<u8>)>,
        reason: Option<Vec<u8>>,
        /// A declined answer's body, or the bytes behind a 101.
        rest: Result<Vec<u8>, ()>,
    },
    /// The error's kind (`ProxyError::kind`).
    Failed(&'static str),
}

fn timeouts() -> Timeouts {
    Timeouts {
        response_header: Duration::from_secs(2),
        ..Timeouts::default()
    }
}

/// A connection to a backend that reads one head, writes `wire` in `cut`-byte pieces and
/// closes.
async fn backend(wire: Vec<u8>, cut: usize) -> UpstreamIo {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).await.unwrap_or(0) == 1 {
            head.push(byte[0]);
        }
        s.set_nodelay(true).unwrap();
        for piece in wire.chunks(cut.max(1)) {
            if s.write_all(piece).await.is_err() {
                return;
            }
            // Pacing, not waiting for anything: each piece should reach the reader on
            // its own, so heads and bodies are read cut where `cut` says.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });
    let tcp = TcpStream::connect(addr).await.unwrap();
    MaybeHttpsStream::Http(TokioIo::new(tcp))
}

fn request() -> Request<Body> {
    Request::get("/ws")
        .header("host", "backend")
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .body(full(Bytes::new()))
        .unwrap()
}

fn answer_of(parts: &http::response::Parts, rest: Result<Vec<u8>, ()>) -> Outcome {
    Outcome::Answer {
        status: parts.status.as_u16(),
        headers: parts
            .headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
            .collect(),
        reason: parts
            .extensions
            .get::<hyper::ext::ReasonPhrase>()
            .map(|r| r.as_bytes().to_vec()),
        rest,
    }
}

async fn read_rest(mut io: impl AsyncRead + Unpin, early: &[u8]) -> Result<Vec<u8>, ()> {
    let mut rest = early.to_vec();
    io.read_to_end(&mut rest).await.map_err(|_| ())?;
    Ok(rest)
}

async fn collect<B: http_body::Body<Data = Bytes>>(body: B) -> Result<Vec<u8>, ()> {
    body.collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .map_err(|_| ())
}

async fn raw(wire: &[u8], cut: usize) -> Outcome {
    let io = backend(wire.to_vec(), cut).await;
    let mut head = Vec::new();
    fast::switch::write_head(&request().into_parts().0, &mut head);
    match send_raw(io, head, &timeouts()).await {
        Ok(Answered::Raw(io, fast::switch::Answer::Switched(parts, early))) => {
            answer_of(&parts, read_rest(TokioIo::new(io), &early).await)
        }
        Ok(Answered::Raw(io, fast::switch::Answer::Declined(parts, framing, early, _))) => {
            let body = fast::switch::Declined::new(TokioIo::new(io), early, framing);
            answer_of(&parts, collect(body).await)
        }
        Ok(Answered::Hyper(_)) => unreachable!("a raw request is answered raw"),
        Err(unsent) => Outcome::Failed(unsent.into_error(String::new()).kind()),
    }
}

async fn hyper(wire: &[u8], cut: usize) -> Outcome {
    let io = backend(wire.to_vec(), cut).await;
    match send_hyper(io, request(), "backend", &timeouts()).await {
        Ok(mut res) if res.status() == StatusCode::SWITCHING_PROTOCOLS => {
            let upgrade = hyper::upgrade::on(&mut res);
            let (parts, _) = res.into_parts();
            let rest = match upgrade.await.map(Hijacked::upstream) {
                Ok(far) => read_rest(far.into_stream(), b"").await,
                Err(_) => Err(()),
            };
            answer_of(&parts, rest)
        }
        Ok(res) => {
            let (parts, body) = res.into_parts();
            answer_of(&parts, collect(body).await)
        }
        Err(unsent) => Outcome::Failed(unsent.into_error(String::new()).kind()),
    }
}

async fn same(wire: &[u8], cut: usize) {
    let (raw, hyper) = (raw(wire, cut).await, hyper(wire, cut).await);
    assert_eq!(
        raw,
        hyper,
        "answer {:?} in {cut}-byte pieces",
        String::from_utf8_lossy(wire)
    );
}

#[tokio::test]
async fn the_raw_exchange_ends_as_hypers_client_does() {
    let cases: &[&[u8]] = &[
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nbehind",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 101 Go\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n",
        b"HTTP/1.0 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
        b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n\r\nforbidden",
        b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nUpgra\r\n0\r\nTrailer: x\r\n\r\n",
        b"HTTP/1.1 404 Not Found\r\nA: 1\r\nA: 2\r\n\r\nto the close",
        b"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n",
        b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: gzip\r\n\r\nraw",
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 10\r\n\r\ncut",
        b"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffff\r\n",
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: +1\r\n\r\nx",
        b"HTTP/1.0 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n folded\r\n\r\n",
        b"HTTP/1.1 1010 Big\r\n\r\n",
        b"HTTP/1.1 099 Small\r\n\r\n",
        b"HTTP/2 101 Switching Protocols\r\n\r\n",
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade",
        b"",
    ];
    for wire in cases {
        for cut in [1, 5, wire.len()] {
            same(wire, cut).await;
        }
    }
}

/// One generated answer: an informational one or not before it, its status, a reason,
/// headers, and a body framed one of the ways an answer can be.
fn answers() -> impl Strategy<Value = (Vec<u8>, usize)> {
    let status = prop_oneof![
        Just(101u16),
        Just(200),
        Just(204),
        Just(400),
        Just(403),
        Just(503)
    ];
    let reason = prop_oneof![Just(String::new()), "[A-Za-z ]{1,12}"];
    let header = ("[a-z][a-z-]{0,8}", "[ -~]{0,16}");
    let framing = prop_oneof![
        Just(0u8), // Content-Length
        Just(1),   // chunked
        Just(2),   // to the close
        Just(3),   // Content-Length shorter than the body
    ];
    (
        any::<bool>(),
        status,
        reason,
        prop::collection::vec(header, 0..6),
        framing,
        prop::collection::vec(any::<u8>(), 0..64),
        1usize..40,
    )
        .prop_map(
            |(informational, status, reason, headers, framing, body, cut)| {
                let mut wire = Vec::new();
                if informational {
                    wire.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                }
                wire.extend_from_slice(format!("HTTP/1.1 {status} {reason}\r\n").as_bytes());
                for (name, value) in headers {
                    if ["content-length", "transfer-encoding"].contains(&name.as_str()) {
                        continue;
                    }
                    wire.extend_from_slice(format!("{name}: {}\r\n", value.trim()).as_bytes());
                }
                match framing {
                    0 => wire.extend_from_slice(
                        format!("content-length: {}\r\n\r\n", body.len()).as_bytes(),
                    ),
                    1 => {
                        wire.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n");
                        for chunk in body.chunks(7) {
                            wire.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
                            wire.extend_from_slice(chunk);
                            wire.extend_from_slice(b"\r\n");
                        }
                        wire.extend_from_slice(b"0\r\n\r\n");
                        return (wire, cut);
                    }
                    2 => wire.extend_from_slice(b"\r\n"),
                    _ => wire.extend_from_slice(
                        format!("content-length: {}\r\n\r\n", body.len() / 2).as_bytes(),
                    ),
                }
                wire.extend_from_slice(&body);
                (wire, cut)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn generated_answers_end_as_hypers_client_ends_them((wire, cut) in answers()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(same(&wire, cut));
    }
}
