//! Hot reload end to end: config rewritten under load, hijacked connections surviving a
//! reload, a broken config keeping the old one, a removed listener draining.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use http::StatusCode;
use leafgate_tests::backends;
use leafgate_tests::client::get;
use leafgate_tests::config::{Listener, Plugin, Route, Tenant};
use leafgate_tests::{Config, TestGateway, TestUpstream};
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

/// Writes the config the way an editor does: the whole file, in place.
fn write(gw: &TestGateway, toml: impl std::fmt::Display) {
    std::fs::write(&gw.config, toml.to_string()).unwrap();
}

/// Polls until `check` holds; returns how long it took. Panics after `limit`.
async fn within<F, Fut>(limit: Duration, what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    started.elapsed()
}

/// One listener `web` and the route `stable.example` every test keeps serving.
fn config(stable: &TestUpstream) -> Config {
    Config::web().route(Route::host("stable.example").backend(stable.addr))
}

#[tokio::test]
async fn twenty_rewrites_under_load_lose_nothing_and_apply_within_a_second() {
    let stable = TestUpstream::start("stable").await;
    let a = TestUpstream::start("alpha").await;
    let b = TestUpstream::start("beta").await;
    let gw = TestGateway::start(config(&stable)).await;
    let web = gw.addr("web");

    // A client hammering the stable route during every reload (bounded in count and time).
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let load = tokio::spawn({
        let (stop, ok, failed) = (stop.clone(), ok.clone(), failed.clone());
        async move {
            let started = Instant::now();
            while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(60) {
                let res = get(web, "stable.example", "/").await;
                if res.status == StatusCode::OK {
                    ok.fetch_add(1, Ordering::Relaxed);
                } else {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    });

    let mut slowest = Duration::ZERO;
    for i in 0..20 {
        // Route v{i} appears (alternating backends), v{i-1} disappears, and a changed
        // route `moving.example` flips its backend every time.
        let (to, other) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let next = config(&stable)
            .route(Route::host(&format!("v{i}.example")).backend(to.addr))
            .route(Route::host("moving.example").backend(other.addr));
        write(&gw, next);
        let host = format!("v{i}.example");
        let took = within(
            Duration::from_secs(1),
            &format!("route {host} goes live"),
            || {
                let host = host.clone();
                async move { get(web, &host, "/").await.status == StatusCode::OK }
            },
        )
        .await;
        slowest = slowest.max(took);
        let res = get(web, "moving.example", "/").await;
        assert_eq!(
            res.json()["server"].as_str(),
            Some(other.name.as_str()),
            "rewrite {i}"
        );
        if i > 0 {
            let gone = format!("v{}.example", i - 1);
            assert_eq!(
                get(web, &gone, "/").await.status,
                StatusCode::NOT_FOUND,
                "{gone} was removed"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    load.await.unwrap();
    assert_eq!(
        failed.load(Ordering::Relaxed),
        0,
        "requests failed during reloads"
    );
    assert!(ok.load(Ordering::Relaxed) > 20, "the load loop barely ran");
    assert!(gw.gateway.snapshot().generation >= 21);
    eprintln!("slowest change went live in {slowest:?}");
}

#[tokio::test]
async fn a_websocket_opened_before_a_reload_keeps_echoing() {
    let stable = TestUpstream::start("stable").await;
    let old = backends::websocket_echo("old").await;
    let new = backends::websocket_echo("new").await;
    let with_ws =
        |b: &backends::Backend| config(&stable).route(Route::host("ws.example").backend(b.addr));
    let gw = TestGateway::start(with_ws(&old)).await;
    let url = format!("ws://{}/echo", gw.addr("web"));
    let request = |url: &str| {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut req = url.into_client_request().unwrap();
        req.headers_mut()
            .insert("host", "ws.example".parse().unwrap());
        req
    };
    let (mut before, res) = tokio_tungstenite::connect_async(request(&url))
        .await
        .unwrap();
    assert_eq!(res.headers()["x-backend"], "old");

    write(&gw, with_ws(&new));
    within(Duration::from_secs(1), "the new route", || async {
        gw.gateway.snapshot().generation >= 2
    })
    .await;

    for i in 0..10 {
        before
            .send(Message::text(format!("still here {i}")))
            .await
            .unwrap();
        let echoed = before.next().await.unwrap().unwrap();
        assert_eq!(
            echoed.into_text().unwrap().as_str(),
            format!("still here {i}")
        );
    }
    let (_, res) = tokio_tungstenite::connect_async(request(&url))
        .await
        .unwrap();
    assert_eq!(
        res.headers()["x-backend"],
        "new",
        "new connections take the new route"
    );
    before.close(None).await.unwrap();
}

#[tokio::test]
async fn a_broken_config_keeps_the_old_one_and_says_where() {
    let stable = TestUpstream::start("stable").await;
    // Literal text: the error's line:column below counts its lines.
    let gw = TestGateway::start(format!(
        "[admin]\nbind = \"127.0.0.1:0\"\n\n[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n\n[[route]]\nhost = \"stable.example\"\nbackends = [\"{}\"]\n\n",
        stable.addr
    ))
    .await;
    let web = gw.addr("web");
    let good = std::fs::read_to_string(&gw.config).unwrap();
    // Line 15 gets a bad bandwidth.
    write(
        &gw,
        format!(
            "{good}\n[[route]]\nhost = \"x.example\"\nbandwidth = \"fast\"\nbackends = [\"127.0.0.1:1\"]\n"
        ),
    );

    let status_url = gw.admin();
    let status = || async move {
        let res = get(status_url, "admin", "/status").await;
        res.json()
    };
    within(
        Duration::from_secs(2),
        "the failed reload shows in /status",
        || async { status().await["last_reload"]["ok"] == false },
    )
    .await;
    let s = status().await;
    let error = s["last_reload"]["error"].as_str().unwrap();
    assert!(
        error.contains("leafgate.toml:15:13: route[1].bandwidth"),
        "{error}"
    );
    assert_eq!(s["generation"], 1, "the old snapshot keeps serving");
    assert_eq!(get(web, "stable.example", "/").await.status, StatusCode::OK);

    let metrics = get(gw.admin(), "admin", "/metrics").await.text();
    assert!(
        metrics.contains("leafgate_reload_failures_total 1"),
        "{metrics}"
    );
}

#[tokio::test]
async fn removing_a_listener_closes_its_port_but_not_its_upgraded_connections() {
    let stable = TestUpstream::start("stable").await;
    let ws = backends::websocket_echo("ws").await;
    let two = |with_second: bool| {
        let mut config = config(&stable);
        if with_second {
            config = config.listener(Listener::new("second").bind("127.0.0.2:0"));
        }
        config.route(Route::host("*").backend(ws.addr))
    };
    let gw = TestGateway::start(two(true)).await;
    let second = gw.addr("second");
    let (mut open, _) = tokio_tungstenite::connect_async(format!("ws://{second}/"))
        .await
        .unwrap();

    write(&gw, two(false));
    within(
        Duration::from_secs(1),
        "the listener is removed",
        || async { gw.gateway.listener_addr("second").is_none() },
    )
    .await;
    within(
        Duration::from_secs(1),
        "its port refuses new connections",
        || async { tokio::net::TcpStream::connect(second).await.is_err() },
    )
    .await;
    for i in 0..5 {
        open.send(Message::binary(vec![i; 1000])).await.unwrap();
        assert_eq!(
            open.next().await.unwrap().unwrap().into_data().as_ref(),
            &vec![i; 1000][..]
        );
    }
    open.close(None).await.unwrap();
}

/// Waits (up to `limit`) until `/status` shows the last reload failed; returns `/status`.
async fn failed_reload(gw: &TestGateway, limit: Duration) -> serde_json::Value {
    let admin = gw.admin();
    within(limit, "the failed reload shows in /status", || async move {
        get(admin, "admin", "/status").await.json()["last_reload"]["ok"] == false
    })
    .await;
    get(admin, "admin", "/status").await.json()
}

#[tokio::test]
async fn a_plugin_that_does_not_compile_keeps_the_running_config() {
    let stable = TestUpstream::start("stable").await;
    let good = config(&stable).admin();
    let gw = TestGateway::start(&good).await;
    std::fs::write(gw.path().join("broken.wasm"), b"this is not a component").unwrap();
    write(
        &gw,
        good.tenant(Tenant::new("team-a").plugin("pod_router", Plugin::new("broken.wasm"))),
    );

    let status = failed_reload(&gw, Duration::from_secs(5)).await;
    let error = status["last_reload"]["error"].as_str().unwrap();
    assert!(error.contains("tenant[0].plugins.pod_router"), "{error}");
    assert_eq!(status["generation"], 1);
    assert!(
        status["tenants"].as_array().unwrap().is_empty(),
        "the new tenant must not be live"
    );
    assert_eq!(
        get(gw.addr("web"), "stable.example", "/").await.status,
        StatusCode::OK
    );
}

/// A plugin whose start-up spins forever is refused when the reload loads it, within its
/// `startup` limit and with an error naming it; the running config stays, and the tenant
/// already there keeps its plugin and is served.
#[tokio::test]
async fn a_plugin_stuck_in_its_start_up_is_refused_and_the_running_config_stays() {
    let stable = TestUpstream::start("stable").await;
    let router = leafgate_tests::plugins::plugin("label-router");
    let good = config(&stable)
        .admin()
        .tenant(Tenant::new("team-b").plugin("pod_router", Plugin::new(&router)));
    let gw = TestGateway::start(&good).await;
    let stuck = leafgate_tests::plugins::fault_plugin("stuck-start");
    let started = Instant::now();
    write(
        &gw,
        good.tenant(
            Tenant::new("team-a").plugin("pod_router", Plugin::new(&stuck).set("startup", "300ms")),
        ),
    );

    // The start-up is bounded by its 300ms (the error says so); the reload around it also
    // compiles the plugin, which waits for the compiler's threads when other tests of this
    // binary compile tens of MB of Python or JavaScript at the same time.
    let status = failed_reload(&gw, Duration::from_secs(60)).await;
    println!("refused after {:?}", started.elapsed());
    let error = status["last_reload"]["error"].as_str().unwrap();
    for part in [
        "tenant[1].plugins.pod_router",
        "stuck_start.wasm",
        "start-up limit exceeded",
        "of its 300ms limit",
    ] {
        assert!(error.contains(part), "{part}: {error}");
    }
    assert_eq!(status["generation"], 1);
    let tenants = status["tenants"].to_string();
    assert!(
        tenants.contains("team-b") && !tenants.contains("team-a"),
        "{tenants}"
    );
    assert_eq!(
        gw.gateway.snapshot().tenants["team-b"].plugins.fits().len(),
        1,
        "team-b keeps its router"
    );
    assert_eq!(
        get(gw.addr("web"), "stable.example", "/").await.status,
        StatusCode::OK
    );
}

/// The config a route `host` to `to` adds to the stable one.
fn with_route(stable: &TestUpstream, host: &str, to: &TestUpstream) -> Config {
    config(stable).route(Route::host(host).backend(to.addr))
}

/// Lays out `toml` the way the kubelet mounts a ConfigMap volume: `config.toml ->
/// ..data/config.toml`, `..data -> ..<timestamp>`; returns the config path.
fn configmap_volume(dir: &std::path::Path, toml: &Config) -> std::path::PathBuf {
    let version = dir.join("..2026_11_23_06_00_00.000000001");
    std::fs::create_dir(&version).unwrap();
    std::fs::write(version.join("config.toml"), toml.to_string()).unwrap();
    std::os::unix::fs::symlink("..2026_11_23_06_00_00.000000001", dir.join("..data")).unwrap();
    std::os::unix::fs::symlink("..data/config.toml", dir.join("config.toml")).unwrap();
    dir.join("config.toml")
}

/// Updates a ConfigMap volume as the kubelet's atomic writer does: a new timestamped
/// folder, a new `..data_tmp` link renamed over `..data`, the old folder removed.
fn configmap_update(dir: &std::path::Path, toml: &Config) {
    let old = std::fs::read_link(dir.join("..data")).unwrap();
    let name = "..2026_11_23_06_00_01.000000002";
    std::fs::create_dir(dir.join(name)).unwrap();
    std::fs::write(dir.join(name).join("config.toml"), toml.to_string()).unwrap();
    std::os::unix::fs::symlink(name, dir.join("..data_tmp")).unwrap();
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    std::fs::remove_dir_all(dir.join(old)).unwrap();
}

async fn route_live(gw: &TestGateway, host: &str, what: &str) -> Duration {
    let web = gw.addr("web");
    within(Duration::from_secs(1), what, || async move {
        get(web, host, "/").await.status == StatusCode::OK
    })
    .await
}

#[tokio::test]
async fn a_configmap_data_swap_reloads_within_a_second() {
    let stable = TestUpstream::start("stable").await;
    let fresh = TestUpstream::start("fresh").await;
    let dir = tempfile::tempdir().unwrap();
    let path = configmap_volume(dir.path(), &config(&stable));
    let gw = TestGateway::start_at(dir, path).await;
    assert_eq!(
        get(gw.addr("web"), "fresh.example", "/").await.status,
        StatusCode::NOT_FOUND
    );

    configmap_update(gw.path(), &with_route(&stable, "fresh.example", &fresh));
    route_live(&gw, "fresh.example", "the swapped ConfigMap applies").await;
    assert_eq!(gw.gateway.snapshot().generation, 2);
}

#[tokio::test]
async fn a_file_renamed_over_the_config_reloads_within_a_second() {
    let stable = TestUpstream::start("stable").await;
    let fresh = TestUpstream::start("fresh").await;
    let gw = TestGateway::start(config(&stable)).await;
    let tmp = gw.path().join(".leafgate.toml.swp");
    std::fs::write(
        &tmp,
        with_route(&stable, "fresh.example", &fresh).to_string(),
    )
    .unwrap();
    std::fs::rename(&tmp, &gw.config).unwrap();
    route_live(&gw, "fresh.example", "the renamed-over config applies").await;
}

#[tokio::test]
async fn a_busy_neighbour_file_does_not_delay_a_reload() {
    let stable = TestUpstream::start("stable").await;
    let fresh = TestUpstream::start("fresh").await;
    let gw = TestGateway::start(config(&stable)).await;

    // A neighbour rewritten every millisecond, for at most 5 s (or until the test is done):
    // a debounce that restarts on every event would never fire.
    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(AtomicU64::new(0));
    let neighbour = gw.path().join("neighbour.log");
    let busy = std::thread::spawn({
        let (stop, writes) = (stop.clone(), writes.clone());
        move || {
            let started = Instant::now();
            while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(5) {
                std::fs::write(&neighbour, format!("{started:?}")).unwrap();
                writes.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    });
    within(Duration::from_secs(1), "the neighbour is busy", || async {
        writes.load(Ordering::Relaxed) >= 20
    })
    .await;

    write(&gw, with_route(&stable, "fresh.example", &fresh));
    let took = route_live(
        &gw,
        "fresh.example",
        "the config applies despite the neighbour",
    )
    .await;
    let during = writes.load(Ordering::Relaxed);
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();
    assert!(during > 20, "the neighbour kept writing while we waited");
    eprintln!("applied in {took:?} with {during} neighbour writes");
}

#[tokio::test]
async fn rewriting_the_same_content_does_not_rebuild() {
    use leafgate::Control;
    let stable = TestUpstream::start("stable").await;
    let gw = TestGateway::start(config(&stable)).await;
    let skipped = || gw.gateway.metrics().reloads_skipped_unchanged.get();
    assert_eq!(skipped(), 0);

    write(&gw, config(&stable));
    within(
        Duration::from_secs(1),
        "the watcher saw the write",
        || async { skipped() >= 1 },
    )
    .await;
    assert_eq!(gw.gateway.snapshot().generation, 1, "nothing was rebuilt");
    assert_eq!(gw.gateway.metrics().reloads.get(), 0);

    // And a real change after it still applies: the hash moved on.
    let fresh = TestUpstream::start("fresh").await;
    write(&gw, with_route(&stable, "fresh.example", &fresh));
    route_live(&gw, "fresh.example", "a real change after an unchanged one").await;
}

#[tokio::test]
async fn a_replaced_config_folder_reloads_and_is_watched_again() {
    let stable = TestUpstream::start("stable").await;
    let fresh = TestUpstream::start("fresh").await;
    let other = TestUpstream::start("other").await;
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("conf");
    std::fs::create_dir(&conf).unwrap();
    std::fs::write(conf.join("leafgate.toml"), config(&stable).to_string()).unwrap();
    let gw = TestGateway::start_at(dir, conf.join("leafgate.toml")).await;

    // The whole folder is replaced: a new one renamed into place, the old one moved away.
    let replace = |toml: Config, n: u32| {
        let new = gw.path().join(format!("conf.new{n}"));
        std::fs::create_dir(&new).unwrap();
        std::fs::write(new.join("leafgate.toml"), toml.to_string()).unwrap();
        std::fs::rename(&conf, gw.path().join(format!("conf.old{n}"))).unwrap();
        std::fs::rename(&new, &conf).unwrap();
    };
    replace(with_route(&stable, "fresh.example", &fresh), 1);
    route_live(&gw, "fresh.example", "the replaced folder's config applies").await;

    // The new folder is watched: an in-place write inside it applies too.
    write(&gw, with_route(&stable, "other.example", &other));
    route_live(&gw, "other.example", "a write in the new folder applies").await;
}

/// A reload that leaves a route's upstream unchanged keeps its pool: a keep-alive client
/// connection's requests before and after reach the backend over one pooled connection.
#[tokio::test]
async fn a_reload_keeps_an_unchanged_routes_pooled_upstream_connection() {
    use http_body_util::{BodyExt, Empty};
    use hyper_util::rt::TokioIo;

    let up = TestUpstream::start("alpha").await;
    let first = Config::web().route(Route::host("*").name("app").backend(up.addr));
    let gw = TestGateway::start(&first).await;
    // One client connection, so every request is served by the same serving thread (and
    // so the same per-thread pool).
    let stream = tokio::net::TcpStream::connect(gw.addr("web"))
        .await
        .unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut ask = async || {
        let req = http::Request::get("/")
            .header("host", "app.example")
            .body(Empty::<bytes::Bytes>::new())
            .unwrap();
        let res = sender.send_request(req).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        res.into_body().collect().await.unwrap();
    };
    ask().await;

    // Another route appears; `app` is untouched.
    let next = first.route(
        Route::host("other.example")
            .name("other")
            .set("direct", json!({"status": 204})),
    );
    write(&gw, next);
    let generation = gw.gateway.reload().await.unwrap();
    assert!(generation >= 2);
    ask().await;
    assert_eq!(up.requests.load(Ordering::Relaxed), 2);
    assert_eq!(
        up.connections.load(Ordering::Relaxed),
        1,
        "the reload threw the pooled connection away"
    );
}
