//! The gateway core end to end: routing, headers, streaming, HTTP versions, TLS by SNI,
//! upstream failures and graceful shutdown, over real sockets.

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use leafgate_tests::certs::TestCa;
use leafgate_tests::client::{self, get, get_h2c};
use leafgate_tests::config::{Listener, Route};
use leafgate_tests::upstream::{Speaks, closed_port};
use leafgate_tests::{Config, TestGateway, TestUpstream};
use rustls_pki_types::pem::PemObject;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

async fn two_upstreams() -> (TestUpstream, TestUpstream) {
    (
        TestUpstream::start("alpha").await,
        TestUpstream::start("beta").await,
    )
}

#[tokio::test]
async fn routes_by_exact_host_wildcard_and_path() {
    let (a, b) = two_upstreams().await;
    let gw = TestGateway::start(
        Config::web()
            .route(Route::host("app.example.com").backend(a.addr))
            .route(Route::host("app.example.com").path("/api").backend(b.addr))
            .route(
                Route::host("app.example.com")
                    .exact("/api/exact")
                    .backend(a.addr),
            )
            .route(Route::host("*.example.com").backend(b.addr))
            .route(Route::host("*.deep.example.com").backend(a.addr)),
    )
    .await;
    let web = gw.addr("web");
    let server = |host: &'static str, path: &'static str| async move {
        let res = get(web, host, path).await;
        assert_eq!(res.status, StatusCode::OK, "{host}{path}: {}", res.text());
        res.json()["server"].as_str().unwrap().to_string()
    };
    // Exact host, prefix paths: the longest prefix wins, on whole segments.
    assert_eq!(server("app.example.com", "/").await, "alpha");
    assert_eq!(server("app.example.com", "/api").await, "beta");
    assert_eq!(server("app.example.com", "/api/v1/pods").await, "beta");
    assert_eq!(server("app.example.com", "/apis").await, "alpha");
    // Exact path beats the prefix.
    assert_eq!(server("app.example.com", "/api/exact").await, "alpha");
    // Case-insensitive and without the port.
    assert_eq!(server("APP.Example.COM:8080", "/api").await, "beta");
    // Wildcards: the longest suffix wins; exact beats wildcard.
    assert_eq!(server("other.example.com", "/").await, "beta");
    assert_eq!(server("x.deep.example.com", "/").await, "alpha");
    // The bare domain is not matched by its wildcard.
    let res = get(web, "example.com", "/").await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert!(
        res.text().contains("no route for host `example.com`"),
        "{}",
        res.text()
    );
    // Nobody else.
    let res = get(web, "elsewhere.org", "/x").await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.headers["content-type"], "text/plain; charset=utf-8");
}

#[tokio::test]
async fn paths_are_normalised_before_routing_and_forwarding() {
    let (a, b) = two_upstreams().await;
    let gw = TestGateway::start(
        Config::web()
            .route(Route::host("app.example.com").backend(a.addr))
            .route(Route::host("app.example.com").path("/api").backend(b.addr)),
    )
    .await;
    let web = gw.addr("web");
    // Dot segments do not smuggle a request past a route: `/api/../admin` is `/admin`.
    let res = get(web, "app.example.com", "/api/../admin?q=%2E%2E").await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert_eq!(res.json()["server"], "alpha");
    assert_eq!(res.json()["path"], "/admin?q=%2E%2E");
    // An encoded unreserved character is the character: `/%61pi` takes the `/api` route.
    let res = get(web, "app.example.com", "/%61pi/v1").await;
    assert_eq!(res.json()["server"], "beta");
    assert_eq!(res.json()["path"], "/api/v1");
    // `%2F` stays encoded and is no separator.
    let res = get(web, "app.example.com", "/api%2Fv1").await;
    assert_eq!(res.json()["server"], "alpha");
    assert_eq!(res.json()["path"], "/api%2Fv1");
    // Above the root: refused, never clamped.
    let res = get(web, "app.example.com", "/api/../../etc").await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert!(
        res.text().contains("climbs above the root"),
        "{}",
        res.text()
    );
}

