//! Client connections end to end over real sockets: the first-byte timeout, the keep-alive
//! idle timeout, `max_connections`, draining on shutdown and listener mTLS (`client_ca`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use leafgate_tests::certs::{CertFiles, TestCa};
use leafgate_tests::client::get;
use leafgate_tests::config::{Listener, Route};
use leafgate_tests::{Config, TestGateway};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The one route every test here serves: answered by leafgate itself.
fn hello() -> Route {
    Route::host("hello.example").direct(200, "hello")
}

const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nhost: hello.example\r\n\r\n";

/// Reads until the peer closes; returns what came and how long it took. Panics after
/// `limit`.
async fn read_to_close(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, Duration) {
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tokio::time::timeout(
            limit.saturating_sub(started.elapsed()),
            stream.read(&mut buf),
        )
        .await
        .unwrap_or_else(|_| panic!("the connection was still open after {limit:?}"));
        match n {
            Ok(0) | Err(_) => return (got, started.elapsed()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// Reads one complete response to [`REQUEST`] (head and its 5-byte body).
async fn read_hello(stream: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.ends_with(b"hello") {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(
            n > 0,
            "closed mid-response: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8(got).unwrap()
}

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_first_byte_timeout() {
    let gw = TestGateway::start(
        Config::web()
            .admin()
            .timeout("first_byte", "300ms")
            .route(hello()),
    )
    .await;
    // Both a client listener and the admin listener close a silent connection.
    for addr in [gw.addr("web"), gw.admin()] {
        let mut silent = TcpStream::connect(addr).await.unwrap();
        let (got, after) = read_to_close(&mut silent, Duration::from_secs(10)).await;
        assert!(
            got.is_empty(),
            "a silent client of {addr} got bytes: {got:?}"
        );
        assert!(
            after >= Duration::from_millis(250),
            "{addr} closed too early: {after:?}"
        );
    }

    // A client that speaks in time is served as usual.
    let mut talker = TcpStream::connect(gw.addr("web")).await.unwrap();
    talker.write_all(REQUEST).await.unwrap();
    assert!(read_hello(&mut talker).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed() {
    let gw = TestGateway::start(Config::web().timeout("client_idle", "300ms").route(hello())).await;
    let mut client = TcpStream::connect(gw.addr("web")).await.unwrap();
    client.write_all(REQUEST).await.unwrap();
    assert!(read_hello(&mut client).await.starts_with("HTTP/1.1 200"));
    // Kept alive: a second request on the same connection is served.
    client.write_all(REQUEST).await.unwrap();
    assert!(read_hello(&mut client).await.starts_with("HTTP/1.1 200"));
    // Then nothing: the gateway closes it once idle.
    let (got, after) = read_to_close(&mut client, Duration::from_secs(10)).await;
    assert!(
        got.is_empty(),
        "unexpected bytes: {}",
        String::from_utf8_lossy(&got)
    );
    assert!(
        after >= Duration::from_millis(250),
        "closed too early: {after:?}"
    );
}

#[tokio::test]
async fn past_max_connections_a_client_waits_and_is_served_when_one_leaves() {
    let gw = TestGateway::start(
        Config::new()
            .admin()
            .listener(Listener::new("web").max_connections(2))
            .route(hello()),
    )
    .await;
    let addr = gw.addr("web");
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(REQUEST).await.unwrap();
        assert!(read_hello(&mut c).await.starts_with("HTTP/1.1 200"));
        held.push(c);
    }
    // The third connects (the kernel backlog takes it) but is not served while both stay.
    let mut extra = TcpStream::connect(addr).await.unwrap();
    extra.write_all(REQUEST).await.unwrap();
    let mut buf = [0u8; 64];
    let early = tokio::time::timeout(Duration::from_millis(500), extra.read(&mut buf)).await;
    assert!(
        early.is_err(),
        "the extra client was served past max_connections: {early:?}"
    );

    let metrics = get(gw.admin(), "admin", "/metrics").await.text();
    let saturated = metrics
        .lines()
        .find(|l| l.starts_with("leafgate_listener_saturated_total{") && l.contains("\"web\""))
        .unwrap_or_else(|| panic!("no saturation metric:\n{metrics}"));
    let count: u64 = saturated.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(count >= 1, "{saturated}");

    // One leaves: the extra one is served.
    drop(held.pop());
    let answer = tokio::time::timeout(Duration::from_secs(10), read_hello(&mut extra))
        .await
        .expect("the waiting client was not served after a slot freed");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn max_connections_of_zero_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leafgate.toml");
    std::fs::write(
        &path,
        "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\nmax_connections = 0\n",
    )
    .unwrap();
    let err = leafgate::Gateway::start(&path)
        .await
        .err()
        .expect("max_connections = 0 was accepted")
        .to_string();
    assert!(err.contains("listener[0].max_connections"), "{err}");
    assert!(err.contains("4:"), "no line in the error: {err}");
}

#[tokio::test]
async fn draining_reports_not_ready_while_still_serving_for_the_delay() {
    let gw = TestGateway::start(
        Config::web()
            .admin()
            .timeout("shutdown_delay", "1s")
            .timeout("shutdown_grace", "5s")
            .route(hello()),
    )
    .await;
    let (web, admin) = (gw.addr("web"), gw.admin());
    assert_eq!(get(admin, "admin", "/readyz").await.status, 200);

    let gateway = gw.gateway.clone();
    let started = Instant::now();
    let shutdown = tokio::spawn(async move { gateway.shutdown().await });

    // `/readyz` turns 503 at once...
    loop {
        if get(admin, "admin", "/readyz").await.status == 503 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "/readyz still 200 after 500ms of draining"
        );
        tokio::task::yield_now().await;
    }
    // ...while the listener still serves new clients for `shutdown_delay`.
    let answer = get(web, "hello.example", "/").await;
    assert_eq!(answer.status, 200, "{}", answer.text());
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the check ran past the delay; it proves nothing"
    );

    tokio::time::timeout(Duration::from_secs(10), shutdown)
        .await
        .expect("shutdown did not finish")
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "listeners stopped before shutdown_delay: {:?}",
        started.elapsed()
    );
    assert!(
        TcpStream::connect(web).await.is_err(),
        "the listener still accepts after shutdown"
    );
}

/// A gateway whose TLS listener requires client certificates signed by `client_ca`.
async fn mtls_gateway(server_ca: &TestCa, client_ca: &TestCa) -> TestGateway {
    let dir = tempfile::tempdir().unwrap();
    let server = server_ca.issue(dir.path(), "server", &["hello.example"]);
    let ca = client_ca.write(dir.path(), "client-ca.pem");
    let config = Config::new()
        .listener(
            Listener::new("tls")
                .tls(&server.cert, &server.key)
                .client_ca(&ca),
        )
        .route(hello());
    TestGateway::start_in(dir, config).await
}

/// Connects over TLS (presenting `client` if given), sends [`REQUEST`] and returns the
/// answer, or the error that ended the exchange.
async fn mtls_request(
    gw: &TestGateway,
    server_ca: &TestCa,
    client: Option<&CertFiles>,
) -> Result<String, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(server_ca.roots());
    let config = match client {
        None => builder.with_no_client_auth(),
        Some(files) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_file(&files.cert).unwrap()],
                PrivateKeyDer::from_pem_file(&files.key).unwrap(),
            )
            .unwrap(),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(gw.addr("tls")).await.unwrap();
    let exchange = async {
        let mut tls = connector
            .connect(ServerName::try_from("hello.example").unwrap(), tcp)
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tls.write_all(REQUEST)
            .await
            .map_err(|e| format!("write: {e}"))?;
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !got.ends_with(b"hello") {
            match tls.read(&mut buf).await {
                Ok(0) => return Err(format!("closed after {:?}", String::from_utf8_lossy(&got))),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => return Err(format!("read: {e}")),
            }
        }
        Ok(String::from_utf8_lossy(&got).into_owned())
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .expect("the TLS exchange hung")
}

#[tokio::test]
async fn mtls_listener_serves_a_client_certificate_from_its_ca() {
    let (server_ca, client_ca) = (TestCa::new("server ca"), TestCa::new("client ca"));
    let gw = mtls_gateway(&server_ca, &client_ca).await;
    let good = client_ca.issue(gw.path(), "client", &["client.example"]);
    let answer = mtls_request(&gw, &server_ca, Some(&good)).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test]
async fn mtls_listener_refuses_a_client_without_a_certificate() {
    let (server_ca, client_ca) = (TestCa::new("server ca"), TestCa::new("client ca"));
    let gw = mtls_gateway(&server_ca, &client_ca).await;
    let err = mtls_request(&gw, &server_ca, None)
        .await
        .expect_err("a client without a certificate was served");
    assert!(err.contains("CertificateRequired"), "{err}");
}

#[tokio::test]
async fn mtls_listener_refuses_a_certificate_from_another_ca() {
    let (server_ca, client_ca) = (TestCa::new("server ca"), TestCa::new("client ca"));
    let gw = mtls_gateway(&server_ca, &client_ca).await;
    let stranger = TestCa::new("stranger ca").issue(gw.path(), "stranger", &["client.example"]);
    let err = mtls_request(&gw, &server_ca, Some(&stranger))
        .await
        .expect_err("a certificate from another CA was served");
    assert!(err.contains("UnknownCA"), "{err}");
}

#[tokio::test]
async fn an_idle_http2_connection_is_closed() {
    use http_body_util::Empty;
    use hyper_util::rt::{TokioExecutor, TokioIo};

    let gw = TestGateway::start(Config::web().timeout("client_idle", "300ms").route(hello())).await;
    let io = TokioIo::new(TcpStream::connect(gw.addr("web")).await.unwrap());
    let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    let request = || {
        http::Request::get("http://hello.example/")
            .body(Empty::<bytes::Bytes>::new())
            .unwrap()
    };
    for _ in 0..2 {
        let res = sender.send_request(request()).await.unwrap();
        assert_eq!(res.status(), 200);
        leafgate_tests::client::collect(res).await;
    }
    let idle_from = Instant::now();
    tokio::time::timeout(Duration::from_secs(10), conn)
        .await
        .expect("the idle h2 connection was still open after 10s")
        .unwrap()
        .expect("the h2 connection ended with an error instead of GOAWAY");
    assert!(
        idle_from.elapsed() >= Duration::from_millis(250),
        "closed too early: {:?}",
        idle_from.elapsed()
    );
}
