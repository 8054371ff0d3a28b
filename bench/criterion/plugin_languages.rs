//! Plugins in Rust, Python and JavaScript side by side, through the same `TenantPlugins`
//! the gateway uses. Measures only; never gates CI on time. `bench/plugins.sh` runs it
//! pinned to one core, with a fresh `LEAFGATE_PLUGIN_CACHE`.
//!
//! For each language's pod router (label-router) and log filter (redact), it prints:
//! - the component's size;
//! - load: the first `plugins::load` (compiling it, and writing the disk cache when
//!   `LEAFGATE_PLUGIN_CACHE` is set), a reload of the same bytes (the in-process cache),
//!   and a load in a process that starts again (the disk cache); each load also starts
//!   the hook's first instance;
//! - instantiation: a call on a fresh instance (`isolation = "per-call"`) minus a warm call;
//! - the warm call: a pod route, and a 256-line log batch, with the ratio to Rust's;
//! - memory per warm instance: the growth of the process's resident memory when eight
//!   more tenants load the (already compiled) plugin, each starting one instance, divided
//!   by eight.

#[path = "shared/log_lines.rs"]
mod shared;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use leafgate::Config;
use leafgate::plugins::{
    self, LogContext, PluginMetrics, PluginSet, PodRouteRequest, TenantPlugins, Verb,
};
use leafgate_tests::plugins as build;
use shared::log_lines;

const CALLS: u32 = 500;
const COLD_CALLS: u32 = 20;
const TENANTS: usize = 8;

fn load(hooks: &str, tenants: usize) -> (PluginSet, Vec<Arc<TenantPlugins>>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leafgate.toml");
    let toml: String = (0..tenants)
        .map(|i| {
            format!("[[tenant]]\nname = \"t{i}\"\n[tenant.plugins]\ndeadline = \"1s\"\n{hooks}\n")
        })
        .collect();
    let config = Config::parse(&path, &toml).unwrap_or_else(|e| panic!("{e}"));
    let set = plugins::load(&config, &PluginMetrics::default()).unwrap_or_else(|e| panic!("{e:?}"));
    let tenants = (0..tenants)
        .map(|i| set.tenant(&format!("t{i}")).unwrap().clone())
        .collect();
    (set, tenants)
}

/// Resident memory of this process, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

struct Plugin {
    lang: &'static str,
    hook: &'static str,
    file: PathBuf,
    config: &'static str,
}

const ROUTER_CONFIG: &str = r#"{ rules = [{ label = "site", value = "edge-*", leaf = "leaf-2" }], default_leaf = "leaf-1" }"#;
const REDACT_CONFIG: &str =
    r#"{ patterns = ['password=\S+', 'Bearer [A-Za-z0-9._-]+'], drop = ['GET /healthz'] }"#;

fn plugins_to_measure() -> Vec<Plugin> {
    use build::Lang::{Js, Python};
    vec![
        Plugin {
            lang: "rust",
            hook: "pod_router",
            file: build::plugin("label-router"),
            config: ROUTER_CONFIG,
        },
        Plugin {
            lang: "python",
            hook: "pod_router",
            file: build::lang_plugin(Python, "label_router", "pod-router"),
            config: ROUTER_CONFIG,
        },
        Plugin {
            lang: "js",
            hook: "pod_router",
            file: build::lang_plugin(Js, "label-router", "pod-router"),
            config: ROUTER_CONFIG,
        },
        Plugin {
            lang: "rust",
            hook: "log_filter",
            file: build::plugin("redact"),
            config: REDACT_CONFIG,
        },
        Plugin {
            lang: "python",
            hook: "log_filter",
            file: build::lang_plugin(Python, "redact", "log-filter"),
            config: REDACT_CONFIG,
        },
        Plugin {
            lang: "js",
            hook: "log_filter",
            file: build::lang_plugin(Js, "redact", "log-filter"),
            config: REDACT_CONFIG,
        },
    ]
}