#[tokio::test]
async fn strips_hop_by_hop_headers_and_sets_forwarded_ones() {
    let up = TestUpstream::start("alpha").await;
    let gw =
        TestGateway::start(Config::web().route(Route::host("app.example.com").backend(up.addr)))
            .await;
    let req = Request::get("/headers?x=1")
        .header("host", "app.example.com")
        .header("connection", "keep-alive, x-hop")
        .header("x-hop", "must go")
        .header("keep-alive", "timeout=5")
        .header("proxy-connection", "keep-alive")
        .header("proxy-authorization", "Basic cHJveHk6c2VjcmV0")
        .header("trailer", "x-checksum")
        .header("te", "trailers")
        .header("x-end-to-end", "stays")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let res = client::send_h1(TcpStream::connect(gw.addr("web")).await.unwrap(), req).await;
    assert_eq!(res.status, StatusCode::OK);
    let echo = res.json();
    let h = &echo["headers"];
    for gone in [
        "x-hop",
        "keep-alive",
        "proxy-connection",
        "upgrade",
        "proxy-authorization",
        "trailer",
    ] {
        assert!(h.get(gone).is_none(), "{gone} reached the upstream: {h}");
    }
    // hyper's client adds its own `connection` only when it must; ours must not pass through.
    assert_ne!(h["connection"][0], "keep-alive, x-hop");
    assert_eq!(h["te"][0], "trailers");
    assert_eq!(h["x-end-to-end"][0], "stays");
    assert_eq!(h["host"][0], "app.example.com");
    assert_eq!(h["x-forwarded-for"][0], "127.0.0.1");
    assert_eq!(h["x-forwarded-proto"][0], "http");
    assert_eq!(h["x-forwarded-host"][0], "app.example.com");
    assert_eq!(h["via"][0], "1.1 leafgate");
    assert_eq!(echo["path"], "/headers?x=1");
    // And on the way back.
    assert!(
        res.headers.get("x-upstream-private").is_none(),
        "{:?}",
        res.headers
    );
    assert!(res.headers.get("keep-alive").is_none(), "{:?}", res.headers);
    assert_eq!(res.headers["via"], "1.1 leafgate");
}

/// Forwarding headers a client made up, the way a spoofing client sends them.
fn spoofed(req: http::request::Builder) -> http::request::Builder {
    req.header("x-forwarded-for", "203.0.113.9")
        .header("x-forwarded-for", "198.51.100.4")
        .header("x-forwarded-host", "bank.example")
        .header("x-forwarded-proto", "https")
        .header("x-forwarded-prefix", "/admin")
        .header("forwarded", "for=203.0.113.9;proto=https")
        .header("x-real-ip", "203.0.113.9")
}

