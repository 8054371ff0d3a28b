//! Load tools for `bench/*.sh`: they drive a leafgate process from outside, as users do.
//!
//! - `serve`: an upgrade backend on 127.0.0.1:0 (prints its address). It answers any
//!   request with `101`, then counts what the client pushes; when the client half-closes it
//!   replies with the rate it measured (bytes from the 2nd second on, so the initial burst
//!   does not count) and closes.
//! - `push ADDR HOST SECONDS`: upgrades through the gateway at ADDR with `Host: HOST`,
//!   pushes bytes for SECONDS, half-closes, prints the backend's measurement as JSON.
//! - `reload CONFIG ADDR ROUTES ROUNDS`: rewrites CONFIG ROUNDS times, each time with
//!   ROUTES routes plus one new host, and measures from the write until the new host
//!   answers 200 at ADDR; prints percentiles as JSON. `reload-config ADDR ROUTES` prints
//!   the starting config.
//! - `echo` and `conns ADDR HOST N PID...`: N upgraded connections held open at once
//!   through a proxy, and its memory and descriptors (see `conns.rs`).
//! - `reload-phases ROUTES ROUNDS`: the TOML parse, typed parse and snapshot build of a
//!   reload, timed apart in process (see `phases.rs`).
//! - `exec LEAFGATE SIZE_MIB ROUNDS`: exec through leafgate's node API against exec straight
//!   to the leaf, and through a bare TCP relay on leafgate's CPUs (see `exec.rs`).
//! - `relay PORT TARGET`: that relay: each connection to 127.0.0.1:PORT copied both ways to
//!   TARGET, nothing parsed (see `exec.rs`).
//! - `tls-relay PORT TARGET CERT KEY CLIENT_CA TARGET_CA TARGET_CERT TARGET_KEY`: the same
//!   with TLS ended on both sides, over spare connections to TARGET (see `exec.rs`).
//! - `kube-api LEAFGATE PODS_TABLE_WASM PODS LEAVES ROUNDS`: `kubectl get pods -A` and the
//!   raw Table list through the kube-api front (see `kube_api.rs`).
//! - `kube-api-kinds LEAFGATE DEPLOYMENTS LEAVES ROUNDS`: the Table of DEPLOYMENTS
//!   deployments over LEAVES leaves through the kube-api front, and the memory keeping them
//!   costs (see `kube_kinds.rs`).
//! - `kube-api-watch LEAFGATE LEAVES WATCHERS SECONDS CHANGES`: what idle pod watches and
//!   watches beside another tenant's churn cost leafgate, and how fast one change reaches
//!   every watcher (see `kube_watch.rs`).
//! - `ingress LEAFGATE INGRESSES ROUNDS`: first sync of INGRESSES Ingresses and the time
//!   one change takes to be served (see `ingress.rs`).
//! - `gateway LEAFGATE ROUTES ROUNDS`: the same of ROUTES HTTPRoutes on one Gateway (see
//!   `gateway.rs`).
//! - `soak LEAFGATE FAULTY_ROUTER_WASM SECONDS OUT_DIR`: mixed load and changes for
//!   SECONDS, sampled into `OUT_DIR/soak.csv`, with the leak verdicts (see `soak.rs`).
//! - `spin`: a core kept busy with nothing, for ever (`pause` in a loop): `bench/exec.sh`
//!   runs one at idle priority on each of its CPUs so none halts (`AWAKE=1`).

