//! `echo` and `conns`: many upgraded connections held open through a proxy at once, and
//! what they cost the proxy's processes in resident memory and file descriptors.
//!
//! - `echo`: an upgrade backend on 127.0.0.1:0 (prints its address); answers any request
//!   with a WebSocket `101` and echoes every byte after it.
//! - `conns ADDR HOST N PID...`: opens N WebSocket upgrades through the proxy at ADDR
//!   (`Host: HOST`), 256 handshakes in flight at most, sends one masked WebSocket text frame
//!   on each and reads it back, then sums `VmRSS` and the entries of `/proc/PID/fd` over
//!   the PIDs (the proxy's processes) and prints JSON: before, after, and per connection.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use leafgate_tests::backends::read_head;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

/// Handshakes (or exchanges) in flight at once: enough to go fast, few enough that the
/// proxy's accept backlog never overflows.
const IN_FLIGHT: usize = 256;
/// Every step of one connection (connect, handshake, echo) must finish within this.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

pub async fn echo() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("{}", listener.local_addr().unwrap());
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            if read_head(&mut stream).await.is_none() {
                return;
            }
            let answer = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n\
                          Upgrade: websocket\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
            if stream.write_all(answer.as_bytes()).await.is_err() {
                return;
            }
            // A small buffer: the backend holds as many connections as the proxy does.
            let mut buf = [0u8; 512];
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if stream.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                }
            }
        });
    }
}

/// Resident memory (KiB) and open descriptors, summed over `pids`.
pub fn usage(pids: &[u32]) -> (u64, u64) {
    let mut rss = 0;
    let mut fds = 0;
    for pid in pids {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        rss += status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap_or(0);
        fds += std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .count() as u64;
    }
    (rss, fds)
}

/// A masked WebSocket text frame carrying `payload` (at most 125 bytes), as a client sends.
fn text_frame(payload: &[u8]) -> Vec<u8> {
    let mask = [0x12, 0x34, 0x56, 0x78];
    let mut frame = vec![0x81, 0x80 | payload.len() as u8];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

async fn open(addr: SocketAddr, host: &str, i: usize) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let req = format!(
        "GET /ws/{i} HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).await.unwrap();
    let head = read_head(&mut stream)
        .await
        .expect("no answer to the upgrade");
    assert!(head.starts_with("HTTP/1.1 101"), "connection {i}: {head}");
    stream
}

/// Sends one frame and reads the echo back, byte-exact.
async fn exchange(stream: &mut TcpStream, i: usize) {
    let frame = text_frame(format!("hello from connection {i}").as_bytes());
    stream.write_all(&frame).await.unwrap();
    let mut back = vec![0u8; frame.len()];
    stream.read_exact(&mut back).await.unwrap();
    assert_eq!(back, frame, "connection {i}: the echo differs");
}

pub async fn conns(addr: SocketAddr, host: &str, n: usize, pids: &[u32]) {
    let (rss_before, fds_before) = usage(pids);
    let started = Instant::now();
    let limit = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut tasks = JoinSet::new();
    for i in 0..n {
        let permit = Arc::clone(&limit).acquire_owned().await.unwrap();
        let host = host.to_string();
        tasks.spawn(async move {
            let mut stream = tokio::time::timeout(STEP_TIMEOUT, open(addr, &host, i))
                .await
                .unwrap_or_else(|_| panic!("connection {i}: no 101 in {STEP_TIMEOUT:?}"));
            tokio::time::timeout(STEP_TIMEOUT, exchange(&mut stream, i))
                .await
                .unwrap_or_else(|_| panic!("connection {i}: no echo in {STEP_TIMEOUT:?}"));
            drop(permit);
            (i, stream)
        });
    }
    let mut streams = Vec::with_capacity(n);
    while let Some(done) = tasks.join_next().await {
        streams.push(done.unwrap());
    }
    let open_secs = started.elapsed().as_secs_f64();
    // A second message on every connection, all open at once: each direction takes a pipe
    // for its burst and must give it back.
    for (i, stream) in &mut streams {
        exchange(stream, *i).await;
    }
    // Let the proxy finish handing back what the last bursts used.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss, fds) = usage(pids);
    let per = |after: u64, before: u64| after.saturating_sub(before) as f64 / n as f64;
    println!(
        "{{\"conns\":{n},\"open_secs\":{open_secs:.2},\"rss_before_kib\":{rss_before},\"rss_kib\":{rss},\
         \"rss_per_conn_kib\":{:.2},\"fds_before\":{fds_before},\"fds\":{fds},\"fds_per_conn\":{:.3},\
         \"fds_added_per_conn\":{:.3}}}",
        per(rss, rss_before),
        fds as f64 / n as f64,
        per(fds, fds_before),
    );
}
