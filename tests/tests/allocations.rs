//! The HTTP/1.1 fast path allocates nothing per request in the steady state, counted by a
//! counting global allocator (hence a test binary of its own).
//!
//! leafgate runs in-process; the client and the backend are plain threads on blocking
//! sockets with fixed buffers, which allocate nothing while they loop, so every
//! allocation counted during the measured requests is the gateway's. The same loop through
//! a listener served by hyper is counted too: it must allocate, or the counter would not be
//! counting.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};

use leafgate_tests::config::{Listener, Route};
use leafgate_tests::{Config, TestGateway};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

#[allow(
    unsafe_code,
    reason = "a global allocator is an unsafe trait to implement"
)]
// SAFETY: every call is passed to the system allocator unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's layout goes to the system allocator as it came.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for `dealloc`, and `new_size` is the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello";

/// A keep-alive backend on a plain thread: answers every request head with [`ANSWER`].
fn backend() -> SocketAddr {
    let socket = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    std::thread::spawn(move || {
        for tcp in socket.incoming() {
            let Ok(mut tcp) = tcp else { return };
            std::thread::spawn(move || {
                let _ = tcp.set_nodelay(true);
                let mut buf = [0u8; 8192];
                let mut have = 0;
                loop {
                    let Ok(n) = tcp.read(&mut buf[have..]) else {
                        return;
                    };
                    if n == 0 {
                        return;
                    }
                    have += n;
                    while let Some(end) = find(&buf[..have], b"\r\n\r\n") {
                        buf.copy_within(end + 4..have, 0);
                        have -= end + 4;
                        if tcp.write_all(ANSWER).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Sends `n` GETs one after another on one connection, reading each answer (a head, then
/// the 5-byte body) before the next.
fn requests(tcp: &mut TcpStream, n: usize) {
    const GET: &[u8] = b"GET /x HTTP/1.1\r\nHost: a.example\r\nAccept: */*\r\n\r\n";
    let mut buf = [0u8; 8192];
    for _ in 0..n {
        tcp.write_all(GET).unwrap();
        let mut have = 0;
        loop {
            let got = tcp.read(&mut buf[have..]).unwrap();
            assert!(got > 0, "the gateway closed the connection");
            have += got;
            if find(&buf[..have], b"\r\n\r\n").is_some_and(|end| have >= end + 4 + 5) {
                assert!(buf.starts_with(b"HTTP/1.1 200 "));
                break;
            }
        }
    }
}

/// Allocations while `n` requests go through `addr` after a warm-up on the same connection.
fn allocations_per_request(addr: SocketAddr, n: usize) -> f64 {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_nodelay(true).unwrap();
    requests(&mut tcp, 1_000);
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    requests(&mut tcp, n);
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    (after - before) as f64 / n as f64
}

#[test]
fn the_fast_path_allocates_nothing_per_request() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let backend = backend();
    let gw = rt.block_on(TestGateway::start(
        Config::new()
            .listener(Listener::new("fast").set("http1_fast_path", true))
            .listener(Listener::new("hyper").set("http1_fast_path", false))
            .route(Route::host("*").backend(backend)),
    ));
    let (fast, hyper) = (gw.addr("fast"), gw.addr("hyper"));
    // The control runtime stays idle while the serving threads work.
    let fast = allocations_per_request(fast, 10_000);
    let hyper = allocations_per_request(hyper, 2_000);
    println!("allocations per request: fast path {fast:.4}, hyper's path {hyper:.2}");
    assert!(
        hyper >= 1.0,
        "hyper's path must show allocations, or nothing is counted: {hyper}"
    );
    assert!(
        fast < 0.01,
        "the fast path allocated {fast} times per request"
    );
    drop(gw);
}
