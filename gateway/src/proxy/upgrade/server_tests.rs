//! The node API's upgrades read in place (`listener::upgrades`) against hyper's server, both
//! halves: a head `fast::request::upgrade` takes must be the request hyper's server hands a
//! service for the same bytes (method, target, version, every header line in order), and
//! `fast::switch::write_switched` must write a 101 byte for byte as hyper's server writes
//! the same answer (the `date` value aside).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::super::fast::request::{self, Upgrade};
use super::super::fast::switch::write_switched;
use super::*;

/// A request as a service sees it.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    method: String,
    uri: String,
    version: http::Version,
    headers: Vec<(String, Vec<u8>)>,
}

impl Seen {
    fn of(parts: &http::request::Parts) -> Seen {
        Seen {
            method: parts.method.to_string(),
            uri: parts.uri.to_string(),
            version: parts.version,
            headers: parts
                .headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.as_bytes().to_vec()))
                .collect(),
        }
    }
}

/// Sends `head` to hyper's HTTP/1.1 server, whose service notes the request and answers
/// `answer()`; returns what the service saw (`None`: hyper refused the head) and the
/// answer's head as hyper wrote it.
async fn hyper_server(
    head: &[u8],
    answer: impl Fn() -> Response<Body> + Send + Sync + 'static,
) -> (Option<Seen>, Vec<u8>) {
    let (mut client, server) = tokio::io::duplex(1 << 20);
    let seen = Arc::new(Mutex::new(None));
    let noted = seen.clone();
    let answer = Arc::new(answer);
    let svc = service_fn(move |req: Request<Incoming>| {
        *noted.lock().unwrap() = Some(Seen::of(&req.into_parts().0));
        let res = answer();
        async move { Ok::<_, std::convert::Infallible>(res) }
    });
    let conn = http1::Builder::new()
        .serve_connection(TokioIo::new(server), svc)
        .with_upgrades();
    let served = tokio::spawn(conn);
    client.write_all(head).await.unwrap();
    let mut out = Vec::new();
    let mut byte = [0u8; 1];
    let read_head = async {
        while !out.ends_with(b"\r\n\r\n") && client.read(&mut byte).await.unwrap_or(0) == 1 {
            out.push(byte[0]);
        }
    };
    tokio::time::timeout(Duration::from_secs(5), read_head)
        .await
        .expect("hyper answers within 5 s");
    served.abort();
    let seen = seen.lock().unwrap().take();
    (seen, out)
}

fn switched() -> Response<Body> {
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .body(full(Bytes::new()))
        .unwrap()
}