#[tokio::test]
async fn forwarding_headers_are_believed_only_from_trusted_proxies() {
    let up = TestUpstream::start("alpha").await;
    // The upgrade path sets the same headers: a raw backend records the head it gets.
    let raw = leafgate_tests::backends::raw(|_head, mut stream| async move {
        let _ = stream
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x-echo\r\n\r\n")
            .await;
    })
    .await;
    let gw = TestGateway::start(
        Config::new()
            .listener(Listener::new("edge"))
            .listener(Listener::new("behind-lb").trusted_proxies([
                "10.0.0.0/8",
                "127.0.0.0/8",
                "::1",
            ]))
            .route(Route::host("app.example.com").backend(up.addr))
            .route(Route::host("ws.example.com").backend(raw.addr)),
    )
    .await;

    for (listener, trusted) in [("edge", false), ("behind-lb", true)] {
        let req = spoofed(Request::get("/headers").header("host", "app.example.com"))
            .body(Empty::<Bytes>::new())
            .unwrap();
        let stream = TcpStream::connect(gw.addr(listener)).await.unwrap();
        let res = client::send_h1(stream, req).await;
        assert_eq!(res.status, StatusCode::OK);
        let h = &res.json()["headers"];
        let one = |name: &str| {
            let values = h[name]
                .as_array()
                .unwrap_or_else(|| panic!("{name} missing: {h}"));
            assert_eq!(values.len(), 1, "{name} arrives as one line: {h}");
            values[0].as_str().unwrap().to_string()
        };
        if trusted {
            assert_eq!(
                one("x-forwarded-for"),
                "203.0.113.9, 198.51.100.4, 127.0.0.1"
            );
            assert_eq!(one("x-forwarded-host"), "bank.example");
            assert_eq!(one("x-forwarded-proto"), "https");
            assert_eq!(one("x-forwarded-prefix"), "/admin");
            assert_eq!(one("x-real-ip"), "203.0.113.9");
            assert_eq!(
                one("forwarded"),
                "for=203.0.113.9;proto=https, for=127.0.0.1;proto=http;host=app.example.com"
            );
        } else {
            assert_eq!(one("x-forwarded-for"), "127.0.0.1");
            assert_eq!(one("x-forwarded-host"), "app.example.com");
            assert_eq!(one("x-forwarded-proto"), "http");
            assert!(h.get("x-forwarded-prefix").is_none(), "{h}");
            assert_eq!(one("x-real-ip"), "127.0.0.1");
            assert_eq!(
                one("forwarded"),
                "for=127.0.0.1;proto=http;host=app.example.com"
            );
            assert!(
                !h.to_string().contains("203.0.113.9"),
                "a spoofed address arrived: {h}"
            );
        }

        let mut conn = TcpStream::connect(gw.addr(listener)).await.unwrap();
        let head = "GET /ws HTTP/1.1\r\nHost: ws.example.com\r\nConnection: Upgrade\r\nUpgrade: x-echo\r\n\
             X-Forwarded-For: 203.0.113.9\r\nX-Real-IP: 203.0.113.9\r\nForwarded: for=203.0.113.9\r\n\r\n";
        conn.write_all(head.as_bytes()).await.unwrap();
        let answer = leafgate_tests::backends::read_head(&mut conn)
            .await
            .unwrap();
        assert!(answer.starts_with("HTTP/1.1 101"), "{answer}");
        let seen = raw
            .heads
            .lock()
            .unwrap()
            .last()
            .cloned()
            .unwrap()
            .to_ascii_lowercase();
        if trusted {
            assert!(
                seen.contains("x-forwarded-for: 203.0.113.9, 127.0.0.1\r\n"),
                "{seen}"
            );
            assert!(seen.contains("x-real-ip: 203.0.113.9\r\n"), "{seen}");
        } else {
            assert!(
                !seen.contains("203.0.113.9"),
                "a spoofed address arrived: {seen}"
            );
            assert!(seen.contains("x-forwarded-for: 127.0.0.1\r\n"), "{seen}");
            assert!(seen.contains("x-real-ip: 127.0.0.1\r\n"), "{seen}");
        }
    }
}

/// The most the kernel may hold between the upstream and a client that reads nothing:
/// the gateway's receive buffer from the upstream and the send buffers on both hops
/// (autotuning can grow each to the sysctl maximum), plus the client's fixed receive buffer
/// and hyper's own buffers.
fn kernel_buffering_bound(client_rcvbuf: u64) -> u64 {
    let max_of = |file: &str| -> u64 {
        std::fs::read_to_string(file)
            .ok()
            .and_then(|s| s.split_whitespace().nth(2).and_then(|v| v.parse().ok()))
            .unwrap_or(8 << 20)
    };
    let (rmem, wmem) = (
        max_of("/proc/sys/net/ipv4/tcp_rmem"),
        max_of("/proc/sys/net/ipv4/tcp_wmem"),
    );
    client_rcvbuf + rmem + 2 * wmem + (4 << 20)
}

