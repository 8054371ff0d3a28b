//! The access log over real sockets: one gateway with a fast-path listener and a hyper
//! one on the same routes, each request sent to both, and the lines read back from the
//! log file. JSON lines parse with every field that applies to a proxied request, a
//! direct answer, a 404 and a 502; no `Authorization` or `Cookie` value and no query
//! string ever appears; the file is reopened when it is moved away or on a reopen
//! (SIGUSR1's handler); and a log nobody can write (a FIFO nobody reads) drops and counts
//! lines while every request is still answered.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use leafgate_tests::config::{Listener, Route, Tenant};
use leafgate_tests::upstream::closed_port;
use leafgate_tests::{Config, TestGateway, TestUpstream};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest a line may take to reach the file (the writer flushes every 50 ms).
const WITHIN: Duration = Duration::from_secs(10);

/// Secrets every request carries; none may reach a line.
const SECRETS: [&str; 3] = ["hunter2-token", "session-cookie-value", "query-secret"];

/// The lines of `path` once it holds at least `n`, parsed (bounded by [`WITHIN`]).
async fn lines(path: &Path, n: usize) -> Vec<String> {
    let started = Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        if lines.len() >= n {
            return lines;
        }
        assert!(
            started.elapsed() < WITHIN,
            "{} holds {} lines, not {n}:\n{text}",
            path.display(),
            lines.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Sends one request with the secrets in its `Authorization`, `Cookie` and query, and
/// returns the answer's status.
async fn send(addr: std::net::SocketAddr, host: &str, path: &str) -> u16 {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "GET {path}?token=query-secret HTTP/1.1\r\nHost: {host}\r\n\
         Authorization: Bearer hunter2-token\r\nCookie: session=session-cookie-value\r\n\
         Referer: https://ref.example/\"quoted\"\r\nUser-Agent: e2e/1.0\r\n\
         Connection: close\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(WITHIN, tcp.read_to_end(&mut answer))
        .await
        .expect("the answer in time")
        .unwrap();
    let text = String::from_utf8_lossy(&answer);
    text.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"))
}

struct Bed {
    gw: TestGateway,
    log: PathBuf,
    backend: TestUpstream,
    down: std::net::SocketAddr,
}

impl Bed {
    async fn start(access_log: Value) -> Bed {
        let backend = TestUpstream::start("b").await;
        let down = closed_port();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("access.log");
        let mut table = access_log;
        table["path"] = json!(log.display().to_string());
        let gw = TestGateway::start_in(
            dir,
            Config::new()
                .admin()
                .set("access_log", table)
                .tenant(Tenant::new("shop"))
                .listener(Listener::new("fast").set("http1_fast_path", true))
                .listener(Listener::new("hyper").set("http1_fast_path", false))
                .route(
                    Route::host("site.example")
                        .name("site")
                        .tenant("shop")
                        .backend(backend.addr),
                )
                .route(
                    Route::host("direct.example")
                        .name("hello")
                        .direct(203, "hi"),
                )
                .route(Route::host("down.example").name("down").backend(down)),
        )
        .await;
        Bed {
            gw,
            log,
            backend,
            down,
        }
    }
}

/// The JSON lines of `path` once it holds at least `n`, parsed.
async fn json_lines(path: &Path, n: usize) -> Vec<Value> {
    leafgate_tests::access_log::lines_where(path, n, |_| true).await
}

fn parsed(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"))
}

/// The line for `host` on `listener` (exactly one).
fn line_of<'a>(lines: &'a [Value], listener: &str, host: &str) -> &'a Value {
    let found: Vec<&Value> = lines
        .iter()
        .filter(|l| l["listener"] == listener && l["host"] == host)
        .collect();
    assert_eq!(found.len(), 1, "{listener} {host}: {lines:#?}");
    found[0]
}

