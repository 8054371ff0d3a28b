//! `uring-proxy` and `uring-relay` as `bench/proxy.sh` runs them: the real binaries, a real
//! upstream on loopback that echoes each request head it got as its body, and real
//! clients, every answer's head and body checked. Every read has a timeout and every load
//! is a fixed count, so a hung binary fails the test instead of stalling it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(10);

/// The bench's upstream, bounded: keep-alive HTTP/1.1, answering each request with
/// `x-upstream: 1`, a `Connection: keep-alive` line (hop-by-hop, which the proxy drops)
/// and the request's head as the body, padded to 4 KiB for `/big`.
struct Upstream {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
}

impl Upstream {
    fn start() -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let (conns, reqs) = (connections.clone(), requests.clone());
        thread::spawn(move || {
            for sock in listener.incoming() {
                let Ok(sock) = sock else { return };
                conns.fetch_add(1, Ordering::SeqCst);
                let reqs = reqs.clone();
                thread::spawn(move || serve_upstream(sock, &reqs));
            }
        });
        Upstream {
            addr,
            connections,
            requests,
        }
    }
}

fn serve_upstream(mut sock: TcpStream, requests: &AtomicUsize) {
    sock.set_read_timeout(Some(TIMEOUT)).unwrap();
    let mut buf = Vec::new();
    loop {
        let mut slots = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut slots);
        let Ok(httparse::Status::Complete(len)) = req.parse(&buf) else {
            if !read_more(&mut sock, &mut buf) {
                return;
            }
            continue;
        };
        requests.fetch_add(1, Ordering::SeqCst);
        let mut body = buf[..len].to_vec();
        if req.path == Some("/big") {
            body.resize(4096, b'x');
        }
        buf.drain(..len);
        let head = format!(
            "HTTP/1.1 200 OK\r\nx-upstream: 1\r\nConnection: keep-alive\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        if sock.write_all(&[head.as_bytes(), &body].concat()).is_err() {
            return;
        }
    }
}