#[tokio::test]
async fn streams_a_large_body_without_buffering_it() {
    const CLIENT_RCVBUF: u64 = 64 * 1024;
    // 50 MiB, or more when the kernel alone could hold half of that: a gateway that
    // buffers whole bodies must stand out from what sockets hold.
    let bound = kernel_buffering_bound(CLIENT_RCVBUF);
    let total: u64 = (50 << 20).max(2 * bound);
    let up = TestUpstream::start("alpha").await;
    let gw = TestGateway::start(Config::web().route(Route::host("*").backend(up.addr))).await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(CLIENT_RCVBUF as u32).unwrap();
    let io = TokioIo::new(socket.connect(gw.addr("web")).await.unwrap());
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
    tokio::spawn(conn);
    let req = Request::get(format!("/stream/{total}"))
        .header("host", "big.example")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let res = sender.send_request(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-length"], total.to_string().as_str());
    let mut body = res.into_body();

    // The client reads nothing for a while. A gateway that streams stops pulling from the
    // upstream once the buffers on the way are full; one that buffers pulls everything.
    let mut last = 0;
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = up.produced.load(Ordering::Relaxed);
        if now == last && now > 0 {
            break;
        }
        last = now;
    }
    let stalled_at = up.produced.load(Ordering::Relaxed);
    assert!(
        stalled_at <= bound && stalled_at < total,
        "the upstream produced {stalled_at} of {total} bytes while the client read none \
         (sockets can hold {bound}): the body is buffered"
    );

    let mut received = 0u64;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.unwrap().into_data() {
            assert!(data.iter().all(|&b| b == b'x'));
            received += data.len() as u64;
        }
    }
    assert_eq!(received, total);
}

#[tokio::test]
async fn h2_client_to_h1_upstream_and_h1_client_to_h2c_upstream() {
    let h1 = TestUpstream::start_speaking("h1-only", Speaks::Http1).await;
    let h2 = TestUpstream::start_speaking("h2c-only", Speaks::H2c).await;
    let gw = TestGateway::start(
        Config::web()
            .route(Route::host("h1.example").backend(h1.addr))
            .route(Route::host("h2.example").backend(h2.addr).protocol("h2c")),
    )
    .await;
    let web = gw.addr("web");

    let res = get_h2c(web, "h1.example", "/from-h2").await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert_eq!(res.version, http::Version::HTTP_2);
    let echo = res.json();
    assert_eq!(echo["server"], "h1-only");
    assert_eq!(echo["version"], "HTTP/1.1");
    assert_eq!(echo["headers"]["host"][0], "h1.example");
    assert_eq!(echo["headers"]["via"][0], "2 leafgate");

    let res = get(web, "h2.example", "/from-h1").await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert_eq!(res.version, http::Version::HTTP_11);
    let echo = res.json();
    assert_eq!(echo["server"], "h2c-only");
    assert_eq!(echo["version"], "HTTP/2.0");
    // The client's host travels as `:authority`, not the backend's address, and no
    // `Host` contradicts it (RFC 9113 §8.3.1).
    assert_eq!(echo["authority"], "h2.example");
    assert!(echo["headers"].get("host").is_none(), "{echo}");
}

#[tokio::test]
async fn tls_picks_the_certificate_by_sni() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("leafgate test CA");
    let default = ca.issue(dir.path(), "default", &["default.example"]);
    let apps = ca.issue(dir.path(), "apps", &["*.apps.example"]);
    let api = ca.issue(dir.path(), "api", &["api.example"]);
    let up = TestUpstream::start("alpha").await;
    let config = Config::new()
        .listener(
            Listener::new("tls")
                .tls("default.pem", "default-key.pem")
                .certificate(&["*.apps.example"], "apps.pem", "apps-key.pem")
                .certificate(&["api.example"], "api.pem", "api-key.pem"),
        )
        .route(Route::host("*").backend(up.addr));
    let gw = TestGateway::start_in(dir, config).await;
    let addr = gw.addr("tls");

    let s = client::tls_connect(addr, "web.apps.example", ca.roots(), &[b"http/1.1"]).await;
    assert_eq!(
        s.peer_cert, apps.der,
        "*.apps.example should get the wildcard certificate"
    );
    let s = client::tls_connect(addr, "api.example", ca.roots(), &[b"h2", b"http/1.1"]).await;
    assert_eq!(s.peer_cert, api.der);
    assert_eq!(s.alpn.as_deref(), Some(&b"h2"[..]), "h2 is offered by ALPN");
    let s = client::tls_connect(addr, "default.example", ca.roots(), &[b"http/1.1"]).await;
    assert_eq!(s.peer_cert, default.der);

    // A request over TLS reaches the upstream with X-Forwarded-Proto: https.
    let s = client::tls_connect(addr, "web.apps.example", ca.roots(), &[b"http/1.1"]).await;
    let req = Request::get("/")
        .header("host", "web.apps.example")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let res = client::send_h1(s.stream, req).await;
    assert_eq!(res.status, StatusCode::OK);
    assert_eq!(res.json()["headers"]["x-forwarded-proto"][0], "https");
}