#[tokio::test]
async fn json_lines_hold_every_field_that_applies_on_both_paths_and_no_secret() {
    let bed = Bed::start(json!({ "format": "json" })).await;
    let cases = [
        ("site.example", 200),
        ("direct.example", 203),
        ("nowhere.example", 404),
        ("down.example", 502),
    ];
    for listener in ["fast", "hyper"] {
        for (host, status) in cases {
            assert_eq!(
                send(bed.gw.addr(listener), host, "/a/b").await,
                status,
                "{listener} {host}"
            );
        }
    }
    let text = lines(&bed.log, 2 * cases.len()).await;
    for secret in SECRETS {
        assert!(
            !text.iter().any(|l| l.contains(secret)),
            "{secret} in:\n{text:#?}"
        );
    }
    let lines: Vec<Value> = text.iter().map(|l| parsed(l)).collect();
    for l in &lines {
        for field in [
            "time",
            "kind",
            "listener",
            "client",
            "method",
            "host",
            "path",
            "protocol",
            "status",
            "bytes_out",
            "duration_ms",
            "served_by",
        ] {
            assert!(l.get(field).is_some(), "no {field} in {l}");
        }
        assert_eq!(l["kind"], "http");
        assert_eq!(l["method"], "GET");
        assert_eq!(l["path"], "/a/b", "the query is left out");
        assert_eq!(l["protocol"], "HTTP/1.1");
        assert_eq!(l["user_agent"], "e2e/1.0");
        assert_eq!(l["referer"], "https://ref.example/\"quoted\"");
        assert!(l["time"].as_str().unwrap().ends_with('Z'), "{l}");
        assert!(
            l["client"].as_str().unwrap().starts_with("127.0.0.1:"),
            "{l}"
        );
    }
    let backend = bed.backend.addr.to_string();
    for listener in ["fast", "hyper"] {
        // Proxied: by the fast path on its listener.
        let site = line_of(&lines, listener, "site.example");
        let served_by = if listener == "fast" { "fast" } else { "hyper" };
        assert_eq!(site["served_by"], served_by, "{site}");
        assert_eq!(site["route"], "site");
        assert_eq!(site["tenant"], "shop");
        assert_eq!(site["status"], 200);
        assert_eq!(site["upstream_status"], 200);
        assert!(
            site["upstream"].as_str().unwrap().contains(&backend),
            "{site}"
        );
        assert!(site["upstream_first_byte_ms"].as_f64().is_some(), "{site}");
        assert!(site["bytes_out"].as_u64().unwrap() > 0, "{site}");
        assert!(site.get("refusal").is_none(), "{site}");
        // A direct answer and a 404 are hyper's on both listeners.
        let direct = line_of(&lines, listener, "direct.example");
        assert_eq!(
            (
                &direct["route"],
                &direct["status"],
                &direct["served_by"],
                &direct["bytes_out"]
            ),
            (&json!("hello"), &json!(203), &json!("hyper"), &json!(2)),
            "{direct}"
        );
        assert!(direct.get("upstream").is_none(), "{direct}");
        let missing = line_of(&lines, listener, "nowhere.example");
        assert_eq!(missing["status"], 404);
        assert!(missing.get("route").is_none(), "{missing}");
        assert!(
            missing["refusal"].as_str().unwrap().contains("no route"),
            "{missing}"
        );
        // A 502: leafgate's own answer for the backend, with the backend tried.
        let down = line_of(&lines, listener, "down.example");
        assert_eq!(
            (&down["status"], &down["served_by"]),
            (&json!(502), &json!(served_by)),
            "{down}"
        );
        assert!(
            down["upstream"]
                .as_str()
                .unwrap()
                .contains(&bed.down.to_string()),
            "{down}"
        );
        assert!(down.get("upstream_status").is_none(), "{down}");
        assert!(!down["refusal"].as_str().unwrap().is_empty(), "{down}");
    }
}

#[tokio::test]
async fn the_query_is_written_only_when_asked_and_excluded_paths_are_not() {
    let bed = Bed::start(json!({ "query": true, "exclude_paths": ["/healthz"] })).await;
    for listener in ["fast", "hyper"] {
        let addr = bed.gw.addr(listener);
        assert_eq!(send(addr, "site.example", "/healthz").await, 200);
        assert_eq!(send(addr, "site.example", "/q").await, 200);
        // An error on an excluded path is still written.
        assert_eq!(send(addr, "down.example", "/healthz").await, 502);
    }
    let text = lines(&bed.log, 4).await;
    let lines: Vec<Value> = text.iter().map(|l| parsed(l)).collect();
    let paths: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l["host"].as_str().unwrap(), l["path"].as_str().unwrap()))
        .collect();
    for listener in ["fast", "hyper"] {
        let on: Vec<&Value> = lines.iter().filter(|l| l["listener"] == listener).collect();
        assert_eq!(on.len(), 2, "{listener}: {paths:?}");
    }
    assert_eq!(
        paths
            .iter()
            .filter(|p| **p == ("site.example", "/q?token=query-secret"))
            .count(),
        2,
        "{paths:?}"
    );
    assert_eq!(
        paths
            .iter()
            .filter(|p| **p == ("down.example", "/healthz?token=query-secret"))
            .count(),
        2,
        "{paths:?}"
    );
}

#[tokio::test]
async fn the_log_is_reopened_when_moved_away_and_on_reopen() {
    let bed = Bed::start(json!({ "format": "combined" })).await;
    let addr = bed.gw.addr("fast");
    assert_eq!(send(addr, "site.example", "/one").await, 200);
    lines(&bed.log, 1).await;
    // logrotate's `create`: the file moved away, the next lines go to a new one.
    let rotated = bed.log.with_extension("log.1");
    std::fs::rename(&bed.log, &rotated).unwrap();
    assert_eq!(send(addr, "site.example", "/two").await, 200);
    let now = lines(&bed.log, 1).await;
    assert!(now[0].contains("\"GET /two HTTP/1.1\" 200 "), "{now:?}");
    let old = std::fs::read_to_string(&rotated).unwrap();
    assert!(old.contains("GET /one ") && !old.contains("/two"), "{old}");
    // SIGUSR1 (`leafgate run` calls this on it): the file is opened again by its path,
    // so lines follow a file moved back over it.
    std::fs::rename(&rotated, &bed.log).unwrap();
    bed.gw.gateway.reopen_access_logs();
    assert_eq!(send(addr, "site.example", "/three").await, 200);
    let back = lines(&bed.log, 2).await;
    assert!(
        back[0].contains("GET /one ") && back[1].contains("GET /three "),
        "{back:?}"
    );
}

