//! Hot reload end to end: config rewritten under load, hijacked connections surviving a
//! reload, a broken config keeping the old one, a removed listener draining.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use http::StatusCode;
use leafgate_tests::backends;
use leafgate_tests::client::get;
use leafgate_tests::{TestGateway, TestUpstream};
use tokio_tungstenite::tungstenite::Message;

/// Writes the config the way an editor does: the whole file, in place.
fn write(gw: &TestGateway, toml: &str) {
    std::fs::write(&gw.config, toml).unwrap();
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

fn config(admin: bool, stable: &TestUpstream, extra: &str) -> String {
    let admin = if admin {
        "[admin]\nbind = \"127.0.0.1:0\"\n"
    } else {
        ""
    };
    format!(
        r#"{admin}
[[listener]]
name = "web"
bind = "127.0.0.1:0"

[[route]]
host = "stable.example"
backends = ["{}"]
{extra}
"#,
        stable.addr
    )
}

#[tokio::test]
async fn twenty_rewrites_under_load_lose_nothing_and_apply_within_a_second() {
    let stable = TestUpstream::start("stable").await;
    let a = TestUpstream::start("alpha").await;
    let b = TestUpstream::start("beta").await;
    let gw = TestGateway::start(&config(false, &stable, "")).await;
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
        let extra = format!(
            "[[route]]\nhost = \"v{i}.example\"\nbackends = [\"{}\"]\n\n[[route]]\nhost = \"moving.example\"\nbackends = [\"{}\"]\n",
            to.addr, other.addr
        );
        write(&gw, &config(false, &stable, &extra));
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
    let route = |b: &backends::Backend| {
        format!(
            "[[route]]\nhost = \"ws.example\"\nbackends = [\"{}\"]\n",
            b.addr
        )
    };
    let gw = TestGateway::start(&config(false, &stable, &route(&old))).await;
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

    write(&gw, &config(false, &stable, &route(&new)));
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
    let gw = TestGateway::start(&config(true, &stable, "")).await;
    let web = gw.addr("web");
    let good = std::fs::read_to_string(&gw.config).unwrap();
    // Line 15 gets a bad bandwidth.
    write(
        &gw,
        &format!(
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
        let second = if with_second {
            "[[listener]]\nname = \"second\"\nbind = \"127.0.0.2:0\"\n".to_string()
        } else {
            String::new()
        };
        format!(
            "{second}\n[[route]]\nhost = \"*\"\nbackends = [\"{}\"]\n",
            ws.addr
        )
    };
    let gw = TestGateway::start(&config(false, &stable, &two(true))).await;
    let second = gw.addr("second");
    let (mut open, _) = tokio_tungstenite::connect_async(format!("ws://{second}/"))
        .await
        .unwrap();

    write(&gw, &config(false, &stable, &two(false)));
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

#[tokio::test]
async fn a_plugin_that_does_not_compile_keeps_the_running_config() {
    let stable = TestUpstream::start("stable").await;
    let gw = TestGateway::start(&config(true, &stable, "")).await;
    std::fs::write(gw.path().join("broken.wasm"), b"this is not a component").unwrap();
    let good = std::fs::read_to_string(&gw.config).unwrap();
    write(
        &gw,
        &format!(
            "{good}\n[[tenant]]\nname = \"team-a\"\n[tenant.plugins]\npod_router = \"broken.wasm\"\n"
        ),
    );

    let admin = gw.admin();
    within(
        Duration::from_secs(5),
        "the failed reload shows in /status",
        || async move { get(admin, "admin", "/status").await.json()["last_reload"]["ok"] == false },
    )
    .await;
    let status = get(admin, "admin", "/status").await.json();
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
