//! HTTP/2 streams to plain HTTP/1.1 backends, two ways: a stream without a body goes on a
//! raw pooled connection from its own task (`proxy::raw`), one with a body through hyper's
//! HTTP/1.1 client. The same scripted answers (`leafgate_tests::wire`'s
//! paths: every framing, statuses without a body, informational answers, HTTP/1.0, heads
//! over 16 KiB, and broken answers) must reach the client alike either way: status,
//! headers but `date`, body, or the same failure. The scripted answers depend on the path
//! alone, so a `DELETE` without a body and one with a byte of body are asked the same; the
//! backend's echo tells which way each came.

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Either, Empty, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use leafgate_tests::config::{Listener, Route};
use leafgate_tests::wire::ScriptedBackend;
use leafgate_tests::{Config, TestGateway};
use tokio::net::TcpStream;

type Client = SendRequest<Either<Empty<Bytes>, Full<Bytes>>>;

/// What the client saw of one answer: its status, headers (but `date`), and body; or
/// `None` for the body when the stream failed part-way.
#[derive(Debug, PartialEq)]
struct Seen {
    status: StatusCode,
    headers: Vec<(String, String)>,
    body: Option<Bytes>,
}

async fn h2c(addr: std::net::SocketAddr) -> Client {
    let io = TokioIo::new(TcpStream::connect(addr).await.unwrap());
    let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
        .await
        .unwrap();
    tokio::spawn(conn);
    sender
}

/// The answer to a `DELETE` of `path` on `a.example`, or how its stream failed; `with_body`:
/// with a one-byte body, which sends it through hyper's client.
async fn fetch(client: &mut Client, path: &str, with_body: bool) -> Result<Seen, String> {
    fetch_from(client, "a.example", path, with_body).await
}

/// [`fetch`] on `host`.
async fn fetch_from(
    client: &mut Client,
    host: &str,
    path: &str,
    with_body: bool,
) -> Result<Seen, String> {
    let body = if with_body {
        Either::Right(Full::new(Bytes::from_static(b"x")))
    } else {
        Either::Left(Empty::new())
    };
    let req = Request::delete(format!("http://{host}{path}"))
        .body(body)
        .unwrap();
    client.ready().await.map_err(|e| e.to_string())?;
    let res = client.send_request(req).await.map_err(|e| e.to_string())?;
    let (parts, body) = res.into_parts();
    Ok(Seen {
        status: parts.status,
        headers: listed(&parts.headers),
        body: body.collect().await.ok().map(|b| b.to_bytes()),
    })
}