/// The real `leafgate run` process: lines follow a file logrotate moved away (no signal),
/// and `kill -USR1` (logrotate's `postrotate`) is taken as a reopen: the process logs it,
/// lives on (SIGUSR1's default action would end it), and the next line goes to a new file
/// at the path while the moved one keeps what it had.
#[tokio::test]
async fn a_running_leafgate_reopens_its_log_on_sigusr1_and_when_it_is_moved_away() {
    let bin = tokio::task::spawn_blocking(leafgate_tests::binary::leafgate)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let addr = closed_port();
    let config = Config::new()
        .set(
            "access_log",
            json!({ "format": "combined", "path": log.display().to_string() }),
        )
        .listener(Listener::new("web").bind(addr))
        .route(Route::host("*").name("hello").direct(200, "hi"));
    let file = dir.path().join("leafgate.toml");
    std::fs::write(&file, config.to_string()).unwrap();
    let stderr = std::fs::File::create(dir.path().join("stderr")).unwrap();
    let mut child = tokio::process::Command::new(bin)
        .args(["run", "--config"])
        .arg(&file)
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .expect("leafgate starts");
    let started = Instant::now();
    while TcpStream::connect(addr).await.is_err() {
        assert!(
            started.elapsed() < WITHIN,
            "leafgate does not listen on {addr}"
        );
        assert!(child.try_wait().unwrap().is_none(), "leafgate exited");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(send(addr, "a.example", "/one").await, 200);
    lines(&log, 1).await;

    // Moved away, no signal: the next line is in a new file at the path.
    std::fs::rename(&log, dir.path().join("access.log.1")).unwrap();
    assert_eq!(send(addr, "a.example", "/two").await, 200);
    let now = lines(&log, 1).await;
    assert!(now[0].contains("\"GET /two HTTP/1.1\" 200 "), "{now:?}");

    // Moved away and signalled.
    std::fs::rename(&log, dir.path().join("access.log.2")).unwrap();
    let pid = child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-USR1", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let said = Instant::now();
    loop {
        let text = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
        if text.contains("SIGUSR1: reopening the access logs") {
            break;
        }
        assert!(said.elapsed() < WITHIN, "no reopen logged:\n{text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "SIGUSR1 ended leafgate"
    );
    assert_eq!(send(addr, "a.example", "/three").await, 200);
    let now = lines(&log, 1).await;
    assert_eq!(now.len(), 1, "{now:?}");
    assert!(now[0].contains("\"GET /three HTTP/1.1\" 200 "), "{now:?}");
    for (rotated, path) in [("access.log.1", "/one"), ("access.log.2", "/two")] {
        let old = std::fs::read_to_string(dir.path().join(rotated)).unwrap();
        assert_eq!(old.lines().count(), 1, "{rotated}: {old}");
        assert!(old.contains(&format!("GET {path} ")), "{rotated}: {old}");
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();
}

/// `upstream_connect_ms` says how long the new connection to the backend took, on both
/// paths; the next request on the same client connection goes out on the pooled one and
/// has none.
#[tokio::test]
async fn upstream_connect_ms_is_written_for_a_new_backend_connection_only() {
    use http_body_util::BodyExt;
    let bed = Bed::start(json!({ "format": "json" })).await;
    for listener in ["fast", "hyper"] {
        let tcp = TcpStream::connect(bed.gw.addr(listener)).await.unwrap();
        let (mut sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
                .await
                .unwrap();
        tokio::spawn(conn);
        for path in ["/first", "/second"] {
            let req = http::Request::get(path)
                .header("host", "site.example")
                .body(http_body_util::Empty::<bytes::Bytes>::new())
                .unwrap();
            let res = sender.send_request(req).await.unwrap();
            assert_eq!(res.status(), 200, "{listener} {path}");
            res.into_body().collect().await.unwrap();
        }
    }
    let lines: Vec<Value> = json_lines(&bed.log, 4).await;
    for listener in ["fast", "hyper"] {
        let of = |path: &str| {
            lines
                .iter()
                .find(|l| l["listener"] == listener && l["path"] == path)
                .unwrap_or_else(|| panic!("{listener} {path}: {lines:#?}"))
        };
        let first = of("/first");
        let connect = first["upstream_connect_ms"]
            .as_f64()
            .unwrap_or_else(|| panic!("{listener}: no connect time: {first}"));
        let first_byte = first["upstream_first_byte_ms"].as_f64().unwrap();
        assert!(connect > 0.0 && connect <= first_byte, "{first}");
        let second = of("/second");
        assert!(
            second.get("upstream_connect_ms").is_none(),
            "{listener}: a pooled connection: {second}"
        );
        assert!(
            second["upstream_first_byte_ms"].as_f64().is_some(),
            "{second}"
        );
    }
}

/// To an HTTP/2 backend, the request that waited for the connection to be made says how
/// long it took; the streams sharing the connection after say nothing.
#[tokio::test]
async fn upstream_connect_ms_is_written_for_the_request_that_dialled_an_h2_backend() {
    use http_body_util::BodyExt;
    use leafgate_tests::upstream::Speaks;
    let h2 = TestUpstream::start_speaking("h2c-only", Speaks::H2c).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let gw = TestGateway::start_in(
        dir,
        Config::new()
            .admin()
            .set(
                "access_log",
                json!({ "format": "json", "path": log.display().to_string() }),
            )
            .listener(Listener::new("web"))
            .route(Route::host("h2.example").backend(h2.addr).protocol("h2c")),
    )
    .await;
    let tcp = TcpStream::connect(gw.addr("web")).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .unwrap();
    tokio::spawn(conn);
    for path in ["/first", "/second", "/third"] {
        let req = http::Request::get(path)
            .header("host", "h2.example")
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap();
        let res = sender.send_request(req).await.unwrap();
        assert_eq!(res.status(), 200, "{path}");
        res.into_body().collect().await.unwrap();
    }
    let lines: Vec<Value> = json_lines(&log, 3).await;
    let of = |path: &str| {
        lines
            .iter()
            .find(|l| l["path"] == path)
            .unwrap_or_else(|| panic!("{path}: {lines:#?}"))
    };
    let first = of("/first");
    let connect = first["upstream_connect_ms"]
        .as_f64()
        .unwrap_or_else(|| panic!("no connect time for the dialling request: {first}"));
    let first_byte = first["upstream_first_byte_ms"].as_f64().unwrap();
    assert!(connect > 0.0 && connect <= first_byte, "{first}");
    for path in ["/second", "/third"] {
        let later = of(path);
        assert_eq!(later["status"], 200, "{later}");
        assert!(
            later.get("upstream_connect_ms").is_none(),
            "a stream on the open connection: {later}"
        );
    }
}

#[tokio::test]
async fn a_log_nobody_reads_drops_and_counts_lines_and_never_holds_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("access.fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let backend = TestUpstream::start("b").await;
    let gw = TestGateway::start_in(
        dir,
        Config::new()
            .admin()
            .set("access_log", json!({ "path": fifo.display().to_string() }))
            .listener(Listener::new("fast").set("http1_fast_path", true))
            .route(Route::host("*").backend(backend.addr)),
    )
    .await;
    // Enough lines to fill every serving thread's buffer (256 KiB each) many times over,
    // on one keep-alive connection, each answered in time.
    let mut tcp = TcpStream::connect(gw.addr("fast")).await.unwrap();
    let padding = "p".repeat(1500);
    let started = Instant::now();
    let mut buf = vec![0u8; 64 * 1024];
    for i in 0..2000 {
        let head = format!("GET /{i}/{padding} HTTP/1.1\r\nHost: a.example\r\n\r\n");
        tcp.write_all(head.as_bytes()).await.unwrap();
        let mut have = 0;
        loop {
            let n = tokio::time::timeout(WITHIN, tcp.read(&mut buf[have..]))
                .await
                .expect("an answer while the log is stuck")
                .unwrap();
            assert!(n > 0, "the gateway closed the connection");
            have += n;
            if complete(&buf[..have]) {
                break;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the requests were held up"
        );
    }
    let metrics = leafgate_tests::client::get(gw.admin(), "admin", "/metrics")
        .await
        .text();
    let dropped: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("leafgate_access_log_dropped_total "))
        .unwrap_or_else(|| panic!("no drop counter in:\n{metrics}"))
        .parse()
        .unwrap();
    assert!(dropped > 0.0, "nothing dropped");
}

/// Whether `bytes` hold a whole answer with a `content-length` body.
fn complete(bytes: &[u8]) -> bool {
    let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    bytes.len() >= end + 4 + length
}

/// nginx (the Debian package's, as `bench/` runs it) on a port that was free a moment ago,
/// answering `hello` and writing its default `combined` log to `log`; killed on drop.
struct Nginx {
    addr: std::net::SocketAddr,
    log: PathBuf,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Nginx {
    fn start() -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let addr = closed_port();
        let log = dir.path().join("nginx-access.log");
        let conf = format!(
            "daemon off;\nmaster_process off;\npid {dir}/nginx.pid;\nerror_log {dir}/error.log;\n\
             events {{}}\nhttp {{\n  access_log {log} combined;\n  server {{\n    listen {addr};\n\
             location / {{ return 200 \"hello\"; }}\n  }}\n}}\n",
            dir = dir.path().display(),
            log = log.display(),
        );
        std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
        let child = std::process::Command::new("/usr/sbin/nginx")
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(dir.path().join("nginx.conf"))
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .spawn()
            .expect("nginx from the Debian package (scripts/test.sh installs nginx-light)");
        Nginx {
            addr,
            log,
            child,
            _dir: dir,
        }
    }

    /// Waits (bounded) until nginx accepts connections.
    async fn ready(&self) {
        let started = Instant::now();
        while TcpStream::connect(self.addr).await.is_err() {
            assert!(started.elapsed() < WITHIN, "nginx did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `line` with its `[$time_local]` masked.
fn timeless(line: &str) -> String {
    match (line.find('['), line.find(']')) {
        (Some(a), Some(b)) if a < b => format!("{}[TIME]{}", &line[..a], &line[b + 1..]),
        _ => line.to_string(),
    }
}

#[tokio::test]
async fn combined_lines_are_nginx_s_byte_for_byte() {
    let nginx = Nginx::start();
    nginx.ready().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let gw = TestGateway::start_in(
        dir,
        Config::new()
            .set(
                "access_log",
                json!({ "format": "combined", "path": log.display().to_string() }),
            )
            .listener(Listener::new("fast").set("http1_fast_path", true))
            .listener(Listener::new("hyper").set("http1_fast_path", false))
            .route(Route::host("proxied.example").backend(nginx.addr))
            .route(Route::host("direct.example").direct(200, "hello")),
    )
    .await;
    // The same request (client 127.0.0.1, path, referer, user agent with what nginx
    // escapes) to nginx itself, and through each path of leafgate: proxied to nginx (whose
    // own line for it is compared too) and answered directly.
    let head = |host: &str| {
        let mut h = format!(
            "GET /shop/item-7 HTTP/1.1\r\nHost: {host}\r\nReferer: https://ref.example/a?b=1\r\n\
             User-Agent: Mozilla/5.0 \"quoted\" back\\slash "
        )
        .into_bytes();
        h.extend_from_slice(b"caf\xc3\xa9\r\nConnection: close\r\n\r\n");
        h
    };
    let send_raw = |addr, bytes: Vec<u8>| async move {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(&bytes).await.unwrap();
        let mut answer = Vec::new();
        tokio::time::timeout(WITHIN, tcp.read_to_end(&mut answer))
            .await
            .expect("an answer in time")
            .unwrap();
        assert!(
            answer.starts_with(b"HTTP/1.1 200 "),
            "{}",
            String::from_utf8_lossy(&answer)
        );
    };
    send_raw(nginx.addr, head("nginx.example")).await;
    let expected = timeless(&lines(&nginx.log, 1).await[0]);
    for listener in ["fast", "hyper"] {
        send_raw(gw.addr(listener), head("proxied.example")).await;
        send_raw(gw.addr(listener), head("direct.example")).await;
    }
    let ours = lines(&log, 4).await;
    for line in &ours {
        assert_eq!(timeless(line), expected, "leafgate's line against nginx's");
    }
    // nginx's lines for the requests leafgate proxied to it: the same request reached it.
    let theirs = lines(&nginx.log, 3).await;
    for line in &theirs[1..] {
        assert_eq!(
            timeless(line),
            expected,
            "nginx's line for a request leafgate proxied"
        );
    }
    assert!(
        expected.contains(r#"\x22quoted\x22 back\x5Cslash caf\xC3\xA9"#),
        "{expected}"
    );
}

/// A gateway giving requests IDs (`[request_id]`), with a fast-path and a hyper listener
/// for untrusted clients and one of each behind a trusted proxy (loopback), each
/// writing JSON lines to `log`; the backend echoes the headers it got.
async fn with_ids() -> (TestGateway, PathBuf, TestUpstream) {
    let backend = TestUpstream::start("b").await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let gw = TestGateway::start_in(
        dir,
        Config::new()
            .set("request_id", json!({ "header": "X-Request-Id" }))
            .set("tracing", json!({ "propagate": true }))
            .set("access_log", json!({ "path": log.display().to_string() }))
            .listener(Listener::new("fast").set("http1_fast_path", true))
            .listener(Listener::new("hyper").set("http1_fast_path", false))
            .listener(
                Listener::new("fast-lb")
                    .set("http1_fast_path", true)
                    .trusted_proxies(["127.0.0.0/8"]),
            )
            .listener(
                Listener::new("hyper-lb")
                    .set("http1_fast_path", false)
                    .trusted_proxies(["127.0.0.0/8"]),
            )
            .route(
                Route::host("site.example")
                    .name("site")
                    .backend(backend.addr),
            ),
    )
    .await;
    (gw, log, backend)
}

/// What one HTTP/1.1 request with `extra` header lines (raw bytes, each ending in CRLF)
/// got: the answer's `x-request-id` lines, and the backend's echo of the request's.
async fn id_over_h1(addr: std::net::SocketAddr, extra: &[u8]) -> (Vec<String>, Vec<String>) {
    let (returned, echo) = echo_over_h1(addr, extra).await;
    (returned, seen_by_backend(&echo))
}

/// The answer's `x-request-id` lines and the backend's echo, for [`id_over_h1`]'s request.
async fn echo_over_h1(addr: std::net::SocketAddr, extra: &[u8]) -> (Vec<String>, Value) {
    match id_or_refusal(addr, extra).await {
        Ok(got) => got,
        Err(head) => panic!("refused: {head}"),
    }
}

/// [`id_over_h1`], or the head of a refusal (not a 200) that never reached the backend.
async fn id_or_refusal(
    addr: std::net::SocketAddr,
    extra: &[u8],
) -> Result<(Vec<String>, Value), String> {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    let mut head = b"GET /id HTTP/1.1\r\nHost: site.example\r\n".to_vec();
    head.extend_from_slice(extra);
    head.extend_from_slice(b"Connection: close\r\n\r\n");
    tcp.write_all(&head).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(WITHIN, tcp.read_to_end(&mut answer))
        .await
        .expect("the answer in time")
        .unwrap();
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {:?}", String::from_utf8_lossy(&answer)));
    let head = String::from_utf8_lossy(&answer[..end]).to_string();
    if !head.starts_with("HTTP/1.1 200 ") {
        return Err(head);
    }
    let returned = head
        .lines()
        .filter_map(|l| l.split_once(": "))
        .filter(|(n, _)| n.eq_ignore_ascii_case("x-request-id"))
        .map(|(_, v)| v.to_string())
        .collect();
    let echo: Value = serde_json::from_slice(&answer[end + 4..]).unwrap();
    Ok((returned, echo))
}

fn seen_by_backend(echo: &Value) -> Vec<String> {
    echo["headers"]["x-request-id"]
        .as_array()
        .map(|v| v.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

fn is_fresh(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[tokio::test]
async fn request_ids_are_kept_from_trusted_proxies_else_made_and_reach_backend_client_and_log() {
    let (gw, log, _backend) = with_ids().await;
    let mut expected = Vec::new();
    for (listener, trusted) in [
        ("fast", false),
        ("hyper", false),
        ("fast-lb", true),
        ("hyper-lb", true),
    ] {
        let (returned, seen) =
            id_over_h1(gw.addr(listener), b"X-Request-Id: edge-7f3a.9\r\n").await;
        assert_eq!(returned.len(), 1, "{listener}: {returned:?}");
        assert_eq!(
            seen, returned,
            "{listener}: the backend got the client's ID"
        );
        if trusted {
            assert_eq!(
                returned[0], "edge-7f3a.9",
                "{listener} keeps a trusted proxy's ID"
            );
        } else {
            assert!(is_fresh(&returned[0]), "{listener}: {returned:?}");
        }
        expected.push((listener, returned[0].clone()));
        // No ID sent: a fresh one, from anyone.
        let (returned, seen) = id_over_h1(gw.addr(listener), b"").await;
        assert!(
            returned.len() == 1 && is_fresh(&returned[0]),
            "{listener}: {returned:?}"
        );
        assert_eq!(seen, returned, "{listener}");
        expected.push((listener, returned[0].clone()));
    }
    // HTTP/2 (prior knowledge) on hyper's path, trusted and not.
    for (listener, trusted) in [("hyper", false), ("hyper-lb", true), ("fast", false)] {
        let io = hyper_util::rt::TokioIo::new(TcpStream::connect(gw.addr(listener)).await.unwrap());
        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
                .await
                .unwrap();
        tokio::spawn(conn);
        let req = http::Request::get("http://site.example/id")
            .header("x-request-id", "edge-h2-1")
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap();
        let res = leafgate_tests::client::collect(sender.send_request(req).await.unwrap()).await;
        assert_eq!(res.version, http::Version::HTTP_2);
        let returned: Vec<String> = res
            .headers
            .get_all("x-request-id")
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .collect();
        let echo: Value = serde_json::from_slice(&res.body).unwrap();
        assert_eq!(seen_by_backend(&echo), returned, "{listener} over h2");
        if trusted {
            assert_eq!(returned, ["edge-h2-1"], "{listener} over h2");
        } else {
            assert!(
                returned.len() == 1 && is_fresh(&returned[0]),
                "{listener}: {returned:?}"
            );
        }
        expected.push((listener, returned[0].clone()));
    }
    let lines: Vec<Value> = json_lines(&log, expected.len()).await;
    for (listener, id) in &expected {
        let found = lines
            .iter()
            .filter(|l| l["listener"] == *listener && l["request_id"] == id.as_str())
            .count();
        assert_eq!(found, 1, "{listener} {id}: {lines:#?}");
    }
    let ids: std::collections::HashSet<&String> = expected.iter().map(|(_, id)| id).collect();
    assert_eq!(
        ids.len(),
        expected.len() - 1,
        "made IDs differ (the trusted HTTP/1.1 one is kept on both paths)"
    );
}

#[tokio::test]
async fn a_hostile_request_id_never_reaches_the_backend_even_from_a_trusted_proxy() {
    let (gw, _log, _backend) = with_ids().await;
    let long = format!("X-Request-Id: {}\r\n", "a".repeat(10 * 1024));
    // A control character or DEL is refused by the HTTP parser itself (httparse, RFC 9110
    // §5.5): a 400 and nothing sent on; the rest are read and the ID replaced.
    for listener in ["fast-lb", "hyper-lb"] {
        for line in [
            &b"X-Request-Id: a\x01b\r\n"[..],
            b"X-Request-Id: a\x7fb\r\n",
        ] {
            match id_or_refusal(gw.addr(listener), line).await {
                Err(head) => assert!(head.starts_with("HTTP/1.1 400 "), "{listener}: {head}"),
                Ok(got) => panic!("{listener}: {line:?} was taken: {got:?}"),
            }
        }
    }
    let hostile: [(&str, &[u8]); 5] = [
        ("10 KiB", long.as_bytes()),
        ("non-ASCII", b"X-Request-Id: caf\xc3\xa9-1\r\n"),
        ("a tab", b"X-Request-Id: a\tb\r\n"),
        ("a space", b"X-Request-Id: a b\r\n"),
        // CR LF injection: a second line the client smuggles in to pick two IDs.
        (
            "two lines",
            b"X-Request-Id: first\r\nX-Request-Id: second\r\n",
        ),
    ];
    for listener in ["fast-lb", "hyper-lb", "fast", "hyper"] {
        for (what, line) in hostile {
            let (returned, echo) = id_or_refusal(gw.addr(listener), line)
                .await
                .unwrap_or_else(|head| panic!("{listener} {what}: {head}"));
            let seen = seen_by_backend(&echo);
            assert!(
                returned.len() == 1 && is_fresh(&returned[0]),
                "{listener} {what}: {returned:?}"
            );
            assert_eq!(
                seen, returned,
                "{listener} {what}: replaced, never forwarded"
            );
        }
    }
}

/// The backend's lines of `name`.
fn echoed(echo: &Value, name: &str) -> Vec<String> {
    echo["headers"][name]
        .as_array()
        .map(|v| v.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// A version-00 `traceparent` with ids not all zero (W3C Trace Context §3.2); its
/// trace-id.
fn trace_id_of(traceparent: &str) -> Option<&str> {
    let parts: Vec<&str> = traceparent.split('-').collect();
    let hex = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let ok = parts.len() == 4
        && parts[0] == "00"
        && hex(parts[1], 32)
        && hex(parts[2], 16)
        && hex(parts[3], 2)
        && parts[1].bytes().any(|b| b != b'0')
        && parts[2].bytes().any(|b| b != b'0');
    ok.then_some(parts[1])
}

#[tokio::test]
async fn traceparent_is_passed_on_when_valid_and_started_when_absent_or_malformed() {
    let (gw, log, _backend) = with_ids().await;
    // The spec's own example (§3.2.2.5), with a tracestate.
    let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let mut expected = Vec::new();
    for listener in ["fast", "hyper", "fast-lb", "hyper-lb"] {
        let addr = gw.addr(listener);
        let sent = format!("traceparent: {valid}\r\ntracestate: vendor=opaque1\r\n");
        let (ids, echo) = echo_over_h1(addr, sent.as_bytes()).await;
        assert_eq!(
            echoed(&echo, "traceparent"),
            [valid],
            "{listener}: passed on as it came"
        );
        assert_eq!(
            echoed(&echo, "tracestate"),
            ["vendor=opaque1"],
            "{listener}"
        );
        expected.push((
            ids[0].clone(),
            "4bf92f3577b34da6a3ce929d0e0e4736".to_string(),
        ));

        let (ids, echo) = echo_over_h1(addr, b"").await;
        let started = echoed(&echo, "traceparent");
        assert_eq!(started.len(), 1, "{listener}: a trace started");
        let trace = trace_id_of(&started[0]).unwrap_or_else(|| panic!("{started:?}"));
        assert!(started[0].ends_with("-01"), "{started:?}");
        expected.push((ids[0].clone(), trace.to_string()));

        for (what, bad) in [
            (
                "all-zero trace-id",
                "traceparent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01\r\n",
            ),
            (
                "uppercase",
                "traceparent: 00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01\r\n",
            ),
            (
                "version ff",
                "traceparent: ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n",
            ),
            (
                "short",
                "traceparent: 00-4bf92f3577b34da6-00f067aa0ba902b7-01\r\n",
            ),
        ] {
            let sent = format!("{bad}tracestate: vendor=opaque1\r\n");
            let (ids, echo) = echo_over_h1(addr, sent.as_bytes()).await;
            let got = echoed(&echo, "traceparent");
            assert_eq!(got.len(), 1, "{listener} {what}: {got:?}");
            let trace =
                trace_id_of(&got[0]).unwrap_or_else(|| panic!("{listener} {what}: {got:?}"));
            assert_ne!(
                trace, "4bf92f3577b34da6a3ce929d0e0e4736",
                "{listener} {what}: a new trace"
            );
            assert!(
                echoed(&echo, "tracestate").is_empty(),
                "{listener} {what}: no tracestate without a valid traceparent"
            );
            expected.push((ids[0].clone(), trace.to_string()));
        }
        // Two lines are no one traceparent.
        let two = format!("traceparent: {valid}\r\ntraceparent: {valid}\r\n");
        let (_, echo) = echo_over_h1(addr, two.as_bytes()).await;
        let got = echoed(&echo, "traceparent");
        assert!(got.len() == 1 && got[0] != valid, "{listener}: {got:?}");
    }
    // The trace-id in each line, found by the request's ID.
    let lines: Vec<Value> = json_lines(&log, expected.len()).await;
    for (id, trace) in &expected {
        let line = lines
            .iter()
            .find(|l| l["request_id"] == id.as_str())
            .unwrap_or_else(|| panic!("no line for {id}: {lines:#?}"));
        assert_eq!(line["trace_id"], trace.as_str(), "{line}");
    }
}

#[tokio::test]
async fn without_tracing_trace_headers_are_left_as_they_came() {
    let bed = Bed::start(json!({ "format": "json" })).await;
    let bad = "00-00000000000000000000000000000000-0000000000000000-01";
    for listener in ["fast", "hyper"] {
        let sent = format!("traceparent: {bad}\r\ntracestate: a=b\r\n");
        let (ids, echo) = echo_over_h1(bed.gw.addr(listener), sent.as_bytes()).await;
        assert!(ids.is_empty(), "no [request_id], no ID: {ids:?}");
        assert_eq!(echoed(&echo, "traceparent"), [bad], "{listener}");
        assert_eq!(echoed(&echo, "tracestate"), ["a=b"], "{listener}");
        assert!(seen_by_backend(&echo).is_empty(), "{listener}");
    }
    let lines: Vec<Value> = json_lines(&bed.log, 2).await;
    for l in &lines {
        assert!(
            l.get("trace_id").is_none() && l.get("request_id").is_none(),
            "{l}"
        );
    }
}

#[tokio::test]
async fn a_spliced_websocket_writes_its_line_at_close_with_the_bytes_each_way() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let ws = leafgate_tests::backends::websocket_echo("ws").await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    let gw = TestGateway::start_in(
        dir,
        Config::new()
            .set("request_id", json!({}))
            .set("access_log", json!({ "path": log.display().to_string() }))
            .tenant(Tenant::new("shop"))
            .listener(Listener::new("fast").set("http1_fast_path", true))
            .listener(Listener::new("hyper").set("http1_fast_path", false))
            .route(
                Route::host("*")
                    .name("socket")
                    .tenant("shop")
                    .backend(ws.addr),
            ),
    )
    .await;
    const L: u64 = 100_000;
    for listener in ["fast", "hyper"] {
        let (mut socket, res) =
            tokio_tungstenite::connect_async(format!("ws://{}/socket", gw.addr(listener)))
                .await
                .unwrap();
        let id = res.headers()["x-request-id"].to_str().unwrap().to_string();
        socket
            .send(Message::binary(vec![7u8; L as usize]))
            .await
            .unwrap();
        let echoed = socket.next().await.unwrap().unwrap();
        assert_eq!(echoed.into_data().len() as u64, L);
        // No line while the connection is open.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            upgrade_line(&log, listener).is_none(),
            "{listener}: a line before the close"
        );
        socket.close(None).await.unwrap();
        drop(socket);
        let line = upgrade_line_within(&log, listener).await;
        assert_eq!(line["route"], "socket", "{line}");
        assert_eq!(line["tenant"], "shop", "{line}");
        assert_eq!(line["request_id"], id.as_str(), "{line}");
        assert!(
            line["upstream"]
                .as_str()
                .unwrap()
                .contains(&ws.addr.to_string()),
            "{line}"
        );
        // RFC 6455 §5.2: the client's message in a masked frame with a 64-bit length (14
        // bytes of header), then its empty Close (2 + 4 of mask); the backend's in an
        // unmasked one (10), and its Close reply when it sends one (2).
        assert_eq!(line["bytes_in"], L + 14 + 6, "{line}");
        let out = line["bytes_out"].as_u64().unwrap();
        assert!(out == L + 10 || out == L + 12, "{line}");
        assert!(line["duration_ms"].as_f64().unwrap() >= 200.0, "{line}");
        // Both ends closed cleanly (or the client's went without a Close reply awaited).
        let reason = line["end_reason"].as_str().unwrap_or_default();
        assert!(["closed", "client closed"].contains(&reason), "{line}");
        assert_eq!(line["kind"], "upgrade");
    }
}

/// A hijacked connection whose backend resets it while the route's bandwidth limit holds
/// the client's bytes back: the splice fails, and its line still says how long it was
/// throttled, and why it ended.
#[tokio::test]
async fn a_failed_splice_writes_its_throttled_time_and_why_it_ended() {
    use leafgate_tests::backends;
    const TAKEN: usize = 40_000;
    // Takes the first 40,000 bytes after the switch, then resets the connection.
    let backend = backends::raw(|_head, mut stream| async move {
        stream
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x-sink\r\n\r\n")
            .await
            .unwrap();
        let mut got = vec![0u8; TAKEN];
        let _ = stream.read_exact(&mut got).await;
        // A linger of zero resets at once (the deprecation is about a drop that blocks).
        #[allow(deprecated)]
        let _ = stream.set_linger(Some(Duration::ZERO));
        drop(stream);
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    // 16 KiB a second, its burst 16 KiB: 40,000 bytes wait for about 1.5 s.
    let gw = TestGateway::start_in(
        dir,
        Config::new()
            .set("access_log", json!({ "path": log.display().to_string() }))
            .listener(Listener::new("fast").set("http1_fast_path", true))
            .listener(Listener::new("hyper").set("http1_fast_path", false))
            .route(
                Route::host("*")
                    .name("sink")
                    .backend(backend.addr)
                    .bandwidth("16KiB/s"),
            ),
    )
    .await;
    let mut clients = Vec::new();
    for listener in ["fast", "hyper"] {
        let mut tcp = TcpStream::connect(gw.addr(listener)).await.unwrap();
        tcp.write_all(
            b"GET /sink HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: x-sink\r\n\r\n",
        )
        .await
        .unwrap();
        let head = backends::read_head(&mut tcp).await.unwrap();
        assert!(head.starts_with("HTTP/1.1 101"), "{listener}: {head}");
        // More than the backend takes; the writes stop when the connection goes.
        clients.push(tokio::spawn(async move {
            let _ = tcp.write_all(&vec![b'z'; 200_000]).await;
            let mut rest = Vec::new();
            let _ = tcp.read_to_end(&mut rest).await;
        }));
    }
    for listener in ["fast", "hyper"] {
        let line = upgrade_line_within(&log, listener).await;
        assert_eq!(line["route"], "sink", "{line}");
        let reason = line["end_reason"].as_str().unwrap_or_default();
        assert!(
            ["upstream closed", "upstream error"].contains(&reason),
            "{listener}: {line}"
        );
        let throttled = line["throttled_ms"]
            .as_f64()
            .unwrap_or_else(|| panic!("{listener}: no throttled time: {line}"));
        assert!(throttled >= 500.0, "{listener}: {line}");
        let bytes_in = line["bytes_in"].as_u64().unwrap();
        assert!(bytes_in >= TAKEN as u64, "{listener}: {line}");
    }
    for c in clients {
        let _ = tokio::time::timeout(WITHIN, c).await;
    }
}

/// `listener`'s `upgrade` line in the log at `path`, waited for up to [`WITHIN`].
async fn upgrade_line_within(path: &Path, listener: &str) -> Value {
    let started = Instant::now();
    loop {
        if let Some(line) = upgrade_line(path, listener) {
            return line;
        }
        assert!(started.elapsed() < WITHIN, "{listener}: no upgrade line");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `listener`'s `upgrade` line in the log at `path`, once there is one.
fn upgrade_line(path: &Path, listener: &str) -> Option<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(parsed)
        .find(|l| l["listener"] == listener && l["kind"] == "upgrade")
}

#[tokio::test]
async fn tls_lines_carry_the_server_name_and_version_on_both_paths() {
    let backend = TestUpstream::start("b").await;
    let dir = tempfile::tempdir().unwrap();
    let ca = leafgate_tests::certs::TestCa::new("access log CA");
    let cert = ca.issue(dir.path(), "site", &["site.example", "*.tls.example"]);
    let log = dir.path().join("access.log");
    let gw = TestGateway::start_in(
        dir,
        Config::new()
            .set(
                "access_log",
                json!({ "format": "json", "path": log.display().to_string() }),
            )
            .listener(
                Listener::new("tls-fast")
                    .tls(&cert.cert, &cert.key)
                    .set("http1_fast_path", true),
            )
            .listener(
                Listener::new("tls-hyper")
                    .tls(&cert.cert, &cert.key)
                    .set("http1_fast_path", false),
            )
            .listener(Listener::new("plain"))
            .route(Route::host("*").name("site").backend(backend.addr)),
    )
    .await;
    for (listener, sni) in [("tls-fast", "site.example"), ("tls-hyper", "a.tls.example")] {
        let mut session =
            leafgate_tests::client::tls_connect(gw.addr(listener), sni, ca.roots(), &[b"http/1.1"])
                .await;
        let head = format!("GET /t HTTP/1.1\r\nHost: {sni}\r\nConnection: close\r\n\r\n");
        session.stream.write_all(head.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        session.stream.read_to_end(&mut answer).await.unwrap();
        assert!(
            answer.starts_with(b"HTTP/1.1 200"),
            "{listener}: {}",
            String::from_utf8_lossy(&answer)
        );
    }
    assert_eq!(send(gw.addr("plain"), "plain.example", "/t").await, 200);
    let lines: Vec<Value> = json_lines(&log, 3).await;
    for (listener, sni, served_by) in [
        ("tls-fast", "site.example", "fast"),
        ("tls-hyper", "a.tls.example", "hyper"),
    ] {
        let l = line_of(&lines, listener, sni);
        assert_eq!(l["sni"], sni, "{l}");
        assert_eq!(l["tls_version"], "TLSv1.3", "{l}");
        assert_eq!(l["served_by"], served_by, "{l}");
    }
    // A plain connection has no handshake: neither field is written.
    let plain = line_of(&lines, "plain", "plain.example");
    assert!(
        plain.get("sni").is_none() && plain.get("tls_version").is_none(),
        "{plain}"
    );
}