mod conns;
mod exec;
mod gateway;
mod ingress;
mod kube_api;
mod kube_kinds;
mod kube_watch;
mod phases;
mod soak;
mod soak_load;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use leafgate_tests::backends::read_head;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("serve") => serve().await,
        Some("spin") => loop {
            std::hint::spin_loop();
        },
        Some("push") => push(args[1].parse().unwrap(), &args[2], args[3].parse().unwrap()).await,
        Some("reload-config") => print!(
            "{}",
            config(
                args[1].parse().unwrap(),
                true,
                args[2].parse().unwrap(),
                "initial.bench"
            )
        ),
        Some("reload-phases") => phases::run(args[1].parse().unwrap(), args[2].parse().unwrap()),
        Some("echo") => conns::echo().await,
        Some("conns") => {
            let pids: Vec<u32> = args[4..].iter().map(|p| p.parse().unwrap()).collect();
            conns::conns(
                args[1].parse().unwrap(),
                &args[2],
                args[3].parse().unwrap(),
                &pids,
            )
            .await
        }
        Some("exec") => {
            exec::run(&args[1], args[2].parse().unwrap(), args[3].parse().unwrap()).await
        }
        Some("kube-api") => {
            kube_api::run(
                &args[1],
                &args[2],
                args[3].parse().unwrap(),
                args[4].parse().unwrap(),
                args[5].parse().unwrap(),
            )
            .await
        }
        Some("kube-api-kinds") => {
            kube_kinds::run(
                &args[1],
                args[2].parse().unwrap(),
                args[3].parse().unwrap(),
                args[4].parse().unwrap(),
            )
            .await
        }
        Some("kube-api-watch") => {
            kube_watch::run(
                &args[1],
                args[2].parse().unwrap(),
                args[3].parse().unwrap(),
                args[4].parse().unwrap(),
                args[5].parse().unwrap(),
            )
            .await
        }
        Some("soak") => {
            let soak = soak::run(
                &args[1],
                &args[2],
                args[3].parse().unwrap(),
                std::path::Path::new(&args[4]),
            );
            if !Box::pin(soak).await {
                std::process::exit(1);
            }
        }
        Some("relay") => exec::relay(args[1].parse().unwrap(), args[2].parse().unwrap()).await,
        Some("tls-relay") => {
            let pem = exec::TlsRelayPem {
                cert: args[3].clone(),
                key: args[4].clone(),
                client_ca: args[5].clone(),
                target_ca: args[6].clone(),
                target_cert: args[7].clone(),
                target_key: args[8].clone(),
            };
            exec::tls_relay(args[1].parse().unwrap(), args[2].parse().unwrap(), pem).await
        }
        Some("ingress") => {
            ingress::run(&args[1], args[2].parse().unwrap(), args[3].parse().unwrap()).await
        }
        Some("gateway") => {
            gateway::run(&args[1], args[2].parse().unwrap(), args[3].parse().unwrap()).await
        }
        Some("reload") => {
            reload(
                &args[1],
                args[2].parse().unwrap(),
                args[3].parse().unwrap(),
                args[4].parse().unwrap(),
            )
            .await
        }
        _ => {
            eprintln!(
                "usage: leafgate-bench serve | push ADDR HOST SECONDS | echo | conns ADDR HOST N PID... | reload-config ADDR ROUTES | reload CONFIG ADDR ROUTES ROUNDS | reload-phases ROUTES ROUNDS | exec LEAFGATE SIZE_MIB ROUNDS | relay PORT TARGET | tls-relay PORT TARGET CERT KEY CLIENT_CA TARGET_CA TARGET_CERT TARGET_KEY | kube-api LEAFGATE PODS_TABLE_WASM PODS LEAVES ROUNDS | kube-api-kinds LEAFGATE DEPLOYMENTS LEAVES ROUNDS | kube-api-watch LEAFGATE LEAVES WATCHERS SECONDS CHANGES | ingress LEAFGATE INGRESSES ROUNDS | gateway LEAFGATE ROUTES ROUNDS | soak LEAFGATE FAULTY_ROUTER_WASM SECONDS OUT_DIR"
            );
            std::process::exit(2);
        }
    }
}