#[tokio::test]
async fn refused_backend_is_502_and_stalled_backend_is_504() {
    // A port that was just free: nothing listens there.
    let closed = closed_port();
    let stall = TestUpstream::start("staller").await;
    let gw = TestGateway::start(
        Config::web()
            .route(Route::host("down.example").backend(closed))
            .route(
                Route::host("slow.example")
                    .backend(stall.addr)
                    .timeout("response_header", "300ms"),
            ),
    )
    .await;
    let web = gw.addr("web");

    let res = get(web, "down.example", "/").await;
    assert_eq!(res.status, StatusCode::BAD_GATEWAY);
    let text = res.text();
    assert!(
        text.contains(&closed.to_string()) && text.contains("refused"),
        "{text}"
    );

    let started = std::time::Instant::now();
    let res = get(web, "slow.example", "/stall").await;
    assert_eq!(res.status, StatusCode::GATEWAY_TIMEOUT);
    assert!(res.text().contains("no response head"), "{}", res.text());
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// Uploads `chunks` KiB, one every `every`, with the length unknown (chunked), and returns
/// the answer and when the last chunk was handed over.
async fn slow_upload(
    addr: std::net::SocketAddr,
    host: &str,
    path: &str,
    chunks: usize,
    every: Duration,
) -> (client::Answer, std::time::Instant) {
    use http_body_util::StreamBody;
    use std::sync::{Arc, Mutex};
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let last = Arc::new(Mutex::new(std::time::Instant::now()));
    let stamp = last.clone();
    let body = StreamBody::new(futures_util::stream::unfold(0, move |i| {
        let stamp = stamp.clone();
        async move {
            if i == chunks {
                return None;
            }
            tokio::time::sleep(every).await;
            *stamp.lock().unwrap() = std::time::Instant::now();
            let chunk = hyper::body::Frame::data(Bytes::from(vec![b'u'; 1024]));
            Some((Ok::<_, std::io::Error>(chunk), i + 1))
        }
    }));
    let req = Request::post(path).header("host", host).body(body).unwrap();
    let res = sender.send_request(req).await.unwrap();
    let answer = client::collect(res).await;
    let last = *last.lock().unwrap();
    (answer, last)
}

#[tokio::test]
async fn the_response_header_timer_starts_when_the_upload_ends() {
    let up = TestUpstream::start("sink").await;
    let gw = TestGateway::start(
        Config::web().route(
            Route::host("upload.example")
                .backend(up.addr)
                .timeout("connect", "500ms")
                .timeout("response_header", "1s")
                .timeout("idle", "10s"),
        ),
    )
    .await;
    let web = gw.addr("web");

    // Uploading for 3 s, three times the response-header timeout, is not cut off.
    let started = std::time::Instant::now();
    let (res, _) = slow_upload(
        web,
        "upload.example",
        "/upload",
        12,
        Duration::from_millis(250),
    )
    .await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert_eq!(res.json()["body_len"], 12 * 1024);
    assert!(started.elapsed() >= Duration::from_secs(3));

    // The timer still runs once the body is in: a backend that reads it all and never
    // answers gets a 504 one timeout after the last byte, not one after the first.
    let (res, last) = slow_upload(
        web,
        "upload.example",
        "/drain-then-stall",
        8,
        Duration::from_millis(250),
    )
    .await;
    let waited = last.elapsed();
    assert_eq!(res.status, StatusCode::GATEWAY_TIMEOUT, "{}", res.text());
    assert!(res.text().contains("within 1s"), "{}", res.text());
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(5),
        "the 504 came {waited:?} after the upload ended"
    );
}

