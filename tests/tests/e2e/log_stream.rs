//! Container logs through real log-filter plugins: the line cutter and batcher in
//! `k8s::logs` in front of `redact` and of a plugin that breaks its contract.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use leafgate::Config;
use leafgate::LogCounts;
use leafgate::kubernetes::{self as logs, LogBatching, OnLogCounts};
use leafgate::plugins::{self, LogContext, PluginMetrics, TenantPlugins};
use leafgate_tests::config::{Plugin, Tenant};
use leafgate_tests::plugins::{fault_plugin, plugin};
use serde_json::json;
use tokio::sync::mpsc;

type Chunk = Result<Bytes, std::io::Error>;

/// Tenant `t`'s plugins, its `log_filter` loaded as the gateway loads it.
fn tenant(log_filter: Plugin) -> Arc<TenantPlugins> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leafgate.toml");
    // The builder's `Config` is spelt in full: `Config` here is leafgate's own.
    let toml =
        leafgate_tests::Config::new().tenant(Tenant::new("t").plugin("log_filter", log_filter));
    std::fs::write(&path, toml.to_string()).unwrap();
    let config = Config::load(&path).unwrap_or_else(|e| panic!("config: {e}"));
    let set = plugins::load(&config, &PluginMetrics::default())
        .unwrap_or_else(|e| panic!("plugins: {e:?}"));
    set.tenant("t").unwrap().clone()
}

fn redact() -> Arc<TenantPlugins> {
    tenant(Plugin::new(plugin("redact")).config(json!({
        "patterns": [r"password=\S+"],
        "drop": ["GET /healthz"],
    })))
}

fn ctx() -> LogContext {
    LogContext {
        namespace: "ns".into(),
        pod: "p".into(),
        container: "c".into(),
        leaf: "leaf-1".into(),
    }
}

fn counted() -> (Arc<Mutex<LogCounts>>, OnLogCounts) {
    let total = Arc::new(Mutex::new(LogCounts::default()));
    let sink = total.clone();
    let on = move |c: LogCounts| {
        let mut t = sink.lock().unwrap();
        t.kept += c.kept;
        t.dropped += c.dropped;
        t.rewritten += c.rewritten;
    };
    (total, Arc::new(on))
}

fn leaf(rx: mpsc::Receiver<Chunk>) -> impl Stream<Item = Chunk> + Unpin + Send + 'static {
    Box::pin(stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|c| (c, rx))
    }))
}

#[tokio::test]
async fn a_secret_split_across_chunks_is_redacted_whole_while_the_stream_is_live() {
    let (tx, rx) = mpsc::channel::<Chunk>(8);
    let (counts, on_counts) = counted();
    let mut out = Box::pin(logs::filter(
        leaf(rx),
        redact(),
        ctx(),
        LogBatching::default(),
        on_counts,
    ));

    // The secret is cut in the middle by the chunk boundary.
    tx.send(Ok(Bytes::from_static(b"login password=hun")))
        .await
        .unwrap();
    tx.send(Ok(Bytes::from_static(b"ter2 ok\nGET /healthz 200\n")))
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), out.next())
        .await
        .expect("the lines arrive while the leaf's stream stays open")
        .unwrap()
        .unwrap();
    assert_eq!(first, Bytes::from_static(b"login *** ok\n"));

    // A follow: a later line comes through live, the stream still open.
    tx.send(Ok(Bytes::from_static(b"later password=x\n")))
        .await
        .unwrap();
    let later = tokio::time::timeout(Duration::from_secs(5), out.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(later, Bytes::from_static(b"later ***\n"));
    drop(tx);
    assert!(out.next().await.is_none());
    assert_eq!(
        *counts.lock().unwrap(),
        LogCounts {
            kept: 0,
            dropped: 1,
            rewritten: 2
        }
    );
}

#[tokio::test]
async fn a_failing_filter_under_reject_ends_the_stream_with_one_error_line() {
    let t = tenant(Plugin::new(fault_plugin("wrong-verdicts")).on_error("reject"));
    let body = stream::iter(vec![Ok::<_, std::io::Error>(Bytes::from_static(
        b"one\ntwo\n",
    ))]);
    let (_, on_counts) = counted();
    let out: Vec<Bytes> = logs::filter(body, t, ctx(), LogBatching::default(), on_counts)
        .map(|r| r.unwrap())
        .collect()
        .await;
    assert_eq!(out.len(), 1, "{out:?}");
    let line = String::from_utf8_lossy(&out[0]);
    assert!(
        line.starts_with("leafgate: log stream ended: the tenant's log filter failed:"),
        "{line}"
    );
    assert!(line.ends_with('\n'));
}

#[tokio::test]
async fn a_failing_filter_under_default_passes_the_batch_unfiltered() {
    let t = tenant(Plugin::new(fault_plugin("wrong-verdicts")).on_error("default"));
    let body = stream::iter(vec![Ok::<_, std::io::Error>(Bytes::from_static(
        b"one\ntwo\n",
    ))]);
    let (_, on_counts) = counted();
    let out: Vec<u8> = logs::filter(body, t, ctx(), LogBatching::default(), on_counts)
        .map(|r| r.unwrap().to_vec())
        .concat()
        .await;
    assert_eq!(out, b"one\ntwo\n");
}