/// Reads what comes into `buf`; false at the end of the stream (or a failure).
fn read_more(sock: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    match sock.read(&mut chunk) {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

/// One of the binaries, started on a free port; killed when dropped.
struct Running {
    child: Option<Child>,
    addr: SocketAddr,
}

impl Running {
    fn start(binary: &str, upstream: SocketAddr) -> Running {
        let mut child = Command::new(binary)
            .args(["127.0.0.1:0", &upstream.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while out.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
            line.push(byte[0]);
        }
        let line = String::from_utf8(line).unwrap();
        let addr = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("{binary} said {line:?}"))
            .parse()
            .unwrap();
        Running {
            child: Some(child),
            addr,
        }
    }

    fn connect(&self) -> TcpStream {
        let sock = TcpStream::connect(self.addr).unwrap();
        sock.set_read_timeout(Some(TIMEOUT)).unwrap();
        sock
    }

    /// Closes the binary's standard input and waits (bounded) for it to exit.
    fn stop_by_stdin(mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().unwrap();
        drop(child.stdin.take());
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || tx.send(child.wait().unwrap()));
        rx.recv_timeout(TIMEOUT)
            .expect("the binary exits when its standard input closes")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// An answer as the client read it.
struct Answered {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answered {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one answer framed by its `Content-Length` from `sock`, `buf` holding what was
/// read past the previous one.
fn read_answer(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Answered {
    loop {
        let mut slots = [httparse::EMPTY_HEADER; 64];
        let mut res = httparse::Response::new(&mut slots);
        if let httparse::Status::Complete(len) = res.parse(buf).unwrap() {
            let headers: Vec<(String, String)> = res
                .headers
                .iter()
                .map(|h| {
                    (
                        h.name.to_ascii_lowercase(),
                        String::from_utf8_lossy(h.value).into_owned(),
                    )
                })
                .collect();
            let length: usize = headers
                .iter()
                .find(|(n, _)| n == "content-length")
                .expect("every answer has a length")
                .1
                .parse()
                .unwrap();
            let status = res.code.unwrap();
            while buf.len() < len + length {
                assert!(read_more(sock, buf), "the answer's body is cut short");
            }
            let body = buf[len..len + length].to_vec();
            buf.drain(..len + length);
            return Answered {
                status,
                headers,
                body,
            };
        }
        assert!(
            read_more(sock, buf),
            "the connection ended before an answer"
        );
    }
}

const SPOOFED: &str = "X-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\n";

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: bench.example\r\nAccept: */*\r\n{SPOOFED}\r\n")
}

/// What the fast path writes for a plain-HTTP client at 127.0.0.1, and nothing the
/// client claimed.
fn check_forwarded(body: &[u8], path: &str) {
    let end = body
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("the upstream echoes a whole head")
        + 4;
    let head = String::from_utf8_lossy(&body[..end]);
    let expected = format!(
        "GET {path} HTTP/1.1\r\nHost: bench.example\r\nAccept: */*\r\n\
         x-forwarded-for: 127.0.0.1\r\nx-forwarded-proto: http\r\nx-forwarded-host: bench.example\r\n\
         x-real-ip: 127.0.0.1\r\nforwarded: for=127.0.0.1;proto=http;host=bench.example\r\n\
         via: 1.1 leafgate\r\n\r\n"
    );
    assert_eq!(head, expected);
}

fn check_answer(a: &Answered, path: &str) {
    assert_eq!(a.status, 200);
    assert_eq!(a.header("x-upstream"), Some("1"));
    assert_eq!(a.header("via"), Some("1.1 leafgate"));
    assert_eq!(
        a.header("connection"),
        None,
        "hop-by-hop lines are this hop's"
    );
    assert!(a.header("date").is_some());
    if path == "/big" {
        assert_eq!(a.body.len(), 4096);
    }
    check_forwarded(&a.body, path);
}

#[test]
fn the_proxy_serves_keep_alive_clients_over_pooled_upstream_connections() {
    let upstream = Upstream::start();
    let proxy = Running::start(env!("CARGO_BIN_EXE_uring-proxy"), upstream.addr);
    // Eight clients at once, 200 requests each, small and 4 KiB answers alternating.
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let mut sock = proxy.connect();
            thread::spawn(move || {
                let mut buf = Vec::new();
                for i in 0..200 {
                    let path = if i % 2 == 0 { "/big" } else { "/small?i=1" };
                    sock.write_all(get(path).as_bytes()).unwrap();
                    check_answer(&read_answer(&mut sock, &mut buf), path);
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    assert_eq!(upstream.requests.load(Ordering::SeqCst), 1600);
    let pooled = upstream.connections.load(Ordering::SeqCst);
    assert!(
        (1..=8).contains(&pooled),
        "1600 requests from 8 clients over {pooled} upstream connections"
    );
    assert!(proxy.stop_by_stdin().success());
}

#[test]
fn pipelined_requests_are_answered_in_order_and_close_is_honoured() {
    let upstream = Upstream::start();
    let proxy = Running::start(env!("CARGO_BIN_EXE_uring-proxy"), upstream.addr);
    let mut sock = proxy.connect();
    let last = "GET /c HTTP/1.1\r\nHost: bench.example\r\nConnection: close\r\n\r\n";
    sock.write_all([get("/a"), get("/b"), last.to_string()].concat().as_bytes())
        .unwrap();
    let mut buf = Vec::new();
    check_answer(&read_answer(&mut sock, &mut buf), "/a");
    check_answer(&read_answer(&mut sock, &mut buf), "/b");
    let closing = read_answer(&mut sock, &mut buf);
    assert_eq!(closing.header("connection"), Some("close"));
    assert!(closing.body.starts_with(b"GET /c HTTP/1.1\r\n"));
    assert!(!read_more(&mut sock, &mut buf), "the proxy closes after it");
}

#[test]
fn hostile_requests_get_a_refusal_and_never_reach_the_upstream() {
    let upstream = Upstream::start();
    let proxy = Running::start(env!("CARGO_BIN_EXE_uring-proxy"), upstream.addr);
    let cases: &[(&[u8], u16)] = &[
        (b"\x16\x03\x01\x02\x00 not http\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400),
        (
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            501,
        ),
        (
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
            400,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: h2c\r\n\r\n",
            501,
        ),
    ];
    for (request, status) in cases {
        let mut sock = proxy.connect();
        sock.write_all(request).unwrap();
        let mut buf = Vec::new();
        let answer = read_answer(&mut sock, &mut buf);
        assert_eq!(
            answer.status,
            *status,
            "{:?}",
            String::from_utf8_lossy(request)
        );
        assert_eq!(answer.header("connection"), Some("close"));
        assert!(!read_more(&mut sock, &mut buf), "and the connection closes");
    }
    // A head past the limit, sent in pieces: 431, whatever comes after.
    let mut sock = proxy.connect();
    sock.write_all(b"GET / HTTP/1.1\r\nHost: a\r\nX-Long: ")
        .unwrap();
    let mut buf = Vec::new();
    for _ in 0..80 {
        if sock.write_all(&[b'a'; 1024]).is_err() {
            break;
        }
    }
    assert_eq!(read_answer(&mut sock, &mut buf).status, 431);
    assert_eq!(upstream.requests.load(Ordering::SeqCst), 0);
    // The proxy still serves.
    let mut sock = proxy.connect();
    sock.write_all(get("/").as_bytes()).unwrap();
    check_answer(&read_answer(&mut sock, &mut Vec::new()), "/");
}

#[test]
fn an_upstream_that_is_gone_is_a_502() {
    let gone = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = gone.local_addr().unwrap();
    drop(gone);
    let proxy = Running::start(env!("CARGO_BIN_EXE_uring-proxy"), addr);
    let mut sock = proxy.connect();
    sock.write_all(get("/").as_bytes()).unwrap();
    assert_eq!(read_answer(&mut sock, &mut Vec::new()).status, 502);
}

#[test]
fn the_relay_carries_bytes_unchanged_one_upstream_connection_per_client() {
    let upstream = Upstream::start();
    let relay = Running::start(env!("CARGO_BIN_EXE_uring-relay"), upstream.addr);
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let mut sock = relay.connect();
            thread::spawn(move || {
                let mut buf = Vec::new();
                for _ in 0..100 {
                    sock.write_all(get("/big").as_bytes()).unwrap();
                    let a = read_answer(&mut sock, &mut buf);
                    assert_eq!(a.status, 200);
                    assert_eq!(a.header("connection"), Some("keep-alive"));
                    assert_eq!(a.header("via"), None, "bytes only");
                    let echoed = get("/big");
                    assert_eq!(&a.body[..echoed.len()], echoed.as_bytes());
                    assert_eq!(a.body.len(), 4096);
                }
            })
        })
        .collect();
    for client in clients {
        client.join().unwrap();
    }
    assert_eq!(upstream.requests.load(Ordering::SeqCst), 400);
    assert_eq!(upstream.connections.load(Ordering::SeqCst), 4);
    assert!(relay.stop_by_stdin().success());
}

/// Descriptors `pid` holds open.
fn descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

#[test]
fn connections_that_end_give_their_descriptors_back() {
    let upstream = Upstream::start();
    for binary in [
        env!("CARGO_BIN_EXE_uring-proxy"),
        env!("CARGO_BIN_EXE_uring-relay"),
    ] {
        let running = Running::start(binary, upstream.addr);
        let pid = running.child.as_ref().unwrap().id();
        let one = |close: bool| {
            let mut sock = running.connect();
            let request = if close {
                "GET / HTTP/1.1\r\nHost: bench.example\r\nConnection: close\r\n\r\n".to_string()
            } else {
                get("/")
            };
            sock.write_all(request.as_bytes()).unwrap();
            let mut buf = Vec::new();
            assert_eq!(read_answer(&mut sock, &mut buf).status, 200);
        };
        one(false);
        let before = descriptors(pid);
        // 150 clients that leave after one answer, 150 the proxy closes (`Connection: close`;
        // the relay leaves it to the upstream, which keeps the connection).
        for i in 0..300 {
            one(i % 2 == 0);
        }
        one(false);
        let after = descriptors(pid);
        assert!(
            after <= before + 4,
            "{binary}: {before} descriptors before 300 connections, {after} after"
        );
    }
}