async fn serve() {
    let socket = TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("{}", socket.local_addr().unwrap());
    loop {
        let (mut stream, _) = socket.accept().await.unwrap();
        tokio::spawn(async move {
            if read_head(&mut stream).await.is_none() {
                return;
            }
            stream
                .write_all(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x-bench\r\n\r\n")
                .await
                .unwrap();
            let mut buf = vec![0u8; 256 * 1024];
            let (mut total, mut counted) = (0u64, 0u64);
            let mut first: Option<Instant> = None;
            let mut window: Option<Instant> = None;
            let mut last = Instant::now();
            loop {
                let n = match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n as u64,
                };
                let now = Instant::now();
                let start = *first.get_or_insert(now);
                total += n;
                if now.duration_since(start) >= Duration::from_secs(1) {
                    window.get_or_insert(now);
                    counted += n;
                }
                last = now;
            }
            let secs = window.map_or(0.0, |w| last.duration_since(w).as_secs_f64());
            let rate = if secs > 0.0 {
                counted as f64 / secs
            } else {
                0.0
            };
            let report =
                format!("{{\"bytes\":{total},\"window_secs\":{secs:.3},\"rate\":{rate:.0}}}");
            let _ = stream.write_all(report.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}

async fn push(addr: SocketAddr, host: &str, seconds: f64) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let req = format!(
        "GET /bench HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: x-bench\r\n\r\n"
    );
    stream.write_all(req.as_bytes()).await.unwrap();
    let head = read_head(&mut stream)
        .await
        .expect("no answer to the upgrade");
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let chunk = vec![0x5au8; 256 * 1024];
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < until {
        stream.write_all(&chunk).await.unwrap();
    }
    stream.shutdown().await.unwrap();
    let mut report = String::new();
    stream.read_to_string(&mut report).await.unwrap();
    println!("{report}");
}

/// A config with `routes` routes, plus `extra` as one more host.
fn config(listen: SocketAddr, admin: bool, routes: usize, extra: &str) -> String {
    let mut out = String::with_capacity(routes * 80);
    if admin {
        out.push_str("[admin]\nbind = \"127.0.0.1:0\"\n");
    }
    out.push_str(&format!(
        "[[listener]]\nname = \"bench\"\nbind = \"{listen}\"\n"
    ));
    out.push_str("[[route]]\nhost = \"*\"\ndirect = { status = 200, body = \"ok\" }\n");
    for i in 0..routes {
        out.push_str(&format!(
            "[[route]]\nhost = \"r{i}.bench\"\ndirect = {{ status = 200, body = \"r{i}\" }}\n"
        ));
    }
    out.push_str(&format!(
        "[[route]]\nhost = \"{extra}\"\ndirect = {{ status = 200, body = \"{extra}\" }}\n"
    ));
    out
}

/// `GET /` for `host` at `addr` on a fresh connection: (status, body); status 0 if no answer.
async fn get(addr: SocketAddr, host: &str) -> (u16, String) {
    let Ok(mut s) = TcpStream::connect(addr).await else {
        return (0, String::new());
    };
    let req = format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).await.is_err() {
        return (0, String::new());
    }
    let mut res = String::new();
    let _ = s.read_to_string(&mut res).await;
    let status = res.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = res
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

async fn reload(path: &str, addr: SocketAddr, routes: usize, rounds: usize) {
    let mut took = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let host = format!("new{round}.bench");
        let text = config(addr, true, routes, &host);
        // Write to a temporary file and rename over: the way config management does it.
        let tmp = format!("{path}.tmp");
        std::fs::write(&tmp, &text).unwrap();
        let written = Instant::now();
        std::fs::rename(&tmp, path).unwrap();
        loop {
            if get(addr, &host).await == (200, host.clone()) {
                break;
            }
            assert!(
                written.elapsed() < Duration::from_secs(10),
                "{host} never went live"
            );
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        took.push(written.elapsed());
    }
    took.sort();
    let pct =
        |p: f64| took[((took.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1000.0;
    println!(
        "{{\"rounds\":{rounds},\"routes\":{routes},\"p50_ms\":{:.1},\"p90_ms\":{:.1},\"max_ms\":{:.1}}}",
        pct(0.5),
        pct(0.9),
        pct(1.0)
    );
}
