//! Clients that speak to the gateway the way users do: HTTP/1.1 and HTTP/2 over plain TCP
//! or TLS with a chosen SNI name, reading whole responses for assertions.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A TLS connection to `addr` (`config`, SNI `sni`).
async fn connect(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    sni: &str,
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    TlsConnector::from(config)
        .connect(ServerName::try_from(sni.to_string()).unwrap(), tcp)
        .await
        .unwrap()
}

/// Every byte a client gets from `addr` over TLS (`config`, SNI `sni`) for `request` sent
/// in one write, until the connection closes or stays quiet for 300 ms, with `date`
/// values replaced: what two listeners answer to the same bytes, to compare.
pub async fn wire(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    sni: &str,
    request: &[u8],
) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tls = connect(addr, config, sni).await;
    tls.write_all(request).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let read = tls.read(&mut buf);
        match tokio::time::timeout(std::time::Duration::from_millis(300), read).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&got)
        .split("\r\n")
        .map(|line| match line.split_once(": ") {
            Some((name, _)) if name.eq_ignore_ascii_case("date") => "date: *",
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\r\n")
}

/// A streamed body's next piece of data within `within` (panicking past it): `Some`, or
/// `None` once the body ended, cleanly or cut (a revoked follow, a closed watch).
pub async fn next_data(
    body: &mut hyper::body::Incoming,
    within: std::time::Duration,
) -> Option<Bytes> {
    loop {
        let frame = tokio::time::timeout(within, body.frame())
            .await
            .expect("the body moved within the time given");
        match frame {
            Some(Ok(f)) => match f.into_data() {
                Ok(data) => return Some(data),
                Err(_) => continue,
            },
            Some(Err(_)) | None => return None,
        }
    }
}

/// A whole response.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub version: http::Version,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// `GET http://{host}{path}` over HTTP/1.1 to `addr`.
pub async fn get(addr: SocketAddr, host: &str, path: &str) -> Answer {
    let req = Request::get(path)
        .header("host", host)
        .body(Empty::<Bytes>::new())
        .unwrap();
    send_h1(TcpStream::connect(addr).await.unwrap(), req).await
}

/// Sends `req` on a fresh HTTP/1.1 connection over `io`.
pub async fn send_h1<I>(io: I, req: Request<Empty<Bytes>>) -> Answer
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .unwrap();
    tokio::spawn(conn);
    let res = sender.send_request(req).await.unwrap();
    collect(res).await
}

/// `GET` over prior-knowledge HTTP/2 (h2c) to `addr`, with `:authority` = `host`.
pub async fn get_h2c(addr: SocketAddr, host: &str, path: &str) -> Answer {
    let io = TokioIo::new(TcpStream::connect(addr).await.unwrap());
    let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
        .await
        .unwrap();
    tokio::spawn(conn);
    let uri = format!("http://{host}{path}");
    let res = sender
        .send_request(Request::get(uri).body(Empty::<Bytes>::new()).unwrap())
        .await
        .unwrap();
    collect(res).await
}

pub async fn collect(res: http::Response<hyper::body::Incoming>) -> Answer {
    let (parts, body) = res.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    Answer {
        status: parts.status,
        version: parts.version,
        headers: parts.headers,
        body,
    }
}

/// What a TLS client saw: the certificate the server presented and the ALPN it chose.
pub struct TlsSession {
    pub stream: tokio_rustls::client::TlsStream<TcpStream>,
    pub peer_cert: CertificateDer<'static>,
    pub alpn: Option<Vec<u8>>,
}

/// Connects with TLS to `addr`, sending `sni` and offering `alpn`, trusting `roots`.
pub async fn tls_connect(
    addr: SocketAddr,
    sni: &str,
    roots: rustls::RootCertStore,
    alpn: &[&[u8]],
) -> TlsSession {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let connector = TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(addr).await.unwrap();
    let stream = connector
        .connect(ServerName::try_from(sni.to_string()).unwrap(), tcp)
        .await
        .unwrap_or_else(|e| panic!("TLS handshake with {sni} failed: {e}"));
    let (_, session) = stream.get_ref();
    let peer_cert = session.peer_certificates().unwrap()[0].clone().into_owned();
    let alpn = session.alpn_protocol().map(|p| p.to_vec());
    TlsSession {
        stream,
        peer_cert,
        alpn,
    }
}

/// What a client gets from `addr` over TLS (`config`, SNI `sni`) for `first`, then `rest`
/// sent 50 ms later when there is any, until the connection ends or stays quiet for 500 ms:
/// every byte, and whether the connection ended.
pub async fn split_exchange(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    sni: &str,
    first: &[u8],
    rest: &[u8],
) -> (String, bool) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tls = connect(addr, config, sni).await;
    tls.write_all(first).await.unwrap();
    tls.flush().await.unwrap();
    if !rest.is_empty() {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        tls.write_all(rest).await.unwrap();
        tls.flush().await.unwrap();
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let ended = loop {
        let read = tls.read(&mut buf);
        match tokio::time::timeout(std::time::Duration::from_millis(500), read).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            Ok(_) => break true,
            Err(_) => break false,
        }
    };
    (String::from_utf8_lossy(&got).into_owned(), ended)
}