#[tokio::test]
async fn a_refused_backend_is_skipped_while_the_others_serve() {
    let closed = closed_port();
    let up = TestUpstream::start("alive").await;
    let gw =
        TestGateway::start(Config::web().route(Route::host("*").backend(closed).backend(up.addr)))
            .await;
    // Bodiless requests are retried on the next backend, and the refused one is skipped.
    for _ in 0..6 {
        let res = get(gw.addr("web"), "x.example", "/").await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    }
    assert_eq!(up.requests.load(Ordering::Relaxed), 6);
}

#[tokio::test]
async fn graceful_shutdown_finishes_an_in_flight_request() {
    let up = TestUpstream::start("slowpoke").await;
    let gw = TestGateway::start(
        Config::web()
            .timeout("shutdown_grace", "10s")
            .timeout("shutdown_delay", "0s")
            .route(Route::host("*").backend(up.addr)),
    )
    .await;
    let web = gw.addr("web");
    let slow = tokio::spawn(async move { get(web, "x.example", "/slow/800").await });
    // Wait until the request reached the upstream, then shut down.
    while up.requests.load(Ordering::Relaxed) == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let gateway = gw.gateway.clone();
    let shutdown = tokio::spawn(async move { gateway.shutdown().await });
    let res = slow.await.unwrap();
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    assert_eq!(res.json()["path"], "/slow/800");
    tokio::time::timeout(Duration::from_secs(5), shutdown)
        .await
        .unwrap()
        .unwrap();
    // No longer accepting.
    assert!(
        TcpStream::connect(web).await.is_err(),
        "the listener still accepts after shutdown"
    );
}

/// A leaf-API-like upstream: TLS with a name that is not its address, demanding a client
/// certificate from our CA.
async fn mtls_upstream(ca: &TestCa, dir: &std::path::Path) -> TestUpstream {
    let server = ca.issue(dir, "leaf-api", &["leaf-api.internal"]);
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        std::sync::Arc::new(ca.roots()),
        provider.clone(),
    )
    .build()
    .unwrap();
    let cert = rustls_pki_types::CertificateDer::from_pem_file(&server.cert).unwrap();
    let key = rustls_pki_types::PrivateKeyDer::from_pem_file(&server.key).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![cert], key)
        .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    TestUpstream::start_tls("leaf-api", std::sync::Arc::new(config)).await
}

/// A TLS upstream with a certificate for `leaf-api.internal` offering `alpn`.
async fn alpn_upstream(
    ca: &TestCa,
    dir: &std::path::Path,
    name: &str,
    alpn: &[&[u8]],
) -> TestUpstream {
    let server = ca.issue(dir, name, &["leaf-api.internal"]);
    let cert = rustls_pki_types::CertificateDer::from_pem_file(&server.cert).unwrap();
    let key = rustls_pki_types::PrivateKeyDer::from_pem_file(&server.key).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    TestUpstream::start_tls_speaking(name, Speaks::Any, std::sync::Arc::new(config)).await
}

