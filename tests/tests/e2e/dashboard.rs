//! The admin listener's dashboard: its files and their headers over real sockets, the access
//! rule for the data it polls, and the page itself in headless Chromium
//! (`tests/browser/dashboard.mjs`, playwright-core and Debian's chromium as
//! scripts/tools.sh installs them) against a gateway with routes, traffic and a kubesim
//! leaf that the test stops.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::Empty;
use kubesim::{Credential, KubeSim};
use leafgate_tests::client::{Answer, get, send_h1};
use leafgate_tests::config::{Leaf, Route};
use leafgate_tests::{Config, TestGateway};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpSocket;

/// A route name an operator's tooling (or an Ingress-generated name) could carry: the page
/// must show it as text.
const HOSTILE: &str = "<img src=x onerror=\"window.pwned=true\"><script>window.pwned=true</script>";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .into()
}

/// `GET path` to the admin listener from a socket bound to `from` (any 127/8 address: only
/// 127.0.0.1 is loopback to the admin listener), with a bearer token when given.
async fn admin_get(admin: SocketAddr, from: IpAddr, path: &str, token: Option<&str>) -> Answer {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(from, 0)).unwrap();
    let tcp = socket
        .connect(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), admin.port()))
        .await
        .unwrap();
    let mut req = Request::get(path).header("host", "admin");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    send_h1(tcp, req.body(Empty::<Bytes>::new()).unwrap()).await
}

#[tokio::test]
async fn the_dashboard_files_are_served_with_a_strict_policy_and_the_data_keeps_its_access_rule() {
    let dir = tempfile::tempdir().unwrap();
    let token = "dashboard-admin-token-0123456789";
    std::fs::write(dir.path().join("admin.tokens"), format!("{token}\n")).unwrap();
    let gw = TestGateway::start_in(
        dir,
        Config::web().set(
            "admin",
            json!({ "bind": "0.0.0.0:0", "tokens_file": "admin.tokens" }),
        ),
    )
    .await;
    let remote: IpAddr = Ipv4Addr::new(127, 0, 0, 5).into();
    for (path, kind) in [
        ("/", "text/html"),
        ("/dashboard.js", "text/javascript"),
        ("/dashboard.css", "text/css"),
    ] {
        // The files hold no data: any peer gets them, each with the policy.
        let res = admin_get(gw.admin(), remote, path, None).await;
        assert_eq!(res.status, StatusCode::OK, "{path}");
        assert!(
            res.headers["content-type"]
                .to_str()
                .unwrap()
                .starts_with(kind),
            "{path}: {:?}",
            res.headers["content-type"]
        );
        let csp = res.headers["content-security-policy"].to_str().unwrap();
        assert!(csp.starts_with("default-src 'self'"), "{path}: {csp}");
        assert_eq!(res.headers["x-content-type-options"], "nosniff", "{path}");
    }
    // The page loads its script from its own path, and has no inline script or handler
    // (the policy would block them).
    let page = get(gw.admin(), "admin", "/").await.text();
    assert!(page.contains(r#"<script src="/dashboard.js" defer></script>"#));
    assert_eq!(page.matches("<script").count(), 1, "{page}");
    assert!(!page.contains(" on"), "no inline event handler: {page}");
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "nothing from elsewhere"
    );
    let script = get(gw.admin(), "admin", "/dashboard.js").await.text();
    assert!(!script.contains("innerHTML") && !script.contains("insertAdjacentHTML"));
    // What the page polls: /status keeps its rule (a remote browser sends the token the
    // operator typed in), /metrics stays open.
    let status = admin_get(gw.admin(), remote, "/status", None).await;
    assert_eq!(status.status, StatusCode::UNAUTHORIZED);
    let status = admin_get(gw.admin(), remote, "/status", Some(token)).await;
    assert_eq!(status.status, StatusCode::OK);
    let metrics = admin_get(gw.admin(), remote, "/metrics", None).await;
    assert_eq!(metrics.status, StatusCode::OK);
    // Only GET.
    let socket = TcpSocket::new_v4().unwrap();
    let tcp = socket.connect(gw.admin()).await.unwrap();
    let req = Request::post("/dashboard.js")
        .header("host", "admin")
        .body(Empty::<Bytes>::new())
        .unwrap();
    assert_eq!(
        send_h1(tcp, req).await.status,
        StatusCode::METHOD_NOT_ALLOWED
    );
}

fn pod(ns: &str, name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": ns, "name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]}
    })
}

