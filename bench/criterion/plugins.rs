//! Plugin call overhead and log-filter throughput, through the same `TenantPlugins` the
//! gateway uses. Measures only; never gates CI on time.
//!
//! - `call/<world>/{pooled,per-call}`: one decision with a warm instance, and with a fresh
//!   instance per call (`isolation = "per-call"`).
//! - `log-filter/{redact-wasm,redact-native,passthrough-wasm}`: verdicts for a 256-line
//!   batch from the `redact` plugin, from `redact`'s own engine compiled natively (a
//!   `memmem` scan for the patterns' leading literals first, so a clean line runs no regex,
//!   then regexes anchored where they were found), and from `redact` with no patterns (the
//!   cost of the crossing alone). The batch crosses as one newline-joined string, as the gateway sends it.
//!
//! The reference plugins are built from `plugins/` first (cargo, wasm32-wasip2, release).

#[path = "../../plugins/redact/src/engine.rs"]
mod redact;
#[path = "shared/log_lines.rs"]
mod shared;

use shared::log_lines;

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use leafgate::Config;
use leafgate::plugins::{
    self, AddressRewriteRequest, AddressType, LogBatch, LogContext, NodeAddress, PluginMetrics,
    PodRouteRequest, TableRequest, TenantPlugins, Verb, Verdict,
};
use leafgate_tests::plugins as build;

const PATTERNS: [&str; 2] = [r"password=\S+", r"Bearer [A-Za-z0-9._-]+"];
const DROP: [&str; 1] = [r"GET /healthz"];

fn tenant(hooks: &str) -> Arc<TenantPlugins> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leafgate.toml");
    let toml = format!("[[tenant]]\nname = \"bench\"\n[tenant.plugins]\n{hooks}\n");
    let config = Config::parse(&path, &toml).unwrap_or_else(|e| panic!("{e}"));
    let set = plugins::load(&config, &PluginMetrics::default()).unwrap_or_else(|e| panic!("{e:?}"));
    set.tenant("bench").unwrap().clone()
}

fn hooks(isolation: &str) -> String {
    let p = |name: &str| build::plugin(name).display().to_string();
    format!(
        "isolation = \"{isolation}\"\n\
         deadline = \"100ms\"\n\
         pod_router = {{ path = \"{}\", config = {{ rules = [{{ label = \"site\", value = \"edge-*\", leaf = \"leaf-2\" }}], default_leaf = \"leaf-1\" }} }}\n\
         address_rewriter = \"{}\"\n\
         log_filter = {{ path = \"{}\", config = {{ patterns = ['{}', '{}'], drop = ['{}'] }} }}\n\
         table_formatter = \"{}\"\n",
        p("label-router"),
        p("prefer-gateway"),
        p("redact"),
        PATTERNS[0],
        PATTERNS[1],
        DROP[0],
        p("pods-table"),
    )
}

fn calls(c: &mut Criterion) {
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
    let addresses = AddressRewriteRequest {
        node: "vnode".into(),
        leaf: "leaf-1".into(),
        gateway_address: "192.0.2.1".into(),
        addresses: vec![
            NodeAddress {
                kind: AddressType::InternalIp,
                address: "10.0.0.1".into(),
            },
            NodeAddress {
                kind: AddressType::Hostname,
                address: "node-1".into(),
            },
        ],
    };
    let ctx = LogContext::default();
    let one_line = log_lines(1);
    let table = TableRequest {
        group: String::new(),
        version: "v1".into(),
        resource: "pods".into(),
        wide: false,
        objects: r#"[{"metadata":{"name":"web-1","creationTimestamp":"2024-01-01T00:00:00Z"},"spec":{"containers":[{"name":"a"}]},"status":{"phase":"Running","containerStatuses":[{"name":"a","ready":true,"restartCount":1,"state":{"running":{}}}]}}]"#.into(),
    };

    for isolation in ["pooled", "per-call"] {
        let t = tenant(&hooks(isolation));
        let mut group = c.benchmark_group("call");
        group.bench_function(format!("pod-router/{isolation}"), |b| {
            b.to_async(&rt)
                .iter(|| async { black_box(t.route_pod(&route).await.unwrap()) })
        });
        group.bench_function(format!("address-rewriter/{isolation}"), |b| {
            b.to_async(&rt)
                .iter(|| async { black_box(t.rewrite_addresses(&addresses).await.unwrap()) })
        });
        group.bench_function(format!("log-filter-1-line/{isolation}"), |b| {
            b.to_async(&rt)
                .iter(|| async { black_box(t.log_verdicts(&ctx, &one_line).await.unwrap()) })
        });
        group.bench_function(format!("table-formatter-1-pod/{isolation}"), |b| {
            b.to_async(&rt)
                .iter(|| async { black_box(t.format_table(table.clone()).await.unwrap()) })
        });
        group.finish();
    }
}

/// `redact`'s own engine, natively: the same literals, regexes, anchored searches and
/// verdicts as in the plugin, so the ratio is the sandbox's cost alone.
struct NativeRedact(redact::Redactor);

impl NativeRedact {
    fn new() -> Self {
        let list = |patterns: &[&str]| patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        NativeRedact(redact::Redactor::new(&list(&PATTERNS), &list(&DROP), "***".into()).unwrap())
    }

    fn verdicts(&self, batch: &LogBatch) -> Vec<Verdict> {
        let mut out = Vec::with_capacity(batch.len());
        self.0.filter(batch.text(), |verdict| {
            out.push(match verdict {
                redact::Verdict::Keep => Verdict::Keep,
                redact::Verdict::Drop => Verdict::Drop,
                redact::Verdict::Replace(text) => Verdict::Replace(text),
            })
        });
        out
    }
}

fn log_throughput(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let t = tenant(&hooks("pooled"));
    let passthrough = tenant(&format!(
        "log_filter = \"{}\"",
        build::plugin("redact").display()
    ));
    let lines = log_lines(256);
    let ctx = LogContext::default();
    let native = NativeRedact::new();
    // Same answers, or the comparison means nothing.
    assert_eq!(
        rt.block_on(t.log_verdicts(&ctx, &lines)).unwrap(),
        native.verdicts(&lines)
    );

    let mut group = c.benchmark_group("log-filter");
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.bench_function("redact-wasm", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(t.log_verdicts(&ctx, &lines).await.unwrap()) })
    });
    group.bench_function("redact-native", |b| {
        b.iter(|| black_box(native.verdicts(black_box(&lines))))
    });
    // `redact` with no patterns: what crossing into the sandbox and back costs per line.
    group.bench_function("passthrough-wasm", |b| {
        b.to_async(&rt)
            .iter(|| async { black_box(passthrough.log_verdicts(&ctx, &lines).await.unwrap()) })
    });
    group.finish();
}

criterion_group!(benches, calls, log_throughput);
criterion_main!(benches);