/// Every `date` value replaced: hyper's and leafgate's clocks may tick between the two.
fn dateless(head: &[u8]) -> String {
    String::from_utf8_lossy(head)
        .split("\r\n")
        .map(|line| match line.strip_prefix("date: ") {
            Some(_) => "date: *",
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\r\n")
}

/// The head `upgrade` takes at the start of `bytes` must be what hyper's server hands its
/// service; one it does not take says why.
async fn taken_as_hyper_takes(bytes: &[u8]) -> Result<(), String> {
    match request::upgrade(bytes) {
        Upgrade::Taken(parts, len) => {
            let (hyper, _) = hyper_server(&bytes[..len], switched).await;
            let ours = Seen::of(&parts);
            match hyper {
                Some(hyper) if hyper == ours => Ok(()),
                other => Err(format!("taken as {ours:?}, hyper saw {other:?}")),
            }
        }
        Upgrade::Other(why) => Err(why.to_string()),
        Upgrade::Partial => Err("partial".to_string()),
    }
}

const SPDY_EXEC: &[u8] = b"POST /exec/apps/web/main?command=sh&input=1&output=1&tty=1 HTTP/1.1\r\n\
Host: 127.0.0.1:10250\r\nUser-Agent: kube-apiserver/v1.37.1\r\nContent-Length: 0\r\n\
Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\
X-Stream-Protocol-Version: v3.channel.k8s.io\r\n\r\n";

#[tokio::test]
async fn a_taken_head_is_the_request_hypers_server_hands_over() {
    let heads: &[&[u8]] = &[
        b"POST /exec/apps/web/main?command=sh&input=1&output=1&tty=1 HTTP/1.1\r\n\
Host: 127.0.0.1:10250\r\nUser-Agent: kube-apiserver/v1.37.1\r\n\
Connection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\
X-Stream-Protocol-Version: v3.channel.k8s.io\r\n\r\n",
        b"GET /exec/apps/web/main?command=ls&command=-l&output=1 HTTP/1.1\r\nHost: node\r\n\
Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: v5.channel.k8s.io, v4.channel.k8s.io\r\n\r\n",
        // No Connection: hyper hands it over all the same.
        b"GET /portForward/apps/web HTTP/1.1\r\nHost: node\r\nupgrade: SPDY/3.1\r\n\r\n",
        // Case, repeated lines, an empty value, a tab and bytes past ASCII in values.
        b"POST /attach/apps/web/main?stdin=1 HTTP/1.1\r\nhOsT: node\r\nUPGRADE: SPDY/3.1\r\ncOnNeCtIoN: upgrade\r\n\
X-A: 1\r\nx-a: 2\r\nX-Empty:\r\nX-Tab: a\tb\r\nX-Latin: caf\xe9\r\n\r\n",
        // Bare LF line ends: httparse reads them, for hyper as here.
        b"GET /exec/a/b/c HTTP/1.1\nHost: node\nUpgrade: x\n\n",
        // Percent escapes and every sub-delimiter in the target.
        b"GET /containerLogs/apps/web/main?since=2026-11-29T00%3A00%3A00Z&x=!$&'()*+,;=:@ HTTP/1.1\r\n\
Host: node\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    ];
    // What RFC 9112 refuses (no Host, two of them) hyper's server hands over, and the
    // front refuses; the raw read leaves it to hyper's path, so both answer alike.
    for head in [
        &b"GET /portForward/apps/web HTTP/1.1\r\nupgrade: SPDY/3.1\r\n\r\n"[..],
        b"GET /exec/a/b/c HTTP/1.1\r\nHost: a\r\nHost: b\r\nUpgrade: websocket\r\n\r\n",
    ] {
        assert!(
            matches!(request::upgrade(head), Upgrade::Other(_)),
            "{}",
            String::from_utf8_lossy(head)
        );
    }
    for head in heads {
        if let Err(why) = taken_as_hyper_takes(head).await {
            panic!("{}: {why}", String::from_utf8_lossy(head));
        }
        // Bytes behind the head are not part of it.
        let mut more = head.to_vec();
        more.extend_from_slice(b"\x80\x03\x00\x01");
        match request::upgrade(&more) {
            Upgrade::Taken(_, len) => assert_eq!(len, head.len()),
            other => panic!("{other:?}"),
        }
    }
    // A full header count (hyper's limit) is taken; one more is hyper's 431.
    let mut many = b"GET /exec/a/b/c HTTP/1.1\r\nHost: node\r\nUpgrade: websocket\r\n".to_vec();
    for i in 2..100 {
        many.extend_from_slice(format!("x-{i}: {i}\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    taken_as_hyper_takes(&many).await.unwrap();
    let mut over = many[..many.len() - 2].to_vec();
    over.extend_from_slice(b"x-100: 100\r\n\r\n");
    assert!(matches!(request::upgrade(&over), Upgrade::Other(_)));
}

#[test]
fn what_is_not_an_upgrade_without_a_body_goes_to_hyper_unread() {
    let other: &[&[u8]] = &[
        // A body, however it is sized, or an expectation.
        SPDY_EXEC,
        b"POST /exec/a/b/c HTTP/1.1\r\nUpgrade: x\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST /exec/a/b/c HTTP/1.1\r\nUpgrade: x\r\nExpect: 100-continue\r\n\r\n",
        // Not asking to switch.
        b"GET /pods HTTP/1.1\r\nHost: node\r\n\r\n",
        b"GET /exec/a/b/c HTTP/1.1\r\nConnection: upgrade\r\n\r\n",
        // Other methods and versions.
        b"HEAD /exec/a/b/c HTTP/1.1\r\nUpgrade: x\r\n\r\n",
        b"PUT /exec/a/b/c HTTP/1.1\r\nUpgrade: x\r\n\r\n",
        b"CONNECT node:10250 HTTP/1.1\r\nUpgrade: x\r\n\r\n",
        b"GET /exec/a/b/c HTTP/1.0\r\nUpgrade: x\r\n\r\n",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        // Targets not in plain origin form.
        b"GET http://node/exec/a/b/c HTTP/1.1\r\nUpgrade: x\r\n\r\n",
        b"GET /exec/a/b/c#frag HTTP/1.1\r\nUpgrade: x\r\n\r\n",
        b"GET /exec/a/b/\"c\" HTTP/1.1\r\nUpgrade: x\r\n\r\n",
        // Heads httparse refuses: hyper's 400.
        b"GET /exec/a/b/c HTTP/1.1\r\nUpgrade : x\r\n\r\n",
        b"GET /exec/a/b/c HTTP/1.1\r\nUpgrade: x\r\n folded\r\n\r\n",
        b"GET /exec/a/b/c HTTP/1.1\r\nUpgrade: x\x01\r\n\r\n",
    ];
    for head in other {
        match request::upgrade(head) {
            Upgrade::Other(_) => {}
            taken => panic!("{}: {taken:?}", String::from_utf8_lossy(head)),
        }
    }
    assert!(matches!(
        request::upgrade(b"GET /exec/a/b/c HTTP/1.1\r\nUpgrade: x\r\n"),
        Upgrade::Partial
    ));
}

#[tokio::test]
async fn a_101_is_written_as_hypers_server_writes_it() {
    type Head = fn() -> Response<Body>;
    let answers: &[Head] = &[
        switched,
        || {
            Response::builder()
                .status(101)
                .header("connection", "Upgrade")
                .header("upgrade", "SPDY/3.1")
                .header("x-stream-protocol-version", "v4.channel.k8s.io")
                .header("date", "Sun, 29 Nov 2026 00:00:00 GMT")
                .body(full(Bytes::new()))
                .unwrap()
        },
        // What a 101 cannot carry, repeated lines, several `Connection` lines, a reason
        // of the backend's own, a head on HTTP/1.0.
        || {
            let mut res = Response::builder()
                .status(101)
                .header("upgrade", "websocket")
                .header("connection", "Upgrade")
                .header("content-length", "0")
                .header("transfer-encoding", "chunked")
                .header("trailer", "x-sum")
                .header("connection", "keep-alive")
                .header("sec-websocket-accept", "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
                .header("x-a", "1")
                .header("x-a", "")
                .body(full(Bytes::new()))
                .unwrap();
            res.extensions_mut().insert(
                hyper::ext::ReasonPhrase::try_from(&b"Web Socket Protocol Handshake"[..]).unwrap(),
            );
            res
        },
        || {
            Response::builder()
                .status(101)
                .version(http::Version::HTTP_10)
                .header("upgrade", "x")
                .body(full(Bytes::new()))
                .unwrap()
        },
    ];
    for answer in answers {
        let (_, hyper) = hyper_server(SPDY_EXEC, *answer).await;
        let mut ours = Vec::new();
        write_switched(&answer().into_parts().0, &mut ours);
        assert_eq!(dateless(&ours), dateless(&hyper));
    }
}

/// Heads built from parts that are each sometimes what `upgrade` takes and sometimes not.
fn heads() -> impl Strategy<Value = Vec<u8>> {
    let method = prop::sample::select(vec!["GET", "POST", "POST", "PUT", "HEAD"]);
    let version = prop::sample::select(vec!["HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0"]);
    let target = prop::collection::vec(
        prop::sample::select(vec![
            "/exec", "/a", "/b%20c", "?x=1", "&y=%2F", "/..", "//", "#", "\"", "*", ":@!",
        ]),
        1..5,
    )
    .prop_map(|parts| parts.concat());
    let name = prop::sample::select(vec![
        "Upgrade",
        "upgrade",
        "Connection",
        "X-Stream-Protocol-Version",
        "Sec-WebSocket-Key",
        "Content-Length",
        "Transfer-Encoding",
        "Expect",
        "Host",
        "x-a",
        "X-A",
        "bad name",
        "",
    ]);
    let value = prop::collection::vec(
        prop::sample::select(vec![
            b"SPDY/3.1".to_vec(),
            b"upgrade".to_vec(),
            b"0".to_vec(),
            b" ".to_vec(),
            b"\t".to_vec(),
            vec![0xe9],
            vec![0x7f],
            vec![0x01],
            b",".to_vec(),
        ]),
        0..4,
    )
    .prop_map(|parts| parts.concat());
    let headers = prop::collection::vec((name, value), 0..8);
    (method, target, version, headers).prop_map(|(method, target, version, headers)| {
        let mut head = format!("{method} {target} {version}\r\n").into_bytes();
        for (name, value) in headers {
            head.extend_from_slice(name.as_bytes());
            head.extend_from_slice(b": ");
            head.extend_from_slice(&value);
            head.extend_from_slice(b"\r\n");
        }
        head.extend_from_slice(b"\r\n");
        head
    })
}

/// 101 heads with any mix of the lines hyper treats apart.
fn switch_heads() -> impl Strategy<Value = Vec<(&'static str, &'static str)>> {
    let line = prop::sample::select(vec![
        ("connection", "Upgrade"),
        ("connection", "keep-alive"),
        ("upgrade", "SPDY/3.1"),
        ("content-length", "0"),
        ("content-length", "12"),
        ("transfer-encoding", "chunked"),
        ("trailer", "x-sum"),
        ("date", "Sun, 29 Nov 2026 00:00:00 GMT"),
        ("x-stream-protocol-version", "v5.channel.k8s.io"),
        ("x-a", ""),
        ("x-a", "2"),
    ]);
    prop::collection::vec(line, 0..8)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_generated_head_taken_is_the_request_hyper_hands_over(head in heads()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        if let Upgrade::Taken(..) = request::upgrade(&head) {
            let result = rt.block_on(taken_as_hyper_takes(&head));
            prop_assert!(result.is_ok(), "{}: {:?}", String::from_utf8_lossy(&head), result);
        }
    }

    #[test]
    fn a_generated_101_is_written_as_hyper_writes_it(lines in switch_heads()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let build = move || {
            let mut res = Response::builder().status(101);
            for (name, value) in &lines {
                res = res.header(*name, *value);
            }
            res.body(full(Bytes::new())).unwrap()
        };
        let mut ours = Vec::new();
        write_switched(&build().into_parts().0, &mut ours);
        let (_, hyper) = rt.block_on(hyper_server(SPDY_EXEC, build));
        prop_assert_eq!(dateless(&ours), dateless(&hyper));
    }
}