#[tokio::test]
async fn tls_backends_get_h2_by_alpn_with_the_client_host_as_authority() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("backend CA");
    ca.write(dir.path(), "ca.pem");
    let h2 = alpn_upstream(&ca, dir.path(), "grpc-ish", &[b"h2", b"http/1.1"]).await;
    let h1 = alpn_upstream(&ca, dir.path(), "h1-tls", &[b"http/1.1"]).await;
    // Every route trusts the test CA and checks the backends' certificate for one name.
    let https = |host: &str, backend: std::net::SocketAddr| {
        Route::host(host)
            .backend(format!("https://{backend}"))
            .tls("ca", "ca.pem")
            .tls("server_name", "leaf-api.internal")
    };
    let config = Config::web()
        .route(https("h2.example", h2.addr))
        .route(https("h1.example", h1.addr))
        .route(https("must-h2.example", h1.addr).protocol("h2"));
    let gw = TestGateway::start_in(dir, config).await;
    let web = gw.addr("web");

    // Connections are kept per serving thread, so each thread opens at most one.
    let threads = leafgate::serving_threads() as u64;
    let requests = 3 * threads;

    // `auto` (the default): the backend chose h2, and one connection per thread carries
    // every request.
    for i in 0..requests {
        let res = get(web, "h2.example", &format!("/svc/{i}")).await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text());
        let echo = res.json();
        assert_eq!(echo["version"], "HTTP/2.0", "{echo}");
        assert_eq!(echo["authority"], "h2.example", "{echo}");
        assert!(echo["headers"].get("host").is_none(), "{echo}");
        assert_eq!(echo["headers"]["x-forwarded-host"][0], "h2.example");
    }
    let opened = h2.connections.load(Ordering::Relaxed);
    assert!(
        opened <= threads,
        "{opened} connections for {requests} requests"
    );

    // A backend that offers only HTTP/1.1 is spoken to in HTTP/1.1, and that is remembered:
    // after the first (asking) handshake, requests share pooled connections.
    for _ in 0..requests {
        let res = get(web, "h1.example", "/").await;
        assert_eq!(res.status, StatusCode::OK, "{}", res.text());
        let echo = res.json();
        assert_eq!(echo["version"], "HTTP/1.1", "{echo}");
        assert_eq!(echo["headers"]["host"][0], "h1.example");
    }
    let opened = h1.connections.load(Ordering::Relaxed);
    assert!(
        opened <= 1 + threads,
        "{opened} connections for {requests} requests"
    );

    // `protocol = "h2"` insists: a backend refusing h2 is a 502 that says so.
    let res = get(web, "must-h2.example", "/").await;
    assert_eq!(res.status, StatusCode::BAD_GATEWAY);
    assert!(
        res.text().contains("did not agree to HTTP/2"),
        "{}",
        res.text()
    );
}

#[tokio::test]
async fn https_backends_with_a_ca_a_client_certificate_and_an_sni_name() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new("leaf CA");
    ca.write(dir.path(), "ca.pem");
    ca.issue(dir.path(), "gateway-client", &["leafgate"]);
    let up = mtls_upstream(&ca, dir.path()).await;
    let https = |host: &str| Route::host(host).backend(format!("https://{}", up.addr));
    let config = Config::web()
        .route(
            https("leaf.example")
                .tls("ca", "ca.pem")
                .tls("cert", "gateway-client.pem")
                .tls("key", "gateway-client-key.pem")
                .tls("server_name", "leaf-api.internal"),
        )
        .route(
            https("no-client-cert.example")
                .tls("ca", "ca.pem")
                .tls("server_name", "leaf-api.internal"),
        )
        .route(
            https("wrong-name.example")
                .tls("ca", "ca.pem")
                .tls("cert", "gateway-client.pem")
                .tls("key", "gateway-client-key.pem"),
        );
    let gw = TestGateway::start_in(dir, config).await;
    let web = gw.addr("web");

    let res = get(web, "leaf.example", "/api/v1/namespaces").await;
    assert_eq!(res.status, StatusCode::OK, "{}", res.text());
    let echo = res.json();
    assert_eq!(echo["client_cert"], true);
    assert_eq!(echo["headers"]["host"][0], "leaf.example");

    // Without our certificate the upstream refuses the handshake; with the address as the
    // name the upstream's certificate does not verify. Both are 502s that say why.
    let res = get(web, "no-client-cert.example", "/").await;
    assert_eq!(res.status, StatusCode::BAD_GATEWAY, "{}", res.text());
    let res = get(web, "wrong-name.example", "/").await;
    assert_eq!(res.status, StatusCode::BAD_GATEWAY);
    assert!(
        res.text().to_lowercase().contains("certificate"),
        "{}",
        res.text()
    );

    // An upgrade to the same upstream splices over TLS.
    let mut client = TcpStream::connect(web).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    client
        .write_all(b"GET /upgrade-echo HTTP/1.1\r\nHost: leaf.example\r\nConnection: Upgrade\r\nUpgrade: x-echo\r\n\r\n")
        .await
        .unwrap();
    let head = leafgate_tests::backends::read_head(&mut client)
        .await
        .unwrap();
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    client.write_all(b"over tls and back").await.unwrap();
    let mut back = [0u8; 17];
    client.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"over tls and back");
}