fn hooks(p: &Plugin, isolation: &str) -> String {
    format!(
        "isolation = \"{isolation}\"\n{} = {{ path = \"{}\", config = {} }}",
        p.hook,
        p.file.display(),
        p.config
    )
}

/// Mean time of `n` calls of `call`.
fn mean<F: std::future::Future>(
    rt: &tokio::runtime::Runtime,
    n: u32,
    mut call: impl FnMut() -> F,
) -> Duration {
    let started = Instant::now();
    for _ in 0..n {
        rt.block_on(call());
    }
    started.elapsed() / n
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is read.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let route = PodRouteRequest {
        namespace: "shop".into(),
        pod: "web-1".into(),
        container: Some("app".into()),
        verb: Verb::Exec,
        labels: Some([("site".to_string(), "edge-3".to_string())].into()),
        leaves: vec!["leaf-1".into(), "leaf-2".into()],
    };
    let lines = log_lines(256);
    let ctx = LogContext::default();
    let disk_cache = std::env::var_os("LEAFGATE_PLUGIN_CACHE").is_some();
    println!(
        "plugin languages: {CALLS} warm calls, {COLD_CALLS} per-call-isolation calls, {TENANTS} warm instances for memory; disk cache {}",
        if disk_cache {
            "on"
        } else {
            "off (set LEAFGATE_PLUGIN_CACHE to measure a restart)"
        }
    );
    println!(
        "{:<7} {:<11} {:>9} {:>10} {:>9} {:>9} {:>12} {:>11} {:>8} {:>12}",
        "lang",
        "hook",
        "size",
        "first load",
        "reload",
        "restart",
        "instantiate",
        "warm call",
        "vs rust",
        "mem/instance"
    );
    let mut rust_warm = Duration::ZERO;
    for p in plugins_to_measure() {
        let size = std::fs::metadata(&p.file).unwrap().len();
        let t = Instant::now();
        let (first, _) = load(&hooks(&p, "pooled"), 1);
        let first_load = t.elapsed();
        let t = Instant::now();
        let (second, tenants) = load(&hooks(&p, "pooled"), 1);
        let reload = t.elapsed();
        drop((first, second, tenants));
        // Nothing holds the component now: it is compiled again, or read from the disk.
        let t = Instant::now();
        let (set, tenants) = load(&hooks(&p, "pooled"), TENANTS);
        let restart = t.elapsed();

        let call = |t: &Arc<TenantPlugins>| {
            let t = t.clone();
            let route = &route;
            let lines = &lines;
            let ctx = &ctx;
            let hook = p.hook;
            async move {
                if hook == "pod_router" {
                    t.route_pod(route).await.map(drop).unwrap();
                } else {
                    t.log_verdicts(ctx, lines).await.map(drop).unwrap();
                }
            }
        };
        // The component is compiled and alive (`set`): these loads only start instances.
        let before = rss();
        let (more_set, more) = load(&hooks(&p, "pooled"), TENANTS);
        for t in &more {
            rt.block_on(call(t));
        }
        let per_instance = rss().saturating_sub(before) / TENANTS as u64;
        drop((more_set, more));
        let warm = mean(&rt, CALLS, || call(&tenants[0]));
        drop((set, tenants));
        let (per_call_set, per_call) = load(&hooks(&p, "per-call"), 1);
        let cold = mean(&rt, COLD_CALLS, || call(&per_call[0]));
        drop((per_call_set, per_call));
        if p.lang == "rust" {
            rust_warm = warm;
        }
        println!(
            "{:<7} {:<11} {:>7.1}MB {:>10} {:>9} {:>9} {:>12} {:>11} {:>7.1}x {:>10.1}MB",
            p.lang,
            p.hook,
            size as f64 / 1e6,
            format!("{first_load:.2?}"),
            format!("{reload:.2?}"),
            format!("{restart:.2?}"),
            format!("{:.2?}", cold.saturating_sub(warm)),
            format!("{warm:.2?}"),
            warm.as_secs_f64() / rust_warm.as_secs_f64(),
            per_instance as f64 / 1e6,
        );
    }
}