#[tokio::test]
async fn the_dashboard_in_chromium_shows_live_figures_and_a_stopped_leaf_in_red() {
    let tools = repo_root().join("target/tools/browser");
    assert!(
        Path::new("/usr/bin/chromium").is_file()
            && tools.join("node_modules/playwright-core").is_dir(),
        "chromium or playwright-core is missing: run scripts/tools.sh"
    );
    let mut sim = KubeSim::builder().start().await.unwrap();
    sim.create(pod("apps", "web-0")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    sim.kubeconfig(
        &Credential::ClientCert("leafgate".into()),
        &dir.path().join("leaf.kubeconfig"),
    )
    .unwrap();
    let gw = TestGateway::start_in(
        dir,
        Config::web()
            .admin()
            .leaf(Leaf::new("leaf-1", "leaf.kubeconfig"))
            .route(Route::host("app.example").name("app").direct(200, "ok\n"))
            .route(
                Route::host("hostile.example")
                    .name(HOSTILE)
                    .direct(200, "ok\n"),
            ),
    )
    .await;

    // Traffic on `app` while the page runs: bounded in count and time.
    let sending = Arc::new(AtomicBool::new(true));
    let traffic = tokio::spawn({
        let (web, sending) = (gw.addr("web"), sending.clone());
        async move {
            let started = Instant::now();
            let mut sent = 0u32;
            while sending.load(Ordering::Relaxed)
                && sent < 3000
                && started.elapsed() < Duration::from_secs(90)
            {
                assert_eq!(get(web, "app.example", "/").await.status, StatusCode::OK);
                sent += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            sent
        }
    });

    let shots = repo_root().join("target/browser-test");
    std::fs::create_dir_all(&shots).unwrap();
    let url = format!("http://{}/", gw.admin());
    let started = Instant::now();
    let mut node = tokio::process::Command::new("node")
        .arg(repo_root().join("tests/browser/dashboard.mjs"))
        .args([
            url.as_str(),
            shots.to_str().unwrap(),
            "app",
            HOSTILE,
            "leaf-1",
        ])
        .env("LEAFGATE_BROWSER_TOOLS", &tools)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut stdin = node.stdin.take().unwrap();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let mut last = String::new();
    let run = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line == "stop-leaf" {
                sim.stop().await;
                stdin.write_all(b"stopped\n").await.unwrap();
            }
            last = line;
        }
        node.wait().await.unwrap()
    };
    let exit = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the browser script ends within 2 minutes");
    sending.store(false, Ordering::Relaxed);
    let sent = traffic.await.unwrap();
    let report: Value = serde_json::from_str(&last)
        .unwrap_or_else(|e| panic!("the script's last line is no report ({e}): {last}"));
    println!(
        "dashboard browser test: {:.1} s, {sent} requests sent, report {report:#}",
        started.elapsed().as_secs_f64()
    );
    for shot in report["screenshots"].as_array().into_iter().flatten() {
        println!("screenshot: {}", shot.as_str().unwrap());
    }
    assert!(exit.success() && report["ok"] == true, "{report:#}");
    let counts = report["counts"].as_array().unwrap();
    assert!(counts[1].as_u64() > counts[0].as_u64(), "{counts:?}");
    assert_eq!(report["leaf"]["after"]["synced"], "false");
    let origin = format!("http://{}", gw.admin());
    for url in report["requests"].as_array().unwrap() {
        assert!(url.as_str().unwrap().starts_with(&origin), "{url}");
    }
}
