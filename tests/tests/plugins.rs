//! The plugin runtime with real plugins: each reference plugin compiled from `plugins/`,
//! loaded through a real config and `plugins::load`, and asked real questions; then the
//! fault plugins, showing that a plugin's failure stays inside its one call.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use leafgate::Config;
use leafgate::plugins::{
    self, AddressRewriteRequest, AddressType, Cell, FaultKind, LogBatch, LogContext, NodeAddress,
    PluginError, PluginMetrics, PodRoute, PodRouteRequest, TableRequest, TenantPlugins, Verb,
    Verdict, World,
};
use leafgate_tests::config::{Plugin, Tenant};
use leafgate_tests::plugins::{fault_plugin, plugin};
use serde_json::json;

#[path = "plugins/languages.rs"]
mod languages;

#[path = "plugins/authoring.rs"]
mod authoring;

/// Loads a config that names plugins by absolute path; returns tenant -> plugins. (The
/// builder's `Config` is spelt in full: `Config` here is leafgate's own.)
fn load(
    toml: &leafgate_tests::Config,
    metrics: &PluginMetrics,
) -> BTreeMap<String, Arc<TenantPlugins>> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leafgate.toml");
    std::fs::write(&path, toml.to_string()).unwrap();
    let config = Config::load(&path).unwrap_or_else(|e| panic!("config: {e}"));
    let set = plugins::load(&config, metrics).unwrap_or_else(|e| {
        panic!(
            "plugins: {}",
            e.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        )
    });
    config
        .tenants
        .iter()
        .map(|t| (t.name.clone(), set.tenant(&t.name).unwrap().clone()))
        .collect()
}