fn listed(headers: &HeaderMap) -> Vec<(String, String)> {
    let mut lines: Vec<(String, String)> = headers
        .iter()
        .filter(|(name, _)| *name != http::header::DATE)
        .map(|(n, v)| {
            (
                n.to_string(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    lines.sort();
    lines
}

/// What the two ways are held to alike. leafgate's own answers say why in their body, in
/// words of the way that failed: the same status and kind of answer must come. A stream
/// that fails (its answer broke off, or the client refused it) must fail either way; whether
/// the head of an answer whose body broke off reached the client before the stream's reset
/// depends on when the reset is written (the raw way reads the break in the same turn as
/// the head, and h2 drops a reset stream's unsent frames), so a failure is one outcome.
fn held(seen: Result<Seen, String>) -> Result<Seen, &'static str> {
    let mut seen = seen.map_err(|_| "the stream failed")?;
    if seen.body.is_none() {
        return Err("the stream failed");
    }
    if seen
        .headers
        .iter()
        .any(|(n, v)| n == "cache-control" && v == "no-store")
        && seen.status.is_server_error()
    {
        seen.body = Some(Bytes::from(seen.status.to_string()));
        seen.headers.retain(|(n, _)| n != "content-length");
    }
    Ok(seen)
}

#[tokio::test]
async fn a_stream_without_a_body_gets_the_answer_hypers_client_would_have_given() {
    let backend = ScriptedBackend::start().await;
    let gw = TestGateway::start(
        Config::new()
            .listener(Listener::new("h2c"))
            .route(Route::host("*").backend(backend.addr)),
    )
    .await;
    let mut client = h2c(gw.addr("h2c")).await;

    // Each way is taken: only hyper's client sends a body.
    let raw = fetch(&mut client, "/echo", false).await.unwrap();
    let hyper = fetch(&mut client, "/echo", true).await.unwrap();
    let echo =
        |s: &Seen| String::from_utf8_lossy(s.body.as_deref().unwrap_or_default()).into_owned();
    assert!(echo(&raw).starts_with("DELETE /echo\n"), "{}", echo(&raw));
    assert!(echo(&raw).contains("host: a.example\n"), "{}", echo(&raw));
    assert!(!echo(&raw).contains("transfer-encoding"), "{}", echo(&raw));
    assert!(!echo(&raw).contains("content-length"), "{}", echo(&raw));
    assert!(
        echo(&hyper).contains("content-length: 1\n"),
        "{}",
        echo(&hyper)
    );
    assert!(echo(&hyper).ends_with("\n\nx"), "{}", echo(&hyper));

    let paths = [
        "/chunked/5,4000,1",
        "/chunked/3,70000/ext/trailer",
        "/chunked/",
        "/close/0",
        "/close/70000",
        "/status/200",
        "/status/204",
        "/status/304",
        "/status/404",
        "/status/500",
        "/hop",
        "/early-hints",
        "/named/Content-Length",
        "/named/x-kind/close",
        "/named/Transfer-Encoding",
        "/lengths/5",
        "/lengths/5,5",
        "/lengths/5/5",
        "/lengths/5/6",
        "/lengths/+5",
        "/lengths-named/5",
        "/cl-te",
        "/http10/close/100",
        "/http10/length/100",
        "/http10/keep-alive/100",
        "/big-head/40000",
        "/bad-head",
        "/no-answer",
        "/short-body",
        "/bad-chunk",
    ];
    // Twice over, so the second round runs on connections the first one left pooled.
    for round in 1..=2 {
        for path in paths {
            let raw = held(fetch(&mut client, path, false).await);
            let hyper = held(fetch(&mut client, path, true).await);
            assert_eq!(raw, hyper, "{path}, round {round}: the two ways differ");
        }
    }
    drop(gw);
}

#[tokio::test]
async fn a_dead_or_silent_backend_gets_the_same_502_and_504_either_way() {
    let closed = leafgate_tests::upstream::closed_port();
    let stall = leafgate_tests::upstream::TestUpstream::start("staller").await;
    let gw = TestGateway::start(
        Config::new()
            .listener(Listener::new("h2c"))
            .route(Route::host("down.example").backend(closed))
            .route(
                Route::host("slow.example")
                    .backend(stall.addr)
                    .timeout("response_header", "300ms"),
            ),
    )
    .await;
    let mut client = h2c(gw.addr("h2c")).await;
    for with_body in [false, true] {
        let way = if with_body { "hyper's" } else { "raw" };
        let down = fetch_from(&mut client, "down.example", "/", with_body)
            .await
            .unwrap();
        assert_eq!(down.status, StatusCode::BAD_GATEWAY, "{way} way");
        let text = String::from_utf8_lossy(down.body.as_deref().unwrap_or_default()).into_owned();
        assert!(
            text.contains(&closed.to_string()) && text.contains("refused"),
            "{way} way: {text}"
        );

        let started = std::time::Instant::now();
        let slow = fetch_from(&mut client, "slow.example", "/stall", with_body)
            .await
            .unwrap();
        assert_eq!(slow.status, StatusCode::GATEWAY_TIMEOUT, "{way} way");
        let text = String::from_utf8_lossy(slow.body.as_deref().unwrap_or_default()).into_owned();
        assert!(text.contains("no response head"), "{way} way: {text}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{way} way"
        );
    }
    drop(gw);
}