/// The plugins of one tenant `t` whose only plugin is `plugin`, hooked as `world`.
fn one_tenant(world: &str, plugin: Plugin) -> Arc<TenantPlugins> {
    let toml = leafgate_tests::Config::new().tenant(Tenant::new("t").plugin(world, plugin));
    load(&toml, &PluginMetrics::default()).remove("t").unwrap()
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

fn pod_request(namespace: &str, pod: &str, labels: &[(&str, &str)]) -> PodRouteRequest {
    PodRouteRequest {
        namespace: namespace.into(),
        pod: pod.into(),
        container: Some("main".into()),
        verb: Verb::Exec,
        labels: Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        leaves: vec!["leaf-1".into(), "leaf-2".into()],
    }
}

#[tokio::test]
async fn label_router_routes_by_label_then_namespace_then_default() {
    let t = one_tenant(
        "pod_router",
        Plugin::new(plugin("label-router")).config(json!({
            "rules": [
                {"label": "site", "value": "edge-*", "leaf": "leaf-2"},
                {"namespace": "batch-*", "leaf": "leaf-1"},
                {"namespace": "gone", "leaf": "leaf-9"},
            ],
            "default_leaf": "leaf-1",
        })),
    );
    let route = |ns: &'static str, labels: &'static [(&str, &str)]| {
        let t = t.clone();
        async move { t.route_pod(&pod_request(ns, "p", labels)).await.unwrap() }
    };
    assert_eq!(
        route("web", &[("site", "edge-7")]).await,
        PodRoute::Leaf("leaf-2".into())
    );
    assert_eq!(
        route("batch-a", &[("site", "core")]).await,
        PodRoute::Leaf("leaf-1".into())
    );
    assert_eq!(route("web", &[]).await, PodRoute::Leaf("leaf-1".into()));
    match route("gone", &[]).await {
        PodRoute::Reject { status, message } => {
            assert_eq!(status, 503);
            assert!(message.contains("leaf-9"), "{message}");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    // Without labels (the gateway does not know the pod) label rules cannot match.
    let mut req = pod_request("web", "p", &[]);
    req.labels = None;
    assert_eq!(
        t.route_pod(&req).await.unwrap(),
        PodRoute::Leaf("leaf-1".into())
    );
}

/// Labels and leaves cross as `\n`-joined lines: the SDK must find a label by its whole
/// key wherever it sits, and know a leaf only by its whole name.
#[tokio::test]
async fn label_router_reads_labels_and_leaves_from_their_lines() {
    let t = one_tenant(
        "pod_router",
        Plugin::new(plugin("label-router")).config(json!({
            "rules": [{"label": "site", "value": "edge-*", "leaf": "leaf-2"}],
            "default_leaf": "leaf-1",
        })),
    );
    let route = |labels: &[(&str, &str)], leaves: &[&str]| {
        let mut req = pod_request("web", "p", labels);
        req.leaves = leaves.iter().map(|l| l.to_string()).collect();
        let t = t.clone();
        async move { t.route_pod(&req).await.unwrap() }
    };
    let both = ["leaf-1", "leaf-2"];
    // The matching label between others, one of them with an empty value.
    assert_eq!(
        route(&[("app", ""), ("site", "edge-9"), ("zone", "z=1")], &both).await,
        PodRoute::Leaf("leaf-2".into())
    );
    // `site-old` and `x.site` are other keys; `site` itself does not match the rule.
    assert_eq!(
        route(
            &[
                ("site", "core"),
                ("site-old", "edge-1"),
                ("x.site", "edge-2")
            ],
            &both
        )
        .await,
        PodRoute::Leaf("leaf-1".into())
    );
    // `leaf-2` is not known when only names that contain it are.
    match route(&[("site", "edge-1")], &["leaf-1", "leaf-20", "xleaf-2"]).await {
        PodRoute::Reject { status, message } => {
            assert_eq!(status, 503);
            assert!(message.contains("leaf-2"), "{message}");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    // No leaves at all: nothing is known, the default leaf neither.
    assert!(matches!(
        route(&[], &[]).await,
        PodRoute::Reject { status, .. } if status == 503
    ));
}

#[tokio::test]
async fn label_router_without_default_leaves_the_decision_to_the_gateway() {
    let t = one_tenant(
        "pod_router",
        Plugin::new(plugin("label-router")).config(json!({
            "rules": [{"namespace": "edge-*", "leaf": "leaf-2"}]
        })),
    );
    assert_eq!(
        t.route_pod(&pod_request("core", "p", &[])).await.unwrap(),
        PodRoute::Default
    );
    assert_eq!(
        t.route_pod(&pod_request("edge-1", "p", &[])).await.unwrap(),
        PodRoute::Leaf("leaf-2".into())
    );
}

#[tokio::test]
async fn prefer_gateway_puts_the_gateway_first_under_the_preferred_type() {
    let addresses = vec![
        NodeAddress {
            kind: AddressType::InternalIp,
            address: "10.0.0.5".into(),
        },
        NodeAddress {
            kind: AddressType::Hostname,
            address: "leaf-node-a".into(),
        },
        NodeAddress {
            kind: AddressType::InternalIp,
            address: "192.0.2.10".into(),
        },
    ];
    let req = AddressRewriteRequest {
        node: "vnode-leaf-1".into(),
        leaf: "leaf-1".into(),
        gateway_address: "192.0.2.10".into(),
        addresses: addresses.clone(),
    };
    let t = one_tenant("address_rewriter", Plugin::new(plugin("prefer-gateway")));
    let out = t.rewrite_addresses(&req).await.unwrap();
    assert_eq!(
        out,
        vec![
            NodeAddress {
                kind: AddressType::InternalIp,
                address: "192.0.2.10".into()
            },
            addresses[0].clone(),
            addresses[1].clone(),
        ],
        "the gateway's address first, the copy of it removed, the rest kept in order"
    );

    let t = one_tenant(
        "address_rewriter",
        Plugin::new(plugin("prefer-gateway")).config(json!({"preferred_type": "ExternalIP"})),
    );
    let out = t.rewrite_addresses(&req).await.unwrap();
    assert_eq!(
        out[0],
        NodeAddress {
            kind: AddressType::ExternalIp,
            address: "192.0.2.10".into()
        }
    );
    assert_eq!(out.len(), 4);
}

#[tokio::test]
async fn redact_replaces_secrets_and_drops_noise() {
    let t = one_tenant(
        "log_filter",
        Plugin::new(plugin("redact")).config(json!({
            "patterns": [r"password=\S+", r"Bearer [A-Za-z0-9._-]+"],
            "drop": ["GET /healthz"],
        })),
    );
    let lines: Vec<String> = [
        "login user=ann password=hunter2 ok",
        "GET /healthz 200",
        "Authorization: Bearer abc.def-1 password=x",
        "",
        "nothing to see",
    ]
    .map(String::from)
    .to_vec();
    let ctx = LogContext {
        namespace: "ns".into(),
        pod: "p".into(),
        container: "c".into(),
        leaf: "leaf-1".into(),
    };
    // The batch crosses as one newline-joined string; an empty line is a line too.
    let batch = LogBatch::from_lines(&lines).unwrap();
    assert_eq!(
        t.log_verdicts(&ctx, &batch).await.unwrap(),
        vec![
            Verdict::Replace("login user=ann *** ok".into()),
            Verdict::Drop,
            Verdict::Replace("Authorization: *** ***".into()),
            Verdict::Keep,
            Verdict::Keep,
        ]
    );
    assert_eq!(
        t.filter_logs(&ctx, lines).await.unwrap(),
        vec![
            "login user=ann *** ok",
            "Authorization: *** ***",
            "",
            "nothing to see"
        ]
    );
    // One line alone, and no line at all (the plugin is not called for an empty batch).
    let one = LogBatch::from_lines(["password=p"]).unwrap();
    assert_eq!(
        t.log_verdicts(&ctx, &one).await.unwrap(),
        vec![Verdict::Replace("***".into())]
    );
    assert_eq!(
        t.log_verdicts(&ctx, &LogBatch::new()).await.unwrap(),
        vec![]
    );
    // A line holding a newline would be two lines to the plugin: refused before the call.
    match t
        .filter_logs(&ctx, vec!["ok".into(), "two\nlines".into()])
        .await
    {
        Err(PluginError::Request(message)) => {
            assert!(
                message.contains("line 2") && message.contains("newline"),
                "{message}"
            )
        }
        other => panic!("expected a refused request, got {other:?}"),
    }
}

/// `redact` searches anchored where its patterns' literals occur; whatever the line, its
/// verdict must be the one the `regex` crate gives searching the whole line: `drop` as a
/// `RegexSet`, then every leftmost-first match of the patterns' alternation replaced.
#[tokio::test]
async fn redact_agrees_with_the_regex_crate_on_tricky_lines() {
    let lines: Vec<String> = [
        "password=a password=b",
        "xpassword=a",
        "Bearer Bearer x",
        "Bearer  two spaces",
        "GET /healthz 200",
        "GET /healthz GET /healthz",
        "mytoken:abc token:def",
        "token:",
        "key=abc password=x key=Z",
        "пароль password=секрет ok",
        "passwordpassword=x",
        "",
        "plain",
        "DEBUG: noisy",
        "debug: noisy",
    ]
    .map(String::from)
    .to_vec();
    // Forwards and backwards: clean lines first and last, a literal on the first and on
    // the last line.
    let reversed: Vec<String> = lines.iter().rev().cloned().collect();
    let patterns = [
        r"password=\S+",
        r"Bearer [A-Za-z0-9._-]+",
        r"\btoken:(\w+)",
        r"key=(?P<v>[a-z]+)",
    ];
    // Literals found (anchored searches); a `drop` pattern with too many literals to look
    // for (whole-line searches); and a replacement naming groups, counted across patterns.
    for (drop, replacement) in [
        (vec![r"GET /healthz$"], "***"),
        (vec![r"GET /healthz$", r"(?i)debug:"], "***"),
        (vec![r"GET /healthz$"], "<$1|$2|${v}>"),
    ] {
        let t = one_tenant(
            "log_filter",
            Plugin::new(plugin("redact")).config(json!({
                "patterns": patterns,
                "drop": drop,
                "replacement": replacement,
            })),
        );
        let drops = regex::RegexSet::new(&drop).unwrap();
        let secrets = regex::Regex::new(
            &patterns
                .iter()
                .map(|p| format!("(?:{p})"))
                .collect::<Vec<_>>()
                .join("|"),
        )
        .unwrap();
        for lines in [&lines, &reversed] {
            let expected: Vec<Verdict> = lines
                .iter()
                .map(|line| {
                    if drops.is_match(line) {
                        return Verdict::Drop;
                    }
                    match secrets.replace_all(line, replacement) {
                        std::borrow::Cow::Borrowed(_) => Verdict::Keep,
                        std::borrow::Cow::Owned(text) => Verdict::Replace(text),
                    }
                })
                .collect();
            let batch = LogBatch::from_lines(lines).unwrap();
            let got = t
                .log_verdicts(&LogContext::default(), &batch)
                .await
                .unwrap();
            assert_eq!(got, expected, "drop {drop:?}, replacement {replacement:?}");
            // What makes the lines worth having: some replaced, some dropped, some kept.
            assert!(expected.iter().any(|v| matches!(v, Verdict::Replace(_))));
            assert!(expected.contains(&Verdict::Drop));
            assert!(expected.contains(&Verdict::Keep));
        }
    }
}

/// A pattern that does not compile fails the call, naming its list and why.
#[tokio::test]
async fn redact_with_an_invalid_pattern_fails_its_call_and_says_which() {
    for (list, other) in [("patterns", "drop"), ("drop", "patterns")] {
        let t = one_tenant(
            "log_filter",
            Plugin::new(plugin("redact")).config(json!({list: ["password=("], other: ["ok"]})),
        );
        let batch = LogBatch::from_lines(["password=x"]).unwrap();
        match t.log_verdicts(&LogContext::default(), &batch).await {
            Err(PluginError::Call { kind, message, .. }) => {
                assert_eq!(kind, FaultKind::Trap);
                assert!(
                    message.contains(&format!("redact: a `{list}` pattern is invalid"))
                        && message.contains("unclosed group"),
                    "{message}"
                );
            }
            other => panic!("expected a failed call, got {other:?}"),
        }
    }
}

fn ago(seconds: u64) -> String {
    let t = std::time::SystemTime::now() - Duration::from_secs(seconds);
    // RFC 3339 by hand: the tests crate has no date library, and this is what the API writes.
    let secs = t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn pods_json() -> String {
    serde_json::json!([
        {
            "metadata": { "name": "web-1", "namespace": "team-a", "creationTimestamp": ago(5 * 60 + 20),
                          "annotations": { "leafgate.io/leaf": "leaf-2" } },
            "spec": { "nodeName": "node-a", "containers": [{ "name": "app" }, { "name": "sidecar" }] },
            "status": { "phase": "Running", "podIP": "10.1.2.3", "containerStatuses": [
                { "name": "app", "ready": true, "restartCount": 2, "state": { "running": {} } },
                { "name": "sidecar", "ready": false, "restartCount": 3,
                  "state": { "waiting": { "reason": "CrashLoopBackOff" } } }
            ] }
        },
        {
            "metadata": { "name": "job-1", "creationTimestamp": ago(3 * 3600 + 30) },
            "spec": { "containers": [{ "name": "run" }] },
            "status": { "phase": "Succeeded", "containerStatuses": [
                { "name": "run", "ready": false, "restartCount": 0,
                  "state": { "terminated": { "reason": "Completed", "exitCode": 0 } } }
            ] }
        },
        {
            "metadata": { "name": "old-1", "creationTimestamp": ago(2 * 86_400 + 60), "deletionTimestamp": ago(1) },
            "spec": { "containers": [{ "name": "c" }] },
            "status": { "phase": "Running", "containerStatuses": [
                { "name": "c", "ready": true, "restartCount": 0, "state": { "running": {} } }
            ] }
        }
    ])
    .to_string()
}

#[tokio::test]
async fn pods_table_prints_like_kubectl_with_the_leaf() {
    let t = one_tenant("table_formatter", Plugin::new(plugin("pods-table")));
    let req = TableRequest {
        group: String::new(),
        version: "v1".into(),
        resource: "pods".into(),
        wide: false,
        objects: pods_json(),
    };
    let table = t
        .format_table(req.clone())
        .await
        .unwrap()
        .expect("pods get a table");
    let names: Vec<(&str, i32)> = table
        .columns
        .iter()
        .map(|c| (c.name.as_str(), c.priority))
        .collect();
    assert_eq!(
        names,
        [
            ("NAME", 0),
            ("READY", 0),
            ("STATUS", 0),
            ("RESTARTS", 0),
            ("AGE", 0),
            ("LEAF", 0),
            ("IP", 1),
            ("NODE", 1)
        ]
    );
    // RESTARTS is text, as kube-apiserver types it: `5 (3m ago)` once a restart is dated.
    assert_eq!(table.columns[3].kind, "string");
    assert_eq!(table.columns[0].format, "name");
    let text = |s: &str| Cell::Text(s.into());
    assert_eq!(
        table.rows[0],
        vec![
            text("web-1"),
            text("1/2"),
            text("CrashLoopBackOff"),
            text("5"),
            text("5m20s"),
            text("leaf-2"),
            text("10.1.2.3"),
            text("node-a")
        ]
    );
    assert_eq!(
        table.rows[1],
        vec![
            text("job-1"),
            text("0/1"),
            text("Completed"),
            text("0"),
            text("3h"),
            text("<none>"),
            text("<none>"),
            text("<none>")
        ]
    );
    assert_eq!(table.rows[2][2], text("Terminating"));
    assert_eq!(table.rows[2][4], text("2d"));

    // Served as a meta.k8s.io/v1 Table.
    let json = serde_json::to_value(&table).unwrap();
    assert_eq!(json["kind"], "Table");
    assert_eq!(json["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(json["columnDefinitions"][6]["priority"], 1);
    assert_eq!(json["rows"][0]["cells"][3], "5");

    // Other resources fall back to the gateway's default table.
    let deployments = TableRequest {
        group: "apps".into(),
        resource: "deployments".into(),
        ..req
    };
    assert_eq!(t.format_table(deployments).await.unwrap(), None);
}

/// faulty-router under `on_error = "reject"`, a 16 MiB memory cap and a 20 ms deadline.
fn faulty_router() -> Plugin {
    Plugin::new(fault_plugin("faulty-router"))
        .on_error("reject")
        .set("memory", "16MiB")
        .set("deadline", "20ms")
}

fn faulty(router: Plugin) -> Arc<TenantPlugins> {
    one_tenant("pod_router", router)
}

fn call_error(r: Result<PodRoute, PluginError>) -> (FaultKind, String) {
    match r {
        Err(PluginError::Call {
            kind,
            message,
            plugin,
            hook,
            ..
        }) => {
            assert_eq!((plugin.as_str(), hook), ("faulty_router", World::PodRouter));
            (kind, message)
        }
        other => panic!("expected a failed call, got {other:?}"),
    }
}

#[tokio::test]
async fn each_fault_fails_only_its_call_under_reject() {
    let t = faulty(faulty_router());
    let healthy = pod_request("ns", "ok-1", &[]);
    assert_eq!(
        t.route_pod(&healthy).await.unwrap(),
        PodRoute::Leaf("leaf-1".into())
    );

    let (kind, message) = call_error(t.route_pod(&pod_request("ns", "trap-1", &[])).await);
    assert_eq!(kind, FaultKind::Trap);
    assert!(
        message.contains("told to trap on trap-1"),
        "the panic message reaches the error: {message}"
    );
    assert_eq!(
        t.route_pod(&healthy).await.unwrap(),
        PodRoute::Leaf("leaf-1".into())
    );

    let started = Instant::now();
    let (kind, message) = call_error(t.route_pod(&pod_request("ns", "spin-1", &[])).await);
    let took = started.elapsed();
    assert_eq!(kind, FaultKind::Timeout, "{message}");
    assert!(message.contains("deadline"), "{message}");
    assert!(
        took >= Duration::from_millis(20),
        "interrupted before its deadline: {took:?}"
    );
    assert!(
        // Far above the deadline so a busy CI machine passes; a spin that is never
        // interrupted would not return at all.
        took < Duration::from_secs(2),
        "interrupted long after its 20ms deadline: {took:?}"
    );
    assert_eq!(
        t.route_pod(&healthy).await.unwrap(),
        PodRoute::Leaf("leaf-1".into())
    );

    let (kind, message) = call_error(t.route_pod(&pod_request("ns", "bomb-1", &[])).await);
    assert_eq!(kind, FaultKind::Memory, "{message}");
    assert!(
        message.contains("memory limit") && message.contains("16777216"),
        "{message}"
    );
    assert_eq!(
        t.route_pod(&healthy).await.unwrap(),
        PodRoute::Leaf("leaf-1".into())
    );

    for i in 0..20 {
        let chatty = pod_request("ns", &format!("chatty-{i}"), &[]);
        assert_eq!(
            t.route_pod(&chatty).await.unwrap(),
            PodRoute::Leaf("leaf-1".into())
        );
    }

    let (kind, message) = call_error(t.route_pod(&pod_request("ns", "lost-1", &[])).await);
    assert_eq!(kind, FaultKind::InvalidAnswer);
    assert!(message.contains("no-such-leaf"), "{message}");

    let err = t
        .route_pod(&pod_request("ns", "spin-2", &[]))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 504);
    assert!(
        err.to_string()
            .contains("plugin `faulty_router` (pod-router) of tenant `t` failed: timeout"),
        "{err}"
    );
    let err = t
        .route_pod(&pod_request("ns", "trap-2", &[]))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 502);
}

#[tokio::test]
async fn each_fault_falls_back_to_the_default_decision_under_default() {
    let metrics = PluginMetrics::default();
    let toml = leafgate_tests::Config::new().tenant(
        Tenant::new("t")
            .plugins_default("on_error", "default")
            .plugins_default("deadline", "20ms")
            .plugins_default("memory", "16MiB")
            .plugin("pod_router", Plugin::new(fault_plugin("faulty-router"))),
    );
    let t = load(&toml, &metrics).remove("t").unwrap();
    for pod in ["trap-1", "spin-1", "bomb-1", "lost-1"] {
        assert_eq!(
            t.route_pod(&pod_request("ns", pod, &[])).await.unwrap(),
            PodRoute::Default,
            "{pod}"
        );
    }
    assert_eq!(
        t.route_pod(&pod_request("ns", "ok", &[])).await.unwrap(),
        PodRoute::Leaf("leaf-1".into())
    );
    for kind in FaultKind::ALL {
        assert_eq!(
            metrics.errors("t", "faulty_router", World::PodRouter, kind),
            1,
            "{kind}"
        );
    }
    assert_eq!(metrics.calls("t", "faulty_router", World::PodRouter), 5);
}

#[tokio::test]
async fn a_wrong_number_of_verdicts_is_the_plugins_error() {
    let lines = vec!["a".to_string(), "b".to_string()];
    let ctx = LogContext::default();
    let wrong = fault_plugin("wrong-verdicts");
    let t = one_tenant("log_filter", Plugin::new(&wrong));
    match t.filter_logs(&ctx, lines.clone()).await {
        Err(PluginError::Call {
            kind: FaultKind::InvalidAnswer,
            message,
            ..
        }) => {
            assert!(message.contains("1 actions for 2 lines"), "{message}")
        }
        other => panic!("expected an invalid answer, got {other:?}"),
    }
    let t = one_tenant("log_filter", Plugin::new(&wrong).on_error("default"));
    assert_eq!(
        t.filter_logs(&ctx, lines.clone()).await.unwrap(),
        lines,
        "default: lines pass unfiltered"
    );
}

/// Asks faulty-router's `count-*` `calls` times: the leaves it answered, which show how
/// many calls each instance served.
async fn counted_leaves(t: &TenantPlugins, calls: usize) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..calls {
        match t
            .route_pod(&pod_request("ns", "count-1", &[]))
            .await
            .unwrap()
        {
            PodRoute::Leaf(l) => seen.push(l),
            other => panic!("{other:?}"),
        }
    }
    seen
}

#[tokio::test]
async fn pooled_instances_keep_state_and_per_call_ones_do_not() {
    let leaves = |t: Arc<TenantPlugins>| async move { counted_leaves(&t, 4).await };
    assert_eq!(
        leaves(faulty(faulty_router())).await,
        ["leaf-1", "leaf-2", "leaf-1", "leaf-2"]
    );
    assert_eq!(
        leaves(faulty(faulty_router().set("isolation", "per-call"))).await,
        ["leaf-1", "leaf-1", "leaf-1", "leaf-1"]
    );

    // An instance that trapped is thrown away: the next call starts a fresh one, whose
    // count starts again.
    let t = faulty(faulty_router());
    let count = pod_request("ns", "count-1", &[]);
    assert_eq!(
        t.route_pod(&count).await.unwrap(),
        PodRoute::Leaf("leaf-1".into())
    );
    assert_eq!(
        t.route_pod(&count).await.unwrap(),
        PodRoute::Leaf("leaf-2".into())
    );
    assert!(
        t.route_pod(&pod_request("ns", "trap-1", &[]))
            .await
            .is_err()
    );
    assert_eq!(
        t.route_pod(&count).await.unwrap(),
        PodRoute::Leaf("leaf-1".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_tenant_keeps_answering_through_a_storm_of_faults() {
    let metrics = PluginMetrics::default();
    let toml = leafgate_tests::Config::new()
        .tenant(
            Tenant::new("stormy").plugin(
                "pod_router",
                Plugin::new(fault_plugin("faulty-router"))
                    .set("deadline", "20ms")
                    .set("memory", "16MiB"),
            ),
        )
        .tenant(Tenant::new("calm").plugin(
            "pod_router",
            Plugin::new(plugin("label-router")).config(json!({"default_leaf": "leaf-2"})),
        ));
    let mut tenants = load(&toml, &metrics);
    let (stormy, calm) = (
        tenants.remove("stormy").unwrap(),
        tenants.remove("calm").unwrap(),
    );

    let storm: Vec<_> = (0..60)
        .map(|i| {
            let stormy = stormy.clone();
            let pod = ["spin", "trap", "bomb"][i % 3];
            tokio::spawn(async move {
                stormy
                    .route_pod(&pod_request("ns", &format!("{pod}-{i}"), &[]))
                    .await
            })
        })
        .collect();

    let mut slowest = Duration::ZERO;
    for _ in 0..200 {
        let started = Instant::now();
        let route = calm.route_pod(&pod_request("ns", "p", &[])).await.unwrap();
        slowest = slowest.max(started.elapsed());
        assert_eq!(route, PodRoute::Leaf("leaf-2".into()));
        tokio::task::yield_now().await;
    }
    let mut failed = 0;
    for task in storm {
        failed += usize::from(task.await.unwrap().is_err());
    }
    assert_eq!(failed, 60, "every faulting call fails");
    assert_eq!(metrics.calls("calm", "label_router", World::PodRouter), 200);
    for kind in FaultKind::ALL {
        assert_eq!(
            metrics.errors("calm", "label_router", World::PodRouter, kind),
            0
        );
    }
    // Spinning plugins yield at every epoch tick, so the calm tenant is never stuck behind
    // them for long, even on two worker threads. 1 s leaves room for a loaded 2-core CI
    // machine (it no longer catches a call queued behind the 20 spins in turn, about
    // 0.4 s; the per-call timings above keep the tighter checks).
    assert!(
        slowest < Duration::from_secs(1),
        "the calm tenant waited {slowest:?}"
    );
}

#[test]
fn check_rejects_a_component_configured_for_the_wrong_world() {
    let dir = tempfile::tempdir().unwrap();
    let config_path = dir.path().join("leafgate.toml");
    let toml = format!(
        "[[tenant]]\nname = \"a\"\n\n[tenant.plugins]\npod_router = \"{}\"\nlog_filter = \"{}\"\n",
        path(&plugin("redact")),
        path(&plugin("redact")),
    );
    std::fs::write(&config_path, &toml).unwrap();
    let config = Config::load(&config_path).unwrap();
    assert!(
        config.files.contains(&plugin("redact")),
        "reload watches plugin files"
    );
    let errors = plugins::check(&config).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let text = errors[0].to_string();
    assert!(
        text.starts_with(&format!(
            "{}:5:14: tenant[0].plugins.pod_router: ",
            config_path.display()
        )),
        "{text}"
    );
    assert!(text.contains("missing export `route`"), "{text}");
    assert!(
        text.contains("looks built for the log-filter world"),
        "{text}"
    );
}

#[test]
fn compiled_components_are_shared_across_reloads() {
    let toml = leafgate_tests::Config::new()
        .tenant(Tenant::new("t").plugin("log_filter", Plugin::new(plugin("redact"))));
    let metrics = PluginMetrics::default();
    // The serving snapshot's plugins stay alive while the next one loads, as in a reload.
    let mut serving = load(&toml, &metrics); // compiles, or finds it compiled by another test
    // Counted, not timed: a loaded machine must not make this flaky.
    let builds = plugins::builds_of(&plugin("redact"));
    assert!(builds >= 1);
    for _ in 0..5 {
        serving = load(&toml, &metrics);
    }
    assert_eq!(
        plugins::builds_of(&plugin("redact")),
        builds,
        "reloading the same bytes must not build the component again"
    );
    drop(serving);
}

/// The sockets this process holds: the `socket:[inode]` targets of `/proc/self/fd`.
fn open_sockets() -> std::collections::BTreeSet<String> {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd is readable")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|target| target.to_string_lossy().into_owned())
        .filter(|target| target.starts_with("socket:"))
        .collect()
}

/// The `socket:[inode]` names of the inet sockets a plugin's attempt would leave: TCP ones
/// whose peer is `port` or that never connected (neither listening nor with a peer), and
/// every UDP one (from `/proc/net/{tcp,tcp6,udp,udp6}`).
fn plugin_like_sockets(port: u16) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for (table, tcp) in [
        ("tcp", true),
        ("tcp6", true),
        ("udp", false),
        ("udp6", false),
    ] {
        let Ok(text) = std::fs::read_to_string(format!("/proc/net/{table}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (Some(remote), Some(state), Some(inode)) = (cols.get(2), cols.get(3), cols.get(9))
            else {
                continue;
            };
            let remote_port = remote
                .rsplit(':')
                .next()
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            let unconnected = remote_port == Some(0) && *state != "0A";
            if !tcp || remote_port == Some(port) || unconnected {
                out.insert(format!("socket:[{inode}]"));
            }
        }
    }
    out
}

#[tokio::test]
async fn a_plugin_cannot_open_a_socket_and_the_host_holds_no_descriptor_for_it() {
    let t = one_tenant("pod_router", Plugin::new(fault_plugin("socket-opener")));
    // A listener the plugin is told to connect to: reachable, were sockets allowed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let pod = format!("connect-{}", listener.local_addr().unwrap());

    let before = open_sockets();
    for _ in 0..20 {
        match t.route_pod(&pod_request("ns", &pod, &[])).await.unwrap() {
            PodRoute::Reject { status, message } => {
                assert_eq!(status, 503);
                assert!(!message.contains("opened"), "a socket opened: {message}");
                let tcp = message.split("; ").next().unwrap();
                assert!(tcp.contains("error"), "tcp: {message}");
                assert!(message.contains("udp bind: error"), "udp: {message}");
            }
            other => panic!("the socket-opener always rejects, got {other:?}"),
        }
    }
    // Other tests of this binary run beside this one and open and close sockets of their
    // own (a listener, a connected client): of the sockets that appeared, none may be one a
    // plugin could have made, a TCP socket aimed at this listener or never connected, or
    // any UDP socket.
    let after = open_sockets();
    let port = listener.local_addr().unwrap().port();
    let suspects = plugin_like_sockets(port);
    let new: Vec<_> = after
        .difference(&before)
        .filter(|s| suspects.contains(*s))
        .collect();
    assert!(new.is_empty(), "sockets opened during the calls: {new:?}");
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "nothing connected to the listener"
    );
}

#[tokio::test]
async fn a_pooled_instance_is_retired_after_max_calls() {
    let t = faulty(faulty_router().set("max_calls", 3));
    let seen = counted_leaves(&t, 5).await;
    // Three calls on the first instance (its count 0, 1, 2), then a fresh one (0, 1).
    assert_eq!(seen, ["leaf-1", "leaf-2", "leaf-1", "leaf-1", "leaf-2"]);
}

#[test]
fn max_calls_out_of_range_is_an_error_at_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("leafgate.toml");
    std::fs::write(
        &config,
        format!(
            "[[tenant]]\nname = \"t\"\n[tenant.plugins]\npod_router = {{ path = \"{}\", max_calls = 0 }}\n",
            path(&fault_plugin("faulty-router"))
        ),
    )
    .unwrap();
    let err = Config::load(&config).unwrap_err().to_string();
    assert!(
        err.contains("tenant[0].plugins.pod_router.max_calls"),
        "{err}"
    );
    assert!(err.contains("between 1 and"), "{err}");
}

#[test]
fn the_compile_cache_drops_a_component_no_loaded_plugin_references() {
    // A copy of redact with a custom section naming this test: the same code under a hash
    // no other test loads. A custom section (id 0) is valid anywhere in a component.
    let dir = tempfile::tempdir().unwrap();
    let unique = dir.path().join("redact-copy.wasm");
    let mut bytes = std::fs::read(plugin("redact")).unwrap();
    let name = b"leafgate-test-compile-cache-eviction";
    bytes.push(0);
    bytes.push((1 + name.len()) as u8);
    bytes.push(name.len() as u8);
    bytes.extend_from_slice(name);
    std::fs::write(&unique, &bytes).unwrap();
    let toml = leafgate_tests::Config::new()
        .tenant(Tenant::new("t").plugin("log_filter", Plugin::new(&unique)));
    let metrics = PluginMetrics::default();

    let serving = load(&toml, &metrics);
    assert!(plugins::is_compiled(&unique), "a loaded plugin is cached");
    let next = load(&toml, &metrics);
    assert!(plugins::is_compiled(&unique));
    drop(serving);
    assert!(
        plugins::is_compiled(&unique),
        "the snapshot now serving still references it"
    );
    drop(next);
    assert!(
        !plugins::is_compiled(&unique),
        "no snapshot references it: the cache let it go"
    );
}

#[tokio::test]
async fn a_plugin_http_request_is_refused_and_nothing_connects() {
    let t = one_tenant("pod_router", Plugin::new(fault_plugin("http-caller")));
    // Where the plugin sends its request: reachable, were requests allowed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap();
    for _ in 0..5 {
        match t
            .route_pod(&pod_request("ns", &format!("call-{address}"), &[]))
            .await
            .unwrap()
        {
            PodRoute::Reject { status, message } => {
                assert_eq!(status, 503);
                assert_eq!(
                    message,
                    format!("GET http://{address}/: error: ErrorCode::HttpRequestDenied")
                );
            }
            other => panic!("the http-caller always rejects, got {other:?}"),
        }
    }
    assert_eq!(
        listener.accept().map(|_| ()).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock,
        "nothing connected to the listener"
    );
}
